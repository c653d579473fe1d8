"""The event selector as a typed struct: known event fields only, each with its type.

A selector names fields of an event and a condition on each. The fields are a
closed list (the native format's scalar fields and the ids readers add); a
misspelt or unknown field, a value of the wrong type (``"true"`` for
``true``) or a ``regex`` on a field that is not text is a spec error, never a
selector that silently matches nothing.
"""

# The annotations are evaluated as the classes are made (no ``from __future__ import
# annotations``): msgspec reads them as objects, where strings would each be compiled and
# evaluated when a spec is first converted (some 6 ms of a replay's start). Only the
# recursive references are strings.
from typing import Annotated, ClassVar, Literal

import msgspec

__all__ = [
    "COMBINATORS",
    "EVENT_KINDS",
    "OBJECT_FIELDS",
    "ROLES",
    "SELECTOR_FIELDS",
    "CommandCondition",
    "CountCondition",
    "FlagCondition",
    "KindCondition",
    "RoleCondition",
    "SelectorDoc",
    "TextCondition",
    "ValueCondition",
]

EventKind = Literal["action", "checkpoint", "handoff", "final", "message"]
Role = Literal["user", "assistant", "system", "tool"]
#: The event types a selector's ``event`` may name.
EVENT_KINDS = ("action", "checkpoint", "handoff", "final", "message")
#: The message roles a selector's ``role`` may name.
ROLES = ("user", "assistant", "system", "tool")

_REGEX_HINT: dict[str, str] = {"regex": "a regex applies to text fields only"}


class _Condition(msgspec.Struct, forbid_unknown_fields=True, frozen=True, omit_defaults=True):
    key_hints: ClassVar[dict[str, str]] = {}


class TextCondition(_Condition, frozen=True):
    """A condition on a text field: ``{regex: PATTERN}`` or ``{in: [values]}``, exactly one."""

    regex: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    in_: Annotated[list[str], msgspec.Meta(min_length=1)] | None = msgspec.field(
        default=None, name="in")


class FlagCondition(_Condition, frozen=True):
    """A condition on a true/false field: ``{in: [true, false]}``."""

    key_hints = _REGEX_HINT
    in_: Annotated[list[bool], msgspec.Meta(min_length=1)] = msgspec.field(name="in")


class CountCondition(_Condition, frozen=True):
    """A condition on an integer field: ``{in: [1, 2]}``."""

    key_hints = _REGEX_HINT
    in_: Annotated[list[int], msgspec.Meta(min_length=1)] = msgspec.field(name="in")


class KindCondition(_Condition, frozen=True):
    """A condition on the event type: ``{in: [action, checkpoint]}``."""

    key_hints = _REGEX_HINT
    in_: Annotated[list[EventKind], msgspec.Meta(min_length=1)] = msgspec.field(name="in")


class RoleCondition(_Condition, frozen=True):
    """A condition on a message role: ``{in: [user, system]}``."""

    key_hints = _REGEX_HINT
    in_: Annotated[list[Role], msgspec.Meta(min_length=1)] = msgspec.field(name="in")


class CommandCondition(_Condition, frozen=True):
    """A condition on a shell command line: ``{words: [git, push]}``, ``{runs: PATTERN}``
    or ``{regex: PATTERN}``, one at a time.

    ``words``: one of the line's simple commands is the program ``words[0]`` with
    the other words among its arguments, in order (see :mod:`roadcheck.shellcmd`).
    ``runs``: one of the line's simple commands, its words joined by single spaces,
    matches the pattern from its start (``echo pytest`` runs ``echo``, not ``pytest``).
    ``regex``: the pattern is found anywhere in the line's text.
    """

    words: Annotated[list[Annotated[str, msgspec.Meta(min_length=1)]],
                     msgspec.Meta(min_length=1)] | None = None
    runs: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    regex: Annotated[str, msgspec.Meta(min_length=1)] | None = None


Text = str | TextCondition
Flag = bool | FlagCondition
Count = int | CountCondition
Number = int | float
Scalar = str | int | float | bool


class ValueCondition(_Condition, frozen=True):
    """A condition on a value inside ``args``, ``result`` or ``payload``.

    Every key given must hold. ``gt``/``ge``/``lt``/``le`` compare numbers, and
    strings that are wholly a decimal number (``"5000"``); any other value does not
    match. ``glob`` matches text as a path pattern (``*`` within one part, ``**``
    across parts). ``exists`` asks whether the path reaches a value at all.
    """

    regex: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    in_: Annotated[list[Scalar], msgspec.Meta(min_length=1)] | None = msgspec.field(
        default=None, name="in")
    not_in: Annotated[list[Scalar], msgspec.Meta(min_length=1)] | None = None
    gt: Number | None = None
    ge: Number | None = None
    lt: Number | None = None
    le: Number | None = None
    exists: bool | None = None
    glob: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    all_: Annotated[list["FieldCondition"], msgspec.Meta(min_length=1)] | None = (
        msgspec.field(default=None, name="all"))
    any_: Annotated[list["FieldCondition"], msgspec.Meta(min_length=1)] | None = (
        msgspec.field(default=None, name="any"))
    not_: "FieldCondition | None" = msgspec.field(default=None, name="not")


#: A value's condition: a plain value (equal, of the same type) or a condition mapping.
FieldCondition = Scalar | ValueCondition
#: Dotted paths (``to``, ``items.0.sku``, ``items.*.sku``; ``.`` the whole value) to
#: the condition the value there must meet.
Paths = Annotated[dict[Annotated[str, msgspec.Meta(min_length=1)], FieldCondition],
                  msgspec.Meta(min_length=1)]


class SelectorDoc(msgspec.Struct, forbid_unknown_fields=True, frozen=True, omit_defaults=True):
    """Event fields and the condition each must meet; all must hold, a missing field never does."""

    event: EventKind | KindCondition | None = None
    seq: Count | None = None
    agent: Text | None = None
    ts: Text | None = None
    action_type: Text | None = None
    irreversible: Flag | None = None
    destructive_hint: Flag | None = None
    read_only_hint: Flag | None = None
    call_id: Text | None = None
    checkpoint_id: Text | None = None
    confirmed_by: Text | None = None
    decision: Text | None = None
    from_agent: Text | None = None
    to_agent: Text | None = None
    role: Role | RoleCondition | None = None
    text: Text | None = None
    command: CommandCondition | None = None
    yields_turn: Flag | None = None
    task_success: Flag | None = None
    #: An action that succeeded: no error recorded, exit status 0 where one is recorded.
    ok: Flag | None = None
    #: the error text a failed action recorded (its output, where the reader keeps it there)
    error: Text | None = None
    args: Paths | None = None
    result: Paths | None = None
    payload: Paths | None = None
    #: Whole selectors combined: every one, at least one, not this one.
    all_: Annotated[list["SelectorDoc"], msgspec.Meta(min_length=1)] | None = (
        msgspec.field(default=None, name="all"))
    any_: Annotated[list["SelectorDoc"], msgspec.Meta(min_length=1)] | None = (
        msgspec.field(default=None, name="any"))
    not_: "SelectorDoc | None" = msgspec.field(default=None, name="not")


#: Every field a selector may name, as written (``all``, not ``all_``): the names the struct
#: encodes, read without evaluating its annotations (``msgspec.structs.fields`` would).
SELECTOR_FIELDS: tuple[str, ...] = SelectorDoc.__struct_encode_fields__
#: The fields that hold an object, selected on by dotted paths.
OBJECT_FIELDS = ("args", "result", "payload")
#: The keys that combine whole selectors.
COMBINATORS = ("all", "any", "not")
