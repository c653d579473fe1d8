"""The resume checkpoint document: what a task believed when it last looked.

A checkpoint is JSON or YAML. Unknown keys are refused, every problem is
collected, and the first one is reported on one line with the file, the line
and the field. Paths inside the document are relative to its directory.
Timestamps may be written as ISO 8601 text or as YAML timestamps.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from os import PathLike
from pathlib import Path
from typing import Any

from assay._validate import Invalid as _Invalid
from assay._validate import Loc, raise_first
from assay._validate import Reader as _Reader
from assay._validate import flag as _flag
from assay._validate import text as _text
from assay.errors import SpecError

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


def _ts(value: Any, loc: Loc) -> datetime:
    try:
        return parse_ts(value)
    except ValueError as exc:
        raise _Invalid(loc, str(exc)) from None


def _duration(value: Any, loc: Loc) -> timedelta:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise _Invalid(loc, str(exc)) from None


def _number(value: Any, loc: Loc) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise _Invalid(loc, "must be a number >= 0")
    return float(value)


def _count(value: Any, loc: Loc) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Invalid(loc, "must be a whole number >= 0")
    return value


def _timeout(value: Any, loc: Loc) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _Invalid(loc, "must be a number of seconds > 0")
    return float(value)


def _argv(value: Any, loc: Loc) -> Argv:
    if isinstance(value, str):
        raise _Invalid(loc, "must be a list of arguments (a command is never run in a shell)")
    if not isinstance(value, list) or not value:
        raise _Invalid(loc, "must be a non-empty list of arguments")
    return tuple(_text(v, (*loc, i)) for i, v in enumerate(value))


def _digest(value: Any, loc: Loc) -> str:
    text = _text(value, loc)
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", text):
        raise _Invalid(loc, "must be 'sha256:' followed by 64 lowercase hex digits")
    return text


def _choice(options: tuple[str, ...]) -> Callable[[Any, Loc], str]:
    def check(value: Any, loc: Loc) -> str:
        if value not in options:
            raise _Invalid(loc, f"must be one of {', '.join(options)}, got {value!r}")
        return str(value)
    return check


def _named(value: Any, loc: Loc) -> list[tuple[str, Any, Loc]]:
    if not isinstance(value, Mapping):
        raise _Invalid(loc, "must be an object of named entries")
    return [(str(k), v, (*loc, str(k))) for k, v in value.items()]


def _items(value: Any, loc: Loc) -> list[tuple[Any, Loc]]:
    if not isinstance(value, list):
        raise _Invalid(loc, "must be a list")
    return [(v, (*loc, i)) for i, v in enumerate(value)]


class _Parser:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.errors: list[_Invalid] = []

    def path(self, value: Any, loc: Loc) -> Path:
        text = _text(value, loc)
        p = Path(text)
        return p if p.is_absolute() else self.base / p

    def paths(self, value: Any, loc: Loc) -> tuple[Path, ...]:
        if isinstance(value, str):
            return (self.path(value, loc),)
        return tuple(self.path(v, at) for v, at in _items(value, loc))

    def reader(self, doc: Any, loc: Loc, allowed: tuple[str, ...]) -> _Reader:
        return _Reader(doc, loc, allowed, self.errors)

    def task(self, value: Any, loc: Loc) -> TaskRef:
        r = self.reader(value, loc, ("path", "state"))
        return TaskRef(r.get("path", self.path), r.get("state", _text, None))

    def members(self, value: Any, loc: Loc) -> Members:
        r = self.reader(value, loc, ("glob", "count"))
        return Members(r.get("glob", _text) or "", r.get("count", _count) or 0)

    def expect(self, value: Any, loc: Loc) -> Expect:
        r = self.reader(value, loc, ("min_bytes", "format", "members", "newer_than"))
        return Expect(r.get("min_bytes", _count, None), r.get("format", _choice(FORMATS), None),
                      r.get("members", self.members, None), r.get("newer_than", self.paths, ()))

    def artifacts(self, value: Any, loc: Loc) -> tuple[Artifact, ...]:
        out = []
        for name, doc, at in _named(value, loc):
            r = self.reader(doc, at, ("path", "state", "digest", "expect"))
            out.append(Artifact(name, r.get("path", self.path), r.get("state", _text, None),
                                r.get("digest", _digest, None),
                                r.get("expect", self.expect, Expect())))
        return tuple(out)

    def effects(self, value: Any, loc: Loc) -> tuple[Effect, ...]:
        out = []
        for name, doc, at in _named(value, loc):
            r = self.reader(doc, at, ("state", "remote_id", "idempotency_key", "ledger",
                                      "reconcile", "timeout", "confirmed", "attempted"))
            for key in ("confirmed", "attempted"):
                if r.has(key):
                    self.errors.append(_Invalid(
                        (*at, key), "an effect has one 'state' field; attempted is an event, "
                        "confirmed a conclusion, and they never share a field"))
            out.append(Effect(name, r.get("state", _choice(EFFECT_STATES)) or "unknown",
                              r.get("remote_id", _text, None),
                              r.get("idempotency_key", _text, None),
                              r.get("ledger", self.path, None), r.get("reconcile", _argv, None),
                              r.get("timeout", _timeout, 10.0)))
        return tuple(out)

    def capabilities(self, value: Any, loc: Loc) -> tuple[Capability, ...]:
        out = []
        for name, doc, at in _named(value, loc):
            r = self.reader(doc, at, ("state", "checked_at", "max_age", "check", "timeout"))
            if r.ok and not r.has("state") and not r.has("check"):
                self.errors.append(_Invalid(at, "needs a recorded 'state' or a 'check' command"))
            out.append(Capability(name, r.get("state", _choice(("allowed", "denied")), None),
                                  r.get("checked_at", _ts, None),
                                  r.get("max_age", _duration, None),
                                  r.get("check", _argv, None), r.get("timeout", _timeout, 10.0)))
        return tuple(out)

    def budgets(self, value: Any, loc: Loc) -> tuple[Budget, ...]:
        out = []
        for name, doc, at in _named(value, loc):
            r = self.reader(doc, at, ("limit", "spent", "spent_file", "spent_command",
                                      "timeout"))
            given = [k for k in ("spent", "spent_file", "spent_command") if r.has(k)]
            if r.ok and len(given) != 1:
                self.errors.append(_Invalid(
                    at, "needs exactly one of spent, spent_file or spent_command"))
            out.append(Budget(name, r.get("limit", _number) or 0.0,
                              r.get("spent", _number, None), r.get("spent_file", self.path, None),
                              r.get("spent_command", _argv, None),
                              r.get("timeout", _timeout, 10.0)))
        return tuple(out)

    def blockers(self, value: Any, loc: Loc) -> tuple[Blocker, ...]:
        out = []
        for doc, at in _items(value, loc):
            r = self.reader(doc, at, ("name", "active", "until", "file"))
            out.append(Blocker(r.get("name", _text) or "", r.get("active", _flag, True),
                               r.get("until", _ts, None), r.get("file", self.path, None)))
        return tuple(out)

    def date_gates(self, value: Any, loc: Loc) -> tuple[DateGate, ...]:
        out = []
        for doc, at in _items(value, loc):
            r = self.reader(doc, at, ("name", "not_before", "not_after"))
            out.append(DateGate(r.get("name", _text) or "", r.get("not_before", _ts, None),
                                r.get("not_after", _ts, None)))
        return tuple(out)

    def cadence(self, value: Any, loc: Loc) -> Cadence:
        r = self.reader(value, loc, ("every", "last_output_at", "command", "timeout"))
        if r.ok and not r.has("last_output_at") and not r.has("command"):
            self.errors.append(_Invalid(loc, "needs 'last_output_at' or a 'command' that "
                                             "prints it"))
        return Cadence(r.get("every", _duration) or timedelta(days=1),
                       r.get("last_output_at", _ts, None), r.get("command", _argv, None),
                       r.get("timeout", _timeout, 10.0))

    def remaining(self, value: Any, loc: Loc) -> tuple[Step, ...]:
        out = []
        for doc, at in _items(value, loc):
            r = self.reader(doc, at, ("step", "retry_class", "effect", "idempotency_key"))
            out.append(Step(r.get("step", _text) or "",
                            r.get("retry_class", _choice(RETRY_CLASSES)) or "reconcile_first",
                            r.get("effect", _text, None), r.get("idempotency_key", _text, None)))
        return tuple(out)


TOP_KEYS = ("observed_at", "task", "inputs", "inputs_digest", "artifacts", "external_effects",
            "capabilities", "budgets", "blockers", "date_gates", "cadence", "remaining",
            "next_action", "decision", "findings")


def parse_checkpoint(doc: Any, source: str, base: str | PathLike[str] | None = None,
                     ) -> Checkpoint:
    """Validate a decoded checkpoint; the first problem raises :class:`SpecError`."""
    base_dir = Path(base) if base is not None else Path(source).parent
    if not isinstance(doc, Mapping):
        raise SpecError(f"a checkpoint must be an object, got {type(doc).__name__}", path=source)
    p = _Parser(base_dir)
    r = p.reader(doc, (), TOP_KEYS)
    cp = Checkpoint(
        source=source, base=base_dir,
        observed_at=r.get("observed_at", _ts) or datetime(1970, 1, 1, tzinfo=UTC),
        task=r.get("task", p.task, None),
        inputs=r.get("inputs", p.paths, ()),
        inputs_digest=r.get("inputs_digest", _digest, None),
        artifacts=r.get("artifacts", p.artifacts, ()),
        effects=r.get("external_effects", p.effects, ()),
        capabilities=r.get("capabilities", p.capabilities, ()),
        budgets=r.get("budgets", p.budgets, ()),
        blockers=r.get("blockers", p.blockers, ()),
        date_gates=r.get("date_gates", p.date_gates, ()),
        cadence=r.get("cadence", p.cadence, None),
        remaining=r.get("remaining", p.remaining, ()),
        next_action=r.get("next_action", _text, None),
        raw=dict(doc),
    )
    names = {e.name for e in cp.effects}
    for i, step in enumerate(cp.remaining):
        if step.effect is not None and step.effect not in names:
            p.errors.append(_Invalid(("remaining", i, "effect"),
                                     f"names no entry of external_effects: {step.effect!r}"))
    raise_first(p.errors, "checkpoint", source, SpecError)
    return cp


def load_checkpoint(path: str | PathLike[str]) -> Checkpoint:
    """Read a JSON or YAML checkpoint file; paths in it resolve against its directory."""
    from assay._docs import load_document

    source = str(path)
    return parse_checkpoint(load_document(source, error=SpecError), source)
