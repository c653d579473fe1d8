"""What replay returns: a :class:`ReplayResult` per trajectory, folded into a :class:`ReplayRun`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from roadcheck.errors import EXIT_BLOCK, EXIT_ERROR, EXIT_INTERRUPTED, worst_exit
from roadcheck.findings import Finding

__all__ = ["Finding", "Reach", "ReplayInterrupted", "ReplayResult", "ReplayRun",
           "TrajectoryStats"]

Verdict = Literal["PASS", "BLOCK", "ERROR"]
VERDICT_EXIT: dict[str, int] = {"PASS": 0, "BLOCK": 1, "ERROR": 2}


_MISSING = object()


def scalar_text(value: Any) -> str:
    """A field value as the report prints it: JSON, except that a string is bare."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    import orjson

    return str(orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode())


class TrajectoryStats(msgspec.Struct, frozen=True, gc=False):
    """The shape of a trajectory, printed above its verdict."""

    events: int
    agents: tuple[str, ...]
    handoffs: int
    checkpoints: int
    derived_checkpoints: int
    irreversible: int
    actions: int


class ReplayResult(msgspec.Struct, frozen=True):
    """The verdict on one trajectory, with every reason that fired.

    A frozen msgspec struct (built in C: replay makes one per trajectory), as
    :class:`Finding` is.
    """

    id: str
    path: str | None
    verdict: Verdict
    #: The first reason is the headline: ``trajectory-conforms`` on PASS, else what blocked.
    reasons: tuple[Finding, ...]
    warnings: tuple[Finding, ...] = ()
    notes: tuple[Finding, ...] = ()
    task_success: bool | None = None
    stats: TrajectoryStats | None = None
    source: str = "native"
    #: Fields of the final event (for ``--by``) and reader facts such as a reward.
    final: Mapping[str, Any] = msgspec.field(default_factory=dict)
    meta: Mapping[str, Any] = msgspec.field(default_factory=dict)
    #: (seq, checkpoint id) of each checkpoint a ``derive`` rule took from an event, in
    #: order (the HTML timeline marks them; the JSON result counts them in its stats).
    derived: tuple[tuple[int, str], ...] = ()
    #: Where the spec declares each rule this trajectory never reached (a guarded action
    #: that never ran, a contracted handoff never made: ``mandatory_checkpoints.0``), and
    #: the action type of each irreversible action no rule guarded, in order.
    reach: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    @property
    def unreached(self) -> tuple[str, ...]:
        """The rules this trajectory never reached (see :attr:`reach`)."""
        return self.reach[0]

    @property
    def unguarded(self) -> tuple[str, ...]:
        """The irreversible actions no rule guarded (see :attr:`reach`)."""
        return self.reach[1]

    @property
    def exit(self) -> int:
        """The exit code of this verdict: 0 PASS, 1 BLOCK, 2 ERROR."""
        return VERDICT_EXIT[self.verdict]

    @property
    def headline(self) -> str:
        """The reason code that names the verdict."""
        return self.reasons[0].code

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape of one result (docs/formats.md)."""
        out: dict[str, Any] = {
            "id": self.id,
            "path": self.path,
            "verdict": self.verdict,
            "exit": self.exit,
            "reasons": [r.to_dict() for r in self.reasons],
            "warnings": [w.to_dict() for w in self.warnings],
            "notes": [n.to_dict() for n in self.notes],
            "task_success": self.task_success,
            "source": self.source,
        }
        if self.meta:
            out["meta"] = dict(self.meta)
        return out


def _key_order(key: str) -> tuple[str, int]:
    section, _, index = key.rpartition(".")
    return section, int(index) if index.isdigit() else 0


class Reach:
    """What a batch reached, folded result by result: the rules no judged trajectory
    reached, and the irreversible actions no rule guarded (with how often each ran).
    A trajectory that could not be judged (ERROR) reaches nothing and hides nothing."""

    __slots__ = ("unguarded", "unreached")

    def __init__(self) -> None:
        #: None until a trajectory is judged: then the rules none reached so far.
        self.unreached: set[str] | None = None
        self.unguarded: Counter[str] = Counter()

    def add(self, unreached: tuple[str, ...] | None, unguarded: tuple[str, ...]) -> None:
        """One result: the rules it did not reach (None: it was not judged)."""
        if unreached is not None:
            if self.unreached is None:
                self.unreached = set(unreached)
            elif self.unreached:
                self.unreached.intersection_update(unreached)
        if unguarded:
            self.unguarded.update(unguarded)

    def take(self, reach: tuple[tuple[str, ...], tuple[str, ...]] | None) -> None:
        """One result's :attr:`ReplayResult.reach` (None: it was not judged)."""
        if reach is not None:
            self.add(*reach)

    def merge(self, other: Reach) -> None:
        """Another batch's fold, as if its results had come here one by one."""
        if other.unreached is not None:
            self.add(tuple(other.unreached), ())
        self.unguarded.update(other.unguarded)

    @property
    def failed(self) -> bool:
        """A rule never reached, or an irreversible action unguarded (``--strict`` fails)."""
        return bool(self.unreached) or bool(self.unguarded)

    def summary(self) -> dict[str, Any]:
        """The keys a report's summary adds, only when there is something to name."""
        out: dict[str, Any] = {}
        if self.unreached:
            out["unreached"] = sorted(self.unreached, key=_key_order)
        if self.unguarded:
            out["unguarded_irreversible"] = dict(sorted(self.unguarded.items()))
        return out


