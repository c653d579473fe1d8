"""The chunked JSON Lines decoding of ``ingest._fast.kept_lines``: every line it gives is the
line orjson reads, and a key given twice anywhere gives way to the strict path, however the
rest of the line or its chunk is written. Every test runs with the C extension's
``check_lines`` (and closed structs) and with the re-encoding check alone."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET

from roadcheck.ingest._fast import Slow, kept_lines, lines_decoder
from roadcheck.ingest._json import find_duplicate

from ..strategies import json_scalars

#: JSON values, floats and large integers among them.
VALUES = st.recursive(
    st.one_of(json_scalars, st.floats(allow_nan=False, allow_infinity=False),
              st.integers(-(2**70), 2**70), st.text(alphabet="\x00\x08\"\\:/\u00e9\u2028ab",
                                                     max_size=6)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8)


class _Inner(msgspec.Struct, omit_defaults=True):
    k: Any = UNSET
    v: Any = UNSET


class _Line(msgspec.Struct, omit_defaults=True):
    a: Any = UNSET
    b: Any = UNSET
    inner: _Inner | Any = UNSET


class _ClosedInner(_Inner, forbid_unknown_fields=True):
    pass


class _ClosedLine(_Line, forbid_unknown_fields=True):
    inner: _ClosedInner | Any = UNSET


DECODER = lines_decoder(_Line)
ANY = lines_decoder(Any)
#: the closed decoder for each: the same structs refusing an undeclared field
CLOSED = {id(DECODER): lines_decoder(_ClosedLine), id(ANY): ANY}


#: every test runs with the C check and without it (tests/ingest/conftest.py)
pytestmark = pytest.mark.usefixtures("key_check")


def _read(body: bytes, decoder: msgspec.json.Decoder[Any] = ANY) -> list[tuple[int, Any]]:
    return [(n, v) for numbers, values in kept_lines(body, decoder, CLOSED[id(decoder)])
            for n, v in zip(numbers, values, strict=True)]


def _orjson(body: bytes) -> list[tuple[int, Any]]:
    return [(n, orjson.loads(line)) for n, line in enumerate(body.split(b"\n"), 1)
            if line.strip()]


def _valid(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def _plain(value: Any) -> Any:
    """A decoded value as orjson holds it (floats are kept as their text)."""
    return orjson.loads(msgspec.json.encode(value))


class TestSameAsOrjson:
    @pytest.mark.parametrize("body", [
        b'{"a":1}\n{"b":2}\n',
        b'{"a":1}\n\n{"b":2}',                      # an empty line
        b'{"a":1}\r\n{"b":2}\r\n',                  # CRLF
        b'  {"a":1}  \n\t\n{"b": 2}\n',             # blanks around and inside
        b'{"a":1E5,"b":-0,"inner":[0.1e1,-0.0,1.5e308]}\n',  # numbers re-encoded otherwise
        b'{"a":"\\u0041\\/\\b\\u0008\\u00e9\\ud83d\\ude00"}\n',  # escapes written long
        b'{"a":18446744073709551616,"b":-9223372036854775809}\n',
        b'{"\\u0061":1}\n',                          # a key written with an escape
    ])
    def test_lines(self, body: bytes) -> None:
        """Odd but valid lines read as orjson reads them, numbered as in the file."""
        got = _read(body)
        assert [(n, _plain(v)) for n, v in got] == _orjson(body)

    def test_many_chunks(self) -> None:
        """Thousands of lines over many chunks, some blank: every line, numbered."""
        lines = [orjson.dumps({"a": i, "b": "x" * (i % 300)}) if i % 97 else b""
                 for i in range(4000)]
        body = b"\n".join(lines) + b"\n"
        assert [(n, _plain(v)) for n, v in _read(body, DECODER)] == [
            (n, {"a": i, "b": "x" * (i % 300)}) for n, i in
            zip(range(1, 4001), range(4000), strict=True) if i % 97]


class TestRepeatedKeys:
    @pytest.mark.parametrize("body", [
        b'{"a":1,"a":2}\n',
        b'{"a":1,"inner":{"k":1,"k":2}}\n',
        b'{"inner":[{"x":1,"x":1}]}\n',
        # a lost key the rest of the line would make up for, were lengths compared naively
        b'{"a":1e5,"b":1,"b":1}\n',
        b'{"a":"\\u0041\\u0041\\u0041","b":1,"b":1}\n',
        b'{"a":1}{"b":2,"b":2}\n\n',                 # two values on a line, an empty line
        b'{"a":1}  {"b":2,"b":2}\n  \n',
        b'{"a":1,"\\u0061":2}\n',                   # the same key, once escaped
        b'{"zz":{"y":1,"y":2},"a":1}\n',           # inside a field the structs skip
    ])
    @pytest.mark.parametrize("decoder", [ANY, DECODER], ids=["any", "struct"])
    def test_refused(self, body: bytes, decoder: msgspec.json.Decoder[Any]) -> None:
        """A key given twice anywhere (or a line that is no single value) gives way."""
        with pytest.raises(Slow):
            _read(body, decoder)

    def test_a_file_check_lines_cannot_vouch_for_whole(self) -> None:
        """One line with an escaped key (no repeat) among many chunks: every line read,
        as orjson reads it."""
        lines = [orjson.dumps({"a": i, "b": "x" * (i % 300)}) for i in range(4000)]
        lines[2500] = b'{"a":2500,"\\u0062":"y"}'
        body = b"\n".join(lines) + b"\n"
        assert [(n, _plain(v)) for n, v in _read(body, DECODER)] == _orjson(body)

    def test_an_undeclared_field_is_read_on(self) -> None:
        """A field the structs do not declare is a closer look, not a refusal."""
        body = b'{"a":1,"zz":{"y":1}}\n' * 3
        assert [v.a for _, v in _read(body, DECODER)] == [1, 1, 1]

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.dictionaries(st.text(max_size=3), VALUES, max_size=4),
                    min_size=1, max_size=6), st.data())
    def test_generated_lines(self, docs: list[dict[str, Any]], data: st.DataObject) -> None:
        """Generated lines, one of them maybe with a key written twice: refused exactly
        when a key is given twice, read as orjson reads them otherwise."""
        lines = [json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode()
                 for d in docs]
        at = data.draw(st.integers(0, len(lines) - 1))
        if docs[at] and data.draw(st.booleans()):
            key = json.dumps(next(iter(docs[at])), ensure_ascii=False).encode() + b":"
            lines[at] = lines[at].replace(key, key + b"0," + key, 1)
        body = b"\n".join(lines) + b"\n"
        if any(find_duplicate(line) is not None or not _valid(line) for line in lines):
            with pytest.raises(Slow):
                _read(body)
        else:
            assert [(n, _plain(v)) for n, v in _read(body)] == _orjson(body)
