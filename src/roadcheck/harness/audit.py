"""Reading a stored run back for audit: its manifest, records, chain check and set-aside lines."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roadcheck._files import read_regular
from roadcheck.errors import StoreError
from roadcheck.evidence.chain import ChainCheck
from roadcheck.evidence.keys import AnyKey, load_key
from roadcheck.evidence.manifest import MANIFEST, read_manifest
from roadcheck.evidence.store import STORE_KINDS, check_run_id, detect_store, open_store

if TYPE_CHECKING:
    from collections.abc import Sequence

    from roadcheck.evidence.signing import VerifyKey

__all__ = ["RunTrail", "load_pg_trail", "load_trail"]


@dataclass(frozen=True, slots=True)
class RunTrail:
    """One run's evidence trail as stored, and whether its hash chain holds."""

    run_id: str
    workflow: str
    store: str
    records: list[dict[str, Any]]
    check: ChainCheck
    manifest: dict[str, Any]
    #: ``evidence.torn.<n>`` files: last records that never committed, set aside on resume.
    set_aside: tuple[str, ...] = ()
    #: The status the run's last invocation ended with (``completed``, ``paused``,
    #: ``hard-stop``, ``refused``), from its trajectory; None when none was written.
    status: str | None = None
    #: With public keys given (``--public-key``): what their signatures vouch for, one
    #: line each, and what they do not (a problem each).
    signed: tuple[str, ...] = ()
    signature_problems: tuple[str, ...] = ()

    @property
    def exit(self) -> int:
        """0 when the chain holds (and every signature checked verifies), 1 when the
        evidence was tampered with."""
        return 1 if self.signature_problems else self.check.exit

    @property
    def params(self) -> dict[str, Any]:
        """The params the run was created with (fixed for its whole life)."""
        params = self.manifest.get("params")
        return dict(params) if isinstance(params, dict) else {}


def load_trail(runs_dir: str | os.PathLike[str], run_id: str,
               key: AnyKey | None = None, public_keys: Sequence[VerifyKey] = ()) -> RunTrail:
    """Read a run's records and verify them; a missing run is a :class:`StoreError`.

    ``key=None`` takes the evidence key from the environment, if one is set there.
    A guard session (see :mod:`roadcheck.guard.store`) is verified as the guard reads
    it, with the guard's key (``key``, else the guard's own, never the environment's
    evidence key); with ``public_keys`` and no ``key``, by its hash chain and its
    signed head alone (:mod:`roadcheck.guard.signed`). With ``public_keys``, every
    signed approval the trail carries must verify under one of them.
    """
    run_dir = Path(runs_dir) / check_run_id(run_id)
    from roadcheck.guard.store import is_session

    if public_keys and key is None and (run_dir / "evidence.sqlite").is_file() \
            and is_session(runs_dir, run_id):
        return _signed_guard_trail(Path(runs_dir), run_id, public_keys)
    if is_session(runs_dir, run_id, key):
        trail = _guard_trail(Path(runs_dir), run_id, key)
        return _with_approvals(trail, public_keys, _session_events(run_dir)) \
            if public_keys else trail
    manifest: dict[str, Any] | None = None
    if (run_dir / MANIFEST).exists():
        manifest = read_manifest(run_dir)
    if detect_store(run_dir) is None and manifest is None:
        raise StoreError(f"no evidence for run {run_id!r}", path=str(run_dir))
    kind = manifest.get("store") if manifest is not None else None
    store = open_store(runs_dir, run_id, kind if kind in STORE_KINDS else None,
                       key if key is not None else load_key())
    try:
        try:
            records = store.records()
        except StoreError:
            records = []  # the check below names the unreadable record
        check = store.verify(manifest)
    finally:
        store.close()
    manifest = manifest or {}
    workflow = str(manifest.get("workflow") or (records[0].get("workflow") if records else ""))
    aside = tuple(sorted((p.name for p in run_dir.glob("evidence.torn.*")
                          if p.name.rpartition(".")[2].isdigit()),
                         key=lambda name: (len(name), name)))
    trail = RunTrail(run_id, workflow, store.kind, records, check, manifest, aside,
                     _last_status(run_dir / "trajectory.jsonl"))
    return _with_approvals(trail, public_keys, []) if public_keys else trail


