"""The small document validator shared by specs and checkpoints.

Documents read on every start of a gate are checked here rather than by
pydantic, whose import alone costs more than the gate's start-up budget.
A :class:`Reader` walks one mapping key by key; every problem becomes an
:class:`Invalid` with its location, all are collected, and :func:`raise_first`
reports them on one line with the file and the line of the first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from assay.errors import InputError

__all__ = ["Invalid", "Loc", "Reader", "flag", "raise_first", "text", "texts", "where"]

Loc = tuple[str | int, ...]


class Invalid(Exception):
    """One problem at one place in the document; collected, never shown raw."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


def where(loc: Loc) -> str:
    """``mandatory_checkpoints.0.scope``: a location as people write it."""
    return ".".join(str(p) for p in loc)


class Reader:
    """Checks one mapping of the document key by key, collecting every problem."""

    def __init__(self, doc: Any, loc: Loc, allowed: tuple[str, ...], errors: list[Invalid]):
        self.loc = loc
        self.errors = errors
        self.ok = isinstance(doc, Mapping)
        self.doc: Mapping[str, Any] = doc if self.ok else {}
        if not self.ok:
            errors.append(Invalid(loc, f"must be an object, got {type(doc).__name__}"))
            return
        for key in doc:
            if key not in allowed:
                errors.append(Invalid((*loc, str(key)), "unknown key"))

    def has(self, key: str) -> bool:
        """True when the key is present and not null."""
        return self.doc.get(key) is not None

    def get(self, key: str, check: Callable[[Any, Loc], Any], default: Any = ...) -> Any:
        """The checked value of ``key``; ``None`` (and a collected problem) when it fails.

        Without a ``default`` the key is required.
        """
        loc = (*self.loc, key)
        if key not in self.doc or self.doc[key] is None:
            if default is ...:
                if self.ok:
                    self.errors.append(Invalid(loc, "required"))
                return None
            return default
        try:
            return check(self.doc[key], loc)
        except Invalid as exc:
            self.errors.append(exc)
            return None


def text(value: Any, loc: Loc) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        raise Invalid(loc, "must be a non-empty string")
    return value


def flag(value: Any, loc: Loc) -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise Invalid(loc, "must be true or false")
    return value


def texts(value: Any, loc: Loc) -> tuple[str, ...]:
    """A list of non-empty strings."""
    if not isinstance(value, list):
        raise Invalid(loc, "must be a list of strings")
    return tuple(text(v, (*loc, i)) for i, v in enumerate(value))


def raise_first(errors: list[Invalid], what: str, source: str | None,
                error: type[InputError], *, shown: int = 3) -> None:
    """Raise ``error`` naming the first ``shown`` problems, the file and the first's line."""
    if not errors:
        return
    parts = [f"{where(e.loc)}: {e.message}" if e.loc else e.message for e in errors[:shown]]
    rest = len(errors) - len(parts)
    more = f" (+{rest} more)" if rest else ""
    line = None
    if source is not None and errors[0].loc:
        import os

        from assay._docs import line_of

        if os.path.isfile(source):
            line = line_of(source, errors[0].loc)
    raise error(f"unusable {what}: {'; '.join(parts)}{more}", path=source, line=line)
