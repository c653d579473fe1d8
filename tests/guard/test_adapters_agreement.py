"""Every CLI's hook adapter agrees with replay on every call of the held coding sessions.

Each Claude Code and Codex session in ``tests/data/coding`` is played to each adapter
as its CLI's hooks would carry it: the user's prompts, each call before it runs and
after it ran (or failed), and the assistant handing the turn back for each assistant
message. The hook JSON goes through the adapter's ``parse``, the guard
(:func:`roadcheck.guard.hooks.apply`) and the adapter's ``answer``, and the answer is
read as the CLI reads it (:func:`~tests.guard.test_hook_conformance.lets_run`). Replay
judges the same session as that CLI records it (shell calls under the CLI's shell
tool, call ids where its hooks carry them). The calls an adapter stops must be exactly
the calls replay reports, with the same reason codes.

The hook inputs Claude Code 2.1.332 itself wrote (``tests/data/recorded``) go through
the Claude Code adapter in the order they ran, and agree with replay of the
transcript it wrote on every call that ran.

What no hook carries is left out of both: an assistant's text before a call in the
same turn (``yields_turn`` false), the checkpoints a reader finds in a transcript.
A call approved at a CLI's own prompt is what replay cannot see, so none is recorded
here: the sessions are judged as if every asked call were refused at the prompt and
then run anyway, which is what replay reports.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from typing import Any

import pytest

from roadcheck.conformance import Spec, load_spec, parse_spec, replay_trajectory
from roadcheck.events import Event, Trajectory
from roadcheck.guard import Guard, hooks
from roadcheck.ingest import ReadFailure, load
from roadcheck.reasons import Reason

from ..conftest import DATA, EXAMPLES
from .test_hook_conformance import lets_run

CLIS = sorted(hooks.ADAPTERS)
SHELL = {"claude-code": "Bash", "codex": "Bash", "gemini": "run_shell_command",
         "opencode": "bash", "copilot": "bash", "cursor": "Shell", "cline": "execute_command"}
AGENT = {"claude-code": "claude", "codex": "codex", "gemini": "gemini", "opencode": "opencode",
         "copilot": "copilot", "cursor": "cursor", "cline": "cline"}
#: The CLIs whose hooks carry a call id.
CALL_IDS = {"claude-code", "codex", "opencode", "cursor"}
#: The CLIs whose hooks tell a failed call apart, and whose turn end carries its text.
FAILURES = {"claude-code", "gemini", "opencode", "copilot", "cursor", "cline"}
STOP_TEXT = {"claude-code", "codex", "gemini", "opencode", "cursor"}
SHELLS = sorted(set(SHELL.values()))
TOOLS = ["WebSearch", "WebFetch", "Write", "Edit", "Read", "write_stdin", "update_plan",
         *SHELLS]

_SPECS: list[dict[str, Any]] = [
    {"mandatory_checkpoints": [{"checkpoint_id": "approve", "must_precede": TOOLS,
                                "scope": scope, "consume": consume, **extra}]}
    for scope in ("first", "each") for consume in (False, True)
    for extra in ({}, {"confirmed_by": ["owner", "user"]},
                  {"voided_by": [{"event": "message", "role": "assistant"}]},
                  {"voided_by": [{"event": "message", "role": "assistant",
                                  "yields_turn": True}]},
                  {"binds": {"tool": True, "args": True}}, {"binds": {"call": True}})
] + [
    {"mandatory_checkpoints": [{"checkpoint_id": "ok", "scope": "each", "consume": True,
                                "voided_by": [{"event": "message", "role": "assistant"}],
                                "must_precede": {"action_type": {"in": SHELLS},
                                                 "command": {"words": ["git"]}}}],
     "derive": [{"checkpoint_id": "ok", "when": {"event": "message", "role": "user"}}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "said", "scope": "each",
                                "must_precede": TOOLS,
                                "voided_by": [{"event": "action", "action_type": {
                                    "in": SHELLS}}]}],
     "derive": [{"checkpoint_id": "said", "when": {"event": "message", "role": "user"}}]},
]


def _specs() -> list[Spec]:
    return [*(parse_spec(doc) for doc in _SPECS), load_spec(DATA / "hooks" / "spec.yaml"),
            load_spec(EXAMPLES / "guard" / "spec.yaml")]


@cache
def _sessions() -> tuple[Trajectory, ...]:
    out = []
    for cli in ("claude-code", "codex"):
        for path in sorted((DATA / "coding" / cli).glob("*.jsonl")):
            _, entries = load(str(path))
            out.extend(e for e in entries if not isinstance(e, ReadFailure))
    return tuple(out)


def _as_recorded(cli: str, traj: Trajectory) -> list[dict[str, Any]]:
    """The session's events as ``cli``'s hooks carry them, in order, without seqs."""
    out: list[dict[str, Any]] = []
    for event in traj.events:
        data = event.data
        if event.kind == "message" and data.get("role") in ("user", "assistant"):
            text = data.get("text") if isinstance(data.get("text"), str) else ""
            if data["role"] == "user":
                if text:
                    out.append({"event": "message", "role": "user", "text": text})
                continue
            if data.get("yields_turn") is False:
                continue  # text before a call in the same turn: no hook carries it
            said = {"event": "message", "role": "assistant", "agent": AGENT[cli],
                    "yields_turn": True}
            if cli in STOP_TEXT:
                said["text"] = text
            out.append(said)
        elif event.kind == "action":
            out.append(_action(cli, event))
    return out


def _action(cli: str, event: Event) -> dict[str, Any]:
    data = event.data
    args = data.get("args") if isinstance(data.get("args"), dict) else {}
    call: dict[str, Any] = {"event": "action", "agent": AGENT[cli],
                            "action_type": data["action_type"], "args": args}
    if isinstance(data.get("command"), str):
        call.update(action_type=SHELL[cli], args={"command": data["command"]},
                    command=data["command"])
    if cli in CALL_IDS and isinstance(data.get("call_id"), str):
        call["call_id"] = data["call_id"]
    if cli in FAILURES and data.get("error"):
        call["error"] = str(data["error"])
    return call


def _payload(cli: str, kind: str, session: str, ev: dict[str, Any]) -> bytes:
    """The hook JSON ``cli`` sends for ``ev`` (``kind``: prompt, pre, post, stop)."""
    tool, args, cid = ev.get("action_type"), ev.get("args"), ev.get("call_id")
    failed = kind == "post" and "error" in ev
    if cli in ("claude-code", "codex", "copilot"):
        names = {"prompt": "UserPromptSubmit", "pre": "PreToolUse",
                 "post": "PostToolUseFailure" if failed else "PostToolUse", "stop": "Stop"}
        doc: dict[str, Any] = {"hook_event_name": names[kind], "session_id": session}
        if kind == "prompt":
            doc["prompt"] = ev["text"]
        elif kind == "stop":
            if "text" in ev:
                doc["last_assistant_message"] = ev["text"]
        else:
            doc.update(tool_name=tool, tool_input=args)
            if cid is not None:
                doc["tool_use_id"] = cid
            if failed:
                doc["error"] = ev["error"]
        return json.dumps(doc).encode()
    if cli == "gemini":
        names = {"prompt": "BeforeAgent", "pre": "BeforeTool", "post": "AfterTool",
                 "stop": "AfterAgent"}
        doc = {"hook_event_name": names[kind], "session_id": session}
        if kind == "prompt":
            doc["prompt"] = ev["text"]
        elif kind == "stop":
            doc["prompt_response"] = ev.get("text", "")
        else:
            doc.update(tool_name=tool, tool_input=args)
            if kind == "post":
                doc["tool_response"] = {"llmContent": "", **({"error": ev["error"]}
                                                             if failed else {})}
        return json.dumps(doc).encode()
    if cli == "opencode":
        names = {"prompt": "chat.message", "pre": "tool.execute.before",
                 "post": "tool.execute.after", "stop": "session.idle"}
        doc = {"event": names[kind], "sessionID": session}
        if kind in ("prompt", "stop"):
            doc["text"] = ev.get("text", "")
        else:
            doc.update(tool=tool, args=args, callID=cid or "call")
            if failed:
                doc["error"] = ev["error"]
        return json.dumps(doc).encode()
    if cli == "cursor":
        names = {"prompt": "beforeSubmitPrompt", "pre": "preToolUse",
                 "post": "postToolUseFailure" if failed else "postToolUse",
                 "stop": "afterAgentResponse"}
        doc = {"hook_event_name": names[kind], "conversation_id": session}
        if kind in ("prompt", "stop"):
            doc["prompt" if kind == "prompt" else "text"] = ev.get("text", "")
        else:
            doc.update(tool_name=tool, tool_input=args)
            if cid is not None:
                doc["tool_use_id"] = cid
            if failed:
                doc["error_message"] = ev["error"]
        return json.dumps(doc).encode()
    assert cli == "cline"
    names = {"prompt": "UserPromptSubmit", "pre": "PreToolUse", "post": "PostToolUse",
             "stop": "TaskComplete"}
    doc = {"hookName": names[kind], "taskId": session}
    if kind == "prompt":
        doc["userPromptSubmit"] = {"prompt": ev["text"]}
    elif kind in ("pre", "post"):
        part: dict[str, Any] = {"toolName": tool, "parameters": args}
        if kind == "post":
            part.update(success=not failed, result=ev.get("error", ""))
        doc["preToolUse" if kind == "pre" else "postToolUse"] = part
    return json.dumps(doc).encode()


class _Forgotten(dict[str, list[str]]):
    """No call waits for its result: an approval at the CLI's prompt is not recorded."""

    def __setitem__(self, key: str, value: list[str]) -> None:
        pass