@dataclass(frozen=True)
class ReplayRun:
    """The results of one replay over many trajectories, and their folded exit code."""

    spec_source: str | None
    results: Sequence[ReplayResult]
    #: The trajectory files, in the order given, with the input format each was read as.
    files: Sequence[tuple[str, str]] = ()
    #: Ctrl-C stopped the run: the results are partial and the exit is 130, never a verdict.
    interrupted: bool = False
    #: The sha256 (hex) of the spec's bytes; None for a spec built in memory.
    spec_sha256: str | None = None
    #: The files that hold no run (a Claude Code summary file), noted and not judged:
    #: (path, what the file is). They are among :attr:`files`, with no result.
    notes: Sequence[tuple[str, str]] = ()
    #: ``--strict``: a rule no trajectory reached, or an irreversible action no rule
    #: guarded, fails the run (exit 1 over a PASS).
    strict: bool = False

    def reach(self) -> Reach:
        """What the run's judged trajectories reached (:class:`Reach`)."""
        reach = Reach()
        for r in self.results:
            reach.add(None if r.verdict == "ERROR" else r.unreached, r.unguarded)
        return reach

    def __iter__(self) -> Iterator[ReplayResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    @property
    def exit(self) -> int:
        """The worst verdict's exit code: BLOCK (1) over ERROR (2) over PASS (0).

        A run that judged nothing exits 2: no evidence is never a pass. An
        interrupted run exits 130 whatever it judged before the interrupt.
        """
        if self.interrupted:
            return EXIT_INTERRUPTED
        if not self.results:
            return EXIT_ERROR
        code = worst_exit(r.exit for r in self.results)
        if self.strict and self.reach().failed:
            return worst_exit((code, EXIT_BLOCK))
        return code

    def carries(self, field: str) -> bool:
        """True when some trajectory's final event (or its reader facts) has ``field``."""
        return any(field in r.final or field in r.meta for r in self.results)

    def by(self, field: str) -> dict[str, dict[str, int]]:
        """Verdict counts per value of ``field`` in each final event (``--by``), sorted.

        A reader fact such as a benchmark's reward counts when the final event
        lacks the field; a trajectory with neither is counted under ``(absent)``.
        """
        groups: dict[str, dict[str, int]] = {}
        for r in self.results:
            value = r.final.get(field, _MISSING)
            if value is _MISSING:
                value = r.meta.get(field, _MISSING)
            key = "(absent)" if value is _MISSING else scalar_text(value)
            g = groups.setdefault(key, {"pass": 0, "block": 0, "error": 0})
            g[r.verdict.lower()] += 1
        return dict(sorted(groups.items()))

    def to_dict(self, *, summary_only: bool = False,
                by_field: str | None = None) -> dict[str, Any]:
        """The public JSON shape, the document ``--format json`` prints (docs/formats.md).

        ``summary_only`` leaves ``results`` empty; ``by_field`` adds ``by``.
        """
        doc: dict[str, Any] = {
            "spec": self.spec_source,
            "spec_sha256": self.spec_sha256,
            "files": self._files_json(),
            "results": [] if summary_only else [r.to_dict() for r in self.results],
            "summary": self.counts(),
        }
        if by_field is not None:
            doc["by"] = {"field": by_field, "groups": self.by(by_field)}
        return doc

    def _files_json(self) -> list[dict[str, str]]:
        noted = dict(self.notes)
        return [{"path": p, "format": f} if p not in noted
                else {"path": p, "format": f, "note": noted[p]} for p, f in self.files]

    def counts(self) -> dict[str, Any]:
        """Counts of each verdict, warnings, and the overall exit (the JSON ``summary``)."""
        c = {"pass": 0, "block": 0, "error": 0, "warn": 0}
        for r in self.results:
            c[r.verdict.lower()] += 1
            if r.verdict == "PASS" and r.warnings:
                c["warn"] += 1
        c["exit"] = self.exit
        c.update(self.reach().summary())
        return c


class ReplayInterrupted(KeyboardInterrupt):
    """Ctrl-C during a replay of many files, carrying what was judged before it.

    A :class:`KeyboardInterrupt`, so code that does not know it still stops;
    ``run`` holds the results judged so far (a file cut off mid-way keeps the
    trajectories it had finished), ``done`` the files judged to the end and
    ``total`` the files given.
    """

    def __init__(self, run: ReplayRun, done: int, total: int) -> None:
        super().__init__(f"interrupted after {done} of {total} files")
        self.run = run
        self.done = done
        self.total = total
