"""Mutated inputs never crash a reader or the engine behind it.

Each test takes valid files from tests/data and examples, changes one value
somewhere in them (to a list, an object, a huge or negative number, null, a
string, a boolean), deletes a key or repeats one, and reads the result. The
only outcomes allowed are a trajectory or a ReadFailure (TraceError): any other
exception is an internal crash (exit 70) a user would see.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roadcheck.conformance import CompiledSpec, load_spec, replay_events
from roadcheck.events import Trajectory
from roadcheck.ingest import FORMATS, ReadFailure, reader

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data"
FW = DATA / "frameworks"

#: Per format, the valid files to start from.
SOURCES: dict[str, list[Path]] = {
    "native": sorted(p for p in (ROOT / "examples").glob("fixture_*.jsonl")
                     if "bad_input" not in p.name),
    "openai-chat": [DATA / "transcripts" / n for n in (
        "confirmed_call.json", "content_parts.json", "text_and_call.json",
        "unconfirmed_call.json", "voided_confirmation.json")],
    "tau-bench": [DATA / "transcripts" / "malformed_record.json"],
    "tau2": [DATA / "transcripts" / "user_side_call.json"],
    "otel": [FW / "otel_otlp_hex.json", FW / "otel_otlp_base64.jsonl"],
    "atif": [FW / n for n in ("atif_approved.json", "atif_approved_late.json",
                              "atif_no_approval.json", "atif_rejected.json")],
    "openai-agents": [FW / "openai_agents_approved.jsonl"],
    "claude-code": [ROOT / "examples" / "frameworks" / "claude-code" / "approved.jsonl",
                    DATA / "coding" / "claude-code" / "claude_forked_session.jsonl"],
    "codex": [ROOT / "examples" / "frameworks" / "codex" / "approved.jsonl",
              DATA / "coding" / "codex" / "codex_with_escalation.jsonl"],
    "inspect": [DATA / "inspect" / n for n in ("approved.json", "rejected.json",
                                               "modified.json")],
    "swe-agent": [DATA / "swe-agent" / "6e44b9__sweagenttestrepo-1c2844.traj"],
    "jaeger": [DATA / "jaeger" / "ui_01.json", DATA / "jaeger" / "built" / "frameworks.json"],
    "zipkin": [DATA / "zipkin" / "messaging.json", DATA / "zipkin" / "built" / "frameworks.json"],
    "openhands": [DATA / "openhands" / "wrong_initial_state.json",
                  DATA / "openhands" / "basic_interactions.json"],
    "claude-code-otel": [DATA / "claude-code-otel" / "built" / n for n in (
        "approved.jsonl", "config_push.jsonl", "two_sessions.json")],
    "agentdojo": [DATA / "agentdojo" / "none.json"],
    "openai-agents-state": [DATA / "openai-agents-state" / "built" / "approved_and_rejected.json",
                            DATA / "openai-agents-state" / "v1_13_pending_tool_approval.json"],
    "guard-state": [DATA / "guard-state" / "mcp_session.json"],
}

SPECS = [CompiledSpec(load_spec(ROOT / "examples" / "spec.json")),
         CompiledSpec(load_spec(ROOT / "examples" / "tau" / "airline.yaml")),
         CompiledSpec(load_spec(FW / "spec.yaml"))]

#: Values that broke readers before: wrong types, out-of-range numbers and timestamps.
ODD_VALUES = st.sampled_from([
    None, True, False, 0, -1, 1.5, -1e308, 1e308, 2**63, -(2**63) - 1, 10**30, 2**64,
    "", "x", "0x", "2026-13-45T99:99:99Z", "9999-12-31T23:59:59.999999+14:00",
    "0001-01-01T00:00:00-14:00", "99999999999999999999", "-5", "\u0000\n\u202e",
    [], [1, "a"], [None], [{}], {}, {"a": 1}, {"value": [], "verified": "yes"},
    {"stringValue": []}, {"intValue": "x"}, {"arrayValue": {"values": 5}},
    {"kvlistValue": []}, {"code": []}, ["approved"], {"id": []},
])


def _walk(value: Any, out: list[tuple[Any, Any]]) -> None:
    """Every (container, key-or-index) in a decoded document."""
    if isinstance(value, dict):
        for key, child in value.items():
            out.append((value, key))
            _walk(child, out)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out.append((value, index))
            _walk(child, out)


def _mutate(doc: Any, data: st.DataObject) -> tuple[Any, str | None]:
    """Change one place of ``doc`` in place; returns the doc and a key to repeat, if any."""
    places: list[tuple[Any, Any]] = []
    _walk(doc, places)
    if not places:
        return copy.deepcopy(data.draw(ODD_VALUES)), None
    container, key = places[data.draw(st.integers(0, len(places) - 1), label="place")]
    action = data.draw(st.sampled_from(["replace", "replace", "replace", "delete", "repeat"]))
    if action == "delete":
        del container[key]
    elif action == "repeat" and isinstance(container, dict):
        return doc, key
    else:  # a copy: the drawn value must not be changed by a later mutation
        container[key] = copy.deepcopy(data.draw(ODD_VALUES))
    return doc, None


def _encode(doc: Any, repeat: str | None, jsonl: bool) -> bytes:
    if jsonl:
        lines = doc if isinstance(doc, list) else [doc]
        text = "".join(json.dumps(line) + "\n" for line in lines)
    else:
        text = json.dumps(doc, indent=1)
    if repeat is not None:  # write the key a second time at its first place
        quoted = json.dumps(repeat)
        text = text.replace(f"{quoted}:", f"{quoted}: 0, {quoted}:", 1)
    return text.encode("utf-8")


def _mutated(fmt: str, data: st.DataObject) -> tuple[str, bytes]:
    source = SOURCES[fmt][data.draw(st.integers(0, len(SOURCES[fmt]) - 1), label="source")]
    raw = source.read_bytes()
    if fmt == "guard-state":  # its seal line, then one JSON document
        seal, _, raw = raw.partition(b"\n")
        doc, repeat = json.loads(raw), None
        for _ in range(data.draw(st.integers(1, 3), label="mutations")):
            doc, key = _mutate(doc, data)
            repeat = key or repeat
        return str(source), seal + b"\n" + _encode(doc, repeat, False)
    jsonl = source.suffix == ".jsonl"
    doc = ([json.loads(line) for line in raw.splitlines() if line.strip()] if jsonl
           else json.loads(raw))
    repeat = None
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        doc, key = _mutate(doc, data)
        repeat = key or repeat
    return str(source), _encode(doc, repeat, jsonl)


def _read_and_judge(fmt: str, path: str, raw: bytes) -> None:
    """Read with the format's reader and judge every trajectory; nothing may raise."""
    for entry in reader(fmt)(path, raw):
        assert isinstance(entry, (Trajectory, ReadFailure))
        if isinstance(entry, Trajectory):
            for spec in SPECS:
                result = replay_events(spec, entry.events, entry.id, entry.path,
                                       source=entry.source, meta=dict(entry.meta))
                assert result.verdict in ("PASS", "BLOCK", "ERROR")


FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(st.data())
def test_native(data: st.DataObject) -> None:
    """The native reader."""
    _read_and_judge("native", *_mutated("native", data))


@FUZZ
@given(st.data())
def test_openai_chat(data: st.DataObject) -> None:
    """The OpenAI chat reader."""
    _read_and_judge("openai-chat", *_mutated("openai-chat", data))


@FUZZ
@given(st.data())
def test_tau_bench(data: st.DataObject) -> None:
    """The tau-bench reader."""
    _read_and_judge("tau-bench", *_mutated("tau-bench", data))


@FUZZ
@given(st.data())
def test_tau2(data: st.DataObject) -> None:
    """The tau2-bench reader."""
    _read_and_judge("tau2", *_mutated("tau2", data))


@FUZZ
@given(st.data())
def test_otel(data: st.DataObject) -> None:
    """The OpenTelemetry reader."""
    _read_and_judge("otel", *_mutated("otel", data))


@FUZZ
@given(st.data())
def test_atif(data: st.DataObject) -> None:
    """The ATIF reader."""
    _read_and_judge("atif", *_mutated("atif", data))


@FUZZ
@given(st.data())
def test_openai_agents(data: st.DataObject) -> None:
    """The OpenAI Agents SDK reader."""
    _read_and_judge("openai-agents", *_mutated("openai-agents", data))


@FUZZ
@given(st.data())
def test_claude_code(data: st.DataObject) -> None:
    """The Claude Code transcript reader."""
    _read_and_judge("claude-code", *_mutated("claude-code", data))


@FUZZ
@given(st.data())
def test_codex(data: st.DataObject) -> None:
    """The Codex rollout reader."""
    _read_and_judge("codex", *_mutated("codex", data))


@FUZZ
@given(st.data())
def test_inspect(data: st.DataObject) -> None:
    """The Inspect AI eval log reader."""
    _read_and_judge("inspect", *_mutated("inspect", data))


@FUZZ
@given(st.data())
def test_swe_agent(data: st.DataObject) -> None:
    """The SWE-agent trajectory reader."""
    _read_and_judge("swe-agent", *_mutated("swe-agent", data))


@FUZZ
@given(st.data())
def test_jaeger(data: st.DataObject) -> None:
    """The Jaeger JSON reader."""
    _read_and_judge("jaeger", *_mutated("jaeger", data))


@FUZZ
@given(st.data())
def test_zipkin(data: st.DataObject) -> None:
    """The Zipkin v2 JSON reader."""
    _read_and_judge("zipkin", *_mutated("zipkin", data))


@FUZZ
@given(st.data())
def test_openhands(data: st.DataObject) -> None:
    """The OpenHands event stream reader."""
    _read_and_judge("openhands", *_mutated("openhands", data))


@FUZZ
@given(st.data())
def test_claude_code_otel(data: st.DataObject) -> None:
    """The Claude Code OpenTelemetry events reader."""
    _read_and_judge("claude-code-otel", *_mutated("claude-code-otel", data))


@FUZZ
@given(st.data())
def test_agentdojo(data: st.DataObject) -> None:
    """The AgentDojo run file reader."""
    _read_and_judge("agentdojo", *_mutated("agentdojo", data))


@FUZZ
@given(st.data())
def test_openai_agents_state(data: st.DataObject) -> None:
    """The OpenAI Agents SDK RunState reader."""
    _read_and_judge("openai-agents-state", *_mutated("openai-agents-state", data))


def test_every_format_is_fuzzed() -> None:
    """A new reader gets a source file here, or this fails."""
    assert set(SOURCES) == set(FORMATS)
    assert all(p.exists() for paths in SOURCES.values() for p in paths)
