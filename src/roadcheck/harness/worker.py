"""Workers: a workflow's phases run from a shared PostgreSQL store, on any machine.

A run lives in the database (:mod:`roadcheck.evidence.postgres`): its manifest, its
records and its effect states. ``roadcheck run WORKFLOW --store URL`` creates one and
runs the creating role's phases; ``roadcheck worker WORKFLOW --store URL --as ROLE``
then claims the next run waiting for ``ROLE``, runs that role's phases through
the same engine as a local run (producer, gate, record, transition), gives the
run back saying which role it waits for now, and repeats.

The claim is a lease: a heartbeat thread renews it while the worker lives, and
every record and effect state is fenced by its token, so a worker killed at any
point leaves a claim that expires and another worker takes the run over, and a
worker that lost its claim can write nothing more. A phase whose effect was
attempted but never confirmed is reconciled by the next worker, never re-run
blindly. The acting identity is the worker's own (``--identity``), never the
run's: the role guard compares it with the producer identity in the records,
and a worker is never handed a review of its own work.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roadcheck.errors import EvidenceError, InputError, RoadcheckError
from roadcheck.evidence.chain import record_problem
from roadcheck.evidence.keys import AUTH_NONE, AnyKey
from roadcheck.evidence.postgres import Claim, Database, LeaseLost, PostgresStore
from roadcheck.evidence.store import check_run_id
from roadcheck.harness.agent import preflight
from roadcheck.harness.engine import (
    _check_artifact_paths,
    _check_new_params,
    _loop,
    _resolve_key,
    _Run,
    _stored_gating,
    _stored_params,
    new_run_id,
    now,
)
from roadcheck.harness.model import WorkflowSpec
from roadcheck.harness.result import PhaseState, RunResult
from roadcheck.harness.resume import Revalidator, artifact_unchanged, passed_records
from roadcheck.harness.roles import check_role
from roadcheck.reasons import Reason

__all__ = ["DEFAULT_LEASE", "WorkerOptions", "run_on_database", "serve", "submit_run"]

#: Seconds a claim lives without a heartbeat; the heartbeat renews it every third of that.
DEFAULT_LEASE = 30.0


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """Who acts, where artifacts are written, and how claims are held."""

    role: str
    identity: str
    runs_dir: Path
    key: AnyKey | None = None
    lease: float = DEFAULT_LEASE
    revalidate: Revalidator | None = None


def _next_command(source: str | None, shown_url: str, role: str, runs_dir: Path,
                  other_than: str | None) -> str:
    argv = ["roadcheck", "worker", source or "WORKFLOW", "--store", shown_url, "--as", role]
    if other_than is not None:
        argv += ["--identity", f"SOMEONE_OTHER_THAN_{other_than}"]
    if runs_dir != Path("runs"):
        argv += ["--runs-dir", str(runs_dir)]
    return shlex.join(argv)


class _Heartbeat:
    """Renews a claim's lease every third of its life until stopped."""

    def __init__(self, db: Database, claim: Claim, lease: float) -> None:
        self.db, self.claim, self.lease = db, claim, lease
        self.stop = threading.Event()
        self.lost = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="roadcheck-lease", daemon=True)

    def _beat(self) -> None:
        while not self.stop.wait(self.lease / 3):
            try:
                if not self.db.heartbeat(self.claim, self.lease):
                    self.lost.set()
                    return
            except RoadcheckError:
                continue  # the database is away for now; the fence decides at the next write

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def _with_path(exc: RoadcheckError, path: str) -> RoadcheckError:
    return type(exc)(exc.message, path=path)


def _barred(spec: WorkflowSpec, result: RunResult, records: list[dict[str, Any]]) -> str | None:
    """The identity that may not take the phase the run now waits at (it produced the input)."""
    waiting = next((s.name for s in result.phases if s.status == "waiting"), None)
    phase = next((p for p in spec.phases if p.name == waiting), None)
    if phase is None or phase.reviews is None:
        return None
    reviewed = passed_records(records).get(phase.reviews)
    return None if reviewed is None else str(reviewed.get("identity"))


