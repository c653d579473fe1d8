"""Evidence stores: where records become durable before the transition they justify.

Two stores keep identical fields:

* :class:`JsonlStore` (the default): ``<runs>/<run-id>/evidence.jsonl``. Line 1 is
  the anchored head, a fixed :data:`SLOT`-byte line ``{"head": {...}}`` padded
  with spaces and rewritten in place; every later line is one record, appended.
  ``attempts.jsonl`` (:data:`COPIES`) holds the attempt copy of each record, line
  for line, appended: one file made with the run, not a new file per attempt.
* :class:`SqliteStore`: ``<runs>/<run-id>/evidence.sqlite`` in WAL mode, one row per
  record and one head row, both committed (``synchronous=FULL``) in one transaction
  before :meth:`append` returns.

A flat-file append writes the record line at the end of the file, then its
attempt copy (not synced), then the head line at offset 0, then calls
``fdatasync`` once: the record and the head that counts it are durable together
when :meth:`append` returns, so the engine never acts on a record its head does
not count. A process killed between those writes leaves one uncounted last
record (complete, or torn mid-line), with or without its attempt copy; resume
sets it aside (``evidence.torn.<n>``) as never committed. Anything else (more
than one uncounted record, a head counting records that are not there, a chain
that does not end at the head's hash, a missing or different attempt copy) is
tampering, or a power loss inside the one sync, and is refused: fail closed.

Runs made before the copies moved into one file keep a file per attempt copy,
``phases/<phase>.attempt<N>.<verdict>.json``; they are read, verified and
appended to in that layout. Runs written before the head moved into
``evidence.jsonl`` hold records only there and the head in ``head.json``, and a
file per attempt; they are read, verified and appended to in that layout too
(the record, its attempt file and the head each synced, as then).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import orjson

from roadcheck._files import fsync_dir
from roadcheck.errors import EvidenceError, InputError, StoreError
from roadcheck.evidence.chain import ChainCheck, ChainWalk
from roadcheck.evidence.head import Head, HeadError
from roadcheck.evidence.keys import (
    AUTH_ED25519,
    AUTH_HMAC,
    AUTH_NONE,
    AnyKey,
    load_key,
    require_sealing,
)
from roadcheck.evidence.manifest import (
    MANIFEST,
    manifest_digest,
    params_digest,
    read_manifest,
    write_durable,
)
from roadcheck.evidence.record import FIELDS, GENESIS, AnyRecord, as_dict, read_record, seal

if TYPE_CHECKING:  # sqlite3 loads with the SQLite store, not with a JSONL run
    import sqlite3

__all__ = [
    "COPIES",
    "HEAD",
    "STORE_KINDS",
    "EvidenceStore",
    "JsonlStore",
    "SqliteStore",
    "check_run_id",
    "detect_store",
    "open_store",
    "verify_run",
]

StoreKind = Literal["jsonl", "sqlite", "postgres"]
STORE_KINDS: tuple[StoreKind, ...] = ("jsonl", "sqlite")
HEAD = "head.json"
#: The attempt copies of a flat-file run, one line per record, in the records' order.
COPIES = "attempts.jsonl"
#: The size of the head line that opens ``evidence.jsonl`` (line 1, rewritten in place).
SLOT = 1024
_SLOT_START = b'{"head":'
_URL = re.compile(r"postgres(?:ql)?://", re.IGNORECASE)
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_JSON_COLUMNS = ("gate", "artifact")


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` when it names a directory inside the runs directory, else refuse it."""
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise InputError(f"run id {run_id!r} is refused: it could escape the runs directory "
                         "(use letters, digits, '.', '_' and '-', starting with a letter or digit)")
    return run_id


