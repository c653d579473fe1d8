"""Readers fail closed: what they do not understand is ERROR, never a dropped event."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from roadcheck.conformance import load_spec, replay

ROOT = Path(__file__).resolve().parent.parent.parent
TAU_SPEC = ROOT / "examples" / "tau" / "airline.yaml"
FW = ROOT / "tests" / "data" / "frameworks"
FW_SPEC = FW / "spec.yaml"
CODING = ROOT / "tests" / "data" / "coding"

#: A guarded update with no confirmation: BLOCK when the call is read.
MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "Add a checked bag to ABC123."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_2", "type": "function", "function": {
            "name": "update_reservation_baggages",
            "arguments": "{\"reservation_id\": \"ABC123\", \"total_baggages\": 1}"}}]},
    {"role": "tool", "tool_call_id": "call_2", "content": "{\"total_baggages\": 1}"},
    {"role": "assistant", "content": "Done."},
]


def _tau2_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same conversation in tau2's dialect (flat calls, results keyed by ``id``)."""
    out = []
    for m in copy.deepcopy(messages):
        for key in ("tool_calls", "tool_call", "toolCalls"):
            calls = m.get(key)
            if isinstance(calls, list):
                m[key] = [{"id": c["id"], "name": c["function"]["name"],
                           "arguments": json.loads(c["function"]["arguments"]),
                           "requestor": "assistant"} for c in calls]
        if m["role"] == "tool":
            m["id"] = m.pop("tool_call_id")
        out.append(m)
    return out


def write(tmp_path: Path, fmt: str, messages: list[dict[str, Any]]) -> Path:
    """A one-run file of ``fmt`` holding ``messages``."""
    if fmt == "openai-chat":
        doc: Any = {"messages": messages}
    elif fmt == "tau-bench":
        doc = [{"task_id": 0, "trial": 0, "reward": 1.0, "traj": messages}]
    else:
        doc = {"simulations": [{"id": "s0", "task_id": "0", "trial": 0,
                                "reward_info": {"reward": 1.0},
                                "messages": _tau2_messages(messages)}]}
    path = tmp_path / f"{fmt}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def verdicts(spec: Path, path: Path) -> list[tuple[str, str, str]]:
    run = replay(load_spec(spec), [path])
    return [(r.verdict, r.headline, r.reasons[0].message) for r in run.results]


FORMATS = ["openai-chat", "tau-bench", "tau2"]


