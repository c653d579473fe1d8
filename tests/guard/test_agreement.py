"""Replay and the guard agree: the guard stops exactly the events replay reports.

Every trajectory in the repository (examples, fixtures, every framework and
coding-agent trace, both tau results files) is read, and judged under every spec
in the repository plus specs that use every rule option. Observing its events in
order and asking ``check`` before each action and handoff must deny or ask for
exactly the events replay reports, with the same reason codes, counted per event
(a ``final`` event is asked too: an obligation still open denies it).

Two differences are by nature and are mapped: before the call, a checkpoint that
is missing is ``checkpoint-skipped``; replay sees the whole run and calls it
``checkpoint-after-action`` when the checkpoint came later anyway. The guard
denies each handoff that completes a chain of 2 or more unverified hops
(``unverified-claim-propagated-N-hops``, N the hops so far); replay reports one
finding per value, its longest chain, so of the guard's denials for one value
the one that first reached the longest chain is compared.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from roadcheck.conformance import Spec, load_spec, parse_spec, replay_trajectory
from roadcheck.errors import RoadcheckError
from roadcheck.events import Trajectory, args_digest
from roadcheck.guard import Guard
from roadcheck.ingest import ReadFailure, load
from roadcheck.reasons import Reason

from ..conftest import DATA, EXAMPLES

_SUFFIXES = (".jsonl", ".json", ".gz", ".eval", ".ndjson", ".zst")
_NOT_TRAJECTORIES = ("fuzz_regressions/spec", "fuzz_regressions/checkpoint",
                     "fuzz_regressions/contract", "fuzz_regressions/workflow",
                     "fuzz_regressions/store", "accept", "resume", "workflows", "doc_pipeline")

#: Specs that use each rule option, over the tools the repository's traces call.
_SYNTHETIC = [
    {"mandatory_checkpoints": [{"checkpoint_id": "approve", "must_precede": tools,
                                "scope": scope, "consume": consume, **extra}]}
    for tools in (["send_report", "Bash", "Edit", "Write", "book_reservation",
                   "cancel_reservation", "shell", "exec_command", "apply_patch"],)
    for scope in ("first", "each") for consume in (False, True)
    for extra in ({}, {"confirmed_by": ["owner", "user"]},
                  {"voided_by": [{"event": "message", "role": "assistant"}]},
                  {"binds": {"tool": True, "args": True}})
] + [
    {"mandatory_checkpoints": [{"checkpoint_id": "push_ok", "scope": "each",
                                "must_precede": {"action_type": "Bash",
                                                 "command": {"words": ["git"]}}}],
     "derive": [{"checkpoint_id": "push_ok",
                 "when": {"event": "message", "role": "user", "text": {"regex": "(?i)yes"}}}]},
    # the guarded call itself voids the checkpoint a user message gave
    {"mandatory_checkpoints": [{"checkpoint_id": "said", "scope": "each",
                                "must_precede": ["Bash", "Edit", "book_reservation"],
                                "voided_by": [{"event": "action", "action_type": {
                                    "in": ["Bash", "book_reservation"]}}]}],
     "derive": [{"checkpoint_id": "said", "when": {"event": "message", "role": "user"}}]},
    # the guarded call itself is a checkpoint (derived from the action)
    {"mandatory_checkpoints": [{"checkpoint_id": "self", "scope": "each", "consume": True,
                                "must_precede": ["Bash", "Edit", "book_reservation",
                                                 "cancel_reservation"]}],
     "derive": [{"checkpoint_id": "self", "when": {"event": "action", "action_type": {
         "in": ["Bash", "book_reservation"]}}}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "AskUserQuestion", "must_precede": "Bash",
                                "scope": "each", "consume": True}],
     "handoff_contracts": [{"from_agent": "claude", "to_agent": "general-purpose",
                            "required_fields": ["prompt", "model"], "require_verified": True}]},
    # argument and outcome conditions in every old selector position
    {"mandatory_checkpoints": [{"checkpoint_id": "ok_edit", "scope": "each", "consume": True,
                                "must_precede": {"action_type": {"in": ["Edit", "Write"]},
                                                 "args": {"file_path": {"glob": "**/*.py"}}},
                                "voided_by": [{"event": "action", "ok": False}]}],
     "derive": [{"checkpoint_id": "ok_edit", "when": {"any": [
         {"action_type": "Read", "ok": True},
         {"event": "message", "role": "user", "text": {"regex": "(?i)type hints"}}]}}]},
    # the rules on what actions may do, over the tools the repository's traces call
    {"forbidden": [{"id": "no-bash-tail", "when": {"action_type": "Bash",
                                                   "command": {"words": ["tail"]}}},
                   {"id": "cancel", "when": {"action_type": "cancel_reservation"},
                    "unless": "yes"},
                   {"id": "big-flight", "when": {"action_type": "search_direct_flight",
                                                 "args": {"date": {"gt": 20240515}}}}],
     "derive": [{"checkpoint_id": "yes", "when": {"event": "message", "role": "user",
                                                  "text": {"regex": "(?i)\\byes\\b"}}}],
     "limits": [{"id": "lookups", "when": {"action_type": {"in": [
         "get_reservation_details", "WebSearch", "Read", "Bash", "exec_command"]}},
                 "at_most": 2},
                {"id": "fail-once", "when": {"ok": False}, "at_most": 0}]},
    {"obligations": [{"id": "test-after-edit", "after": {"action_type": {"in": [
        "Edit", "Write", "apply_patch", "book_reservation"]}},
                      "require": {"any": [{"command": {"regex": "pytest|test"}},
                                          {"action_type": "get_reservation_details"}]}},
                     {"id": "answer", "after": {"event": "message", "role": "user"},
                      "require": {"event": "message", "role": "assistant"}}],
     "flows": [{"id": "web-to-disk", "source": {"action_type": {"in": ["WebFetch",
                                                                       "WebSearch"]}},
                "sink": {"action_type": {"in": ["Write", "Edit", "Bash"]}},
                "unless": "AskUserQuestion"},
               {"id": "looked-up", "match": "value",
                "source": {"action_type": {"in": ["get_reservation_details",
                                                  "get_user_details", "Read"]}},
                "sink": {"not": {"action_type": {"in": ["get_reservation_details",
                                                        "get_user_details"]}}}}]},
    # severity warn on old and new rules: the guard allows what replay only warns about
    {"mandatory_checkpoints": [{"checkpoint_id": "approve", "must_precede": ["Bash", "Edit"],
                                "severity": "warn"}],
     "limits": [{"id": "w", "when": {"action_type": "Bash"}, "at_most": 0,
                 "severity": "warn"}]},
]


def _specs() -> list[tuple[str, Spec]]:
    out: list[tuple[str, Spec]] = []
    for path in sorted([*EXAMPLES.rglob("spec*.*"), *EXAMPLES.glob("tau/*.yaml"),
                        *EXAMPLES.glob("recipes/*.yaml"),
                        *(DATA / "frameworks").glob("spec*.yaml")]):
        try:
            out.append((str(path.relative_to(EXAMPLES.parent)), load_spec(path)))
        except RoadcheckError:
            continue
    out.extend((f"synthetic-{i}", parse_spec(doc)) for i, doc in enumerate(_SYNTHETIC))
    return out


@cache
def _trajectories() -> tuple[Trajectory, ...]:
    out: list[Trajectory] = []
    for root in (EXAMPLES, DATA):
        for path in sorted(root.rglob("*")):
            rel = str(path.relative_to(root))
            if not path.is_file() or not path.name.endswith(_SUFFIXES) \
                    or any(part in rel for part in _NOT_TRAJECTORIES) or "spec" in path.name:
                continue
            try:
                _, entries = load(str(path))
            except RoadcheckError:
                continue
            out.extend(e for e in entries if not isinstance(e, ReadFailure))
    return tuple(out)


def _replayed(spec: Spec, traj: Trajectory) -> Counter[tuple[int | None, str]] | None:
    result = replay_trajectory(spec, traj)
    if result.verdict == "ERROR":
        return None
    found: Counter[tuple[int | None, str]] = Counter()
    for r in result.reasons:
        if r.code == Reason.TRAJECTORY_CONFORMS:
            continue
        code = Reason.CHECKPOINT_SKIPPED if r.code == Reason.CHECKPOINT_AFTER_ACTION else r.code
        found[(r.seq, str(code))] += 1
    return found


def _guarded(spec: Spec, traj: Trajectory) -> Counter[tuple[int | None, str]]:
    guard = Guard(spec)
    found: Counter[tuple[int | None, str]] = Counter()
    # the value a chain carries -> (hops, seq, code) of the denial that first reached the most
    chains: dict[str, tuple[int, int | None, str]] = {}
    for event in traj.events:
        if event.kind in ("action", "handoff", "final"):
            decision = guard.check(event)
            assert decision.allowed == (not decision.reasons)
            for r in decision.reasons:
                if r.code.startswith("unverified-claim-prop"):
                    value = r.message.split(" entered unverified at ")[0]
                    hops = int(r.code.split("-")[-2])
                    if value not in chains or chains[value][0] < hops:
                        chains[value] = (hops, r.seq, str(r.code))
                else:
                    found[(r.seq, str(r.code))] += 1
        guard.observe(event)
    found.update((seq, code) for _, seq, code in chains.values())
    return found


class TestAgreement:
    def test_the_repository_holds_what_the_test_claims(self) -> None:
        """The corpus is every kind of trace: tau results, framework and coding traces."""
        sources = Counter(t.source for t in _trajectories())
        assert sources["tau2"] >= 50 and sources["tau-bench"] >= 1
        assert sources["claude-code"] >= 5 and sources["codex"] >= 3
        assert len(sources) >= 10

    @pytest.mark.parametrize(("name", "spec"), _specs(), ids=lambda v: v if isinstance(v, str)
                             else "")
    def test_guard_stops_exactly_what_replay_reports(self, name: str, spec: Spec) -> None:
        """For every trajectory, the guard's denials equal replay's findings, event by event."""
        judged = blocked = 0
        for traj in _trajectories():
            want = _replayed(spec, traj)
            if want is None:
                continue
            judged += 1
            blocked += bool(want)
            assert _guarded(spec, traj) == want, f"{name} on {traj.id}"
        assert judged >= 100

    def test_some_pairs_block(self) -> None:
        """The agreement is not vacuous: many trajectories are blocked under some spec."""
        blocked = sum(bool(_replayed(spec, t)) for _, spec in _specs() for t in _trajectories()
                      if _replayed(spec, t) is not None)
        assert blocked >= 200


class TestBoundApprovals:
    def test_bound_approval_licenses_only_its_call_in_replay_and_guard(self) -> None:
        """A yes for send_report(to=cfo) does not license send_report(to=everyone)."""
        spec = parse_spec({"mandatory_checkpoints": [
            {"checkpoint_id": "ok", "must_precede": "send_report", "scope": "each",
             "consume": True, "binds": {"tool": True, "args": True}}]})
        cfo = {"to": "cfo"}
        events = [
            {"seq": 1, "event": "checkpoint", "checkpoint_id": "ok", "confirmed_by": "owner",
             "tool": "send_report", "args_sha256": args_digest(cfo)},
            {"seq": 2, "event": "action", "action_type": "send_report", "args": {"to": "all"}},
            {"seq": 3, "event": "action", "action_type": "send_report", "args": cfo},
            {"seq": 4, "event": "action", "action_type": "send_report", "args": cfo},
            {"seq": 5, "event": "final", "task_success": True},
        ]
        traj = Trajectory(events)
        assert _replayed(spec, traj) == Counter({(2, "checkpoint-skipped"): 1,
                                                 (4, "checkpoint-skipped"): 1})
        assert _guarded(spec, traj) == _replayed(spec, traj)
