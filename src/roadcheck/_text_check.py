"""The UTF-8 check every document and trajectory passes before it is parsed.

JSON and YAML parsers report a stray Latin-1 or cp1252 byte in their own terms
(a column of their own, or a two-line message); this check names the file, the
line, the byte and the column of the character it breaks, on one line.
"""

from __future__ import annotations

from roadcheck.errors import InputError

__all__ = ["check_utf8", "utf8_problem"]


def utf8_problem(data: bytes) -> tuple[int, str] | None:
    """``(line, "not UTF-8 text (byte 0x.. at column N)")`` for the first bad byte, or None.

    The line and the column count from 1; the column counts characters, like
    an editor's. ASCII input, the common case, is recognised without decoding.
    """
    if data.isascii() or _utf8_in_slices(data):
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
        line_start = data.rfind(b"\n", 0, start) + 1
        column = len(data[line_start:start].decode("utf-8")) + 1
        return (data.count(b"\n", 0, start) + 1,
                f"not UTF-8 text (byte 0x{data[start]:02x} at column {column})")
    return None


_SLICE = 1 << 20


def _utf8_in_slices(data: bytes) -> bool:
    """True when a large ``data`` is UTF-8, checked a megabyte at a time.

    Decoding a large document whole would hold its text beside its bytes (up
    to four times their size) for nothing; a small one is decoded by the caller.
    """
    if len(data) <= _SLICE:
        return False
    import codecs

    decode = codecs.getincrementaldecoder("utf-8")().decode
    view = memoryview(data)
    try:
        for start in range(0, len(data), _SLICE):
            decode(view[start:start + _SLICE])
        decode(b"", True)
    except UnicodeDecodeError:
        return False  # the caller decodes it whole to say where
    return True


def check_utf8(data: bytes, path: str | None, error: type[InputError] = InputError) -> None:
    """Raise ``error`` as ``FILE:LINE: not UTF-8 text (byte 0x.. at column N)`` unless UTF-8."""
    problem = utf8_problem(data)
    if problem is not None:
        raise error(problem[1], path=path, line=problem[0])
