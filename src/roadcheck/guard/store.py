"""Per-session guard state on disk, and the hash-chained decision log.

``GuardStore(dir, spec)`` keeps one directory per session::

    <dir>/<session>/guard.json       the observed events, rewritten atomically
    <dir>/<session>/guard.lock       held (an exclusive lock) while one process reads and writes
    <dir>/<session>/evidence.sqlite  the decision log: one evidence record per decision
    <dir>/<session>/guard.snapshot   the engine state after those events (a cache)
    <dir>/<session>/guard.asked.json the calls answered ``ask``, awaiting PostToolUse (a cache)
    <dir>/.specs/<sha256>            a spec file, checked and cached by its bytes' sha256

so a hook that is a new short-lived process per call sees what the calls before
it saw: :meth:`GuardStore.session` takes the lock, restores the guard from the
session's snapshot (or, when there is no snapshot that matches the spec and the
state file, rebuilds it by feeding the stored events to the replay engine; see
:mod:`roadcheck.guard.snapshot`), and on leaving appends every decision made to the
log (committed), then, when events were observed, replaces the state file
(fsync, rename, fsync the directory), then the caches (renamed, not fsynced).
Those two durable writes are all that must be on disk before the guard
answers: a lost snapshot is rebuilt from the events, and a lost asked call only
means its approval at the prompt is not counted, so the next such call is asked
again. A session that was never created, or whose state is unreadable,
raises :class:`~roadcheck.errors.StoreError`: an unknown session never starts from
an empty past by accident.

Each decision is an evidence record (see :mod:`roadcheck.evidence`): ``run_id`` is
the session, ``workflow`` is ``guard``, ``phase`` the tool, ``attempt`` the
decision's number, ``verdict`` ``pass`` for allow and ``fail`` for deny or ask,
``gate`` the decision (kind ``guard``, summary, reasons, and the whole decision
as JSON in ``output``), ``artifact`` the call's arguments digest, ``identity``
the approver where known. ``roadcheck audit SESSION --runs-dir DIR`` renders it and
verifies the chain.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from roadcheck.conformance.spec import Spec
from roadcheck.errors import InputError, SpecError, StoreError, TraceError
from roadcheck.evidence.keys import AUTH_HMAC
from roadcheck.evidence.record import GENESIS
from roadcheck.guard import files, seal, snapshot
from roadcheck.guard.core import Decision, Guard, _spec_of

if TYPE_CHECKING:
    from roadcheck.evidence.chain import ChainCheck
    from roadcheck.evidence.keys import AnyKey
    from roadcheck.evidence.store import SqliteStore

__all__ = ["ASKED", "STATE", "GuardSession", "GuardStore", "decision_record", "is_session",
           "verify_session"]

STATE = "guard.json"
#: The calls asked about, waiting for their PostToolUse: a document kept beside the
#: decision log's records and committed with them (see the module docstring).
ASKED = "asked"
_LOCK = "guard.lock"
_LOG = "evidence.sqlite"
#: The decision log's files, as SQLite names them.
_SQLITE_FILES = ("evidence.sqlite", "evidence.sqlite-wal", "evidence.sqlite-shm",
                 "evidence.sqlite-journal")
_FORMAT = "roadcheck-guard-state/3"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def spec_digest(spec: Spec) -> str:
    """The spec's sha256 (hex): of its bytes when read from a file, else of its canonical JSON."""
    if spec.sha256 is not None:
        return spec.sha256
    return hashlib.sha256(orjson.dumps(spec.to_dict(), option=orjson.OPT_SORT_KEYS)).hexdigest()


def decision_record(session: str, number: int, decision: Decision, spec_sha256: str,
                    at: str) -> dict[str, Any]:
    """One decision as an evidence record (unsealed: the store chains it)."""
    detail = "; ".join(f"{r.code}: {r.message}" for r in decision.reasons)
    digest = decision.args_sha256
    return {
        "run_id": session, "workflow": "guard", "phase": decision.tool or "event",
        "attempt": number, "iteration": 0,
        "verdict": "pass" if decision.allowed else "fail",
        "gate": {"kind": "guard", "summary": f"{decision.verdict} {decision.tool or 'event'}",
                 "detail": detail, "exit_code": None,
                 "output": orjson.dumps(decision.to_dict(), option=orjson.OPT_SORT_KEYS
                                        ).decode()},
        "artifact": {"path": "args", "sha256": digest.removeprefix("sha256:") if digest else None,
                     "bytes": None},
        "role": "guard", "identity": ", ".join(decision.approvers),
        "started_at": at, "finished_at": at, "params_sha256": spec_sha256,
    }


