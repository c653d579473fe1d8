"""The OpenTelemetry reader: OTLP/JSON and SDK ``to_json`` spans into events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roadcheck import replay
from roadcheck.events import Trajectory
from roadcheck.ingest import ReadFailure, detect_format, load
from roadcheck.ingest import otel as otel_mod

DATA = Path(__file__).resolve().parent.parent / "data" / "frameworks"
SPEC = DATA / "spec.yaml"
TRACE = "5b8efff798038103d269b633813fc60c"


def entries(path: Path, fmt: str | None = None) -> list[Trajectory | ReadFailure]:
    got, items = load(str(path), fmt)
    assert got == "otel"
    return list(items)


def one(path: Path) -> Trajectory:
    (traj,) = entries(path)
    assert isinstance(traj, Trajectory), traj
    return traj


def sdk_span(name: str, span_id: str, parent: str | None, start: str, attrs: dict[str, Any],
             trace: str = TRACE, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"name": name, "context": {"trace_id": "0x" + trace, "span_id": "0x" + span_id},
            "parent_id": "0x" + parent if parent else None,
            "start_time": f"2026-07-11T03:14:{start}Z", "end_time": f"2026-07-11T03:14:{start}Z",
            "status": {"status_code": "UNSET"}, "attributes": attrs, "events": events or []}


def tool(name: str, span_id: str, parent: str, start: str, trace: str = TRACE,
         **extra: Any) -> dict[str, Any]:
    return sdk_span(f"execute_tool {name}", span_id, parent, start,
                    {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, **extra},
                    trace=trace)


def agent(name: str, span_id: str, parent: str | None, start: str,
          trace: str = TRACE) -> dict[str, Any]:
    return sdk_span(f"invoke_agent {name}", span_id, parent, start,
                    {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
                    trace=trace)


def write_lines(tmp_path: Path, spans: list[dict[str, Any]], indent: int | None = None) -> Path:
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(s, indent=indent) + "\n" for s in spans))
    return path


class TestOtlpJson:
    def test_hex_and_base64_ids_read_the_same(self) -> None:
        """Hex ids and base64 ids give the same trajectory, trace id in hex."""
        hex_traj = one(DATA / "otel_otlp_hex.json")
        b64_traj = one(DATA / "otel_otlp_base64.jsonl")
        assert hex_traj.id.endswith("#" + TRACE) and b64_traj.id.endswith("#" + TRACE)
        assert [e.to_dict() for e in hex_traj.events] == [e.to_dict() for e in b64_traj.events]

    def test_mapping(self) -> None:
        """Tools are actions, the agent under a tool is a handoff, the span event a checkpoint."""
        traj = one(DATA / "otel_otlp_hex.json")
        assert [e.kind for e in traj.events] == [
            "action", "action", "handoff", "checkpoint", "action", "final"]
        lookup = traj.events[0]
        assert lookup.agent == "triage" and lookup.get("args") == {"name": "acme"}
        assert lookup.get("result") == {"account": "acme", "open_tickets": 3}
        assert lookup.get("call_id") == "call_1"
        handoff = traj.events[2]
        assert handoff.data["from_agent"] == "triage" and handoff.data["to_agent"] == "reporter"
        assert handoff.data["payload"] == {"account": "acme"}
        cp = traj.events[3]
        assert (cp.data["checkpoint_id"], cp.data["confirmed_by"], cp.agent) == (
            "approve_send_report", "owner", "reporter")
        send = traj.events[4]
        assert send.data["error"] == "mail server refused" and send.agent == "reporter"
        assert traj.events[0].ts == "2026-05-28T20:26:40.010000Z"

    def test_detected(self) -> None:
        for name in ("otel_otlp_hex.json", "otel_otlp_base64.jsonl"):
            assert detect_format((DATA / name).read_bytes()) == "otel"

    def test_replays(self) -> None:
        run = replay(SPEC, [str(DATA / "otel_otlp_hex.json")])
        assert run.results[0].verdict == "PASS"


class TestSdkJson:
    def spans(self) -> list[dict[str, Any]]:
        return [
            agent("triage", "00000000000000a1", None, "00"),
            tool("transfer_to_reporter", "00000000000000a2", "00000000000000a1", "01",
                 **{"gen_ai.tool.call.arguments": '{"account": "acme"}'}),
            agent("reporter", "00000000000000a3", "00000000000000a2", "02"),
            tool("send_report", "00000000000000a4", "00000000000000a3", "03"),
        ]

    def test_lines_and_indented_objects(self, tmp_path: Path) -> None:
        """One span per line, or the indented objects a console exporter prints."""
        a = one(write_lines(tmp_path, self.spans()))
        b = one(write_lines(tmp_path, self.spans(), indent=4))
        assert [e.to_dict() for e in a.events] == [e.to_dict() for e in b.events]
        assert [e.kind for e in a.events] == ["action", "handoff", "action", "final"]

    def test_without_approval_blocks(self, tmp_path: Path) -> None:
        run = replay(SPEC, [str(write_lines(tmp_path, self.spans()))])
        assert run.results[0].headline == "checkpoint-skipped"

    @pytest.mark.parametrize(("decision", "kept"), [
        ("approved", True), (None, True), ("rejected", False), ("denied", False)])
    def test_decision(self, tmp_path: Path, decision: str | None, kept: bool) -> None:
        """Only an approval (or an unqualified checkpoint) is a checkpoint event."""
        attrs = {"roadcheck.checkpoint.id": "approve_send_report",
                 "roadcheck.checkpoint.confirmed_by": "owner"}
        if decision is not None:
            attrs["roadcheck.checkpoint.decision"] = decision
        spans = [*self.spans()[:3], sdk_span("approval", "00000000000000b1", "00000000000000a3",
                                             "02.5", attrs), self.spans()[3]]
        traj = one(write_lines(tmp_path, spans))
        cps = [e for e in traj.events if e.kind == "checkpoint"]
        assert len(cps) == (1 if kept else 0)
        verdict = replay(SPEC, [str(tmp_path / "spans.jsonl")]).results[0].verdict
        assert verdict == ("PASS" if kept else "BLOCK")

    def test_one_trajectory_per_trace(self, tmp_path: Path) -> None:
        """Two traces in one file: two trajectories; a broken one does not stop the other."""
        other = "f" * 32
        broken = tool("send_report", "00000000000000c2", "00000000000000c1", "05", trace=other)
        del broken["attributes"]["gen_ai.tool.name"]
        spans = [*self.spans(), agent("triage", "00000000000000c1", None, "04", trace=other),
                 broken]
        got = entries(write_lines(tmp_path, spans))
        assert isinstance(got[0], Trajectory) and got[0].id.endswith("#" + TRACE)
        assert isinstance(got[1], ReadFailure) and got[1].id.endswith("#" + other)
        assert "span 5 ('execute_tool send_report', span id 00000000000000c2)" in \
            got[1].error.message


class TestMalformed:
    @pytest.mark.parametrize(("content", "message"), [
        (b'{"resourceSpans": [', "unparseable JSON"),
        (b'{"resourceSpans": {}}', "'resourceSpans' must be a list"),
        (b'{"resourceSpans": []}', "no spans"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x", "traceId": "zz", '
         b'"spanId": "a000000000000001", "startTimeUnixNano": "1"}]}]}]}',
         "span 0 ('x'): traceId 'zz' is neither 32 hex digits nor base64 of 16 bytes"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x", "traceId": '
         b'"5b8efff798038103d269b633813fc60c", "spanId": "a000000000000001"}]}]}]}',
         "span 0 ('x'): startTimeUnixNano must be nanoseconds since the epoch"),
        (b'{"name": "y", "context": {"trace_id": "0x5b8efff798038103d269b633813fc60c"}, '
         b'"start_time": "2026-07-11T03:14:00Z"}', "span 0 ('y'): missing span_id"),
        (b'{"name": "y", "context": 3}', "span 0 ('y'): missing 'context' object"),
    ])
    def test_bad_file(self, tmp_path: Path, content: bytes, message: str) -> None:
        path = tmp_path / "bad.json"
        path.write_bytes(content)
        (failure,) = entries(path, "otel")
        assert isinstance(failure, ReadFailure)
        assert message in failure.error.message

    def test_missing_tool_name_names_the_span(self) -> None:
        (failure,) = entries(DATA / "otel_missing_tool_name.json")
        assert isinstance(failure, ReadFailure)
        assert failure.error.message == (
            f"trace {TRACE}: span 4 ('execute_tool send_report', span id a000000000000005): "
            "execute_tool span has no 'gen_ai.tool.name'")
        run = replay(SPEC, [str(DATA / "otel_missing_tool_name.json")])
        assert (run.results[0].verdict, run.results[0].headline) == ("ERROR", "bad-input")


def test_a_chat_document_with_a_context_key_is_not_otel() -> None:
    """Only a span object (``context`` with span ids) or ``resourceSpans`` is OTel."""
    assert detect_format(b'{"context": "billing", "messages": [{"role": "user"}]}') \
        == "openai-chat"


class TestLineByLine:
    """Spans are built as each line is decoded, with the errors of a whole-file reading."""

    SPAN = ('{"context": {"trace_id": "0x5b8efff798038103d269b633813fc60c", '
            '"span_id": "0x%016x"}, "name": "s", "start_time": "2026-01-01T00:00:00Z", '
            '"attributes": {}}')

    def test_a_repeated_key_later_is_refused_before_a_bad_span_earlier(self) -> None:
        from roadcheck.errors import TraceError
        from roadcheck.ingest.otel import parse_spans

        bad_span = '{"context": {"trace_id": "zz", "span_id": "0x01"}, "name": "x"}'
        dup = self.SPAN % 2
        dup = dup[:-1] + ', "name": "again"}'
        with pytest.raises(TraceError) as info:
            parse_spans(f"{self.SPAN % 1}\n{bad_span}\n{dup}\n".encode())
        assert "duplicate key 'name'" in str(info.value)
        assert info.value.line == 3

    def test_a_bad_span_names_its_line(self) -> None:
        from roadcheck.errors import TraceError
        from roadcheck.ingest.otel import parse_spans

        bad_span = '{"context": {"trace_id": "zz", "span_id": "0x01"}, "name": "x"}'
        with pytest.raises(TraceError) as info:
            parse_spans(f"{self.SPAN % 1}\n\n{bad_span}\n".encode())
        assert info.value.line == 3
        assert "trace_id 'zz'" in str(info.value)

    def test_an_indented_object_after_one_line_objects_is_read_whole(self) -> None:
        from roadcheck.ingest.otel import parse_spans

        indented = json.dumps(json.loads(self.SPAN % 2), indent=2)
        spans = parse_spans(f"{self.SPAN % 1}\n{indented}\n".encode())
        assert [s.span_id for s in spans] == [f"{1:016x}", f"{2:016x}"]


def otlp_span(n: int, parent: int | None, name: str, attrs: dict[str, str]) -> dict[str, Any]:
    """An OTLP/JSON span of the trace :data:`TRACE`, its id ``n``, string attributes only."""
    return {"traceId": TRACE, "spanId": f"{n:016x}",
            "parentSpanId": f"{parent:016x}" if parent else "", "name": name, "kind": 1,
            "startTimeUnixNano": str(1_780_000_000_000_000_000 + n * 1000),
            "endTimeUnixNano": str(1_780_000_000_000_000_000 + n * 1000 + 500),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
            "status": {}}


def otlp_line(spans: list[dict[str, Any]]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]},
                      separators=(",", ":"))


class TestDeepInput:
    """Input nested past any parser's recursion is one clear failure naming its file and
    line, never a crash; a long chain of spans is judged as any other trace."""

    LEVELS = 2000

    def deep_span_file(self, tmp_path: Path, indent: bool) -> Path:
        """One span whose attribute is an ``arrayValue`` nested :attr:`LEVELS` deep, as
        text (the standard library's encoder would recurse)."""
        value = ('{"arrayValue": {"values": [' * self.LEVELS + '{"stringValue": "x"}'
                 + "]}}" * self.LEVELS)
        span = otlp_line([otlp_span(1, None, "s", {"k": "@"})])
        text = span.replace('{"stringValue":"@"}', value)
        if indent:  # the line break inside the document: the value is still at line 1
            text = text.replace('"scopeSpans":', '\n  "scopeSpans":')
        path = tmp_path / "deep.json"
        path.write_text(text + "\n")
        return path

    @pytest.mark.parametrize("indent", [False, True])
    def test_a_2000_deep_array_value_is_unparseable_at_its_line(self, tmp_path: Path,
                                                                 indent: bool) -> None:
        from click.testing import CliRunner

        from roadcheck.cli import cli

        path = self.deep_span_file(tmp_path, indent)
        (failure,) = entries(path, "otel")
        assert isinstance(failure, ReadFailure)
        assert failure.path == str(path) and failure.error.line == 1
        assert failure.error.message.startswith("unparseable JSON: maximum recursion depth")
        result = CliRunner().invoke(cli, ["replay", str(SPEC), str(path)])
        assert result.exit_code == 2, result.output
        assert f"input: {path} (otel" in result.output
        assert "line 1: unparseable JSON: maximum recursion depth" in result.output
        assert "Traceback" not in result.output and "internal error" not in result.output

    def test_a_2000_span_parent_chain_is_judged(self, tmp_path: Path) -> None:
        """Each span the child of the one before: every tool call is the root agent's."""
        spans = [otlp_span(1, None, "invoke_agent triage",
                           {"gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": "triage"})]
        for n in range(2, self.LEVELS + 1):
            attrs = ({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
                     if n % 2 else {"gen_ai.operation.name": "chat"})
            spans.append(otlp_span(n, n - 1, f"span {n}", attrs))
        path = tmp_path / "chain.jsonl"
        path.write_text(otlp_line(spans) + "\n")
        traj = one(path)
        assert traj.meta["spans"] == self.LEVELS
        actions = [e for e in traj.events if e.kind == "action"]
        assert len(actions) == self.LEVELS // 2 - 1 + self.LEVELS % 2
        assert {e.agent for e in actions} == {"triage"}
        assert traj.events[-1].kind == "final" and traj.events[-1].agent == "triage"
        assert replay(SPEC, [str(path)]).results[0].verdict == "PASS"


def test_the_cycle_collector_runs_again_after_a_reading(tmp_path: Path) -> None:
    """The first reading pauses the cyclic collector; it is back on once the file is
    read, and after a file that fails to read, and left off when it was off."""
    import gc

    good = tmp_path / "good.jsonl"
    good.write_text(otlp_line([otlp_span(1, None, "s", {})]) + "\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(otlp_line([otlp_span(1, None, "s", {})]).replace('"kind"', '"name"')
                   + "\n")
    assert gc.isenabled()
    assert isinstance(one(good), Trajectory) and gc.isenabled()
    (failure,) = entries(bad, "otel")
    assert isinstance(failure, ReadFailure) and "duplicate key 'name'" in failure.error.message
    assert gc.isenabled()
    gc.disable()
    try:
        assert isinstance(one(good), Trajectory) and not gc.isenabled()
    finally:
        gc.enable()


@settings(max_examples=500, deadline=None)
@given(st.integers(0, otel_mod._MAX_NANOS))
def test_span_times_print_as_datetime_prints_them(nanos: int) -> None:
    """A span's time in nanoseconds prints as UTC with microseconds, as datetime does."""
    from datetime import UTC, datetime, timedelta

    secs, rest = divmod(nanos, 1_000_000_000)
    expected = (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=secs, microseconds=rest
                                                             // 1000))
    assert otel_mod._iso(nanos) == expected.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.mark.parametrize("indent", [None, 1])  # the typed one-pass path, and the walk
def test_a_value_of_a_kind_otlp_does_not_define_is_refused(tmp_path: Path,
                                                            indent: int | None) -> None:
    """A misspelt ``stringValue`` on the tool name would drop the tool span (a push read
    as no call at all); the file is refused instead, naming the span."""
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
            "name": "execute_tool send_report", "startTimeUnixNano": "1",
            "endTimeUnixNano": "2", "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                {"key": "gen_ai.tool.name", "value": {"strngValue": "send_report"}}]}
    doc = {"resourceSpans": [{"resource": {"attributes": []},
                              "scopeSpans": [{"spans": [span]}]}]}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc, indent=indent, separators=None if indent else (",", ":")))
    fmt, entries = load(str(path))
    (entry,) = list(entries)
    assert fmt == "otel" and isinstance(entry, ReadFailure)
    assert ("span 0 ('execute_tool send_report'): attribute value has the unknown kind "
            "'strngValue'") in entry.error.message
    # an empty AnyValue is OTLP's empty value, read as null (and a tool span without its
    # name is refused for that)
    span["attributes"][1]["value"] = {"stringValue": "send_report"}
    span["attributes"].append({"key": "app.note", "value": {}})
    path.write_text(json.dumps(doc, indent=indent))
    _, entries = load(str(path))
    assert not isinstance(next(iter(entries)), ReadFailure)


OPENINFERENCE = DATA / "openinference" / "approved.json"


def _rejected_doc() -> dict[str, Any]:
    """The OpenInference sample with its approval recorded as rejected: BLOCK as written."""
    doc = json.loads(OPENINFERENCE.read_text())
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for event in span.get("events") or []:
            for attr in event["attributes"]:
                if attr["key"] == "roadcheck.checkpoint.decision":
                    attr["value"] = {"stringValue": "rejected"}
    return doc


def _spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return spans


def _span(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in _spans(doc) if s["name"] == name)


def _decision(doc: dict[str, Any]) -> dict[str, Any]:
    attrs = _span(doc, "reporter")["events"][0]["attributes"]
    return next(a for a in attrs if a["key"] == "roadcheck.checkpoint.decision")


def _rename(holder: dict[str, Any], old: str, new: str) -> None:
    holder[new] = holder.pop(old)


def _send_report_apart(doc: dict[str, Any], scope: bool) -> None:
    """Move the send_report span into a scopeSpans entry of its own (with ``spans``
    misspelt), or a resourceSpans entry of its own (with ``scopeSpans`` misspelt)."""
    span = _span(doc, "send_report")
    _spans(doc).remove(span)
    if scope:
        doc["resourceSpans"][0]["scopeSpans"].append({"scope": {"name": "x"}, "spanz": [span]})
    else:
        doc["resourceSpans"].append({"resource": {}, "scopeSpanz": [{"spans": [span]}]})


#: (what changes, the key or kind the error names)
MISSHAPEN: dict[str, tuple[Any, str]] = {
    "two-kinds": (lambda d: _decision(d).update(value={"stringValue": "rejected",
                                                       "intValue": "3"}), "intValue"),
    "two-kinds-on-the-tool-name": (
        lambda d: _span(d, "send_report")["attributes"][1].update(
            value={"stringValue": "send_report", "boolValue": True}), "boolValue"),
    "attributes-misspelt": (lambda d: _rename(_span(d, "send_report"), "attributes",
                                              "atributes"), "atributes"),
    "value-misspelt": (lambda d: _rename(_decision(d), "value", "vlaue"), "vlaue"),
    "key-misspelt": (lambda d: _rename(_decision(d), "key", "kee"), "key"),
    "event-attributes-misspelt": (
        lambda d: _rename(_span(d, "reporter")["events"][0], "attributes", "attribute"),
        "attribute"),
    "event-time-misspelt": (
        lambda d: _rename(_span(d, "reporter")["events"][0], "timeUnixNano", "timeUnixNanos"),
        "timeUnixNanos"),
    "status-code-misspelt": (
        lambda d: _span(d, "send_report").update(status={"cod": 2, "message": "failed"}),
        "cod"),
    "spans-misspelt": (lambda d: _send_report_apart(d, True), "spanz"),
    "scopeSpans-misspelt": (lambda d: _send_report_apart(d, False), "scopeSpanz"),
}


class TestMisshapenFields:
    """A field the reader needs, misspelt or given twice over, is the file's ERROR naming
    the line and the field: read as absent it would drop a span, a span event or an
    approval's decision, and a rejected approval would read as no decision at all."""

    @staticmethod
    def write(tmp_path: Path, doc: dict[str, Any], indent: int | None) -> Path:
        path = tmp_path / "spans.json"
        path.write_text(json.dumps(doc, indent=indent,
                                   separators=None if indent else (",", ":")) + "\n")
        return path

    @pytest.mark.parametrize("indent", [None, 1])  # one compact line, and the walk
    def test_baseline_blocks(self, tmp_path: Path, indent: int | None) -> None:
        path = self.write(tmp_path, _rejected_doc(), indent)
        assert replay(SPEC, [str(path)]).results[0].verdict == "BLOCK"

    @pytest.mark.parametrize("indent", [None, 1])
    @pytest.mark.parametrize("name", sorted(MISSHAPEN))
    def test_refused_naming_line_and_field(self, tmp_path: Path, name: str,
                                           indent: int | None) -> None:
        change, field = MISSHAPEN[name]
        doc = _rejected_doc()
        change(doc)
        path = self.write(tmp_path, doc, indent)
        (failure,) = entries(path, "otel")
        assert isinstance(failure, ReadFailure), failure
        assert failure.error.line == 1
        assert repr(field) in failure.error.message, failure.error.message
        result = replay(SPEC, [str(path)]).results[0]
        assert (result.verdict, result.headline) == ("ERROR", "bad-input")

    def test_two_kinds_on_the_command_line(self, tmp_path: Path) -> None:
        """The one-line ERROR names the file, the line and both kinds; exit 2."""
        from click.testing import CliRunner

        from roadcheck.cli import cli

        doc = _rejected_doc()
        MISSHAPEN["two-kinds"][0](doc)
        path = self.write(tmp_path, doc, None)
        result = CliRunner().invoke(cli, ["replay", str(SPEC), str(path)])
        assert result.exit_code == 2, result.output
        assert (f"input: {path} (otel" in result.output
                and "line 1: span 3 ('reporter'): attribute 'roadcheck.checkpoint.decision' "
                    "sets more than one kind, 'stringValue' and 'intValue': an AnyValue holds "
                    "exactly one" in result.output), result.output
        assert "Traceback" not in result.output

    @pytest.mark.parametrize(("where", "old", "new"), [
        ("span", "attributes", "atributes"), ("span", "events", "event"),
        ("status", "status_code", "code"), ("event", "attributes", "atributes")])
    def test_sdk_spans(self, tmp_path: Path, where: str, old: str, new: str) -> None:
        """The same for SDK span objects: a misspelt key is refused, naming it."""
        send = tool("send_report", "00000000000000a4", "00000000000000a3", "03")
        send["events"] = [{"name": "approval", "timestamp": "2026-07-11T03:14:02Z",
                           "attributes": {"roadcheck.checkpoint.id": "approve_send_report"}}]
        holder = {"span": send, "status": send["status"], "event": send["events"][0]}[where]
        _rename(holder, old, new)
        spans = [*TestSdkJson().spans()[:3], send]
        (failure,) = entries(write_lines(tmp_path, spans))
        assert isinstance(failure, ReadFailure), failure
        assert failure.error.line == 4 and repr(new) in failure.error.message, failure.error


#: (what changes, the words of the error): fields the reader needs, of the wrong type.
MISTYPED: dict[str, tuple[Any, str]] = {
    "attributes-object": (lambda d: _span(d, "send_report").update(
        attributes={"tool.name": "send_report"}), "attributes must be a list, got dict"),
    "attribute-key-number": (lambda d: _decision(d).update(key=5),
                             "an attribute has no 'key' string"),
    "intValue-text": (lambda d: _decision(d).update(value={"intValue": "x"}),
                      "intValue 'x' is not an integer"),
    "boolValue-text": (lambda d: _decision(d).update(value={"boolValue": "true"}),
                       "boolValue 'true' has the wrong type"),
    "events-object": (lambda d: _span(d, "reporter").update(events={}),
                      "'events' must be a list, got dict"),
    "event-not-an-object": (lambda d: _span(d, "reporter").update(events=[3]),
                            "a span event is not an object"),
    "status-list": (lambda d: _span(d, "send_report").update(status=[2]),
                    "'status' must be an object, got list"),
    "start-bool": (lambda d: _span(d, "send_report").update(startTimeUnixNano=True),
                   "startTimeUnixNano must be nanoseconds since the epoch, got bool"),
}


@pytest.mark.parametrize("indent", [None, 1])
@pytest.mark.parametrize("name", sorted(MISTYPED))
def test_a_field_of_the_wrong_type_is_refused(tmp_path: Path, name: str,
                                              indent: int | None) -> None:
    """A field the reader needs, of another type, is the file's ERROR naming the line and
    the field, on the typed path and the walk alike."""
    change, words = MISTYPED[name]
    doc = _rejected_doc()
    change(doc)
    (failure,) = entries(TestMisshapenFields.write(tmp_path, doc, indent), "otel")
    assert isinstance(failure, ReadFailure), failure
    assert failure.error.line == 1 and words in failure.error.message, failure.error.message


def _nested_value_line(where: str, value: str) -> str:
    """A compact line of one tool span whose resource, scope, link or own attribute ``k``
    holds ``value`` (JSON text)."""
    span = otlp_span(1, None, "execute_tool lookup",
                     {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"})
    attr = [{"key": "k", "value": {"stringValue": "@"}}]
    doc: dict[str, Any] = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    if where == "resource":
        doc["resourceSpans"][0]["resource"] = {"attributes": attr}
    elif where == "scope":
        doc["resourceSpans"][0]["scopeSpans"][0]["scope"] = {"name": "s", "attributes": attr}
    elif where == "link":
        span["links"] = [{"traceId": TRACE, "spanId": f"{2:016x}", "attributes": attr}]
    else:
        span["attributes"] += attr
    return json.dumps(doc, separators=(",", ":")).replace('{"stringValue":"@"}', value)


@pytest.mark.parametrize("where", ["resource", "scope", "link", "span"])
def test_a_repeated_key_inside_a_nested_attribute_value_is_refused(tmp_path: Path,
                                                                   where: str) -> None:
    """A key given twice inside a ``kvlistValue`` is refused wherever the attribute sits,
    the line written compact as exporters write it."""
    path = tmp_path / "dup.jsonl"
    path.write_text(_nested_value_line(
        where, '{"kvlistValue":{"values":[{"key":"a","value":{"stringValue":"1"}}],'
               '"values":[]}}') + "\n")
    (failure,) = entries(path, "otel")
    assert isinstance(failure, ReadFailure)
    assert failure.error.line == 1
    assert failure.error.message.startswith("duplicate key 'values' in one object")


@pytest.mark.parametrize("where", ["resource", "scope", "link", "span"])
def test_a_nested_attribute_value_past_the_depth_limit_is_refused(tmp_path: Path,
                                                                  where: str) -> None:
    """An ``arrayValue`` nested past the limit every reader keeps is refused wherever the
    attribute sits, and a shallow one is read."""
    deep = '{"arrayValue":{"values":[' * 130 + '{"stringValue":"x"}' + "]}}" * 130
    path = tmp_path / "deep.jsonl"
    path.write_text(_nested_value_line(where, deep) + "\n")
    (failure,) = entries(path, "otel")
    assert isinstance(failure, ReadFailure)
    assert failure.error.line == 1 and "nested more than 250 levels deep" in \
        failure.error.message
    path.write_text(_nested_value_line(
        where, '{"arrayValue":{"values":[{"stringValue":"x"},{"intValue":"3"}]}}') + "\n")
    traj = one(path)
    assert [e.data["action_type"] for e in traj.events if e.kind == "action"] == ["lookup"]
