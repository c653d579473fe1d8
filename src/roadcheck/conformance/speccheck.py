"""``roadcheck spec check``: a spec tested on its own and against the runs it will judge.

On its own (:func:`lint_spec`): every rule can take effect (a derive rule names a
checkpoint some rule requires, a ``confirmed_by`` list is not empty), no selector asks
for fields no event type has together (``{event: message, action_type: Bash}``), and
no two names are close without being equal (``Bash`` and ``bash``, ``approval`` and
``aproval``).

Against trajectories (:func:`check_spec`): each file is read once and judged by the
spec while :class:`~roadcheck.conformance.coverage.Coverage` counts what each rule
met; a rule never reached is a problem, and so is each guarded name that never
occurs (with the closest names that do), and each irreversible action no rule guards.
The spec's ``examples`` (spec tests) are replayed and compared with the verdict and
reasons they state.

A problem of level ``error`` fails the check (exit 1); ``warning`` informs.
"""

from __future__ import annotations

import difflib
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from roadcheck.conformance.coverage import Coverage
from roadcheck.conformance.engine import CompiledSpec
from roadcheck.conformance.spec import Spec, guarded_actions
from roadcheck.documents.selector import SelectorDoc
from roadcheck.errors import EXIT_BLOCK, EXIT_PASS, SpecError, TraceError

__all__ = ["ExampleOutcome", "SpecCheck", "SpecProblem", "check_spec", "closest", "lint_spec"]

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class SpecProblem:
    """One thing wrong, or worth a look, in a spec."""

    level: Literal["error", "warning"]
    #: A short code: ``unreachable``, ``never-matches``, ``unguarded-irreversible``...
    code: str
    #: Where in the spec (key path), and its line in the file when known.
    loc: Loc
    line: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"level": self.level, "code": self.code,
                               "field": ".".join(str(p) for p in self.loc)}
        if self.line is not None:
            out["line"] = self.line
        out["message"] = self.message
        return out


@dataclass(frozen=True)
class ExampleOutcome:
    """A spec test: what the example states, what replay gave."""

    index: int
    trajectory: str
    line: int | None
    verdict: str
    reasons: tuple[str, ...] | None
    got_verdict: str
    got_reasons: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.verdict == self.got_verdict and (
            self.reasons is None or set(self.reasons) == set(self.got_reasons))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "trajectory": self.trajectory,
                               "ok": self.ok, "verdict": self.verdict,
                               "got_verdict": self.got_verdict}
        if self.reasons is not None:
            out["reasons"] = sorted(set(self.reasons))
        out["got_reasons"] = list(self.got_reasons)
        return out


@dataclass
class SpecCheck:
    """What ``roadcheck spec check`` found."""

    spec: Spec
    problems: list[SpecProblem] = field(default_factory=list)
    #: None when no trajectory was given.
    coverage: Coverage | None = None
    examples: list[ExampleOutcome] = field(default_factory=list)
    #: The trajectory files read, in order.
    files: tuple[str, ...] = ()

    @property
    def exit(self) -> int:
        """1 when a problem is an error or an example failed, else 0."""
        bad = any(p.level == "error" for p in self.problems) or any(
            not e.ok for e in self.examples)
        return EXIT_BLOCK if bad else EXIT_PASS


# ------------------------------------------------------------------ the spec alone

#: The fields only one event type carries (the native format declares them on it).
_FIELD_KIND = {
    "action_type": "action", "irreversible": "action", "command": "action",
    "checkpoint_id": "checkpoint", "confirmed_by": "checkpoint",
    "from_agent": "handoff", "to_agent": "handoff",
    "role": "message", "task_success": "final",
}


def _kinds(sel: dict[str, Any]) -> set[str] | None:
    """The event types a selector's ``event`` allows, or None when it pins none."""
    kind = sel.get("event")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, dict) and "in" in kind:
        return set(kind["in"])
    return None


def never_matches(sel: SelectorDoc) -> str | None:
    """Why a selector can match no event (fields of different event types), or None."""
    plain = msgspec.to_builtins(sel)
    allowed = _kinds(plain)
    for name in plain:
        need = _FIELD_KIND.get(name)
        if need is None:
            continue
        if allowed is not None and need not in allowed:
            shown = sorted(allowed)
            return (f"'{name}' is a field of {need} events, and the selector selects "
                    f"{shown[0] if len(shown) == 1 else shown} events only")
        if allowed is None:
            allowed = {need}
    return None


