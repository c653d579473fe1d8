"""Records with known keys: a key that is missing or misspelt is named, with the closest
known name, the way the document loader names one (``unknown key 'outptu'; did you mean
'output'?``).

A reader that needs a key must not read a record without it as if the key were null:
a call whose ``output`` was lost would look like one that never ran. The cheap test
(one set comparison) runs on every record; the message is built only for a bad one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["missing_key", "unknown_key"]


def _close(name: str, names: Collection[str]) -> str | None:
    from roadcheck.documents._read import suggest  # the error path only

    return suggest(name, sorted(names))


def unknown_key(rec: Mapping[str, Any], known: Collection[str]) -> str | None:
    """The message for the first key of ``rec`` that is not in ``known``, or None."""
    for key in rec:
        if key not in known:
            close = _close(key, known)
            hint = (f"; did you mean {close!r}?" if close
                    else f" (known: {', '.join(sorted(known))})")
            return f"unknown key {key!r}{hint}"
    return None


def missing_key(rec: Mapping[str, Any], required: Collection[str],
                known: Collection[str] = ()) -> str | None:
    """The message for the first key of ``required`` (in its order) that ``rec`` lacks,
    or None. A key of ``rec`` that is neither required nor in ``known`` and is close to
    the missing one is named as its misspelling."""
    for key in required:
        if key not in rec:
            names = set(required) | set(known)
            for other in rec:
                if other not in names and _close(other, [key]) == key:
                    return f"unknown key {other!r}; did you mean {key!r}?"
            return f"missing required key {key!r}"
    return None
