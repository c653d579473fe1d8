"""The success gate live: a stop is held while the agent's final message claims what the
session does not show (``roadcheck guard CLI --contract``).

The Claude Code cases play the hook inputs Claude Code 2.1.332 wrote
(tests/data/recorded/claude-code-hooks/push-after-failed-tests: the tests fail, the
fix is pushed, and the agent says "All tests pass and I pushed the fix") in the order
its hooks ran them, each through the whole hook (:func:`roadcheck.guard.hooks.run`:
parse, the sealed session store, the guard, the answer). The Codex and Gemini CLI
inputs follow their schemas (tests/data/hooks/README.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roadcheck.guard import hooks
from roadcheck.guard.claude_code import parse_args
from roadcheck.guard.store import GuardStore

from ..conftest import DATA, ROOT

RECORDED = DATA / "recorded" / "claude-code-hooks" / "push-after-failed-tests"
TRANSCRIPT = DATA / "recorded" / "claude-code" / "push-after-failed-tests.jsonl"
SUBAGENT = DATA / "hooks" / "stop-gate" / "subagent-no-calls.jsonl"
#: The hooks that ran before the turn ended, in their order.
RAN = ["UserPromptSubmit-1", "PreToolUse-1", "PostToolUseFailure-1", "PreToolUse-2",
       "PostToolUse-1"]
SPEC = """\
mandatory_checkpoints:
  - {checkpoint_id: ok, must_precede: deploy}
"""
CONTRACT = "builtin:coding-agent"


def _recorded(name: str, **change: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RECORDED / f"{name}.json").read_text())
    doc.update(change)
    return {k: v for k, v in doc.items() if v is not None}


class Hook:
    """One CLI's hook command with ``--contract``, over one state directory."""

    def __init__(self, tmp: Path, cli: str = "claude-code", contract: str | None = CONTRACT,
                 limit: int | None = None) -> None:
        self.spec = tmp / "spec.yaml"
        self.spec.write_text(SPEC)
        self.state = tmp / "state"
        self.adapter = hooks.load(cli)
        self.contract, self.limit = contract, limit

    def __call__(self, doc: dict[str, Any]) -> hooks.HookAnswer:
        return hooks.run(self.adapter, json.dumps(doc).encode(), str(self.spec),
                         str(self.state), no_key=True, contract=self.contract,
                         max_reprompts=self.limit)

    def records(self, session: str) -> list[Any]:
        store = GuardStore(str(self.state), str(self.spec), no_key=True)
        with store.session(session) as live:
            return list(live.guard.records)


def _stop(answer: hooks.HookAnswer) -> dict[str, Any]:
    assert answer.exit == 0, answer
    return json.loads(answer.stdout) if answer.stdout.strip() else {}


def _played(hook: Hook) -> None:
    for name in RAN:
        answer = hook(_recorded(name))
        assert answer.exit == 0, (name, answer)


