"""Claude Code transcripts and Codex rollouts: the readers, the command selector, real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import roadcheck
from roadcheck.ingest import ReadFailure, detect_format, load
from roadcheck.selectors import compile_selector
from roadcheck.shellcmd import command_text, matches_words

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "coding"
EXAMPLES = ROOT / "examples" / "frameworks"

PUSH_SPEC = {
    "mandatory_checkpoints": [{
        "checkpoint_id": "push_ok",
        "must_precede": {"action_type": "Bash", "command": {"words": ["git", "push"]}}}],
    "derive": [{"checkpoint_id": "push_ok",
                "when": {"event": "message", "role": "user", "text": {"regex": "(?i)yes"}}}],
}


def _entry(uuid, parent, typ, content, **extra):
    rec = {"parentUuid": parent, "isSidechain": False, "sessionId": "s1", "type": typ,
           "message": {"role": typ, "content": content}, "uuid": uuid,
           "timestamp": "2026-03-02T10:00:00.000Z"}
    rec.update(extra)
    return json.dumps(rec)


def _bash(call_id, command):
    return [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}]


def _result(call_id, text, error=False):
    block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
    if error:
        block["is_error"] = True
    return [block]


def _read(tmp_path, lines, name="s.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    fmt, entries = load(str(path))
    return fmt, list(entries)


def _verdict(entries, spec=PUSH_SPEC):
    (traj,) = entries
    assert not isinstance(traj, ReadFailure), traj
    return roadcheck.replay(spec, [e.to_dict() for e in traj.events]).results[0].verdict


# -- Claude Code ------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "verdict", "code"), [("approved", "PASS", 0),
                                                     ("missing", "BLOCK", 1)])
def test_claude_code_example_push_needs_approval(name, verdict, code):
    from click.testing import CliRunner

    from roadcheck.cli import cli

    d = EXAMPLES / "claude-code"
    res = CliRunner().invoke(cli, ["replay", str(d / "spec.yaml"), str(d / f"{name}.jsonl")])
    assert res.exit_code == code, res.output
    assert f"verdict : {verdict}" in res.output


def test_bash_call_becomes_an_action_with_its_command_and_result(tmp_path):
    fmt, entries = _read(tmp_path, [
        _entry("u1", None, "user", "push please"),
        _entry("a1", "u1", "assistant", _bash("t1", "cd x && git push")),
        _entry("r1", "a1", "user", _result("t1", "pushed")),
    ])
    assert fmt == "claude-code"
    actions = [e for e in entries[0].events if e.kind == "action"]
    assert [(a.agent, a.get("action_type"), a.get("command"), a.get("call_id"), a.get("result"))
            for a in actions] == [("claude", "Bash", "cd x && git push", "t1", "pushed")]


def test_abandoned_branch_approval_does_not_count(tmp_path):
    # The user said "yes" on a branch, then rewound and re-prompted without approving.
    lines = [
        _entry("u1", None, "user", "commit"),
        _entry("a1", "u1", "assistant", [{"type": "text", "text": "Push now?"}]),
        _entry("u2", "a1", "user", "yes"),
        _entry("u3", "a1", "user", "just push"),
        _entry("a2", "u3", "assistant", _bash("t1", "git push")),
        _entry("r1", "a2", "user", _result("t1", "ok")),
    ]
    _, entries = _read(tmp_path, lines)
    texts = [e.get("text") for e in entries[0].events if e.kind == "message"]
    assert "yes" not in texts and "just push" in texts
    assert _verdict(entries) == "BLOCK"
    # The same transcript with the approval on the live chain passes.
    lines[3] = _entry("u3", "u2", "user", "just push")
    _, entries = _read(tmp_path, lines)
    assert _verdict(entries) == "PASS"


def test_a_call_that_ran_on_an_abandoned_branch_is_still_an_action(tmp_path):
    _, entries = _read(tmp_path, [
        _entry("u1", None, "user", "go"),
        _entry("a1", "u1", "assistant", _bash("t1", "git push")),
        _entry("r1", "a1", "user", _result("t1", "pushed")),
        _entry("u2", None, "user", "start over"),
        _entry("a2", "u2", "assistant", _bash("t2", "git status")),
    ])
    cmds = [e.get("command") for e in entries[0].events if e.kind == "action"]
    assert cmds == ["git push", "git status"]
    assert _verdict(entries) == "BLOCK"


def test_parallel_calls_answered_off_the_chain_keep_their_results():
    _, entries = load(str(DATA / "claude-code" / "tool_heavy.jsonl"))
    (traj,) = list(entries)
    actions = [e for e in traj.events if e.kind == "action"]
    assert len(actions) == 6
    assert all("result" in a.data or "error" in a.data for a in actions)


def test_errored_tool_is_marked_and_a_refused_tool_never_ran(tmp_path):
    _, entries = _read(tmp_path, [
        _entry("u1", None, "user", "yes, push"),
        _entry("a1", "u1", "assistant", _bash("t1", "git push")),
        _entry("r1", "a1", "user", _result("t1", "fatal: no remote", error=True)),
        _entry("a2", "r1", "assistant", _bash("t2", "rm -rf build")),
        _entry("r2", "a2", "user", _result(
            "t2", "The user doesn't want to proceed with this tool use. The tool use was "
                  "rejected.", error=True)),
    ])
    actions = [e for e in entries[0].events if e.kind == "action"]
    assert [(a.get("command"), a.get("error"), "result" in a.data) for a in actions] == [
        ("git push", "fatal: no remote", False)]


def test_errored_push_still_needs_its_approval(tmp_path):
    _, entries = _read(tmp_path, [
        _entry("u1", None, "user", "push"),
        _entry("a1", "u1", "assistant", _bash("t1", "git push")),
        _entry("r1", "a1", "user", _result("t1", "fatal: no remote", error=True)),
    ])
    assert _verdict(entries) == "BLOCK"


def test_real_rejections_drop_the_refused_calls():
    _, entries = load(str(DATA / "claude-code" / "claude_with_rejection.jsonl"))
    (traj,) = list(entries)
    refused = {"toolu_r002", "toolu_r004"}
    assert not refused & {e.get("call_id") for e in traj.events if e.kind == "action"}


def test_subagent_task_is_a_handoff_and_questions_are_checkpoints():
    _, entries = load(str(DATA / "claude-code" / "subagent.jsonl"))
    (traj,) = list(entries)
    handoffs = [e for e in traj.events if e.kind == "handoff"]
    assert [(h.get("from_agent"), h.get("to_agent")) for h in handoffs] == [("claude", "Plan")]
    assert "prompt" in handoffs[0].get("payload")
    cps = [(e.get("checkpoint_id"), e.get("confirmed_by")) for e in traj.events
           if e.kind == "checkpoint"]
    assert cps == [("AskUserQuestion", "user"), ("ExitPlanMode", "user")]


def test_subagent_side_file_is_its_own_agent():
    _, entries = load(str(DATA / "claude-code" / "agent-aac57f5.jsonl"))
    (traj,) = list(entries)
    agents = {e.agent for e in traj.events if e.kind == "action"}
    assert agents == {"agent-aac57f5"}


SIDECHAINS = ROOT / "tests" / "data" / "claims" / "sessions" / "claude-code-viewer"


@pytest.mark.parametrize(("name", "begins"), [
    ("5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl.gz", [16, 26]),
    ("fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl.gz", [16, 38, 125, 229, 295]),
])
def test_subagent_runs_written_into_the_main_transcript(name, begins):
    """Claude Code 1.0 wrote each subagent's run into the main transcript: each is read
    as a run of its own, whose prompt is a Task call's of the main thread and whose last
    words are that call's result; the main run holds none of the subagents' calls."""
    fmt, entries = load(str(SIDECHAINS / name))
    runs = list(entries)
    assert fmt == "claude-code"
    assert not [r for r in runs if isinstance(r, ReadFailure)]
    path = str(SIDECHAINS / name)
    assert [r.id for r in runs] == [f"{path}#main"] + [f"{path}#sidechain-{n}" for n in begins]
    main, *side = runs
    assert {e.agent for e in main.events if e.kind == "action"} == {"claude"}
    tasks = {e.get("args")["prompt"]: e for e in main.events
             if e.action_type == "Task" and "prompt" in e.get("args")}
    for run in side:
        said = [e for e in run.events if e.kind == "message"]
        assert said[0].get("role") == "user"
        task = tasks.pop(said[0].get("text"))
        assert [e for e in said if e.get("role") == "assistant"][-1].get("text") == \
            task.get("result")
        assert {e.agent for e in run.events if e.kind == "action"} == {"subagent"}
        assert {e.line for e in run.events if e.line} <= set(range(begins[side.index(run)],
                                                                   10**6))
    assert tasks == {}  # every Task that ran has its run


def test_a_run_of_a_transcript_with_subagent_runs_is_named_as_a_trace():
    from roadcheck.acceptance import load_session
    from roadcheck.errors import TraceError

    path = str(SIDECHAINS / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl.gz")
    run = load_session(f"{path}#sidechain-26")
    assert run.id == f"{path}#sidechain-26" and run.events[0].get("role") == "user"
    with pytest.raises(TraceError, match=r"holds 3 \(main, sidechain-16, sidechain-26\); "
                                         r"name one as PATH#RUN"):
        load_session(path)


@pytest.mark.parametrize("name", sorted(p.name for p in (DATA / "claude-code").glob("*.jsonl")))
def test_real_claude_code_files_read(name):
    fmt, entries = load(str(DATA / "claude-code" / name))
    assert fmt == "claude-code"
    (traj,) = list(entries)
    assert not isinstance(traj, ReadFailure), traj.error
    assert traj.events[-1].kind == "final"


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "unparseable JSON"),
    (json.dumps({"type": "assistant", "uuid": "x", "parentUuid": "a1", "sessionId": "s1"}),
     "has no 'message' object"),
    (_entry("x", "a1", "user", _result("nope", "ok")), "which no earlier tool call made"),
    (_entry("x", "a1", "assistant", [{"type": "tool_use", "name": "Bash", "input": {}}]),
     "has no 'id'"),
    (_entry("x", "a1", "assistant", [{"type": "tool_uze", "id": "t", "name": "Bash"}]),
     "unknown tool block type"),
])
def test_malformed_line_is_an_error_naming_file_and_line(tmp_path, line, message):
    _, entries = _read(tmp_path, [
        _entry("u1", None, "user", "hi"),
        _entry("a1", "u1", "assistant", [{"type": "text", "text": "hello"}]),
        line,
    ])
    (failure,) = entries
    assert isinstance(failure, ReadFailure)
    assert failure.error.line == 3
    assert message in str(failure.error)
    assert str(failure.error).startswith(f"{tmp_path / 's.jsonl'}:3: ")


# -- Codex ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "verdict"), [("approved", "PASS"), ("missing", "BLOCK"),
                                              ("code-mode", "BLOCK")])
def test_codex_example_push_needs_escalation_approval(name, verdict):
    spec = roadcheck.load_spec(EXAMPLES / "codex" / "spec.yaml")
    run = roadcheck.replay(spec, [str(EXAMPLES / "codex" / f"{name}.jsonl")])
    assert run.results[0].verdict == verdict


def test_codex_shell_call_carries_the_command_line():
    _, entries = load(str(EXAMPLES / "codex" / "approved.jsonl"))
    (traj,) = list(entries)
    kinds = [(e.kind, e.get("command") or e.get("checkpoint_id")) for e in traj.events
             if e.kind in ("action", "checkpoint")]
    assert kinds == [("action", "git commit -am 'Fix typo'"),
                     ("checkpoint", "codex-approval"), ("action", "git push origin main")]


def _codex(tmp_path, *payloads, policy="on-request"):
    lines = [json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "c1"}}),
             json.dumps({"timestamp": "t", "type": "turn_context",
                         "payload": {"approval_policy": policy}})]
    lines += [json.dumps({"timestamp": "t", "type": "response_item", "payload": p})
              for p in payloads]
    return _read(tmp_path, lines, "rollout.jsonl")


def _shell(call_id, cmd, **extra):
    return {"type": "function_call", "name": "shell", "call_id": call_id,
            "arguments": json.dumps({"command": ["bash", "-lc", cmd], **extra})}


def test_codex_escalation_under_never_policy_is_no_approval(tmp_path):
    fmt, entries = _codex(tmp_path,
                          _shell("c1", "git push", sandbox_permissions="require_escalated"),
                          {"type": "function_call_output", "call_id": "c1", "output": "ok"},
                          policy="never")
    assert fmt == "codex"
    assert not [e for e in entries[0].events if e.kind == "checkpoint"]


def test_codex_declined_call_never_ran_and_failed_call_is_marked(tmp_path):
    _, entries = _codex(
        tmp_path,
        _shell("c1", "git push", sandbox_permissions="require_escalated"),
        {"type": "function_call_output", "call_id": "c1",
         "output": "exec command rejected by user"},
        _shell("c2", "make test"),
        {"type": "function_call_output", "call_id": "c2",
         "output": json.dumps({"output": "boom", "metadata": {"exit_code": 2}})})
    actions = [(e.get("command"), e.get("error")) for e in entries[0].events if e.kind == "action"]
    assert actions == [("make test", "boom")]


@pytest.mark.parametrize(("output", "failed"), [
    # Codex 0.40: the sandbox stopped the command; the output is a plain sentence.
    ("failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error, "
     "exit code: 1, stdout: , stderr: zsh:1: operation not permitted", True),
    # exec_command: a header, then the command's own output after the "Output:" line.
    ("Chunk ID: de4b53\nWall time: 4.1190 seconds\nProcess exited with code 2\n"
     "Original token count: 34\nOutput:\nrg: node_modules: No such file\n", True),
    ("Chunk ID: a642fa\nWall time: 0.0000 seconds\nProcess exited with code 0\n"
     "Original token count: 0\nOutput:\n", False),
    ("Exit code: 1\nWall time: 0.2 seconds\nOutput:\nboom\n", True),
    # What the command printed is not the header, whatever it says.
    ("Chunk ID: 1\nProcess exited with code 0\nOutput:\nProcess exited with code 1\n", False),
    ("Process exited with code 1", False),
    ("the build failed in sandbox mode", False),
])
def test_codex_plain_output_that_reports_a_failure_is_an_error(tmp_path, output, failed):
    _, entries = _codex(tmp_path, _shell("c1", "make"),
                        {"type": "function_call_output", "call_id": "c1", "output": output})
    (action,) = [e for e in entries[0].events if e.kind == "action"]
    assert ("error" in action.data, "result" in action.data) == (failed, not failed)
    assert action.get("error" if failed else "result") == output


def test_codex_015x_state_lines_are_read_past(tmp_path):
    """Codex 0.15x also writes ``world_state`` and ``token_usage_record`` lines: no calls."""
    lines = [
        json.dumps({"timestamp": "t", "ordinal": 0, "type": "session_meta",
                    "payload": {"id": "01a0a04a-bfb2-7e12-8e42-9bdd2783d9d2",
                                "originator": "codex_exec", "cli_version": "0.152.1"}}),
        json.dumps({"timestamp": "t", "ordinal": 1, "type": "world_state",
                    "payload": {"full": True, "state": {"model": "gpt-5.6-luna"}}}),
        json.dumps({"timestamp": "t", "ordinal": 2, "type": "turn_context",
                    "payload": {"approval_policy": "never"}}),
        json.dumps({"timestamp": "t", "ordinal": 3, "type": "response_item",
                    "payload": {"type": "function_call", "name": "exec_command",
                                "arguments": json.dumps({"cmd": "ls -la"}), "call_id": "call_1"}}),
        json.dumps({"timestamp": "t", "ordinal": 4, "type": "token_usage_record",
                    "payload": {"response_id": "resp_0", "usage": {"input_tokens": 1000}}}),
        json.dumps({"timestamp": "t", "ordinal": 5, "type": "response_item",
                    "payload": {"type": "function_call_output", "call_id": "call_1",
                                "output": "Chunk ID: 2f706d\nProcess exited with code 0\n"
                                          "Output:\nREADME.md\n"}}),
    ]
    fmt, entries = _read(tmp_path, lines, "rollout.jsonl")
    (traj,) = entries
    assert fmt == "codex" and not isinstance(traj, ReadFailure), traj
    assert [(e.get("command"), "result" in e.data) for e in traj.events
            if e.kind == "action"] == [("ls -la", True)]


def test_codex_unknown_line_type_is_an_error(tmp_path):
    _codex(tmp_path, _shell("c1", "ls"))
    path = tmp_path / "rollout.jsonl"
    path.write_text(path.read_text() + json.dumps(
        {"timestamp": "t", "type": "world_view", "payload": {}}) + "\n")
    _, entries = load(str(path))
    (failure,) = list(entries)
    assert isinstance(failure, ReadFailure)
    assert failure.error.line == 4 and "unknown line type 'world_view'" in str(failure.error)


def test_codex_unanswered_call_is_kept(tmp_path):
    _, entries = _codex(tmp_path, _shell("c1", "git push"))
    assert [e.get("command") for e in entries[0].events if e.kind == "action"] == ["git push"]


def test_codex_malformed_line_is_an_error(tmp_path):
    _, entries = _codex(tmp_path, {"type": "function_call_output", "call_id": "zz", "output": ""})
    (failure,) = entries
    assert isinstance(failure, ReadFailure)
    assert failure.error.line == 3 and "no earlier call" in str(failure.error)


@pytest.mark.parametrize("name", sorted(p.name for p in (DATA / "codex").glob("*.jsonl")))
def test_real_codex_files_read(name):
    fmt, entries = load(str(DATA / "codex" / name))
    assert fmt == "codex"
    (traj,) = list(entries)
    assert not isinstance(traj, ReadFailure), traj.error
    assert any(e.kind == "action" for e in traj.events)


def test_detection_leaves_other_formats_alone():
    assert detect_format(b'{"seq": 1, "event": "final", "task_success": true}\n') == "native"
    assert detect_format((EXAMPLES / "claude-code" / "approved.jsonl").read_bytes()) == \
        "claude-code"
    assert detect_format((EXAMPLES / "codex" / "approved.jsonl").read_bytes()) == "codex"


# -- the command selector -------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "words", "hit"), [
    ("git push", ["git", "push"], True),
    ("cd repo && git push origin main", ["git", "push"], True),
    ("make || git push", ["git", "push"], True),
    ("git status; git log | head", ["git", "push"], False),
    ("git log | git push", ["git", "push"], True),
    ("git -C sub push --force", ["git", "push"], True),
    ("/usr/bin/git push", ["git", "push"], True),
    ("FOO=1 sudo -u me git push", ["git", "push"], True),
    ("bash -lc 'terraform apply -auto-approve'", ["terraform", "apply"], True),
    ("echo $(git push)", ["git", "push"], True),
    ("echo 'git push'", ["git", "push"], False),
    ("rm -rf /tmp/build", ["rm", "-rf"], True),
    ("rm -r build", ["rm", "-rf"], False),
    ("ls\ngit push", ["git", "push"], True),
    # a line the shell grammar cannot read is unknown: every guarded pattern matches it
    ("git push 'unclosed", ["git", "push"], True),
    ("echo 'unclosed", ["git", "push"], True),
])
def test_command_words(line, words, hit):
    assert matches_words(line, words) is hit


def test_command_text_from_argv():
    assert command_text(["bash", "-lc", "git push"]) == "git push"
    assert command_text(["git", "commit", "-m", "a b"]) == "git commit -m 'a b'"
    assert command_text({"x": 1}) is None


@pytest.mark.parametrize(("spec", "message"), [
    ({"command": {}}, "one at a time"),
    ({"command": {"words": []}}, "must not be empty"),
    ({"command": "git push"}, "must be an object"),
    ({"command": {"words": ["git"], "regex": "x"}}, "one at a time"),
    ({"command": {"regex": "("}}, "bad regex"),
    ({"command": {"word": ["git"]}}, "unknown key 'word'"),
])
def test_command_condition_is_typed(spec, message):
    with pytest.raises(ValueError, match=message):
        compile_selector(spec)


def test_must_precede_selector_must_select_actions():
    bad = {"mandatory_checkpoints": [{"checkpoint_id": "x", "must_precede": {
        "event": "message", "command": {"words": ["git", "push"]}}}]}
    with pytest.raises(roadcheck.SpecError,
                       match=r"must_precede\.event: a guarded action selector"):
        roadcheck.parse_spec(bad)


def test_must_precede_mixes_names_and_selectors():
    spec = roadcheck.parse_spec({"mandatory_checkpoints": [{"checkpoint_id": "ok", "must_precede": [
        "deploy", {"command": {"words": ["terraform", "apply"]}}]}]})
    events = [{"seq": 1, "event": "action", "action_type": "shell",
               "command": "cd infra && terraform apply"},
              {"seq": 2, "event": "final", "task_success": True}]
    assert roadcheck.replay(spec, events).results[0].verdict == "BLOCK"
    events[0]["command"] = "terraform plan"
    assert roadcheck.replay(spec, events).results[0].verdict == "PASS"


# -- Codex code mode: the work an exec script does is written as item_completed lines -------

CODE_MODE = DATA / "built" / "codex-code-mode.jsonl"
CODEX_PUSH_SPEC = {"mandatory_checkpoints": [{
    "checkpoint_id": "codex-approval", "scope": "each", "consume": True,
    "must_precede": {"command": {"words": ["git", "push"]}}}]}


def test_codex_code_mode_push_is_an_action_and_unapproved_is_block():
    fmt, entries = load(str(CODE_MODE))
    (traj,) = list(entries)
    assert fmt == "codex" and not isinstance(traj, ReadFailure), traj
    actions = [(e.action_type, e.get("command"), e.get("parent_call_id"))
               for e in traj.events if e.kind == "action"]
    assert actions == [
        ("exec", None, None),
        ("apply_patch", None, "call_exec1"),
        ("exec_command", "git commit -am 'Fix footer typo'", "call_exec1"),
        ("exec_command", "git push origin main", "call_exec1"),
        # a direct call that an item repeats is one action, not two
        ("exec_command", "git status --short", None),
    ]
    push = next(e for e in traj.events if e.get("command") == "git push origin main")
    assert push.get("result", "").startswith("To github.com:example/shop.git")
    run = roadcheck.replay(CODEX_PUSH_SPEC, [str(CODE_MODE)])
    assert run.results[0].verdict == "BLOCK"


def _event(item):
    return json.dumps({"timestamp": "t", "type": "event_msg",
                       "payload": {"type": "item_completed", "thread_id": "c1", "turn_id": "u1",
                                   "item": item}})


def _code_mode(tmp_path, *items, after=()):
    lines = [json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "c1"}}),
             json.dumps({"timestamp": "t", "type": "response_item",
                         "payload": {"type": "custom_tool_call", "call_id": "x1", "name": "exec",
                                     "input": "await tools.exec_command({cmd: 'make'})"}})]
    lines += [_event(i) for i in items]
    lines += [json.dumps({"timestamp": "t", "type": "response_item", "payload": p})
              for p in after]
    return _read(tmp_path, lines, "rollout.jsonl")


def _cmd(iid, cmd, **extra):
    return {"type": "CommandExecution", "id": iid, "command": ["/bin/zsh", "-lc", cmd],
            "cwd": "/w", "parsed_cmd": [], "source": "agent", **extra}


def test_codex_code_mode_failed_and_declined_commands(tmp_path):
    _, entries = _code_mode(
        tmp_path,
        _cmd("e1", "make test", status="failed", exit_code=2, aggregated_output="boom"),
        _cmd("e2", "git push", status="declined"),
        _cmd("e3", "cargo build", status="completed", exit_code=101),
        # the app-server spelling of the same item
        {"type": "CommandExecution", "id": "e4", "command": "/bin/zsh -lc 'git push'",
         "status": "completed", "exitCode": 0, "aggregatedOutput": "ok"},
        _cmd("e5", "sleep 100", status="in_progress"))
    (traj,) = entries
    got = [(e.get("command"), e.get("error"), e.get("result")) for e in traj.events
           if e.kind == "action" and e.action_type == "exec_command"]
    assert got == [("make test", "boom", None),           # failed: its output is the error
                   ("cargo build", "exit code 101", None),  # a non-zero exit is a failure
                   ("/bin/zsh -lc 'git push'", None, "ok"),
                   ("sleep 100", None, None)]             # no outcome yet: it is still an action


def test_codex_item_before_its_direct_call_is_one_action(tmp_path):
    _, entries = _code_mode(
        tmp_path, _cmd("call_9", "git push", status="completed", exit_code=0,
                       aggregated_output="pushed"),
        after=[{"type": "custom_tool_call_output", "call_id": "x1", "output": "done"},
               {"type": "function_call", "name": "exec_command", "call_id": "call_9",
                "arguments": json.dumps({"cmd": "git push"})}])
    (traj,) = entries
    pushes = [e for e in traj.events if e.get("command") == "git push"]
    assert len(pushes) == 1
    # the call has no output line; the item says how it ended
    assert pushes[0].get("result") == "pushed" and pushes[0].get("parent_call_id") is None


def test_codex_code_mode_mcp_call_and_patch(tmp_path):
    _, entries = _code_mode(
        tmp_path,
        {"type": "McpToolCall", "id": "m1", "server": "mail", "tool": "send",
         "arguments": {"to": "a@example.com"}, "status": "completed",
         "result": {"content": [{"type": "text", "text": "sent"}], "isError": False}},
        {"type": "McpToolCall", "id": "m2", "server": "mail", "tool": "send",
         "arguments": {}, "status": "failed", "error": {"message": "quota"}},
        {"type": "FileChange", "id": "p1", "changes": {"a.txt": {"type": "add", "content": "x"}},
         "status": "failed", "stdout": "", "stderr": "conflict"})
    (traj,) = entries
    got = [(e.action_type, e.get("result"), e.get("error")) for e in traj.events
           if e.kind == "action" and e.get("parent_call_id") == "x1"]
    assert got == [("mcp__mail__send", [{"type": "text", "text": "sent"}], None),
                   ("mcp__mail__send", None, "quota"),
                   ("apply_patch", None, "conflict")]


@pytest.mark.parametrize(("item", "message"), [
    ({"type": "CommandExecution", "id": "e1", "status": "completed"}, "has no command"),
    ({"type": "CommandExecution", "command": ["ls"]}, "has no 'id'"),
    ({"type": "FileChange", "id": "p1", "changes": ["a"]}, "no 'changes' object"),
    ({"type": "CommandExecution", "id": "e1", "command": ["ls"], "exit_code": "0"},
     "exit code must be an integer"),
    ({"type": "McpToolCall", "id": "m1", "tool": "send"}, "'server' and 'tool'"),
])
def test_codex_malformed_item_is_an_error_naming_the_line(tmp_path, item, message):
    _, entries = _code_mode(tmp_path, item)
    (failure,) = entries
    assert isinstance(failure, ReadFailure)
    assert failure.error.line == 3 and message in str(failure.error), failure.error


def test_codex_item_completed_twice_is_an_error(tmp_path):
    _, entries = _code_mode(tmp_path, _cmd("e1", "ls", status="completed"),
                            _cmd("e1", "ls", status="completed"))
    (failure,) = entries
    assert isinstance(failure, ReadFailure)
    assert failure.error.line == 4 and "completed twice (first at line 3)" in str(failure.error)


@pytest.mark.parametrize("second", ['{"x": 1}', '["session_meta"]', '"turn_context"'])
def test_codex_first_line_giving_type_twice_is_a_duplicate_key(tmp_path, second):
    """A first line that gives ``type`` twice (the second an object, a list or another
    type) is the duplicate key it is, named with its line, never a crash in detection."""
    lines = (DATA / "codex" / "codex_golden.jsonl").read_text().splitlines()
    lines[0] = lines[0].replace('"type":"session_meta",',
                                f'"type":"session_meta","type":{second},', 1)
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for fmt in (None, "codex"):
        found, entries = load(str(path), fmt)
        (failure,) = list(entries)
        assert found == "codex" and isinstance(failure, ReadFailure), failure
        assert failure.error.line == 1
        assert "duplicate key 'type'" in failure.error.message
    run = roadcheck.replay(roadcheck.load_spec(EXAMPLES / "codex" / "spec.yaml"), [str(path)])
    [result] = run.results
    assert (result.verdict, result.headline) == ("ERROR", "bad-input")
    assert "unexpected" not in result.reasons[0].message


def test_codex_item_type_of_another_type_is_an_error(tmp_path):
    """An item_completed item whose ``type`` is an object is malformed, not a crash."""
    lines = [json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "c1"}}),
             json.dumps({"timestamp": "t", "type": "event_msg", "payload": {
                 "type": "item_completed",
                 "item": {"type": {"CommandExecution": 1}, "id": "i1"}}})]
    _, entries = _read(tmp_path, lines, "rollout.jsonl")
    (failure,) = entries
    assert isinstance(failure, ReadFailure)
    assert "'type' must be a string" in failure.error.message


CODEX_SPEC = EXAMPLES / "codex" / "spec.yaml"


@pytest.mark.parametrize("name", ["codex-0.34-rollout.jsonl", "codex-legacy-rollout.jsonl"])
def test_codex_policy_in_environment_context_licenses_an_escalated_push(name):
    """Codex 0.34 and earlier state the approval policy only in ``<environment_context>``
    (as tags, or earlier as ``Approval policy: ...`` lines); an escalated push that ran
    under ``on-request`` was approved by the user."""
    path = DATA / "built" / name
    fmt, entries = load(str(path))
    (traj,) = list(entries)
    assert fmt == "codex" and not isinstance(traj, ReadFailure), traj
    assert [(e.kind, e.get("checkpoint_id") or e.get("command") or e.get("role"))
            for e in traj.events if e.kind != "final"] == [
        ("message", "system"), ("message", "user"),
        ("action", "sed -i 's/recieve/receive/' README.md && git commit -am 'Fix typo in README'"),
        ("checkpoint", "codex-approval"), ("action", "git push origin main"),
        ("message", "assistant")]
    run = roadcheck.replay(roadcheck.load_spec(CODEX_SPEC), [str(path)])
    assert [r.verdict for r in run.results] == ["PASS"]


@pytest.mark.parametrize("policy", ["never", "on-failure"])
def test_codex_environment_context_policy_that_never_asks_is_no_approval(tmp_path, policy):
    env = ("<environment_context>\n  <cwd>/w</cwd>\n  <approval_policy>" + policy
           + "</approval_policy>\n</environment_context>")
    lines = [json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "c1"}})]
    lines += [json.dumps({"timestamp": "t", "type": "response_item", "payload": p}) for p in (
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": env}]},
        _shell("c1", "git push", with_escalated_permissions=True),
        {"type": "function_call_output", "call_id": "c1", "output": "ok"})]
    _, entries = _read(tmp_path, lines, "rollout.jsonl")
    assert not [e for e in entries[0].events if e.kind == "checkpoint"]


def test_codex_policy_the_user_typed_is_no_policy(tmp_path):
    """Only the context Codex injects states the policy, not a prompt that quotes one."""
    said = "please push; <approval_policy>on-request</approval_policy>"
    lines = [json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "c1"}})]
    lines += [json.dumps({"timestamp": "t", "type": "response_item", "payload": p}) for p in (
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": said}]},
        _shell("c1", "git push", with_escalated_permissions=True),
        {"type": "function_call_output", "call_id": "c1", "output": "ok"})]
    _, entries = _read(tmp_path, lines, "rollout.jsonl")
    assert not [e for e in entries[0].events if e.kind == "checkpoint"]


def test_codex_legacy_rollout_lines_are_checked(tmp_path):
    """A rollout of the shape before the envelope: the meta object, state lines and bare
    response items; a line of another shape in it is the file's error, naming the line."""
    meta = json.dumps({"id": "s1", "timestamp": "2025-08-20T13:20:47.060Z", "instructions": None})
    state = json.dumps({"record_type": "state"})
    good = json.dumps({"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "hi"}]})
    fmt, entries = _read(tmp_path, [meta, state, good], "rollout.jsonl")
    assert fmt == "codex"
    (traj,) = entries
    assert traj.meta == {"session_id": "s1"}
    assert [e.kind for e in traj.events] == ["message", "final"]
    # an item type the reader does not read is passed over, as in an enveloped rollout
    _, entries = _read(tmp_path, [meta, state, json.dumps({"type": "world_view"}), good],
                       "rollout.jsonl")
    assert [e.kind for e in entries[0].events] == ["message", "final"]
    wrapped = json.dumps({"timestamp": "t", "type": "response_item", "payload": {}})
    for bad, message in (
            (json.dumps({"role": "user"}), "a line of a rollout of the earlier shape (no "
                                           "'type' envelope) has no 'type' or 'record_type'"),
            (wrapped, "a 'response_item' line in a rollout of the earlier shape (no 'type' "
                      "envelope; line 1 is the session's meta object)")):
        _, entries = _read(tmp_path, [meta, state, good, bad], "rollout.jsonl")
        (failure,) = entries
        assert isinstance(failure, ReadFailure), failure
        assert (failure.error.line, failure.error.message) == (4, message)
