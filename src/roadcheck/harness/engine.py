"""The harness engine: a plain state machine over the workflow's phases.

Per attempt: run the producer, digest the artifact, evaluate the gate, append
the evidence record (durable when the store returns), and only then transition.
A failed attempt hands its failure to the next attempt's producer; after
``max_attempts`` failures the run hard-stops. Each invocation acts as one role
and one identity: it runs that role's phases and pauses at the first phase of
another role, to be resumed by whoever holds it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
import sys
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from roadcheck._commands import run_command
from roadcheck._files import FileRefused, digest_regular, inside, open_regular
from roadcheck._lock import lock
from roadcheck.errors import EvidenceError, InputError, SpecError
from roadcheck.evidence.chain import record_problem
from roadcheck.evidence.keys import (
    AUTH_NONE,
    ENV_KEY_FILE,
    AnyKey,
    key_inside,
    load_key,
)
from roadcheck.evidence.manifest import (
    MANIFEST,
    create_run,
    manifest_digest,
    params_digest,
    read_manifest,
)
from roadcheck.evidence.store import (
    STORE_KINDS,
    EvidenceStore,
    JsonlStore,
    SqliteStore,
    StoreKind,
    check_run_id,
    open_store,
)
from roadcheck.harness.agent import AgentRunner, preflight
from roadcheck.harness.feedback import producer_env, write_feedback
from roadcheck.harness.gates import GateContext, GateOutcome, evaluate
from roadcheck.harness.model import PLACEHOLDERS, AgentProducer, Phase, WorkflowSpec
from roadcheck.harness.result import PhaseState, RunResult, RunStatus
from roadcheck.harness.resume import (
    Revalidator,
    append_effect,
    artifact_unchanged,
    effect_states,
    passed_records,
)
from roadcheck.harness.roles import check_role, review_refusal
from roadcheck.harness.trajectory import HARNESS_AGENT, TrajectoryLog
from roadcheck.reasons import Reason

__all__ = ["MANIFEST", "execute", "new_run_id", "read_manifest"]

def now() -> str:
    """The current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_id() -> str:
    """A fresh run id: UTC time plus random hex, sortable and unguessable."""
    # os.urandom, as secrets.token_hex would, without loading secrets (and random) per run
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + os.urandom(3).hex()


def _digest(path: Path, roots: tuple[Path, ...] | None = None) -> dict[str, Any]:
    """sha256 and size of a regular file inside ``roots``; nulls when it is not one."""
    try:
        sha, size = digest_regular(path, roots)
    except OSError:
        return {"sha256": None, "bytes": None}
    return {"sha256": sha, "bytes": size}


def artifact_roots(spec: WorkflowSpec, spec_dir: Path, run_dir: Path) -> tuple[Path, ...]:
    """Where artifacts may live: the run directory, then the workflow's ``allowed_roots``.

    A relative allowed root is taken from the workflow's folder.
    """
    extra = [Path(os.path.expanduser(str(r))) for r in spec.allowed_roots]
    return (run_dir, *(r if r.is_absolute() else spec_dir / r for r in extra))


def artifact_path(spec: WorkflowSpec, index: int, base: Mapping[str, str], run_dir: Path,
                  roots: tuple[Path, ...]) -> Path:
    """The artifact path of the phase at ``index``; one outside ``roots`` is a spec error.

    Relative paths are taken from the run directory. The check is lexical; a
    symlink that leads elsewhere is refused when the artifact is read.
    """
    phase = spec.phases[index]
    raw = phase.artifact.format_map({**base, "phase": phase.name, "artifact": "", "input": ""})
    path = Path(os.path.normpath(run_dir / raw))
    if not inside(path, roots):
        where = "the run directory" + (" and the workflow's allowed_roots" if roots[1:] else "")
        raise InputError(f"phases[{index}].artifact: {phase.artifact!r} is {path}, outside "
                         f"{where}; artifacts are written inside the run")
    return path


def _check_artifact_paths(spec: WorkflowSpec, spec_dir: Path, params: Mapping[str, str],
                          run_dir: Path, run_id: str, source: str | None) -> None:
    """Refuse an artifact outside the allowed roots before the run exists."""
    base = {**params, "run_dir": str(run_dir), "run_id": run_id, "python": sys.executable,
            "spec_dir": str(spec_dir)}
    roots = artifact_roots(spec, spec_dir, run_dir)
    for index in range(len(spec.phases)):
        try:
            artifact_path(spec, index, base, run_dir, roots)
        except InputError as exc:
            raise SpecError(exc.message, path=source) from None