class TestClaudeCodeStop:
    def test_a_passing_test_claimed_after_a_failing_run_is_held_with_the_reason(
            self, tmp_path: Path) -> None:
        hook = Hook(tmp_path)
        _played(hook)
        out = _stop(hook(_recorded("Stop-1")))
        assert out["decision"] == "block"
        reason = out["reason"]
        assert reason.startswith("roadcheck guard: you said 'All tests pass'")
        assert "'python3 -m pytest -q' at seq 2, failed: 'Exit code 1" in reason
        assert "No module named pytest" in reason
        assert "run the call again" in reason
        assert "pushed" not in reason  # the push succeeded: that claim is backed
        assert "systemMessage" not in out

    def test_the_final_message_is_read_from_the_transcript_when_the_event_has_none(
            self, tmp_path: Path) -> None:
        hook = Hook(tmp_path)
        _played(hook)
        out = _stop(hook(_recorded("Stop-1", last_assistant_message=None,
                                   transcript_path=str(TRANSCRIPT))))
        assert out["decision"] == "block"
        assert "you said 'All tests pass'" in out["reason"]

    def test_a_backed_claim_stops_normally(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path)
        passed = _recorded("PostToolUseFailure-1", hook_event_name="PostToolUse", error=None,
                           is_interrupt=None,
                           tool_response={"stdout": "3 passed in 0.02s", "stderr": "",
                                          "interrupted": False})
        for doc in (_recorded("UserPromptSubmit-1"), _recorded("PreToolUse-1"), passed,
                    _recorded("PreToolUse-2"), _recorded("PostToolUse-1")):
            assert hook(doc).exit == 0
        answer = hook(_recorded("Stop-1"))
        assert answer == hooks.HookAnswer(0)

    def test_the_pr_number_claimed_must_be_in_the_output_of_the_call(
            self, tmp_path: Path) -> None:
        hook = Hook(tmp_path)
        pr = {"tool_name": "Bash", "tool_input": {"command": "gh pr create --fill"},
              "tool_use_id": "toolu_09"}
        assert hook(_recorded("PreToolUse-1", **pr)).exit == 0
        assert hook(_recorded("PostToolUse-1", **pr, tool_response={
            "stdout": "https://github.com/ann/shop/pull/12", "stderr": ""})).exit == 0
        assert hook(_recorded("Stop-1", last_assistant_message="I opened PR #12.")) \
            == hooks.HookAnswer(0)
        out = _stop(hook(_recorded("Stop-1", last_assistant_message="I opened PR #13.")))
        assert "has no '13' in its result" in out["reason"]

    @pytest.mark.parametrize("contract", [CONTRACT, None])
    def test_the_calls_are_kept_with_what_the_claims_read(self, tmp_path: Path,
                                                          contract: str | None) -> None:
        hook = Hook(tmp_path, contract=contract)
        write = {"tool_name": "Write", "tool_use_id": "toolu_05",
                 "tool_input": {"file_path": "notes/todo.md", "content": "x" * 5000},
                 "tool_response": {"filePath": "notes/todo.md"}}
        assert hook(_recorded("PostToolUse-1", **write)).exit == 0
        [call] = [r for r in hook.records(_recorded("Stop-1")["session_id"])
                  if r.get("event") == "action"]
        if contract is None:  # as before: no rule binds the arguments
            assert "args" not in call and "result" not in call
        else:
            assert call["args"]["file_path"] == "notes/todo.md"
            assert len(call["args"]["content"]) == hooks.KEPT_TEXT
            assert call["result"] == '{"filePath":"notes/todo.md"}'
            assert hook(_recorded("Stop-1", last_assistant_message=(
                "I created the file `notes/todo.md`."))) == hooks.HookAnswer(0)

    def test_without_a_contract_the_stop_is_not_judged(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path, contract=None)
        _played(hook)
        assert hook(_recorded("Stop-1")) == hooks.HookAnswer(0)


class TestBound:
    def test_past_the_limit_the_stop_happens_and_the_person_is_warned(
            self, tmp_path: Path) -> None:
        hook = Hook(tmp_path)
        _played(hook)
        first = _stop(hook(_recorded("Stop-1")))
        second = _stop(hook(_recorded("Stop-1", stop_hook_active=True)))
        third = _stop(hook(_recorded("Stop-1", stop_hook_active=True)))
        assert first["decision"] == second["decision"] == "block"
        assert "decision" not in third and "reason" not in third
        assert third["systemMessage"].startswith(
            "roadcheck guard: let the agent stop after 2 re-prompts this turn")
        assert "you said 'All tests pass'" in third["systemMessage"]
        # the count is the sealed session's: each held stop names the claims it failed
        stops = [r for r in hook.records(_recorded("Stop-1")["session_id"])
                 if r.get("yields_turn")]
        assert [r.get("held") for r in stops] == [["tests-pass"], ["tests-pass"], None]
        # a new turn starts a new count
        assert hook(_recorded("UserPromptSubmit-1", prompt="try again")).exit == 0
        assert _stop(hook(_recorded("Stop-1")))["decision"] == "block"

    @pytest.mark.parametrize(("limit", "held"), [(0, 0), (1, 1), (3, 3)])
    def test_the_limit_is_an_option(self, tmp_path: Path, limit: int, held: int) -> None:
        hook = Hook(tmp_path, limit=limit)
        _played(hook)
        answers = [_stop(hook(_recorded("Stop-1", stop_hook_active=i > 0)))
                   for i in range(limit + 1)]
        assert [a.get("decision") for a in answers] == ["block"] * held + [None]
        assert "systemMessage" in answers[-1]

    def test_stop_hook_active_counts_a_block_the_guard_did_not_record(
            self, tmp_path: Path) -> None:
        """Another stop hook held the agent: the CLI says so, and that counts."""
        hook = Hook(tmp_path, limit=1)
        _played(hook)
        out = _stop(hook(_recorded("Stop-1", stop_hook_active=True)))
        assert "decision" not in out and "systemMessage" in out

    def test_a_missing_final_message_is_held_but_counts_toward_the_limit(
            self, tmp_path: Path) -> None:
        hook = Hook(tmp_path, limit=1)
        _played(hook)
        bare = _recorded("Stop-1", last_assistant_message=None,
                         transcript_path=str(tmp_path / "gone.jsonl"))
        first = _stop(hook(bare))
        assert first["decision"] == "block"
        assert "your final message could not be read" in first["reason"]
        second = _stop(hook({**bare, "stop_hook_active": True}))
        assert "decision" not in second
        assert "could not be read" in second["systemMessage"]


