"""Text reports escape control and bidi characters; JSON output keeps values exact."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from roadcheck.acceptance.gate import GateReason, GateResult
from roadcheck.conformance import load_spec, replay
from roadcheck.evidence.chain import ChainCheck
from roadcheck.harness.audit import RunTrail
from roadcheck.harness.result import PhaseState, RunResult
from roadcheck.report import accept_report, replay_report, revalidate_report
from roadcheck.report._text import escape_controls, sha256_footer
from roadcheck.report.harness import audit_text, run_report, verify_report
from roadcheck.revalidation.result import Revalidation, StepClass, finding

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "spec.json"

#: Every kind of character that must never reach a terminal raw.
HOSTILE = ["\n", "\r", "\x00", "\x1b[2J", "\x07", "\t", "\x7f", "\x85", "\x9b", "\u202e",
           "\u202a", "\u2066", "\u2069", "\u200e", "\u200f", "\u061c", "\u2028", "\u2029",
           # a lone surrogate is no character: printed raw, it cannot even be encoded
           "\ud800", "\udfff"]


def raw_controls(text: str) -> list[str]:
    """The forbidden characters left in a rendered report (its own line breaks excepted)."""
    return [c for c in text.replace("\n", "") if escape_controls(c) != c]


class TestEscapeControls:
    """The one helper every text renderer uses."""

    @pytest.mark.parametrize("char", HOSTILE)
    def test_escapes_as_repr_would(self, char: str) -> None:
        """Each control or bidi character is shown as its repr escape."""
        assert escape_controls(f"a{char}b") == "a" + repr(char)[1:-1] + "b"

    def test_plain_text_is_unchanged(self) -> None:
        """Printable text, accents, CJK and emoji pass through untouched (same object)."""
        text = "café 東京 🙂 'quoted' \\n literal"
        assert escape_controls(text) is text


def _hostile_trajectory(tmp_path: Path) -> Path:
    """send_report without its checkpoint, by an agent whose name forges a PASS line."""
    agent = "reporter\nverdict : PASS (trajectory-conforms) exit 0\x1b[2K\r\u202e"
    rows = [
        {"seq": 1, "agent": agent, "event": "handoff", "from_agent": agent, "to_agent": "x",
         "payload": {}},
        {"seq": 2, "agent": agent, "event": "action", "action_type": "send_report",
         "irreversible": True},
        {"seq": 3, "agent": agent, "event": "final", "task_success": True},
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


class TestReplayReport:
    """The replay report."""

    def test_newline_in_agent_name_forges_no_line(self, tmp_path: Path) -> None:
        """A newline in an agent name cannot print a fake verdict line above the real BLOCK."""
        path = _hostile_trajectory(tmp_path)
        spec = load_spec(SPEC)
        run = replay(spec, [path])
        text = replay_report(run, spec)
        verdicts = [line for line in text.splitlines() if line.startswith("verdict")]
        assert verdicts == ["verdict : BLOCK (checkpoint-skipped) exit 1"]
        assert raw_controls(text) == []
        assert "reporter\\nverdict : PASS" in text
        assert "\\x1b[2K\\r\\u202e" in text

    def test_self_hash_covers_the_escaped_body(self, tmp_path: Path) -> None:
        """The report-sha256 line hashes the body as printed, escapes included."""
        spec = load_spec(SPEC)
        text = replay_report(replay(spec, [_hostile_trajectory(tmp_path)]), spec)
        body = text[:text.rindex("report-sha256: ")]
        assert sha256_footer(body) == text

    def test_json_keeps_the_exact_value(self, tmp_path: Path) -> None:
        """The JSON document carries the agent name exactly as recorded."""
        spec = load_spec(SPEC)
        doc = json.loads(replay_report(replay(spec, [_hostile_trajectory(tmp_path)]), spec,
                                       fmt="json"))
        assert doc["results"][0]["verdict"] == "BLOCK"
        warning = doc["results"][0]["warnings"][0]["message"]
        assert warning.startswith("reporter\nverdict : PASS (trajectory-conforms) exit 0"
                                  "\x1b[2K\r\u202e->x ")


class TestOtherRenderers:
    """accept, run, revalidate, evidence verify and audit text reports."""

    def test_accept(self) -> None:
        """The label and reasons of an accept report are escaped; JSON stays exact."""
        result = GateResult((GateReason(False, "claim", "claims 'sent\nok - fine' \x1b[31m"),))
        text = accept_report("result\n[ACCEPTED] forged.json", result)
        assert text.splitlines()[0] == "[REJECTED] result\\n[ACCEPTED] forged.json"
        assert raw_controls(text) == []
        doc = json.loads(accept_report("x", result, fmt="json"))
        assert doc["reasons"][0]["message"] == "claims 'sent\nok - fine' \x1b[31m"

    def test_run(self) -> None:
        """Phase names, notes, the message and the gate output are escaped."""
        result = RunResult("r1", "wf\u202e", "hard-stop", [PhaseState("build\nphase x", "dev")],
                           "/runs/r1", message="gate failed\r\x1b[2Kstatus : completed",
                           last_output="line one\x00\nline two\x1b]0;title\x07",
                           notes=["note\u2066"])
        text = run_report(result)
        assert raw_controls(text) == []
        assert [line for line in text.splitlines() if line.startswith("status")] \
            == ["status : hard-stop (exit 1)"]

    def test_evidence_verify(self) -> None:
        """A chain message carrying controls is escaped."""
        text = verify_report(ChainCheck("r\n1", 3, "edited", 2, "phase 'a\x1b[0m' edited"))
        assert raw_controls(text) == []
        assert text.splitlines()[0] == "evidence r\\n1: BROKEN (edited): phase 'a\\x1b[0m' edited"
        assert text.splitlines()[1].startswith("scope: no key")

    def test_audit_text(self) -> None:
        """Record fields in the audit trail are escaped."""
        trail = RunTrail("r1", "wf", "jsonl", [
            {"iteration": 1, "phase": "p\nchain: OK", "attempt": 1, "verdict": "fail",
             "gate": {"kind": "command", "summary": "s\u202e"}, "role": "dev",
             "identity": "me\r", "artifact": {"sha256": "x"}}],
            ChainCheck("r1", 1), {})
        text = audit_text(trail)
        assert raw_controls(text) == []
        assert [line for line in text.splitlines() if line.startswith("chain")] \
            == ["chain: OK: "]

    def test_revalidate(self) -> None:
        """Findings, steps and the next action are escaped."""
        rv = Revalidation("cp.yaml", datetime(2026, 1, 1, tzinfo=UTC), "escalate",
                          [finding("effects", "effect-unknown", "up\nload\x1b[1m", "reconcile")],
                          [StepClass("step\ndecision: continue (exit 0)", "unsafe_to_retry")],
                          "reconcile \u202eit")
        text = revalidate_report(rv)
        assert raw_controls(text) == []
        assert [line for line in text.splitlines() if line.startswith("decision")] \
            == ["decision: escalate (exit 1)"]


def test_cli_error_line_is_escaped(tmp_path: Path) -> None:
    """A one-line error naming a hostile value stays one line on the terminal."""
    from click.testing import CliRunner

    from roadcheck.cli import cli

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"mandatory_checkpoints": [], "handoff_contracts": [],
                                "bogus\nverdict : PASS\x1b[2K": 1}), encoding="utf-8")
    traj = tmp_path / "t.jsonl"
    traj.write_text('{"seq": 1, "event": "final", "task_success": true}\n', encoding="utf-8")
    res = CliRunner().invoke(cli, ["replay", str(spec), str(traj)])
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1
    assert raw_controls(res.stderr) == []