@contextlib.contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    """One invocation per run at a time."""
    fd = os.open(run_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not lock(fd, wait=False):
            raise InputError(f"run {run_dir.name!r} is in use by another invocation")
        yield
    finally:
        os.close(fd)


class _Run:
    """One invocation: the state the loop needs, and the steps of one attempt."""

    def __init__(self, spec: WorkflowSpec, spec_dir: Path, params: Mapping[str, str],
                 run_dir: Path, run_id: str, role: str, identity: str,
                 store: EvidenceStore | None,
                 resume_with: Callable[[str, str | None], str]) -> None:
        self.spec = spec
        #: ``(role, identity that may not act) -> the command that continues this run``
        self.resume_with = resume_with
        self.run_dir = run_dir
        self.run_id = run_id
        self.role = role
        self.identity = identity
        self.store = store
        # params never shadow a built-in value (they are checked when the run is created)
        self.base = {**params, "run_dir": str(run_dir), "run_id": run_id,
                     "python": sys.executable, "spec_dir": str(spec_dir)}
        self.params_sha256 = params_digest(params)
        self.spec_dir = spec_dir
        self.roots = artifact_roots(spec, spec_dir, run_dir)
        self.artifacts = {p.name: artifact_path(spec, i, self.base, run_dir, self.roots)
                          for i, p in enumerate(spec.phases)}
        self.trajectory = TrajectoryLog(run_dir / "trajectory.jsonl")
        self.env = dict(os.environ)
        self.agents = AgentRunner(spec, spec_dir, run_dir, self.roots, self.env)
        #: The agent's evidence of the latest attempt (the record's ``artifact.producer``).
        self.produced: dict[str, Any] | None = None
        #: The tail of the latest attempt's producer command output (the record's
        #: ``artifact.output``); None when no command producer ran.
        self.produced_output: str | None = None

    def values(self, index: int) -> dict[str, str]:
        """The template values of the phase at ``index``."""
        phase = self.spec.phases[index]
        values = {**self.base, "phase": phase.name, "artifact": str(self.artifacts[phase.name])}
        if phase.input is not None:
            raw = phase.input.format_map({**values, "input": ""})
            values["input"] = os.path.abspath(raw)
        elif phase.reviews is not None:
            values["input"] = str(self.artifacts[phase.reviews])
        elif index > 0:
            values["input"] = str(self.artifacts[self.spec.phases[index - 1].name])
        else:
            values["input"] = self.base.get("input", "")
        return values

    def record_artifact(self, path: Path, producer: dict[str, Any] | None = None,
                        output: str | None = None) -> dict[str, Any]:
        """The ``artifact`` object of a record; paths inside the run are kept relative.

        An artifact an agent made carries the agent's evidence as ``producer``; one a
        command made, the tail of the command's output as ``output``.
        """
        try:
            shown = str(path.relative_to(self.run_dir))
        except ValueError:
            shown = str(path)
        out = {"path": shown, **_digest(path, self.roots)}
        if producer is not None:
            out["producer"] = producer
        if output is not None:
            out["output"] = output
        return out

    def refuse_artifact(self, path: Path, output: str = "",
                        exit_code: int | None = None) -> GateOutcome | None:
        """A failed outcome when ``path`` is not a regular file inside the roots, else None."""
        try:
            os.close(open_regular(path, self.roots))
        except FileNotFoundError:
            return GateOutcome(False, "artifact", "producer exited 0 but wrote no artifact",
                               f"expected a file at {path}", exit_code, output)
        except FileRefused as exc:
            return GateOutcome(False, "artifact", f"artifact refused: it {exc.why}", str(exc),
                               exit_code, output)
        except OSError as exc:
            return GateOutcome(False, "artifact", "artifact is unreadable",
                               f"{path}: {exc.strerror or exc}", exit_code, output)
        return None

    def produce(self, phase: Phase, values: Mapping[str, str], attempt: int, iteration: int,
                last: Mapping[str, Any] | None) -> GateOutcome | None:
        """Run the producer; a crash, a timeout or no artifact is the attempt's failure."""
        feedback = None
        if last is not None:
            feedback = write_feedback(
                self.run_dir / "feedback" / f"{phase.name}.attempt{attempt}.json", last)
        producer = phase.producer
        if isinstance(producer, AgentProducer):
            failed, self.produced = self.agents.produce(phase, values, feedback, last)
            self.trajectory.add("action", phase.role, now(), action_type=f"produce:{phase.name}",
                                phase=phase.name, attempt=attempt, iteration=iteration,
                                identity=self.identity, producer="agent",
                                outcome=self.produced["outcome"])
            return failed or self.refuse_artifact(self.artifacts[phase.name])
        env = producer_env(self.env, attempt=attempt, iteration=iteration, feedback=feedback,
                           last=last, extra=self.roadcheck_env(phase, values))
        argv = [a.format_map(values) for a in producer]
        # a producer with a side effect dies with the engine, so it cannot finish the effect
        # behind the back of the resume that reconciles it
        run = run_command(argv, cwd=None, env=env, timeout=phase.timeout,
                          die_with_parent=phase.effect is not None)
        self.produced_output = run.output
        self.trajectory.add("action", phase.role, now(), action_type=f"produce:{phase.name}",
                            phase=phase.name, attempt=attempt, iteration=iteration,
                            identity=self.identity, exit_code=run.exit_code)
        if run.error is not None:
            return GateOutcome(False, "producer", f"producer {run.error}", "", None, run.output)
        if run.exit_code != 0:
            lines = run.stderr.strip().splitlines() or run.stdout.strip().splitlines()
            return GateOutcome(False, "producer", f"producer exited {run.exit_code}",
                               lines[-1][:300] if lines else "", run.exit_code, run.output)
        return self.refuse_artifact(self.artifacts[phase.name], run.output, 0)

    def roadcheck_env(self, phase: Phase, values: Mapping[str, str]) -> dict[str, str]:
        """The ``ROADCHECK_*`` facts every producer and gate sees."""
        return {"ROADCHECK_RUN_ID": self.run_id, "ROADCHECK_RUN_DIR": str(self.run_dir),
                "ROADCHECK_WORKFLOW": self.spec.workflow, "ROADCHECK_PHASE": phase.name,
                "ROADCHECK_ROLE": self.role, "ROADCHECK_IDENTITY": self.identity,
                "ROADCHECK_ARTIFACT": values["artifact"], "ROADCHECK_INPUT": values["input"]}

    def effect(self, phase: Phase, state: str, attempt: int, by: str, detail: str = "",
               *, durable: bool = True) -> None:
        """Record one effect state, durable before the run goes on unless the record implies it."""
        assert phase.effect is not None
        key = phase.effect.idempotency_key
        entry = {"phase": phase.name, "state": state, "attempt": attempt, "by": by,
                 "idempotency_key": None if key is None else key.format_map(self.base),
                 "at": now()}
        if detail:
            entry["detail"] = detail
        # a store that keeps effects itself (PostgreSQL) fences them like its records
        log = getattr(self.store, "append_effect", None)
        if log is not None:
            log(entry)
        else:
            append_effect(self.run_dir, entry, durable=durable)
        self.trajectory.add("action", HARNESS_AGENT, now(), action_type=f"effect:{phase.name}",
                            phase=phase.name, attempt=attempt, state=state, by=by)

    def effect_states(self) -> dict[str, str]:
        """The last recorded effect state of each phase, from the store when it keeps them."""
        states = getattr(self.store, "effect_states", None)
        return states() if states is not None else effect_states(self.run_dir)

    def reconcile(self, phase: Phase, values: Mapping[str, str]) -> tuple[str, str]:
        """Ask the effect's owner: ``(found|not_found|unknown, detail or stdout)``."""
        assert phase.effect is not None
        if phase.effect.reconcile is None:
            return "unknown", "no reconcile command to ask the effect's owner"
        argv = [a.format_map(values) for a in phase.effect.reconcile]
        run = run_command(argv, cwd=None, env={**self.env, **self.roadcheck_env(phase, values)},
                          timeout=phase.effect.timeout)
        if run.error is not None:
            return "unknown", f"reconcile {run.error}"
        if run.exit_code == 0:
            return "found", run.stdout
        if run.exit_code == 1:
            return "not_found", "reconcile exited 1: the owner has no record"
        return "unknown", f"reconcile exited {run.exit_code}"

    @staticmethod
    def unwritten(values: Mapping[str, str]) -> bool:
        """Whether the artifact is missing, or an empty regular file (a producer that died
        after opening it, before writing)."""
        try:
            info = os.lstat(values["artifact"])
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return stat.S_ISREG(info.st_mode) and info.st_size == 0

    def adopt(self, values: Mapping[str, str], receipt: str) -> None:
        """Write the owner's record as the artifact when the producer died before writing it
        (the artifact is missing or was left empty)."""
        artifact = Path(values["artifact"])
        if not self.unwritten(values) or not receipt.strip():
            return
        artifact.parent.mkdir(parents=True, exist_ok=True)
        tmp = artifact.with_name(artifact.name + ".reconciled.tmp")
        tmp.write_text(receipt, encoding="utf-8")
        os.replace(tmp, artifact)

    def refuse(self, phase: Phase, state: PhaseState, iteration: int, why: str) -> int:
        """Record the role guard's refusal of this invocation's identity; return the iteration.

        The refusal is a record like a gate evaluation (verdict ``refused``, gate kind
        ``role-guard``, the reviewed artifact), durable before the run stops, so the
        chain shows who tried to review what. It carries the number of the attempt
        it refused, which the next attempt of the phase takes again: a refusal is not
        an attempt, nor is it ever feedback to a producer.
        """
        assert self.store is not None
        assert phase.reviews is not None
        attempt, iteration = state.attempts + 1, iteration + 1
        started = now()
        record = self.store.append({
            "run_id": self.run_id, "workflow": self.spec.workflow, "phase": phase.name,
            "attempt": attempt, "iteration": iteration, "verdict": "refused",
            "gate": {"kind": "role-guard", "summary": f"refused: {why}",
                     "detail": "a review is run by an identity other than the one that "
                               "produced what it reviews",
                     "exit_code": None, "output": ""},
            "artifact": self.record_artifact(self.artifacts[phase.reviews]),
            "role": self.role, "identity": self.identity, "started_at": started,
            "finished_at": now(), "params_sha256": self.params_sha256})
        state.status, state.iteration = "refused", iteration
        self.trajectory.add("action", HARNESS_AGENT, now(), action_type="role-guard",
                            phase=phase.name, identity=self.identity, refused=True,
                            evidence=record["hash"])
        return iteration

    def judge(self, phase: Phase, values: Mapping[str, str], *,
              checked: bool = False) -> GateOutcome:
        """Evaluate the phase's gate on its artifact, once it is known to be a regular file
        (``checked``: the producer's step just found it one, nothing ran since)."""
        artifact = self.artifacts[phase.name]
        if not checked:
            refused = self.refuse_artifact(artifact)
            if refused is not None:
                return refused
        env = {**self.env, **self.roadcheck_env(phase, values)}
        ctx = GateContext(artifact, self.run_dir, self.spec_dir, values, env,
                          phase.name, self.roots)
        return evaluate(phase.gate, ctx)


def next_command(source: str | None, run_id: str, role: str, *, runs_dir: Path,
                 key_file: str | os.PathLike[str] | None, other_than: str | None) -> str:
    """The shell line that continues run ``run_id`` as ``role``.

    ``other_than`` names the identity the role guard will refuse (the producer of
    what the next phase reviews); the ``--identity`` slot then says so.
    """
    argv = ["roadcheck", "run", source or "WORKFLOW", "--resume", run_id, "--as", role]
    if other_than is not None:
        argv += ["--identity", f"SOMEONE_OTHER_THAN_{other_than}"]
    if runs_dir != Path("runs"):
        argv += ["--runs-dir", str(runs_dir)]
    if key_file is not None:
        argv += ["--key-file", os.fspath(key_file)]
    return shlex.join(argv)


def _check_new_params(spec: WorkflowSpec, params: Mapping[str, str]) -> None:
    """Refuse a param that names a built-in value, or one the workflow does not declare."""
    for name in sorted(params):
        if name in PLACEHOLDERS:
            raise InputError(f"param {name!r} is built in and cannot be set (built in: "
                             f"{', '.join(sorted(PLACEHOLDERS))})")
    declared = spec.declared_params
    for name in sorted(params):
        if name not in declared:
            raise InputError(f"param {name!r} is not declared by workflow {spec.workflow!r} "
                             f"(declared: {', '.join(sorted(declared)) or 'none'})")
    missing = sorted(spec.required_params - set(params))
    if missing:
        raise InputError(f"workflow {spec.workflow!r} needs param(s) {', '.join(missing)}: "
                         "pass " + " ".join(f"--param {m}=VALUE" for m in missing))


def _stored_params(manifest: Mapping[str, Any], path: Path) -> dict[str, str]:
    """The params fixed in ``run.json``; anything a workflow could not have produced is broken."""
    params = manifest.get("params", {})
    if not isinstance(params, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in params.items()):
        raise EvidenceError("the run's params are not a map of text to text", path=str(path))
    builtin = sorted(set(params) & PLACEHOLDERS)
    if builtin:
        raise EvidenceError(f"the run's params set built-in value(s) {', '.join(builtin)}",
                            path=str(path))
    return params


def _stored_gating(manifest: Mapping[str, Any], path: Path) -> bool:
    """A resume never changes gating: only a gated run (``gated: true``) can be resumed.

    An ungated run is a measurement baseline without evidence; resuming it could only
    run producers without gates, so it is refused, and so is any other value.
    """
    gated = manifest.get("gated")
    if gated is False:
        raise InputError("the run was created ungated (a baseline without evidence); an "
                         "ungated run cannot be resumed", path=str(path))
    if gated is not True:
        raise EvidenceError(f"the run's gated flag is {gated!r}, not true: a run is gated when "
                            "created and stays so", path=str(path))
    return True


def _resolve_key(key: AnyKey | None, key_file: str | os.PathLike[str] | None,
                 runs_dir: Path) -> AnyKey | None:
    """The key to use; a key file any writer of the runs could read is refused."""
    named = key_file if key_file is not None else os.environ.get(ENV_KEY_FILE) or None
    if key is None and key_inside(named, runs_dir):
        raise InputError("the evidence key file lies inside the runs directory, where a writer "
                         "of the run could read it; keep the key outside", path=str(named))
    return key if key is not None else load_key(key_file)


def execute(spec: WorkflowSpec, *, spec_dir: Path, params: Mapping[str, str], runs_dir: Path,
            role: str, identity: str, run_id: str | None = None, resume: str | None = None,
            store_kind: StoreKind = "jsonl", spec_source: str | None = None,
            revalidate: Revalidator | None = None, gated: bool = True,
            key: AnyKey | None = None,
            key_file: str | os.PathLike[str] | None = None) -> RunResult:
    """Run (or resume) a workflow as one role and identity; see :class:`roadcheck.Workflow`."""
    if run_id is not None and resume is not None:
        raise InputError("give either a new run id or a run to resume, not both")
    if not role:
        raise InputError("no role: every invocation acts as one role (--as ROLE)")
    if not identity:
        raise InputError("no identity: pass --identity or set ROADCHECK_IDENTITY")
    if gated:
        check_role(role, (p.role for p in spec.phases), spec.workflow)
    key = _resolve_key(key, key_file, runs_dir)
    # a missing SDK or API key stops the run before it exists (ungated runs every phase)
    preflight(spec, role if gated else None, os.environ, spec_source)
    if resume is not None:
        run_id = check_run_id(resume)
        run_dir = runs_dir / run_id
        manifest, params, store_kind, gated = _stored_run(spec, run_dir, params, store_kind)
    else:
        run_id = check_run_id(run_id or new_run_id())
        manifest, params = _new_manifest(spec, spec_dir, params, runs_dir, run_id, store_kind,
                                         spec_source, gated, key)
        run_dir = _create(runs_dir, run_id, manifest, store_kind, gated, key)
    with _locked(run_dir):
        store = open_store(runs_dir, run_id, store_kind, key) if gated else None
        try:
            notes: list[str] = []
            if store is not None and resume is not None:
                # nothing acts on evidence that does not verify
                notes, check = store.recover(manifest)
                if not check.ok:
                    raise EvidenceError(f"run {run_id!r}: {check.message}; resume refused "
                                        f"(see roadcheck evidence verify {run_id})",
                                        path=str(store.path))
                shape = record_problem(store.records(), run_id, spec.workflow)
                if shape is not None:
                    raise EvidenceError(f"run {run_id!r}: {shape}; resume refused",
                                        path=str(store.path))

            def resume_with(role: str, other_than: str | None) -> str:
                return next_command(spec_source, run_id, role, runs_dir=runs_dir,
                                    key_file=key_file, other_than=other_than)

            run = _Run(spec, spec_dir, params, run_dir.resolve(), run_id, role, identity, store,
                       resume_with)
            with contextlib.closing(run.agents):
                result = _loop(run, revalidate or artifact_unchanged, gated, notes)
        finally:
            if store is not None:
                store.close()
        result.store = store_kind
        run.trajectory.write(now(), result.status, result.exit)
    return result


def _stored_run(spec: WorkflowSpec, run_dir: Path, params: Mapping[str, str],
                store_kind: str) -> tuple[dict[str, Any], dict[str, str], Any, bool]:
    """The manifest of a run to resume, and what it fixed: params, store, gating."""
    run_id = run_dir.name
    if params:
        raise InputError(f"params are fixed when the run was created; resume run {run_id!r} "
                         "without --param")
    manifest = read_manifest(run_dir)
    if manifest.get("workflow") != spec.workflow:
        raise InputError(f"run {run_id!r} belongs to workflow {manifest.get('workflow')!r}, "
                         f"not {spec.workflow!r}")
    store_kind = manifest.get("store", store_kind)
    if store_kind not in STORE_KINDS:
        raise EvidenceError(f"the run names an unknown store {store_kind!r}",
                            path=str(run_dir / MANIFEST))
    return (manifest, _stored_params(manifest, run_dir / MANIFEST), store_kind,
            _stored_gating(manifest, run_dir / MANIFEST))


def _new_manifest(spec: WorkflowSpec, spec_dir: Path, params: Mapping[str, str],
                  runs_dir: Path, run_id: str, store_kind: str, spec_source: str | None,
                  gated: bool, key: AnyKey | None) -> tuple[dict[str, Any], dict[str, str]]:
    """The manifest of a new run, after its params and artifact paths are checked."""
    if store_kind not in STORE_KINDS:
        raise InputError(f"unknown store {store_kind!r}; choose one of "
                         f"{', '.join(STORE_KINDS)}")
    _check_new_params(spec, params)
    params = {**spec.params, **params}
    _check_artifact_paths(spec, spec_dir, params, (runs_dir / run_id).resolve(), run_id,
                          spec_source)
    manifest = {"run_id": run_id, "workflow": spec.workflow, "spec": spec_source,
                "store": store_kind, "params": params, "gated": gated, "created_at": now(),
                "auth": key.auth if key is not None else AUTH_NONE,
                "key_id": key.key_id if key is not None else None}
    return manifest, params


def _create(runs_dir: Path, run_id: str, manifest: dict[str, Any], kind: str, gated: bool,
            key: AnyKey | None) -> Path:
    """Create the run directory with its manifest and, when gated, its empty store."""
    digest = manifest_digest(manifest)

    def init(stage: Path) -> None:
        if gated:
            fresh = (SqliteStore if kind == "sqlite" else JsonlStore)(stage, run_id, key)
            try:
                fresh.create(digest)
            finally:
                fresh.close()

    return create_run(runs_dir, run_id, manifest, init)


def _loop(run: _Run, revalidate: Revalidator, gated: bool, notes: list[str]) -> RunResult:
    """Advance the run phase by phase, from what its evidence says, until it completes,
    pauses for another role, is refused or stops."""
    return _Loop(run, revalidate, gated, notes).run()


class _Loop:
    """The run's state rebuilt from its records, and the steps that advance it."""

    def __init__(self, run: _Run, revalidate: Revalidator, gated: bool,
                 notes: list[str]) -> None:
        self.run_, self.revalidate, self.gated, self.notes = run, revalidate, gated, notes
        records = run.store.records() if run.store is not None else []
        self.passed = dict(passed_records(records))
        self.states = {p.name: PhaseState(p.name, p.role) for p in run.spec.phases}
        self.last_fail: dict[str, Mapping[str, Any]] = {}
        for rec in records:
            state = self.states.get(str(rec.get("phase")))
            if state is not None:
                if rec.get("verdict") != "refused":  # a refusal is no attempt
                    state.attempts = max(state.attempts, int(rec.get("attempt", 0)))
                state.iteration = max(state.iteration, int(rec.get("iteration", 0)))
                if rec.get("verdict") == "fail":
                    self.last_fail[state.name] = rec
        self.iteration = max((int(r.get("iteration", 0)) for r in records), default=0)
        run.agents.count(records)

    def finish(self, status: RunStatus, message: str, reason: str | None = None,
               waiting: str | None = None, output: str = "",
               next_command: str | None = None) -> RunResult:
        run = self.run_
        return RunResult(run.run_id, run.spec.workflow, status, list(self.states.values()),
                         str(run.run_dir), message, reason, waiting, output, notes=self.notes,
                         next_command=next_command)

    def resume_command(self) -> str:
        """The command that resumes this run as this invocation's role (after a hard stop:
        each resume gives a failed phase its attempts again)."""
        return self.run_.resume_with(self.run_.role, None)

    def run(self) -> RunResult:
        for index, phase in enumerate(self.run_.spec.phases):
            stop = self.phase(index, phase)
            if stop is not None:
                return stop
        return self.finish("completed", f"completed: {len(self.run_.spec.phases)} phases "
                           "passed their gates", Reason.RUN_COMPLETED)

    def phase(self, index: int, phase: Phase) -> RunResult | None:
        """One phase: kept when it passed before and still holds, else run; the run's
        result when it may not go on past this phase."""
        state = self.states[phase.name]
        if phase.name in self.passed:
            why = self.revalidate(phase, self.passed[phase.name], self.run_.run_dir)
            if why is None:
                state.status = "passed"
                return None
            self.notes.append(f"phase {phase.name!r} runs again: {why}")
            del self.passed[phase.name]
        stop = self.hold(phase, state)
        if stop is not None:
            return stop
        values = self.run_.values(index)
        if not self.gated:
            self.run_.produce(phase, values, 1, self.iteration + 1, None)
            self.iteration += 1
            state.status, state.attempts, state.iteration = "unchecked", 1, self.iteration
            return None
        return self.attempts(phase, state, values)

    def hold(self, phase: Phase, state: PhaseState) -> RunResult | None:
        """Pause for another role, or refuse a reviewer who produced what it reviews."""
        if not self.gated:
            return None
        run = self.run_
        reviewed = self.passed.get(phase.reviews) if phase.reviews is not None else None
        producer = None if reviewed is None else str(reviewed.get("identity"))
        if phase.role != run.role:
            state.status = "waiting"
            other = (f", to be run by an identity other than {producer!r} (who produced "
                     f"{phase.reviews!r})" if producer is not None else "")
            return self.finish("paused", f"paused: waiting for role {phase.role!r} at phase "
                               f"{phase.name!r}{other}", Reason.WAITING_FOR_ROLE, phase.role,
                               next_command=run.resume_with(phase.role, producer))
        if phase.reviews is None:
            return None
        refusal = review_refusal(phase.name, phase.reviews, reviewed, run.identity)
        if refusal is None:
            return None
        self.iteration = run.refuse(phase, state, self.iteration, refusal)
        return self.finish("refused", f"refused: {refusal}; the refusal is recorded in the "
                           "run's evidence", Reason.ROLE_GUARD_REFUSED,
                           next_command=None if reviewed is None
                           else run.resume_with(phase.role, producer))

    def attempts(self, phase: Phase, state: PhaseState,
                 values: Mapping[str, str]) -> RunResult | None:
        """Attempts of a gated phase, up to its cap, until one passes."""
        last: Mapping[str, Any] | None = self.last_fail.get(phase.name)
        outcome: GateOutcome | None = None
        for _ in range(phase.max_attempts):
            spent = self.run_.agents.stop(phase)
            if spent is not None:
                state.status = "failed"
                self.run_.trajectory.add("action", HARNESS_AGENT, now(), action_type="budget",
                                         phase=phase.name, reason=spent[0], message=spent[1])
                return self.finish("hard-stop", f"hard-stop: {spent[1]}; phase {phase.name!r} "
                                   f"stopped after {state.attempts} attempt(s)", spent[0],
                                   next_command=self.resume_command())
            attempt, self.iteration = state.attempts + 1, self.iteration + 1
            self.run_.produced = self.run_.produced_output = None
            started = now()
            produce = self.settle_effect(phase, values, attempt)
            if isinstance(produce, RunResult):
                return produce
            outcome, record = self.attempt(phase, state, values, (attempt, started), produce,
                                           last)
            if outcome.passed:
                return None
            last = record
        state.status = "failed"
        assert outcome is not None
        detail = f" ({outcome.detail})" if outcome.detail else ""
        total = (f", {state.attempts} recorded across resumes"
                 if state.attempts != phase.max_attempts else "")
        return self.finish("hard-stop", f"hard-stop: phase {phase.name!r} failed "
                           f"{phase.max_attempts} of {phase.max_attempts} attempts{total}; "
                           f"last gate ({outcome.kind}): {outcome.summary}{detail}",
                           Reason.GATE_FAILED, output=outcome.output,
                           next_command=self.resume_command())

    def settle_effect(self, phase: Phase, values: Mapping[str, str],
                      attempt: int) -> bool | RunResult:
        """Whether the producer runs: a side effect already attempted is never re-run
        blindly, its owner speaks first. A hard stop when the owner cannot answer for an
        effect that is not safe to retry."""
        run = self.run_
        if phase.effect is None:
            return True
        known = run.effect_states().get(phase.name)
        if known in ("attempted", "unknown", "confirmed"):
            if known == "confirmed":
                answer, said = "found", ""
                if run.unwritten(values):
                    # confirmed, yet no record of it here: the owner's record is the artifact
                    again, receipt = run.reconcile(phase, values)
                    said = receipt if again == "found" else ""
            else:
                answer, said = run.reconcile(phase, values)
                run.effect(phase, {"found": "confirmed"}.get(answer, answer), attempt,
                           "reconcile", "" if answer == "found" else said)
            if answer == "found":
                run.adopt(values, said)
                return False
            if answer == "unknown" and phase.effect.retry_class != "safe_to_retry":
                self.states[phase.name].status = "failed"
                return self.finish(
                    "hard-stop", f"hard-stop: phase {phase.name!r} has an "
                    f"{phase.effect.retry_class} effect that was attempted and never "
                    f"confirmed, and reconciling gave no answer ({said}); resolve it "
                    "with its owner before resuming", Reason.EFFECT_UNKNOWN_STOP,
                    next_command=self.resume_command())
        run.effect(phase, "attempted", attempt, "engine")
        return True

    def attempt(self, phase: Phase, state: PhaseState, values: Mapping[str, str],
                begun: tuple[int, str], produce: bool,
                last: Mapping[str, Any] | None) -> tuple[GateOutcome, Mapping[str, Any]]:
        """One attempt (its number, and when it began): produce (unless an effect was
        adopted), gate, and make the record durable before the run may transition."""
        run = self.run_
        attempt, started = begun
        # a producer that succeeded has just checked its artifact is a regular file
        outcome = (run.produce(phase, values, attempt, self.iteration, last) if produce
                   else None)
        if outcome is None:
            outcome = run.judge(phase, values, checked=produce)
        assert run.store is not None
        record = run.store.append({
            "run_id": run.run_id, "workflow": run.spec.workflow, "phase": phase.name,
            "attempt": attempt, "iteration": self.iteration,
            "verdict": "pass" if outcome.passed else "fail", "gate": outcome.to_dict(),
            "artifact": run.record_artifact(run.artifacts[phase.name], run.produced,
                                            run.produced_output),
            "role": run.role, "identity": run.identity, "started_at": started,
            "finished_at": now(), "params_sha256": run.params_sha256})
        # the record is durable here; only now may the run transition
        state.attempts, state.iteration = attempt, self.iteration
        run.trajectory.add("action", HARNESS_AGENT, now(), action_type=f"gate:{phase.name}",
                           phase=phase.name, attempt=attempt, kind=outcome.kind,
                           verdict=record["verdict"], evidence=record["hash"])
        if outcome.passed:
            run.trajectory.add("checkpoint", HARNESS_AGENT, now(),
                               checkpoint_id=f"passed:{phase.name}", confirmed_by=run.identity,
                               evidence=record["hash"])
            self.passed[phase.name] = record
            state.status = "passed"
            if phase.effect is not None and produce:
                # the passing record is durable: a lost line reads as attempted, and
                # a later attempt asks the owner before acting again
                run.effect(phase, "confirmed", attempt, "gate", durable=False)
        return outcome, record


