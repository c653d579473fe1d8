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
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from os import PathLike
from pathlib import Path
from typing import Any

import orjson

from roadcheck.conformance.spec import Spec
from roadcheck.errors import SpecError, StoreError, TraceError
from roadcheck.guard import files, snapshot
from roadcheck.guard.core import Decision, Guard, _spec_of

__all__ = ["ASKED", "STATE", "GuardSession", "GuardStore", "decision_record"]

STATE = "guard.json"
#: The calls asked about, waiting for their PostToolUse: a cache (see the module docstring).
ASKED = "guard.asked.json"
_LOCK = "guard.lock"
#: The decision log's files, as SQLite names them.
_SQLITE_FILES = ("evidence.sqlite", "evidence.sqlite-wal", "evidence.sqlite-shm",
                 "evidence.sqlite-journal")
_FORMAT = "roadcheck-guard-state/2"


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


def _cached_spec(directory: Path, path: str | PathLike[str]) -> Spec:
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
    spec = snapshot.load_spec(raw, str(path), digest) if raw is not None else None
    if spec is None:
        spec = load_replay_spec(path)
        dumped = snapshot.dump_spec(spec) if spec.sha256 == digest else None
        if dumped is not None:
            snapshot.write_cache(cache, dumped)
            snapshot.prune_cache(cache.parent)
    return spec


class GuardStore:
    """Guard sessions kept on disk, one directory each, safe for one process per call."""

    def __init__(self, directory: str | PathLike[str] | None,
                 spec: Spec | Mapping[str, Any] | str | PathLike[str], *,
                 approver: str | None = None) -> None:
        from roadcheck.guard.paths import state_dir

        #: ``directory``, else ``$ROADCHECK_GUARD_STATE_DIR``, else the user's state directory.
        self.dir = state_dir(directory)
        self.spec = _cached_spec(self.dir, spec) if isinstance(spec, (str, PathLike)) \
            else _spec_of(spec)
        self.approver = approver
        self.spec_sha256 = spec_digest(self.spec)

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
        return (self._dir(session) / STATE).exists()

    @contextlib.contextmanager
    def session(self, session: str, *, create: bool = False) -> Iterator[GuardSession]:
        """Lock a session, yield its guard, then log its decisions and save its state.

        With ``create=True`` a session that does not exist yet starts empty;
        without it, an unknown session raises :class:`StoreError`. Nothing is
        saved when the block raises.
        """
        where = self._dir(session)
        try:
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the state directory: {exc.strerror or exc}",
                             path=str(self.dir)) from None
        files.make_dir(where)
        fd = files.lock(where / _LOCK)  # within files.LOCK_WAIT seconds, or refused
        try:
            for name in _SQLITE_FILES:  # opened by SQLite, which would block on a FIFO
                files.check_plain(where / name)
            events, digest = self._load(where, session, create)
            live = GuardSession(self, session, events, _asked(where),
                                snapshot.read_cache(where / snapshot.SNAPSHOT), digest)
            yield live
            self._save(where, session, live, digest)
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _load(self, where: Path, session: str, create: bool) -> tuple[list[Any], str]:
        """The session's events and the sha256 of its state file ("" for a new session)."""
        path = where / STATE
        raw = files.read(path)
        if raw is None:
            if create:
                return [], ""
            raise StoreError(f"unknown guard session {session!r}: it was never created",
                             path=str(path))
        try:
            state = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise StoreError(f"corrupt guard state: {exc}", path=str(path)) from None
        if (not isinstance(state, dict) or state.get("format") != _FORMAT
                or state.get("session") != session or not isinstance(state.get("events"), list)):
            raise StoreError("corrupt guard state: not a guard state of this session",
                             path=str(path))
        return state["events"], hashlib.sha256(raw).hexdigest()

    def _save(self, where: Path, session: str, live: GuardSession, digest: str) -> None:
        """Log the decisions (durable), then the events when they changed (durable), then
        the asked calls and the snapshot (caches)."""
        path = where / STATE
        try:
            if live.pending:
                self._log(where, session, live)
            if digest and len(live.guard.records) == live.loaded:
                data = None  # nothing happened: the state file stands as it is
            else:
                data = orjson.dumps({"format": _FORMAT, "session": session,
                                     "events": live.guard.records})
                files.write(path, data, durable=True)
        except OSError as exc:
            raise StoreError(f"cannot write the guard state: {exc.strerror or exc}",
                             path=str(path)) from None
        if live.asked != live.asked_at_load:
            snapshot.write_cache(where / ASKED, orjson.dumps(live.asked))
        if data is not None or not live.restored:
            snap = snapshot.dump_state(live.guard, self.spec_sha256,
                                       hashlib.sha256(data).hexdigest() if data else digest)
            if snap is not None:
                snapshot.write_cache(where / snapshot.SNAPSHOT, snap)

    def _log(self, where: Path, session: str, live: GuardSession) -> None:
        from roadcheck.evidence.store import SqliteStore

        store = SqliteStore(where, session)
        try:
            number = store.count()
            for decision, at in live.pending:
                number += 1
                store.append(decision_record(session, number, decision, self.spec_sha256, at))
        finally:
            store.close()


def _asked(where: Path) -> dict[str, list[str]]:
    """The calls the guard asked about and is waiting to see run (see :data:`ASKED`)."""
    raw = snapshot.read_cache(where / ASKED)
    try:
        asked = orjson.loads(raw) if raw is not None else {}
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(asked, dict) or not all(
            isinstance(v, list) and all(isinstance(c, str) for c in v) for v in asked.values()):
        return {}
    return asked


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

    def record(self, decision: Decision) -> None:
        """Log a decision made elsewhere (a person approving a call at a prompt)."""
        self._logged(decision)

    def check(self, event: Any) -> Decision:
        """Ask the guard (the decision is logged when the session closes)."""
        return self.guard.check(event)

    def observe(self, event: Any) -> Any:
        """Tell the guard what happened."""
        return self.guard.observe(event)
