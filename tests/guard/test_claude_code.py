"""``roadcheck guard claude-code``: the hook process end to end, driven with hook JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roadcheck.harness.audit import load_trail

from ..conftest import ROOT
from . import stored

SPEC = """\
mandatory_checkpoints:
  - checkpoint_id: push_ok
    scope: each
    consume: true
    binds: {tool: true, args: true}
    must_precede: {action_type: Bash, command: {words: [git, push]}}
"""


class Hook:
    """Runs the hook command as Claude Code does: one process per event, JSON on stdin."""

    def __init__(self, tmp: Path, spec: str = SPEC, *extra: str) -> None:
        self.spec = tmp / "spec.yaml"
        self.spec.write_text(spec)
        self.state = tmp / "state"
        self.extra = extra

    def __call__(self, event: str, payload: dict[str, Any] | bytes, session: str = "sess-1",
                 ) -> subprocess.CompletedProcess[str]:
        if isinstance(payload, dict):
            payload = json.dumps({"hook_event_name": event, "session_id": session,
                                  "transcript_path": "nonexistent.jsonl", **payload}).encode()
        return subprocess.run(
            [sys.executable, "-m", "roadcheck", "guard", "claude-code", "--spec", str(self.spec),
             "--state-dir", str(self.state), *self.extra],
            input=payload.decode("utf-8", "replace"), capture_output=True, text=True, cwd=ROOT,
            timeout=60)


def _bash(command: str, call: str) -> dict[str, Any]:
    return {"tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": call}


def _decision(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)["hookSpecificOutput"]
    return doc


class TestHook:
    def test_git_push_inside_bash_is_asked_then_approved_at_the_prompt(self, tmp_path: Path,
                                                                       ) -> None:
        """A push is asked for; approved at the prompt and run, a second push is asked again."""
        hook = Hook(tmp_path)
        assert hook("UserPromptSubmit", {"prompt": "ship it"}).returncode == 0
        ls = hook("PreToolUse", _bash("ls -la", "t0"))
        assert (ls.returncode, ls.stdout) == (0, "")  # allowed: Claude Code's own rules apply
        first = _decision(hook("PreToolUse", _bash("cd app && git push origin main", "t1")))
        assert first["hookEventName"] == "PreToolUse"
        assert first["permissionDecision"] == "ask"
        assert "checkpoint-skipped" in first["permissionDecisionReason"]
        assert "needs the approval 'push_ok'" in first["permissionDecisionReason"]
        assert first["permissionDecisionReason"].endswith(
            "[rule push_ok, checkpoint-skipped at seq 2]")
        # the person approved at Claude Code's prompt and the call ran
        assert hook("PostToolUse", {**_bash("cd app && git push origin main", "t1"),
                                    "tool_response": {"stdout": "ok"}}).returncode == 0
        again = _decision(hook("PreToolUse", _bash("cd app && git push origin main", "t2")))
        assert again["permissionDecision"] == "ask"  # consumed: one approval, one push
        trail = load_trail(tmp_path / "state", "sess-1")
        assert trail.check.ok
        assert [r["gate"]["summary"] for r in trail.records] == ["allow Bash", "ask Bash",
                                                                 "allow Bash", "ask Bash"]
        assert trail.records[2]["identity"] == "user"  # approved at the prompt

    def test_a_person_the_rule_does_not_accept_is_denied(self, tmp_path: Path) -> None:
        """confirmed_by names others than the prompt's approver: deny, with the reason."""
        hook = Hook(tmp_path, SPEC + "    confirmed_by: [owner, cfo]\n")
        out = _decision(hook("PreToolUse", _bash("git push", "t1")))
        assert out["permissionDecision"] == "deny"
        assert "only cfo or owner may give it" in out["permissionDecisionReason"]

    def test_grant_answers_allow(self, tmp_path: Path) -> None:
        """With --grant an allowed call is answered allow."""
        out = _decision(Hook(tmp_path, SPEC, "--grant")("PreToolUse", _bash("ls", "t1")))
        assert out["permissionDecision"] == "allow"

    def test_permission_request_denies_in_its_own_shape(self, tmp_path: Path) -> None:
        """PermissionRequest is answered with decision.behavior deny."""
        hook = Hook(tmp_path, SPEC + "    confirmed_by: [owner]\n")
        out = _decision(hook("PermissionRequest", _bash("git push", "t1")))
        assert out["decision"]["behavior"] == "deny"
        assert "checkpoint-skipped" in out["decision"]["message"]

    @pytest.mark.parametrize(("payload", "why"), [
        (b"not json", "bad hook input: not JSON"),
        (b"[1]", "bad hook input: expected a JSON object"),
        ({"tool_name": "Bash", "tool_input": "ls"}, "'tool_input' must be an object"),
        ({"tool_input": {}}, "'tool_name' must be a non-empty string"),
        (b'{"hook_event_name": "PreToolUse", "session_id": "sess-1", "tool_name": "Bash", '
         b'"tool_input": {"command": "ls", "command": "git push"}, "tool_use_id": "t1"}',
         "bad hook input: duplicate key 'command'"),
    ])
    def test_bad_input_denies_with_exit_2(self, tmp_path: Path, payload: Any, why: str) -> None:
        """Bad hook input blocks (exit 2) with one line on stderr, never a traceback."""
        out = Hook(tmp_path)("PreToolUse", payload)
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr.startswith("roadcheck guard: denied: ") and why in out.stderr
        assert "Traceback" not in out.stderr

    def test_bad_spec_denies(self, tmp_path: Path) -> None:
        """A spec the loader refuses blocks every call, naming the problem."""
        out = Hook(tmp_path, "mandatory_checkpoints: [{checkpoint_id: x}]\n")(
            "PreToolUse", _bash("ls", "t1"))
        assert out.returncode == 2 and "must_precede" in out.stderr

    def test_corrupt_state_denies(self, tmp_path: Path) -> None:
        """A session state that cannot be read blocks, rather than starting afresh."""
        hook = Hook(tmp_path)
        (hook.state / "sess-1").mkdir(parents=True)
        (hook.state / "sess-1" / "guard.json").write_text("{broken")
        out = hook("PreToolUse", _bash("ls", "t1"))
        assert out.returncode == 2 and "guard.json: is not a sealed guard file" in out.stderr

    def test_other_hook_events_are_left_alone(self, tmp_path: Path) -> None:
        """An event the guard does not read is answered with nothing, exit 0."""
        out = Hook(tmp_path)("Notification", {"message": "hi"})
        assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


