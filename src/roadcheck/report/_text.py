"""Small helpers shared by the text renderers."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any

import orjson

from roadcheck._digest import sha256_hex

__all__ = ["dump_json", "dumps_json", "escape_controls", "escape_surrogates", "plural",
           "sha256_footer", "text_lines"]

# C0 and C1 controls (tab, newline, CR, ESC and NUL included), DEL, the bidi embedding,
# override, isolate and mark characters, the Unicode line and paragraph separators, and
# lone surrogates (no character: written raw they cannot even be encoded).
_UNSAFE = ("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
           "\u2066-\u2069\ud800-\udfff]")


@cache
def _unsafe() -> re.Pattern[str]:
    """:data:`_UNSAFE` compiled, on first use: compiling it costs a short command more than
    escaping every line of its report."""
    return re.compile(_UNSAFE)


def _escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def escape_controls(text: str) -> str:
    """``text`` with every control and bidi character shown as ``repr`` shows it.

    ``"a\\nb"`` becomes ``a\\nb`` (a backslash and an ``n``), ESC becomes ``\\x1b``,
    a right-to-left override ``\\u202e``. Nothing a recorded run carries can then
    start a line, move the cursor or reorder what a terminal shows. Printable
    text is returned unchanged (the same object).
    """
    if text.isascii() and text.isprintable():  # no control: the common line, at C speed
        return text
    unsafe = _unsafe()
    if unsafe.search(text) is None:
        return text
    return unsafe.sub(_escape, text)


def text_lines(lines: Iterable[str]) -> str:
    """Join report lines, each escaped, with a newline after every line.

    Every text renderer ends here, so no value can add a line of its own.
    """
    return "".join(escape_controls(line) + "\n" for line in lines)


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 checkpoint``, ``2 checkpoints``."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def sha256_footer(body: str) -> str:
    """The body followed by a ``report-sha256:`` line hashing exactly that body."""
    digest = sha256_hex(body.encode("utf-8"))
    return f"{body}report-sha256: {digest}\n"


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as :func:`escape_controls` writes it
    (``\\udcff``: a backslash and five letters), everything else as it is.

    A file name that is not UTF-8 reaches roadcheck as Python decodes it
    (``os.fsdecode``: the byte 0xff is the lone surrogate U+DCFF), which no UTF-8
    text, and so no JSON report, can hold: this is how every report names it.
    """
    return re.sub("[\ud800-\udfff]", _escape, text)


def _without_surrogates(value: Any) -> Any:
    t = type(value)
    if t is str:
        return escape_surrogates(value)
    if t is dict:
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if t is list or t is tuple:
        return [_without_surrogates(v) for v in value]
    return value


def dumps_json(value: Any, option: int | None = None) -> bytes:
    """``orjson.dumps``, with a string holding a lone surrogate (a file name that is not
    UTF-8) written as :func:`escape_surrogates` writes it; the same bytes for any other."""
    try:
        return orjson.dumps(value, option=option)
    except orjson.JSONEncodeError:
        return orjson.dumps(_without_surrogates(value), option=option)  # the rare path


def dump_json(doc: Any) -> str:
    """One JSON document, indented, keys in the order built, newline-terminated."""
    return dumps_json(doc, orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"