class TestTranscriptToolCalls:
    """A call the reader cannot read never disappears while its result is still there."""

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_well_formed_blocks(self, tmp_path: Path, fmt: str) -> None:
        """The unconfirmed update blocks when the call is spelt right (the baseline)."""
        [(verdict, code, _)] = verdicts(TAU_SPEC, write(tmp_path, fmt, MESSAGES))
        assert (verdict, code) == ("BLOCK", "checkpoint-skipped")

    @pytest.mark.parametrize("fmt", FORMATS)
    @pytest.mark.parametrize("key", ["tool_call", "toolCalls", "tool_calls_", "Tool_Calls"])
    def test_misspelt_tool_calls_is_bad_input(self, tmp_path: Path, fmt: str, key: str) -> None:
        """A misspelt ``tool_calls`` key is ERROR bad-input, never a PASS without the call."""
        messages = copy.deepcopy(MESSAGES)
        messages[1][key] = messages[1].pop("tool_calls")
        [(verdict, code, message)] = verdicts(TAU_SPEC, write(tmp_path, fmt, messages))
        assert (verdict, code) == ("ERROR", "bad-input")
        assert "message 1" in message
        assert repr(key) in message

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_result_answering_no_call_is_bad_input(self, tmp_path: Path, fmt: str) -> None:
        """A tool result whose call id no call made is malformed: the call was lost."""
        messages = copy.deepcopy(MESSAGES)
        del messages[1]["tool_calls"]
        messages[1]["content"] = "Adding the bag."
        [(verdict, code, message)] = verdicts(TAU_SPEC, write(tmp_path, fmt, messages))
        assert (verdict, code) == ("ERROR", "bad-input")
        assert "message 2" in message and "call_2" in message

    @pytest.mark.parametrize("fmt", FORMATS)
    @pytest.mark.parametrize("calls", ["update_reservation_baggages", {"id": "call_2"}, 5, True])
    def test_mistyped_tool_calls_is_bad_input(self, tmp_path: Path, fmt: str,
                                               calls: Any) -> None:
        """``tool_calls`` that is not a list is malformed."""
        messages = copy.deepcopy(MESSAGES)
        messages[1]["tool_calls"] = calls
        if fmt == "tau2":
            messages[2]["tool_call_id"] = "call_2"
        path = write(tmp_path, fmt, messages) if fmt != "tau2" else None
        if path is None:  # _tau2_messages cannot convert a mistyped list; write it directly
            doc = {"simulations": [{"id": "s0", "messages": [
                MESSAGES[0], {"role": "assistant", "content": None, "tool_calls": calls},
                {"role": "tool", "id": "call_2", "content": "ok"}]}]}
            path = tmp_path / "tau2.json"
            path.write_text(json.dumps(doc), encoding="utf-8")
        [(verdict, code, message)] = verdicts(TAU_SPEC, path)
        assert (verdict, code) == ("ERROR", "bad-input")
        assert "'tool_calls' must be a list" in message

    @pytest.mark.parametrize("bad", [["call_2"], {"id": "call_2"}, 2.5, True])
    def test_call_id_of_another_type_is_bad_input(self, tmp_path: Path, bad: Any) -> None:
        """A call id that is a list, an object, a float or a boolean is malformed, not a crash."""
        messages = copy.deepcopy(MESSAGES)
        messages[1]["tool_calls"][0]["id"] = bad
        [(verdict, code, message)] = verdicts(TAU_SPEC, write(tmp_path, "openai-chat", messages))
        assert (verdict, code) == ("ERROR", "bad-input")
        assert "tool call 0" in message

    @pytest.mark.parametrize("bad", [["call_2"], {"id": "call_2"}, True])
    def test_result_call_id_of_another_type_is_bad_input(self, tmp_path: Path, bad: Any) -> None:
        """A tool result whose ``tool_call_id`` is not a string is malformed, not a crash."""
        messages = copy.deepcopy(MESSAGES)
        messages[2]["tool_call_id"] = bad
        [(verdict, code, message)] = verdicts(TAU_SPEC, write(tmp_path, "openai-chat", messages))
        assert (verdict, code) == ("ERROR", "bad-input")
        assert "message 2" in message

    def test_function_result_with_no_call_is_bad_input(self, tmp_path: Path) -> None:
        """A legacy ``function`` result that no ``function_call`` asked for is malformed."""
        messages = [{"role": "user", "content": "hi"},
                    {"role": "function", "name": ["send_certificate"], "content": "done"}]
        [(verdict, code, message)] = verdicts(TAU_SPEC, write(tmp_path, "openai-chat", messages))
        assert (verdict, code) == ("ERROR", "bad-input")
        assert "message 1" in message


def _atif(name: str) -> dict[str, Any]:
    return json.loads((FW / name).read_text(encoding="utf-8"))


def _atif_verdict(tmp_path: Path, doc: dict[str, Any]) -> tuple[str, str, str, tuple[str, ...]]:
    path = tmp_path / "atif.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    [r] = replay(load_spec(FW_SPEC), [path]).results
    return r.verdict, r.headline, r.reasons[0].message, tuple(n.message for n in r.notes)


