"""The C extension reads OTLP/JSON span lines exactly as the Python reader does.

``otel_index`` reads a file of ``resourceSpans`` lines in C and ``otel_map`` maps the runs
of the GenAI conventions to events; on anything else each gives way and Python reads or
maps. Whatever they vouch for must give the Python reader's runs, events, failures and
reports, byte for byte: on every span file in the repository (turned into OTLP/JSON lines
where it is one indented document), on the generated benchmark export, and on generated
and mutated lines.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import roadcheck._accel as accel  # a missing extension fails these tests; it never skips them
from roadcheck import _ext
from roadcheck.conformance import CompiledSpec, iter_replay, parse_spec
from roadcheck.events import Event, Trajectory
from roadcheck.ingest import ReadFailure
from roadcheck.ingest import otel as otel_mod
from roadcheck.ingest.otel import read_otel
from roadcheck.report.replay import render_result

from ..conftest import ROOT, load_script
from ..strategies import json_values

BENCH = ROOT / "benchmarks" / "reader_throughput.py"
SPAN_FILES = sorted(p for p in [*(ROOT / "tests" / "data").rglob("*.json*"),
                                *(ROOT / "examples").rglob("*.json*"),
                                *(ROOT / "docs").rglob("*.json*")]
                    if p.is_file() and b"resourceSpans" in p.read_bytes())
SPECS = [
    {"mandatory_checkpoints": [{"checkpoint_id": "approve_send_report",
                                "confirmed_by": ["owner"], "must_precede": "send_report"}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "ok", "must_precede": ["send", "send_email"],
                                "scope": "each", "consume": True}],
     "handoff_contracts": [{"from_agent": "a", "to_agent": "b", "required_fields": ["x"]}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "ok", "must_precede": "send"}],
     "derive": [{"checkpoint_id": "ok", "when": {"event": "action", "action_type": "approve"}}]},
]
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _as_lines(data: bytes) -> bytes | None:
    """An indented OTLP/JSON document (or a list of them) as one document a line."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    docs = doc if isinstance(doc, list) else [doc]
    if not all(isinstance(d, dict) and "resourceSpans" in d for d in docs):
        return None
    return b"".join(orjson.dumps(d) + b"\n" for d in docs)


def _corpus() -> Iterator[tuple[str, bytes]]:
    for path in SPAN_FILES:
        data = path.read_bytes()
        yield path.name, data
        lines = _as_lines(data)
        if lines is not None:
            yield path.name + " (lines)", lines


CORPUS = list(_corpus())


def _seen(entries: Any) -> list[str]:
    """Everything a reader gave, exactly (types, dict order and all)."""
    out = []
    for entry in entries:
        if isinstance(entry, Trajectory):
            out.append(repr((entry.id, entry.path, entry.source, list(entry.meta.items()),
                             [(tuple(e), list(e.data.items())) for e in entry.events])))
        else:
            assert isinstance(entry, ReadFailure)
            out.append(repr((entry.id, entry.path, entry.error.message, entry.error.line)))
    return out