class EvidenceStore(Protocol):
    """What the engine needs from a store: durable appends and an ordered read-back."""

    kind: StoreKind
    run_id: str
    run_dir: Path

    def create(self, manifest_sha256: str | None) -> None:
        """Start an empty store whose head names the run's manifest."""
        ...

    def append(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Chain, persist and make durable one record; return it sealed."""
        ...

    def records(self) -> list[dict[str, Any]]:
        """Every record of the run, in the order written."""
        ...

    def verify(self, manifest: Mapping[str, Any] | None = None) -> ChainCheck:
        """Recompute the hash chain and compare it with the head."""
        ...

    def recover(self, manifest: Mapping[str, Any] | None = None) -> tuple[list[str], ChainCheck]:
        """Repair what a crash provably left half-done, then verify."""
        ...

    def close(self) -> None:
        """Release files and connections."""
        ...


def chain_walk(run_id: str, manifest: Mapping[str, Any] | None) -> ChainWalk:
    """A fresh walk over a run's records: the params and workflow ``run.json`` holds
    (when it is given) are those every record must state."""
    params = manifest.get("params") if manifest is not None else None
    workflow = manifest.get("workflow") if manifest is not None else None
    return ChainWalk(run_id, params_digest(params) if isinstance(params, dict) else None,
                     workflow if isinstance(workflow, str) else None, shapes=True)


def _judge(run_id: str, walk: ChainWalk, head: Head | str | None,
           key: AnyKey | None, manifest: Mapping[str, Any] | None, *,
           torn: int = 0) -> tuple[ChainCheck, int]:
    """Compare the chain with its head; return the check and the uncounted records it may set aside.

    ``walk`` has seen every record (:func:`chain_walk`). ``head`` is the head, an error
    message when it is unreadable, or ``None`` when absent. ``torn`` is the length of an
    unterminated last line (flat files).
    """
    chain = walk.check()
    n = len(walk.hashes)

    def broken(problem: Any, position: int | None, message: str, **kw: Any) -> ChainCheck:
        return dataclasses.replace(chain, problem=problem, position=position, message=message,
                                   **kw)

    if head is None:
        return broken("unanchored", None, f"the store has no head: nothing anchors its {n} "
                      "records (a cut tail or an appended record could not be seen)"), 0
    if isinstance(head, str):
        return broken("unanchored", None, f"the head is unusable: {head}"), 0
    info: dict[str, Any] = {"auth": head.auth, "key_id": head.key_id,
                            "head_records": head.records, "head_hash": head.last_hash}
    chain = dataclasses.replace(chain, **info)
    if head.auth == AUTH_NONE:
        if key is not None:
            return broken("unauthenticated", None,
                          "the run carries no MAC but a key was given: an unkeyed run cannot be "
                          "told from a keyed one downgraded by its writer"), 0
    elif head.auth in (AUTH_HMAC, AUTH_ED25519):
        signed = head.auth == AUTH_ED25519
        if key is None:
            wanted = ("its public key or its private key (--key-file PEM, "
                      "ROADCHECK_EVIDENCE_KEY_FILE)" if signed else
                      "its key (--key-file, ROADCHECK_EVIDENCE_KEY_FILE or "
                      "ROADCHECK_EVIDENCE_KEY)")
            raise InputError(f"run {run_id!r} is {'signed' if signed else 'authenticated'} "
                             f"({head.auth}, key id {head.key_id}); give {wanted} to verify "
                             "or resume it")
        if key.auth != head.auth:
            raise InputError(f"run {run_id!r} is authenticated with {head.auth} (key id "
                             f"{head.key_id}); the key given is an {key.auth} key")
        if key.key_id != head.key_id:
            raise InputError(f"the evidence key given (key id {key.key_id}) is not the key of "
                             f"run {run_id!r} (key id {head.key_id})")
        if not key.check(head.body(), head.mac):
            what = "signature" if signed else "MAC"
            return broken("forged", None, f"the head's {what} does not verify: the head was "
                          "written without the run's key"), 0
        chain = dataclasses.replace(chain, authenticated=True)
    else:
        return broken("unanchored", None, f"the head names an unknown auth mode {head.auth!r}"
                      ), 0
    if head.run_id != run_id:
        return broken("unanchored", None, f"the head belongs to run {head.run_id!r}"), 0
    if manifest is not None and head.manifest_sha256 != manifest_digest(manifest):
        return broken("manifest", None, f"{MANIFEST} was changed after the run was created: its "
                      "digest no longer matches the one its head recorded"), 0
    if not chain.ok:
        return chain, 0
    if torn and head.records > n:
        return broken("torn", n + 1, f"record {n + 1} is torn (no end of line), yet the head "
                      "counts it as committed"), 0
    if n < head.records:
        return broken("cut", n + 1, f"the head counts {head.records} records but the store holds "
                      f"{n}: the tail from record {n + 1} was cut"), 0
    counted = head.records
    last = walk.hashes[counted - 1] if counted else GENESIS
    if last != head.last_hash:
        return broken("rehashed", None, f"the chain no longer ends where its head says (record "
                      f"{counted} is {str(last)[:12]}, the head says {head.last_hash[:12]}): "
                      "records were re-hashed or replaced"), 0
    # a chain can be intact and still hold a record no engine wrote (re-hashed without a key)
    shape = walk.shape
    if shape is not None and shape[0] <= counted:
        return broken("malformed", *shape), 0
    if n > counted:
        if n == counted + 1 and not torn:
            return broken("appended", n, f"record {n} is not counted by the head "
                          f"({head.short()}): it never committed (a crash between the record "
                          "and its head) or it was appended; resume sets it aside"), 1
        return broken("appended", counted + 1, f"record {counted + 1} and after "
                      f"({n - counted} records) are not counted by the head ({head.short()})"), 0
    notes = []
    if torn:
        notes.append(f"an unterminated last line ({torn} bytes) follows record {n}; it never "
                     "committed and resume sets it aside")
    return dataclasses.replace(chain, notes=tuple(notes)), 0


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (a regular file takes it in one call, short of an error)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _loads_exact(raw: bytes) -> Any:
    """One JSON document as every reader reads it; ``None`` when it is not JSON or repeats a key.

    A key given twice is read last-wins by orjson and first-wins by other tools:
    such a line is not the record that was written.
    """
    from roadcheck.ingest._json import find_duplicate, no_duplicate_keys

    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not no_duplicate_keys(raw, doc) and find_duplicate(raw) is not None:
        return None
    return doc


#: How much of a flat file is read at a time.
_CHUNK = 1 << 20


class _Lines:
    """The complete lines of a file after its first ``skip`` lines, with their line
    numbers, read :data:`_CHUNK` bytes at a time; blank lines are passed over.

    Once iterated to the end: ``end`` is the length of the file up to its last end of
    line, ``torn`` what follows it, ``start`` the offset of the first line after the
    skipped ones, ``count`` how many lines were yielded and ``blank`` how many were
    passed over.
    """

    def __init__(self, path: Path, skip: int) -> None:
        self.path, self.skip = path, skip
        self.end = self.torn = self.start = self.count = self.blank = 0

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - closed below, a generator's lifetime
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(f"cannot read evidence: {exc.strerror or exc}",
                             path=str(self.path)) from None
        with fh:
            n, rest, skip, read = 0, b"", self.skip, 0
            try:
                while chunk := fh.read(_CHUNK):
                    read += len(chunk)
                    parts = chunk.split(b"\n")
                    parts[0] = rest + parts[0]
                    rest = parts.pop()
                    self.end = read - len(rest)
                    for raw in parts:
                        n += 1
                        if n <= skip:
                            self.start += len(raw) + 1
                        elif not raw or raw.isspace():
                            self.blank += 1
                        else:
                            self.count += 1
                            yield n, raw
                self.torn = len(rest)
            except OSError as exc:
                raise StoreError(f"cannot read evidence: {exc.strerror or exc}",
                                 path=str(self.path)) from None


def _same_bytes(path: Path, start: int, end: int, other: Path) -> bool:
    """Whether ``other`` holds exactly the bytes ``start:end`` of ``path``."""
    try:
        if other.stat().st_size != end - start:
            return False
        with open(path, "rb") as fh, open(other, "rb") as oh:
            fh.seek(start)
            left = end - start
            while left:
                size = min(_CHUNK, left)
                if fh.read(size) != oh.read(size):
                    return False
                left -= size
            return oh.read(1) == b""
    except OSError:
        return False  # the slow path reads them again and says what is wrong


def _read_line(raw: bytes) -> AnyRecord | None:
    """A record line read once: into the typed record when it is one as the store writes
    it, else as a JSON mapping (which the checks then judge); None when it is neither."""
    rec: AnyRecord | None = read_record(raw)
    if rec is None:
        doc = _loads_exact(raw)
        rec = doc if isinstance(doc, dict) else None
    return rec


class JsonlStore:
    """Flat files: an append-only ``evidence.jsonl``, one file per attempt, ``head.json``."""

    kind: StoreKind = "jsonl"

    def __init__(self, run_dir: str | os.PathLike[str], run_id: str,
                 key: AnyKey | None = None) -> None:
        self.run_id = run_id
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / "evidence.jsonl"
        self.head_path = self.run_dir / HEAD
        self.phases_dir = self.run_dir / "phases"
        self.copies_path = self.run_dir / COPIES
        self.key = key
        self._fd: int | None = None
        self._copies_fd: int | None = None
        self._head: Head | None = None
        self._legacy: bool | None = None
        self._copies: bool | None = None

    def legacy(self) -> bool:
        """Whether the run keeps the earlier layout (records only, the head in ``head.json``)."""
        if self._legacy is None:
            try:
                with open(self.path, "rb") as fh:
                    start = fh.read(len(_SLOT_START))
            except FileNotFoundError:
                start = b""
            except OSError as exc:
                raise StoreError(f"cannot read evidence: {exc.strerror or exc}",
                                 path=str(self.path)) from None
            self._legacy = start != _SLOT_START and (bool(start) or self.head_path.exists())
        return self._legacy

    def copies(self) -> bool:
        """Whether the attempt copies are the lines of :data:`COPIES` (a run made since they
        moved there) rather than a file each in ``phases/`` (a run made before, which has
        that directory from its creation on, and every run with ``head.json``)."""
        if self._copies is None:
            self._copies = not self.legacy() and (self.copies_path.exists()
                                                  or not self.phases_dir.is_dir())
        return self._copies

    # -- writing ---------------------------------------------------------------------------

    def _open(self) -> int:
        if self._fd is None:
            legacy = self.legacy()
            try:
                if self.copies():
                    self.run_dir.mkdir(parents=True, exist_ok=True)
                    self._copies_fd = os.open(self.copies_path,
                                              os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                else:
                    self.phases_dir.mkdir(parents=True, exist_ok=True)
                flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if legacy else 0)
                self._fd = os.open(self.path, flags, 0o644)
            except OSError as exc:
                raise StoreError(f"cannot open evidence store: {exc.strerror or exc}",
                                 path=str(self.path)) from None
            # once per invocation: the file and the copies' file (or phases/) exist
            fsync_dir(self.run_dir)
        return self._fd

    def _slot(self, head: Head) -> bytes:
        """The head line: ``{"head": {...}}`` padded with spaces to :data:`SLOT` bytes."""
        body = orjson.dumps({"head": head.to_dict()})
        if len(body) >= SLOT:  # pragma: no cover - run ids are at most 128 characters
            raise StoreError("the head does not fit its slot", path=str(self.path))
        return body + b" " * (SLOT - 1 - len(body)) + b"\n"

    def _write_head(self, head: Head) -> Head:
        head = head.sealed(self.key)
        if self.legacy():
            write_durable(self.head_path, orjson.dumps(head.to_dict()) + b"\n")
        else:
            fd = self._open()
            os.pwrite(fd, self._slot(head), 0)
            os.fdatasync(fd)
        self._head = head
        return head

    def create(self, manifest_sha256: str | None) -> None:
        """Write an empty store: its head slot (0 records) and nothing after it, and its
        empty :data:`COPIES`."""
        try:
            self._legacy, self._copies = False, True
            self._open()
            self._write_head(Head(self.run_id, 0, GENESIS, manifest_sha256))
        except OSError as exc:
            raise StoreError(f"cannot create evidence store: {exc.strerror or exc}",
                             path=str(self.path)) from None

    def _current(self) -> Head:
        if self._head is None:
            head = self._read_head()
            if head is None and not self.path.exists():
                self.create(None)  # a store used on its own, outside a run
                assert self._head is not None
                return self._head
            _, check = self.recover()
            if not check.ok:
                raise EvidenceError(f"refusing to append: {check.message}", path=str(self.path))
            head = self._read_head()
            if not isinstance(head, Head):
                raise EvidenceError("refusing to append: the store has no usable head",
                                    path=str(self.head_path))
            self._head = head
        return self._head

    def append(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Append the record and its attempt copy, count it in the head, one fdatasync.

        In order: the record line at the end of the file, its attempt copy (a line
        appended to :data:`COPIES`, or in a run made before, its own file; no
        fsync), the head slot at offset 0, then one ``fdatasync`` of the file,
        which makes the record and the head that counts it durable together. A
        process killed between the writes leaves at most one record the head
        does not count (with or without its attempt copy): resume sets it aside.
        """
        require_sealing(self.key)
        head = self._current()
        fd = self._open()
        sealed = seal(record, head.last_hash)
        line = orjson.dumps(sealed) + b"\n"
        new = dataclasses.replace(head, records=head.records + 1, last_hash=sealed["hash"])
        try:
            if self.legacy():
                os.write(fd, line)
                os.fsync(fd)
                self._write_attempt(sealed, durable=True)
                self._write_head(new)
                return sealed
            os.pwrite(fd, line, os.fstat(fd).st_size)
            if self._copies_fd is not None:
                _write_all(self._copies_fd, line)  # the copy is the record's own line
            else:
                self._write_attempt(sealed, durable=False)
            self._write_head(new)
        except OSError as exc:
            raise StoreError(f"cannot write evidence: {exc.strerror or exc}",
                             path=str(self.path)) from None
        return sealed

    def _attempt_name(self, record: Mapping[str, Any]) -> str:
        return f"{record.get('phase')}.attempt{record.get('attempt')}.{record.get('verdict')}.json"

    def _write_attempt(self, record: Mapping[str, Any], *, durable: bool) -> None:
        """The per-attempt copy of a record; fsynced (with its directory) only in the old layout."""
        name = self._attempt_name(record)
        tmp = self.phases_dir / f".{name}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(orjson.dumps(dict(record), option=orjson.OPT_INDENT_2) + b"\n")
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, self.phases_dir / name)
        if durable:
            fsync_dir(self.phases_dir)

    # -- reading ---------------------------------------------------------------------------

    def _lines(self) -> _Lines:
        """The record lines of ``evidence.jsonl``, read a chunk at a time."""
        return _Lines(self.path, skip=0 if self.legacy() else 1)

    def _scan(self) -> tuple[list[AnyRecord], list[bytes], int, int, int | None]:
        """``(records, their lines, committed bytes, torn bytes, first unreadable line)``.

        Each line is read once (:func:`_read_line`)."""
        lines = self._lines()
        out: list[AnyRecord] = []
        raws: list[bytes] = []
        for n, raw in lines:
            rec = _read_line(raw)
            if rec is None:
                return out, raws, lines.end, lines.torn, n
            out.append(rec)
            raws.append(raw)
        return out, raws, lines.end, lines.torn, None

    def records(self) -> list[dict[str, Any]]:
        """Every complete record; a complete line that is not a JSON object is a store error."""
        recs, _, _, _, bad = self._scan()
        if bad is not None:
            raise StoreError("unreadable record: not one JSON object (broken JSON, or a key "
                             "given twice)", path=str(self.path), line=bad)
        return [as_dict(r) for r in recs]

    def _read_head(self) -> Head | str | None:
        if not self.legacy():
            return self._read_slot()
        try:
            raw = self.head_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"cannot read {HEAD}: {exc.strerror or exc}"
        doc = _loads_exact(raw)
        if doc is None:
            return f"{HEAD}: not one JSON object (broken JSON, or a key given twice)"
        try:
            return Head.from_dict(doc)
        except HeadError as exc:
            return f"{HEAD}: {exc}"

    def _read_slot(self) -> Head | str | None:
        """The head from line 1 of ``evidence.jsonl``; ``None`` when the file is missing."""
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read(SLOT)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"cannot read the head: {exc.strerror or exc}"
        where = "evidence.jsonl line 1 (the head)"
        if len(raw) < SLOT or not raw.endswith(b"\n") or b"\n" in raw[:-1]:
            return f"{where}: not a whole {SLOT}-byte head line"
        doc = _loads_exact(raw)
        if not isinstance(doc, dict) or set(doc) != {"head"}:
            return f"{where}: not one JSON object holding only 'head'"
        try:
            return Head.from_dict(doc["head"])
        except HeadError as exc:
            return f"{where}: {exc}"

    def _attempt_problem(self, typed: Sequence[AnyRecord], raws: Sequence[bytes], counted: int,
                         ) -> tuple[str, int, str] | None:
        """The first attempt copy that is missing, different, renamed or without record."""
        if self.copies():
            return self._copies_problem(typed, raws, counted)
        records = [as_dict(r) for r in typed]
        files = {p.name: p for p in self.phases_dir.glob("*.json")} if self.phases_dir.exists() \
            else {}
        by_hash = {str(r.get("hash")): i + 1 for i, r in enumerate(records)}
        for i, rec in enumerate(records):
            name = self._attempt_name(rec)
            path = files.pop(name, None)
            if path is None:
                if i < counted:
                    return ("dropped", i + 1, f"the attempt file phases/{name} of record {i + 1} "
                            "is missing")
                continue
            try:
                doc = _loads_exact(path.read_bytes())
            except OSError:
                doc = None
            if doc != rec:
                return ("edited", i + 1, f"the attempt file phases/{name} differs from record "
                        f"{i + 1}")
        for name, path in sorted(files.items()):
            try:
                doc = orjson.loads(path.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                doc = None
            h = str(doc.get("hash")) if isinstance(doc, dict) else ""
            if h in by_hash:
                return ("edited", by_hash[h], f"the attempt file phases/{name} holds record "
                        f"{by_hash[h]} under another name")
            return ("dropped", len(records) + 1, f"the attempt file phases/{name} holds a record "
                    "that is missing from the chain")
        return None

    def _copy_data(self) -> bytes:
        """The bytes of :data:`COPIES` (none when it is missing)."""
        try:
            return self.copies_path.read_bytes()
        except FileNotFoundError:
            return b""
        except OSError as exc:
            raise StoreError(f"cannot read the attempt copies: {exc.strerror or exc}",
                             path=str(self.copies_path)) from None

    def _copy_lines(self, data: bytes | None = None) -> tuple[list[bytes], bytes]:
        """The complete lines of :data:`COPIES` and what follows the last one (a torn copy)."""
        if data is None:
            data = self._copy_data()
        end = data.rfind(b"\n") + 1
        return data[:end].split(b"\n")[:-1], data[end:]

    def _copies_problem(self, records: Sequence[AnyRecord], raws: Sequence[bytes],
                        counted: int) -> tuple[str, int, str] | None:
        """The first line of :data:`COPIES` that is missing, different or without record.

        Line N is the copy of record N. A crash leaves the one record the head does not
        count without its copy, or with a torn one, or whole: nothing else.
        """
        data = self._copy_data()
        if raws and len(data) == sum(map(len, raws)) + len(raws) \
                and data == b"\n".join(raws) + b"\n":
            return None  # every line is its record's line, byte for byte, and nothing more
        lines, torn = self._copy_lines(data)
        for i, rec in enumerate(records):
            if i >= len(lines):
                if i < counted:
                    return ("dropped", i + 1, f"the attempt copy of record {i + 1} is missing "
                            f"from {COPIES}")
                break
            # the same bytes hold the same record; other bytes are compared as read
            if lines[i] != raws[i] and _loads_exact(lines[i]) != as_dict(rec):
                return ("edited", i + 1, f"the attempt copy of record {i + 1} ({COPIES} line "
                        f"{i + 1}) differs from it")
        if len(lines) > len(records):
            return ("dropped", len(records) + 1, f"{COPIES} line {len(records) + 1} holds a "
                    "record that is missing from the chain")
        if torn and not len(lines) == counted < len(records):
            return ("edited", len(lines) + 1, f"{COPIES} ends in an unterminated line after "
                    f"line {len(lines)}, which is no uncounted record's copy")
        return None

    def _check(self, manifest: Mapping[str, Any] | None) -> tuple[ChainCheck, int, int, int]:
        """``(check, uncounted records resume may set aside, committed bytes, torn bytes)``.

        The records stream through a :class:`ChainWalk` as they are read, none of them
        kept; only when the attempt copies are not the record lines byte for byte are
        the records read again, to name the copy that differs."""
        head = self._read_head()
        walk = chain_walk(self.run_id, manifest)
        lines = self._lines()
        for n, raw in lines:
            rec = _read_line(raw)
            if rec is None:
                pos = len(walk.hashes) + 1
                return (dataclasses.replace(walk.check(), problem="edited", position=pos,
                                            message=f"record {pos} (line {n}) is not a "
                                            "readable record"), 0, lines.end, lines.torn)
            walk.add(rec)
        check, extra = _judge(self.run_id, walk, head, self.key, manifest, torn=lines.torn)
        if (check.ok or extra) and isinstance(head, Head) and not (
                self.copies() and lines.count and not lines.blank
                and _same_bytes(self.path, lines.start, lines.end, self.copies_path)):
            records, raws, _, _, _ = self._scan()
            found = self._attempt_problem(records, raws, head.records)
            if found is not None:
                problem, pos, message = found
                check = dataclasses.replace(check, problem=problem, position=pos,  # type: ignore[arg-type]
                                            message=message)
                extra = 0
        if check.ok:
            check = dataclasses.replace(check, message=f"{check.message}, head matches")
        return check, extra, lines.end, lines.torn

    def verify(self, manifest: Mapping[str, Any] | None = None) -> ChainCheck:
        """Check the chain, the head (and its MAC), and every per-attempt file."""
        return self._check(manifest)[0]

    def recover(self, manifest: Mapping[str, Any] | None = None) -> tuple[list[str], ChainCheck]:
        """Set aside a last record that never committed, then verify.

        A torn last line the head does not count, or one complete last record the
        head does not count (a crash between the record and its head), is moved to
        ``evidence.torn.<n>`` (its attempt file beside it) and the store is cut back
        to its last committed record. Returns the notes and the check after repair.
        """
        notes: list[str] = []
        check, extra, end, torn = self._check(manifest)
        if torn and check.ok:
            aside = self._set_aside(end)
            notes.append(f"a torn last line ({torn} bytes, never committed) was set aside as "
                         f"{aside}")
            check = self._check(manifest)[0]
        elif extra == 1:
            last = self.records()[-1]
            data = self.path.read_bytes()
            start = data.rfind(b"\n", 0, end - 1) + 1
            if self.copies():
                # the copy first: killed in between, the record is still the one the head
                # does not count, now without a copy, and is set aside the same way again
                aside = self._aside_name()
                self._cut_copies(len(self.records()) - 1, self.run_dir / f"{aside}.attempt.json")
                self._set_aside(start, aside)
            else:
                aside = self._set_aside(start)
                attempt = self.phases_dir / self._attempt_name(last)
                try:
                    if attempt.exists():
                        os.replace(attempt, self.run_dir / f"{aside}.attempt.json")
                        fsync_dir(self.phases_dir)
                except OSError as exc:
                    raise StoreError(f"cannot set the record aside: {exc.strerror or exc}",
                                     path=str(attempt)) from None
            notes.append(f"record {check.position} was never counted by its head (a crash "
                         f"between the record and its head, or an append) and was set aside "
                         f"as {aside}")
            check = self._check(manifest)[0]
        return notes, check

    def _aside_name(self) -> str:
        """``evidence.torn.<n>``, the first ``n`` whose file (and attempt copy) is not there."""
        n = 1
        while ((self.run_dir / f"evidence.torn.{n}").exists()
               or (self.run_dir / f"evidence.torn.{n}.attempt.json").exists()):
            n += 1
        return f"evidence.torn.{n}"

    def _cut_copies(self, keep: int, aside: Path) -> None:
        """Cut :data:`COPIES` back to its first ``keep`` lines, what followed kept in ``aside``."""
        lines, torn = self._copy_lines()
        if len(lines) <= keep and not torn:
            return
        cut = sum(len(line) + 1 for line in lines[:keep])
        try:
            with open(self.copies_path, "rb") as fh:
                fh.seek(cut)
                tail = fh.read()
            fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                _write_all(fd, tail)
                os.fsync(fd)
            finally:
                os.close(fd)
            with open(self.copies_path, "r+b") as fh:
                fh.truncate(cut)
                fh.flush()
                os.fsync(fh.fileno())
            fsync_dir(self.run_dir)
        except OSError as exc:
            raise StoreError(f"cannot set the attempt copy aside: {exc.strerror or exc}",
                             path=str(self.copies_path)) from None

    def _set_aside(self, end: int, name: str | None = None) -> str:
        name = name or self._aside_name()
        try:
            with open(self.path, "rb") as fh:
                fh.seek(end)
                tail = fh.read()
            fd = os.open(self.run_dir / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, tail)
                os.fsync(fd)
            finally:
                os.close(fd)
            with open(self.path, "r+b") as fh:
                fh.truncate(end)
                fh.flush()
                os.fsync(fh.fileno())
            fsync_dir(self.run_dir)
        except OSError as exc:
            raise StoreError(f"cannot set the torn line aside: {exc.strerror or exc}",
                             path=str(self.path)) from None
        return name

    def close(self) -> None:
        """Close the append handles."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._copies_fd is not None:
            os.close(self._copies_fd)
            self._copies_fd = None


_COLUMNS = ", ".join(FIELDS)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS evidence ("
    "seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, workflow TEXT NOT NULL, "
    "phase TEXT NOT NULL, attempt INTEGER NOT NULL, iteration INTEGER NOT NULL, "
    "verdict TEXT NOT NULL CHECK (verdict IN ('pass', 'fail', 'refused')), "
    "gate TEXT NOT NULL, "
    "artifact TEXT NOT NULL, role TEXT NOT NULL, identity TEXT NOT NULL, "
    "started_at TEXT NOT NULL, finished_at TEXT NOT NULL, params_sha256 TEXT, "
    "prev_hash TEXT NOT NULL, hash TEXT NOT NULL UNIQUE)"
)
_SIDE_SCHEMA = "CREATE TABLE IF NOT EXISTS side (name TEXT PRIMARY KEY, doc TEXT NOT NULL)"
_HEAD_SCHEMA = ("CREATE TABLE IF NOT EXISTS head (id INTEGER PRIMARY KEY CHECK (id = 1), "
                "doc TEXT NOT NULL)")


class SqliteStore:
    """One SQLite database per run, WAL mode, one committed row per record plus its head row."""

    kind: StoreKind = "sqlite"

    def __init__(self, run_dir: str | os.PathLike[str], run_id: str,
                 key: AnyKey | None = None, *, shared: bool = False) -> None:
        self.run_id = run_id
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / "evidence.sqlite"
        self.key = key
        #: True when threads take turns with the connection (the caller serialises them).
        self.shared = shared
        self._conn: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        import sqlite3

        if self._conn is None:
            try:
                self.run_dir.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, isolation_level=None,
                                       check_same_thread=not self.shared)
            except (OSError, sqlite3.Error) as exc:
                raise StoreError(f"cannot open evidence store: {exc}",
                                 path=str(self.path)) from None
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute(_SCHEMA)
                conn.execute(_HEAD_SCHEMA)
            except sqlite3.Error as exc:
                conn.close()
                raise StoreError(f"unusable evidence store: {exc}", path=str(self.path)) from None
            self._conn = conn
        return self._conn

    def _put_head(self, conn: sqlite3.Connection, head: Head) -> None:
        doc = orjson.dumps(head.sealed(self.key).to_dict()).decode()
        conn.execute("INSERT INTO head (id, doc) VALUES (1, ?) "
                     "ON CONFLICT (id) DO UPDATE SET doc = excluded.doc", (doc,))

    def _head_in(self, conn: sqlite3.Connection) -> Head | str | None:
        row = conn.execute("SELECT doc FROM head WHERE id = 1").fetchone()
        if row is None:
            return None
        try:
            return Head.from_dict(orjson.loads(row[0]))
        except (orjson.JSONDecodeError, HeadError, TypeError) as exc:
            return f"head row: {exc}"

    def create(self, manifest_sha256: str | None) -> None:
        """Write the head row of an empty store."""
        import sqlite3

        conn = self._db()
        try:
            conn.execute("BEGIN IMMEDIATE")
            self._put_head(conn, Head(self.run_id, 0, GENESIS, manifest_sha256))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(f"cannot create evidence store: {exc}", path=str(self.path)) from None

    def count(self) -> int:
        """How many records the head counts (0 for a store without one yet)."""
        head = self._head_in(self._db())
        if isinstance(head, str):
            raise EvidenceError(f"unusable store: {head}", path=str(self.path))
        return 0 if head is None else head.records

    def append(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Insert one record and its new head in one transaction, committed when this returns."""
        return self.extend([record])[0]

    def extend(self, records: Sequence[Mapping[str, Any]], *,
               manifest_sha256: str | None = None,
               side: Callable[[Head], Mapping[str, str]] | None = None,
               ) -> list[dict[str, Any]]:
        """Insert records and the head counting them in one transaction (one commit).

        ``manifest_sha256`` is the digest a store started here names in its head.
        ``side``, given the new head, returns named documents kept beside the
        records (``side`` table) and committed with them; :meth:`side_doc` reads one.
        """
        import sqlite3

        require_sealing(self.key)
        conn = self._db()
        out = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            head = self._head_in(conn)
            if head is None:
                (count,) = conn.execute("SELECT count(*) FROM evidence").fetchone()
                if count:
                    raise EvidenceError("refusing to append: the store has records but no head",
                                        path=str(self.path))
                # a store used on its own, outside a run
                head = Head(self.run_id, 0, GENESIS, manifest_sha256)
            elif isinstance(head, str):
                raise EvidenceError(f"refusing to append: {head}", path=str(self.path))
            for record in records:
                sealed = seal(record, head.last_hash)
                values = [orjson.dumps(sealed[k]).decode() if k in _JSON_COLUMNS else sealed[k]
                          for k in FIELDS]
                conn.execute(f"INSERT INTO evidence ({_COLUMNS}) VALUES "
                             f"({', '.join('?' * len(FIELDS))})", values)
                head = dataclasses.replace(head, records=head.records + 1,
                                           last_hash=sealed["hash"])
                out.append(sealed)
            self._put_head(conn, head)
            if side is not None:
                conn.execute(_SIDE_SCHEMA)
                conn.executemany("INSERT INTO side (name, doc) VALUES (?, ?) ON CONFLICT (name) "
                                 "DO UPDATE SET doc = excluded.doc",
                                 list(side(head.sealed(self.key)).items()))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(f"cannot write evidence: {exc}", path=str(self.path)) from None
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return out

    def tail(self) -> tuple[Head | str | None, int, dict[str, Any] | None]:
        """``(head, highest row number, last record)`` without reading the other records:
        what a caller checks against the head on every open. The head is an error
        message when it is unusable, ``None`` when there is none."""
        import sqlite3

        try:
            conn = self._db()
            head = self._head_in(conn)
            rows = conn.execute(f"SELECT seq, {_COLUMNS} FROM evidence ORDER BY seq DESC "
                                "LIMIT 1").fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise StoreError(f"cannot read evidence: {exc}", path=str(self.path)) from None
        if not rows:
            return head, 0, None
        return head, int(rows[0][0]), rows_to_records([rows[0][1:]])[0]

    def side_doc(self, name: str) -> str | None:
        """The side document ``name`` (see :meth:`extend`), or None."""
        import sqlite3

        try:
            conn = self._db()
            try:
                row = conn.execute("SELECT doc FROM side WHERE name = ?", (name,)).fetchone()
            except sqlite3.OperationalError as exc:
                if "no such table" not in str(exc):
                    raise
                return None  # a store that never kept one
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise StoreError(f"cannot read evidence: {exc}", path=str(self.path)) from None
        return None if row is None else str(row[0])

    def records(self) -> list[dict[str, Any]]:
        """Every row in insertion order, with ``gate`` and ``artifact`` decoded."""
        import sqlite3

        if self._conn is None and not self.path.exists():
            return []
        try:
            rows = self._db().execute(f"SELECT {_COLUMNS} FROM evidence ORDER BY seq").fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            # a corrupted page can hold text that is not UTF-8
            raise StoreError(f"cannot read evidence: {exc}", path=str(self.path)) from None
        return rows_to_records(rows)

    def verify(self, manifest: Mapping[str, Any] | None = None) -> ChainCheck:
        """``PRAGMA integrity_check``, the chain, the head (and its MAC), deleted last rows."""
        import sqlite3

        if self._conn is None and not self.path.exists():
            return ChainCheck(self.run_id, 0, "unanchored", None, "the store file is missing")
        try:
            conn = self._db()
            found = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
            if found != ["ok"]:
                return ChainCheck(self.run_id, 0, "corrupt", None, "the SQLite file fails "
                                  f"its integrity check: {'; '.join(map(str, found[:3]))}")
            records = self.records()
            head = self._head_in(conn)
            top = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'evidence'"
                               ).fetchone()
            (last,) = conn.execute("SELECT coalesce(max(seq), 0) FROM evidence").fetchone()
        except (sqlite3.Error, StoreError, UnicodeDecodeError) as exc:
            return ChainCheck(self.run_id, 0, "corrupt", None, f"unreadable SQLite file: {exc}")
        check, _ = _judge(self.run_id, chain_walk(self.run_id, manifest).extend(records), head,
                          self.key, manifest)
        if check.ok and top is not None and top[0] > last:
            count = len(records)
            check = dataclasses.replace(check, problem="dropped", position=count + 1,
                                        message=f"{top[0] - last} record(s) after record "
                                        f"{count} were dropped")
        if check.ok:
            check = dataclasses.replace(check, message=f"{check.message}, head matches")
        return check

    def recover(self, manifest: Mapping[str, Any] | None = None) -> tuple[list[str], ChainCheck]:
        """Nothing to repair (each record and its head commit together); verify."""
        return [], self.verify(manifest)

    def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def rows_to_records(rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Records from database rows of :data:`FIELDS`, their ``gate`` and ``artifact`` decoded.

    A column that is not JSON is left as text: the chain check reports that
    record as edited.
    """
    out = []
    for row in rows:
        rec = dict(zip(FIELDS, row, strict=True))
        for k in _JSON_COLUMNS:
            with contextlib.suppress(orjson.JSONDecodeError):
                rec[k] = orjson.loads(rec[k])
        out.append(rec)
    return out


def last_effect_states(entries: Iterable[bytes | str]) -> dict[str, str]:
    """The last state each phase's effect entries (JSON texts) record, in order.

    An entry that is not JSON, or lacks ``phase`` or ``state``, is skipped: the
    file store's torn last line, which its next write starts afresh.
    """
    out: dict[str, str] = {}
    for raw in entries:
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict) and "phase" in entry and "state" in entry:
            out[str(entry["phase"])] = str(entry["state"])
    return out


def detect_store(run_dir: Path) -> StoreKind | None:
    """Which store a run directory holds, if any."""
    if (run_dir / "evidence.sqlite").exists():
        return "sqlite"
    if (run_dir / "evidence.jsonl").exists():
        return "jsonl"
    return None


def is_url(store: str) -> bool:
    """True when ``--store`` names a PostgreSQL database rather than a file store kind.

    Here rather than in :mod:`roadcheck.evidence.postgres`, so that choosing a file
    store never loads the PostgreSQL one.
    """
    return bool(_URL.match(store))


def open_store(runs_dir: str | os.PathLike[str], run_id: str, kind: StoreKind | None = None,
               key: AnyKey | None = None) -> JsonlStore | SqliteStore:
    """Open a run's store; ``kind=None`` finds an existing one and fails if there is none."""
    run_dir = Path(runs_dir) / check_run_id(run_id)
    if kind is None:
        kind = detect_store(run_dir)
        if kind is None:
            raise StoreError(f"no evidence for run {run_id!r}", path=str(run_dir))
    if kind == "sqlite":
        return SqliteStore(run_dir, run_id, key)
    if kind == "jsonl":
        return JsonlStore(run_dir, run_id, key)
    raise InputError(f"unknown store {kind!r}; choose one of {', '.join(STORE_KINDS)}")


def verify_run(runs_dir: str | os.PathLike[str], run_id: str,
               key: AnyKey | None = None, *, witness: Any = None,
               witness_key: Any = None) -> ChainCheck:
    """Verify a stored run: chain, head, MAC, attempt files and ``run.json``; with a
    ``witness`` (:class:`~roadcheck.documents.evidence.HeadWitness`) and the pinned
    ``witness_key``, also that the chain extends the head it saw
    (:mod:`roadcheck.evidence.witness`); with a verified RFC 3161 token
    (:class:`~roadcheck.evidence.timestamp.Timestamp`) as ``witness``, that the chain
    extends the head it stamped (:mod:`roadcheck.evidence.timestamp`).

    ``key=None`` takes the key from the environment, if one is set there.
    """
    run_dir = Path(runs_dir) / check_run_id(run_id)
    manifest = read_manifest(run_dir) if (run_dir / MANIFEST).exists() else None
    if manifest is None and detect_store(run_dir) is None:
        raise StoreError(f"no evidence for run {run_id!r}", path=str(run_dir))
    if manifest is not None and manifest.get("gated") is False:
        raise StoreError(f"run {run_id!r} ran ungated: it has no evidence", path=str(run_dir))
    kind = manifest.get("store") if manifest is not None else None
    store = open_store(runs_dir, run_id, kind if kind in STORE_KINDS else None,
                       key if key is not None else load_key())
    try:
        check = store.verify(manifest)
        if witness is not None:
            from roadcheck.evidence.timestamp import Timestamp, apply_timestamp
            from roadcheck.evidence.witness import apply_witness

            check = (apply_timestamp(check, witness, store.records())
                     if isinstance(witness, Timestamp)
                     else apply_witness(check, witness, witness_key, store.records()))
        return check
    finally:
        store.close()