class TestAtifSubagents:
    """A subagent trajectory in the file is judged, whatever happened to its reference."""

    def test_baseline(self, tmp_path: Path) -> None:
        """The unapproved run blocks on the subagent's send_report."""
        verdict, code, _, _ = _atif_verdict(tmp_path, _atif("atif_no_approval.json"))
        assert (verdict, code) == ("BLOCK", "checkpoint-skipped")

    def test_missing_reference_still_judges_the_subagent(self, tmp_path: Path) -> None:
        """With the reference removed, the embedded subagent's guarded call still counts."""
        doc = _atif("atif_no_approval.json")
        for step in doc["steps"]:
            for res in (step.get("observation") or {}).get("results", []):
                res.pop("subagent_trajectory_ref", None)
        verdict, code, message, notes = _atif_verdict(tmp_path, doc)
        assert (verdict, code) == ("BLOCK", "checkpoint-skipped"), (message, notes)
        assert not any("never ran" in n for n in notes)

    def test_dangling_reference_is_bad_input(self, tmp_path: Path) -> None:
        """A reference to a session the file does not hold (and no file names) is malformed."""
        doc = _atif("atif_no_approval.json")
        for step in doc["steps"]:
            for res in (step.get("observation") or {}).get("results", []):
                for ref in res.get("subagent_trajectory_ref", []):
                    ref["session_id"] = "reporter-run-9"
        verdict, code, message, _ = _atif_verdict(tmp_path, doc)
        assert (verdict, code) == ("ERROR", "bad-input")
        assert "reporter-run-9" in message

    def test_result_answering_no_call_is_bad_input(self, tmp_path: Path) -> None:
        """An observation result whose source_call_id names no call of its step is malformed."""
        doc = _atif("atif_no_approval.json")
        step = next(s for s in doc["steps"] if s.get("tool_calls"))
        step["tool_calls"][0]["tool_call_id"] = "renamed"
        verdict, code, message, _ = _atif_verdict(tmp_path, doc)
        assert (verdict, code) == ("ERROR", "bad-input")
        assert "source_call_id" in message

    def test_misspelt_tool_calls_is_bad_input(self, tmp_path: Path) -> None:
        """A step whose ``tool_calls`` key is misspelt is malformed."""
        doc = _atif("atif_no_approval.json")
        sub = doc["subagent_trajectories"][0]
        step = next(s for s in sub["steps"] if s.get("tool_calls"))
        step["tool_call"] = step.pop("tool_calls")
        verdict, code, message, _ = _atif_verdict(tmp_path, doc)
        assert (verdict, code) == ("ERROR", "bad-input")
        assert "'tool_call'" in message


