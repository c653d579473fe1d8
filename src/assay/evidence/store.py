"""Evidence stores: where records become durable before the transition they justify.

Two stores keep identical fields:

* :class:`JsonlStore` (the default): ``<runs>/<run-id>/evidence.jsonl``, append-only,
  fsynced per record, plus ``phases/<phase>.attempt<N>.<pass|fail>.json``.
* :class:`SqliteStore`: ``<runs>/<run-id>/evidence.sqlite`` in WAL mode, one row per
  record, committed (``synchronous=FULL``) before :meth:`append` returns.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

import orjson

from assay.errors import InputError, StoreError
from assay.evidence.chain import ChainCheck, verify_chain
from assay.evidence.record import FIELDS, GENESIS, seal

__all__ = [
    "STORE_KINDS",
    "EvidenceStore",
    "JsonlStore",
    "SqliteStore",
    "check_run_id",
    "detect_store",
    "open_store",
    "verify_run",
]

StoreKind = Literal["jsonl", "sqlite"]
STORE_KINDS: tuple[StoreKind, ...] = ("jsonl", "sqlite")
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

    def append(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Chain, persist and make durable one record; return it sealed."""
        ...

    def records(self) -> list[dict[str, Any]]:
        """Every record of the run, in the order written."""
        ...

    def verify(self) -> ChainCheck:
        """Recompute the hash chain."""
        ...

    def close(self) -> None:
        """Release files and connections."""
        ...


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class JsonlStore:
    """Flat files: an append-only ``evidence.jsonl`` and one file per attempt."""

    kind: StoreKind = "jsonl"

    def __init__(self, run_dir: str | os.PathLike[str], run_id: str) -> None:
        self.run_id = run_id
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / "evidence.jsonl"
        self.phases_dir = self.run_dir / "phases"
        self._fd: int | None = None
        self._last: str | None = None

    def _open(self) -> int:
        if self._fd is None:
            try:
                self.phases_dir.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            except OSError as exc:
                raise StoreError(f"cannot open evidence store: {exc.strerror or exc}",
                                 path=str(self.path)) from None
            _fsync_dir(self.run_dir)
        return self._fd

    def append(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Append one record and fsync it, then write and fsync its per-attempt file."""
        fd = self._open()
        if self._last is None:
            previous = self.records()
            self._last = previous[-1]["hash"] if previous else GENESIS
        sealed = seal(record, self._last)
        line = orjson.dumps(sealed) + b"\n"
        try:
            os.write(fd, line)
            os.fsync(fd)
            name = f"{sealed['phase']}.attempt{sealed['attempt']}.{sealed['verdict']}.json"
            tmp = self.phases_dir / f".{name}.tmp"
            with open(tmp, "wb") as fh:
                fh.write(orjson.dumps(sealed, option=orjson.OPT_INDENT_2) + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.phases_dir / name)
            _fsync_dir(self.phases_dir)
        except OSError as exc:
            raise StoreError(f"cannot write evidence: {exc.strerror or exc}",
                             path=str(self.path)) from None
        self._last = sealed["hash"]
        return sealed

    def records(self) -> list[dict[str, Any]]:
        """Read every record back; a line that is not a JSON object is a store error."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"cannot read evidence: {exc.strerror or exc}",
                             path=str(self.path)) from None
        out = []
        for n, raw in enumerate(data.split(b"\n"), 1):
            if not raw.strip():
                continue
            try:
                rec = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise StoreError(f"unreadable record: {exc.msg}", path=str(self.path),
                                 line=n) from None
            if not isinstance(rec, dict):
                raise StoreError("a record must be a JSON object", path=str(self.path), line=n)
            out.append(rec)
        return out

    def _attempt_hashes(self) -> list[str]:
        out = []
        for path in sorted(self.phases_dir.glob("*.json")):
            try:
                doc = orjson.loads(path.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                continue
            if isinstance(doc, dict) and isinstance(doc.get("hash"), str):
                out.append(doc["hash"])
        return out

    def verify(self) -> ChainCheck:
        """Check the chain, then that every per-attempt file's record is in it."""
        return verify_chain(self.run_id, self.records(), self._attempt_hashes())

    def close(self) -> None:
        """Close the append handle."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


_COLUMNS = ", ".join(FIELDS)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS evidence ("
    "seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, workflow TEXT NOT NULL, "
    "phase TEXT NOT NULL, attempt INTEGER NOT NULL, iteration INTEGER NOT NULL, "
    "verdict TEXT NOT NULL CHECK (verdict IN ('pass', 'fail')), gate TEXT NOT NULL, "
    "artifact TEXT NOT NULL, role TEXT NOT NULL, identity TEXT NOT NULL, "
    "started_at TEXT NOT NULL, finished_at TEXT NOT NULL, prev_hash TEXT NOT NULL, "
    "hash TEXT NOT NULL UNIQUE)"
)


class SqliteStore:
    """One SQLite database per run, WAL mode, one committed row per record."""

    kind: StoreKind = "sqlite"

    def __init__(self, run_dir: str | os.PathLike[str], run_id: str) -> None:
        self.run_id = run_id
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / "evidence.sqlite"
        self._conn: sqlite3.Connection | None = None
        self._last: str | None = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self.run_dir.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, isolation_level=None)
            except (OSError, sqlite3.Error) as exc:
                raise StoreError(f"cannot open evidence store: {exc}",
                                 path=str(self.path)) from None
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute(_SCHEMA)
            except sqlite3.Error as exc:
                conn.close()
                raise StoreError(f"unusable evidence store: {exc}", path=str(self.path)) from None
            self._conn = conn
        return self._conn

    def append(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Insert one record in its own transaction; it is committed when this returns."""
        conn = self._db()
        if self._last is None:
            previous = self.records()
            self._last = previous[-1]["hash"] if previous else GENESIS
        sealed = seal(record, self._last)
        values = [orjson.dumps(sealed[k]).decode() if k in _JSON_COLUMNS else sealed[k]
                  for k in FIELDS]
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"INSERT INTO evidence ({_COLUMNS}) VALUES "
                         f"({', '.join('?' * len(FIELDS))})", values)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(f"cannot write evidence: {exc}", path=str(self.path)) from None
        self._last = sealed["hash"]
        return sealed

    def records(self) -> list[dict[str, Any]]:
        """Every row in insertion order, with ``gate`` and ``artifact`` decoded."""
        if self._conn is None and not self.path.exists():
            return []
        try:
            rows = self._db().execute(f"SELECT {_COLUMNS} FROM evidence ORDER BY seq").fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read evidence: {exc}", path=str(self.path)) from None
        out = []
        for row in rows:
            rec = dict(zip(FIELDS, row, strict=True))
            for k in _JSON_COLUMNS:
                # left as text when broken: the chain check reports the record as edited
                with contextlib.suppress(orjson.JSONDecodeError):
                    rec[k] = orjson.loads(rec[k])
            out.append(rec)
        return out

    def verify(self) -> ChainCheck:
        """Check the chain, and that no row past the last one was deleted."""
        records = self.records()
        check = verify_chain(self.run_id, records)
        if not check.ok:
            return check
        conn = self._db()
        (count,) = conn.execute("SELECT count(*) FROM evidence").fetchone()
        top = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'evidence'").fetchone()
        (last,) = conn.execute("SELECT coalesce(max(seq), 0) FROM evidence").fetchone()
        if top is not None and top[0] > last:
            return ChainCheck(self.run_id, count, "dropped", count + 1,
                              f"{top[0] - last} record(s) after record {count} were dropped")
        return check

    def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def detect_store(run_dir: Path) -> StoreKind | None:
    """Which store a run directory holds, if any."""
    if (run_dir / "evidence.sqlite").exists():
        return "sqlite"
    if (run_dir / "evidence.jsonl").exists():
        return "jsonl"
    return None


def open_store(runs_dir: str | os.PathLike[str], run_id: str,
               kind: StoreKind | None = None) -> JsonlStore | SqliteStore:
    """Open a run's store; ``kind=None`` finds an existing one and fails if there is none."""
    run_dir = Path(runs_dir) / check_run_id(run_id)
    if kind is None:
        kind = detect_store(run_dir)
        if kind is None:
            raise StoreError(f"no evidence for run {run_id!r}", path=str(run_dir))
    if kind == "sqlite":
        return SqliteStore(run_dir, run_id)
    if kind == "jsonl":
        return JsonlStore(run_dir, run_id)
    raise InputError(f"unknown store {kind!r}; choose one of {', '.join(STORE_KINDS)}")


def verify_run(runs_dir: str | os.PathLike[str], run_id: str) -> ChainCheck:
    """Recompute the hash chain of a stored run."""
    store = open_store(runs_dir, run_id)
    try:
        return store.verify()
    finally:
        store.close()