class TestFailsClosed:
    def test_a_contract_that_cannot_be_read_is_an_error_answer(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path, contract=str(tmp_path / "missing.yaml"))
        _played(hook)  # the calls do not read the contract
        answer = hook(_recorded("Stop-1"))
        assert answer.exit == 2 and answer.stdout == ""
        assert "missing.yaml" in answer.stderr and "cannot read contract" in answer.stderr

    def test_a_contract_with_no_claims_is_an_error_answer(self, tmp_path: Path) -> None:
        contract = tmp_path / "fields.yaml"
        contract.write_text("required: {status: string}\n")
        hook = Hook(tmp_path, contract=str(contract))
        answer = hook(_recorded("Stop-1"))
        assert answer.exit == 2 and "looks for no claim" in answer.stderr

    def test_an_unknown_builtin_is_an_error_answer(self, tmp_path: Path) -> None:
        answer = Hook(tmp_path, contract="builtin:nope")(_recorded("Stop-1"))
        assert answer.exit == 2 and "no built-in contract 'nope'" in answer.stderr


class TestSubagentStop:
    def _subagent(self, **change: Any) -> dict[str, Any]:
        doc = _recorded("Stop-1", hook_event_name="SubagentStop", agent_id="a1",
                        agent_type="general-purpose", agent_transcript_path=str(SUBAGENT),
                        last_assistant_message="I ran the full suite: all 42 tests pass.")
        doc.update(change)
        return doc

    def test_a_subagent_that_reports_work_with_no_call_is_held(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path)
        out = _stop(hook(self._subagent()))
        assert out["decision"] == "block"
        assert "records no call at all" in out["reason"]
        assert "all 42 tests pass" in out["reason"]

    def test_its_own_calls_are_looked_at_not_the_main_agents(self, tmp_path: Path) -> None:
        """The main session ran a passing test; the subagent ran nothing."""
        hook = Hook(tmp_path)
        passed = _recorded("PostToolUseFailure-1", hook_event_name="PostToolUse", error=None,
                           is_interrupt=None, tool_response={"stdout": "3 passed"})
        assert hook(passed).exit == 0
        assert hook(_recorded("Stop-1", last_assistant_message="All tests pass.")) \
            == hooks.HookAnswer(0)
        out = _stop(hook(self._subagent()))
        assert "records no call at all" in out["reason"]

    def test_its_message_is_read_from_its_own_transcript(self, tmp_path: Path) -> None:
        out = _stop(Hook(tmp_path)(self._subagent(last_assistant_message=None)))
        assert "you said 'all 42 tests pass'" in out["reason"]

    def test_an_unreadable_transcript_of_its_own_holds_it_within_the_bound(
            self, tmp_path: Path) -> None:
        hook = Hook(tmp_path, limit=1)
        gone = self._subagent(agent_transcript_path=str(tmp_path / "gone.jsonl"))
        first = _stop(hook(gone))
        assert first["decision"] == "block"
        assert "your own transcript could not be read" in first["reason"]
        assert "gone.jsonl" in first["reason"]
        last = _stop(hook({**gone, "stop_hook_active": True}))
        assert "decision" not in last and "could not be read" in last["systemMessage"]

    def test_its_bound_is_its_own(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path, limit=1)
        assert _stop(hook(self._subagent()))["decision"] == "block"
        last = _stop(hook(self._subagent(stop_hook_active=True)))
        assert "decision" not in last and "records no call" in last["systemMessage"]


