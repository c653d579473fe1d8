"""The resume checkpoint document: what a task believed when it last looked.

A checkpoint is JSON or YAML, declared by the structs of
:mod:`roadcheck.documents.checkpoint` and read by the one document loader: unknown
keys are refused at every depth, a null never stands for a default, and the
first problem is reported on one line with the file, the line and the field.
``remaining`` is required, so a checkpoint cut short before its steps is
unusable. Paths inside the document are relative to its directory.
Timestamps are ISO 8601 text (YAML timestamps are read as text).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from os import PathLike
from pathlib import Path
from typing import Any

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

Argv = tuple[str, ...]


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


@dataclass(frozen=True, slots=True)
class TaskRef:
    """The durable task file and the state the checkpoint last saw it in."""

    path: Path
    state: str | None


@dataclass(frozen=True, slots=True)
class Members:
    """A member-count invariant: ``glob`` under the artifact directory matches ``count``."""

    glob: str
    count: int


@dataclass(frozen=True, slots=True)
class Expect:
    """What an artifact must satisfy beyond existing."""

    min_bytes: int | None = None
    format: str | None = None
    members: Members | None = None
    newer_than: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class Artifact:
    """An expected output, with its recorded digest and invariants."""

    name: str
    path: Path
    state: str | None
    digest: str | None
    expect: Expect


@dataclass(frozen=True, slots=True)
class Effect:
    """A side effect outside the machine, and how to ask its owner about it."""

    name: str
    state: str
    remote_id: str | None
    idempotency_key: str | None
    ledger: Path | None
    reconcile: Argv | None
    timeout: float


@dataclass(frozen=True, slots=True)
class Capability:
    """A permission the task relies on: a check command or a recorded state with a max age."""

    name: str
    state: str | None
    checked_at: datetime | None
    max_age: timedelta | None
    check: Argv | None
    timeout: float


@dataclass(frozen=True, slots=True)
class Budget:
    """A spend or rate budget: ``limit`` against ``spent`` (a number, a file or a command)."""

    name: str
    limit: float
    spent: float | None
    spent_file: Path | None
    spent_command: Argv | None
    timeout: float


@dataclass(frozen=True, slots=True)
class Blocker:
    """Something that stops the task: active while ``active`` and before ``until``.

    With ``file`` the blocker is active while that file exists.
    """

    name: str
    active: bool
    until: datetime | None
    file: Path | None


@dataclass(frozen=True, slots=True)
class DateGate:
    """A window outside which the task must not act."""

    name: str
    not_before: datetime | None
    not_after: datetime | None


@dataclass(frozen=True, slots=True)
class Cadence:
    """A promised delivery rhythm: the last output must be younger than ``every``."""

    every: timedelta
    last_output_at: datetime | None
    command: Argv | None
    timeout: float


@dataclass(frozen=True, slots=True)
class Step:
    """An unfinished step, its recorded retry class and the effect it creates."""

    step: str
    retry_class: str
    effect: str | None
    idempotency_key: str | None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A validated checkpoint document; ``base`` is the directory paths resolve against."""

    source: str
    base: Path
    observed_at: datetime
    task: TaskRef | None
    inputs: tuple[Path, ...]
    inputs_digest: str | None
    artifacts: tuple[Artifact, ...]
    effects: tuple[Effect, ...]
    capabilities: tuple[Capability, ...]
    budgets: tuple[Budget, ...]
    blockers: tuple[Blocker, ...]
    date_gates: tuple[DateGate, ...]
    cadence: Cadence | None
    remaining: tuple[Step, ...]
    next_action: str | None
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)
    #: The sha256 (hex) of the bytes the checkpoint was read from; None when built in memory.
    sha256: str | None = None


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


def _argv(value: list[str] | None) -> Argv | None:
    return None if value is None else tuple(value)


