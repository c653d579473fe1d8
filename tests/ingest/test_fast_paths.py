"""The OTel and Claude Code readers' typed fast paths read exactly what their strict paths read.

Each reader decodes a large file into msgspec structs first and gives way to its
strict reading (orjson, every value checked in Python) for anything unusual. The
two must agree on every file: the same trajectories, events, records and lines,
and the same one-line errors. Every test here runs twice: with the repeated-key
check of the C extension (``check_lines``) and with the re-encoding checks alone
(as without the extension, or with ``ROADCHECK_PURE_PYTHON=1``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import roadcheck._accel as accel
from roadcheck import _ext
from roadcheck.events import Trajectory
from roadcheck.ingest import ReadFailure, _fast, load
from roadcheck.ingest import claude_code as claude_mod
from roadcheck.ingest import otel as otel_mod
from roadcheck.ingest._fast import Slow

from ..conftest import ROOT, load_script
from .test_reader_fuzz import _mutated

DATA = ROOT / "tests" / "data"
BENCH = ROOT / "benchmarks" / "reader_throughput.py"

OTLP_LINES = sorted(p for p in [*DATA.rglob("*.jsonl"), *(ROOT / "examples").rglob("*.jsonl")]
                    if b"resourceSpans" in p.read_bytes())
CLAUDE = sorted([*(DATA / "coding" / "claude-code").glob("*.jsonl"),
                 *(ROOT / "examples" / "frameworks" / "claude-code").glob("*.jsonl")])
APPROVED = ROOT / "examples" / "frameworks" / "claude-code" / "approved.jsonl"
FAST_SETTINGS = settings(max_examples=100, deadline=None,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                HealthCheck.function_scoped_fixture])


#: every test runs with the C check and without it (tests/ingest/conftest.py)
pytestmark = pytest.mark.usefixtures("key_check")


def _seen(entries: Any) -> list[tuple[Any, ...]]:
    """Everything a reader gave, in a form two readings can be compared on."""
    out: list[tuple[Any, ...]] = []
    for entry in entries:
        if isinstance(entry, Trajectory):
            out.append(("trajectory", entry.id, entry.path, entry.source, dict(entry.meta),
                        [(e.seq, e.kind, e.agent, e.ts, list(e.data.items()), e.line)
                         for e in entry.events]))
        else:
            assert isinstance(entry, ReadFailure)
            out.append(("failure", entry.id, entry.path, entry.error.message, entry.error.line))
    return out


def _no_fast_path(*_: Any, **__: Any) -> Any:
    raise Slow


def _both(monkeypatch: pytest.MonkeyPatch, fmt: str, path: str,
          data: bytes, **options: Any) -> tuple[list[Any], list[Any], bool]:
    """(fast reading, strict reading, whether the fast path took the file); ``options``
    go to the reader (``text=False``)."""
    from roadcheck.ingest import reader

    calls: list[str] = []
    # OTel: the index in C (where built) or else the streamed reading; either is the fast path
    targets = ([(otel_mod, "_indexed"), (otel_mod, "_Streamed")] if fmt == "otel"
               else [(claude_mod, "_fast_events")])

    def spy(real: Any) -> Any:
        def call(*args: Any) -> Any:
            calls.append("fast")
            out = real(*args)
            if out is not None:
                calls.append("done")
            return out
        return call

    with monkeypatch.context() as m:
        for target in targets:
            m.setattr(*target, spy(getattr(*target)))
        fast = _seen(reader(fmt)(path, data, **options))
    with monkeypatch.context() as m:
        for target in targets:
            m.setattr(*target, _no_fast_path)
        if fmt == "otel":
            m.setattr(otel_mod, "_indexed", lambda *_: None)
        strict = _seen(reader(fmt)(path, data, **options))
    return fast, strict, calls[-1:] == ["done"]


class TestSameReading:
    """On the recorded files, the fast path is taken and reads what the strict path reads."""

    @pytest.mark.parametrize("path", OTLP_LINES, ids=lambda p: p.name)
    def test_otlp_json_lines(self, monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
        """An OTLP/JSON lines file: the same runs, events and failures."""
        fast, strict, _ = _both(monkeypatch, "otel", str(path), path.read_bytes())
        assert fast == strict

    @pytest.mark.parametrize("path", CLAUDE, ids=lambda p: p.name)
    def test_claude_code_transcripts(self, monkeypatch: pytest.MonkeyPatch,
                                     path: Path) -> None:
        """A Claude Code transcript: the same events, and the fast path read it."""
        fast, strict, took = _both(monkeypatch, "claude-code", str(path), path.read_bytes())
        assert fast == strict
        assert took or fast[0][0] == "failure"

    def test_the_benchmark_files(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        """The generated span export and transcript are read by the fast paths, identically."""
        bench = load_script(BENCH)
        spans, session = tmp_path / "spans.jsonl", tmp_path / "session.jsonl"
        bench.write_otel(spans, 300_000)
        bench.write_claude(session, 300_000)
        for fmt, path in (("otel", spans), ("claude-code", session)):
            fast, strict, took = _both(monkeypatch, fmt, str(path), path.read_bytes())
            assert took, fmt
            assert fast == strict
            assert all(kind == "trajectory" for kind, *_ in fast)


#: The fields ``text=False`` leaves out, by event type.
FREE_TEXT = {"action": ("result", "error"), "message": ("text",), "checkpoint": ("text",)}


def _without_text(seen: list[Any]) -> list[Any]:
    """A full reading as ``text=False`` gives it: the free text out, the rest as it is."""
    out = []
    for entry in seen:
        if entry[0] == "trajectory":
            events = [(*e[:4], [(k, v) for k, v in e[4] if k not in FREE_TEXT.get(e[1], ())],
                       e[5]) for e in entry[5]]
            entry = (*entry[:5], events)
        out.append(entry)
    return out


class TestWithoutText:
    """``text=False`` (a replay whose spec selects nothing): both paths read the same, and
    what they read is the full reading without its free text, errors and all."""

    @pytest.mark.parametrize("path", CLAUDE, ids=lambda p: p.name)
    def test_claude_code_transcripts(self, monkeypatch: pytest.MonkeyPatch,
                                     path: Path) -> None:
        """Errors and refusals, AskUserQuestion answers, sidechains, abandoned branches:
        the same events as the full reading, less the text."""
        fast, strict, took = _both(monkeypatch, "claude-code", str(path), path.read_bytes(),
                                   text=False)
        assert fast == strict
        assert took or fast[0][0] == "failure"
        full, _, _ = _both(monkeypatch, "claude-code", str(path), path.read_bytes())
        assert fast == _without_text(full)

    def test_the_recorded_files_cover_what_the_text_decides(self) -> None:
        """The files above hold errored results, refused calls, answers and side files."""
        bodies = b"".join(p.read_bytes() for p in CLAUDE)
        for marker in (b'"is_error":true', b"doesn't want to proceed", b'"answers":{',
                       b'"isSidechain":true', b'"AskUserQuestion"'):
            assert marker in bodies.replace(b": ", b":"), marker

    @pytest.mark.parametrize(("old", "new"), [
        # a tool result that is no text: the file is refused, with the text or without it
        (b'"content":"[main 1a2b3c4] Fix typo', b'"content":7,"x":"[main 1a2b3c4] Fix typo'),
        (b'"type":"tool_result","content":"To github',
         b'"type":"tool_result","is_error":"no","content":"To github'),
        (b'"tool_use_id":"toolu_', b'"tool_use_id":"nope_'),
    ])
    def test_a_malformed_result_is_refused_without_the_text(
            self, monkeypatch: pytest.MonkeyPatch, old: bytes, new: bytes) -> None:
        """What is wrong with a result the events no longer hold still refuses the file."""
        body = APPROVED.read_bytes()
        assert old in body
        body = body.replace(old, new, 1)
        fast, strict, _ = _both(monkeypatch, "claude-code", "session.jsonl", body, text=False)
        full, _, _ = _both(monkeypatch, "claude-code", "session.jsonl", body)
        assert fast == strict == full
        assert fast[0][0] == "failure"

    @FAST_SETTINGS
    @given(st.data())
    def test_mutated_files(self, monkeypatch: pytest.MonkeyPatch, data: st.DataObject) -> None:
        """A value changed, a key deleted or repeated: the same reading on both paths."""
        path, body = _mutated("claude-code", data)
        fast, strict, _ = _both(monkeypatch, "claude-code", path, body, text=False)
        assert fast == strict
        full, _, _ = _both(monkeypatch, "claude-code", path, body)
        assert fast == _without_text(full)


def _fields(chunks: Any) -> list[Any]:
    """The entries a reading of the lines gave, numbers read as orjson reads them and
    ``toolUseResult`` as the reader keeps it."""
    import msgspec
    import orjson

    def norm(value: Any) -> Any:
        if value is msgspec.UNSET or value is claude_mod._NO_MESSAGE:
            return value
        if type(value) is tuple:
            return tuple(norm(v) for v in value)
        if type(value) is list:
            return [norm(v) for v in value]
        return orjson.loads(msgspec.json.encode(value))

    def words(entry: Any) -> Any:  # the text the loop reads, worked out where it was left
        if entry[12] is not claude_mod._LATER:
            return entry[12]
        try:
            return claude_mod._fast_text(entry[10])
        except Slow:
            return Slow

    return [(*norm(entry[:11]), claude_mod._tool_use_result(entry[11]),
             words(entry) if entry[10] is not claude_mod._NO_MESSAGE else None)
            for entries in chunks for entry in entries]


def _in_c(body: bytes, text: bool = True) -> list[Any] | None:
    """The entries ``claude_lines`` reads, or None where it gives way."""
    try:
        return _fields(claude_mod._c_lines(body, accel.claude_lines, text))
    except claude_mod._GaveWay:
        return None


def _results_left_out(entries: list[Any]) -> list[Any]:
    """Entries as ``claude_lines`` reads them without the text: a block's content that is a
    string is "" unless the block is an error."""
    out = []
    for entry in entries:
        content = entry[10]
        if type(content) is list:
            content = [(*b[:6], "" if type(b[6]) is str and b[7] is not True else b[6], b[7])
                       for b in content]
        out.append((*entry[:10], content, *entry[11:]))
    return out


class TestClaudeLinesInC:
    """``claude_lines`` reads a transcript's lines in C: the fields the typed decode gives,
    or it gives way (and the typed decode reads the file)."""

    @pytest.mark.parametrize("path", CLAUDE, ids=lambda p: p.name)
    def test_every_recorded_transcript(self, path: Path) -> None:
        """Each recorded transcript is read in C, field for field as the typed decode reads it;
        without the text, only the results that are no error are left out."""
        body = path.read_bytes()
        full = _in_c(body)
        assert full is not None and full == _fields(claude_mod._struct_lines(body))
        assert _in_c(body, text=False) == _results_left_out(full)

    def test_an_error_keeps_its_text(self) -> None:
        """Without the text, a result that is an error keeps it (the reader reads whether it
        says the call was refused), escapes and all; any other result's text is ""."""
        line = (rb'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t",'
                rb'"content":"The user doesn\u0027t want to proceed","is_error":true},'
                rb'{"is_error":false,"type":"tool_result","tool_use_id":"u","content":"ok"},'
                rb'{"type":"tool_result","tool_use_id":"v","content":"x"},'
                rb'{"type":"tool_result","tool_use_id":"w","content":[{"type":"text","text":"y"}]}'
                rb']}}')
        (entry,) = _in_c(line, text=False) or [None]
        assert [b[6] for b in entry[10]] == ["The user doesn't want to proceed", "", "",
                                             [{"type": "text", "text": "y"}]]

    def test_the_benchmark_transcript(self, tmp_path: Path) -> None:
        """The generated transcript is read in C, over many chunks."""
        session = tmp_path / "session.jsonl"
        load_script(BENCH).write_claude(session, 400_000)
        body = session.read_bytes()
        assert _in_c(body) == _fields(claude_mod._struct_lines(body))

    @pytest.mark.parametrize("line", [
        # escapes, in the fields read and in those skipped
        rb'{"type":"user","uuid":"u\u00e9\ud83d\ude00","message":{"content":"a\"b\\c\n\t'
        rb'\/\b\f\r\u0000"},"cwd":"\u00e9"}',
        # numbers, nested values and floats in a call's input
        b'{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"X",'
        b'"input":{"a":1.5,"b":-0,"c":[1,{"d":null}],"e":-0.0,"f":1E5,"g":123456789012345678,'
        b'"h":0.1e-99,"i":true}}]}}',
        b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t",'
        b'"content":[{"type":"text","text":"x"},{"type":"image","source":{}}],"is_error":true}]},'
        b'"toolUseResult":"User rejected tool use"}',
        b'{"type":"user","message":{"content":null},"toolUseResult":{"answers":{"q":"a"},'
        b'"questions":[]}}',
        b'{"type":"user","message":{},"toolUseResult":[1,2]}',
        # the text of a message: text blocks one line apart, none, or one that is no string
        b'{"type":"assistant","message":{"content":[{"type":"text","text":"a"},{"type":'
        b'"tool_use","id":"t","name":"X","input":{}},{"type":"thinking","thinking":"x"},'
        b'{"type":"text","text":"b"},{"type":"text","text":""}]}}',
        b'{"type":"assistant","message":{"content":[{"type":"text","text":5}]}}',
        b'{"type":"assistant","message":{"content":[{"type":"text"}]}}',
        b'{"type":"assistant","message":{"content":[]}}',
        b'{"type":"user","toolUseResult":{"stdout":"x"},"isMeta":true,"isSidechain":null}',
        b'  {"type": "system" , "content" : 7}  \r',
    ])
    def test_lines_read_in_c(self, line: bytes) -> None:
        """Escapes, numbers, nesting and blanks: the typed decode's fields."""
        body = b"\n" + line + b"\n  \n" + line
        got = _in_c(body)
        assert got is not None
        assert got == _fields(claude_mod._struct_lines(body))
        assert [entry[0] for entry in got] == [2, 4]

    def test_many_keys_and_types(self) -> None:
        """Short keys and types are kept once each in C: thousands of them, of every length
        up to past the cached ones, each read as written."""
        import orjson

        lines = []
        for i in range(3000):
            key = f"k{i}" + "x" * (i % 40)
            lines.append(orjson.dumps({"type": f"t{i % 700}", "message": {"content": [
                {"type": f"b{i}", "input": {key: i, "é" + key: [key]}}]}}))
        body = b"\n".join(lines)
        got = _in_c(body)
        assert got is not None and len(got) == 3000
        assert got == _fields(claude_mod._struct_lines(body))

    def test_an_object_of_many_keys(self) -> None:
        """Hundreds of keys in one object: each told from the others, a repeated one found."""
        keys = [f"k{i}" for i in range(300)]
        line = ('{"type":"user","message":{"content":[{"type":"tool_use","id":"t","name":"X",'
                '"input":{' + ",".join(f'"{k}":{i}' for i, k in enumerate(keys)) + "}}]}}")
        body = line.encode()
        got = _in_c(body)
        assert got is not None and got == _fields(claude_mod._struct_lines(body))
        assert len(got[0][10][0][4]) == 300
        assert _in_c(body.replace(b'"k299":299', b'"k299":299,"k150":1')) is None

    @pytest.mark.parametrize("line", [
        b'{"type":7}', b"[]", b'{"uuid":"u"}', b'{"type":"user","message":null}',
        b'{"type":"user","message":"x"}', b'{"type":"user","message":{"content":7}}',
        b'{"type":"user","message":{"content":[7]}}',
        b'{"type":"user","message":{"content":[{"text":"x"}]}}',
        b'{"type":"user","uuid":7}', b'{"type":"user","isSidechain":"no"}',
        b'{"type":"user","sessionId":1.5}', b'{"type":"user","timestamp":1}',
        b'{"type":"user","a":1,"a":2}', b'{"type":"user","message":{"usage":{"a":1,"a":2}}}',
        b'{"type":"user","uuid":"u","x":1,"uuid":"u"}', b'{"type":"user","type":"user"}',
        b'{"type":"user","message":{"content":"a","role":"user","content":"a"}}',
        b'{"type":"user","message":{"content":[{"type":"text","text":"a","type":"text"}]}}',
        b'{"type":"user","message":{"content":[{"type":"tool_use","id":"t","name":"X",'
        b'"input":{"a":1,"b":{"c":1,"c":1}}}]}}',
        b'{"type":"user","message":{"content":[{"type":"tool_use","id":"t","name":"X",'
        b'"input":{"ab":1,"ba":2,"ab":3}}]}}',
        b'{"type":"user","toolUseResult":{"answers":{"q":1,"q":1}}}',
        b'{"type":"user","\\u0061":1}', b'{"type":"user","n":1234567890123456789}',
        b'{"type":"user","n":1e400}', b'{"type":"user","x":"\xe9"}', b'{"type":"user"} x',
        b'{"type":"user","x":"\\ud800"}',
    ])
    def test_lines_it_gives_way_on(self, line: bytes) -> None:
        """A line the structs type otherwise, or that check_lines does not vouch for."""
        assert _in_c(b'{"type":"user"}\n' + line + b"\n") is None

    @FAST_SETTINGS
    @given(st.data())
    def test_mutated_files(self, data: st.DataObject) -> None:
        """A value changed, a key deleted or repeated: the typed decode's fields, or it
        gives way."""
        _, body = _mutated("claude-code", data)
        got = _in_c(body)
        if got is not None:
            try:
                typed = _fields(claude_mod._struct_lines(body))
            except Slow:
                raise AssertionError("read in C, refused by the typed decode") from None
            assert got == typed
            assert _in_c(body, text=False) == _results_left_out(got)


