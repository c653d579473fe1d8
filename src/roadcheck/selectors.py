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
an action ran, see :mod:`roadcheck.shellcmd`), ``{runs: PATTERN}`` (a simple
command, its words joined by spaces, matching from its start) or ``{regex: PATTERN}``
(anywhere in the line's text).
``args``, ``result`` and ``payload`` take dotted paths (``to``, ``items.0.sku``,
``items.*.sku``, ``.`` for the whole value) to value conditions (a plain value,
``regex``, ``in``, ``not_in``, ``gt``/``ge``/``lt``/``le``, ``exists``, ``glob``,
``all``/``any``/``not``), true when one value the path reaches meets it; ``ok``
is an action that succeeded (:func:`succeeded`); ``all``, ``any`` and ``not``
combine whole selectors. Derive rules, ``voided_by``, ``must_precede`` and the
rules of :mod:`roadcheck.conformance.rules` all use this one language.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from roadcheck.events import Event

if TYPE_CHECKING:
    from roadcheck.documents.selector import SELECTOR_FIELDS, SelectorDoc

# The document structs (msgspec) load on first check: a selector checked when its
# document was read compiles without them (``checked=True``), as the guard's hook does.

__all__ = ["SELECTOR_FIELDS", "Selector", "as_number", "check_selector", "check_selector_doc",
           "compile_selector", "glob_regex", "reach", "succeeded", "value_check"]

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
    from roadcheck.documents.selector import (
        SELECTOR_FIELDS,
        CommandCondition,
        SelectorDoc,
        TextCondition,
    )

    conditions = [(name, getattr(doc, _attr(name))) for name in SELECTOR_FIELDS]
    if all(cond is None for _, cond in conditions):
        raise Problem((), _EMPTY)
    for name, cond in conditions:
        if name in _OBJECTS and cond is not None:
            for path, value in cond.items():
                _check_path(path, (name, path))
                _check_value(value, (name, path))
            continue
        if name in _COMBINED and cond is not None:
            subs = [cond] if isinstance(cond, SelectorDoc) else cond
            for i, sub in enumerate(subs):
                loc: tuple[str | int, ...] = (name,) if name == "not" else (name, i)
                try:
                    check_selector_doc(sub)
                except Problem as p:
                    raise Problem((*loc, *p.loc), p.message) from None
            continue
        if isinstance(cond, CommandCondition):
            given = [k for k in ("words", "runs", "regex") if getattr(cond, k) is not None]
            if len(given) != 1:
                raise Problem((name,), "a command condition is {words: [...]}, {runs: ...} "
                                       "or {regex: ...}, one at a time")
            if cond.regex is not None:
                _check_regex(cond.regex, (name, "regex"))
            if cond.runs is not None:
                _check_regex(cond.runs, (name, "runs"))
            continue
        if not isinstance(cond, TextCondition):
            continue
        if (cond.regex is None) == (cond.in_ is None):
            raise Problem((name,), "a condition is a value, {regex: ...} or {in: [...]}, "
                                   "one at a time")
        if cond.regex is not None:
            _check_regex(cond.regex, (name, "regex"))
    return doc


_OBJECTS = frozenset({"args", "result", "payload"})
_COMBINED = frozenset({"all", "any", "not"})


def _attr(name: str) -> str:
    """The struct attribute of a selector key (``in`` is ``in_``, ``all`` is ``all_``)."""
    return f"{name}_" if name in ("in", "all", "any", "not") else name


def _check_path(path: str, loc: tuple[str | int, ...]) -> None:
    from roadcheck.documents._read import Problem

    if path != "." and any(not part for part in path.split(".")):
        raise Problem(loc, f"bad path {path!r}: dotted names like to, items.0.sku or "
                           "items.*.sku (. is the whole value)")


def _check_value(cond: Any, loc: tuple[str | int, ...]) -> None:
    """A value condition: at least one key, patterns that compile, combinations checked."""
    from roadcheck.documents._read import Problem
    from roadcheck.documents.selector import ValueCondition

    if not isinstance(cond, ValueCondition):
        return
    given = [f for f in ("regex", "in_", "not_in", "gt", "ge", "lt", "le", "exists", "glob",
                         "all_", "any_", "not_") if getattr(cond, f) is not None]
    if not given:
        raise Problem(loc, "a value condition names at least one of regex, in, not_in, gt, "
                           "ge, lt, le, exists, glob, all, any, not")
    if cond.regex is not None:
        _check_regex(cond.regex, (*loc, "regex"))
    for key in ("all", "any"):
        for i, sub in enumerate(getattr(cond, f"{key}_") or ()):
            _check_value(sub, (*loc, key, i))
    if cond.not_ is not None:
        _check_value(cond.not_, (*loc, "not"))


_EMPTY = "a selector is a non-empty mapping of event fields to conditions"


def _check_regex(pattern: str, loc: tuple[str | int, ...]) -> None:
    """A pattern that does not compile is a problem at ``loc``."""
    from roadcheck.documents.loader import Problem

    try:
        re.compile(pattern)
    except re.error as exc:
        raise Problem(loc, f"bad regex {pattern!r}: {exc}") from None


def _command(cond: Mapping[str, Any], guarding: bool = True) -> Callable[[Any], bool]:
    """A ``command`` condition: on the command line an action ran (:mod:`roadcheck.shellcmd`).
    A line that cannot be read matches it when it guards; where it picks evidence, only
    the commands the line was read to run count (``eval true`` shows nothing)."""
    from roadcheck.shellcmd import matches_words, runs_command

    if "words" in cond:
        words = list(cond["words"])
        return lambda v: isinstance(v, str) and matches_words(v, words, unknown=guarding)
    if "runs" in cond:
        runs = re.compile(cond["runs"]).match
        return lambda v: isinstance(v, str) and runs_command(v, runs, unknown=guarding)
    search = re.compile(cond["regex"]).search
    return lambda v: isinstance(v, str) and search(v) is not None


def _command_of_args(check: Callable[[Any], bool], guarding: bool) -> Selector:
    """A ``command`` condition on an action that records no ``command`` of its own: the
    ``command`` argument it was called with (an MCP shell tool's line, a string or an
    argv), read the same way. One that is there but is no command line (an object, a
    number) is a line that cannot be read: it matches where the condition guards."""
    from roadcheck.shellcmd import command_text

    def match(event: Event) -> bool:
        args = event.data.get("args")
        if type(args) is not dict or "command" not in args:
            return False
        text = command_text(args["command"])
        return guarding if text is None else check(text)

    return match


def _condition(cond: Any) -> Callable[[Any], bool]:
    if isinstance(cond, Mapping):
        if "regex" in cond:
            search = re.compile(cond["regex"]).search
            return lambda v: isinstance(v, str) and search(v) is not None
        keyed = [(type(o), o) for o in cond["in"]]
        return lambda v: (type(v), v) in keyed
    want = (type(cond), cond)
    return lambda v: (type(v), v) == want


def compile_selector(spec: Any, *, checked: bool = False, guarding: bool = False) -> Selector:
    """Compile a selector mapping into a predicate on events (``ValueError`` if unusable).

    ``checked=True`` skips the check for a selector :func:`check_selector` already
    passed (one read with its spec document). ``guarding=True`` for a selector that picks
    what a rule holds (a guarded action, a voiding event, a forbidden one): a command
    line that cannot be read before it runs (``eval ...``) matches its ``command``
    condition, so it is asked about. Otherwise the selector picks evidence (a derived
    checkpoint, the action that meets an obligation, the call that backs a claim) and
    such a line matches only through the commands it was read to run: ``eval true``
    shows nothing.
    """
    if not checked:
        from roadcheck.documents.loader import Problem, where

        try:
            check_selector(spec)
        except Problem as p:
            at = f" '{where(p.loc)}'" if p.loc else ""
            raise ValueError(f"selector{at}: {p.message}") from None
    kind_check, equal, checks, whole = _parts(spec, guarding)
    by_command = [check for key, check in checks if key == "command"]
    from_args = (_command_of_args(by_command[0], guarding) if by_command
                 else lambda _e: False)

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
            if value is _MISSING:
                if key != "command" or not from_args(event):
                    return False
            elif not check(value):
                return False
        return True

    if not whole:
        return match

    def match_whole(event: Event) -> bool:
        if not match(event):
            return False
        return all(check(event) for check in whole)

    return match_whole


_Parts = tuple["Callable[[Any], bool] | None", list[tuple[str, Any, type]],
               list[tuple[str, Callable[[Any], bool]]], list[Selector]]


def _parts(spec: Mapping[str, Any], guarding: bool) -> _Parts:
    """A selector's conditions sorted by how they are applied: the event type, plain values
    (compared inline and first: they are cheap and usually decide), conditions on fields,
    and conditions on the whole event (objects, ok, combined selectors), applied last."""
    kind_check: Callable[[Any], bool] | None = None
    equal: list[tuple[str, Any, type]] = []
    checks: list[tuple[str, Callable[[Any], bool]]] = []
    whole: list[Selector] = []
    for key, cond in spec.items():
        if key in _OBJECTS:
            whole.extend(_object(key, path, c) for path, c in cond.items())
        elif key in _COMBINED:
            whole.append(_combined(key, cond, guarding))
        elif key == "ok":
            whole.append(_ok(_condition(cond)))
        elif key == "event":
            kind_check = _condition(cond)
        elif key == "command":
            checks.append((key, _command(cond, guarding)))
        elif isinstance(cond, Mapping):
            checks.append((key, _condition(cond)))
        else:
            equal.append((key, cond, type(cond)))
    return kind_check, equal, checks, whole


def _combined(key: str, cond: Any, guarding: bool) -> Selector:
    """``all``, ``any`` or ``not`` of whole selectors (under ``not``, what an unknown command
    line does turns: a guarded ``not: {ls}`` holds ``eval ...``, which may be anything)."""
    if key == "not":
        inner = compile_selector(cond, checked=True, guarding=not guarding)
        return lambda e: not inner(e)
    subs = [compile_selector(c, checked=True, guarding=guarding) for c in cond]
    if key == "all":
        return lambda e: all(s(e) for s in subs)
    return lambda e: any(s(e) for s in subs)


def succeeded(event: Event) -> bool | None:
    """Whether an action succeeded: no error recorded (``error``, a refusal, a result
    marked as an error) and an exit status of 0 where one is recorded. None for an event
    that is not an action."""
    if event.kind != "action":
        return None
    data = event.data
    if "error" in data or "refused" in data or data.get("result_error") is True:
        return False
    code = data.get("exit_code", 0)
    return type(code) is int and code == 0


def _ok(check: Callable[[Any], bool]) -> Selector:
    def match(event: Event) -> bool:
        done = succeeded(event)
        return done is not None and check(done)

    return match


def reach(value: Any, parts: tuple[str, ...]) -> list[Any]:
    """The values a dotted path reaches in ``value`` (``*`` is every element or member)."""
    found = [value]
    for part in parts:
        step: list[Any] = []
        for v in found:
            if part == "*":
                if type(v) is list:
                    step.extend(v)
                elif type(v) is dict:
                    step.extend(v.values())
            elif type(v) is dict:
                if part in v:
                    step.append(v[part])
            elif type(v) is list and part.isdigit():
                i = int(part)
                if i < len(v):
                    step.append(v[i])
        if not step:
            return step
        found = step
    return found


def _object(key: str, path: str, cond: Any) -> Selector:
    """A condition on the value a dotted path reaches inside ``args``, ``result`` or
    ``payload``: it holds when one of the values reached meets it (``exists: false``:
    when the path reaches none)."""
    parts = () if path == "." else tuple(path.split("."))
    if isinstance(cond, Mapping) and set(cond) == {"exists"}:
        want = bool(cond["exists"])

        def exists(event: Event) -> bool:
            value = event.data.get(key, _MISSING)
            got = value is not _MISSING and bool(reach(value, parts))
            return got == want

        return exists
    check = value_check(cond)

    def match(event: Event) -> bool:
        value = event.data.get(key, _MISSING)
        if value is _MISSING:
            return False
        return any(check(v) for v in reach(value, parts))

    return match


@cache
def _decimal() -> Callable[[str], re.Match[str] | None]:
    """Whether text is wholly a decimal number; compiled when text is first compared."""
    return re.compile(r"[+-]?\d+(?:\.\d+)?\Z").match


def as_number(value: Any) -> int | float | None:
    """A number, or a string that is wholly a decimal number, as a number; else None."""
    kind = type(value)
    if kind is int or kind is float:
        return value  # type: ignore[no-any-return]
    if kind is str and _decimal()(value):
        text = value.lstrip("+")
        return int(text) if text.lstrip("-").isdigit() else float(text)
    return None


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b}


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A path pattern as a regex: ``**`` any text (``**/`` any folders or none), ``*`` any
    text within one part (no ``/``), ``?`` one character that is not ``/``, ``[...]`` a
    character class."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and pattern.find("]", i + 2) > 0:
            end = pattern.find("]", i + 2)
            body = pattern[i + 1:end].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end + 1
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def value_check(cond: Any) -> Callable[[Any], bool]:
    """A value condition (a plain value, or a mapping of condition keys that must all hold)
    compiled into a predicate on one value."""
    if not isinstance(cond, Mapping):
        want = (type(cond), cond)
        return lambda v: (type(v), v) == want
    parts = [_leaf(key, arg) for key, arg in cond.items()]
    if len(parts) == 1:
        return parts[0]
    return lambda v: all(p(v) for p in parts)


