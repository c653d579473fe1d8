"""The PostgreSQL evidence store: one database shared by workers on many machines.

The records, their hash chain, the anchored head and its MAC are those of the
file stores (:mod:`roadcheck.evidence.store`); only the place differs. Every run is
one row of ``roadcheck_runs`` (its manifest, its status, the role it waits for and
the lease of the worker holding it), every record one row of ``roadcheck_evidence``
and every effect state one row of ``roadcheck_effects``. A record and its new head
are committed in one transaction before :meth:`PostgresStore.append` returns,
so the engine never acts on a record that is not durable.

A worker holds a run through a lease: a random token and an expiry that a
heartbeat pushes forward. Every append and every effect state is fenced by that
token in the same transaction (the run row is locked ``FOR UPDATE`` and its
token compared), so a worker whose lease expired and was taken over can write
nothing more: its phase never advances twice. The schema is created and
migrated by roadcheck itself: versioned, under an advisory lock, idempotent.

psycopg 3 and psycopg-pool are imported when a store is opened (extra
``roadcheck[postgres]``), never on the import path of other commands.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from roadcheck.errors import EvidenceError, InputError, StoreError
from roadcheck.evidence.chain import ChainCheck
from roadcheck.evidence.head import Head, HeadError
from roadcheck.evidence.keys import AnyKey, require_sealing
from roadcheck.evidence.manifest import manifest_digest
from roadcheck.evidence.record import FIELDS, GENESIS, seal
from roadcheck.evidence.store import (
    StoreKind,
    _judge,
    chain_walk,
    check_run_id,
    is_url,
    last_effect_states,
    rows_to_records,
)

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

__all__ = [
    "KIND",
    "SCHEMA_VERSION",
    "Claim",
    "Database",
    "LeaseLost",
    "PostgresStore",
    "is_url",
    "redact",
]

KIND = "postgres"
_JSON_COLUMNS = ("gate", "artifact")
_COLUMNS = ", ".join(FIELDS)
_RECORD_PARAMS = ", ".join(["%s"] * (len(FIELDS) + 1))  # with ``position``
_INSERT = (f"INSERT INTO roadcheck_evidence (run_id, position, {_COLUMNS[len('run_id, '):]})"
           f" VALUES ({_RECORD_PARAMS})")
#: One append as one statement, its own transaction: the run row locked, the lease (when
#: the store holds a claim) and the head it knows checked, the record inserted and the
#: head replaced; no row changes when a check fails. Parameters: run id, lease token
#: (or null), the head's text as last written, the record's columns from ``position``
#: on, the new head's text.
_APPEND_KNOWN = (
    "WITH fence AS (SELECT r.run_id FROM roadcheck_runs r"
    " JOIN roadcheck_heads h ON h.run_id = r.run_id"
    " WHERE r.run_id = %s AND (%s::text IS NULL OR r.lease_token = %s) AND h.doc = %s"
    " FOR UPDATE OF r),"
    f" added AS (INSERT INTO roadcheck_evidence (run_id, position, {_COLUMNS[len('run_id, '):]})"
    f" SELECT fence.run_id, {', '.join(['%s'] * len(FIELDS))} FROM fence"
    "  RETURNING run_id)"
    " UPDATE roadcheck_heads h SET doc = %s FROM added WHERE h.run_id = added.run_id")

#: The schema, one step per version; a database records the last step applied.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE roadcheck_runs ("
        " run_id text PRIMARY KEY, workflow text NOT NULL, manifest text NOT NULL,"
        " status text NOT NULL DEFAULT 'open'"
        "  CHECK (status IN ('open', 'completed', 'hard-stop')),"
        " next_role text, barred_identity text,"
        " lease_token text, lease_owner text, lease_expires timestamptz,"
        " claims integer NOT NULL DEFAULT 0,"
        " created_at timestamptz NOT NULL DEFAULT clock_timestamp(),"
        " updated_at timestamptz NOT NULL DEFAULT clock_timestamp())",
        "CREATE INDEX roadcheck_runs_ready ON roadcheck_runs (workflow, next_role, created_at)"
        " WHERE status = 'open'",
        "CREATE TABLE roadcheck_evidence ("
        " run_id text NOT NULL REFERENCES roadcheck_runs (run_id), position integer NOT NULL,"
        " workflow text NOT NULL, phase text NOT NULL, attempt integer NOT NULL,"
        " iteration integer NOT NULL,"
        " verdict text NOT NULL CHECK (verdict IN ('pass', 'fail', 'refused')),"
        " gate text NOT NULL, artifact text NOT NULL, role text NOT NULL,"
        " identity text NOT NULL, started_at text NOT NULL, finished_at text NOT NULL,"
        " params_sha256 text, prev_hash text NOT NULL, hash text NOT NULL,"
        " PRIMARY KEY (run_id, position))",
        "CREATE TABLE roadcheck_heads ("
        " run_id text PRIMARY KEY REFERENCES roadcheck_runs (run_id), doc text NOT NULL)",
        "CREATE TABLE roadcheck_effects ("
        " run_id text NOT NULL REFERENCES roadcheck_runs (run_id), position integer NOT NULL,"
        " entry text NOT NULL, PRIMARY KEY (run_id, position))",
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)
#: Any constant naming roadcheck's schema lock among the database's advisory locks.
_MIGRATION_LOCK = 0x61737361_79000001


class LeaseLost(StoreError):
    """This worker's claim on a run expired and another worker took the run over."""


