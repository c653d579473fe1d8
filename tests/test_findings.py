"""One finding shape: its JSON, and the position each command's findings carry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.conformance import Finding as ReplayFinding
from roadcheck.conformance import load_spec, parse_spec, replay, replay_events
from roadcheck.findings import NOWHERE, Finding, Location
from roadcheck.guard import Guard
from roadcheck.revalidation.result import finding

from .conftest import EXAMPLES, ROOT
from .trajectories import events as _events

TRANSCRIPTS = ROOT / "tests" / "data" / "transcripts"
AIRLINE = EXAMPLES / "tau" / "airline.yaml"
YIELDS = {"event": "message", "role": "assistant", "text": "anything else?", "yields_turn": True}


def _spec(**rule: Any) -> Any:
    return parse_spec({"mandatory_checkpoints": [{"checkpoint_id": "ok", "must_precede": "send",
                                                  **rule}]})


def _cp() -> dict[str, Any]:
    return {"event": "checkpoint", "checkpoint_id": "ok"}


def _send() -> dict[str, Any]:
    return {"event": "action", "action_type": "send"}


class TestShape:
    def test_one_class(self) -> None:
        """Replay's Finding is the shared one."""
        assert ReplayFinding is Finding

    def test_to_dict_adds_only_known_fields_after_the_message(self) -> None:
        """code and message come first; a location field appears only when known."""
        f = Finding("checkpoint-skipped", "m", Location(seq=3, checkpoint_id="ok"))
        assert list(f.to_dict().items()) == [("code", "checkpoint-skipped"), ("message", "m"),
                                             ("seq", 3), ("checkpoint_id", "ok")]
        assert Finding("note", "n").to_dict() == {"code": "note", "message": "n"}

    def test_a_bare_seq_is_a_location(self) -> None:
        """Finding(code, message, seq), the form replay took before, still works."""
        f = Finding("checkpoint-skipped", "m", 4)
        assert f.location == Location(seq=4) and f.seq == 4
        assert Finding("x", "y", None).location is NOWHERE

    def test_revalidation_keeps_question_first(self) -> None:
        """A revalidation finding prints question, code, message, as it always has."""
        f = finding("effects", "effect-unknown", "upload: unknown", "reconcile")
        assert list(f.to_dict()) == ["question", "code", "message"]
        assert (f.question, f.severity) == ("effects", "reconcile")