def work_claim(spec: WorkflowSpec, spec_dir: Path, source: str | None, db: Database,
               claim: Claim, opts: WorkerOptions) -> RunResult:
    """Run the claimed run's phases of ``opts.role``, then give the run back."""
    run_id = claim.run_id
    store = PostgresStore(db, run_id, opts.key, claim=claim)
    released = False
    try:
        manifest = claim.manifest
        if manifest.get("workflow") != spec.workflow:
            raise InputError(f"run {run_id!r} belongs to workflow {manifest.get('workflow')!r}, "
                             f"not {spec.workflow!r}")
        try:
            params = _stored_params(manifest, Path("run.json"))
            _stored_gating(manifest, Path("run.json"))
        except RoadcheckError as exc:
            raise _with_path(exc, store.path) from None
        _verified(store, manifest, spec.workflow, "refused")
        run_dir = (opts.runs_dir / check_run_id(run_id)).resolve()
        run_dir.mkdir(parents=True, exist_ok=True)
        store.run_dir = run_dir

        def resume_with(role: str, other_than: str | None) -> str:
            return _next_command(source, db.shown, role, opts.runs_dir, other_than)

        with _Heartbeat(db, claim, opts.lease):
            run = _Run(spec, spec_dir, params, run_dir, run_id, opts.role, opts.identity, store,
                       resume_with)
            with contextlib.closing(run.agents):
                result = _loop(run, opts.revalidate or artifact_unchanged, True, [])
        result.store = store.kind
        run.trajectory.write(now(), result.status, result.exit)
        if result.status == "paused":
            status, role, barred = "open", result.waiting_for, _barred(spec, result,
                                                                       store.records())
        elif result.status == "refused":
            status, role, barred = "open", opts.role, opts.identity
        else:
            status, role, barred = result.status, None, None
        released = True
        if not db.release(claim, status, role, barred):
            raise LeaseLost(f"the claim on run {run_id!r} expired before the run was given "
                            "back; its records stand, the next worker picks it up",
                            path=store.path)
        return result
    finally:
        if not released:
            with contextlib.suppress(RoadcheckError):  # else the lease expires on its own
                db.release(claim, None, None, None)


def _verified(store: PostgresStore, manifest: Mapping[str, Any], workflow: str,
              refused: str) -> None:
    """Raise :class:`EvidenceError` (exit 2) unless the run's evidence verifies and every
    record has the record's shape: what the file stores check before a resume."""
    run_id = store.run_id
    check = store.verify(manifest)
    if not check.ok:
        raise EvidenceError(f"run {run_id!r}: {check.message}; {refused} (see roadcheck "
                            f"evidence verify {run_id} --store URL)", path=store.path)
    shape = record_problem(store.records(), run_id, workflow)
    if shape is not None:
        raise EvidenceError(f"run {run_id!r}: {shape}; {refused}", path=store.path)


def _standing(spec: WorkflowSpec, run_id: str, store: PostgresStore, state: Mapping[str, Any],
              role: str, runs_dir: Path) -> RunResult:
    """What a run that this invocation could not claim looks like, from its records."""
    records = store.records()
    passed = passed_records(records)
    phases = [PhaseState(p.name, p.role, "passed" if p.name in passed else "pending")
              for p in spec.phases]
    for rec in records:
        for ph in phases:
            if ph.name == rec.get("phase"):
                if rec.get("verdict") != "refused":  # a refusal is no attempt
                    ph.attempts = max(ph.attempts, int(rec.get("attempt", 0)))
                ph.iteration = max(ph.iteration, int(rec.get("iteration", 0)))
    run_dir = str((runs_dir / run_id).resolve())
    status = state.get("status")
    if status == "completed":
        return RunResult(run_id, spec.workflow, "completed", phases, run_dir,
                         f"completed: {len(spec.phases)} phases passed their gates",
                         Reason.RUN_COMPLETED, store="postgres")
    if status == "hard-stop":
        return RunResult(run_id, spec.workflow, "hard-stop", phases, run_dir,
                         "hard-stop: the run stopped earlier; see roadcheck audit",
                         Reason.GATE_FAILED,
                         store="postgres")
    waiting = state.get("next_role")
    if state.get("lease_owner") is not None and waiting == role:
        why = f"held by worker {state['lease_owner']!r} until its lease ends"
    elif waiting == role:
        why = (f"waiting for role {role!r} at an identity other than "
               f"{state.get('barred_identity')!r}")
    else:
        why = f"waiting for role {waiting!r}"
    return RunResult(run_id, spec.workflow, "paused", phases, run_dir, f"paused: {why}",
                     Reason.WAITING_FOR_ROLE, str(waiting), store="postgres")


def _checked(spec: WorkflowSpec, source: str | None, opts: WorkerOptions,
             key_file: str | os.PathLike[str] | None, who: str) -> WorkerOptions:
    """``opts`` with its evidence key resolved, or :class:`InputError` before any run is touched.

    A role and an identity are required, and a missing SDK or API key for the role's
    agent phases stops the command before it creates or claims a run.
    """
    if not opts.role:
        raise InputError(f"no role: every {who} acts as one role (--as ROLE)")
    if not opts.identity:
        raise InputError("no identity: pass --identity or set ROADCHECK_IDENTITY")
    check_role(opts.role, (p.role for p in spec.phases), spec.workflow)
    key = _resolve_key(opts.key, key_file, opts.runs_dir)
    preflight(spec, opts.role, os.environ, source)
    return WorkerOptions(opts.role, opts.identity, opts.runs_dir, key, opts.lease,
                         opts.revalidate)