def _with_approvals(trail: RunTrail, keys: Sequence[VerifyKey], events: list[Any],
                    signed: tuple[str, ...] = (), problems: tuple[str, ...] = ()) -> RunTrail:
    """``trail`` with every signed approval in its records and ``events`` checked."""
    import dataclasses

    from roadcheck.guard.signed import approval_problems

    bad, found = approval_problems([events, trail.records], keys)
    if found and not bad:
        signed = (*signed, f"{found} signed approvals verify")
    elif not found:
        signed = (*signed, "no signed approvals")
    return dataclasses.replace(trail, signed=signed, signature_problems=(*problems, *bad))


def _session_events(run_dir: Path) -> list[Any]:
    """The events of a guard session's state file as it holds them (unchecked: the
    approvals among them are checked by their own signatures); [] when unreadable."""
    import orjson

    try:
        raw = read_regular(run_dir / "guard.json")
    except OSError:
        return []
    try:
        state = orjson.loads(raw.partition(b"\n")[2])
    except orjson.JSONDecodeError:
        return []
    events = state.get("events") if isinstance(state, dict) else None
    return events if isinstance(events, list) else []


def _signed_guard_trail(runs_dir: Path, session: str, keys: Sequence[VerifyKey]) -> RunTrail:
    """A guard session checked with public keys alone: its decision log's hash chain, its
    signed head, and the approvals it carries."""
    from roadcheck.guard.signed import check_signed_log

    found = check_signed_log(runs_dir, session, keys)
    records, problem = found.records, found.problem
    check = found.check if problem is None else found.chain  # the problem is said below
    signed: tuple[str, ...] = ((f"decision log: {len(records)} records signed by key "
                                f"{check.key_id}",) if problem is None else ())
    trail = RunTrail(session, "guard", "sqlite", records, check, {})
    return _with_approvals(trail, keys, _session_events(runs_dir / session), signed,
                           (problem,) if problem is not None else ())


def _guard_trail(runs_dir: Path, session: str, key: AnyKey | None) -> RunTrail:
    """A guard session's decision log, checked by the guard's own reading of it."""
    from roadcheck.evidence.store import SqliteStore
    from roadcheck.guard.store import verify_session

    check = verify_session(runs_dir, session, key)
    records: list[dict[str, Any]] = []
    if (runs_dir / session / "evidence.sqlite").is_file():
        store = SqliteStore(runs_dir / session, session)
        try:
            records = store.records()
        except StoreError:
            records = []  # the check names what is wrong
        finally:
            store.close()
    return RunTrail(session, "guard", "sqlite", records, check, {})


def _last_status(path: Path) -> str | None:
    """The ``status`` of a run trajectory's ``final`` line; None when it cannot be read.

    The trajectory is not part of the chained evidence, so the page calls it the
    recorded status; a file that is absent or does not read simply gives none.
    """
    import orjson

    try:
        raw = read_regular(path)
    except OSError:
        return None
    lines = raw.rstrip().splitlines()
    try:
        final = orjson.loads(lines[-1]) if lines else None
    except orjson.JSONDecodeError:
        return None
    if isinstance(final, dict) and final.get("event") == "final":
        status = final.get("status")
        if status in ("completed", "paused", "hard-stop", "refused"):
            return str(status)
    return None


def load_pg_trail(url: str, run_id: str, key: AnyKey | None = None,
                  public_keys: Sequence[VerifyKey] = ()) -> RunTrail:
    """:func:`load_trail` for a run kept in a PostgreSQL store (``--store URL``)."""
    from roadcheck.evidence.postgres import Database, PostgresStore

    db = Database(url)
    try:
        manifest = db.manifest(check_run_id(run_id))
        store = PostgresStore(db, run_id, key if key is not None else load_key())
        check = store.verify(manifest)
        records = store.records()
    finally:
        db.close()
    trail = RunTrail(run_id, str(manifest.get("workflow") or ""), store.kind, records, check,
                     manifest)
    return _with_approvals(trail, public_keys, []) if public_keys else trail
