"""The Jaeger and Zipkin readers: real exports (tests/data/jaeger, tests/data/zipkin) and the
framework sample as each writes it, mapped exactly as the OpenTelemetry reader maps it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import roadcheck
from roadcheck.cli import cli
from roadcheck.events import Trajectory
from roadcheck.ingest import ReadFailure, detect_format, load

ROOT = Path(__file__).resolve().parents[2]
JAEGER = ROOT / "tests" / "data" / "jaeger"
ZIPKIN = ROOT / "tests" / "data" / "zipkin"
OTEL = ROOT / "examples" / "frameworks" / "otel" / "spans.jsonl"
SPEC = ROOT / "examples" / "frameworks" / "spec.yaml"


def _entries(path: Path, fmt: str | None = None) -> tuple[str, list[Any]]:
    got, entries = load(str(path), fmt)
    return got, list(entries)


def _one(path: Path, fmt: str | None = None) -> Trajectory | ReadFailure:
    _, entries = _entries(path, fmt)
    (entry,) = entries
    return entry


@pytest.mark.parametrize(("path", "fmt", "trace", "spans", "success"), [
    (JAEGER / "otlp2jaeger-out.json", "jaeger", "83a9efd15c1c98a977e0711cc93ee28b", 2, True),
    (JAEGER / "ui_01.json", "jaeger", "0000000000000001", 5, False),
    (ZIPKIN / "messaging.json", "zipkin", "5aab74dbb904746bb33447baae403ed6", 4, True),
])
def test_a_real_export_is_one_trajectory_per_trace(path: Path, fmt: str, trace: str,
                                                   spans: int, success: bool) -> None:
    got, entries = _entries(path)
    assert got == fmt
    (traj,) = entries
    assert isinstance(traj, Trajectory), traj
    assert traj.id == f"{path}#{trace}" and traj.source == fmt
    assert traj.meta == {"trace_id": trace, "spans": spans}
    # no GenAI span: nothing but the end of the trace, failed when its root span errored
    (final,) = traj.events
    assert final.kind == "final" and final.data["task_success"] is success


def test_the_real_jaeger_tags_are_read_with_their_types() -> None:
    from roadcheck.ingest import trace_json
    from roadcheck.ingest.trace_json import _jaeger_spans, _Out

    data = (JAEGER / "ui_01.json").read_bytes()
    out = _Out({}, [0])
    _jaeger_spans(json.loads(data), data, out)
    (spans,) = out.traces.values()
    tags = spans[1].attrs
    assert tags["peer.ipv4"] == 23456 and tags["error"] is True
    assert tags["temperature"] == 72.5 and tags["javascript_limit"] == 9223372036854775222
    assert tags["blob"] == "AAAwOQ=="
    assert spans[1].status == "ERROR" and spans[1].line == 37
    assert spans[0].events[0][0] == "some-event"
    assert trace_json.otel.Span is type(spans[0])


@pytest.mark.parametrize(("path", "fmt", "lines"), [
    (JAEGER / "built" / "frameworks.json", "jaeger", [29, 73, 112, 112, 167, None]),
    (ZIPKIN / "built" / "frameworks.json", "zipkin", [17, 35, 52, 52, 73, None]),
])
def test_genai_spans_map_as_the_otel_reader_maps_them(path: Path, fmt: str,
                                                      lines: list[int | None]) -> None:
    (want,) = _entries(OTEL)[1]
    traj = _one(path)
    assert isinstance(traj, Trajectory), traj
    assert [e.data for e in traj.events] == [e.data for e in want.events]
    assert [e.line for e in traj.events] == lines
    kinds = [(e.kind, e.action_type or e.data.get("to_agent") or e.data.get("checkpoint_id"))
             for e in traj.events]
    assert kinds == [("action", "lookup_account"), ("action", "transfer_to_reporter"),
                     ("handoff", "reporter"), ("checkpoint", "approve_send_report"),
                     ("action", "send_report"), ("final", None)]
    assert traj.events[4].data["error"] == "mail server refused"


@pytest.mark.parametrize("path", [JAEGER / "built" / "frameworks.json",
                                  ZIPKIN / "built" / "frameworks.json"])
def test_replay_judges_the_export_like_the_otel_spans(path: Path) -> None:
    (result,) = roadcheck.replay(str(SPEC), [str(path)]).results
    assert result.verdict == "PASS"
    doc = json.loads(path.read_bytes())
    # without the approval, the send is ungated
    if isinstance(doc, dict):
        for span in doc["data"][0]["spans"]:
            span["logs"] = []
    else:
        for span in doc:
            span.pop("annotations", None)
    (result,) = roadcheck.replay(str(SPEC), [{"seq": e.seq, **e.data} for e in _read_doc(
        path, doc).events]).results
    assert (result.verdict, [f.code.value for f in result.reasons]) == (
        "BLOCK", ["checkpoint-skipped"])


def _read_doc(path: Path, doc: Any) -> Trajectory:
    from roadcheck.ingest import reader

    fmt = detect_format(path.read_bytes())
    (traj,) = list(reader(fmt)(str(path), json.dumps(doc, indent=2).encode()))
    assert isinstance(traj, Trajectory), traj
    return traj


def test_detection_and_the_cli_names() -> None:
    for path, fmt in [(JAEGER / "otlp2jaeger-out.json", "jaeger"),
                      (JAEGER / "ui_01.json", "jaeger"), (ZIPKIN / "messaging.json", "zipkin")]:
        assert detect_format(path.read_bytes()) == fmt
    # a list of lists of spans, as /api/v2/traces answers
    nested = json.dumps([json.loads((ZIPKIN / "messaging.json").read_bytes())]).encode()
    assert detect_format(nested) == "zipkin"
    # other documents with a "data" list or a list of objects with ids are not taken
    assert detect_format(b'{"data": [{"id": 1}]}') == "unknown"
    assert detect_format(b'[{"id": 1, "source": "agent", "action": "run"}]') != "zipkin"
    res = CliRunner().invoke(cli, ["replay", str(SPEC), str(ZIPKIN / "messaging.json"),
                                   "--input-format", "zipkin"])
    assert res.exit_code == 0, res.output
    assert "(zipkin, 1 trajectory)" in res.stdout
    res = CliRunner().invoke(cli, ["replay", str(SPEC), str(JAEGER / "ui_01.json"),
                                   "--input-format", "jaeger"])
    assert res.exit_code == 0 and "(jaeger, 1 trajectory)" in res.stdout


def _write(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def _jaeger_doc() -> Any:
    return json.loads((JAEGER / "built" / "frameworks.json").read_bytes())


def _zipkin_doc() -> Any:
    return json.loads((ZIPKIN / "built" / "frameworks.json").read_bytes())


def test_a_malformed_span_is_an_error_naming_line_and_field(tmp_path: Path) -> None:
    doc = _jaeger_doc()
    doc["data"][0]["spans"][2]["startTime"] = "soon"
    path = _write(tmp_path, doc)
    entry = _one(path)
    assert isinstance(entry, ReadFailure)
    assert entry.error.line == 73
    assert entry.error.message == (
        "trace data[0]: spans[2]: 'startTime' must be an integer of microseconds, got str")
    res = CliRunner().invoke(cli, ["replay", str(SPEC), str(path)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "detail : line 73: trace data[0]: spans[2]: 'startTime'" in res.output


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


@pytest.mark.parametrize(("fmt", "place", "value", "message"), [
    ("jaeger", ("data",), {}, "'data' must be a list of traces"),
    ("jaeger", ("data",), [], "the file holds no run: no span in this jaeger export"),
    ("jaeger", ("data", 0, "spans", 0, "spanID"), "xyz", "trace data[0]: spans[0]: 'spanID'"),
    ("jaeger", ("data", 0, "spans", 1, "tags", 0, "type"), "text",
     "trace data[0]: spans[1]: 'tags'[0]: unknown tag type 'text'"),
    ("jaeger", ("data", 0, "spans", 1, "tags", 0, "value"), 7,
     "trace data[0]: spans[1]: 'tags'[0] ('gen_ai.operation.name'): a string tag holds int"),
    ("jaeger", ("data", 0, "spans", 1, "references", 0, "refType"), "PARENT",
     "trace data[0]: spans[1]: references[0]: unknown refType 'PARENT'"),
    ("jaeger", ("data", 0, "spans", 3, "logs", 0, "fields"), {},
     "trace data[0]: spans[3]: logs[0].fields must be a list"),
    ("jaeger", ("data", 0, "spans", 0, "operationName"), 5,
     "trace data[0]: spans[0]: 'operationName' must be a string"),
    ("zipkin", (1, "tags"), {"gen_ai.tool.name": 3}, "span [1]: 'tags' must be an object of"),
    ("zipkin", (1, "timestamp"), -5, "span [1]: 'timestamp' -5 is out of range"),
    ("zipkin", (1, "traceId"), None, "span [1]: missing required key"),
    ("zipkin", (3, "annotations"), [{"timestamp": 1}], "span [3]: annotations[0] must be"),
])
def test_malformed_structure_fails_closed(tmp_path: Path, fmt: str, place: tuple[Any, ...],
                                          value: Any, message: str) -> None:
    doc = _jaeger_doc() if fmt == "jaeger" else _zipkin_doc()
    _set(doc, place, value)
    entry = _one(_write(tmp_path, doc), fmt)
    assert isinstance(entry, ReadFailure)
    assert entry.error.message.startswith(message), entry.error.message
    assert entry.error.line is not None


def test_a_tool_span_without_its_tool_name_is_that_traces_error(tmp_path: Path) -> None:
    doc = _zipkin_doc()
    del doc[1]["tags"]["gen_ai.tool.name"]
    entry = _one(_write(tmp_path, doc))
    assert isinstance(entry, ReadFailure)
    assert "execute_tool span has no 'gen_ai.tool.name'" in entry.error.message
    assert entry.error.message.startswith("trace 5b8efff798038103d269b633813fc60c: span 1")


def test_a_repeated_tag_or_key_is_refused(tmp_path: Path) -> None:
    doc = _jaeger_doc()
    tags = doc["data"][0]["spans"][1]["tags"]
    tags.append(dict(tags[0]))
    entry = _one(_write(tmp_path, doc))
    assert isinstance(entry, ReadFailure)
    assert "tag 'gen_ai.operation.name' is given twice" in entry.error.message
    path = tmp_path / "dup.json"
    path.write_bytes((ZIPKIN / "messaging.json").read_bytes().replace(
        b'"name": "publish",', b'"name": "publish", "name": "x",'))
    entry = _one(path)
    assert isinstance(entry, ReadFailure) and "duplicate key 'name'" in entry.error.message