class TestReplayPositions:
    def test_skip_names_checkpoint_action_and_the_voiding_event(self) -> None:
        """A checkpoint voided before its action: the skip names the void's seq."""
        spec = _spec(scope="each", voided_by=[{"event": "message", "role": "assistant",
                                                "yields_turn": True}])
        (reason,) = replay_events(spec, _events(_cp(), YIELDS, _send())).reasons
        assert reason.to_dict() == {"code": "checkpoint-skipped", "message": reason.message,
                                    "seq": 3, "checkpoint_id": "ok", "action_type": "send",
                                    "voided_by_seq": 2}

    def test_the_void_that_took_the_licence_is_named(self) -> None:
        """Of two voids, the one that voided the checkpoint is voided_by_seq."""
        spec = _spec(scope="each", voided_by=[{"event": "message", "role": "assistant",
                                                "yields_turn": True}])
        (reason,) = replay_events(spec, _events(_cp(), YIELDS, YIELDS, _send())).reasons
        assert "voided by seq 2" in reason.message
        assert reason.location.voided_by_seq == 2

    def test_a_plain_skip_names_no_void(self) -> None:
        """An absent checkpoint has no voiding event."""
        (reason,) = replay_events(_spec(), _events(_send())).reasons
        assert reason.location.voided_by_seq is None
        assert reason.location.checkpoint_id == "ok"

    def test_wrong_confirmer_after_a_void_names_no_void(self) -> None:
        """A later checkpoint refused for its confirmer is the reason, not the earlier void."""
        spec = _spec(scope="each", confirmed_by=["owner"],
                     voided_by=[{"event": "message", "role": "assistant", "yields_turn": True}])
        cp = {**_cp(), "confirmed_by": "owner"}
        bad = {**_cp(), "confirmed_by": "bot"}
        (reason,) = replay_events(spec, _events(cp, YIELDS, bad, _send())).reasons
        assert "confirmed by" in reason.message
        assert reason.location.voided_by_seq is None

    def test_native_file_findings_carry_their_line(self) -> None:
        """A native file's reasons name the file line of their event."""
        spec = load_spec(EXAMPLES / "spec.json")
        (late,) = replay(spec, [EXAMPLES / "fixture_late_checkpoint.jsonl"]).results
        lines = (EXAMPLES / "fixture_late_checkpoint.jsonl").read_text().splitlines()
        loc = late.reasons[0].location
        assert loc.line is not None and json.loads(lines[loc.line - 1])["seq"] == loc.seq
        assert (loc.checkpoint_id, loc.action_type) == ("confirm_with_user", "send_report")

    def test_handoff_findings_carry_the_agents(self) -> None:
        """A contract violation names both agents of its handoff."""
        spec = load_spec(EXAMPLES / "spec.json")
        (broken,) = replay(spec, [EXAMPLES / "fixture_broken_contract.jsonl"]).results
        for reason in broken.reasons:
            assert (reason.location.from_agent, reason.location.to_agent) == (
                "aggregator", "reporter")

    def test_bad_input_carries_the_bad_line(self) -> None:
        """A native file that does not read puts its bad line in the location."""
        spec = load_spec(EXAMPLES / "spec.json")
        (bad,) = replay(spec, [EXAMPLES / "fixture_bad_input.jsonl"]).results
        assert bad.verdict == "ERROR"
        assert bad.reasons[0].location.line is not None
        assert bad.reasons[0].message.startswith(f"line {bad.reasons[0].location.line}: ")

    def test_transcripts_name_the_message_not_a_line(self) -> None:
        """A transcript's reason carries message_index and no file line."""
        (r,) = replay(load_spec(AIRLINE), [str(TRANSCRIPTS / "voided_confirmation.json")])
        loc = r.reasons[0].location
        assert (loc.seq, loc.message_index, loc.line, loc.voided_by_seq) == (6, 5, None, 4)

    def test_json_report_keeps_messages_and_adds_positions(self, tmp_path: Path) -> None:
        """--format json: every reason keeps its message and gains its position."""
        out = CliRunner().invoke(cli, ["replay", str(EXAMPLES / "spec.json"),
                                       str(EXAMPLES / "fixture_skipped.jsonl"),
                                       "--format", "json"])
        (reason,) = json.loads(out.output)["results"][0]["reasons"]
        assert reason["message"].startswith("checkpoint 'confirm_with_user' is absent")
        assert {"seq", "line", "checkpoint_id", "action_type"} <= set(reason)


class TestGuardPositions:
    def test_decision_log_carries_the_position(self) -> None:
        """The guard's decision names checkpoint and action as data, seq where it was."""
        guard = Guard(_spec())
        decision = guard.check({"seq": 1, "event": "action", "action_type": "send"})
        (reason,) = decision.to_dict()["reasons"]
        assert list(reason)[:3] == ["code", "message", "seq"]
        assert (reason["checkpoint_id"], reason["action_type"], reason["seq"]) == ("ok", "send", 1)


