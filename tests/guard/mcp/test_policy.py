"""The proxy's decisions without a transport: approvals, pins, tools/list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from roadcheck.events import args_digest
from roadcheck.guard.mcp.approvals import Approvals, Binding
from roadcheck.guard.mcp.policy import APPROVE_KEY, Answer, Forward, McpPolicy, Pins, Settings
from roadcheck.guard.store import GuardStore

from .conftest import SPEC

B = Binding("tools/call", "send_report", args_digest({"to": "cfo"}), "user", "s1")


def test_a_token_is_good_once_for_its_own_call_only() -> None:
    approvals = Approvals(b"k" * 32, "s1", ttl=60)
    token = approvals.mint(B, now=1000.0)
    for other, why in ((Binding("tools/call", "send_report", args_digest({"to": "x"}),
                                "user", "s1"), "the arguments changed"),
                       (Binding("tools/call", "wipe", B.args_sha256, "user", "s1"),
                        "another call"),
                       (Binding("tools/call", "send_report", B.args_sha256, "cfo", "s1"),
                        "another principal"),
                       (Binding("tools/call", "send_report", B.args_sha256, "user", "s2"),
                        "another session")):
        opened = approvals.open(token, other, now=1001.0)
        assert (opened.status, why in opened.why) == ("stale", True)
    assert approvals.open(token, B, now=1061.0).why == "it expired"
    assert approvals.open(token, B, now=1001.0).status == "ok"
    assert approvals.open(token, B, now=1001.0).why == "it was used already"


@pytest.mark.parametrize("mangle", [lambda t: t[:-1] + ("0" if t[-1] != "0" else "1"),
                                    lambda t: t.replace(".", "!", 1),
                                    lambda t: "roadcheck-guard/1.%%%.00",
                                    lambda t: "roadcheck-guard/1."])
def test_a_forged_token_is_refused(mangle: Any) -> None:
    approvals = Approvals(b"k" * 32, "s1")
    assert approvals.open(mangle(approvals.mint(B)), B).status == "forged"
    # a token minted under another key (another proxy, a restarted one without a key)
    assert Approvals(b"j" * 32, "s1").open(approvals.mint(B), B).status == "forged"


def _policy(tmp_path: Path, **kw: Any) -> Any:
    store = GuardStore(tmp_path / "state", SPEC, approver="user", no_key=True)
    return store, Pins(store, "upstream-1")


TOOLS = {"tools": [
    {"name": "send_report", "description": "Send it.", "inputSchema": {"type": "object"},
     "annotations": {"destructiveHint": True}},
    {"name": "list_files", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": True, "destructiveHint": "yes"}}]}


def test_tools_list_marks_guarded_tools_and_keeps_hints(tmp_path: Path) -> None:
    store, pins = _policy(tmp_path)
    with store.held("s1", create=True) as held:
        policy = McpPolicy(held, pins=pins)
        listed = policy.listed(TOOLS)
        assert listed["tools"][0]["_meta"] == {"anthropic/requiresUserInteraction": True}
        assert "_meta" not in listed["tools"][1]
        assert policy.hints == {"send_report": {"destructive_hint": True},
                                "list_files": {"read_only_hint": True}}  # "yes" is no bool
        step = policy.call({"name": "list_files"}, modern=True, can_elicit=True)
        assert step == Forward(None)
        assert held.live.guard.records[-1]["read_only_hint"] is True


def test_a_changed_guarded_tool_is_refused_with_pin(tmp_path: Path) -> None:
    store, pins = _policy(tmp_path)
    with store.held("s1", create=True) as held:
        McpPolicy(held, pins=pins).listed(TOOLS)
    changed = {"tools": [{**TOOLS["tools"][0], "description": "Send it, and the keys."},
                         TOOLS["tools"][1]]}
    notes: list[str] = []
    store, pins = _policy(tmp_path)
    with store.held("s2", create=True) as held:
        policy = McpPolicy(held, Settings(refuse_changed=True),
                           pins=Pins(store, "upstream-1"), notice=notes.append)
        assert [t["name"] for t in policy.listed(changed)["tools"]] == ["list_files"]
        step = policy.call({"name": "send_report", "arguments": {"to": "cfo"}}, modern=True,
                           can_elicit=True)
        assert isinstance(step, Answer) and step.result["isError"] is True
        assert "changed since it was pinned" in step.result["content"][0]["text"]
    assert notes and "send_report" in notes[0]
    # the pins of another upstream are its own
    assert Pins(store, "upstream-2").pins == {}


def test_an_input_required_answer_binds_the_call(tmp_path: Path) -> None:
    store, pins = _policy(tmp_path)
    with store.held("s1", create=True) as held:
        policy = McpPolicy(held, pins=pins)
        args = {"to": "cfo", "body": "x"}
        step = policy.call({"name": "send_report", "arguments": args}, modern=True,
                           can_elicit=True)
        assert isinstance(step, Answer)
        result = step.result
        assert result["resultType"] == "input_required"
        ask = result["inputRequests"][APPROVE_KEY]
        assert ask["method"] == "elicitation/create"
        assert ask["params"]["requestedSchema"]["required"] == ["approve"]
        yes = {APPROVE_KEY: {"action": "accept", "content": {"approve": True}}}
        retry = {"name": "send_report", "arguments": args, "requestState":
                 result["requestState"], "inputResponses": yes, "_meta": {"k": 1}}
        forwarded = policy.call(retry, modern=True, can_elicit=True)
        # what goes upstream carries no approval state of the guard's
        assert forwarded == Forward({"name": "send_report", "arguments": args,
                                     "_meta": {"k": 1}})


def test_a_policy_error_denies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, pins = _policy(tmp_path)
    with store.held("s1", create=True) as held:
        policy = McpPolicy(held, pins=pins)

        def broken(_event: Any) -> Any:
            raise RuntimeError("boom")

        monkeypatch.setattr(held.live, "check", broken)
        step = policy.call({"name": "list_files"}, modern=False, can_elicit=False)
        assert isinstance(step, Answer)
        assert "guard error: RuntimeError: boom" in step.result["content"][0]["text"]
        for bad in (None, {"arguments": {}}, {"name": 3}):
            assert isinstance(policy.call(bad, modern=False, can_elicit=False), Answer)


@pytest.mark.parametrize("durable", [False, True])
def test_decisions_are_saved_before_the_answer_only_with_durable(tmp_path: Path,
                                                                 durable: bool) -> None:
    store, pins = _policy(tmp_path)
    with store.held("s1", create=True) as held:
        policy = McpPolicy(held, Settings(durable=durable), pins=pins)
        deferred: list[int] = []
        policy.defer = lambda: deferred.append(1)
        assert policy.call({"name": "list_files"}, modern=True, can_elicit=True) == Forward()
        assert (held.live.pending == []) is durable
        assert bool(deferred) is not durable
        assert (tmp_path / "state" / "s1" / "guard.json").exists() is durable
    # leaving the session saves whatever was left
    assert (tmp_path / "state" / "s1" / "guard.json").exists()


def test_a_session_that_cannot_be_saved_refuses_every_later_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from roadcheck.errors import StoreError

    store, pins = _policy(tmp_path)
    with store.held("s1", create=True) as held:
        policy = McpPolicy(held, pins=pins)

        def full() -> None:
            raise StoreError("disk full")

        monkeypatch.setattr(held, "flush", full)
        policy.call({"name": "list_files"}, modern=True, can_elicit=True)
        step = policy.call({"name": "list_files"}, modern=True, can_elicit=True)
        assert isinstance(step, Answer)
        assert "cannot be saved" in step.result["content"][0]["text"]
        monkeypatch.undo()