def _cached_spec(directory: Path, path: str | PathLike[str], sealer: seal.Sealer) -> Spec:
    """The spec at ``path``, from the store's spec cache when its bytes were checked before."""
    from roadcheck._files import FileRefused, read_regular
    from roadcheck._inputs import load_replay_spec

    try:
        data = read_regular(path)  # a FIFO in place of the spec is refused, not waited on
    except FileRefused as exc:
        raise SpecError(f"cannot read spec: {exc.why}", path=str(path)) from None
    except OSError:
        return load_replay_spec(path)  # which says why, as for any spec it cannot read
    digest = hashlib.sha256(data).hexdigest()
    cache = directory / ".specs" / digest
    files.check_dir(cache.parent)
    raw = snapshot.read_cache(cache)
    sealed = sealer.open(raw, cache, "spec", digest, torn_ok=True) if raw else None
    spec = snapshot.load_spec(sealed.payload, str(path), digest) if sealed is not None else None
    if spec is None:
        spec = load_replay_spec(path)
        dumped = snapshot.dump_spec(spec) if spec.sha256 == digest else None
        if dumped is not None:
            snapshot.write_cache(cache, sealer.seal("spec", digest, 0, dumped))
            snapshot.prune_cache(cache.parent)
    return spec


class GuardStore:
    """Guard sessions kept on disk, one directory each, safe for one process per call.

    ``directory``: the state directory (``None``: ``$ROADCHECK_GUARD_STATE_DIR``, else
    the user's, see :mod:`roadcheck.guard.paths`). ``key_file``: the guard key
    (``None``: ``$ROADCHECK_GUARD_KEY_FILE``, else the user's, created on first use);
    ``no_key=True`` runs without one (see :mod:`roadcheck.guard.seal` for what is
    then detected). ``linger=True``, for a process that ends as soon as it has
    answered (the hook): a session's decision log is left open when the session
    closes, so SQLite's checkpoint on close (a write and an fsync of the whole
    database, as costly as the commit) falls to a later commit instead.
    ``sign_key_file`` (``None``: ``$ROADCHECK_GUARD_SIGN_KEY_FILE``, else none): a PEM
    Ed25519 private key that also signs the decision log's head on every commit
    (see :mod:`roadcheck.guard.signed`).
    """

    def __init__(self, directory: str | PathLike[str] | None,
                 spec: Spec | Mapping[str, Any] | str | PathLike[str], *,
                 approver: str | None = None, key_file: str | PathLike[str] | None = None,
                 no_key: bool = False, linger: bool = False,
                 sign_key_file: str | PathLike[str] | None = None) -> None:
        from roadcheck.guard.paths import ENV_SIGN_KEY_FILE, state_dir

        #: ``directory``, else ``$ROADCHECK_GUARD_STATE_DIR``, else the user's state directory.
        self.dir = state_dir(directory)
        try:
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the state directory: {exc.strerror or exc}",
                             path=str(self.dir)) from None
        self.scope = seal.scope_of(self.dir)
        found = seal.guard_key(key_file, no_key=no_key, state_dir=self.dir)
        #: The guard key's file, and when the guard runs without a key, why.
        self.key_path, self.key_notice = found.path, found.notice
        self.key = found.key
        signing = sign_key_file if sign_key_file is not None else (
            os.environ.get(ENV_SIGN_KEY_FILE) or None)
        signer = None
        if signing is not None:  # cryptography is imported only here
            from roadcheck.evidence.signing import load_signing_key

            signer = load_signing_key(signing)
        self.sealer = seal.Sealer(found.key, self.scope, signer)
        self.heads = (seal.Heads(found.path, self.scope, self.sealer)
                      if found.key is not None and found.path is not None else None)
        self.spec = _cached_spec(self.dir, spec, self.sealer) \
            if isinstance(spec, (str, PathLike)) else _spec_of(spec)
        self.approver = approver
        self.spec_sha256 = spec_digest(self.spec)
        self.linger = linger

    def _dir(self, session: str) -> Path:
        from roadcheck.evidence.store import check_run_id

        try:
            check_run_id(session)
        except Exception:
            raise StoreError(f"unusable session id {session!r}: letters, digits, '.', '_' "
                             "and '-' only, at most 128") from None
        return self.dir / session

    def exists(self, session: str) -> bool:
        """True when the session has stored state."""
        return os.path.lexists(self._dir(session) / STATE)

    @contextlib.contextmanager
    def session(self, session: str, *, create: bool = False) -> Iterator[GuardSession]:
        """Lock a session, yield its guard, then log its decisions and save its state.

        With ``create=True`` a session that does not exist yet starts empty;
        without it, an unknown session raises :class:`StoreError`. Nothing is
        saved when the block raises. Stored state that is not what this guard
        wrote for this session, now (edited, extended, cut, copied from another
        session, rolled back, deleted, or not a plain file) raises a
        :class:`~roadcheck.errors.StoreError` naming the file.
        """
        where = self._dir(session)
        files.make_dir(where)
        fd = files.lock(where / _LOCK)  # within files.LOCK_WAIT seconds, or refused
        stored = _Stored(self.sealer, self.heads, where, session, self.spec_sha256)
        try:
            live = self.opened(stored, session, create)
            yield live
            stored.save(live)
        finally:
            stored.close(linger=self.linger)
            os.close(fd)  # closing the descriptor releases the lock


    def opened(self, stored: _Stored, session: str, create: bool) -> GuardSession:
        """The live session of what ``stored`` holds, read (and created with ``create``);
        the first new session of a guard without a key says so once."""
        stored.load(create)
        if stored.new and self.key_notice:
            seal.say_once(self.key_notice)
        return GuardSession(self, session, stored.events, stored.asked, stored.snapshot(),
                            stored.state_mac)

    @contextlib.contextmanager
    def held(self, session: str, *, create: bool = False) -> Iterator[HeldSession]:
        """Like :meth:`session`, for one process that keeps the session for its whole life.

        The lock is held until the block ends; :meth:`HeldSession.flush` logs the
        decisions made and saves the state (durably, as on leaving :meth:`session`)
        whenever the holder needs them on disk, so each answer can wait for its
        own decision to be written.
        """
        where = self._dir(session)
        files.make_dir(where)
        fd = files.lock(where / _LOCK)
        stored = _Stored(self.sealer, self.heads, where, session, self.spec_sha256)
        try:
            held = HeldSession(self.opened(stored, session, create), stored)
            yield held
            held.flush()
        finally:
            stored.close()
            os.close(fd)


