"""The resume checkpoint document: what a task believed when it last looked.

A checkpoint is JSON or YAML, declared by the structs of
:mod:`roadcheck.documents.checkpoint` and read by the one document loader: unknown
keys are refused at every depth, a null never stands for a default, and the
first problem is reported on one line with the file, the line and the field.
``remaining`` is required, so a checkpoint cut short before its steps is
unusable. Paths inside the document are relative to its directory.
Timestamps are ISO 8601 text (YAML timestamps are read as text).

:class:`Checkpoint` holds the document as the loader read it (:attr:`Checkpoint.doc`,
a :class:`~roadcheck.documents.checkpoint.CheckpointDoc`) with where it was read
from; the questions read the document's structs and resolve a path, a timestamp or
a duration through it (:meth:`Checkpoint.path`, :meth:`Checkpoint.time`,
:meth:`Checkpoint.duration`). Every timestamp and duration is checked when the
document is read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from os import PathLike
from pathlib import Path
from typing import Any

from roadcheck.documents.checkpoint import (
    ArtifactDoc,
    BlockerDoc,
    BudgetDoc,
    CadenceDoc,
    CapabilityDoc,
    CheckpointDoc,
    DateGateDoc,
    EffectDoc,
    ExpectDoc,
    MembersDoc,
    StepDoc,
    TaskDoc,
)
from roadcheck.documents.loader import Loc, Problem, convert, problems
from roadcheck.errors import SpecError

__all__ = [
    "EFFECT_STATES",
    "RETRY_CLASSES",
    "Artifact",
    "Blocker",
    "Budget",
    "Cadence",
    "Capability",
    "Checkpoint",
    "DateGate",
    "Effect",
    "Expect",
    "Step",
    "TaskRef",
    "format_ts",
    "load_checkpoint",
    "parse_checkpoint",
    "parse_duration",
    "parse_ts",
]

EFFECT_STATES = ("attempted", "confirmed", "unknown")
RETRY_CLASSES = ("safe_to_retry", "unsafe_to_retry", "reconcile_first")
FORMATS = ("json", "jsonl", "yaml")

#: The document's structs, under the names the questions have always given them.
TaskRef = TaskDoc
Members = MembersDoc
Expect = ExpectDoc
Artifact = ArtifactDoc
Effect = EffectDoc
Capability = CapabilityDoc
Budget = BudgetDoc
Blocker = BlockerDoc
DateGate = DateGateDoc
Cadence = CadenceDoc
Step = StepDoc
#: What an artifact expects when its document names no ``expect``.
NO_EXPECT = ExpectDoc()


def parse_ts(value: Any) -> datetime:
    """A timezone-aware UTC datetime from ISO 8601 text or a YAML timestamp."""
    if isinstance(value, datetime):
        ts = value
    elif isinstance(value, date):
        ts = datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value:
        try:
            ts = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO 8601 timestamp") from None
    else:
        raise ValueError("must be an ISO 8601 timestamp")
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return ts.astimezone(UTC)


def format_ts(ts: datetime) -> str:
    """ISO 8601 UTC with a ``Z``, seconds precision unless there are microseconds."""
    spec = "microseconds" if ts.microsecond else "seconds"
    return ts.astimezone(UTC).isoformat(timespec=spec).replace("+00:00", "Z")


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: Any) -> timedelta:
    """``90s``, ``30m``, ``24h``, ``7d``, ``1h30m`` or a number of seconds."""
    if isinstance(value, bool):
        raise ValueError("must be a duration such as 24h")
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError("must be a positive duration")
        return timedelta(seconds=value)
    if isinstance(value, str):
        text = value.strip().lower()
        parts = _DURATION.findall(text)
        if parts and _DURATION.sub("", text).strip() == "":
            seconds = sum(float(n) * _UNIT[u] for n, u in parts)
            if seconds > 0:
                return timedelta(seconds=seconds)
    raise ValueError(f"{value!r} is not a duration such as 90s, 30m, 24h or 7d")


def _ts(value: str | None, loc: Loc) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_ts(value)
    except (ValueError, OverflowError) as exc:
        raise Problem(loc, str(exc) if isinstance(exc, ValueError) else "is out of range"
                      ) from None


def _duration(value: str | float | None, loc: Loc) -> timedelta | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except (ValueError, OverflowError) as exc:
        raise Problem(loc, str(exc) if isinstance(exc, ValueError) else "is too long") from None


class Checkpoint:
    """A checked checkpoint document; ``base`` is the directory its paths resolve against."""

    __slots__ = ("base", "doc", "observed_at", "raw", "sha256", "source")

    def __init__(self, doc: CheckpointDoc, source: str, base: Path,
                 raw: Mapping[str, Any] | None = None, sha256: str | None = None) -> None:
        #: The document, as the loader read it.
        self.doc = doc
        self.source = source
        self.base = base
        #: The decoded document the structs were read from.
        self.raw: Mapping[str, Any] = {} if raw is None else raw
        #: The sha256 (hex) of the bytes the checkpoint was read from; None when built in
        #: memory.
        self.sha256 = sha256
        observed = self.time(doc.observed_at)
        assert observed is not None  # a required field
        self.observed_at: datetime = observed

    def path(self, value: str) -> Path:
        """A path of the document, resolved against its directory."""
        p = Path(value)
        return p if p.is_absolute() else self.base / p

    def opt_path(self, value: str | None) -> Path | None:
        return None if value is None else self.path(value)

    def paths(self, value: str | list[str]) -> tuple[Path, ...]:
        """One path or a list of them, resolved."""
        return tuple(self.path(v) for v in ([value] if isinstance(value, str) else value))

    @staticmethod
    def time(value: str | None) -> datetime | None:
        """A timestamp of the document (checked when it was read) as UTC."""
        return None if value is None else parse_ts(value)

    @staticmethod
    def duration(value: str | float | None) -> timedelta | None:
        """A duration of the document (checked when it was read)."""
        return None if value is None else parse_duration(value)

    @property
    def inputs(self) -> tuple[Path, ...]:
        return self.paths(self.doc.inputs)

    @staticmethod
    def expect(artifact: ArtifactDoc) -> ExpectDoc:
        """What an artifact expects (nothing beyond existing when it names no ``expect``)."""
        return NO_EXPECT if artifact.expect is None else artifact.expect


def _check(d: CheckpointDoc) -> None:
    """What the structs cannot say: timestamps and durations that parse, one source each
    for a capability, a budget and a cadence, and steps naming declared effects."""
    at = _ts
    for name, c in d.capabilities.items():
        if c.state is None and c.check is None:
            raise Problem(("capabilities", name),
                          "needs a recorded 'state' or a 'check' command")
        at(c.checked_at, ("capabilities", name, "checked_at"))
        _duration(c.max_age, ("capabilities", name, "max_age"))
    for name, b in d.budgets.items():
        if sum(x is not None for x in (b.spent, b.spent_file, b.spent_command)) != 1:
            raise Problem(("budgets", name),
                          "needs exactly one of spent, spent_file or spent_command")
    for i, bl in enumerate(d.blockers):
        at(bl.until, ("blockers", i, "until"))
    for i, g in enumerate(d.date_gates):
        at(g.not_before, ("date_gates", i, "not_before"))
        at(g.not_after, ("date_gates", i, "not_after"))
    cadence = d.cadence
    if cadence is not None:
        if cadence.last_output_at is None and cadence.command is None:
            raise Problem(("cadence",), "needs 'last_output_at' or a 'command' that prints it")
        _duration(cadence.every, ("cadence", "every"))
        at(cadence.last_output_at, ("cadence", "last_output_at"))
    for i, step in enumerate(d.remaining):
        if step.effect is not None and step.effect not in d.external_effects:
            raise Problem(("remaining", i, "effect"),
                          f"names no entry of external_effects: {step.effect!r}")
    at(d.observed_at, ("observed_at",))


def parse_checkpoint(doc: Any, source: str, base: str | PathLike[str] | None = None,
                     sha256: str | None = None) -> Checkpoint:
    """Validate a decoded checkpoint; the first problem raises :class:`SpecError`."""
    base_dir = Path(base) if base is not None else Path(source).parent
    if not isinstance(doc, Mapping):
        raise SpecError(f"a checkpoint must be an object, got {type(doc).__name__}", path=source)
    with problems("checkpoint", source, SpecError):
        d = convert(dict(doc), CheckpointDoc)
        _check(d)
    return Checkpoint(d, source, base_dir, dict(doc), sha256)


def load_checkpoint(path: str | PathLike[str], *, expect_sha256: str | None = None,
                    ) -> Checkpoint:
    """Read a JSON or YAML checkpoint file; paths in it resolve against its directory.

    With ``expect_sha256`` a file whose bytes hash differently is refused.
    """
    from roadcheck.documents.loader import decode, read_document

    source = str(path)
    data, digest = read_document(source, "checkpoint", SpecError, expect_sha256)
    return parse_checkpoint(decode(data, source, "checkpoint", SpecError), source, sha256=digest)
