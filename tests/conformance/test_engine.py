"""The replay engine: every verdict state, the spec extensions, and what it never reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roadcheck.conformance import parse_spec, replay, replay_events

from ..conftest import EXAMPLES
from ..trajectories import events as _events

SPEC = parse_spec(json.loads((EXAMPLES / "spec.json").read_text()), "examples/spec.json")

FIXTURES = {
    "fixture_conforms.jsonl": ("PASS", ["trajectory-conforms"], []),
    "fixture_skipped.jsonl": ("BLOCK", ["checkpoint-skipped"], []),
    "fixture_late_checkpoint.jsonl": ("BLOCK", ["checkpoint-after-action"], []),
    "fixture_broken_contract.jsonl": (
        "BLOCK", ["handoff-contract-violation", "unverified-claim-consumed-as-ground-truth"], []),
    "fixture_propagated.jsonl": ("BLOCK", ["unverified-claim-propagated-2-hops"], []),
    "fixture_verified.jsonl": ("PASS", ["trajectory-conforms"], []),
    "fixture_uncontracted.jsonl": ("PASS", ["trajectory-conforms"], ["uncontracted-handoff"]),
    "fixture_bad_input.jsonl": ("ERROR", ["bad-input"], []),
}


def _act(name: str, **kw: Any) -> dict[str, Any]:
    return {"event": "action", "action_type": name, **kw}


def _cp(cid: str = "ok", **kw: Any) -> dict[str, Any]:
    return {"event": "checkpoint", "checkpoint_id": cid, **kw}


def _hand(src: str, dst: str, **payload: Any) -> dict[str, Any]:
    return {"event": "handoff", "agent": src, "from_agent": src, "to_agent": dst,
            "payload": payload}


def _spec(**rule: Any) -> Any:
    return parse_spec({"mandatory_checkpoints": [{"checkpoint_id": "ok", "must_precede": "send",
                                                  **rule}]})


def _codes(result: Any) -> list[str]:
    return [r.code for r in result.reasons]


class TestFixtures:
    @pytest.mark.parametrize("name", sorted(FIXTURES))
    def test_each_state_gets_its_verdict_and_every_reason(self, name: str) -> None:
        """Each fixture gets its verdict, with every reason collected in order."""
        verdict, codes, warnings = FIXTURES[name]
        (result,) = replay(SPEC, [EXAMPLES / name]).results
        assert result.verdict == verdict
        assert _codes(result) == codes
        assert [w.code for w in result.warnings] == warnings
        assert result.exit == {"PASS": 0, "BLOCK": 1, "ERROR": 2}[verdict]

    def test_one_deleted_line_flips_the_verdict(self, tmp_path: Path) -> None:
        """Deleting the checkpoint line from the conforming file turns PASS into BLOCK."""
        lines = (EXAMPLES / "fixture_conforms.jsonl").read_text().splitlines(keepends=True)
        kept = [ln for ln in lines if '"event": "checkpoint"' not in ln]
        assert len(kept) == len(lines) - 1
        flipped = tmp_path / "flipped.jsonl"
        flipped.write_text("".join(kept))
        before = replay(SPEC, [EXAMPLES / "fixture_conforms.jsonl"])
        after = replay(SPEC, [flipped])
        assert (before.exit, before.results[0].headline) == (0, "trajectory-conforms")
        assert (after.exit, after.results[0].headline) == (1, "checkpoint-skipped")
        assert "seq 6" in after.results[0].reasons[0].message

    @pytest.mark.parametrize("name", sorted(n for n in FIXTURES if "bad_input" not in n))
    def test_task_success_never_changes_a_verdict(self, tmp_path: Path, name: str) -> None:
        """Flipping task_success in the final line changes nothing but the printed claim."""
        lines = (EXAMPLES / name).read_text().splitlines()
        final = json.loads(lines[-1])
        final["task_success"] = not final["task_success"]
        flipped = tmp_path / name
        flipped.write_text("\n".join([*lines[:-1], json.dumps(final)]) + "\n")
        a = replay(SPEC, [EXAMPLES / name]).results[0]
        b = replay(SPEC, [flipped]).results[0]
        assert (a.verdict, a.reasons, a.warnings, a.notes) == (b.verdict, b.reasons, b.warnings,
                                                               b.notes)
        assert a.task_success is not b.task_success

    def test_worst_verdict_wins(self) -> None:
        """Across files BLOCK outranks ERROR outranks PASS."""
        def run_exit(*names: str) -> int:
            return replay(SPEC, [EXAMPLES / n for n in names]).exit
        assert run_exit("fixture_conforms.jsonl") == 0
        assert run_exit("fixture_conforms.jsonl", "fixture_bad_input.jsonl") == 2
        assert run_exit("fixture_bad_input.jsonl", "fixture_skipped.jsonl") == 1
        assert replay(SPEC, [EXAMPLES / n for n in FIXTURES]).exit == 1


class TestCheckpointRules:
    def test_guarded_action_that_never_runs_is_a_note(self) -> None:
        """No guarded action: PASS with a note, not a failure."""
        result = replay_events(_spec(), _events(_act("look")))
        assert result.verdict == "PASS"
        assert "never ran" in result.notes[0].message

    def test_scope_first_checks_only_the_first_occurrence(self) -> None:
        """By default one checkpoint before the first send satisfies every later send."""
        result = replay_events(_spec(), _events(_cp(), _act("send"), _act("send"), _act("send")))
        assert result.verdict == "PASS"

    def test_scope_first_ignores_an_unguarded_later_send(self) -> None:
        """Scope first judges the first send only, even if it was the one confirmed."""
        result = replay_events(_spec(), _events(_act("send"), _cp(), _act("send")))
        assert _codes(result) == ["checkpoint-after-action"]

    def test_scope_each_without_consume_one_checkpoint_covers_all(self) -> None:
        """scope each alone: a checkpoint stays valid until voided."""
        result = replay_events(_spec(scope="each"), _events(_cp(), _act("send"), _act("send")))
        assert result.verdict == "PASS"

    def test_scope_each_consume_reports_every_failing_occurrence(self) -> None:
        """With consume, each send needs its own checkpoint; each failure names its seq."""
        result = replay_events(_spec(scope="each", consume=True),
                               _events(_cp(), _act("send"), _act("send"), _act("send")))
        assert _codes(result) == ["checkpoint-skipped", "checkpoint-skipped"]
        assert [r.seq for r in result.reasons] == [3, 4]
        assert "already used by seq 2" in result.reasons[0].message

    def test_scope_each_consume_with_fresh_checkpoints_passes(self) -> None:
        """A fresh checkpoint before every send satisfies scope each with consume."""
        result = replay_events(_spec(scope="each", consume=True),
                               _events(_cp(), _act("send"), _cp(), _act("send")))
        assert result.verdict == "PASS"

    def test_scope_each_late_checkpoint_is_after_action(self) -> None:
        """An occurrence confirmed only afterwards is checkpoint-after-action, with both seqs."""
        result = replay_events(_spec(scope="each", consume=True),
                               _events(_cp(), _act("send"), _act("send"), _cp()))
        assert _codes(result) == ["checkpoint-after-action"]
        assert "seq 4" in result.reasons[0].message and "seq 3" in result.reasons[0].message

    def test_confirmed_by_rejects_other_confirmers(self) -> None:
        """A checkpoint confirmed by someone not listed does not count, and the reason says so."""
        spec = _spec(confirmed_by=["owner"])
        bad = replay_events(spec, _events(_cp(confirmed_by="bot"), _act("send")))
        good = replay_events(spec, _events(_cp(confirmed_by="owner"), _act("send")))
        absent = replay_events(spec, _events(_cp(), _act("send")))
        assert _codes(bad) == ["checkpoint-skipped"]
        assert "confirmed by \"bot\"" in bad.reasons[0].message
        assert good.verdict == "PASS"
        assert _codes(absent) == ["checkpoint-skipped"]

    def test_voided_by_cancels_an_earlier_checkpoint(self) -> None:
        """A voiding event between checkpoint and action leaves the action unconfirmed."""
        spec = _spec(scope="each", voided_by=[{"event": "message", "role": "assistant",
                                                "yields_turn": True}])
        voiding = {"event": "message", "role": "assistant", "text": "anything else?",
                   "yields_turn": True}
        result = replay_events(spec, _events(_cp(), voiding, _act("send")))
        assert _codes(result) == ["checkpoint-skipped"]
        assert "voided by seq 2" in result.reasons[0].message
        kept = replay_events(spec, _events(voiding, _cp(), _act("send")))
        assert kept.verdict == "PASS"

    def test_list_must_precede_guards_every_listed_action(self) -> None:
        """must_precede may list several action types, each guarded by the rule."""
        spec = _spec(must_precede=["send", "delete"], scope="each", consume=True)
        result = replay_events(spec, _events(_cp(), _act("delete"), _act("send")))
        assert _codes(result) == ["checkpoint-skipped"]
        assert "'send'" in result.reasons[0].message

    def test_derive_turns_matching_events_into_checkpoints(self) -> None:
        """A derive rule yields a checkpoint at the matching event, confirmed by its role."""
        spec = parse_spec({
            "mandatory_checkpoints": [{"checkpoint_id": "ok", "must_precede": "send",
                                       "confirmed_by": ["user"]}],
            "derive": [{"checkpoint_id": "ok", "when": {"event": "message", "role": "user",
                                                        "text": {"regex": "(?i)\\byes\\b"}}}]})
        yes = {"event": "message", "role": "user", "text": "Yes, go on"}
        no = {"event": "message", "role": "user", "text": "yesterday maybe"}
        passed = replay_events(spec, _events(yes, _act("send")))
        blocked = replay_events(spec, _events(no, _act("send")))
        assert passed.verdict == "PASS" and passed.stats is not None
        assert passed.stats.derived_checkpoints == 1
        assert _codes(blocked) == ["checkpoint-skipped"]

    def test_two_rules_on_one_action_are_both_judged(self) -> None:
        """Every rule guarding an action is checked, and every failure kept."""
        spec = parse_spec({"mandatory_checkpoints": [
            {"checkpoint_id": "a", "must_precede": "send"},
            {"checkpoint_id": "b", "must_precede": "send"}]})
        result = replay_events(spec, _events(_cp("a"), _act("send")))
        assert _codes(result) == ["checkpoint-skipped"]
        assert "'b'" in result.reasons[0].message


class TestHandoffs:
    CONTRACTS = parse_spec({"handoff_contracts": [
        {"from_agent": "a", "to_agent": "b", "required_fields": ["n"]},
        {"from_agent": "b", "to_agent": "c", "required_fields": ["n"], "require_verified": True},
        {"from_agent": "c", "to_agent": "d", "required_fields": []}]})

    def test_missing_field_is_a_violation(self) -> None:
        """A contracted handoff without a required field blocks and names it."""
        result = replay_events(self.CONTRACTS, _events(_hand("a", "b", m=1)))
        assert _codes(result) == ["handoff-contract-violation"]
        assert "['n']" in result.reasons[0].message

    def test_bare_value_is_unverified_where_verification_is_required(self) -> None:
        """Silence about verification is not verification."""
        for raw in (5, {"value": 5, "verified": False}, {"value": 5}):
            result = replay_events(self.CONTRACTS, _events(_hand("b", "c", n=raw)))
            assert _codes(result) == ["unverified-claim-consumed-as-ground-truth"], raw
        ok = replay_events(self.CONTRACTS, _events(_hand("b", "c", n={"value": 5,
                                                                      "verified": True})))
        assert ok.verdict == "PASS"

    def test_propagation_counts_the_longest_connected_chain(self) -> None:
        """A value unverified across three connected handoffs is reported once, as 3 hops."""
        result = replay_events(self.CONTRACTS, _events(
            _hand("a", "b", n=1, x=7), _hand("b", "c", n={"value": 1, "verified": True}, x=7),
            _hand("c", "d", x=7)))
        assert _codes(result) == ["unverified-claim-propagated-3-hops"]
        assert "'x'=7" in result.reasons[0].message

    def test_verification_at_one_hop_breaks_the_chain(self) -> None:
        """A hop that verifies the value stops the chain from counting through it."""
        result = replay_events(self.CONTRACTS, _events(
            _hand("a", "b", n=1, x=7), _hand("b", "c", n={"value": 1, "verified": True},
                                             x={"value": 7, "verified": True}),
            _hand("c", "d", x=7)))
        assert result.verdict == "PASS"

    def test_a_changed_value_or_disconnected_hop_is_not_a_chain(self) -> None:
        """Only the same field with the same value along connected borders counts."""
        changed = replay_events(self.CONTRACTS, _events(
            _hand("a", "b", n=1, x=7), _hand("b", "c", n={"value": 1, "verified": True}, x=8)))
        disconnected = replay_events(self.CONTRACTS, _events(
            _hand("a", "b", n=1, x=7), _hand("c", "d", x=7)))
        typed = replay_events(self.CONTRACTS, _events(
            _hand("a", "b", n=1, x=7), _hand("b", "c", n={"value": 1, "verified": True},
                                             x="7")))
        assert changed.verdict == disconnected.verdict == typed.verdict == "PASS"

    def test_order_matters_for_a_chain(self) -> None:
        """A handoff onward before the value arrived is not part of its chain."""
        result = replay_events(self.CONTRACTS, _events(
            _hand("c", "d", x=7), _hand("b", "c", n={"value": 1, "verified": True}, x=7)))
        assert result.verdict == "PASS"

    def test_uncontracted_handoff_warns_without_blocking(self) -> None:
        """A border no contract covers is a warning on a PASS."""
        result = replay_events(self.CONTRACTS, _events(_hand("x", "y", q=1)))
        assert result.verdict == "PASS"
        # then one warning per contracted border this run never crossed
        assert [w.code for w in result.warnings] == ["uncontracted-handoff"] + [
            "contracted-handoff-absent"] * 3


class TestDeterminism:
    def test_replay_twice_gives_equal_results(self) -> None:
        """The same inputs give equal results, reason for reason."""
        paths = [EXAMPLES / n for n in sorted(FIXTURES)]
        assert replay(SPEC, paths).results == replay(SPEC, paths).results


class TestNothingJudged:
    @pytest.mark.parametrize("content", ['{"simulations": []}', "[]", '{"messages": []}'])
    def test_a_file_with_no_trajectory_is_error(self, tmp_path: Path, content: str) -> None:
        """A results file holding no run is ERROR bad-input, never an empty pass."""
        path = tmp_path / "empty.json"
        path.write_text(content)
        run = replay(SPEC, [path])
        assert [r.verdict for r in run.results] == ["ERROR"]
        assert run.exit == 2

    def test_a_run_over_nothing_exits_2(self) -> None:
        """Replaying no trajectory at all judged nothing: exit 2, not 0."""
        assert replay(SPEC, []).exit == 2