class _Live:
    """A session as :func:`hooks.apply` uses it, in memory."""

    def __init__(self, spec: Spec) -> None:
        self.guard = Guard(spec, approver="user")
        self.asked: dict[str, list[str]] = _Forgotten()

    def check(self, event: Any) -> Any:
        return self.guard.check(event)

    def observe(self, event: Any) -> Any:
        return self.guard.observe(event)

    def record(self, decision: Any) -> None:
        pass


def _through_adapter(cli: str, spec: Spec, events: list[dict[str, Any]]
                     ) -> Counter[tuple[int | None, str]]:
    adapter = hooks.load(cli)
    live = _Live(spec)
    found: Counter[tuple[int | None, str]] = Counter()
    for ev in events:
        if ev["event"] == "action":
            steps = ["pre", "post"]
        else:
            steps = ["prompt" if ev["role"] == "user" else "stop"]
        for kind in steps:
            request = adapter.parse(_payload(cli, kind, "s-1", ev))
            outcome = hooks.apply(live, request, approver="user", can_ask=adapter.can_ask)
            answer = adapter.answer(request, outcome, False)
            if kind != "pre":
                continue
            decision = answer.decision
            assert decision is not None
            assert lets_run(cli, answer) == decision.allowed, (cli, ev, answer)
            assert decision.allowed == (not decision.reasons)
            found.update((r.seq, str(r.code)) for r in decision.reasons)
    return found