FAST = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


class TestSameReadingOfMutatedFiles:
    """A value changed, a key deleted or repeated: both paths still read the same."""

    @FAST
    @given(st.data())
    def test_otel(self, monkeypatch: pytest.MonkeyPatch, data: st.DataObject) -> None:
        """The OTel reader."""
        fast, strict, _ = _both(monkeypatch, "otel", *_mutated("otel", data))
        assert fast == strict

    @FAST
    @given(st.data())
    def test_claude_code(self, monkeypatch: pytest.MonkeyPatch, data: st.DataObject) -> None:
        """The Claude Code reader."""
        fast, strict, _ = _both(monkeypatch, "claude-code", *_mutated("claude-code", data))
        assert fast == strict


SPAN = ('{"resourceSpans": [{"resource": RESOURCE, "scopeSpans": [{"spans": [{'
        '"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "00f067aa0ba902b7", '
        '"name": "execute_tool send", "startTimeUnixNano": "1", "endTimeUnixNano": "2", '
        '"attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": '
        '"execute_tool"}}, {"key": "gen_ai.tool.name", "value": {"stringValue": "send"}}]}]}]}]}')


class TestIdsAndTimes:
    """Ids and times the fast path does not take read as the strict path reads them."""

    @pytest.mark.parametrize(("old", "new"), [
        ('"5b8efff798038103d269b633813fc60c"', '"5b8efff798038103d269b633813fc60c\\n"'),
        ('"00f067aa0ba902b7"', '"00f067aa0ba902b7\\n"'),
        ('"00f067aa0ba902b7"', '"00F067AA0BA902B7"'),
        ('"00f067aa0ba902b7"', '"00f067aa0ba902b"'),
        ('"startTimeUnixNano": "1"', '"startTimeUnixNano": "1\\n"'),
        ('"startTimeUnixNano": "1"', '"startTimeUnixNano": "\\u0661"'),
        ('"startTimeUnixNano": "1"', '"startTimeUnixNano": "123456789012345678901"'),
        ('"endTimeUnixNano": "2"', '"endTimeUnixNano": ""'),
        ('"endTimeUnixNano": "2"', '"endTimeUnixNano": "2", "parentSpanId": "00f067aa0ba902b8"'),
        ('"endTimeUnixNano": "2"', '"endTimeUnixNano": "2", "parentSpanId": "00f067aa0ba9 2b8"'),
        ('"endTimeUnixNano": "2"', '"endTimeUnixNano": 2, "parentSpanId": ""'),
        # a comma or colon inside a value does not pass for the joints of the line's check
        ('"startTimeUnixNano": "1"', '"startTimeUnixNano": "1,2"'),
        ('"00f067aa0ba902b7"', '"00f067aa0ba902b7:,5b8efff798038103d269b633813fc60c:'
                               '00f067aa0ba902b7"'),
        ('"5b8efff798038103d269b633813fc60c"', '"5b8efff798038103d269b633813fc60c:'
                                               '00f067aa0ba902b7:,5b8efff798038103d269b633813fc60c"'),
    ])
    def test_same_reading(self, monkeypatch: pytest.MonkeyPatch, old: str, new: str) -> None:
        """A changed id or time: both paths give the same runs, events or failure."""
        line = SPAN.replace("RESOURCE", "{}")
        assert old in line
        body = (line + "\n" + line.replace(old, new, 1) + "\n").encode()
        fast, strict, _ = _both(monkeypatch, "otel", "spans.jsonl", body)
        assert fast == strict