class HeldSession:
    """A session one process holds locked: its :class:`GuardSession`, saved on :meth:`flush`."""

    def __init__(self, live: GuardSession, stored: _Stored) -> None:
        self.live = live
        self._stored = stored

    def flush(self) -> None:
        """Log the pending decisions and save the state, as leaving a session does."""
        live, stored = self.live, self._stored
        generation = stored.generation
        stored.save(live)
        if stored.generation != generation:  # the state file now counts every decision
            stored.floor = stored.decisions
        live.pending.clear()
        live.loaded = len(live.guard.records)
        live.asked_at_load = dict(live.asked)
        live.restored = True
        stored.new = False


class _Stored:
    """One session's files as read under its lock, checked against each other and its head.

    :meth:`load` reads and checks; :meth:`save` writes, in order: the decisions and
    the asked calls (one SQLite commit), the state file (durable, when events were
    observed or the log took its first decision), the snapshot, then the head
    beside the key (neither fsynced).
    """

    def __init__(self, sealer: seal.Sealer, heads: seal.Heads | None, where: Path,
                 session: str, spec_sha256: str = "", *, shared: bool = False) -> None:
        self.sealer, self.heads, self.spec_sha256 = sealer, heads, spec_sha256
        #: True when the decision log's connection outlives one thread (resident sessions).
        self.shared = shared
        self.where, self.session = where, session
        self.events: list[Any] = []
        self.asked: dict[str, list[str]] = {}
        self.new = True
        #: The state file's generation and MAC ("" for a new session).
        self.generation = 0
        self.state_mac = ""
        #: How many decisions the log held, at least, when the state file was written.
        self.floor = 0
        #: The decision log's count and last hash.
        self.decisions = 0
        self.last_hash = GENESIS
        self._log: SqliteStore | None = None

    # -- reading ---------------------------------------------------------------------------

    def load(self, create: bool) -> None:
        """Read and check the state file, the decision log's head and the asked calls."""
        for name in _SQLITE_FILES:  # opened by SQLite, which would block on a FIFO
            files.check_plain(self.where / name)
        head = self.heads.read(self.session) if self.heads is not None else None
        path = self.where / STATE
        raw = files.read(path)
        log = self.where / _LOG
        if log.exists():
            self._read_log(log)
        if raw is None:
            if head is not None and (head.generation or head.decisions):
                raise seal.Forged(f"the session's state is gone, yet its head ({self._head()}) "
                                  f"counts generation {head.generation} and {head.decisions} "
                                  "decisions", path=str(path), problem="cut")
            if self.decisions:
                raise seal.Forged(f"the session's state is gone, yet its decision log holds "
                                  f"{self.decisions} decisions", path=str(path), problem="cut")
            if not create:
                raise StoreError(f"unknown guard session {self.session!r}: it was never "
                                 "created", path=str(path))
            return
        self._read_state(path, raw)
        if head is not None:
            self._against_head(head, path)
        if self.decisions < self.floor:
            raise seal.Forged(
                f"the decision log holds {self.decisions} decisions, but the session state "
                f"counts at least {self.floor}: it was cut, rolled back or deleted"
                if self._log is not None else
                f"the decision log is gone: the session state counts at least {self.floor} "
                "decisions", path=str(log), problem="cut")
        if self._log is not None:
            self._read_asked(log)

    def _head(self) -> Path:
        assert self.heads is not None
        return self.heads.path(self.session)

    def _read_state(self, path: Path, raw: bytes) -> None:
        sealed = self.sealer.open(raw, path, "state", self.session)
        assert sealed is not None
        try:
            state = orjson.loads(sealed.payload)
        except orjson.JSONDecodeError as exc:
            raise StoreError(f"corrupt guard state: {exc}", path=str(path)) from None
        if (not isinstance(state, dict) or state.get("format") != _FORMAT
                or state.get("session") != self.session
                or not isinstance(state.get("events"), list)
                or type(state.get("decisions")) is not int):
            raise StoreError("corrupt guard state: not a guard state of this session",
                             path=str(path))
        self.new = False
        self.events = state["events"]
        self.floor = state["decisions"]
        self.generation, self.state_mac = sealed.counter, sealed.mac

    def _against_head(self, head: seal.Head, path: Path) -> None:
        """The state and the log must be what the head recorded, or newer (a head lost in a
        crash: only a key holder seals a newer one); older is a rollback."""
        if self.generation < head.generation:
            raise seal.Forged(f"is generation {self.generation}, older than its head "
                              f"({self._head()}, generation {head.generation}): rolled back",
                              path=str(path), problem="cut")
        if self.generation == head.generation and self.state_mac != head.state_mac:
            raise seal.Forged(f"is not the generation {head.generation} its head "
                              f"({self._head()}) recorded: replaced", path=str(path),
                              problem="rehashed")
        log = self.where / _LOG
        if self.decisions < head.decisions:
            raise seal.Forged(
                f"the decision log holds {self.decisions} decisions, but its head "
                f"({self._head()}) counts {head.decisions}: cut, rolled back or deleted"
                if self._log is not None else
                f"the decision log is gone: its head ({self._head()}) counts "
                f"{head.decisions} decisions", path=str(log), problem="cut")
        if self.decisions == head.decisions and self.last_hash != head.last_hash:
            raise seal.Forged(f"the decision log does not end where its head ({self._head()}) "
                              "says: replaced", path=str(log), problem="rehashed")

    def _read_log(self, path: Path) -> None:
        """The log's head row, checked: its MAC, its session and state directory, and that
        its last row is the one it counts (the whole chain is for ``audit``)."""
        from roadcheck.evidence.head import Head
        from roadcheck.evidence.record import record_hash
        from roadcheck.evidence.store import SqliteStore

        self._log = SqliteStore(self.where, self.session, self.sealer.key, shared=self.shared)
        head, top, last = self._log.tail()
        if head is None:
            if top:
                raise seal.Forged(f"the decision log holds {top} records but no head",
                                  path=str(path), problem="unanchored")
            return
        if not isinstance(head, Head):
            raise seal.Forged(f"the decision log's head is unusable: {head}", path=str(path),
                              problem="unanchored")
        key = self.sealer.key
        if head.auth != self.sealer.auth:
            raise seal.Forged(
                f"the decision log is authenticated (key id {head.key_id}) but this guard has "
                "no key" if key is None else
                f"the decision log carries no MAC, but the guard has a key (key id "
                f"{self.sealer.key_id})", path=str(path), problem="unauthenticated")
        if key is not None and (head.key_id != key.key_id
                                or not key.check(head.sealed(key).body(), head.mac)):
            raise seal.Forged("the decision log's head does not verify: written without the "
                              "guard's key", path=str(path))
        if head.run_id != self.session or head.manifest_sha256 != self.sealer.scope.decode():
            raise seal.Forged("the decision log belongs to another session or state "
                              "directory: copied", path=str(path), problem="unanchored")
        if top != head.records:
            raise seal.Forged(f"the decision log's head counts {head.records} records, but "
                              f"{top} are there", path=str(path),
                              problem="appended" if top > head.records else "cut")
        if last is not None and (last.get("hash") != head.last_hash
                                 or record_hash(last) != last.get("hash")):
            raise seal.Forged("the decision log's last record is not the one its head "
                              "counts: edited", path=str(path), problem="edited")
        self.decisions, self.last_hash = head.records, head.last_hash

    def _read_asked(self, log: Path) -> None:
        """The asked calls, sealed with the log's head they were committed with."""
        assert self._log is not None
        doc = self._log.side_doc(ASKED)
        if doc is None:
            return
        where = log.with_name(f"{log.name}#{ASKED}")
        sealed = self.sealer.open(doc.encode(), where, "asked", self.session)
        assert sealed is not None
        if (sealed.counter, sealed.bind) != (self.decisions, self.last_hash):
            raise seal.Forged(f"the asked calls were sealed at decision {sealed.counter}, "
                              f"but the log is at {self.decisions}: rolled back",
                              path=str(where), problem="cut")
        try:
            asked = orjson.loads(sealed.payload)
        except orjson.JSONDecodeError:
            asked = None
        if not isinstance(asked, dict) or not all(isinstance(v, list) and all(
                isinstance(c, str) for c in v) for v in asked.values()):
            raise StoreError("corrupt guard state: the asked calls are not a map of call ids",
                             path=str(where))
        self.asked = asked

    def snapshot(self) -> bytes | None:
        """The verified snapshot payload, when there is one."""
        if not self.state_mac:
            return None
        path = self.where / snapshot.SNAPSHOT
        raw = snapshot.read_cache(path)
        if not raw:
            return None
        sealed = self.sealer.open(raw, path, "snapshot", self.session, torn_ok=True)
        return sealed.payload if sealed is not None else None

    # -- writing ---------------------------------------------------------------------------

    def save(self, live: GuardSession) -> None:
        """Log, then the state (durable), then the snapshot and the head (see the class)."""
        path = self.where / STATE
        logged = bool(live.pending) or live.asked != live.asked_at_load
        if logged:
            self._write_log(live)
        changed = self.new or len(live.guard.records) != live.loaded or (
            self.floor == 0 and self.decisions > 0)
        if changed:
            payload = orjson.dumps({"format": _FORMAT, "session": self.session,
                                    "decisions": self.decisions,
                                    "events": live.guard.records})
            data = self.sealer.seal("state", self.session, self.generation + 1, payload)
            try:
                files.write(path, data, durable=True)
            except OSError as exc:
                raise StoreError(f"cannot write the guard state: {exc.strerror or exc}",
                                 path=str(path)) from None
            self.generation += 1
            self.state_mac = data[data.index(b" mac=") + 5:data.index(b"\n")].decode()
            self.new, self.floor = False, self.decisions
        if changed or not live.restored:
            snap = snapshot.dump_state(live.guard, self.spec_sha256, self.state_mac)
            if snap is not None:
                snapshot.write_cache(self.where / snapshot.SNAPSHOT, self.sealer.seal(
                    "snapshot", self.session, self.generation, snap))
        if self.heads is not None and (changed or logged):
            try:
                self.heads.write(self.session, seal.Head(self.generation, self.state_mac,
                                                          self.decisions, self.last_hash))
            except OSError as exc:
                raise StoreError(f"cannot write the session's head: {exc.strerror or exc}",
                                 path=str(self._head())) from None

    def _write_log(self, live: GuardSession) -> None:
        """The pending decisions and the asked calls, in one commit."""
        from roadcheck.evidence.store import SqliteStore

        if self._log is None:
            self._log = SqliteStore(self.where, self.session, self.sealer.key,
                                    shared=self.shared)
        records = []
        number = self.decisions
        for decision, at in live.pending:
            number += 1
            records.append(decision_record(self.session, number, decision,
                                           self.spec_sha256, at))
        asked = orjson.dumps(live.asked)

        signer = self.sealer.signer

        def side(head: Any) -> dict[str, str]:
            docs = {ASKED: self.sealer.seal("asked", self.session, head.records, asked,
                                            head.last_hash).decode()}
            if signer is not None:
                from roadcheck.guard.signed import SIGNATURE, sign_log

                docs[SIGNATURE] = sign_log(signer, self.session, head.records, head.last_hash)
            return docs

        sealed = self._log.extend(records, manifest_sha256=self.sealer.scope.decode(),
                                  side=side)
        if sealed:
            self.decisions = number
            self.last_hash = sealed[-1]["hash"]

    def close(self, *, linger: bool = False) -> None:
        """Close the decision log (with ``linger``, leave it open until the process ends)."""
        if self._log is not None:
            if linger:
                _LINGERING.append(self._log)
            else:
                self._log.close()


