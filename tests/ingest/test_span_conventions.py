"""OpenInference and OpenLLMetry spans, recorded with the SDK and each convention's constants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roadcheck import replay
from roadcheck.events import Trajectory
from roadcheck.ingest import detect_format, load

DATA = Path(__file__).resolve().parent.parent / "data" / "frameworks"
SPEC = DATA / "spec.yaml"
CONVENTIONS = {"openinference": "OpenInference", "openllmetry": "OpenLLMetry"}


def one(path: Path) -> Trajectory:
    fmt, entries = load(str(path))
    assert fmt == "otel"
    (traj,) = list(entries)
    assert isinstance(traj, Trajectory), traj
    return traj


@pytest.fixture(params=sorted(CONVENTIONS))
def folder(request: pytest.FixtureRequest) -> Path:
    return DATA / str(request.param)


def test_detected_as_otel(folder: Path) -> None:
    for name in ("approved", "missing", "errored"):
        assert detect_format((folder / f"{name}.json").read_bytes()) == "otel"


def test_tool_spans_become_actions_with_agents_and_a_handoff(folder: Path) -> None:
    traj = one(folder / "approved.json")
    assert traj.source == f"otel ({CONVENTIONS[folder.name]} spans)"
    kinds = [(e.kind, e.agent) for e in traj.events]
    assert kinds[:5] == [("action", "triage"), ("action", "triage"), ("handoff", "triage"),
                         ("checkpoint", "reporter"), ("action", "reporter")]
    assert kinds[5][0] == "final"  # of the root span's agent: none for a workflow span
    lookup, _transfer, handoff, _cp, send = traj.events[:5]
    assert lookup.data["action_type"] == "lookup_account"
    assert lookup.data["args"] == {"name": "acme"}
    assert lookup.data["result"] == {"account": "acme-1"}
    assert handoff.data["to_agent"] == "reporter"
    assert handoff.data["payload"] == {"account": "acme-1"}
    assert send.data["action_type"] == "send_report" and send.data["args"] == {"to": "board"}
    assert "error" not in send.data


def test_approved_send_passes(folder: Path) -> None:
    (result,) = replay(str(SPEC), [str(folder / "approved.json")]).results
    assert result.verdict == "PASS"


def test_missing_approval_blocks(folder: Path) -> None:
    (result,) = replay(str(SPEC), [str(folder / "missing.json")]).results
    assert result.verdict == "BLOCK"
    assert "checkpoint-skipped" in [r.code for r in result.reasons]


def test_an_errored_tool_is_a_failed_call_not_evidence(folder: Path) -> None:
    send = [e for e in one(folder / "errored.json").events
            if e.kind == "action" and e.data["action_type"] == "send_report"]
    (call,) = send
    assert call.data["error"] == "smtp refused"
    assert "result" not in call.data  # what an errored span output is no result


def test_spans_without_a_tool_span_warn_naming_the_convention(tmp_path: Path,
                                                              folder: Path) -> None:
    doc = json.loads((folder / "approved.json").read_text())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    kind_keys = ("openinference.span.kind", "traceloop.span.kind")
    kept = [s for s in spans
            if not any(a["key"] in kind_keys and a["value"]["stringValue"].lower() == "tool"
                       for a in s["attributes"])]
    assert kept and len(kept) < len(spans)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"] = kept
    path = tmp_path / "no_tools.json"
    path.write_text(json.dumps(doc))
    (result,) = replay(str(SPEC), [str(path)]).results
    assert result.verdict != "PASS" or result.warnings
    warn = [w for w in result.warnings if w.code == "no-actions-recorded"]
    assert warn, result
    assert CONVENTIONS[folder.name] in warn[0].message