def redact(url: str) -> str:
    """The URL with its password replaced, fit for reports and error messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def _modules() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise InputError("a postgresql:// store needs psycopg 3 and psycopg-pool: "
                         "pip install 'roadcheck[postgres]'") from None
    return psycopg, psycopg_pool


def _canonical(doc: Any) -> str:
    return orjson.dumps(doc).decode()


@dataclass(frozen=True, slots=True)
class Claim:
    """A run held by one worker until ``token`` is released or its lease expires."""

    run_id: str
    token: str
    manifest: dict[str, Any]


class Database:
    """A connection pool on one roadcheck database; migrates the schema when opened."""

    def __init__(self, url: str, *, max_size: int = 3, timeout: float = 10.0) -> None:
        if not is_url(url):
            raise InputError(f"{url!r} is not a postgresql:// URL")
        psycopg, psycopg_pool = _modules()
        self.url = url
        self.shown = redact(url)
        try:
            with psycopg.connect(url, connect_timeout=max(1, int(timeout))) as conn:
                self._migrate(conn)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open the evidence database: {_one_line(exc)}",
                             path=self.shown) from None
        # autocommit: a single statement (an append) is its own transaction, one round
        # trip, where an implicit BEGIN and a COMMIT would be two more; every block of
        # several statements still runs in an explicit transaction (:meth:`transaction`)
        self.pool: ConnectionPool[Connection[Any]] = psycopg_pool.ConnectionPool(
            url, min_size=1, max_size=max_size, open=False, timeout=timeout,
            kwargs={"connect_timeout": max(1, int(timeout)), "autocommit": True})
        try:
            self.pool.open(wait=True, timeout=timeout)
        except psycopg_pool.PoolTimeout:
            self.pool.close()
            raise StoreError("cannot open the evidence database: no connection within "
                             f"{timeout:g}s", path=self.shown) from None

    def _migrate(self, conn: Connection[Any]) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS roadcheck_schema_version ("
                         " version integer NOT NULL,"
                         " applied_at timestamptz NOT NULL DEFAULT clock_timestamp())")
            row = conn.execute("SELECT coalesce(max(version), 0) FROM roadcheck_schema_version"
                               ).fetchone()
            have = int(row[0]) if row else 0
            if have > SCHEMA_VERSION:
                raise StoreError(f"the evidence database has schema version {have}; this "
                                 f"roadcheck knows up to {SCHEMA_VERSION}: upgrade roadcheck",
                                 path=self.shown)
            for version in range(have + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[version - 1]:
                    conn.execute(statement)
                conn.execute("INSERT INTO roadcheck_schema_version (version) VALUES (%s)",
                             (version,))

    @contextmanager
    def transaction(self, *, pipeline: bool = False) -> Iterator[Connection[Any]]:
        """One connection inside one transaction, committed when the block ends.

        With ``pipeline``, the statements go to the server without waiting for each
        answer (psycopg's pipeline mode): a result is waited for only where it is read
        (``fetchone``), so ``BEGIN`` and the reads before the first ``fetchone`` are one
        round trip, and the writes after the last one go with the ``COMMIT``.
        """
        psycopg, psycopg_pool = _modules()
        try:
            with self.pool.connection() as conn, (
                    conn.pipeline() if pipeline else contextlib.nullcontext()), conn.transaction():
                yield conn
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreError(f"evidence database: {_one_line(exc)}", path=self.shown) from None

    def close(self) -> None:
        """Close every connection of the pool."""
        self.pool.close()

    # -- runs ------------------------------------------------------------------------------

    def create_run(self, manifest: Mapping[str, Any], first_role: str,
                   key: AnyKey | None) -> None:
        """Insert run ``manifest['run_id']`` with its empty, anchored store; refuse a second."""
        run_id = str(manifest["run_id"])
        head = Head(run_id, 0, GENESIS, manifest_digest(manifest)).sealed(key)
        with self.transaction() as conn:
            row = conn.execute(
                "INSERT INTO roadcheck_runs (run_id, workflow, manifest, next_role)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (run_id) DO NOTHING RETURNING run_id",
                (run_id, manifest["workflow"], _canonical(dict(manifest)), first_role),
            ).fetchone()
            if row is None:
                raise InputError(f"run {run_id!r} already exists in {self.shown}; continue it "
                                 "with --resume or a worker")
            conn.execute("INSERT INTO roadcheck_heads (run_id, doc) VALUES (%s, %s)",
                         (run_id, _canonical(head.to_dict())))

    def manifest(self, run_id: str) -> dict[str, Any]:
        """The manifest a run was created with; an unknown run is a :class:`StoreError`."""
        with self.transaction() as conn:
            row = conn.execute("SELECT manifest FROM roadcheck_runs WHERE run_id = %s",
                               (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no evidence for run {run_id!r}", path=self.shown)
        try:
            doc = orjson.loads(row[0])
        except orjson.JSONDecodeError as exc:
            raise StoreError(f"unreadable run manifest of run {run_id!r}: {exc}",
                             path=self.shown) from None
        if not isinstance(doc, dict):
            raise StoreError(f"the manifest of run {run_id!r} is not an object", path=self.shown)
        return doc

    def claim(self, workflow: str, role: str, identity: str, lease: float,
              run_id: str | None = None) -> Claim | None:
        """Take the oldest open run of ``workflow`` waiting for ``role``, if one is free.

        A run is free when no live lease holds it; rows another worker is claiming
        at this instant are skipped (``FOR UPDATE SKIP LOCKED``), so two workers
        never take the same run. A run whose next phase reviews the work of
        ``identity`` is left to someone else.
        """
        only = "AND run_id = %(run)s" if run_id is not None else ""
        token = secrets.token_hex(16)
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT run_id, manifest FROM roadcheck_runs"
                " WHERE workflow = %(workflow)s AND status = 'open' AND next_role = %(role)s"
                " AND barred_identity IS DISTINCT FROM %(identity)s"
                " AND (lease_expires IS NULL OR lease_expires < clock_timestamp()) "
                f"{only} ORDER BY created_at, run_id LIMIT 1 FOR UPDATE SKIP LOCKED",
                {"workflow": workflow, "role": role, "identity": identity, "run": run_id},
            ).fetchone()
            if row is None:
                return None
            conn.execute(
                "UPDATE roadcheck_runs SET lease_token = %s, lease_owner = %s,"
                " lease_expires = clock_timestamp() + make_interval(secs => %s),"
                " claims = claims + 1, updated_at = clock_timestamp() WHERE run_id = %s",
                (token, identity, lease, row[0]))
        try:
            manifest = orjson.loads(row[1])
        except orjson.JSONDecodeError:
            manifest = None
        if not isinstance(manifest, dict):
            self.release(Claim(row[0], token, {}), None, None, None)
            raise StoreError(f"the manifest of run {row[0]!r} is unreadable", path=self.shown)
        return Claim(row[0], token, manifest)

    def run_state(self, run_id: str) -> dict[str, Any] | None:
        """Where a run stands: status, next role, barred identity, lease holder, claims."""
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT status, next_role, barred_identity, lease_owner, claims"
                " FROM roadcheck_runs WHERE run_id = %s", (run_id,)).fetchone()
        if row is None:
            return None
        return dict(zip(("status", "next_role", "barred_identity", "lease_owner", "claims"),
                        row, strict=True))

    def heartbeat(self, claim: Claim, lease: float) -> bool:
        """Push the lease forward; False when it was lost (expired and taken over)."""
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE roadcheck_runs SET lease_expires = clock_timestamp()"
                " + make_interval(secs => %s) WHERE run_id = %s AND lease_token = %s",
                (lease, claim.run_id, claim.token))
            return cur.rowcount == 1

    def release(self, claim: Claim, status: str | None, next_role: str | None,
                barred: str | None) -> bool:
        """Give the run back, saying where it stands now; False when the lease was lost.

        ``status=None`` leaves the run as it was (an error stopped this worker).
        """
        sets = "lease_token = NULL, lease_owner = NULL, lease_expires = NULL"
        args: list[Any] = []
        if status is not None:
            sets += ", status = %s, next_role = %s, barred_identity = %s"
            args += [status, next_role, barred]
        with self.transaction() as conn:
            cur = conn.execute(f"UPDATE roadcheck_runs SET {sets}, updated_at = clock_timestamp()"
                               " WHERE run_id = %s AND lease_token = %s",
                               (*args, claim.run_id, claim.token))
            return cur.rowcount == 1


def _head_of(doc: Any) -> Head | str | None:
    """The head stored as ``doc`` (``None`` when the run has no head row)."""
    if doc is None:
        return None
    try:
        return Head.from_dict(orjson.loads(doc))
    except (orjson.JSONDecodeError, HeadError, TypeError) as exc:
        return f"head row: {exc}"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class PostgresStore:
    """One run's evidence in a shared database: the :class:`~roadcheck.evidence.EvidenceStore`.

    With a ``claim``, every write is fenced by its lease token: once another
    worker took the run over, :meth:`append` raises :class:`LeaseLost` and
    writes nothing.
    """

    kind: StoreKind = "postgres"

    def __init__(self, db: Database, run_id: str, key: AnyKey | None = None, *,
                 claim: Claim | None = None, run_dir: Path | None = None) -> None:
        self.db = db
        self.run_id = check_run_id(run_id)
        self.key = key
        self.claim = claim
        self.run_dir = run_dir if run_dir is not None else Path(run_id)
        self.path = f"{db.shown}#{run_id}"
        self._lock = threading.Lock()
        #: The head this store last wrote, and its stored text (the next append checks it)
        self._head: Head | None = None
        self._head_doc = ""

    def _fence(self, conn: Connection[Any], head: bool = False) -> Head | str | None:
        """Lock the run row; refuse when this store's lease is no longer the run's lease.

        With ``head``, the run's head is read in the same statement and returned.
        """
        if head:
            row = conn.execute("SELECT r.lease_token, h.doc FROM roadcheck_runs r"
                               " LEFT JOIN roadcheck_heads h ON h.run_id = r.run_id"
                               " WHERE r.run_id = %s FOR UPDATE OF r", (self.run_id,)).fetchone()
        else:
            row = conn.execute("SELECT lease_token FROM roadcheck_runs WHERE run_id = %s"
                               " FOR UPDATE", (self.run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run {self.run_id!r}", path=self.path)
        if self.claim is not None and row[0] != self.claim.token:
            raise LeaseLost(f"the claim on run {self.run_id!r} expired and another worker took "
                            "the run over; nothing of this attempt was recorded", path=self.path)
        return _head_of(row[1]) if head else None

    def _head_in(self, conn: Connection[Any]) -> Head | str | None:
        row = conn.execute("SELECT doc FROM roadcheck_heads WHERE run_id = %s",
                           (self.run_id,)).fetchone()
        return None if row is None else _head_of(row[0])

    def create(self, manifest_sha256: str | None) -> None:
        """Runs are created with :meth:`Database.create_run`, which writes the first head."""
        raise StoreError("a PostgreSQL run is created with its manifest "
                         "(roadcheck run --store URL)",
                         path=self.path)

    def append(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Insert one record and its new head in one transaction, committed when this returns.

        Once this store knows the run's head (from its first append, or the last one it
        made), an append is one statement, one round trip: it locks the run row, checks
        the lease and that the head is still the one it knows, inserts the record and
        replaces the head, committed as it returns. When the check fails (the lease was
        lost, or another writer appended), the statement writes nothing and the append
        takes the long way: the run row locked and the head read in one transaction,
        refused or written from there.
        """
        require_sealing(self.key)
        with self._lock:
            if self._head is not None:
                sealed = self._append_known(record, self._head)
                if sealed is not None:
                    return sealed
                self._head = None
            return self._append_read(record)

    def _row(self, record: Mapping[str, Any], head: Head) -> tuple[dict[str, Any], Head, list[Any]]:
        """The sealed record, the head that counts it, and the record's column values."""
        sealed = seal(record, head.last_hash)
        values = [self.run_id, head.records + 1,
                  *(_canonical(sealed[k]) if k in _JSON_COLUMNS else sealed[k]
                    for k in FIELDS if k != "run_id")]
        new = dataclasses.replace(head, records=head.records + 1, last_hash=sealed["hash"])
        return sealed, new.sealed(self.key), values

    def _append_known(self, record: Mapping[str, Any], head: Head) -> dict[str, Any] | None:
        """The one-statement append on the head this store wrote last; ``None`` when it
        wrote nothing (a check failed, or another writer took the position)."""
        psycopg, psycopg_pool = _modules()
        sealed, new, values = self._row(record, head)
        token = self.claim.token if self.claim is not None else None
        doc = _canonical(new.to_dict())
        try:
            with self.db.pool.connection() as conn:
                cur = conn.execute(_APPEND_KNOWN, [self.run_id, token, token, self._head_doc,
                                                   *values[1:], doc], prepare=True)
                done = cur.rowcount == 1
        except psycopg.IntegrityError:
            return None
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreError(f"evidence database: {_one_line(exc)}", path=self.path) from None
        if not done:
            return None
        self._head, self._head_doc = new, doc
        return sealed

    def _append_read(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The append that reads the head first: two round trips, the fence and the head
        read with ``BEGIN``, then the writes sent with the ``COMMIT``."""
        with self.db.transaction(pipeline=True) as conn:
            head = self._fence(conn, head=True)
            if not isinstance(head, Head):
                raise EvidenceError(f"refusing to append: {head or 'the run has no head'}",
                                    path=self.path)
            sealed, new, values = self._row(record, head)
            conn.execute(_INSERT, values)
            doc = _canonical(new.to_dict())
            conn.execute("UPDATE roadcheck_heads SET doc = %s WHERE run_id = %s",
                         (doc, self.run_id))
        self._head, self._head_doc = new, doc
        return sealed

    def append_effect(self, entry: Mapping[str, Any]) -> None:
        """Record one effect state, fenced and committed before the run goes on."""
        with self._lock, self.db.transaction(pipeline=True) as conn:
            self._fence(conn)
            conn.execute(
                "INSERT INTO roadcheck_effects (run_id, position, entry) SELECT %s,"
                " coalesce(max(position), 0) + 1, %s FROM roadcheck_effects WHERE run_id = %s",
                (self.run_id, _canonical(dict(entry)), self.run_id))

    def effect_states(self) -> dict[str, str]:
        """The last recorded effect state of each phase."""
        with self.db.transaction() as conn:
            rows = conn.execute("SELECT entry FROM roadcheck_effects WHERE run_id = %s"
                                " ORDER BY position", (self.run_id,)).fetchall()
        return last_effect_states(raw for (raw,) in rows)

    def records(self) -> list[dict[str, Any]]:
        """Every record of the run in chain order, ``gate`` and ``artifact`` decoded."""
        with self.db.transaction() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM roadcheck_evidence WHERE run_id = %s"
                                " ORDER BY position", (self.run_id,)).fetchall()
        return rows_to_records(rows)

    def verify(self, manifest: Mapping[str, Any] | None = None) -> ChainCheck:
        """The chain, the head (and its MAC), the manifest digest, and gaps in the positions."""
        with self.db.transaction() as conn:
            head = self._head_in(conn)
            positions = [r[0] for r in conn.execute(
                "SELECT position FROM roadcheck_evidence WHERE run_id = %s ORDER BY position",
                (self.run_id,)).fetchall()]
        records = self.records()
        check, _ = _judge(self.run_id, chain_walk(self.run_id, manifest).extend(records), head,
                          self.key, manifest)
        gap = next((i for i, p in enumerate(positions, 1) if p != i), None)
        if check.ok and gap is not None:
            check = dataclasses.replace(check, problem="dropped", position=gap,
                                        message=f"a record before record {gap} was dropped "
                                        f"(position {gap} is missing)")
        if check.ok:
            check = dataclasses.replace(check, message=f"{check.message}, head matches")
        return check

    def recover(self, manifest: Mapping[str, Any] | None = None) -> tuple[list[str], ChainCheck]:
        """Nothing to repair (each record and its head commit together); verify."""
        return [], self.verify(manifest)

    def close(self) -> None:
        """Nothing to release: the pool belongs to the :class:`Database`."""


def verify_pg_run(url: str, run_id: str, key: AnyKey | None) -> ChainCheck:
    """Verify a run kept in a PostgreSQL store: chain, head, MAC and manifest digest."""
    db = Database(url)
    try:
        manifest = db.manifest(check_run_id(run_id))
        return PostgresStore(db, run_id, key).verify(manifest)
    finally:
        db.close()