#: Decision logs left open by a lingering store (see :class:`GuardStore`).
_LINGERING: list[Any] = []


class GuardSession:
    """A locked session: its :class:`Guard` and the decisions still to be logged."""

    def __init__(self, store: GuardStore, session: str, events: list[Any],
                 asked: dict[str, list[str]] | None = None, snap: bytes | None = None,
                 state_sha256: str = "") -> None:
        self.session = session
        #: call id -> the checkpoint ids an ``ask`` decision was missing.
        self.asked: dict[str, list[str]] = dict(asked or {})
        self.asked_at_load = dict(self.asked)
        #: The decisions made, each with when, until the store logs them.
        self.pending: list[tuple[Decision, str]] = []
        self.guard = Guard(store.spec, approver=store.approver, log=self._logged)
        #: How many events the session had when it was opened.
        self.loaded = len(events)
        #: True when the engine state came from the snapshot, not from re-feeding the events.
        self.restored = False
        if snap and state_sha256:
            # a snapshot of another shape is rebuilt below, like any that does not match
            with contextlib.suppress(ValueError, TypeError, KeyError, IndexError, AttributeError):
                self.restored = snapshot.restore_state(self.guard, snap, store.spec_sha256,
                                                       state_sha256)
            if not self.restored:  # a fresh guard: a restore may have stopped half-way
                self.guard = Guard(store.spec, approver=store.approver, log=self._logged)
        if self.restored:
            self.guard.records = events
            return
        try:
            for rec in events:
                self.guard.observe(rec)
        except TraceError as exc:
            raise StoreError(f"corrupt guard state: {exc.message}") from None

    def _logged(self, decision: Decision) -> None:
        self.pending.append((decision, _now()))

    def settled(self) -> None:
        """After the store saved this session: what is in memory is what is on disk.

        For a session kept in memory between calls (:mod:`roadcheck.guard.resident`),
        the next save then writes only what the next call adds.
        """
        self.pending.clear()
        self.asked_at_load = dict(self.asked)
        self.loaded = len(self.guard.records)
        self.restored = True

    def record(self, decision: Decision) -> None:
        """Log a decision made elsewhere (a person approving a call at a prompt)."""
        self._logged(decision)

    def check(self, event: Any) -> Decision:
        """Ask the guard (the decision is logged when the session closes)."""
        return self.guard.check(event)

    def observe(self, event: Any) -> Any:
        """Tell the guard what happened."""
        return self.guard.observe(event)


