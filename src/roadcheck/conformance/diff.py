"""``roadcheck diff``: what changes when a spec is replaced, over the same runs.

Each trajectory is read once and judged by both specs
(:class:`~roadcheck.conformance.panel.Panel`), so a diff costs one reading and two
judgements a file. A change is grouped as newly blocked (PASS became BLOCK), newly
allowed (BLOCK became PASS: a widening, which fails the diff unless it is allowed), or
changed reasons (the same verdict for other reasons). Only the changes are kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from roadcheck.conformance.result import ReplayResult
from roadcheck.conformance.spec import Spec
from roadcheck.errors import EXIT_BLOCK, EXIT_PASS, TraceError

__all__ = ["Change", "SpecDiff", "diff_specs"]

Group = Literal["blocked", "allowed", "reasons"]


@dataclass(frozen=True)
class Change:
    """One trajectory whose verdict or reasons differ between the two specs."""

    id: str
    path: str | None
    group: Group
    old_verdict: str
    new_verdict: str
    #: (code, message) of the reasons only the old verdict gives, and only the new one.
    gone: tuple[tuple[str, str], ...]
    added: tuple[tuple[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "group": self.group,
                "old_verdict": self.old_verdict, "new_verdict": self.new_verdict,
                "gone": [{"code": c, "message": m} for c, m in self.gone],
                "added": [{"code": c, "message": m} for c, m in self.added]}


@dataclass
class SpecDiff:
    """Every change between two specs' verdicts over the same trajectories."""

    old: Spec
    new: Spec
    allow_widening: bool = False
    trajectories: int = 0
    changes: list[Change] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = {"blocked": 0, "allowed": 0, "reasons": 0}
        for c in self.changes:
            out[c.group] += 1
        out["same"] = self.trajectories - len(self.changes)
        return out

    @property
    def widens(self) -> bool:
        """True when some trajectory the old spec blocked passes under the new one."""
        return any(c.group == "allowed" for c in self.changes)

    @property
    def exit(self) -> int:
        """1 on a widening (unless allowed), else 0."""
        return EXIT_BLOCK if self.widens and not self.allow_widening else EXIT_PASS

    def to_dict(self) -> dict[str, Any]:
        return {"old_spec": self.old.source, "old_spec_sha256": self.old.sha256,
                "new_spec": self.new.source, "new_spec_sha256": self.new.sha256,
                "trajectories": self.trajectories, "counts": self.counts(),
                "widens": self.widens, "allow_widening": self.allow_widening,
                "exit": self.exit, "changes": [c.to_dict() for c in self.changes]}


def _reasons(r: ReplayResult) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in r.reasons]


def compare(old: ReplayResult, new: ReplayResult) -> Change | None:
    """The change between two verdicts on one trajectory, or None when they agree."""
    a, b = _reasons(old), _reasons(new)
    if old.verdict == new.verdict and a == b:
        return None
    group: Group = "reasons"
    if old.verdict != new.verdict:
        group = "allowed" if new.verdict == "PASS" else "blocked"
    gone = tuple(x for x in a if x not in b)
    added = tuple(x for x in b if x not in a)
    return Change(old.id, old.path, group, old.verdict, new.verdict, gone, added)


def diff_specs(old: Spec, new: Spec, paths: Sequence[str], *, input_format: str | None = None,
               allow_widening: bool = False) -> SpecDiff:
    """Judge each trajectory of ``paths`` with both specs, reading it once; a trajectory
    that cannot be read raises :class:`TraceError` (exit 2)."""
    from roadcheck.conformance.panel import Panel, judge_paths

    out = SpecDiff(old, new, allow_widening)
    for before, after in judge_paths(Panel(old, [new]), paths, input_format=input_format):
        if before.verdict == "ERROR" and after.verdict == "ERROR" and before is after:
            raise TraceError(before.reasons[0].message, path=before.path or before.id)
        out.trajectories += 1
        change = compare(before, after)
        if change is not None:
            out.changes.append(change)
    return out