class TestCatchUp:
    def test_a_new_session_starts_from_its_transcript(self, tmp_path: Path) -> None:
        """With --catch-up, the transcript's events are observed before the first check."""
        transcript = ROOT / "tests" / "data" / "coding" / "claude-code" / "tool_heavy.jsonl"
        hook = Hook(tmp_path, "mandatory_checkpoints:\n  - {checkpoint_id: AskUserQuestion, "
                              "must_precede: Bash, scope: each}\n", "--catch-up")
        out = _decision(hook("PreToolUse", {**_bash("ls", "t-new"),
                                            "transcript_path": str(transcript)}))
        assert out["permissionDecision"] == "ask"
        assert "at seq 16]" in out["permissionDecisionReason"]  # 15 events before it
        state = stored.state(hook.state / "sess-1" / "guard.json")
        assert [e["event"] for e in state["events"]][:2] == ["message", "action"]
        assert not any(e["event"] == "final" for e in state["events"])

    def test_without_catch_up_the_transcript_is_not_read(self, tmp_path: Path) -> None:
        """By default the guard knows only what its hook events told it."""
        hook = Hook(tmp_path)
        assert hook("PreToolUse", _bash("ls", "t1")).returncode == 0
        state = stored.state(hook.state / "sess-1" / "guard.json")
        assert state["events"] == []

    def test_an_unreadable_transcript_denies(self, tmp_path: Path) -> None:
        """Asked to catch up from a transcript it cannot read, the hook blocks."""
        out = Hook(tmp_path, SPEC, "--catch-up")("PreToolUse", _bash("ls", "t1"))
        assert out.returncode == 2 and "nonexistent.jsonl" in out.stderr