def _create(spec: WorkflowSpec, spec_dir: Path, source: str | None, db: Database,
            params: Mapping[str, str], run_id: str | None, key: AnyKey | None,
            runs_dir: Path) -> str:
    """Create a run in the database, waiting for its first phase's role; its id."""
    run_id = check_run_id(run_id or new_run_id())
    _check_new_params(spec, params)
    full = {**spec.params, **params}
    _check_artifact_paths(spec, spec_dir, full, (runs_dir / run_id).resolve(), run_id, source)
    manifest = {"run_id": run_id, "workflow": spec.workflow, "spec": source,
                "store": "postgres", "params": full, "gated": True,
                "created_at": now(), "auth": key.auth if key is not None else AUTH_NONE,
                "key_id": key.key_id if key is not None else None}
    db.create_run(manifest, spec.phases[0].role, key)
    return run_id


def submit_run(spec: WorkflowSpec, spec_dir: Path, source: str | None, url: str, *,
               params: Mapping[str, str], run_id: str | None = None,
               runs_dir: Path = Path("runs"),
               key_file: str | os.PathLike[str] | None = None) -> RunResult:
    """``roadcheck submit``: create a run in the database and work none of its phases.

    The run waits for the workers of its first phase's role; the result is that
    paused run, its ``next_command`` the worker that takes it. ``runs_dir`` is
    where the workers will write its artifacts (the artifact paths are checked
    against it before the run exists).
    """
    key = _resolve_key(None, key_file, runs_dir)
    db = Database(url)
    try:
        run_id = _create(spec, spec_dir, source, db, params, run_id, key, runs_dir)
        first = spec.phases[0].role
        result = _standing(spec, run_id, PostgresStore(db, run_id, key),
                           db.run_state(run_id) or {}, "", runs_dir)
        result.next_command = _next_command(source, db.shown, first, runs_dir, None)
        return result
    finally:
        db.close()


def run_on_database(spec: WorkflowSpec, spec_dir: Path, source: str | None, url: str, *,
                    opts: WorkerOptions, params: Mapping[str, str], run_id: str | None = None,
                    resume: str | None = None,
                    key_file: str | os.PathLike[str] | None = None) -> RunResult:
    """``roadcheck run --store URL``: create (or resume) one run and work it as one role."""
    if run_id is not None and resume is not None:
        raise InputError("give either a new run id or a run to resume, not both")
    opts = _checked(spec, source, opts, key_file, "invocation")
    key = opts.key
    db = Database(url)
    try:
        if resume is None:
            run_id = _create(spec, spec_dir, source, db, params, run_id, key, opts.runs_dir)
        else:
            run_id = check_run_id(resume)
            if params:
                raise InputError(f"params are fixed when the run was created; resume run "
                                 f"{run_id!r} without --param")
            manifest = db.manifest(run_id)
            if manifest.get("workflow") != spec.workflow:
                raise InputError(f"run {run_id!r} belongs to workflow "
                                 f"{manifest.get('workflow')!r}, not {spec.workflow!r}")
        claim = db.claim(spec.workflow, opts.role, opts.identity, opts.lease, run_id=run_id)
        if claim is None:
            state = db.run_state(run_id) or {}
            store = PostgresStore(db, run_id, key)
            if resume is not None:
                # nothing reports a run's standing from evidence that does not verify
                _verified(store, db.manifest(run_id), spec.workflow, "resume refused")
            return _standing(spec, run_id, store, state, opts.role, opts.runs_dir)
        return work_claim(spec, spec_dir, source, db, claim, opts)
    finally:
        db.close()


def serve(spec: WorkflowSpec, spec_dir: Path, source: str | None, url: str, *,
          opts: WorkerOptions, stop: threading.Event, once: bool = False, poll: float = 1.0,
          key_file: str | os.PathLike[str] | None = None,
          report: Callable[[RunResult], None] = lambda _: None,
          lost: Callable[[LeaseLost], None] = lambda _: None) -> int:
    """``roadcheck worker``: claim, work and give back runs until ``stop`` is set.

    Returns the exit code of the one run worked with ``once`` (0 when none was
    ready), else 0 after a graceful stop.
    """
    opts = _checked(spec, source, opts, key_file, "worker")
    db = Database(url)
    try:
        while not stop.is_set():
            claim = db.claim(spec.workflow, opts.role, opts.identity, opts.lease)
            if claim is None:
                if once:
                    return 0
                stop.wait(poll)
                continue
            try:
                result = work_claim(spec, spec_dir, source, db, claim, opts)
            except LeaseLost as exc:
                if once:
                    raise
                lost(exc)
                continue
            report(result)
            if once:
                return result.exit
        return 0
    finally:
        db.close()
