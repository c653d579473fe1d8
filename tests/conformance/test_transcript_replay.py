"""Replaying chat transcripts: derive rules, voided_by selectors and the tau specs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.conformance import ReplayResult, load_spec, parse_spec, replay, replay_events
from roadcheck.conformance.spec import guarded_actions
from roadcheck.errors import SpecError
from roadcheck.events import Event
from roadcheck.selectors import compile_selector

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "transcripts"
AIRLINE = ROOT / "examples" / "tau" / "airline.yaml"
RETAIL = ROOT / "examples" / "tau" / "retail.yaml"
RUNS = ROOT / "tests" / "data" / "tau"
TAU_BENCH = RUNS / "taubench" / "gpt-4o-airline.json.gz"
TAU2 = RUNS / "tau2" / "gpt-4o-airline-50.json.gz"


def judge(name: str, spec: Path = AIRLINE) -> list[ReplayResult]:
    return list(replay(load_spec(spec), [str(DATA / name)]).results)


def single(name: str, spec: Path = AIRLINE) -> ReplayResult:
    (result,) = judge(name, spec)
    return result


class TestConfirmation:
    """The airline confirmation rule on hand-made transcripts."""

    def test_confirmation_then_call(self) -> None:
        """A yes right after the agent listed the action licenses the call."""
        r = single("confirmed_call.json")
        assert (r.verdict, r.headline) == ("PASS", "trajectory-conforms")
        assert r.stats is not None
        assert (r.stats.checkpoints, r.stats.derived_checkpoints) == (1, 1)

    def test_call_with_no_confirmation(self) -> None:
        """A guarded call with no yes before it blocks, naming its seq and message."""
        r = single("unconfirmed_call.json")
        assert (r.verdict, r.headline) == ("BLOCK", "checkpoint-skipped")
        assert r.task_success is True
        assert r.reasons[0].message == (
            "checkpoint 'user_confirmed' was absent when the guarded action "
            "'update_reservation_baggages' ran at seq 3 (message 3)")

    def test_confirmation_voided_by_a_later_turn(self) -> None:
        """A yes followed by another assistant turn no longer counts."""
        r = single("voided_confirmation.json")
        assert (r.verdict, r.headline) == ("BLOCK", "checkpoint-skipped")
        assert [f.message for f in r.reasons] == [
            "no valid checkpoint 'user_confirmed' before 'update_reservation_flights' at seq 6 "
            "(message 5): checkpoint 'user_confirmed' at seq 3 (message 2) was voided by "
            "seq 4 (message 3)"]

    def test_late_yes_answers_something_else(self) -> None:
        """A yes after the agent handed the turn back is not a late confirmation."""
        r = single("voided_confirmation.json")
        assert "checkpoint-after-action" not in [f.code for f in r.reasons]

    def test_text_and_call_in_one_message(self) -> None:
        """Text sent with a tool call keeps the turn, so it does not void the yes."""
        r = single("text_and_call.json")
        assert r.verdict == "PASS"

    def test_user_side_call_is_not_a_confirmation(self) -> None:
        """A tool call the user made is no yes; the agent's cancel still blocks."""
        blocked, confirmed = judge("user_side_call.json")
        assert blocked.verdict == "BLOCK"
        assert blocked.stats is not None
        assert "user" in blocked.stats.agents
        assert blocked.reasons[0].message == (
            "no valid checkpoint 'user_confirmed' before 'cancel_reservation' at seq 5 "
            "(message 3): no checkpoint since the last voiding event, seq 1 (message 0)")
        assert confirmed.verdict == "PASS"

    def test_content_parts(self) -> None:
        """A yes inside a content-part list counts (retail spec)."""
        assert single("content_parts.json", RETAIL).verdict == "PASS"

    def test_malformed_record_among_good_ones(self) -> None:
        """The malformed run is ERROR bad-input; the others are judged."""
        results = judge("malformed_record.json")
        assert [r.verdict for r in results] == ["PASS", "ERROR", "BLOCK"]
        assert results[1].reasons[0].code == "bad-input"
        assert results[1].reasons[0].message == (
            "record 1: message 1: 'tool_calls' must be a list, got dict")


def _events(*specs: tuple[str, dict[str, object]]) -> list[Event]:
    out = [Event.make(i, kind, **fields) for i, (kind, fields) in enumerate(specs, 1)]
    return [*out, Event.make(len(out) + 1, "final", task_success=True)]


SAYS = "message"
YES = (SAYS, {"role": "user", "text": "yes"})
ASKS = (SAYS, {"role": "assistant", "text": "ok?", "yields_turn": True})
KEEPS = (SAYS, {"role": "assistant", "text": "doing it", "yields_turn": False})