def _use_c(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    monkeypatch.setattr(_ext, "_NATIVE", accel if on else None)
    monkeypatch.setattr(_ext, "_CHECK_LINES", accel.check_lines if on else None)


def _reading(monkeypatch: pytest.MonkeyPatch, data: bytes, on: bool,
             mapped: list[bool] | None = None, text: bool = True) -> list[str]:
    _use_c(monkeypatch, on)
    real = accel.otel_map

    def spy(*args: Any) -> Any:
        out = real(*args)
        if mapped is not None:
            mapped.append(out is not None)
        return out

    with monkeypatch.context() as m:
        m.setattr(accel, "otel_map", spy)
        return _seen(read_otel("spans.jsonl", data, text=text))


def _reports(monkeypatch: pytest.MonkeyPatch, data: bytes, on: bool, tmp_path: Path) -> list[Any]:
    _use_c(monkeypatch, on)
    path = tmp_path / "spans.jsonl"
    path.write_bytes(data)
    out = []
    for spec in SPECS:
        compiled = CompiledSpec(parse_spec(spec))
        for r in iter_replay(compiled, [str(path)], input_format="otel"):
            out.append((render_result(r, fmt="json").body, render_result(r).body))
    return out


def _agree(monkeypatch: pytest.MonkeyPatch, data: bytes, text: bool = True) -> list[bool]:
    """The C reading is the Python reading (with each tool result, or with none when not
    ``text``); which runs otel_map mapped."""
    mapped: list[bool] = []
    with_c = _reading(monkeypatch, data, True, mapped, text)
    assert with_c == _reading(monkeypatch, data, False, None, text), data[:2000]
    return mapped


@pytest.mark.parametrize(("name", "data"), CORPUS, ids=[n for n, _ in CORPUS])
def test_every_span_file_reads_alike(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                     name: str, data: bytes) -> None:
    """Every span file in the repository, and its OTLP/JSON lines: the same runs, events,
    failures, and reports byte for byte; without the text too."""
    _agree(monkeypatch, data)
    _agree(monkeypatch, data, text=False)
    assert _reports(monkeypatch, data, True, tmp_path) == _reports(monkeypatch, data, False,
                                                                    tmp_path)


def test_the_corpus_reaches_the_c_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    """Some recorded runs are mapped in C, others (other conventions) by Python."""
    mapped: list[bool] = []
    for _, data in CORPUS:
        mapped += _agree(monkeypatch, data)
    assert True in mapped and False in mapped


def test_the_benchmark_export_is_mapped_in_c(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    """The generated export: indexed and every run mapped in C, as Python reads it."""
    bench = load_script(BENCH)
    path = tmp_path / "spans.jsonl"
    bench.write_otel(path, 400_000)
    data = path.read_bytes()
    assert accel.otel_index(data, Event) is not None
    mapped = _agree(monkeypatch, data)
    assert mapped and all(mapped)
    assert _agree(monkeypatch, data, text=False) == mapped
    assert _reports(monkeypatch, data, True, tmp_path) == _reports(monkeypatch, data, False,
                                                                    tmp_path)


def test_the_index_gives_way_on_what_it_does_not_vouch_for() -> None:
    """Upper-case or base64 ids, an unknown field, a repeated key, a span attribute of the
    mapping given twice, a blank or unreadable file: None, and Python reads it."""
    line = (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"' + b"a" * 32
            + b'","spanId":"' + b"b" * 16 + b'","startTimeUnixNano":"1","attributes":[]}]}]}]}')
    assert accel.otel_index(line, Event) is not None
    for bad in (line.replace(b"a" * 32, b"A" * 32), line.replace(b'"traceId"', b'"x":1,"traceId"'),
                line.replace(b'"startTimeUnixNano":"1"', b'"startTimeUnixNano":"1","name":"a",'
                             b'"name":"b"'),
                line.replace(b'"attributes":[]', b'"attributes":[{"key":"gen_ai.tool.name","value":'
                             b'{"stringValue":"a"}},{"key":"gen_ai.tool.name","value":'
                             b'{"stringValue":"b"}}]'),
                line.replace(b'"1"', b'"1.5"'), line.replace(b'"1"', b'-1'),
                line[:-1], b"", b"\n \n", b"[]"):
        assert accel.otel_index(bad, Event) is None, bad


# -- generated lines -------------------------------------------------------------------------

_OPS = st.sampled_from([None, "execute_tool", "invoke_agent", "chat", "Execute_Tool"])
_NAMES = st.sampled_from(["", "a", "b", "bot", "triage", "sänd", "a", "b", "triage", "bot",
                          "a\\u00e9", 'x\\"y'])
_CONVERSATIONS = st.sampled_from(["", "c1", "c1", "c2", "c\\u00e9"])
_TOOLS = st.sampled_from(["send", "send_email", "lookup", "approve", "send", "", "t\\n"])
_DECISIONS = st.sampled_from(["approved", "APPROVED", "Approve", "rejected", "accepted", "",
                              "confirmed", "d\u00e9nied"])


def _text_of(raw: str) -> str:
    """JSON text written as a JSON string body (so escapes are as the strategies wrote)."""
    return orjson.dumps(raw).decode()[1:-1]


@st.composite
def _args(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 12)) - 5
    if kind == 0:
        return orjson.dumps(draw(json_values)).decode()
    if kind == 1:
        return '{"a": 1, "a": 2}'
    if kind == 2 and draw(st.booleans()):
        return draw(st.sampled_from(["", "  ", "not json", "{", "1.5", "[1, 2.0]", "1e400",
                                     '"\\ud800"', "01", "{\"k\": -0}", "123456789012345678901"]))
    return orjson.dumps(draw(st.dictionaries(st.sampled_from(["x", "account", "é", "k:"]),
                                             st.one_of(st.integers(-5, 5), st.text(max_size=5),
                                                       st.booleans(), st.none()),
                                             max_size=3))).decode()


@st.composite
def _attr(draw: st.DrawFn, key: str, value: str) -> str:
    shape = draw(st.integers(0, 40)) - 17  # hypothesis draws the bounds often
    if shape == 0:
        return f'{{"key":"{key}","value":{{"intValue":"7"}}}}'
    if shape == 1:
        return f'{{"key":"{key}"}}'
    if shape == 2:
        return f'{{"key":"{key}","value":{{"boolValue":true}}}}'
    return f'{{"key":"{key}","value":{{"stringValue":"{value}"}}}}'


@st.composite
def _span(draw: st.DrawFn, trace: str, k: int, ids: list[str]) -> str:
    attrs = []
    op = draw(_OPS)
    if op is not None:
        attrs.append(draw(_attr("gen_ai.operation.name", op)))
    # a call's attributes mostly on execute_tool spans (elsewhere the reader refuses them)
    calls = op == "execute_tool" or draw(st.integers(0, 10)) == 7
    for key, strategy in (("gen_ai.agent.name", _NAMES), ("gen_ai.tool.name", _TOOLS),
                          ("gen_ai.tool.call.id", _NAMES),
                          ("gen_ai.conversation.id", _CONVERSATIONS),
                          ("roadcheck.checkpoint.id", st.sampled_from(["ok", "", "other"])),
                          ("roadcheck.checkpoint.confirmed_by", _NAMES),
                          ("roadcheck.checkpoint.decision", _DECISIONS)):
        if key.startswith("gen_ai.tool.") and not calls:
            continue
        if draw(st.integers(0, 3)) == 1 or (key == "gen_ai.tool.name" and op == "execute_tool"):
            attrs.append(draw(_attr(key, draw(strategy))))
    for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"):
        if calls and draw(st.booleans()):
            attrs.append(draw(_attr(key, _text_of(draw(_args())))))
    if draw(st.integers(0, 12)) == 7:
        attrs.append('{"key":"' + draw(st.sampled_from(["openinference.span.kind",
                                                         "traceloop.span.kind"]))
                     + '","value":{"stringValue":"TOOL"}}')
    if draw(st.integers(0, 3)) == 0:
        attrs.append('{"key":"gen_ai.usage.input_tokens","value":{"intValue":'
                     + (draw(st.sampled_from(['"x"', '""', '"1.5"']))
                        if draw(st.integers(0, 30)) == 17
                        else draw(st.sampled_from(['"12"', "12", "40", '"-3"'])))
                     + "}}")
    draw(st.randoms()).shuffle(attrs)
    span_id = f"{k + 1:016x}"
    ids.append(span_id)
    parent = draw(st.sampled_from(["", "ffffffffffffffff", *ids[:-1]]))
    start = draw(st.integers(0, 3))
    fields = [f'"traceId":"{trace}"', f'"spanId":"{span_id}"',
              f'"parentSpanId":"{parent}"',
              '"name":"' + draw(st.sampled_from(["s", "s", "agent", "execute_tool",
                                                 "execute_tool x", "", "execute_tool "]))
              + '"',
              f'"startTimeUnixNano":"{start}"' if draw(st.booleans())
              else f'"startTimeUnixNano":{start}',
              '"endTimeUnixNano":"' + str(draw(st.integers(0, 5))) + '"',
              '"attributes":[' + ",".join(attrs) + "]"]
    status = draw(st.sampled_from(["", "", "", '{"code":2,"message":"boom"}',
                                   '{"code":"STATUS_CODE_ERROR"}', '{"code":1}', "{}",
                                   '{"code":2,"message":""}', "null", '{"code":2,"message":5}']))
    if draw(st.integers(0, 40)) == 17:
        status = '{"code":7}'  # not a status code: the reader gives way, Python says so
    if status:
        fields.append('"status":' + status)
    if draw(st.integers(0, 4)) == 0:
        event_attrs = [draw(_attr("roadcheck.checkpoint.id",
                                  draw(st.sampled_from(["ok", "", "o"]))))]
        if draw(st.booleans()):
            event_attrs.append(draw(_attr("roadcheck.checkpoint.decision", draw(_DECISIONS))))
        if draw(st.booleans()):
            event_attrs.append(draw(_attr("roadcheck.checkpoint.confirmed_by", draw(_NAMES))))
        fields.append('"events":[{"name":"other","timeUnixNano":"2"},{"name":"e",'
                      f'"timeUnixNano":"{draw(st.integers(0, 5))}","attributes":['
                      + ",".join(event_attrs) + "]}]")
    draw(st.randoms()).shuffle(fields)
    return "{" + ",".join(fields) + "}"


@st.composite
def otlp_lines(draw: st.DrawFn) -> bytes:
    """A few OTLP/JSON lines, a trace in one line or over several, several in one line."""
    traces = [f"{t + 1:032x}" for t in range(draw(st.integers(1, 3)))]
    ids: dict[str, list[str]] = {t: [] for t in traces}
    out = []
    k = 0
    for _ in range(draw(st.integers(1, 4))):
        spans = []
        for _ in range(draw(st.integers(1, 4))):
            trace = draw(st.sampled_from(traces))
            spans.append(draw(_span(trace, k, ids[trace])))
            k += 1
        out.append('{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"scope":'
                   '{"name":"x"},"spans":[' + ",".join(spans) + "]}]}]}")
    return ("\n".join(out) + "\n").encode()


@SETTINGS
@given(otlp_lines(), st.booleans())
def test_generated_lines_read_alike(data: bytes, text: bool) -> None:
    """Generated GenAI, OpenInference and OpenLLMetry spans, well and badly formed."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _agree(monkeypatch, data, text)


def test_without_the_text_only_the_results_go(monkeypatch: pytest.MonkeyPatch) -> None:
    """``text=False``: each action without its ``result``, nothing else changed."""
    from roadcheck.ingest import load

    bench = load_script(BENCH)
    data = b"".join(bench.otel_trace(i) for i in range(12))
    for on in (True, False):
        _use_c(monkeypatch, on)
        full = list(read_otel("s.jsonl", data))
        lean = list(read_otel("s.jsonl", data, text=False))
        assert len(full) == len(lean) == 12
        for a, b in zip(full, lean, strict=True):
            assert isinstance(a, Trajectory) and isinstance(b, Trajectory)
            assert [{k: v for k, v in e.data.items() if k != "result"} for e in a.events] == [
                dict(e.data) for e in b.events]
            assert any("result" in e.data for e in a.events)
            assert a.meta == b.meta and a.source == b.source
    assert load(str(ROOT / "examples" / "frameworks" / "otel" / "spans.jsonl"),
                text=False)[0] == "otel"


def _mutated(rnd: random.Random, seed: bytes) -> bytes:
    data = bytearray(seed)
    alphabet = b'{}[]",:\\ 0129abfe.-tnu\n\x00\xc3\xa9'
    for _ in range(rnd.randrange(1, 4)):
        op, at = rnd.random(), rnd.randrange(len(data) + 1)
        if op < 0.4:
            data[at:at] = bytes([rnd.choice(alphabet)])
        elif op < 0.8 and at < len(data):
            data[at] = rnd.choice(alphabet)
        else:
            del data[at:at + rnd.randrange(1, 8)]
    return bytes(data)


@SETTINGS
@given(st.integers(0, 2**32))
def test_mutated_lines_read_alike(seed: int) -> None:
    """Bytes set, inserted and removed in recorded and generated span lines: the same
    reading, a failure naming the same line and field included."""
    rnd = random.Random(seed)
    seeds = [d for name, d in CORPUS if name.endswith("(lines)") or name.endswith(".jsonl")]
    bench = load_script(BENCH)
    seeds.append(bench.otel_trace(rnd.randrange(100)))
    with pytest.MonkeyPatch.context() as monkeypatch:
        _agree(monkeypatch, _mutated(rnd, rnd.choice(seeds)))


def test_a_bad_span_is_the_same_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A malformed span the index gives way on: the one-line error of the Python reader."""
    bench = load_script(BENCH)
    good = bench.otel_trace(1)
    for bad in (good.replace(b'"startTimeUnixNano":"', b'"startTimeUnixNano":"x', 1),
                good.replace(b'"gen_ai.tool.name","value":{"stringValue":"lookup_account"}',
                             b'"gen_ai.tool.name","value":{"stringValue":""}', 1)):
        reading = _agree(monkeypatch, bench.otel_trace(0) + bad)
        assert reading is not None
        seen = _reading(monkeypatch, bench.otel_trace(0) + bad, True)
        assert any("line 2" in s or ", 2)" in s for s in seen), seen


def test_otel_map_checks_its_arguments() -> None:
    data = bytes(load_script(BENCH).otel_trace(0))
    index, traces = accel.otel_index(data, Event)
    assert len(traces) == 1
    with pytest.raises(IndexError):
        accel.otel_map(index, (5,), True)
    with pytest.raises(TypeError):
        accel.otel_map(object(), (0,), True)
    events, spans = accel.otel_map(index, (0,), False)
    assert spans == 10 and all("result" not in e.data for e in events)
    assert accel.otel_lines(index, (0,)) == [(1, 0, len(data) - 1, 0, 1)]
    assert otel_mod.spans_to_events  # the Python mapping stays the reference


@pytest.mark.parametrize("decision", ["approved", "APPROVED", "Approve", "accepted", "confirmed",
                                      "rejected", "", "denied", "approved ", "d\\u00e9nied",
                                      "d\u00e9nied", "Accepted"])
def test_every_decision_reads_alike(monkeypatch: pytest.MonkeyPatch, decision: str) -> None:
    """A checkpoint's decision on a span and on a span event: approved or not, alike."""
    bench = load_script(BENCH)
    line = bench.otel_trace(1).replace(
        b'"roadcheck.checkpoint.decision","value":{"stringValue":"approved"}',
        b'"roadcheck.checkpoint.decision","value":{"stringValue":"' + decision.encode() + b'"}')
    as_event = line.replace(b'"name":"approval",', b'"name":"approval","events":[{"name":"x"},'
                            b'{"timeUnixNano":"5","attributes":[{"key":"roadcheck.checkpoint.id",'
                            b'"value":{"stringValue":"ok"}},{"key":"roadcheck.checkpoint.decision",'
                            b'"value":{"stringValue":"' + decision.encode() + b'"}}]}],')
    assert as_event != line
    for data in (line, as_event):
        mapped = _agree(monkeypatch, data)
        assert mapped == [decision.isascii() and "\\" not in decision]


@pytest.mark.parametrize("name", ["execute_tool", "execute_tool ", "execute_tool x",
                                  "execute_toolx", "execute_too", "Execute_tool x", ""])
def test_a_call_without_its_operation_name_reads_alike(monkeypatch: pytest.MonkeyPatch,
                                                       name: str) -> None:
    """A span named as a tool call but without ``execute_tool``: the same failure (never a
    run mapped without the call), and a name that is no call's the same events."""
    line = (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"' + b"a" * 32
            + b'","spanId":"' + b"b" * 16 + b'","name":"' + name.encode()
            + b'","startTimeUnixNano":"1","attributes":[]}]}]}]}\n')
    mapped = _agree(monkeypatch, line)
    assert mapped == [not (name == "execute_tool" or name.startswith("execute_tool "))]


@SETTINGS
@given(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1), st.booleans())
def test_timestamps_read_alike(start: int, end: int, as_text: bool) -> None:
    """Every time a long long holds, as digits or a number: the same ``ts`` of each event."""
    def nanos(n: int) -> bytes:
        return b'"%d"' % n if as_text or n >= 10**18 else b"%d" % n

    line = (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"' + b"a" * 32
            + b'","spanId":"' + b"b" * 16 + b'","startTimeUnixNano":' + nanos(start)
            + b',"endTimeUnixNano":' + nanos(end) + b',"attributes":[{"key":'
            b'"roadcheck.checkpoint.id","value":{"stringValue":"ok"}}]}]}]}]}\n')
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _agree(monkeypatch, line) == [True]


def test_a_file_of_tiny_spans_is_read_by_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spans so small that their records in C would pass 30% of the file (past its first
    MB): the index gives way (memory stays near the file's size), and the reading is the
    same."""
    span = (b'{"traceId":"' + b"a" * 32 + b'","spanId":"%016x","startTimeUnixNano":"1"}')
    line = (b'{"resourceSpans":[{"scopeSpans":[{"spans":['
            + b",".join(span % k for k in range(1, 200)) + b"]}]}]}\n")
    tiny = line * 400  # 80,000 spans of 76 bytes: 13 MB of records for 6 MB
    assert accel.otel_index(tiny, Event) is None
    assert accel.otel_index(line * 20, Event) is not None  # within the first MB
    big = tiny.replace(b'"startTimeUnixNano":"1"', b'"startTimeUnixNano":"1","name":"'
                       + b"n" * 600 + b'"')
    assert accel.otel_index(big, Event) is not None
    assert _agree(monkeypatch, line) == [True]
    assert _agree(monkeypatch, line * 3) == [False]  # span ids given again: Python maps