class TestOtherCLIs:
    def test_codex_stop_is_held_in_its_format(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path, "codex")
        base = json.loads((DATA / "hooks" / "codex" / "post.json").read_text())
        assert hook(base).exit == 0
        stop = json.loads((DATA / "hooks" / "codex" / "stop.json").read_text())
        out = _stop(hook({**stop, "last_assistant_message": "All tests pass; done."}))
        assert set(out) == {"decision", "reason"} and out["decision"] == "block"
        assert "no call that would back it (calls made: Bash)" in out["reason"]
        assert hook({**stop, "last_assistant_message": "Listed the files."}) \
            == hooks.HookAnswer(0)

    @pytest.mark.parametrize("response", [
        # exec_command's header before "Output:"
        "Chunk ID: 1\nWall time: 0.4 seconds\nProcess exited with code 1\nOutput:\n1 failed\n",
        # the shell tool's plain form
        "Exit code: 1\nWall time: 0.4 seconds\nOutput:\n1 failed\n",
        # the shell tool's JSON form
        json.dumps({"output": "1 failed\n", "metadata": {"exit_code": 1}}),
    ])
    def test_a_codex_test_run_whose_output_says_it_failed_holds_the_stop(
            self, tmp_path: Path, response: str) -> None:
        """Codex has no failure event: a shell call's exit status is in its output text, as
        in its session files, and a non-zero one makes the run no backing for 'tests pass'."""
        hook = Hook(tmp_path, "codex")
        post = json.loads((DATA / "hooks" / "codex" / "post.json").read_text())
        assert hook({**post, "tool_input": {"command": "pytest -q"},
                     "tool_response": response}).exit == 0
        stop = json.loads((DATA / "hooks" / "codex" / "stop.json").read_text())
        out = _stop(hook({**stop, "last_assistant_message": "All tests pass."}))
        assert out["decision"] == "block"
        assert "'pytest -q' at seq 1, failed" in out["reason"]

    def test_a_codex_test_run_that_exited_0_backs_the_claim(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path, "codex")
        post = json.loads((DATA / "hooks" / "codex" / "post.json").read_text())
        assert hook({**post, "tool_input": {"command": "pytest -q"},
                     "tool_response": "Exit code: 0\nOutput:\n3 passed\n"}).exit == 0
        stop = json.loads((DATA / "hooks" / "codex" / "stop.json").read_text())
        assert hook({**stop, "last_assistant_message": "All tests pass."}) \
            == hooks.HookAnswer(0)

    def test_a_gemini_test_run_that_exited_non_zero_holds_the_stop(self, tmp_path: Path) -> None:
        """Gemini CLI sets ``tool_response.error`` only when a command cannot run; a test
        run that exits 1 says so in ``llmContent`` (``Exit Code: 1``), as its shell tool
        writes it: that run is failed, and backs no 'tests pass'."""
        hook = Hook(tmp_path, "gemini")
        post = json.loads((DATA / "hooks" / "gemini" / "post.json").read_text())
        content = ("Command: npm test\nDirectory: (root)\nOutput: 1 failing\nError: (none)\n"
                   "Exit Code: 1\nSignal: (none)\nBackground PIDs: (none)\n"
                   "Process Group PGID: 4242")
        failed = {**post, "tool_input": {"command": "npm test"},
                  "tool_response": {"llmContent": content, "returnDisplay": "1 failing"}}
        assert hook(failed).exit == 0
        stop = json.loads((DATA / "hooks" / "gemini" / "stop.json").read_text())
        out = _stop(hook({**stop, "prompt_response": "The tests pass now."}))
        assert out["decision"] == "deny"
        assert "'npm test' at seq 1, failed" in out["reason"]
        passed = {**failed, "tool_response": {"llmContent": content.replace(
            "Exit Code: 1", "Exit Code: 0"), "returnDisplay": "3 passing"}}
        (tmp_path / "two").mkdir()
        hook2 = Hook(tmp_path / "two", "gemini")
        assert hook2(passed).exit == 0
        assert hook2({**stop, "prompt_response": "The tests pass now."}).stdout == "{}\n"

    def test_gemini_after_agent_is_denied_in_its_format(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path, "gemini")
        post = json.loads((DATA / "hooks" / "gemini" / "post.json").read_text())
        failed = {**post, "tool_input": {"command": "npm test"},
                  "tool_response": {"llmContent": "1 failing", "error": "Exit code: 1"}}
        assert hook(failed).exit == 0
        stop = json.loads((DATA / "hooks" / "gemini" / "stop.json").read_text())
        out = _stop(hook({**stop, "prompt_response": "The tests pass now."}))
        assert out["decision"] == "deny"
        assert "'npm test' at seq 1, failed: 'Exit code: 1'" in out["reason"]
        assert hook({**stop, "prompt_response": "One test still fails."}).stdout == "{}\n"