class TestDuplicateKeys:
    """A key given twice in one object is bad-input naming the key and the line."""

    FINAL = b'{"seq": 2, "agent": "r", "event": "final", "task_success": true}'

    @pytest.mark.parametrize(("line", "key"), [
        # the same key at the top level, the later value wins in orjson
        (b'{"seq": 1, "agent": "r", "event": "action", "action_type": "send_report", '
         b'"action_type": "read"}', "action_type"),
        # whitespace before the colon, tabs, no spaces at all
        (b'{"seq":1,"agent":"r","event":"action","action_type"\t:"send_report",'
         b'"action_type" :"read"}', "action_type"),
        # nested in a payload
        (b'{"seq": 1, "agent": "r", "event": "handoff", "from_agent": "a", "to_agent": "b", '
         b'"payload": {"n": {"value": 1, "verified": false, "verified": true}}}', "verified"),
        # a value written with a colon escape, which decodes to the same text
        (b'{"seq": 1, "agent": "r", "event": "action", "action_type": "send_report", '
         b'"x": "\\u003a", "x": ":"}', "x"),
        # escaped quotes and colons inside strings, and a key repeated after them
        (b'{"seq": 1, "agent": "r", "event": "action", "action_type": "send_report", '
         b'"note": "\\"a\\": 1", "note": "b"}', "note"),
    ])
    def test_native(self, line: bytes, key: str) -> None:
        """The native reader refuses a repeated key, wherever and however it is written."""
        from roadcheck.errors import TraceError
        from roadcheck.ingest.native import iter_events

        data = b"\n".join([line, self.FINAL])
        with pytest.raises(TraceError, match=f"duplicate key '{key}'") as info:
            list(iter_events(data, "t.jsonl"))
        assert info.value.line == 1

    @pytest.mark.parametrize("line", [
        b'{"seq": 1, "agent": "r", "event": "action", "action_type": "send_report", '
        b'"args": {"q": "a\\": b", "t": "03:14:05", "x": ":"}}',
        b'{"seq": 1, "agent": "r", "event": "action", "action_type": "send_report", '
        b'"args": {"q": "\\u003a", "r": {"q": 1}}}',
        b'{"seq": 1, "agent": "r", "event": "action", "action_type": "send_report", '
        b'"args": [{"a": 1}, {"a": 2}]}',
    ])
    def test_native_without_repeats_is_read(self, line: bytes) -> None:
        """Colons and quotes in strings, and the same key in two objects, are not repeats."""
        from roadcheck.ingest.native import iter_events

        assert len(list(iter_events(b"\n".join([line, self.FINAL]), "t.jsonl"))) == 2

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_transcripts(self, tmp_path: Path, fmt: str) -> None:
        """The transcript readers refuse a repeated key, naming it and its line."""
        path = write(tmp_path, fmt, MESSAGES)
        text = path.read_text(encoding="utf-8")
        text = text.replace('"role": "user", ', '"role": "user", "role": "assistant", ', 1)
        path.write_text(text, encoding="utf-8")
        [(verdict, code, message)] = verdicts(TAU_SPEC, path)
        assert (verdict, code) == ("ERROR", "bad-input")
        assert message.startswith("line 1: duplicate key 'role'")

    def test_atif(self, tmp_path: Path) -> None:
        """The ATIF reader refuses a repeated key."""
        text = (FW / "atif_no_approval.json").read_text(encoding="utf-8")
        text = text.replace('"function_name": "send_report",',
                            '"function_name": "send_report", "function_name": "read",', 1)
        path = tmp_path / "atif.json"
        path.write_text(text, encoding="utf-8")
        [r] = replay(load_spec(FW_SPEC), [path]).results
        assert (r.verdict, r.headline) == ("ERROR", "bad-input")
        assert "duplicate key 'function_name'" in r.reasons[0].message

    @pytest.mark.parametrize("name", ["otel_otlp_hex.json", "otel_otlp_base64.jsonl"])
    def test_otel(self, tmp_path: Path, name: str) -> None:
        """The OpenTelemetry reader refuses a repeated key, in either layout."""
        text = (FW / name).read_text(encoding="utf-8")
        assert '"name": "' in text
        text = text.replace('"name": "', '"name": "x", "name": "', 1)
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        results = replay(load_spec(FW_SPEC), [path]).results
        assert [(r.verdict, r.headline) for r in results] == [("ERROR", "bad-input")]
        assert "duplicate key 'name'" in results[0].reasons[0].message

    def test_openai_agents(self, tmp_path: Path) -> None:
        """The Agents SDK reader refuses a repeated key."""
        text = (FW / "openai_agents_approved.jsonl").read_text(encoding="utf-8")
        text = text.replace('"object": "', '"object": "run_item", "object": "', 1)
        path = tmp_path / "agents.jsonl"
        path.write_text(text, encoding="utf-8")
        results = replay(load_spec(FW_SPEC), [path]).results
        assert [(r.verdict, r.headline) for r in results] == [("ERROR", "bad-input")]
        assert "line 1: duplicate key 'object'" in results[0].reasons[0].message

    @pytest.mark.parametrize(("fmt", "name", "old", "new", "key"), [
        # a key the reader reads, at the top of an entry
        ("claude-code", "claude-code/short.jsonl", '"type":"user"',
         '"type":"assistant","type":"user"', "type"),
        # a key in a part the reader skips
        ("claude-code", "claude-code/short.jsonl", '"cwd":', '"cwd":"/x","cwd":', "cwd"),
        ("codex", "codex/codex_golden.jsonl", '"type":"', '"type":"x","type":"', "type"),
    ])
    def test_coding_agents(self, tmp_path: Path, fmt: str, name: str, old: str, new: str,
                           key: str) -> None:
        """The coding-agent readers refuse a repeated key anywhere, naming it and its line."""
        text = (CODING / name).read_text(encoding="utf-8")
        assert old in text
        text = text.replace(old, new, 1)
        path = tmp_path / f"session.{fmt}.jsonl"
        path.write_text(text, encoding="utf-8")
        from roadcheck.ingest import ReadFailure, load

        entries = list(load(str(path), fmt)[1])
        assert [type(e) for e in entries] == [ReadFailure]
        assert f"duplicate key '{key}'" in entries[0].error.message
        assert entries[0].error.line == text[:text.index(new)].count("\n") + 1

    def test_accept_call_list(self, tmp_path: Path) -> None:
        """An accept trace given as a JSON list refuses a repeated key."""
        from roadcheck.acceptance import load_trace
        from roadcheck.errors import TraceError

        path = tmp_path / "trace.json"
        path.write_text('[{"tool": "send_invoice",\n "tool": "read_record"}]', encoding="utf-8")
        with pytest.raises(TraceError, match="duplicate key 'tool'") as info:
            load_trace(path)
        assert info.value.line == 2