def _leaf(key: str, arg: Any) -> Callable[[Any], bool]:
    """One key of a value condition as a predicate."""
    if key == "regex":
        search = re.compile(arg).search
        return lambda v: type(v) is str and search(v) is not None
    if key in ("in", "not_in"):
        keyed = frozenset((type(o), o) for o in arg)
        inside: Callable[[Any], bool] = lambda v: _hashable(v) and (type(v), v) in keyed  # noqa: E731
        return inside if key == "in" else lambda v: not inside(v)
    if key in _ORDER:
        order = _ORDER[key]
        return lambda v: _compare(v, order, arg)
    if key == "exists":
        want = bool(arg)
        return lambda v: want
    if key == "glob":
        full = glob_regex(arg).match
        return lambda v: type(v) is str and full(v) is not None
    if key == "not":
        inner = value_check(arg)
        return lambda v: not inner(v)
    subs = [value_check(c) for c in arg]
    if key == "all":
        return lambda v: all(s(v) for s in subs)
    return lambda v: any(s(v) for s in subs)


def _hashable(value: Any) -> bool:
    return type(value) in (str, int, float, bool) or value is None


def _compare(value: Any, order: Callable[[Any, Any], bool], bound: Any) -> bool:
    if type(value) is bool:
        return False
    number = as_number(value)
    return number is not None and order(number, bound)