def _selectors(spec: Spec) -> Iterable[tuple[Loc, SelectorDoc]]:
    for i, rule in enumerate(spec.mandatory_checkpoints):
        listed = isinstance(rule.must_precede, list)
        for j, g in enumerate(guarded_actions(rule)):
            if not isinstance(g, str):
                yield (("mandatory_checkpoints", i, "must_precede", j) if listed
                       else ("mandatory_checkpoints", i, "must_precede")), g
        for k, sel in enumerate(rule.voided_by):
            yield ("mandatory_checkpoints", i, "voided_by", k), sel
    for i, d in enumerate(spec.derive):
        yield ("derive", i, "when"), d.when


def _close(a: str, b: str) -> bool:
    return a != b and (a.casefold() == b.casefold()
                       or difflib.SequenceMatcher(None, a, b).ratio() >= 0.85)


def _names(spec: Spec) -> dict[str, dict[str, Loc]]:
    """The names a spec declares, per kind, each with where it first appears."""
    out: dict[str, dict[str, Loc]] = {"checkpoint id": {}, "action type": {}, "agent": {}}
    for i, rule in enumerate(spec.mandatory_checkpoints):
        out["checkpoint id"].setdefault(rule.checkpoint_id, ("mandatory_checkpoints", i))
        for g in guarded_actions(rule):
            if isinstance(g, str):
                out["action type"].setdefault(g, ("mandatory_checkpoints", i, "must_precede"))
    for i, d in enumerate(spec.derive):
        out["checkpoint id"].setdefault(d.checkpoint_id, ("derive", i, "checkpoint_id"))
    for loc, sel in _selectors(spec):
        for name in _plain(sel.action_type):
            out["action type"].setdefault(name, loc)
    for i, c in enumerate(spec.handoff_contracts):
        out["agent"].setdefault(c.from_agent, ("handoff_contracts", i, "from_agent"))
        out["agent"].setdefault(c.to_agent, ("handoff_contracts", i, "to_agent"))
    return out


def _plain(cond: Any) -> list[str]:
    """The names a text condition lists: its value, or its ``in`` list."""
    if isinstance(cond, str):
        return [cond]
    listed = getattr(cond, "in_", None)
    return list(listed) if listed else []


def lint_spec(spec: Spec) -> list[SpecProblem]:
    """What is wrong with a spec read on its own, in the order of the document."""
    at = _Liner(spec)
    found: list[SpecProblem] = []
    required = {r.checkpoint_id for r in spec.mandatory_checkpoints}
    for i, rule in enumerate(spec.mandatory_checkpoints):
        if rule.confirmed_by == []:
            found.append(at.problem("error", "unreachable",
                                    ("mandatory_checkpoints", i, "confirmed_by"),
                                    f"checkpoint '{rule.checkpoint_id}': confirmed_by lists no "
                                    "one, so no checkpoint can ever count"))
    for loc, sel in _selectors(spec):
        why = never_matches(sel)
        if why is not None:
            found.append(at.problem("error", "never-matches", loc,
                                    f"this selector can match no event: {why}"))
    for i, d in enumerate(spec.derive):
        if d.checkpoint_id not in required:
            near = closest(d.checkpoint_id, Counter(dict.fromkeys(required, 0)))
            hint = f" (did you mean {near[0][0]}?)" if near else ""
            found.append(at.problem("error", "unreachable", ("derive", i, "checkpoint_id"),
                                    f"derives checkpoint '{d.checkpoint_id}', which no "
                                    f"mandatory checkpoint requires; it changes nothing{hint}"))
    for kind, names in _names(spec).items():
        listed = sorted(names)
        for x, a in enumerate(listed):
            for b in listed[x + 1:]:
                if _close(a, b):
                    found.append(at.problem("warning", "close-names", names[b],
                                            f"{kind} '{b}' is close to '{a}' "
                                            f"({'.'.join(map(str, names[a]))}); one may be "
                                            "a misspelling of the other"))
    return sorted(found, key=lambda p: (p.line or 0, _loc_key(p.loc)))


def _loc_key(loc: Loc) -> tuple[tuple[int, str], ...]:
    return tuple((0, f"{p:09d}") if isinstance(p, int) else (1, p) for p in loc)


class _Liner:
    """Lines of a spec's key paths, looked up in its file once each."""

    def __init__(self, spec: Spec) -> None:
        self.source = spec.source
        self.lines: dict[Loc, int | None] = {}

    def line(self, loc: Loc) -> int | None:
        if self.source is None or not os.path.isfile(self.source):
            return None
        if loc not in self.lines:
            from roadcheck._docs import line_of

            self.lines[loc] = line_of(self.source, loc)
        return self.lines[loc]

    def problem(self, level: Literal["error", "warning"], code: str, loc: Loc,
                message: str) -> SpecProblem:
        return SpecProblem(level, code, loc, self.line(loc), message)