class TestWhatTheFastPathRefuses:
    """Input the typed structs skip is still checked as the strict path checks it."""

    def _read(self, tmp_path: Path, body: bytes, name: str) -> list[Any]:
        path = tmp_path / name
        path.write_bytes(body)
        return list(load(str(path))[1])

    def test_a_repeated_key_in_a_part_the_reader_skips(self, tmp_path: Path) -> None:
        """A key given twice inside the resource (never read) is refused, naming line 2."""
        ok = SPAN.replace("RESOURCE", "{}")
        dup = SPAN.replace("RESOURCE", '{"a": 1, "a": 2}')
        (entry,) = self._read(tmp_path, f"{ok}\n{dup}\n".encode(), "spans.jsonl")
        assert isinstance(entry, ReadFailure)
        assert entry.error.line == 2 and "duplicate key 'a'" in entry.error.message

    def test_a_repeated_key_hidden_by_an_escaped_colon(self, tmp_path: Path) -> None:
        """An escaped colon does not make up for a dropped key in the colon count."""
        dup = SPAN.replace("RESOURCE", '{"a": "x\\u003ay", "b": 1, "b": 2}')
        (entry,) = self._read(tmp_path, f"{dup}\n".encode(), "spans.jsonl")
        assert isinstance(entry, ReadFailure)
        assert "duplicate key 'b'" in entry.error.message

    def test_an_unknown_field_is_read(self, tmp_path: Path) -> None:
        """A field the structs do not declare is only a closer look, not an error."""
        extra = SPAN.replace("RESOURCE", "{}").replace('"name":', '"vendorField": {"x": 1}, '
                                                                   '"name":')
        (entry,) = self._read(tmp_path, f"{extra}\n".encode(), "spans.jsonl")
        assert isinstance(entry, Trajectory)
        assert [e.action_type for e in entry.events if e.kind == "action"] == ["send"]

    @pytest.mark.parametrize("number", [b"1e400", b"-1e400", b"9" * 400, b"-" + b"9" * 320,
                                        b"1e-400", b"1" + b"0" * 300, b"1.5"])
    def test_numbers_beyond_a_double_in_a_part_the_reader_skips(
            self, monkeypatch: pytest.MonkeyPatch, number: bytes) -> None:
        """A number beyond a double's range in a field the reader never reads: each fast
        path reads the file as its strict path does (the transcript's refuses it, as orjson
        does; the span reader's strict path reads it)."""
        span = SPAN.replace("RESOURCE", '{"n": NUMBER}').encode().replace(b"NUMBER", number)
        src = APPROVED.read_bytes()
        transcript = src.replace(b'"gitBranch":"main",', b'"gitBranch":"main","todos":['
                                 + number + b"],", 1)
        assert transcript != src
        for fmt, body in (("otel", span + b"\n"), ("claude-code", transcript)):
            fast, strict, _ = _both(monkeypatch, fmt, "t.jsonl", body)
            assert fast == strict, (fmt, number)
            if fmt == "claude-code":
                refused = number.lstrip(b"-") in (b"1e400", b"9" * 400, b"9" * 320)
                assert (fast[0][0] == "failure") is refused, number

    def test_invalid_utf8_in_a_skipped_claude_field(self, tmp_path: Path) -> None:
        """Bytes that are not UTF-8 in a field the reader never reads still make it refuse."""
        src = (ROOT / "examples" / "frameworks" / "claude-code" / "approved.jsonl").read_bytes()
        body = src.replace(b'"sessionId"', b'"cwd2": "caf\xe9", "sessionId"', 1)
        assert body != src
        # the reader on its own: loading a file already refuses text that is not UTF-8
        (entry,) = list(claude_mod.read_claude_code("session.jsonl", body))
        assert isinstance(entry, ReadFailure)
        assert "unparseable JSON" in entry.error.message and entry.error.line == 1


