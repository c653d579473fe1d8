"""One finding shape for every command: a reason code, a message, where it points, how bad.

Replay, accept, run, revalidate and the guard each report what they found as
:class:`Finding` values. The message is the sentence a person reads; the
:class:`Location` carries the same position as data (the event's ``seq``, its
file ``line`` or transcript ``message_index``, the checkpoint and action
named, the event that voided a checkpoint, a handoff's agents), so a renderer
can link or annotate without parsing the message. ``to_dict`` adds a field
only when it is known, after ``code`` and ``message``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["NOWHERE", "Finding", "Location", "Severity"]

#: ``error`` decides a failing verdict, ``warn`` and ``note`` inform, ``ok`` is a check
#: that held. Revalidation grades its failures further: ``invalid`` (escalates when an
#: unsafe step is left), ``reconcile`` and ``escalate``.
Severity = Literal["ok", "note", "warn", "error", "invalid", "reconcile", "escalate"]


class Location(msgspec.Struct, frozen=True, gc=False):
    """Where a finding points; every field is optional and None when unknown.

    A frozen msgspec struct rather than a dataclass: replay builds one for each finding
    of each trajectory, and a struct is built in C, some twenty times faster than a
    frozen dataclass of fourteen fields. It holds no container, so the cyclic
    collector need not track it (``gc=False``).
    """

    #: The seq of the event the finding is about.
    seq: int | None = None
    #: The line of the native trajectory file holding that event.
    line: int | None = None
    #: The index of the message in a transcript the event was read from.
    message_index: int | None = None
    #: The checkpoint the finding names.
    checkpoint_id: str | None = None
    #: The action the finding names.
    action_type: str | None = None
    #: The seq of the event that voided the checkpoint the action needed.
    voided_by_seq: int | None = None
    #: The handoff's sending and receiving agents.
    from_agent: str | None = None
    to_agent: str | None = None
    #: Revalidation: the question the finding answers (``task``, ``artifacts``...).
    question: str | None = None
    #: Accept: the check that made the finding (``contract``, ``claim``...).
    check: str | None = None
    #: Run: the workflow phase.
    phase: str | None = None
    #: The call id of the action the finding names (a tool_use id, a function call id).
    call_id: str | None = None
    #: The span the action was read from (a trace's span id).
    span_id: str | None = None
    #: The shell command the action ran, on one line and shortened (120 characters).
    command: str | None = None
    #: The id of the rule that made the finding (``forbidden``, ``limits``, ...).
    rule_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The known fields, in declaration order; an empty location is ``{}``."""
        return {name: value for name, value in zip(_LOCATION_FIELDS, _astuple(self),
                                                   strict=True) if value is not None}

    def as_tuple(self) -> tuple[Any, ...]:
        """Every field in declaration order (for a compact serialisation)."""
        return _astuple(self)


_astuple = msgspec.structs.astuple
_LOCATION_FIELDS: tuple[str, ...] = Location.__struct_fields__
#: The location of a finding that points nowhere in particular.
NOWHERE = Location()
_force_setattr = msgspec.structs.force_setattr


class Finding(msgspec.Struct, frozen=True, gc=False):
    """One reason, warning or note: a reason code, a one-line message, a location, a severity.

    ``location`` may be given as a bare ``int``, the seq of the event, as
    replay's findings took it before they carried a location. A frozen msgspec
    struct, as :class:`Location` is.
    """

    code: str
    message: str
    location: Location = NOWHERE
    severity: Severity = "error"

    def __post_init__(self) -> None:
        loc: Any = self.location
        if loc is None:
            _force_setattr(self, "location", NOWHERE)
        elif isinstance(loc, int) and not isinstance(loc, bool):
            _force_setattr(self, "location", Location(seq=loc))

    @property
    def seq(self) -> int | None:
        """The seq of the event the finding is about, where there is one."""
        return self.location.seq

    @property
    def question(self) -> str:
        """Revalidation: the question the finding answers ("" elsewhere)."""
        return self.location.question or ""

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape: ``{"code", "message"}`` and the known location fields.

        A revalidation finding keeps ``question`` first, as it always printed.
        """
        loc = self.location.to_dict()
        out: dict[str, Any] = {}
        if "question" in loc:
            out["question"] = loc.pop("question")
        out["code"] = str(self.code)
        out["message"] = self.message
        out.update(loc)
        return out