def _replayed(spec: Spec, events: list[dict[str, Any]]) -> Counter[tuple[int | None, str]]:
    recorded = [{"seq": i, **ev} for i, ev in enumerate(events, 1)]
    actions = {rec["seq"] for rec in recorded if rec["event"] == "action"}
    traj = Trajectory([*recorded, {"seq": len(recorded) + 1, "event": "final",
                                   "task_success": True}])
    result = replay_trajectory(spec, traj)
    assert result.verdict != "ERROR", result.reasons
    found: Counter[tuple[int | None, str]] = Counter()
    for r in result.reasons:
        if r.seq not in actions:
            continue
        code = Reason.CHECKPOINT_SKIPPED if r.code == Reason.CHECKPOINT_AFTER_ACTION else r.code
        found[(r.seq, str(code))] += 1
    return found


class TestAdaptersAgreeWithReplay:
    def test_the_sessions_are_what_the_test_claims(self) -> None:
        sources = Counter(t.source for t in _sessions())
        assert sources["claude-code"] >= 8 and sources["codex"] >= 8

    @pytest.mark.parametrize("cli", CLIS)
    def test_the_adapter_stops_exactly_what_replay_reports(self, cli: str) -> None:
        judged = blocked = 0
        for spec in _specs():
            for traj in _sessions():
                events = _as_recorded(cli, traj)
                want = _replayed(spec, events)
                assert _through_adapter(cli, spec, events) == want, (cli, traj.id)
                judged += 1
                blocked += bool(want)
        assert judged >= 300 and blocked >= 100  # not vacuous


