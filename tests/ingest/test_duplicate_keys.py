"""The duplicate-key check: every repeated key is found, and nothing else is."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roadcheck.errors import TraceError
from roadcheck.ingest._json import check_document, no_duplicate_keys

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