SEEDS = ROOT / "tests" / "data" / "fuzz" / "seeds"


class TestUnknownSpanKinds:
    """A span that records a tool call under a kind the reader does not know is malformed.

    Skipping it would drop the call: a misspelt ``execute_tool`` or ``function``
    must not turn BLOCK into PASS.
    """

    def _agents(self, tmp_path: Path, change: Any) -> list[tuple[str, str, str]]:
        lines = [json.loads(raw) for raw in
                 (SEEDS / "openai_agents_intern_approval.jsonl").read_text().splitlines()]
        span = next(r for r in lines if r.get("object") == "trace.span"
                    and r["span_data"].get("name") == "send_report")
        change(span["span_data"])
        path = tmp_path / "agents.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
        return verdicts(FW_SPEC, path)

    def test_agents_baseline(self, tmp_path: Path) -> None:
        """The intern-approved send_report blocks."""
        [(verdict, code, _)] = self._agents(tmp_path, lambda d: None)
        assert (verdict, code) == ("BLOCK", "checkpoint-skipped")

    @pytest.mark.parametrize("change", [
        lambda d: d.pop("type"), lambda d: d.update(type="fuction"), lambda d: d.update(type=7),
        lambda d: d.update(tye=d.pop("type")), lambda d: d.update(type=None)],
        ids=["deleted", "misspelt", "number", "key-misspelt", "null"])
    def test_agents_function_span_of_unknown_type(self, tmp_path: Path, change: Any) -> None:
        """A function span whose type is gone or unknown is bad-input, not a dropped call."""
        [(verdict, code, message)] = self._agents(tmp_path, change)
        assert (verdict, code) == ("ERROR", "bad-input"), message
        assert "span" in message and "type" in message

    def test_agents_unknown_type_without_a_call_is_skipped(self, tmp_path: Path) -> None:
        """A span kind a later SDK may add, carrying no call, is still ignored."""
        lines = (SEEDS / "openai_agents_intern_approval.jsonl").read_text().splitlines()
        extra = json.loads(lines[1])
        extra["id"] = "span_future"
        extra["span_data"] = {"type": "future_kind", "detail": {"x": 1}}
        path = tmp_path / "agents.jsonl"
        path.write_text("\n".join([*lines, json.dumps(extra)]) + "\n", encoding="utf-8")
        [(verdict, code, _)] = verdicts(FW_SPEC, path)
        assert (verdict, code) == ("BLOCK", "checkpoint-skipped")

    def _otel(self, tmp_path: Path, change: Any) -> list[tuple[str, str, str]]:
        doc = json.loads((SEEDS / "otel_intern_approval.json").read_text())
        spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        change(next(s for s in spans if s["name"] == "execute_tool send_report"))
        path = tmp_path / "otel.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        return verdicts(FW_SPEC, path)

    @staticmethod
    def _set_op(value: Any) -> Any:
        def change(span: dict[str, Any]) -> None:
            for attr in span["attributes"]:
                if attr["key"] == "gen_ai.operation.name":
                    attr["value"] = value
        return change

    def test_otel_baseline(self, tmp_path: Path) -> None:
        """The intern-approved send_report blocks."""
        [(verdict, code, _)] = self._otel(tmp_path, lambda s: None)
        assert (verdict, code) == ("BLOCK", "checkpoint-skipped")

    @pytest.mark.parametrize("change", [
        _set_op({"stringValue": "execute_tol"}), _set_op({"intValue": "5"}),
        lambda s: s.update(attributes=[a for a in s["attributes"]
                                       if a["key"] != "gen_ai.operation.name"]),
        lambda s: s.update(attributes=None)],
        ids=["misspelt", "number", "deleted", "attributes-null"])
    def test_otel_tool_span_of_unknown_operation(self, tmp_path: Path, change: Any) -> None:
        """A span that carries a tool call without the execute_tool operation is bad-input."""
        [(verdict, code, message)] = self._otel(tmp_path, change)
        assert (verdict, code) == ("ERROR", "bad-input"), message
        assert "execute_tool" in message


