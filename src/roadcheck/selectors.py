"""Event selectors: one small language for picking events out of a trajectory.

A selector is a mapping of event fields to conditions, all of which must hold::

    {event: message, role: user, text: {regex: "(?i)\\byes\\b"}}
    {event: action, action_type: {in: [book_reservation, cancel_reservation]}}

A condition is a plain value (equality), ``{regex: PATTERN}`` (a search in a
text field) or ``{in: [values]}`` (membership). ``event`` names the event
type; every other key is a field of the record. A missing field never matches.
The fields and their types are a closed list (:data:`SELECTOR_FIELDS`, declared
in :mod:`roadcheck.documents.selector`): an unknown field, a value of the wrong
type or a regex on a field that is not text is refused with the closest valid
name, never compiled into a selector that silently matches nothing.
``command`` takes ``{words: [git, push]}`` (a simple command of the shell line
an action ran, see :mod:`roadcheck.shellcmd`) or ``{regex: PATTERN}``.
Derive rules, ``voided_by`` and later capabilities all use this one language.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from roadcheck.events import Event

if TYPE_CHECKING:
    from roadcheck.documents.selector import SELECTOR_FIELDS, SelectorDoc

# The document structs (msgspec) load on first check: a selector checked when its
# document was read compiles without them (``checked=True``), as the guard's hook does.

__all__ = ["SELECTOR_FIELDS", "Selector", "check_selector", "check_selector_doc",
           "compile_selector"]

Selector = Callable[[Event], bool]
_MISSING = object()


def __getattr__(name: str) -> Any:
    if name == "SELECTOR_FIELDS":
        from roadcheck.documents.selector import SELECTOR_FIELDS

        return SELECTOR_FIELDS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_selector(spec: Any) -> SelectorDoc:
    """Validate a selector mapping; a problem raises :class:`Problem` located inside it."""
    from roadcheck.documents.loader import Problem, convert
    from roadcheck.documents.selector import SelectorDoc

    if not isinstance(spec, Mapping) or not spec:
        raise Problem((), _EMPTY)
    return check_selector_doc(convert(dict(spec), SelectorDoc))


def check_selector_doc(doc: SelectorDoc) -> SelectorDoc:
    """Check what a selector's struct cannot say: it selects something, each condition
    takes one form, and every pattern compiles; a problem raises :class:`Problem`."""
    from roadcheck.documents._read import Problem
    from roadcheck.documents.selector import SELECTOR_FIELDS, CommandCondition, TextCondition

    conditions = [(name, getattr(doc, name)) for name in SELECTOR_FIELDS]
    if all(cond is None for _, cond in conditions):
        raise Problem((), _EMPTY)
    for name, cond in conditions:
        if isinstance(cond, CommandCondition):
            if (cond.words is None) == (cond.regex is None):
                raise Problem((name,), "a command condition is {words: [...]} or "
                                       "{regex: ...}, one at a time")
            if cond.regex is not None:
                _check_regex(cond.regex, (name, "regex"))
            continue
        if not isinstance(cond, TextCondition):
            continue
        if (cond.regex is None) == (cond.in_ is None):
            raise Problem((name,), "a condition is a value, {regex: ...} or {in: [...]}, "
                                   "one at a time")
        if cond.regex is not None:
            _check_regex(cond.regex, (name, "regex"))
    return doc


_EMPTY = "a selector is a non-empty mapping of event fields to conditions"


def _check_regex(pattern: str, loc: tuple[str, ...]) -> None:
    """A pattern that does not compile is a problem at ``loc``."""
    from roadcheck.documents.loader import Problem

    try:
        re.compile(pattern)
    except re.error as exc:
        raise Problem(loc, f"bad regex {pattern!r}: {exc}") from None


def _command(cond: Mapping[str, Any]) -> Callable[[Any], bool]:
    """A ``command`` condition: on the command line an action ran (:mod:`roadcheck.shellcmd`)."""
    from roadcheck.shellcmd import matches_words

    if "words" in cond:
        words = list(cond["words"])
        return lambda v: isinstance(v, str) and matches_words(v, words)
    search = re.compile(cond["regex"]).search
    return lambda v: isinstance(v, str) and search(v) is not None


def _condition(cond: Any) -> Callable[[Any], bool]:
    if isinstance(cond, Mapping):
        if "regex" in cond:
            search = re.compile(cond["regex"]).search
            return lambda v: isinstance(v, str) and search(v) is not None
        keyed = [(type(o), o) for o in cond["in"]]
        return lambda v: (type(v), v) in keyed
    want = (type(cond), cond)
    return lambda v: (type(v), v) == want


def compile_selector(spec: Any, *, checked: bool = False) -> Selector:
    """Compile a selector mapping into a predicate on events (``ValueError`` if unusable).

    ``checked=True`` skips the check for a selector :func:`check_selector` already
    passed (one read with its spec document).
    """
    if not checked:
        from roadcheck.documents.loader import Problem, where

        try:
            check_selector(spec)
        except Problem as p:
            at = f" '{where(p.loc)}'" if p.loc else ""
            raise ValueError(f"selector{at}: {p.message}") from None
    kind_check: Callable[[Any], bool] | None = None
    # Plain values are compared inline and first: they are cheap and usually decide.
    equal: list[tuple[str, Any, type]] = []
    checks: list[tuple[str, Callable[[Any], bool]]] = []
    for key, cond in spec.items():
        check = _command(cond) if key == "command" else _condition(cond)
        if key == "event":
            kind_check = check
        elif isinstance(cond, Mapping):
            checks.append((key, check))
        else:
            equal.append((key, cond, type(cond)))

    def match(event: Event) -> bool:
        if kind_check is not None and not kind_check(event.kind):
            return False
        data = event.data
        for key, want, kind in equal:
            value = data.get(key, _MISSING)
            if value != want or type(value) is not kind:
                return False
        for key, check in checks:
            value = data.get(key, _MISSING)
            if value is _MISSING or not check(value):
                return False
        return True

    return match