# -- verifying a stored session (audit, evidence verify) ------------------------------------

def _key_for(directory: Path, key: AnyKey | None) -> seal.GuardKey:
    """The key to verify with: ``key`` when given, else the guard's (never created here)."""
    if key is not None:
        from roadcheck.evidence.keys import EvidenceKey

        if not isinstance(key, EvidenceKey):
            raise InputError(f"a guard session is sealed with an HMAC key; the {key.auth} key "
                             f"given (key id {key.key_id}) cannot check it")
        return seal.GuardKey(key, None)
    return seal.guard_key(state_dir=directory, create=False)


def _session_auth(where: Path) -> str | None:
    """How the session says it is sealed (``hmac-sha256``, ``none``), or None when nothing
    in it says."""
    from roadcheck.evidence.head import Head

    try:
        raw = files.read(where / STATE, limit=files.READ_LIMIT)
    except files.StateFileError:
        raw = None
    found = re.match(rb"roadcheck-seal/1 [^\n]* auth=(none|hmac-sha256) ", raw or b"")
    if found is not None:
        return found.group(1).decode()
    if (where / _LOG).is_file() and not (where / _LOG).is_symlink():
        from roadcheck.evidence.store import SqliteStore

        log = SqliteStore(where, where.name)
        try:
            head = log.tail()[0]
        except StoreError:
            return None
        finally:
            log.close()
        return head.auth if isinstance(head, Head) else None
    return None


