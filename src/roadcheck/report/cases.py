"""One shape for what the CI formats show: a :class:`Case` per judged thing, its :class:`Issue`s.

Replay gives one case per trajectory, accept one per result, revalidate one per
checkpoint. The JUnit, SARIF and GitHub writers take cases one at a time
(``start()``, ``add(case)``, ``finish()``), so a caller that judges as it goes
can write as it goes. Building a case decides nothing: the verdict, the codes
and the messages are the result's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from roadcheck.acceptance.result import AcceptRun
    from roadcheck.conformance.result import ReplayResult, ReplayRun
    from roadcheck.findings import Finding
    from roadcheck.ingest.locate import Located
    from roadcheck.revalidation.result import Revalidation

__all__ = ["Case", "CaseWriter", "Issue", "Totals", "accept_cases", "render_cases",
           "replay_cases", "revalidate_cases"]

Level = Literal["error", "warning", "note"]
Outcome = Literal["pass", "fail", "error"]


@dataclass(frozen=True, slots=True)
class Issue:
    """One reason shown against a case: its code, message, and where it points."""

    code: str
    message: str
    level: Level = "error"
    #: The seq of the event the reason names, where there is one.
    seq: int | None = None
    #: The line of the input file the reason points at, where it is known.
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Case:
    """One judged thing: a trajectory, a claimed result, or a checkpoint."""

    #: The command that judged it (``replay``, ``accept``, ``revalidate``).
    command: str
    name: str
    #: The file it was read from; None for standard input or a document built in memory.
    file: str | None
    outcome: Outcome
    #: The verdict word as the text report prints it (``BLOCK``, ``REJECTED``, ...).
    verdict: str
    issues: tuple[Issue, ...] = ()

    @property
    def failed(self) -> bool:
        """True unless the case passed."""
        return self.outcome != "pass"


@dataclass(frozen=True, slots=True)
class Totals:
    """What a writer's footer needs: how many cases of each outcome, and the exit code."""

    passed: int
    failed: int
    errors: int
    exit: int

    @classmethod
    def of(cls, cases: Iterable[Case], exit_code: int) -> Totals:
        """Count the outcomes of ``cases``."""
        c = {"pass": 0, "fail": 0, "error": 0}
        for case in cases:
            c[case.outcome] += 1
        return cls(c["pass"], c["fail"], c["error"], exit_code)

    @property
    def tests(self) -> int:
        """All cases."""
        return self.passed + self.failed + self.errors


class CaseWriter(Protocol):
    """A renderer fed one case at a time; each call returns the text to write next."""

    def start(self) -> str:
        """The header."""
        ...

    def add(self, case: Case) -> str:
        """The text of one case (may be empty when the format needs the totals first)."""
        ...

    def finish(self, totals: Totals) -> str:
        """The footer; everything still held back."""
        ...


def render_cases(writer: CaseWriter, cases: Iterable[Case], exit_code: int) -> str:
    """The whole document ``writer`` makes of ``cases``, for a caller that has them all."""
    held = list(cases)
    parts = [writer.start(), *(writer.add(c) for c in held),
             writer.finish(Totals.of(held, exit_code))]
    return "".join(parts)


def _file(path: str | None) -> str | None:
    return None if path in (None, "", "-") else path


_REPLAY_OUTCOME: dict[str, Outcome] = {"PASS": "pass", "BLOCK": "fail", "ERROR": "error"}


def replay_case(result: ReplayResult, located: Located | None = None) -> Case:
    """A replay result as a case: a BLOCK's or ERROR's reasons are errors, warnings warn.

    ``located`` (see :func:`roadcheck.ingest.locate.locate`) turns the seq a reason
    names into the line of a native file.
    """
    from roadcheck.ingest.locate import native_line

    traj = None
    if located is not None and result.path is not None:
        traj = located.get((result.path, result.id))

    file = _file(result.path)

    def line(f: Finding) -> int | None:
        if file is None:  # standard input: a line with no file points nowhere
            return None
        return f.location.line if f.location.line is not None else native_line(traj, f.seq)

    issues: list[Issue] = []
    if result.verdict != "PASS":
        issues.extend(Issue(f.code, f.message, "error", f.seq, line(f)) for f in result.reasons)
    issues.extend(Issue(f.code, f.message, "warning", f.seq, line(f)) for f in result.warnings)
    return Case("replay", result.id, file, _REPLAY_OUTCOME[result.verdict],
                result.verdict, tuple(issues))


def replay_cases(run: ReplayRun, located: Located | None = None) -> Iterator[Case]:
    """One case per trajectory, in the order judged."""
    return (replay_case(r, located) for r in run.results)


def accept_cases(run: AcceptRun) -> Iterator[Case]:
    """The one case of an accept: each failed check is an error, named by its check."""
    result = run.result
    issues = [Issue(f.code, f.message) for f in (r.finding() for r in result.reasons if not r.ok)]
    if not result.claims_checked:
        claimed = ", ".join(result.unchecked_claims) or "the claims"
        issues.append(Issue("claims-unchecked", f"{claimed}: NOT checked, no trace was given",
                            "warning"))
    yield Case("accept", run.label, _file(run.label), "pass" if result.accepted else "fail",
               result.verdict, tuple(issues))


_REVALIDATE_LEVEL: dict[str, Level] = {"warn": "warning", "invalid": "error",
                                       "reconcile": "error", "escalate": "error"}


def revalidate_cases(result: Revalidation) -> Iterator[Case]:
    """The one case of a revalidation: every finding that is not ``ok``, under its question."""
    issues = tuple(Issue(str(f.code), f"{f.question}: {f.message}", _REVALIDATE_LEVEL[f.severity])
                   for f in result.findings if f.severity != "ok")
    yield Case("revalidate", result.source, _file(result.source),
               "pass" if result.exit == 0 else "fail", result.decision, issues)