def _act(name: str = "update") -> tuple[str, dict[str, object]]:
    return ("action", {"action_type": name})


def _spec(**rule: object) -> object:
    base: dict[str, object] = {
        "checkpoint_id": "ok", "must_precede": ["update", "cancel"], "scope": "each",
        "voided_by": [{"event": "message", "role": "assistant", "yields_turn": True}]}
    base.update(rule)
    return parse_spec({
        "derive": [{"checkpoint_id": "ok",
                    "when": {"event": "message", "role": "user", "text": {"regex": "yes"}}}],
        "mandatory_checkpoints": [base]})


class TestDeriveAndVoid:
    """derive, voided_by, consume and list-valued must_precede, event by event."""

    def test_one_yes_covers_calls_until_the_next_turn(self) -> None:
        """Without consume, one yes licenses every guarded call before the agent yields."""
        r = replay_events(_spec(), _events(ASKS, YES, _act(), KEEPS, _act("cancel")))
        assert r.verdict == "PASS"

    def test_consume(self) -> None:
        """With consume, the second call needs its own yes."""
        r = replay_events(_spec(consume=True), _events(ASKS, YES, _act(), _act("cancel")))
        assert r.verdict == "BLOCK"
        assert r.reasons[0].message == ("no valid checkpoint 'ok' before 'cancel' at seq 4: "
                                        "checkpoint 'ok' at seq 2 was already used by seq 3")

    def test_void_then_new_yes(self) -> None:
        """A fresh yes after the voiding turn licenses the call again."""
        r = replay_events(_spec(), _events(YES, ASKS, YES, _act()))
        assert r.verdict == "PASS"

    def test_names_the_last_voiding_event(self) -> None:
        """The message names the voided yes and the last voiding turn before the call."""
        r = replay_events(_spec(), _events(YES, ASKS, (SAYS, {"role": "user", "text": "hm"}),
                                           ASKS, _act()))
        assert r.reasons[0].message == (
            "no valid checkpoint 'ok' before 'update' at seq 5: checkpoint 'ok' at seq 1 was "
            "voided by seq 2; no checkpoint since the last voiding event, seq 4")

    def test_checkpoint_after_action_without_a_turn_between(self) -> None:
        """With no voiding event between, a late yes is still checkpoint-after-action."""
        r = replay_events(_spec(), _events(_act(), YES))
        assert (r.verdict, r.headline) == ("BLOCK", "checkpoint-after-action")

    def test_unguarded_actions_pass(self) -> None:
        """Actions outside must_precede need nothing."""
        r = replay_events(_spec(), _events(ASKS, _act("lookup")))
        assert r.verdict == "PASS"

    def test_selector_values_are_typed(self) -> None:
        """A selector value 1 for a true/false field is refused, not a voider that never fires."""
        with pytest.raises(SpecError, match="yields_turn: must be true or false"):
            _spec(voided_by=[{"event": "message", "yields_turn": 1}])


class TestSpecs:
    """The two example specs encode each policy's rule."""

    @pytest.mark.parametrize(("path", "guarded"), [
        (AIRLINE, {"book_reservation", "cancel_reservation", "update_reservation_flights",
                   "update_reservation_baggages", "update_reservation_passengers",
                   "send_certificate"}),
        (RETAIL, {"cancel_pending_order", "modify_pending_order_address",
                  "modify_pending_order_items", "modify_pending_order_payment",
                  "modify_user_address", "return_delivered_order_items",
                  "exchange_delivered_order_items"}),
    ])
    def test_guarded_tools(self, path: Path, guarded: set[str]) -> None:
        """Each spec guards the policy's database updates, each call, voided by a new turn."""
        spec = load_spec(path)
        (rule,) = spec.mandatory_checkpoints
        assert set(guarded_actions(rule)) == guarded
        assert (rule.scope, rule.consume) == ("each", False)
        assert msgspec.to_builtins(rule.voided_by) == [
            {"event": "message", "role": "assistant", "yields_turn": True}]
        assert spec.derive[0].checkpoint_id == rule.checkpoint_id

    @pytest.mark.parametrize("text", ["Yes", "yes, please", "I confirm.", "Confirmed!",
                                      "go ahead", "Please proceed", "Proceeding is fine"])
    def test_confirmation_words(self, text: str) -> None:
        """The derive rule takes the ways users say yes."""
        selector = compile_selector(msgspec.to_builtins(load_spec(AIRLINE).derive[0].when))
        assert selector(Event.make(1, "message", "user", role="user", text=text))

    @pytest.mark.parametrize("text", ["no", "yesterday", "not yet", "what does it cost?"])
    def test_not_confirmations(self, text: str) -> None:
        """Words that only contain the letters do not count."""
        selector = compile_selector(msgspec.to_builtins(load_spec(AIRLINE).derive[0].when))
        assert not selector(Event.make(1, "message", "user", role="user", text=text))


