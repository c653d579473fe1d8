"""Per-session guard state on disk, and the hash-chained decision log.

``GuardStore(dir, spec)`` keeps one directory per session::

    <dir>/<session>/guard.json       the observed events, rewritten atomically
    <dir>/<session>/guard.lock       held (fcntl) while one process reads and writes
    <dir>/<session>/evidence.sqlite  the decision log: one evidence record per decision

so a hook that is a new short-lived process per call sees what the calls before
it saw: :meth:`GuardStore.session` takes the lock, rebuilds the guard by feeding
the stored events to the replay engine, and on leaving appends every decision
made to the log, then replaces the state file (fsync, rename, fsync the
directory). A session that was never created, or whose state is unreadable,
raises :class:`~assay.errors.StoreError`: an unknown session never starts from
an empty past by accident.

Each decision is an evidence record (see :mod:`assay.evidence`): ``run_id`` is
the session, ``workflow`` is ``guard``, ``phase`` the tool, ``attempt`` the
decision's number, ``verdict`` ``pass`` for allow and ``fail`` for deny or ask,
``gate`` the decision (kind ``guard``, summary, reasons, and the whole decision
as JSON in ``output``), ``artifact`` the call's arguments digest, ``identity``
the approver where known. ``assay audit SESSION --runs-dir DIR`` renders it and
verifies the chain.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from os import PathLike
from pathlib import Path
from typing import Any

import orjson

from assay.conformance.spec import Spec
from assay.errors import StoreError, TraceError
from assay.guard.core import Decision, Guard, _spec_of

__all__ = ["STATE", "GuardStore", "decision_record"]

STATE = "guard.json"
_LOCK = "guard.lock"
_FORMAT = "assay-guard-state/1"


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


class GuardStore:
    """Guard sessions kept on disk, one directory each, safe for one process per call."""

    def __init__(self, directory: str | PathLike[str],
                 spec: Spec | Mapping[str, Any] | str | PathLike[str], *,
                 approver: str | None = None) -> None:
        self.dir = Path(directory)
        self.spec = _spec_of(spec)
        self.approver = approver
        self.spec_sha256 = spec_digest(self.spec)

    def _dir(self, session: str) -> Path:
        from assay.evidence.store import check_run_id

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
            where.mkdir(parents=True, exist_ok=True)
            fd = os.open(where / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open the guard session: {exc.strerror or exc}",
                             path=str(where)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            state = self._load(where, session, create)
            live = GuardSession(self, session, state)
            yield live
            self._save(where, session, live)
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _load(self, where: Path, session: str, create: bool) -> dict[str, Any]:
        path = where / STATE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            if create:
                return {"format": _FORMAT, "session": session, "events": [], "asked": {},
                        "decisions": 0}
            raise StoreError(f"unknown guard session {session!r}: it was never created",
                             path=str(path)) from None
        except OSError as exc:
            raise StoreError(f"cannot read the guard state: {exc.strerror or exc}",
                             path=str(path)) from None
        try:
            state = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise StoreError(f"corrupt guard state: {exc}", path=str(path)) from None
        if (not isinstance(state, dict) or state.get("format") != _FORMAT
                or state.get("session") != session or not isinstance(state.get("events"), list)
                or not isinstance(state.get("asked"), dict)
                or type(state.get("decisions")) is not int):
            raise StoreError("corrupt guard state: not a guard state of this session",
                             path=str(path))
        return state

    def _save(self, where: Path, session: str, live: GuardSession) -> None:
        from assay.evidence.manifest import write_durable

        state = {"format": _FORMAT, "session": session, "events": live.guard.records,
                 "asked": live.asked, "decisions": live.decisions}
        try:
            if live.pending:
                self._log(where, session, live)
            write_durable(where / STATE, orjson.dumps(state))
        except OSError as exc:
            raise StoreError(f"cannot write the guard state: {exc.strerror or exc}",
                             path=str(where / STATE)) from None

    def _log(self, where: Path, session: str, live: GuardSession) -> None:
        from assay.evidence.store import SqliteStore

        store = SqliteStore(where, session)
        try:
            for number, decision, at in live.pending:
                store.append(decision_record(session, number, decision, self.spec_sha256, at))
        finally:
            store.close()


class GuardSession:
    """A locked session: its :class:`Guard` and the decisions still to be logged."""

    def __init__(self, store: GuardStore, session: str, state: dict[str, Any]) -> None:
        self.session = session
        self.decisions: int = state["decisions"]
        #: call id -> the checkpoint ids an ``ask`` decision was missing.
        self.asked: dict[str, list[str]] = state["asked"]
        self.pending: list[tuple[int, Decision, str]] = []
        self.guard = Guard(store.spec, approver=store.approver, log=self._logged)
        try:
            for rec in state["events"]:
                self.guard.observe(rec)
        except TraceError as exc:
            raise StoreError(f"corrupt guard state: {exc.message}") from None
        self.guard.log = self._logged

    def _logged(self, decision: Decision) -> None:
        self.decisions += 1
        self.pending.append((self.decisions, decision, _now()))

    def record(self, decision: Decision) -> None:
        """Log a decision made elsewhere (a person approving a call at a prompt)."""
        self._logged(decision)

    def check(self, event: Any) -> Decision:
        """Ask the guard (the decision is logged when the session closes)."""
        return self.guard.check(event)

    def observe(self, event: Any) -> Any:
        """Tell the guard what happened."""
        return self.guard.observe(event)