class TestRunAndAccept:
    def test_a_stopped_run_has_one_finding_at_its_phase(self) -> None:
        """run --format json: why the run stopped, with the phase it stopped at."""
        from roadcheck.harness.result import PhaseState, RunResult

        phases = [PhaseState("build", "builder", "passed"), PhaseState("review", "reviewer",
                                                                       "waiting")]
        paused = RunResult("r1", "wf", "paused", phases, "runs/r1", "waits for reviewer",
                           "waiting-for-role", "reviewer")
        assert paused.to_dict()["findings"] == [{"code": "waiting-for-role",
                                                 "message": "waits for reviewer",
                                                 "phase": "review"}]
        done = RunResult("r2", "wf", "completed", phases[:1], "runs/r2", "done", "run-completed")
        assert done.to_dict()["findings"] == [{"code": "run-completed", "message": "done"}]
        assert done.findings[0].severity == "ok"
        assert RunResult("r3", "wf", "completed", phases[:1], "runs/r3").findings == ()

    def test_a_gate_reason_is_a_finding_named_by_its_check(self) -> None:
        """accept: a failed check becomes a finding whose code and location are the check."""
        from roadcheck.acceptance.gate import GateReason

        f = GateReason(False, "claim", "sent: no call").finding()
        assert (f.code, f.severity, f.location.check) == ("claim", "error", "claim")


class TestWhereTheEvidenceStands:
    """A finding about an action names the call, its span and its command, and for a
    coding agent's session the line of the file that holds it."""

    CLAUDE = EXAMPLES / "frameworks" / "claude-code"

    def test_a_claude_code_push_is_found_at_its_line_with_its_call_and_command(self) -> None:
        spec = load_spec(self.CLAUDE / "spec.yaml")
        path = self.CLAUDE / "missing.jsonl"
        (result,) = replay(spec, [str(path)])
        (reason,) = result.reasons
        loc = reason.location
        assert loc.call_id is not None and loc.command is not None
        assert "git push" in loc.command and f"({loc.command})" in reason.message
        assert loc.line is not None
        entry = json.loads(path.read_text().splitlines()[loc.line - 1])
        uses = [b for b in entry["message"]["content"] if b.get("type") == "tool_use"]
        assert [b["id"] for b in uses] == [loc.call_id]
        assert reason.to_dict()["line"] == loc.line

    def test_sarif_and_github_point_at_that_line(self) -> None:
        path = str(self.CLAUDE / "missing.jsonl")
        spec = str(self.CLAUDE / "spec.yaml")
        (result,) = replay(load_spec(spec), [path])
        line = result.reasons[0].location.line
        sarif = CliRunner().invoke(cli, ["replay", spec, path, "--format", "sarif"])
        region = json.loads(sarif.output)["runs"][0]["results"][0]["locations"][0][
            "physicalLocation"]["region"]
        assert region == {"startLine": line}
        github = CliRunner().invoke(cli, ["replay", spec, path, "--format", "github"])
        assert f"line={line}" in github.output

    def test_a_long_command_is_shown_on_one_line_and_cut(self) -> None:
        command = "git push origin main && " + "echo " + "x" * 300 + "\n  && echo done"
        rec = {"event": "action", "action_type": "Bash", "command": command, "call_id": "c1",
               "span_id": "s1"}
        spec = parse_spec({"mandatory_checkpoints": [{"checkpoint_id": "ok",
                                                      "must_precede": "Bash"}]})
        (reason,) = replay_events(spec, _events(rec)).reasons
        shown = reason.location.command
        assert shown is not None and len(shown) == 120 and shown.endswith("...")
        assert "\n" not in shown and shown.startswith("git push origin main && echo x")
        assert (reason.location.call_id, reason.location.span_id) == ("c1", "s1")
        assert reason.to_dict()["command"] == shown

    def test_an_action_without_them_names_none(self) -> None:
        (reason,) = replay_events(_spec(), _events(_send())).reasons
        loc = reason.location
        assert (loc.call_id, loc.span_id, loc.command) == (None, None, None)
        assert "'send' ran at" in reason.message

    def test_a_span_is_named_by_its_id(self) -> None:
        spec = parse_spec({"mandatory_checkpoints": [{"checkpoint_id": "never",
                                                      "must_precede": "lookup_account"}]})
        (result,) = replay(spec, [str(EXAMPLES / "frameworks" / "otel" / "spans.jsonl")])
        loc = result.reasons[0].location
        assert loc.span_id is not None and loc.call_id == "call_1"
        assert loc.line is None  # a span's line is its export's, not the event's
