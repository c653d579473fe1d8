"""The duplicate-key check: every repeated key is found, and nothing else is."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roadcheck.errors import TraceError
from roadcheck.ingest._json import check_document, check_line, no_duplicate_keys

# Strings that stress the count: colons, quotes, backslashes, escapes of a colon.
tricky = st.sampled_from(['', ':', '":', '\\":', ' :', 'a:b', '\\', '"', '\\u003a', '::"',
                          'é:ü', '\u2028', '\x00:']) | st.text(max_size=6)
keys = tricky | st.text(min_size=1, max_size=4)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False,
                                                                       allow_infinity=False)
    | tricky,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8)
documents = st.dictionaries(keys, values, min_size=1, max_size=4)


def _objects(value: Any, out: list[dict[str, Any]]) -> None:
    if isinstance(value, dict):
        out.append(value)
        for child in value.values():
            _objects(child, out)
    elif isinstance(value, list):
        for child in value:
            _objects(child, out)


def _encode(value: Any, data: st.DataObject, repeat: dict[str, Any] | None = None) -> str:
    """JSON text with random spacing and escaping; ``repeat`` gets its first key twice."""
    ascii_only = data.draw(st.booleans(), label="ensure_ascii")
    space = data.draw(st.sampled_from(["", " ", "\t", "\n  "]), label="space")

    def enc(v: Any) -> str:
        if isinstance(v, dict):
            parts = [f"{json.dumps(k, ensure_ascii=ascii_only)}{space}:{space}{enc(x)}"
                     for k, x in v.items()]
            if v is repeat and v:
                key = next(iter(v))
                parts.append(f"{json.dumps(key, ensure_ascii=ascii_only)}{space}:"
                             f"{json.dumps(data.draw(tricky, label='repeated value'))}")
            return "{" + ",".join(parts) + "}"
        if isinstance(v, list):
            return "[" + ",".join(enc(x) for x in v) + "]"
        return json.dumps(v, ensure_ascii=ascii_only)

    return enc(value)


@settings(max_examples=300, deadline=None)
@given(documents, st.data())
def test_no_repeat_is_never_flagged(doc: dict[str, Any], data: st.DataObject) -> None:
    """A document with no repeated key passes, whatever its strings hold."""
    raw = _encode(doc, data).encode()
    check_document(raw, orjson.loads(raw))


@settings(max_examples=300, deadline=None)
@given(documents, st.data())
def test_every_repeat_is_found(doc: dict[str, Any], data: st.DataObject) -> None:
    """A key given twice in any object, at any depth, is found and named."""
    objects: list[dict[str, Any]] = []
    _objects(doc, objects)
    target = objects[data.draw(st.integers(0, len(objects) - 1), label="object")]
    if not target:
        return
    raw = _encode(doc, data, repeat=target).encode()
    assert not no_duplicate_keys(raw, orjson.loads(raw))
    with pytest.raises(TraceError, match="duplicate key"):
        check_document(raw, orjson.loads(raw))


@settings(max_examples=300, deadline=None)
@given(st.lists(documents, min_size=1, max_size=4), st.data())
def test_json_lines_repeat_found_and_nothing_else(docs: list[dict[str, Any]],
                                                  data: st.DataObject) -> None:
    """JSON lines, compact as orjson writes them or spaced, read as the list of their values:
    a key given twice in any object of any line is found, and nothing else is."""
    compact = data.draw(st.booleans(), label="compact")
    end = data.draw(st.sampled_from(["", "\n"]), label="end")
    victim = data.draw(st.sampled_from([None, *range(len(docs))]), label="line repeating")
    lines = []
    for at, doc in enumerate(docs):
        if at == victim:
            objects: list[dict[str, Any]] = []
            _objects(doc, objects)
            target = objects[data.draw(st.integers(0, len(objects) - 1), label="object")]
            if not target:
                return  # an empty object has no key to give twice
            lines.append(_encode(doc, data, repeat=target).replace("\n", " "))
        elif compact:
            lines.append(orjson.dumps(doc).decode())
        else:
            lines.append(_encode(doc, data).replace("\n", " "))
    raw = ("\n".join(lines) + end).encode()
    records = [orjson.loads(line) for line in raw.split(b"\n") if line]
    if victim is None:
        assert no_duplicate_keys(raw, records) or not compact
        for at, line in enumerate(lines, 1):  # the exact reading, as the readers make it
            check_line(line.encode(), records[at - 1], at, "t.jsonl")
    else:
        assert not no_duplicate_keys(raw, records)
        with pytest.raises(TraceError, match="duplicate key") as err:
            check_line(lines[victim].encode(), records[victim], victim + 1, "t.jsonl")
        assert err.value.line == victim + 1


@pytest.mark.parametrize("end", [b"", b"\n"])
def test_compact_native_file_repeating_a_key_names_its_line(end: bytes) -> None:
    """A native trajectory written compact, one line giving a key twice: refused, naming the
    file, the line and the key."""
    from roadcheck.ingest.native import read_events

    events = [{"seq": 1, "event": "action", "action_type": "a"},
              {"seq": 2, "event": "action", "action_type": "b"},
              {"seq": 3, "event": "final", "task_success": True}]
    lines = [orjson.dumps(e) for e in events]
    assert read_events(b"\n".join(lines) + end, "t.jsonl")[-1].kind == "final"
    lines[1] = b'{"seq":2,"event":"action","action_type":"b","action_type":"c"}'
    with pytest.raises(TraceError, match="duplicate key 'action_type'") as err:
        read_events(b"\n".join(lines) + end, "t.jsonl")
    assert (err.value.path, err.value.line) == ("t.jsonl", 2)
