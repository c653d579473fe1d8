"""What the hook adapters add to the guard: the turn handed back, failed calls, approvals."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roadcheck.conformance import replay_trajectory
from roadcheck.events import Trajectory, args_digest
from roadcheck.guard import Guard, GuardStore, hooks

from ..conftest import DATA, ROOT

SPEC = str(DATA / "hooks" / "spec.yaml")


def _run(cli: str, doc: dict[str, Any], state: Path, spec: str = SPEC) -> hooks.HookAnswer:
    return hooks.run(hooks.load(cli), json.dumps(doc).encode(), spec, str(state), no_key=True)


def _cc(event: str, **fields: Any) -> dict[str, Any]:
    return {"hook_event_name": event, "session_id": "s-1", **fields}


def _push(call: str, line: str = "git push origin main") -> dict[str, Any]:
    return _cc("PreToolUse", tool_name="Bash", tool_input={"command": line}, tool_use_id=call)


def _records(state: Path, session: str = "s-1") -> list[Any]:
    store = GuardStore(state, SPEC, no_key=True)
    with store.session(session) as live:
        return list(live.guard.records)


class TestTheTurnHandedBack:
    def test_a_yes_voided_when_the_assistant_hands_the_turn_back_is_asked_again(
            self, tmp_path: Path) -> None:
        """Stop is the assistant's message: a voided_by rule fires live, as in replay."""
        state = tmp_path / "state"
        for session, stops in (("kept", False), ("s-1", True)):
            _run("claude-code", {**_cc("UserPromptSubmit", prompt="yes, push it"),
                                 "session_id": session}, state)
            if stops:
                assert _run("claude-code", _cc("Stop", stop_hook_active=False,
                                               last_assistant_message="Shall I?"),
                            state) == hooks.HookAnswer(0)
            _run("claude-code", {**_cc("UserPromptSubmit", prompt="go on"),
                                 "session_id": session}, state)
            answer = _run("claude-code", {**_push("t1"), "session_id": session}, state)
            assert answer.decision is not None
            if not stops:  # the yes still stands
                assert (answer.exit, answer.stdout) == (0, "") and answer.decision.allowed
        out = json.loads(answer.stdout)["hookSpecificOutput"]
        assert out["permissionDecision"] == "ask"
        assert "at seq 1 was voided by seq 2" in out["permissionDecisionReason"]
        assert out["permissionDecisionReason"].endswith(
            "[rule push_ok, checkpoint-skipped at seq 4]")
        # replay of the same session reports that push too
        events = [{**rec} for rec in _records(state)]
        events.append({"seq": 4, "event": "action", "agent": "claude", "action_type": "Bash",
                       "command": "git push origin main", "call_id": "t1"})
        events.append({"seq": 5, "event": "final", "task_success": True})
        result = replay_trajectory(Guard(SPEC).spec, Trajectory(events))
        assert result.verdict == "BLOCK"
        assert [(r.code, r.seq) for r in result.reasons] == [("checkpoint-skipped", 4)]

    def test_a_subagent_handing_back_is_its_own_assistant_message(self, tmp_path: Path) -> None:
        state = tmp_path / "state"
        stop = _cc("SubagentStop", agent_type="general-purpose", last_assistant_message="Done.")
        assert _run("claude-code", stop, state).exit == 0
        assert _records(state) == [{"event": "message", "role": "assistant",
                                    "agent": "general-purpose", "yields_turn": True,
                                    "text": "Done.", "seq": 1}]

    @pytest.mark.parametrize(("cli", "stop", "want"), [
        ("claude-code", _cc("Stop", stop_hook_active=False), {"decision": "block"}),
        ("codex", _cc("Stop", turn_id="t", stop_hook_active=False,
                      last_assistant_message=None), {"decision": "block"}),
        ("copilot", _cc("Stop", stop_reason="end_turn"), {"decision": "block"}),
        ("gemini", _cc("AfterAgent", prompt="p", prompt_response="r"), {"decision": "deny"}),
    ])
    def test_an_open_obligation_keeps_the_turn(self, cli: str, stop: dict[str, Any], want:
                                              dict[str, str], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
        """Where the guard keeps obligations, Stop is refused while one is open."""
        monkeypatch.setattr(Guard, "open_obligations", lambda self: ["report the test run"],
                            raising=False)
        answer = _run(cli, stop, tmp_path / "state")
        assert answer.exit == 0
        out = json.loads(answer.stdout)
        assert {k: out[k] for k in want} == want
        assert out["reason"] == "roadcheck guard: still open: report the test run"

    def test_no_obligation_lets_the_turn_end(self, tmp_path: Path) -> None:
        answer = _run("claude-code", _cc("Stop", stop_hook_active=False), tmp_path / "s")
        assert (answer.exit, answer.stdout) == (0, "")


class TestCatchUp:
    def test_a_codex_session_starts_from_its_rollout_file(self, tmp_path: Path) -> None:
        """--catch-up reads the session file Codex names, with the Codex reader."""
        doc = json.loads((DATA / "hooks" / "codex" / "pre_ask.json").read_text())
        doc["transcript_path"] = str(DATA / "coding" / "codex" / "codex_with_escalation.jsonl")
        state = tmp_path / "state"
        answer = hooks.run(hooks.load("codex"), json.dumps(doc).encode(), SPEC, str(state),
                           catch_up=True, no_key=True)
        reason = json.loads(answer.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
        assert reason.endswith("[rule push_ok, checkpoint-skipped at seq 14]")
        records = _records(state, doc["session_id"])
        assert len(records) == 13 and records[0]["text"] == "Create a test file"


class TestCalls:
    def test_a_failed_call_is_observed_with_its_error(self, tmp_path: Path) -> None:
        state = tmp_path / "state"
        failed = _cc("PostToolUseFailure", tool_name="Bash", tool_input={"command": "make"},
                     tool_use_id="t1", error="exit status 2")
        assert _run("claude-code", failed, state).exit == 0
        [rec] = _records(state)
        assert (rec["action_type"], rec["error"], rec["command"]) == ("Bash", "exit status 2",
                                                                      "make")

    def test_an_event_no_cli_documents_is_refused(self, tmp_path: Path) -> None:
        answer = _run("claude-code", _cc("PreToolUseV2", tool_name="Bash", tool_input={}),
                      tmp_path / "s")
        assert answer.exit == 2
        assert answer.stderr == ("roadcheck guard: denied: bad hook input: unknown hook event "
                                 "'PreToolUseV2'\n")

    def test_codex_permission_request_binds_the_tool_and_arguments(self, tmp_path: Path) -> None:
        """It has no call id: the decision names the tool and the arguments' digest only."""
        doc = json.loads((DATA / "hooks" / "codex" / "permission.json").read_text())
        answer = _run("codex", doc, tmp_path / "s")
        assert answer.decision is not None
        assert answer.decision.call_id is None
        assert answer.decision.args_sha256 == args_digest(doc["tool_input"])
        out = json.loads(answer.stdout)["hookSpecificOutput"]
        assert out["decision"]["behavior"] == "deny" and out["decision"]["message"]

    def test_copilot_approval_at_the_prompt_binds_the_tool_and_arguments(
            self, tmp_path: Path) -> None:
        """An asked call that then ran was approved: recorded for that tool and arguments."""
        state = tmp_path / "state"
        spec = tmp_path / "spec.yaml"
        spec.write_text("mandatory_checkpoints:\n  - checkpoint_id: ok\n    scope: each\n"
                        "    consume: true\n    binds: {tool: true, args: true}\n"
                        "    must_precede: bash\n")
        call = {"hook_event_name": "PreToolUse", "session_id": "c-1", "tool_name": "bash",
                "tool_input": {"command": "make deploy"}}
        asked = _run("copilot", call, state, str(spec))
        assert json.loads(asked.stdout)["permissionDecision"] == "ask"
        ran = {**call, "hook_event_name": "PostToolUse",
               "tool_result": {"result_type": "success", "text_result_for_llm": ""}}
        assert _run("copilot", ran, state, str(spec)).stdout == ""
        store = GuardStore(state, spec, no_key=True)
        with store.session("c-1") as live:
            records = list(live.guard.records)
        assert records[0] == {"event": "checkpoint", "checkpoint_id": "ok", "confirmed_by": "user",
                              "agent": "copilot", "tool": "bash",
                              "args_sha256": args_digest({"command": "make deploy"}), "seq": 1}
        again = _run("copilot", call, state, str(spec))  # the approval was spent by that call
        assert json.loads(again.stdout)["permissionDecision"] == "ask"


class TestApprove:
    def test_the_approve_line_in_a_codex_deny_lets_that_call_through(self, tmp_path: Path,
                                                                      ) -> None:
        """The person runs the line the reason gives; the agent's retry is then allowed."""
        state = tmp_path / "state"
        pre = json.loads((DATA / "hooks" / "codex" / "pre_ask.json").read_text())
        denied = _run("codex", pre, state)
        reason = json.loads(denied.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
        line = reason.split("run `", 1)[1].split("`", 1)[0]
        args = shlex.split(line)
        assert args[:3] == ["roadcheck", "guard", "approve"]
        proc = subprocess.run([sys.executable, "-m", "roadcheck", *args[1:], "--no-key"],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("roadcheck guard: approved by user: push_ok (session ")
        retry = _run("codex", pre, state)
        assert (retry.exit, retry.stdout) == (0, "")
        assert retry.decision is not None and retry.decision.approvers == ("user",)

    def test_approving_in_a_session_never_seen_is_refused(self, tmp_path: Path) -> None:
        proc = subprocess.run([sys.executable, "-m", "roadcheck", "guard", "approve", "--spec",
                               SPEC, "--state-dir", str(tmp_path / "s"), "--no-key",
                               "--session", "nope", "--checkpoint", "push_ok", "--by", "user"],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr and "nope" in proc.stderr



def test_codex_stop_is_refused_while_a_real_obligation_is_open(tmp_path: Path) -> None:
    """Not a stand-in: the spec's obligation, opened by a deploy Codex ran, keeps the turn
    until a smoke test ran."""
    spec = tmp_path / "spec.yaml"
    spec.write_text("obligations:\n  - id: smoke-after-deploy\n"
                    "    after: {action_type: Bash, command: {words: [make, deploy]}}\n"
                    "    require: {action_type: Bash, command: {words: [make, smoke]}}\n")
    data = Path(__file__).resolve().parents[1] / "data" / "hooks" / "codex"
    post = json.loads((data / "post.json").read_text())
    stop = json.loads((data / "stop.json").read_text())
    state = tmp_path / "state"

    def ran(command: str, call: str) -> None:
        answer = _run("codex", {**post, "tool_input": {"command": command},
                                "tool_use_id": call}, state, str(spec))
        assert answer.exit == 0, answer

    ran("make deploy", "c1")
    held = _run("codex", stop, state, str(spec))
    assert held.exit == 0
    out = json.loads(held.stdout)
    assert out["decision"] == "block" and "smoke-after-deploy" in out["reason"]
    ran("make smoke", "c2")
    assert _run("codex", stop, state, str(spec)).stdout.strip() == ""


class TestShellLinesOutsideTheShellTool:
    """A guarded command line is read wherever a call carries one: an MCP shell tool's
    ``command`` argument, and a shell call whose ``command`` is not text is held."""

    SPEC = ("mandatory_checkpoints:\n"
            "  - {checkpoint_id: ok, must_precede: {command: {words: [git, push]}}}\n")

    @pytest.mark.parametrize("tool", ["mcp__shell__execute_command",
                                      "mcp__desktop-commander__start_process"])
    @pytest.mark.parametrize("line", ["git push origin main", "# push\ngit push origin main",
                                      ["git", "push", "origin", "main"]])
    def test_an_mcp_shell_tool_is_held_through_the_hook(self, tmp_path: Path, tool: str,
                                                        line: Any) -> None:
        spec = tmp_path / "spec.yaml"
        spec.write_text(self.SPEC)
        answer = _run("claude-code", _cc("PreToolUse", tool_name=tool,
                                         tool_input={"command": line}, tool_use_id="t1"),
                      tmp_path / "state", str(spec))
        assert answer.exit == 0 and '"permissionDecision":"ask"' in answer.stdout, answer

    def test_a_harmless_line_of_an_mcp_shell_tool_is_allowed(self, tmp_path: Path) -> None:
        spec = tmp_path / "spec.yaml"
        spec.write_text(self.SPEC)
        answer = _run("claude-code", _cc("PreToolUse", tool_name="mcp__shell__execute_command",
                                         tool_input={"command": "git status"},
                                         tool_use_id="t1"), tmp_path / "state", str(spec))
        assert (answer.exit, answer.stdout) == (0, "")

    def test_the_proxy_call_is_held(self) -> None:
        """The MCP proxy checks the call as it comes: the tool and its arguments."""
        guard = Guard({"mandatory_checkpoints": [
            {"checkpoint_id": "ok", "must_precede": {"command": {"words": ["git", "push"]}}}]})
        call = {"event": "action", "action_type": "execute_command",
                "args": {"command": "cd app && git push"}}
        assert guard.check(call).verdict == "ask"
        assert guard.check({**call, "args": {"command": "ls"}}).verdict == "allow"

    @pytest.mark.parametrize("command", [{"cmd": "git push origin main"}, 12, [1, 2]])
    def test_a_bash_call_whose_command_is_not_text_is_held(self, tmp_path: Path,
                                                           command: Any) -> None:
        spec = tmp_path / "spec.yaml"
        spec.write_text("mandatory_checkpoints:\n  - {checkpoint_id: ok, must_precede:"
                        " {action_type: Bash, command: {words: [git, push]}}}\n")
        answer = _run("claude-code", _cc("PreToolUse", tool_name="Bash",
                                         tool_input={"command": command}, tool_use_id="t1"),
                      tmp_path / "state", str(spec))
        assert answer.exit == 0 and '"permissionDecision":"ask"' in answer.stdout, answer

    def test_replay_holds_a_recorded_bash_call_whose_command_is_not_text(self) -> None:
        from roadcheck.conformance.judge import replay_events
        from roadcheck.conformance.spec import parse_spec
        from roadcheck.events import Event

        spec = parse_spec({"derive": [{"checkpoint_id": "t", "when": {
            "command": {"words": ["pytest"]}, "ok": True}}], "mandatory_checkpoints": [
            {"checkpoint_id": "t", "must_precede": {"command": {"words": ["git", "push"]}}}]})
        def run(first: Any) -> list[Event]:
            return [Event.make(1, "action", None, action_type="mcp__shell__run",
                               args={"command": first}),
                    Event.make(2, "action", None, action_type="Bash",
                               args={"command": {"cmd": "git push"}}),
                    Event.make(3, "final", None)]

        # an unreadable line is held and shows nothing; a readable test run in the
        # arguments is the evidence it looks like
        held = replay_events(spec, run({"x": 1}))
        assert held.verdict == "BLOCK" and held.reasons[0].code == "checkpoint-skipped"
        assert replay_events(spec, run("pytest -q")).verdict == "PASS"

    def test_a_test_run_of_an_mcp_shell_tool_derives_as_in_replay(self, tmp_path: Path) -> None:
        """What the hook keeps of the call is what replay reads from the session."""
        spec = tmp_path / "spec.yaml"
        spec.write_text("derive:\n  - {checkpoint_id: ok, when: {command: {words: [pytest]},"
                        " ok: true}}\n" + self.SPEC)
        state = tmp_path / "state"
        ran = _cc("PostToolUse", tool_name="mcp__shell__execute_command",
                  tool_input={"command": "pytest -q"}, tool_use_id="t1",
                  tool_response={"stdout": "3 passed"})
        assert _run("claude-code", ran, state, str(spec)).exit == 0
        answer = _run("claude-code", _push("t2"), state, str(spec))
        assert (answer.exit, answer.stdout) == (0, "")


def _fixture(cli: str, name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DATA / "hooks" / cli / f"{name}.json").read_text())
    return doc


_SESSIONS = {"opencode": "sessionID", "cursor": "conversation_id", "copilot": "session_id",
             "cline": "taskId"}


def _observed_ok(cli: str, doc: dict[str, Any], state: Path) -> bool | None:
    """Whether the one call ``doc`` reports is observed as succeeded (the ``ok`` a
    derive rule, an obligation or a claim's backing reads)."""
    from roadcheck.events import Event
    from roadcheck.selectors import succeeded

    assert _run(cli, doc, state).exit == 0
    [rec] = _records(state, doc[_SESSIONS[cli]])
    data = {k: v for k, v in rec.items() if k not in ("seq", "event", "agent")}
    return succeeded(Event.make(1, "action", None, **data))


class TestExitStatus:
    """A shell call that exited non-zero is observed as failed wherever the CLI's payload
    says so, and one whose payload gives no exit status is not observed as succeeded:
    a failed test run derives no ``tests_passed`` and backs no "all tests pass"."""

    @pytest.mark.parametrize(("trailer", "ok"), [
        ("\n<exited with exit code 1>", False), ("\n<exited with exit code 0>", True),
        ("", None)])
    def test_copilot_reads_the_exit_code_its_shell_tool_writes(
            self, tmp_path: Path, trailer: str, ok: bool | None) -> None:
        """Copilot CLI marks a shell call that exited 1 a ``success`` and writes the exit
        code at the end of the text it gives the model."""
        doc = _fixture("copilot", "post")
        doc["tool_input"] = {"command": "pytest -q"}
        doc["tool_result"] = {"result_type": "success",
                              "text_result_for_llm": "1 failed, 3 passed" + trailer}
        assert _observed_ok("copilot", doc, tmp_path / "state") is (ok is True)

    def test_copilot_non_shell_tool_is_read_from_its_result_type(self, tmp_path: Path) -> None:
        doc = _fixture("copilot", "post")
        doc["tool_name"], doc["tool_input"] = "view", {"path": "README.md"}
        assert _observed_ok("copilot", doc, tmp_path / "state") is True

    @pytest.mark.parametrize(("extra", "ok"), [
        ({"exit": 1}, False), ({"exit": 0}, True), ({"exit": None}, False), ({}, False)])
    def test_opencode_reads_the_exit_code_of_its_bash_tool(
            self, tmp_path: Path, extra: dict[str, Any], ok: bool) -> None:
        """The plugin sends the bash tool's exit code (``exit``, null when it was killed);
        a bash call without one has no known status."""
        doc = _fixture("opencode", "post")
        doc.pop("exit")
        doc.update(extra, args={"command": "pytest -q"})
        assert _observed_ok("opencode", doc, tmp_path / "state") is ok

    def test_opencode_other_tools_succeed_unless_they_report_an_error(
            self, tmp_path: Path) -> None:
        doc = {**_fixture("opencode", "post"), "tool": "read", "args": {"filePath": "a.py"}}
        assert _observed_ok("opencode", doc, tmp_path / "state") is True

    def test_the_opencode_plugin_sends_the_exit_code(self) -> None:
        plugin = (ROOT / "examples" / "guard" / "opencode" / "roadcheck-guard.js").read_text()
        assert "exit: output?.metadata?.exit" in plugin

    def test_cursor_after_shell_execution_has_no_known_status(self, tmp_path: Path) -> None:
        """Cursor's ``afterShellExecution`` gives the output and the duration, no exit
        status: the run is not observed as succeeded."""
        doc = {**_fixture("cursor", "post"), "command": "pytest -q", "output": "1 failed"}
        assert _observed_ok("cursor", doc, tmp_path / "state") is False

    def test_cursor_post_tool_use_is_read_from_the_event(self, tmp_path: Path) -> None:
        doc = {**_fixture("cursor", "failure"), "hook_event_name": "postToolUse",
               "tool_input": {"command": "pytest -q"}}
        doc.pop("error_message")
        assert _observed_ok("cursor", doc, tmp_path / "state") is True
        failed = {**_fixture("cursor", "failure"), "tool_input": {"command": "pytest -q"}}
        assert _observed_ok("cursor", failed, tmp_path / "state2") is False

    @pytest.mark.parametrize(("success", "ok"), [(False, False), (True, True)])
    def test_cline_reads_its_success_flag(self, tmp_path: Path, success: bool,
                                          ok: bool) -> None:
        doc = _fixture("cline", "post")
        doc["postToolUse"] = {**doc["postToolUse"], "success": success,
                              "parameters": {"command": "pytest -q"}}
        assert _observed_ok("cline", doc, tmp_path / "state") is ok

    def test_a_failed_run_derives_no_checkpoint(self, tmp_path: Path) -> None:
        """End to end: a Copilot test run that exited 1 derives no ``tests_passed``, so
        the push it guards is held; one that exited 0 lets it through."""
        spec = tmp_path / "spec.yaml"
        spec.write_text("derive:\n  - {checkpoint_id: tests_passed, when: {command: {words: "
                        "[pytest]}, ok: true}}\nmandatory_checkpoints:\n  - {checkpoint_id: "
                        "tests_passed, must_precede: {command: {words: [git, push]}}}\n")
        for code, held in ((1, True), (0, False)):
            state = tmp_path / f"state{code}"
            run = _fixture("copilot", "post")
            run["tool_input"] = {"command": "pytest -q"}
            run["tool_result"] = {"result_type": "success", "text_result_for_llm":
                                  f"done\n<exited with exit code {code}>"}
            assert _run("copilot", run, state, str(spec)).exit == 0
            push = {**_fixture("copilot", "pre_allow"), "tool_name": "bash",
                    "tool_input": {"command": "git push origin main"}}
            answer = _run("copilot", push, state, str(spec))
            assert ("deny" in answer.stdout or "ask" in answer.stdout) is held, answer
