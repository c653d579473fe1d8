"""Event selectors: one small language for picking events out of a trajectory.

A selector is a mapping of event fields to conditions, all of which must hold::

    {event: message, role: user, text: {regex: "(?i)\\byes\\b"}}
    {event: action, action_type: {in: [book_reservation, cancel_reservation]}}

A condition is a plain value (equality), ``{regex: PATTERN}`` (a search in a
string field) or ``{in: [values]}`` (membership). ``event`` names the event
type; every other key is a field of the record. A missing field never matches.
Derive rules, ``voided_by`` and later capabilities all use this one language.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from assay.events import Event

__all__ = ["Selector", "compile_selector"]

Selector = Callable[[Event], bool]
_MISSING = object()


def _condition(key: str, cond: Any) -> Callable[[Any], bool]:
    if isinstance(cond, Mapping):
        if set(cond) == {"regex"}:
            pattern = cond["regex"]
            if not isinstance(pattern, str):
                raise ValueError(f"selector '{key}': regex must be a string")
            try:
                search = re.compile(pattern).search
            except re.error as exc:
                raise ValueError(f"selector '{key}': bad regex {pattern!r}: {exc}") from None
            return lambda v: isinstance(v, str) and search(v) is not None
        if set(cond) == {"in"}:
            options = cond["in"]
            if not isinstance(options, list) or not options:
                raise ValueError(f"selector '{key}': 'in' must be a non-empty list")
            keyed = [(type(o), o) for o in options]
            return lambda v: (type(v), v) in keyed
        raise ValueError(f"selector '{key}': a condition is a value, "
                         "{regex: ...} or {in: [...]}")
    if isinstance(cond, list):
        raise ValueError(f"selector '{key}': use {{in: [...]}} to match one of several values")
    want = (type(cond), cond)
    return lambda v: (type(v), v) == want


def compile_selector(spec: Any) -> Selector:
    """Compile a selector mapping into a predicate on events (``ValueError`` if unusable)."""
    if not isinstance(spec, Mapping) or not spec:
        raise ValueError("a selector is a non-empty mapping of event fields to conditions")
    checks: list[tuple[str, Callable[[Any], bool]]] = []
    for key, cond in spec.items():
        if not isinstance(key, str):
            raise ValueError(f"selector key {key!r} is not a string")
        checks.append((key, _condition(key, cond)))

    def match(event: Event) -> bool:
        data = event.data
        for key, check in checks:
            value = event.kind if key == "event" else data.get(key, _MISSING)
            if value is _MISSING or not check(value):
                return False
        return True

    return match