def is_session(directory: str | PathLike[str], session: str,
               key: AnyKey | None = None) -> bool:
    """True when ``directory`` holds (or held: its head remains) the guard session ``session``."""
    from roadcheck.evidence.store import check_run_id

    where = Path(directory) / check_run_id(session)
    if any(os.path.lexists(where / name) for name in (STATE, _LOCK)):
        return True
    if key is not None and key.auth != AUTH_HMAC:
        key = None  # a signing key seals runs, never a guard session: the guard's key asks
    try:
        found = _key_for(Path(directory), key)
    except StoreError:
        return False
    if found.key is None or found.path is None:
        return False
    sealer = seal.Sealer(found.key, seal.scope_of(Path(directory)))
    return os.path.lexists(seal.Heads(found.path, sealer.scope.decode(), sealer).path(session))


def verify_session(directory: str | PathLike[str], session: str,
                   key: AnyKey | None = None) -> ChainCheck:
    """Verify a stored guard session as the guard would read it, then its whole decision log.

    The state file, the log's head and the asked calls must be sealed for this
    session and state directory, the log must hold at least what the state and the
    head beside the key count (a vanished or cut log is ``cut``, never a fresh
    one), and every record must chain. ``key``: the guard key (default: the guard's,
    see :func:`~roadcheck.guard.seal.guard_key`); a keyed session without it is an
    :class:`~roadcheck.errors.InputError`.
    """
    import dataclasses

    from roadcheck.errors import InputError
    from roadcheck.evidence.chain import ChainCheck
    from roadcheck.evidence.store import SqliteStore, check_run_id

    base = Path(directory)
    where = base / check_run_id(session)
    found = _key_for(base, key)
    auth = _session_auth(where)
    if auth == "hmac-sha256" and found.key is None:
        raise InputError(f"guard session {session!r} is authenticated: give its key "
                         "(--key-file or ROADCHECK_GUARD_KEY_FILE) to verify it", path=str(where))
    use = found.key if auth != "none" else None
    sealer = seal.Sealer(use, seal.scope_of(base))
    heads = seal.Heads(found.path, sealer.scope.decode(), sealer) \
        if use is not None and found.path is not None else None
    if not is_session(base, session, use):
        raise StoreError(f"no guard session {session!r}", path=str(where))
    stored = _Stored(sealer, heads, where, session)
    try:
        stored.load(create=True)
    except seal.Forged as exc:
        return ChainCheck(session, stored.decisions, exc.problem, None, exc.location_message(),
                          auth=sealer.auth, key_id=sealer.key_id)
    except StoreError as exc:
        return ChainCheck(session, stored.decisions, "malformed", None,
                          exc.location_message(), auth=sealer.auth, key_id=sealer.key_id)
    finally:
        stored.close()
    if not (where / _LOG).exists():
        return ChainCheck(session, 0, None, None, "no decisions yet", auth=sealer.auth,
                          authenticated=use is not None, key_id=sealer.key_id)
    log = SqliteStore(where, session, use)
    try:
        check = log.verify()
    finally:
        log.close()
    if check.ok and stored.new:
        return dataclasses.replace(check, problem="cut", message=f"{STATE} is gone, yet the "
                                   "decision log holds records")
    return check
