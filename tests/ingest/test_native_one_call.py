"""The native reader's one-call decoding of a file of one object a line gives exactly what
the line-by-line reading gives: the same events (values of the same types), or the same
error. Each case below is a file the one-call path could misread if its proof were wrong."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roadcheck.errors import TraceError
from roadcheck.ingest import native

A = b'{"seq": 1, "event": "action", "action_type": "a"}'
F = b'{"seq": 2, "event": "final", "task_success": true}'


def _outcome(read: Any, data: bytes) -> Any:
    try:
        events = read(data, "f.jsonl")
    except TraceError as exc:
        return ("error", str(exc))
    # repr tells an int from a float, and -0.0 from 0.0
    return ("events", [(repr(e[:4]), repr(e.data), e.line) for e in events])


def _same(data: bytes) -> Any:
    fast = _outcome(native.read_events, data)
    slow = _outcome(native._read_lines, data)
    assert fast == slow
    return fast


CASES = {
    "plain": A + b"\n" + F + b"\n",
    "no final newline": A + b"\n" + F,
    "crlf": A + b"\r\n" + F + b"\r\n",
    "blank line": A + b"\n\n" + F + b"\n",
    "two values on a line, a blank after": A + b" " + F + b"\n\n",
    "a value over two lines": b'{"seq": 1, "event": "action", "action_type":\n"a"}\n' + F,
    "a value spanning lines that start and end with braces":
        b'{"seq": 1, "event": "action", "action_type": "a", "args": {"x": {}}\n'
        b'{"y": 1}}\n' + F,
    "a line with two objects and one spanning": b'{"seq": 1, "a":\n{}} {}\n' + F,
    "a valid record over two lines, the final after it on the second":
        b'{"seq": 1, "event": "action", "action_type": "a", "args":\n{}} ' + F + b"\n",
    "comma between objects": A + b",\n" + F,
    "integer past 64 bits": b'{"seq": 1, "event": "action", "action_type": "a", '
                            b'"args": {"n": 18446744073709551616}}\n' + F,
    "negative integer past 64 bits": b'{"seq": 1, "event": "action", "action_type": "a", '
                                     b'"args": {"n": -9223372036854775809}}\n' + F,
    "largest 64-bit integers": b'{"seq": 1, "event": "action", "action_type": "a", '
                               b'"args": {"n": 18446744073709551615, '
                               b'"m": -9223372036854775808}}\n' + F,
    "floats": b'{"seq": 1, "event": "action", "action_type": "a", "args": '
              b'{"f": [-0.0, 0.1, 1e308, 5e-324, 2.2250738585072014e-308, 1E2, -1e-400]}}\n' + F,
    "infinite float": b'{"seq": 1, "event": "action", "action_type": "a", "args": [1e400]}\n' + F,
    "escapes": b'{"seq": 1, "event": "action", "action_type": "\\u00e9\\ud83d\\ude00\\/\\n"}\n' + F,
    "lone surrogate": b'{"seq": 1, "event": "action", "action_type": "\\ud800"}\n' + F,
    "repeated key": b'{"seq": 1, "event": "action", "action_type": "a", "action_type": "b"}\n'
                    + F,
    "repeated key, compact": b'{"seq":1,"event":"action","action_type":"a","x":1,"x":2}\n' + F,
    "nested too deep": b'{"seq": 1, "event": "action", "action_type": "a", "args": '
                       + b"[" * 300 + b"]" * 300 + b"}\n" + F,
    "message event": b'{"seq": 1, "event": "message", "role": "user", "text": "hi"}\n' + F,
    "bad message role": b'{"seq": 1, "event": "message", "role": "robot"}\n' + F,
    "seq not increasing": A + b"\n" + A + b"\n" + F,
    "seq a bool": b'{"seq": true, "event": "action", "action_type": "a"}\n' + F,
    "event after final": A + b"\n" + F + b"\n" + b'{"seq": 3, "event": "action", '
                                                  b'"action_type": "a"}\n',
    "no final": A + b"\n",
    "a top-level array on a line": b"[1]\n" + F,
    "trailing garbage": A + b"}\n" + F,
    "a NUL after a value": A + b"\x00\n" + F,
    "byte order mark": b"\xef\xbb\xbf" + A + b"\n" + F,
    "empty": b"",
    "only a newline": b"\n",
    "empty name": b'{"seq": 1, "event": "action", "action_type": ""}\n' + F,
    "handoff": b'{"seq": 1, "event": "handoff", "from_agent": "a", "to_agent": "b", '
               b'"payload": {"x": {"value": 1, "verified": true}}}\n' + F,
    "handoff payload a list": b'{"seq": 1, "event": "handoff", "from_agent": "a", '
                              b'"to_agent": "b", "payload": []}\n' + F,
}


@pytest.mark.parametrize("data", list(CASES.values()), ids=list(CASES))
def test_one_call_reads_as_line_by_line(data: bytes) -> None:
    _same(data)


def test_the_common_file_is_read_in_one_call() -> None:
    # the benchmark's shape: the one call is taken (not a silent fallback every time)
    assert native._one_per_line(A + b"\n" + F + b"\n") is not None
    assert native._one_per_line(A + b"\n" + F) is not None


@pytest.mark.parametrize("data", [
    A + b"\n\n" + F, A + b"\r\n" + F, b" " + A + b"\n" + F, A + b" \n" + F,
    b'{"seq": 1, "a":\n{}} {}\n' + F, A + b" " + F,
], ids=["blank", "crlf", "leading space", "trailing space", "spanning", "two on a line"])
def test_lines_not_provably_one_object_each_are_read_line_by_line(data: bytes) -> None:
    assert native._one_per_line(data) is None


def test_a_big_integer_reads_as_orjson_reads_it() -> None:
    events = native.read_events(CASES["integer past 64 bits"], "f.jsonl")
    assert type(events[0].data["args"]["n"]) is float


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["action", "handoff", "checkpoint", "message",
                                           "final", "other"]), _VALUES,
                          st.sampled_from([", ", ","]), st.booleans()),
                min_size=1, max_size=5),
       st.sampled_from([b"\n", b"\r\n", b"\n\n", b" \n"]))
def test_any_file_of_objects_reads_as_line_by_line(
        rows: list[tuple[str, Any, str, bool]], sep: bytes) -> None:
    lines = []
    for seq, (kind, value, comma, ascii_only) in enumerate(rows, 1):
        rec: dict[str, Any] = {"seq": seq, "event": kind, "args": value,
                               "action_type": "a", "from_agent": "a", "to_agent": "b",
                               "payload": {"v": value}, "checkpoint_id": "c", "role": "user",
                               "task_success": True}
        lines.append(json.dumps(rec, separators=(comma, ": "), ensure_ascii=ascii_only)
                     .encode("utf-8", "surrogatepass"))
    _same(sep.join(lines) + sep)
