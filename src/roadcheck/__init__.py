"""roadcheck: gate AI-agent work on evidence instead of the agent's word.

Exit codes everywhere: 0 pass, 1 the evidence says no, 2 could not judge
(never a pass), 3 paused. The public API (``__all__``), by capability:

replay -- did the recorded run take the mandatory road?
    ``replay`` (spec, trajectories) -> ``ReplayRun`` of ``ReplayResult``;
    ``load_spec``, ``parse_spec`` -> ``Spec``;
    ``read_trajectory``, ``load_trajectories`` -> ``Trajectory`` of ``Event``.
    In memory: ``replay({"mandatory_checkpoints": [...]}, [{"seq": 1, ...}, ...])``.
accept -- is a claimed success real?
    ``verify`` (result, contract, trace, probe) -> ``GateResult``;
    ``load_contract`` -> ``Contract``.
run -- advance a workflow only on proven work:
    ``Workflow`` (``Workflow.load(path).run(...)``) -> ``RunResult``.
revalidate -- may a resumed task touch the world again?
    ``revalidate`` (checkpoint) -> ``Revalidation``.
guard -- may this call run now? The replay spec, enforced live:
    ``Guard`` (spec) with ``observe(event)`` and ``check(event)`` -> ``Decision``;
    ``GuardStore`` (dir, spec) keeps sessions on disk; ``GuardDenied`` is raised
    by ``@guard.tool(name)``.
errors -- ``RoadcheckError`` (exit 2) and its subclasses ``InputError``,
    ``SpecError``, ``TraceError``, ``StoreError``; judged failures are data.

``__version__`` is the package version. Heavy modules load on first use, so
``import roadcheck`` stays cheap; ``dir(roadcheck)`` and ``help(roadcheck)`` list them all.

>>> import roadcheck
>>> spec = {"mandatory_checkpoints": [{"checkpoint_id": "confirm", "must_precede": "refund"}]}
>>> run = roadcheck.replay(spec, [
...     {"seq": 1, "event": "action", "action_type": "refund", "irreversible": True},
...     {"seq": 2, "event": "final", "task_success": True}])
>>> run.exit, run.results[0].verdict, str(run.results[0].headline)
(1, 'BLOCK', 'checkpoint-skipped')
"""

from __future__ import annotations

from roadcheck._lazy import lazy_dir, lazy_getattr
from roadcheck._version import __version__

#: typing's own flag, without importing typing: a hook command that only asks the
#: guard daemon (:mod:`roadcheck._hook_client`) imports nothing it does not use.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from roadcheck.acceptance import Contract, GateResult, load_contract, verify
    from roadcheck.conformance import (
        ReplayResult,
        ReplayRun,
        Spec,
        load_spec,
        replay,
    )
    from roadcheck.conformance import parse_spec as parse_spec
    from roadcheck.errors import InputError, RoadcheckError, SpecError, StoreError, TraceError
    from roadcheck.events import Event, Trajectory
    from roadcheck.guard import Decision, Guard, GuardDenied, GuardStore
    from roadcheck.harness import RunResult, Workflow
    from roadcheck.revalidation import Revalidation, revalidate

__all__ = [
    "Contract",
    "Decision",
    "Event",
    "GateResult",
    "Guard",
    "GuardDenied",
    "GuardStore",
    "InputError",
    "ReplayResult",
    "ReplayRun",
    "Revalidation",
    "RoadcheckError",
    "RunResult",
    "Spec",
    "SpecError",
    "StoreError",
    "TraceError",
    "Trajectory",
    "Workflow",
    "__version__",
    "load_contract",
    "load_spec",
    "load_trajectories",
    "parse_spec",
    "read_trajectory",
    "replay",
    "revalidate",
    "verify",
]

_LAZY = {
    "InputError": "roadcheck.errors",
    "RoadcheckError": "roadcheck.errors",
    "SpecError": "roadcheck.errors",
    "StoreError": "roadcheck.errors",
    "TraceError": "roadcheck.errors",
    "Event": "roadcheck.events",
    "Trajectory": "roadcheck.events",
    "Contract": "roadcheck.acceptance",
    "GateResult": "roadcheck.acceptance",
    "load_contract": "roadcheck.acceptance",
    "verify": "roadcheck.acceptance",
    "ReplayResult": "roadcheck.conformance",
    "ReplayRun": "roadcheck.conformance",
    "Spec": "roadcheck.conformance",
    "load_spec": "roadcheck.conformance",
    "parse_spec": "roadcheck.conformance",
    "replay": "roadcheck.conformance",
    "Decision": "roadcheck.guard",
    "Guard": "roadcheck.guard",
    "GuardDenied": "roadcheck.guard",
    "GuardStore": "roadcheck.guard",
    "RunResult": "roadcheck.harness",
    "Workflow": "roadcheck.harness",
    "Revalidation": "roadcheck.revalidation",
    "revalidate": "roadcheck.revalidation",
}


def read_trajectory(path: str, input_format: str | None = None) -> Trajectory:
    """Read a one-run trajectory file; a malformed file raises :class:`TraceError`.

    For files that hold many runs use :func:`load_trajectories`.
    """
    from roadcheck.errors import TraceError

    found = load_trajectories(path, input_format)
    if len(found) != 1:
        raise TraceError(f"holds {len(found)} trajectories; use load_trajectories()", path=path)
    return found[0]


def load_trajectories(path: str, input_format: str | None = None) -> list[Trajectory]:
    """Read every trajectory of a file; the first malformed one raises :class:`TraceError`."""
    from roadcheck.ingest import ReadFailure, load

    out = []
    for entry in load(path, input_format)[1]:
        if isinstance(entry, ReadFailure):
            raise entry.error
        out.append(entry)
    return out


__getattr__ = lazy_getattr("roadcheck", globals(), _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)