def _split(results: list[ReplayResult]) -> dict[tuple[bool | None, str], int]:
    return dict(Counter((r.task_success, r.verdict) for r in results))


class TestRealRuns:
    """The airline spec over the real gpt-4o runs: blocks split by reward."""

    def test_tau_bench(self) -> None:
        """200 tau-bench runs: 28 BLOCK, 4 of them with reward 1."""
        results = list(replay(load_spec(AIRLINE), [str(TAU_BENCH)]).results)
        assert _split(results) == {(True, "PASS"): 80, (True, "BLOCK"): 4,
                                   (False, "PASS"): 92, (False, "BLOCK"): 24}

    def test_tau2(self) -> None:
        """50 tau2 runs: 3 BLOCK, none of them with reward 1."""
        results = list(replay(load_spec(AIRLINE), [str(TAU2)]).results)
        assert _split(results) == {(True, "PASS"): 23, (False, "PASS"): 24,
                                   (False, "BLOCK"): 3}

    def test_report_summary_by_task_success(self) -> None:
        """--summary-only --per-file --by task_success prints per-file counts and the
        split."""
        out = CliRunner().invoke(cli, ["replay", str(AIRLINE), str(TAU_BENCH), str(TAU2),
                                       "--summary-only", "--per-file", "--by", "task_success"])
        assert out.exit_code == 1
        lines = out.output.splitlines()
        assert f"input: {TAU_BENCH} (tau-bench, 200 trajectories)" in lines
        assert f"input: {TAU2} (tau2, 50 trajectories)" in lines
        assert f"file : {TAU_BENCH}: 172 PASS, 28 BLOCK, 0 ERROR" in lines
        assert "by task_success=false: 116 PASS, 27 BLOCK, 0 ERROR" in lines
        assert "by task_success=true: 103 PASS, 4 BLOCK, 0 ERROR" in lines
        # 20 runs hold no tool call at all: PASS, with a no-actions-recorded warning
        assert "summary: 219 PASS (20 with warnings), 31 BLOCK, 0 ERROR -> overall exit 1" \
            in lines
        assert not any(line.startswith("[") for line in lines)

    def test_report_names_messages(self) -> None:
        """Each BLOCK names the unconfirmed call and the voiding turn by message index."""
        out = CliRunner().invoke(cli, ["replay", str(AIRLINE), str(TAU_BENCH)])
        block = out.output.split(f"{TAU_BENCH}#task20/trial3\n", 1)[1].split("\n[", 1)[0]
        assert ("reason : checkpoint-skipped: no valid checkpoint 'user_confirmed' before "
                "'update_reservation_flights' at seq 19 (message 22): checkpoint "
                "'user_confirmed' at seq 14 (message 15) was voided by seq 17 (message 20)"
                ) in block
        assert "final : task_success=true (reward=1.0;" in block

    def test_json_by_reward(self) -> None:
        """--format json --by reward groups by the reader's reward."""
        import json

        out = CliRunner().invoke(cli, ["replay", str(AIRLINE), str(TAU2), "--format", "json",
                                       "--summary-only", "--by", "reward"])
        doc = json.loads(out.output)
        assert doc["results"] == []
        assert doc["by"]["groups"] == {"0.0": {"pass": 24, "block": 3, "error": 0},
                                       "1.0": {"pass": 23, "block": 0, "error": 0}}


class TestSummaryTotals:
    """``--summary-only`` ends with how often each code fired, not a line per file."""

    def test_the_totals_replace_the_file_lines(self) -> None:
        out = CliRunner().invoke(cli, ["replay", str(AIRLINE), str(TAU_BENCH), str(TAU2),
                                       "--summary-only"])
        assert out.exit_code == 1
        lines = out.output.splitlines()
        assert not [line for line in lines if line.startswith("file :")]
        assert "reasons: checkpoint-skipped 66" in lines
        assert "warnings: no-actions-recorded 20" in lines
        assert lines[-2] == ("summary: 219 PASS (20 with warnings), 31 BLOCK, 0 ERROR "
                             "-> overall exit 1")

    def test_per_file_needs_summary_only(self) -> None:
        out = CliRunner().invoke(cli, ["replay", str(AIRLINE), str(TAU2), "--per-file"])
        assert out.exit_code == 2
        assert "--per-file shapes the --summary-only report" in out.output
