"""What a trajectory lacks is reported: no tool call at all, a contracted handoff never made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from roadcheck.conformance import parse_spec, replay, replay_events

from ..trajectories import events as _events

ROOT = Path(__file__).resolve().parent.parent.parent
SPEC = parse_spec(json.loads((ROOT / "examples" / "spec.json").read_text()), "spec.json")
TAU = ROOT / "examples" / "tau" / "airline.yaml"


def _warnings(result: Any) -> list[str]:
    return [w.code for w in result.warnings]


def _hand(src: str, dst: str, **payload: Any) -> dict[str, Any]:
    return {"event": "handoff", "agent": src, "from_agent": src, "to_agent": dst,
            "payload": payload}


V = {"value": 1, "verified": True}


class TestNoActionsRecorded:
    """A trajectory with no tool call while the spec guards actions is never a silent PASS."""

    def test_native(self) -> None:
        """Only messages and a final: PASS with a warning naming the format."""
        result = replay_events(SPEC, _events(
            {"event": "message", "role": "user", "text": "send the report"}), "t", "t")
        assert result.verdict == "PASS"
        assert _warnings(result) == ["no-actions-recorded", "contracted-handoff-absent",
                                     "contracted-handoff-absent"]
        message = result.warnings[0].message
        assert "native" in message and "send_report" in message

    def test_transcript_names_its_format(self, tmp_path: Path) -> None:
        """A chat log whose tool calls the reader could not see says which format it was read as."""
        path = tmp_path / "chat.json"
        path.write_text(json.dumps({"messages": [
            {"role": "user", "content": "Cancel it."},
            {"role": "assistant", "content": "Done, cancelled."}]}), encoding="utf-8")
        [result] = replay(TAU, [path]).results
        assert result.verdict == "PASS"
        assert _warnings(result) == ["no-actions-recorded"]
        assert "openai-chat" in result.warnings[0].message

    def test_spec_without_guards_says_nothing(self) -> None:
        """With no mandatory checkpoint there is nothing a missing call could hide."""
        spec = parse_spec({"handoff_contracts": [
            {"from_agent": "a", "to_agent": "b", "required_fields": ["x"]}]})
        result = replay_events(spec, _events({"event": "message", "role": "user", "text": "x"},
                                             _hand("a", "b", x=1)))
        assert result.warnings == ()

    def test_any_action_is_enough(self) -> None:
        """One tool call, guarded or not, and the warning is gone."""
        spec = parse_spec({"mandatory_checkpoints": [
            {"checkpoint_id": "ok", "must_precede": "send"}]})
        result = replay_events(spec, _events({"event": "action", "action_type": "read"}))
        assert "no-actions-recorded" not in _warnings(result)


class TestContractedHandoffAbsent:
    """A contracted handoff that never happened is reported, before the guarded action."""

    def test_before_the_guarded_action(self) -> None:
        """The reporter sends without the aggregator ever handing over: a warning at the send."""
        result = replay_events(SPEC, _events(
            _hand("scanner", "aggregator", row_count=V, source="db"),
            {"event": "checkpoint", "agent": "reporter", "checkpoint_id": "confirm_with_user"},
            {"event": "action", "agent": "reporter", "action_type": "send_report"}), "t", "t")
        assert result.verdict == "PASS"
        assert _warnings(result) == ["contracted-handoff-absent"]
        message = result.warnings[0].message
        assert "aggregator->reporter" in message and "send_report" in message
        assert "seq 3" in message

    def test_handoff_after_the_action_is_still_absent_before_it(self) -> None:
        """A handoff that arrives after the guarded action did not inform it."""
        result = replay_events(SPEC, _events(
            _hand("scanner", "aggregator", row_count=V, source="db"),
            {"event": "checkpoint", "agent": "reporter", "checkpoint_id": "confirm_with_user"},
            {"event": "action", "agent": "reporter", "action_type": "send_report"},
            _hand("aggregator", "reporter", row_count=V, summary=V)))
        assert _warnings(result) == ["contracted-handoff-absent"]

    def test_never_at_all_is_reported_at_the_end(self) -> None:
        """A contract whose handoff never happened in the whole run is reported once."""
        result = replay_events(SPEC, _events(
            {"event": "action", "agent": "aggregator", "action_type": "summarize_rows"},
            _hand("aggregator", "reporter", row_count=V, summary=V)))
        assert _warnings(result) == ["contracted-handoff-absent"]
        assert "scanner->aggregator" in result.warnings[0].message
        assert "never happened" in result.warnings[0].message

    def test_every_contracted_handoff_made(self) -> None:
        """Both handoffs before the send: no warning."""
        result = replay_events(SPEC, _events(
            _hand("scanner", "aggregator", row_count=V, source="db"),
            _hand("aggregator", "reporter", row_count=V, summary=V),
            {"event": "checkpoint", "agent": "reporter", "checkpoint_id": "confirm_with_user"},
            {"event": "action", "agent": "reporter", "action_type": "send_report"}))
        assert result.warnings == ()
        assert result.verdict == "PASS"