class TestAgentsRequiredKeys:
    """An Agents SDK record missing a key the reader needs is bad-input, never a dropped call.

    The SDK writes every key of a span (``output`` is null while a call has not
    run) and the recorder every key of its records, so a key that is gone was
    lost or misspelt: read without it, a call that ran would look like one that
    waited for approval, or an approval would get another checkpoint id.
    """

    REJECTED = FW / "openai_agents_rejected_then_approved.jsonl"

    def _agents(self, tmp_path: Path, source: Path, pick: Any,
                change: Any) -> list[tuple[str, str, str]]:
        records = [json.loads(raw) for raw in source.read_text().splitlines()]
        change(next(r for r in records if pick(r)))
        path = tmp_path / "agents.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        return verdicts(FW_SPEC, path)

    @staticmethod
    def _ran(rec: dict[str, Any]) -> bool:
        """The send_report span that ran (it has an output)."""
        data = rec.get("span_data") or {}
        return data.get("name") == "send_report" and data.get("output") is not None

    @staticmethod
    def _rename(where: str, old: str, new: str) -> Any:
        def change(rec: dict[str, Any]) -> None:
            holder = rec["span_data"] if where == "span_data" else rec
            holder[new] = holder.pop(old)
        return change

    def test_baseline(self, tmp_path: Path) -> None:
        """The call rejected through the recorder, then run anyway, blocks."""
        [(verdict, code, _)] = self._agents(tmp_path, self.REJECTED, self._ran, lambda r: None)
        assert (verdict, code) == ("BLOCK", "checkpoint-skipped")

    @pytest.mark.parametrize(("where", "old", "new"), [
        ("span_data", "output", "outptu"),
        ("span_data", "input", "inputs"),
        ("record", "error", "eror"),
        ("record", "parent_id", "parent"),
    ])
    def test_function_span_key_misspelt(self, tmp_path: Path, where: str, old: str,
                                        new: str) -> None:
        """A function span whose output (or input, error, parent) key is misspelt is
        refused, naming the line and the key, with the closest known name."""
        [(verdict, code, message)] = self._agents(tmp_path, self.REJECTED, self._ran,
                                                  self._rename(where, old, new))
        assert (verdict, code) == ("ERROR", "bad-input"), message
        assert "line 9:" in message and f"'{old}'" in message, message
        assert f"'{new}'" in message, message

    def test_function_span_key_gone(self, tmp_path: Path) -> None:
        """A function span without an ``output`` key at all is refused too."""
        [(verdict, code, message)] = self._agents(
            tmp_path, self.REJECTED, self._ran, lambda r: r["span_data"].pop("output"))
        assert (verdict, code) == ("ERROR", "bad-input"), message
        assert "line 9:" in message and "missing required key 'output'" in message

    def test_agent_span_without_a_name(self, tmp_path: Path) -> None:
        """An agent span names the agent of what it encloses: without a name it is refused."""
        [(verdict, code, message)] = self._agents(
            tmp_path, self.REJECTED,
            lambda r: (r.get("span_data") or {}).get("type") == "agent",
            self._rename("span_data", "name", "nmae"))
        assert (verdict, code) == ("ERROR", "bad-input"), message
        assert "'name'" in message and "'nmae'" in message

    @pytest.mark.parametrize(("kind", "old", "new"), [
        ("approval", "checkpoint_id", "checkpiont_id"),
        ("approval", "confirmed_by", "confirmd_by"),
        ("run_item", "type", "tpye"),
        ("run_item", "call_id", "callid"),
    ])
    def test_recorder_record_key_misspelt(self, tmp_path: Path, kind: str, old: str,
                                          new: str) -> None:
        """The recorder's own records (run items, approvals) have a fixed set of keys: an
        unknown one is refused with the closest known name."""
        def change(rec: dict[str, Any]) -> None:
            rec[new] = rec.pop(old) if old in rec else "x"

        [(verdict, code, message)] = self._agents(
            tmp_path, SEEDS / "openai_agents_intern_approval.jsonl",
            lambda r: r.get("object") == kind and (kind != "run_item"
                                                   or r.get("type") == "tool_approval_item"),
            change)
        assert (verdict, code) == ("ERROR", "bad-input"), message
        assert f"unknown key '{new}'; did you mean '{old}'?" in message, message
        assert "line " in message