class _Builder:
    """Builds the checkpoint the checks read from its converted document."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def path(self, value: str) -> Path:
        p = Path(value)
        return p if p.is_absolute() else self.base / p

    def opt_path(self, value: str | None) -> Path | None:
        return None if value is None else self.path(value)

    def paths(self, value: str | list[str]) -> tuple[Path, ...]:
        return tuple(self.path(v) for v in ([value] if isinstance(value, str) else value))

    def expect(self, d: Any) -> Expect:
        if d is None:
            return Expect()
        members = None if d.members is None else Members(d.members.glob, d.members.count)
        return Expect(d.min_bytes, d.format, members, self.paths(d.newer_than))

    def build(self, d: Any, source: str, raw: Mapping[str, Any],
              sha256: str | None) -> Checkpoint:
        at = _ts
        artifacts = tuple(
            Artifact(name, self.path(a.path), a.state, a.digest, self.expect(a.expect))
            for name, a in d.artifacts.items())
        effects = tuple(
            Effect(name, e.state, e.remote_id, e.idempotency_key, self.opt_path(e.ledger),
                   _argv(e.reconcile), e.timeout)
            for name, e in d.external_effects.items())
        capabilities = []
        for name, c in d.capabilities.items():
            if c.state is None and c.check is None:
                raise Problem(("capabilities", name),
                              "needs a recorded 'state' or a 'check' command")
            capabilities.append(Capability(
                name, c.state, at(c.checked_at, ("capabilities", name, "checked_at")),
                _duration(c.max_age, ("capabilities", name, "max_age")), _argv(c.check),
                c.timeout))
        budgets = []
        for name, b in d.budgets.items():
            if sum(x is not None for x in (b.spent, b.spent_file, b.spent_command)) != 1:
                raise Problem(("budgets", name),
                              "needs exactly one of spent, spent_file or spent_command")
            budgets.append(Budget(name, b.limit, b.spent, self.opt_path(b.spent_file),
                                  _argv(b.spent_command), b.timeout))
        blockers = tuple(
            Blocker(b.name, b.active, at(b.until, ("blockers", i, "until")),
                    self.opt_path(b.file))
            for i, b in enumerate(d.blockers))
        gates = tuple(
            DateGate(g.name, at(g.not_before, ("date_gates", i, "not_before")),
                     at(g.not_after, ("date_gates", i, "not_after")))
            for i, g in enumerate(d.date_gates))
        cadence = None
        if d.cadence is not None:
            c = d.cadence
            if c.last_output_at is None and c.command is None:
                raise Problem(("cadence",), "needs 'last_output_at' or a 'command' that "
                                            "prints it")
            every = _duration(c.every, ("cadence", "every"))
            assert every is not None  # a required field
            cadence = Cadence(every, at(c.last_output_at, ("cadence", "last_output_at")),
                              _argv(c.command), c.timeout)
        names = {e.name for e in effects}
        for i, step in enumerate(d.remaining):
            if step.effect is not None and step.effect not in names:
                raise Problem(("remaining", i, "effect"),
                              f"names no entry of external_effects: {step.effect!r}")
        observed = at(d.observed_at, ("observed_at",))
        assert observed is not None  # a required field
        return Checkpoint(
            source=source, base=self.base, observed_at=observed,
            task=None if d.task is None else TaskRef(self.path(d.task.path), d.task.state),
            inputs=self.paths(d.inputs), inputs_digest=d.inputs_digest, artifacts=artifacts,
            effects=effects, capabilities=tuple(capabilities), budgets=tuple(budgets),
            blockers=blockers, date_gates=gates, cadence=cadence,
            remaining=tuple(Step(s.step, s.retry_class, s.effect, s.idempotency_key)
                            for s in d.remaining),
            next_action=d.next_action, raw=dict(raw), sha256=sha256)


def parse_checkpoint(doc: Any, source: str, base: str | PathLike[str] | None = None,
                     sha256: str | None = None) -> Checkpoint:
    """Validate a decoded checkpoint; the first problem raises :class:`SpecError`."""
    from roadcheck.documents.checkpoint import CheckpointDoc

    base_dir = Path(base) if base is not None else Path(source).parent
    if not isinstance(doc, Mapping):
        raise SpecError(f"a checkpoint must be an object, got {type(doc).__name__}", path=source)
    with problems("checkpoint", source, SpecError):
        return _Builder(base_dir).build(convert(dict(doc), CheckpointDoc), source, doc, sha256)


def load_checkpoint(path: str | PathLike[str], *, expect_sha256: str | None = None,
                    ) -> Checkpoint:
    """Read a JSON or YAML checkpoint file; paths in it resolve against its directory.

    With ``expect_sha256`` a file whose bytes hash differently is refused.
    """
    from roadcheck.documents.loader import decode, read_document

    source = str(path)
    data, digest = read_document(source, "checkpoint", SpecError, expect_sha256)
    return parse_checkpoint(decode(data, source, "checkpoint", SpecError), source, sha256=digest)