class TestKeptState:
    def test_arguments_are_kept_only_where_a_rule_binds_them(self, tmp_path: Path) -> None:
        """A Write's file body is not kept; a bound push's arguments are; responses never."""
        hook = Hook(tmp_path)
        write = {"tool_name": "Write", "tool_input": {"file_path": "/a", "content": "x" * 5000},
                 "tool_use_id": "w1", "tool_response": {"ok": True}}
        assert hook("PostToolUse", write).returncode == 0
        assert hook("PostToolUse", {**_bash("git push", "p1"),
                                    "tool_response": {"stdout": "y" * 5000}}).returncode == 0
        state = stored.state(hook.state / "sess-1" / "guard.json")
        kept = {e["call_id"]: e for e in state["events"]}
        assert "args" not in kept["w1"] and kept["p1"]["args"] == {"command": "git push"}
        assert kept["p1"]["command"] == "git push"
        assert not any("result" in e for e in state["events"])


OBLIGED = """\
obligations:
  - id: smoke-after-deploy
    after: {action_type: Bash, command: {words: [make, deploy]}}
    require: {action_type: Bash, command: {words: [make, smoke]}, ok: true}
"""


class TestStopHook:
    def test_stop_is_blocked_while_an_obligation_is_open(self, tmp_path: Path) -> None:
        """After a deploy, the agent may not end its turn before a smoke test ran."""
        hook = Hook(tmp_path, OBLIGED)
        stop = (ROOT / "tests/data/guard_hooks/stop.json").read_bytes()
        assert (hook("Stop", stop).returncode, hook("Stop", stop).stdout) == (0, "")
        assert hook("PostToolUse", {**_bash("make deploy", "t1"),
                                    "tool_response": {"stdout": "ok"}}).returncode == 0
        blocked = hook("Stop", stop)
        assert blocked.returncode == 0, blocked.stderr
        answer = json.loads(blocked.stdout)
        assert answer["decision"] == "block"
        assert "obligation-unmet" in answer["reason"]
        assert "smoke-after-deploy" in answer["reason"]
        # a smoke test that failed meets nothing (Claude Code's PostToolUseFailure)
        assert hook("PostToolUseFailure", {**_bash("make smoke", "t2"), "error": "exit 2",
                                           "is_interrupt": False}).returncode == 0
        assert json.loads(hook("Stop", stop).stdout)["decision"] == "block"
        assert hook("PostToolUse", {**_bash("make smoke", "t3"),
                                    "tool_response": {"stdout": "ok"}}).returncode == 0
        assert (hook("Stop", stop).returncode, hook("Stop", stop).stdout) == (0, "")

    def test_arguments_a_rule_reads_are_kept_for_later_events(self, tmp_path: Path) -> None:
        """An obligation whose require reads arguments is met by the call that ran."""
        hook = Hook(tmp_path, """\
obligations:
  - id: changelog
    after: {action_type: Edit, args: {file_path: {glob: "src/**"}}}
    require: {action_type: Edit, args: {file_path: CHANGELOG.md}}
""")
        stop = (ROOT / "tests/data/guard_hooks/stop.json").read_bytes()
        edit = {"tool_name": "Edit", "tool_input": {"file_path": "src/a.py"}, "tool_use_id": "e1"}
        assert hook("PostToolUse", {**edit, "tool_response": {}}).returncode == 0
        assert json.loads(hook("Stop", stop).stdout)["decision"] == "block"
        log = {"tool_name": "Edit", "tool_input": {"file_path": "CHANGELOG.md"},
               "tool_use_id": "e2"}
        assert hook("PostToolUse", {**log, "tool_response": {}}).returncode == 0
        assert hook("Stop", stop).stdout == ""