class TestCommandLine:
    def test_the_options_are_read_without_click(self) -> None:
        options = parse_args(["--spec", "s.yaml", "--contract", CONTRACT,
                              "--max-reprompts", "3"])
        assert options is not None
        assert options["contract"] == CONTRACT and options["max_reprompts"] == 3
        assert parse_args(["--spec", "s.yaml", "--max-reprompts", "x"]) is None
        assert parse_args(["--spec", "s.yaml", "--contract", "c.yaml"],
                          frozenset({"--approver"})) is None

    def test_the_hook_command_holds_the_stop(self, tmp_path: Path) -> None:
        spec = tmp_path / "spec.yaml"
        spec.write_text(SPEC)
        command = [sys.executable, "-m", "roadcheck", "guard", "claude-code", "--spec",
                   str(spec), "--state-dir", str(tmp_path / "state"), "--no-key",
                   "--contract", CONTRACT, "--max-reprompts", "1"]
        for name in [*RAN, "Stop-1"]:
            out = subprocess.run(command, input=(RECORDED / f"{name}.json").read_bytes(),
                                 capture_output=True, cwd=ROOT, timeout=60)
            assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["decision"] == "block"

    def test_a_bad_limit_is_refused_by_click(self, tmp_path: Path) -> None:
        spec = tmp_path / "spec.yaml"
        spec.write_text(SPEC)
        out = subprocess.run([sys.executable, "-m", "roadcheck", "guard", "gemini", "--spec",
                              str(spec), "--contract", CONTRACT, "--max-reprompts", "-1"],
                             input=b"{}", capture_output=True, cwd=ROOT, timeout=60)
        assert out.returncode == 2 and b"--max-reprompts" in out.stderr


class TestResident:
    """The daemon's answer seam passes --contract and --max-reprompts on: a stop the
    process path holds is held when the resident one answers it."""

    def test_the_resident_path_holds_the_same_stop(self, tmp_path: Path) -> None:
        from roadcheck.guard.answer import Stores, answer

        (tmp_path / "spec.yaml").write_text(SPEC)
        stores = Stores()
        try:
            for where, store in (("resident", stores), ("process", None)):
                args = ["--spec", "spec.yaml", "--state-dir", f"state-{where}", "--no-key",
                        "--contract", CONTRACT, "--max-reprompts", "1"]
                for name in RAN:
                    got = answer("claude-code", args, json.dumps(_recorded(name)).encode(),
                                 store, cwd=str(tmp_path))
                    assert got.exit == 0, (where, name, got)
                stop = answer("claude-code", args, json.dumps(_recorded("Stop-1")).encode(),
                              store, cwd=str(tmp_path))
                out = json.loads(stop.stdout)
                assert out["decision"] == "block", (where, out)
                assert "you said 'All tests pass'" in out["reason"]
        finally:
            stores.close()