class TestClaudeCodeKeysChecked:
    """The transcript's fast path checks every key by the colons of each line's re-encoding:
    what it has to look at closer (an undeclared field, a key inside a call's input or a
    tool's result object) still reads as the strict path reads it."""

    def _variant(self, old: bytes, new: bytes) -> bytes:
        src = APPROVED.read_bytes()
        assert old in src
        return src.replace(old, new, 1)

    def _same(self, monkeypatch: pytest.MonkeyPatch, body: bytes) -> list[Any]:
        fast, strict, _ = _both(monkeypatch, "claude-code", "session.jsonl", body)
        assert fast == strict
        return fast

    def test_an_undeclared_field_is_read_by_the_fast_path(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A field Claude Code may add one day costs that line a closer look, not the file."""
        body = self._variant(b'"gitBranch":"main",', b'"gitBranch":"main","newField":{"a":1},')
        fast, _, took = _both(monkeypatch, "claude-code", "session.jsonl", body)
        assert took and fast[0][0] == "trajectory"
        assert fast == self._same(monkeypatch, body)

    @pytest.mark.parametrize(("old", "new"), [
        (b'"gitBranch":"main",', b'"gitBranch":"main","gitBranch":"dev",'),
        (b'"description":"run"', b'"description":"run","description":"x"'),
        (b'"role":"user","content":"Fix', b'"role":"user","role":"user","content":"Fix'),
        (b'"gitBranch":"main",', b'"gitBranch":"main","toolUseResult":{"a":1,"a":2},'),
        (b'"gitBranch":"main",', b'"gitBranch":"main","newField":{"b":1,"b":2},'),
        (b'"timestamp":"2026-03-02T10:00:00.000Z"',
         b'"timestamp":"2026-03-02T10:00:00.000Z","usage":{"x":"a\\u003ab","c":1,"c":2}'),
    ])
    def test_a_repeated_key_is_refused_as_the_strict_path_refuses_it(
            self, monkeypatch: pytest.MonkeyPatch, old: bytes, new: bytes) -> None:
        """A key given twice anywhere in a line: the same one-line error on both paths."""
        fast = self._same(monkeypatch, self._variant(old, new))
        assert fast[0][0] == "failure" and "duplicate key" in fast[0][3]

    @pytest.mark.parametrize("number", [b"18446744073709551616", b"-9223372036854775809",
                                        b"123456789012345678901234567890", b"1.5e308",
                                        b"0.1e-400", b"-0.0", b"1E5"])
    def test_numbers_in_a_call_input_read_as_the_strict_path_reads_them(
            self, monkeypatch: pytest.MonkeyPatch, number: bytes) -> None:
        """Integers beyond 64 bits and odd floats: the arguments hold what orjson reads."""
        body = self._variant(b'"description":"run"', b'"description":"run","n":' + number)
        fast = self._same(monkeypatch, body)
        assert fast[0][0] == "trajectory"

    def test_answers_read_as_the_strict_path_reads_them(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An AskUserQuestion's answers kept from ``toolUseResult``, numbers and all."""
        path = DATA / "coding" / "claude-code" / "tool_heavy.jsonl"
        src = path.read_bytes()
        if b'"answers"' not in src:
            src = next(p.read_bytes() for p in CLAUDE if b'"answers":{' in p.read_bytes())
        body = src.replace(b'"answers":{', b'"answers":{"n":18446744073709551616,', 1)
        assert body != src
        fast = self._same(monkeypatch, body)
        assert fast[0][0] == "trajectory"
        assert any(dict(items).get("answers", {}).get("n") == 18446744073709551616.0
                   for _, _, _, _, items, _ in fast[0][5])


class TestSpanExportLayouts:
    """How an export lays traces over lines does not change what either path reads."""

    def test_traces_sharing_lines_and_spread_over_lines(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A line holding two traces, a trace spread over two lines, a trace on its own
        line, and two traces of one conversation: the fast path reads them as the strict
        path does."""
        import orjson

        bench = load_script(BENCH)
        docs = [orjson.loads(bench.otel_trace(i)) for i in range(5)]
        spans = [d["resourceSpans"][0]["scopeSpans"][0]["spans"] for d in docs]

        def line(*parts: list[Any]) -> bytes:
            doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [
                {"scope": {"name": "s"}, "spans": [s for part in parts for s in part]}]}]}
            return orjson.dumps(doc)

        # the fifth trace names the fourth's conversation: one run of two traces
        for span in spans[4]:
            for attr in span["attributes"]:
                if attr["key"] == "gen_ai.conversation.id":
                    attr["value"]["stringValue"] = "conv-3"
        body = b"\n".join([
            line(spans[0], spans[1][:3]),
            line(spans[1][3:], spans[2]),
            line(spans[3]),
            line(spans[4]),
        ]) + b"\n"
        fast, strict, took = _both(monkeypatch, "otel", "spans.jsonl", body)
        assert took
        assert fast == strict
        assert [kind for kind, *_ in fast] == ["trajectory"] * 4
        assert fast[3][4]["traces"] == [f"{4:032x}", f"{5:032x}"]


class TestKeyCheckRoutes:
    """Which check vouches for the keys: ``check_lines`` where the closed structs skipped
    nothing, the re-encoding for the rest; both read what the strict path reads."""

    def _spied(self, monkeypatch: pytest.MonkeyPatch) -> list[str]:
        """Record each re-encoding check the readers make."""
        used: list[str] = []
        real_at = otel_mod.kept_every_key_at

        def kept_every_key_at(*args: Any) -> bool:
            used.append("otel")
            return real_at(*args)

        class Encoder:
            def encode_into(self, value: Any, buf: bytearray) -> None:
                used.append("claude-code")
                _fast.msgspec.json.Encoder().encode_into(value, buf)

        monkeypatch.setattr(otel_mod, "kept_every_key_at", kept_every_key_at)
        monkeypatch.setattr(_fast, "_ENCODER", Encoder())
        return used

    def test_the_benchmark_files_need_no_re_encoding(
            self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, key_check: str) -> None:
        """With the extension, no line of the generated export or transcript is
        re-encoded; without it, every one is. The readings are the same."""
        bench = load_script(BENCH)
        spans, session = tmp_path / "spans.jsonl", tmp_path / "session.jsonl"
        bench.write_otel(spans, 100_000)
        bench.write_claude(session, 100_000)
        used = self._spied(monkeypatch)
        for fmt, path in (("otel", spans), ("claude-code", session)):
            fast, strict, took = _both(monkeypatch, fmt, str(path), path.read_bytes())
            assert took and fast == strict
            assert (fmt in used) == (key_check == "re-encoding"), fmt

    @pytest.mark.parametrize(("fmt", "old", "new", "dup"), [
        # an escaped key: check_lines looks closer, the exact check names it
        ("otel", '"scope": {}', '"scope": {"a": 1, "\\u0061": 2}', "a"),
        ("claude-code", '"gitBranch":"main",', '"gitBranch":"main","todos":{"b":1,"\\u0062":2},',
         "b"),
        # a repeated key inside a field the closed structs do not declare
        ("otel", '"scope": {}', '"scope": {}, "vendor": {"c": 1, "c": 2}', "c"),
        ("claude-code", '"gitBranch":"main",', '"gitBranch":"main","vendor":{"d":1,"d":2},', "d"),
    ])
    def test_a_repeated_key_check_lines_cannot_vouch_for(
            self, monkeypatch: pytest.MonkeyPatch, fmt: str, old: str, new: str,
            dup: str) -> None:
        """A key repeated under an escape, or inside an undeclared field: refused on both
        paths, naming the key."""
        if fmt == "otel":
            src = (SPAN.replace("RESOURCE", "{}").replace('"spans"', '"scope": {}, "spans"')
                   + "\n").encode()
        else:
            src = APPROVED.read_bytes()
        body = src.replace(old.encode(), new.encode(), 1)
        assert body != src
        fast, strict, _ = _both(monkeypatch, fmt, "trace.jsonl", body)
        assert fast == strict
        assert fast[0][0] == "failure" and f"duplicate key {dup!r}" in fast[0][3]

    @pytest.mark.parametrize("value", [b"1e400", b"-1.8e308", b"1" + b"0" * 400])
    def test_a_number_orjson_refuses_in_an_undeclared_field(
            self, monkeypatch: pytest.MonkeyPatch, value: bytes) -> None:
        """check_lines takes numbers of any length; a line with a field the closed structs
        do not declare still goes to orjson, which refuses a number beyond a double."""
        src = APPROVED.read_bytes()
        body = src.replace(b'"gitBranch":"main",', b'"gitBranch":"main","vendor":[' + value
                           + b"],", 1)
        fast, strict, _ = _both(monkeypatch, "claude-code", "session.jsonl", body)
        assert fast == strict
        assert fast[0][0] == "failure" and "unparseable JSON" in fast[0][3]


def test_the_checker_is_off_in_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ROADCHECK_PURE_PYTHON=1`` or an extension that is not built: no ``check_lines``, no
    OTel index."""
    for unset in ("_CHECK_LINES", "_NATIVE"):
        monkeypatch.setattr(_ext, unset, _ext._UNSET)
    monkeypatch.setenv("ROADCHECK_PURE_PYTHON", "1")
    assert _fast.line_checker() is None
    assert _fast.native() is None
    for unset in ("_CHECK_LINES", "_NATIVE"):
        monkeypatch.setattr(_ext, unset, _ext._UNSET)
    monkeypatch.delenv("ROADCHECK_PURE_PYTHON")
    monkeypatch.setitem(sys.modules, "roadcheck._accel", None)  # import fails
    assert _fast.line_checker() is None
    assert _fast.native() is None


class TestLongLived:
    """The records a reader built are counted as long-lived at once, not walked."""

    def test_young_objects_move_to_the_oldest_generation(self) -> None:
        """Objects built with the collector paused end in the oldest generation, and the
        youngest is empty, so the next allocation starts no collection."""
        import gc

        with _fast.no_cycle_collection():
            records = [{"seq": i, "args": {"a": [i]}} for i in range(5000)]
            _fast.as_long_lived()
        assert gc.get_count()[0] < 100
        oldest = {id(o) for o in gc.get_objects(2)}
        assert all(id(r) in oldest for r in records[::500])
        assert gc.get_freeze_count() == 0

    def test_frozen_objects_stay_frozen(self) -> None:
        """A program that froze objects itself keeps them frozen."""
        import gc

        gc.freeze()
        try:
            frozen = gc.get_freeze_count()
            assert frozen > 0
            _fast.as_long_lived()
            assert gc.get_freeze_count() == frozen
        finally:
            gc.unfreeze()
