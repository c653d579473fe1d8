"""The readers on sessions recorded from the real programs (tests/data/recorded/README.md).

Codex CLI 0.22.0, 0.29.0 and 0.34.0 and Claude Code 2.1.332, installed from npm, each
driven at its own terminal interface, a person's keys answering its approval prompts.
Every test states what the recording holds, read off its raw lines, so a reader that
drops, invents or misplaces a call or an approval fails here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import roadcheck
from roadcheck.events import Trajectory
from roadcheck.ingest import load

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "recorded"
CODEX_SPEC = ROOT / "examples" / "frameworks" / "codex" / "spec.yaml"
#: A push needs a person's approval at Claude Code's prompt, just before it.
CC_PUSH = {"mandatory_checkpoints": [{
    "checkpoint_id": "claude-code-approval", "confirmed_by": ["user"], "scope": "each",
    "consume": True, "must_precede": {"command": {"words": ["git", "push"]}}}]}


def one(path: Path, fmt: str) -> Trajectory:
    got, entries = load(str(path))
    trajs = [t for t in entries if isinstance(t, Trajectory) and len(t.events) > 1]
    assert got == fmt
    (traj,) = trajs
    return traj


def road(traj: Trajectory) -> list[tuple[str, Any]]:
    return [(e.kind, e.get("command") or e.get("checkpoint_id") or e.get("action_type")
             or e.get("role")) for e in traj.events if e.kind != "final"]


def verdict(path: Path, spec: Any, fmt: str) -> str:
    """The verdict of the one session of ``path`` (a file may also hold an empty session)."""
    if isinstance(spec, Path):
        spec = roadcheck.load_spec(spec)
    events = [e.to_dict() for e in one(path, fmt).events]
    return roadcheck.replay(spec, [events]).results[0].verdict


def raw_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- Codex ------------------------------------------------------------------------------------

APPROVED_PUSH = [("message", "system"), ("message", "user"),
                 ("action", "git status --short"),
                 ("checkpoint", "codex-approval"),
                 ("action", "git push origin main"),
                 ("message", "assistant")]


@pytest.mark.parametrize("name", [
    "rollout-0.22.0-approved-push.jsonl",  # pre-envelope lines, "Approval policy: on-request"
    "rollout-0.29.0-approved-push.jsonl",  # pre-envelope lines, <approval_policy> tags
    "rollout-0.34.0-approved-push.jsonl",  # enveloped, policy only in <environment_context>
])
def test_codex_push_the_user_approved_at_the_prompt_passes(name: str) -> None:
    path = DATA / "codex" / name
    raw = raw_lines(path)
    # what the recording holds: an escalated push under on-request that ran (exit 0)
    calls = [r.get("payload", r) for r in raw]
    (push,) = [c for c in calls if c.get("type") == "function_call"
               and "git push" in c["arguments"]]
    assert json.loads(push["arguments"])["with_escalated_permissions"] is True
    assert not any(r.get("type") == "turn_context" for r in raw)
    traj = one(path, "codex")
    assert road(traj) == APPROVED_PUSH
    assert verdict(path, CODEX_SPEC, "codex") == "PASS"


def test_codex_exec_push_under_never_has_no_approval() -> None:
    """``codex exec`` runs with ``approval_policy: never``: nobody was asked."""
    path = DATA / "codex" / "rollout-0.34.0-exec-push.jsonl"
    assert "<approval_policy>never</approval_policy>" in path.read_text()
    traj = one(path, "codex")
    assert not [e for e in traj.events if e.kind == "checkpoint"]
    assert verdict(path, CODEX_SPEC, "codex") == "BLOCK"


def test_codex_refused_force_push_is_not_in_the_rollout() -> None:
    """Codex 0.34 writes no line for a call the person refused (the turn was cut)."""
    path = DATA / "codex" / "rollout-0.34.0-refused-force-push.jsonl"
    assert "--force" not in path.read_text()
    traj = one(path, "codex")
    assert [k for k, _ in road(traj)] == ["message", "message", "action"]
    assert verdict(path, CODEX_SPEC, "codex") == "PASS"


# -- Claude Code transcript -------------------------------------------------------------------

def test_claude_code_transcript_holds_the_calls_not_the_approvals() -> None:
    """The transcript records both calls; the approvals given at the prompt are not in it."""
    path = DATA / "claude-code" / "push-after-failed-tests.jsonl"
    traj = one(path, "claude-code")
    assert road(traj) == [("message", "user"), ("message", "assistant"),
                          ("action", "python3 -m pytest -q"),
                          ("action", "git push origin main"), ("message", "assistant")]
    failed, push = [e for e in traj.events if e.kind == "action"]
    assert failed.get("error") and not push.get("error")
    assert verdict(path, CC_PUSH, "claude-code") == "BLOCK"


def test_claude_code_transcript_rejected_call_is_no_action() -> None:
    path = DATA / "claude-code" / "rejected-force-push.jsonl"
    assert "git push --force" in path.read_text()  # the call the person refused
    traj = one(path, "claude-code")
    assert [v for k, v in road(traj) if k == "action"] == [
        "Edit", "python3 -c 'import test_app; test_app.test_total()' && echo passed"]
    assert ("message", "system") in road(traj)  # "[Request interrupted by user ...]"


# -- Claude Code OpenTelemetry events ---------------------------------------------------------

def decisions(path: Path) -> list[tuple[str, str, str]]:
    out = []
    for request in raw_lines(path):
        for rl in request.get("resourceLogs", []):
            for sl in rl["scopeLogs"]:
                for rec in sl["logRecords"]:
                    attrs = {a["key"]: next(iter(a["value"].values()))
                             for a in rec["attributes"]}
                    if attrs.get("event.name") == "tool_decision":
                        out.append((attrs["tool_use_id"], attrs["decision"], attrs["source"]))
    return out


def test_claude_code_otel_approved_calls_pass() -> None:
    path = DATA / "claude-code-otel" / "push-after-failed-tests.jsonl"
    assert decisions(path) == [("toolu_01", "accept", "user_temporary"),
                               ("toolu_02", "accept", "user_temporary")]
    traj = one(path, "claude-code-otel")
    assert road(traj) == [("message", "user"),
                          ("checkpoint", "claude-code-approval"),
                          ("action", "python3 -m pytest -q"),
                          ("checkpoint", "claude-code-approval"),
                          ("action", "git push origin main"),
                          ("message", "user")]  # the person typed /exit
    cps = [e for e in traj.events if e.kind == "checkpoint"]
    assert [cp.get("call_id") for cp in cps] == ["toolu_01", "toolu_02"]
    assert {cp.get("confirmed_by") for cp in cps} == {"user"}
    assert verdict(path, CC_PUSH, "claude-code-otel") == "PASS"


def test_claude_code_otel_rejected_call_is_no_action() -> None:
    path = DATA / "claude-code-otel" / "rejected-force-push.jsonl"
    assert decisions(path) == [("toolu_01", "accept", "user_temporary"),
                               ("toolu_02", "accept", "user_permanent"),
                               ("toolu_03", "reject", "user_reject")]
    traj = one(path, "claude-code-otel")
    actions = [e for e in traj.events if e.kind == "action"]
    assert [a.get("call_id") for a in actions] == ["toolu_01", "toolu_02"]
    assert verdict(path, CC_PUSH, "claude-code-otel") == "PASS"  # nothing was pushed