#: The hook inputs Claude Code 2.1.332 wrote (tests/data/recorded/README.md), in the
#: order its hooks ran them, and each session's transcript.
RECORDED = DATA / "recorded"
_RAN = {
    "push-after-failed-tests": [
        "SessionStart-2", "UserPromptSubmit-1", "PreToolUse-1", "PermissionRequest-1",
        "Notification-1", "PostToolUseFailure-1", "PreToolUse-2", "PermissionRequest-2",
        "Notification-2", "PostToolUse-1", "Stop-1", "SessionEnd-2"],
    "rejected-force-push": [
        "SessionStart-1", "UserPromptSubmit-1", "PreToolUse-1", "PermissionRequest-1",
        "Notification-1", "PostToolUse-1", "PreToolUse-2", "PermissionRequest-2",
        "Notification-2", "PostToolUse-2", "PreToolUse-3", "PermissionRequest-3",
        "Notification-3", "SessionEnd-1"],
}


def _hooked(spec: Spec, session: str) -> Counter[tuple[str, str]]:
    """The reason codes the Claude Code adapter gives each call before it runs."""
    adapter = hooks.load("claude-code")
    live = _Live(spec)
    found: Counter[tuple[str, str]] = Counter()
    for name in _RAN[session]:
        data = (RECORDED / "claude-code-hooks" / session / f"{name}.json").read_bytes()
        request = adapter.parse(data)
        outcome = hooks.apply(live, request, approver="user", can_ask=adapter.can_ask)
        answer = adapter.answer(request, outcome, False)
        if request.kind == "pre":
            decision = answer.decision
            assert decision is not None and decision.call_id is not None
            assert lets_run("claude-code", answer) == decision.allowed
            found.update((decision.call_id, str(r.code)) for r in decision.reasons)
    return found


def _replayed_transcript(spec: Spec, session: str) -> tuple[Counter[tuple[str, str]], set[str]]:
    """Replay's reason codes per call of the transcript, and the calls that ran."""
    _, entries = load(str(RECORDED / "claude-code" / f"{session}.jsonl"), "claude-code")
    [traj] = [e for e in entries if not isinstance(e, ReadFailure)]
    calls = {ev.seq: ev.data["call_id"] for ev in traj.events if ev.kind == "action"}
    result = replay_trajectory(spec, traj)
    found: Counter[tuple[str, str]] = Counter()
    for r in result.reasons:
        if r.seq in calls:
            code = (Reason.CHECKPOINT_SKIPPED if r.code == Reason.CHECKPOINT_AFTER_ACTION
                    else r.code)
            found[(calls[r.seq], str(code))] += 1
    return found, set(calls.values())


class TestRecordedClaudeCodeHooks:
    """What Claude Code itself sent its hooks agrees with replay of what it wrote."""

    @pytest.mark.parametrize("session", sorted(_RAN))
    def test_the_hook_inputs_stop_exactly_the_calls_replay_reports(self, session: str) -> None:
        judged = blocked = 0
        for doc in [*_SPECS, EXAMPLES / "guard" / "spec.yaml"]:
            if isinstance(doc, dict) and any(
                    sel.get("role") == "assistant" and "yields_turn" not in sel
                    for rule in doc["mandatory_checkpoints"] for sel in rule.get("voided_by", ())):
                continue  # voided by any assistant text: the text before a call has no hook
            spec = parse_spec(doc) if isinstance(doc, dict) else load_spec(doc)
            want, ran = _replayed_transcript(spec, session)
            got = _hooked(spec, session)
            assert Counter({k: n for k, n in got.items() if k[0] in ran}) == want, session
            judged += 1
            blocked += bool(want)
        assert judged >= 10 and blocked >= 5

    def test_the_refused_call_never_ran(self) -> None:
        """The call refused at the prompt reached the hook, not the transcript."""
        _, ran = _replayed_transcript(_specs()[0], "rejected-force-push")
        assert ran == {"toolu_01", "toolu_02"}
        assert ("toolu_03", "checkpoint-skipped") in _hooked(
            load_spec(DATA / "hooks" / "spec.yaml"), "rejected-force-push")