def closest(name: str, counts: Counter[str], n: int = 3) -> list[tuple[str, int]]:
    """The names of ``counts`` closest to ``name`` (same letters in another case first),
    with their counts."""
    folded = [k for k in sorted(counts) if k.casefold() == name.casefold() and k != name]
    near = difflib.get_close_matches(name, sorted(counts), n=n, cutoff=0.6)
    picked = list(dict.fromkeys([*folded, *(k for k in near if k != name)]))[:n]
    return [(k, counts[k]) for k in picked]


def _suggest(name: str, counts: Counter[str]) -> str:
    near = closest(name, counts)
    if not near:
        return ""
    shown = ", ".join(f"{k}? {_times(c)}" for k, c in near)
    return f"; did you mean {shown}"


def _count(n: int) -> str:
    return "once" if n == 1 else f"{n:,} times"


def _times(n: int) -> str:
    return f"{n} occurrence" if n == 1 else f"{n:,} occurrences"


# ------------------------------------------------------------------ with trajectories

def _coverage_problems(cov: Coverage, at: _Liner) -> list[SpecProblem]:
    found: list[SpecProblem] = []
    names = cov.names
    runs = f"{cov.trajectories} {'trajectory' if cov.trajectories == 1 else 'trajectories'}"
    for count in cov.rules:
        p = count.probe
        missing = [(what, n) for what, n in p.names if names.get(what, Counter())[n] == 0]
        hints = "".join(f"; {what} '{n}' never occurs{_suggest(n, names[what])}"
                        for what, n in missing)
        if not count.live and not p.part:
            verb = "matched" if p.live == "matched" else "reached"
            found.append(at.problem("error", "unreachable", p.loc,
                                    f"{p.label}: never {verb} in {runs}{hints}"))
        elif missing:
            found.extend(at.problem("warning", "name-never-occurs", p.loc,
                                    f"{p.label}: {what} '{n}' never occurs in {runs}"
                                    f"{_suggest(n, names[what])}") for what, n in missing)
    for name in sorted(cov.unguarded):
        path, seq = cov.first_unguarded[name]
        found.append(at.problem("error", "unguarded-irreversible", (),
                                f"irreversible action '{name}' ran {_count(cov.unguarded[name])} "
                                f"and no rule guards it (first: {path} seq {seq})"))
    return found


def _read_error(results: Iterable[Any]) -> None:
    for r in results:
        if r.verdict == "ERROR":
            raise TraceError(r.reasons[0].message, path=r.path or r.id)


def check_spec(spec: Spec, paths: Sequence[str] = (), *,
               input_format: str | None = None) -> SpecCheck:
    """Check ``spec`` alone, then against the trajectories of ``paths`` (files, already
    expanded), then run its examples. A trajectory that cannot be read raises
    :class:`TraceError` (exit 2); a failing example is a result, never an exception."""
    from roadcheck.conformance.panel import Panel, judge_paths

    at = _Liner(spec)
    out = SpecCheck(spec, lint_spec(spec), files=tuple(paths))
    if paths:
        cov = Coverage(CompiledSpec(spec))
        panel = Panel(spec, watchers=[cov])
        _read_error(v[0] for v in judge_paths(panel, paths, input_format=input_format))
        out.coverage = cov
        out.problems.extend(_coverage_problems(cov, at))
    out.examples = _examples(spec, at)
    return out


def _examples(spec: Spec, at: _Liner) -> list[ExampleOutcome]:
    from roadcheck.conformance.batch import iter_replay

    if not spec.doc.examples:
        return []
    base = os.path.dirname(spec.source) if spec.source else ""
    compiled = CompiledSpec(spec)
    out = []
    for i, ex in enumerate(spec.doc.examples):
        loc: Loc = ("examples", i, "trajectory")
        path = os.path.join(base, ex.trajectory)
        if not os.path.isfile(path):
            raise SpecError(f"unusable spec: {'.'.join(map(str, loc))}: no file {path!r} "
                            "(an example's trajectory is relative to the spec file)",
                            path=spec.source, line=at.line(loc))
        results = list(iter_replay(compiled, [path], input_format=None))
        verdict = ("BLOCK" if any(r.verdict == "BLOCK" for r in results) else "ERROR"
                   if any(r.verdict == "ERROR" for r in results) else "PASS")
        codes = tuple(sorted({str(f.code) for r in results for f in r.reasons}))
        out.append(ExampleOutcome(i, ex.trajectory, at.line(("examples", i)), ex.verdict,
                                  None if ex.reasons is None else tuple(ex.reasons),
                                  verdict, codes))
    return out
