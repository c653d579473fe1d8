"""The CI formats by name: ``junit``, ``sarif`` and ``github``, each a :class:`CaseWriter`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from roadcheck.report.cases import Case, CaseWriter, render_cases

if TYPE_CHECKING:
    from roadcheck.conformance.result import ReplayRun
    from roadcheck.ingest.locate import Located

__all__ = ["CI_FORMATS", "ci_report", "located_paths", "replay_document", "writer_for"]

CI_FORMATS = ("junit", "sarif", "github")


def writer_for(fmt: str, command: str) -> CaseWriter:
    """A fresh writer of format ``fmt`` for the cases of ``command``."""
    if fmt == "junit":
        from roadcheck.report.junit import JUnitWriter

        return JUnitWriter(f"roadcheck {command}")
    if fmt == "sarif":
        from roadcheck.report.sarif import SarifWriter

        return SarifWriter(command)
    if fmt == "github":
        from roadcheck.report.github import GitHubWriter

        return GitHubWriter(command)
    raise ValueError(f"not a CI format: {fmt!r}")


def ci_report(fmt: str, command: str, cases: Iterable[Case], exit_code: int) -> str:
    """The whole document of format ``fmt`` for ``cases``."""
    return render_cases(writer_for(fmt, command), cases, exit_code)


def located_paths(run: ReplayRun, fmt: str, paths: Iterable[str]) -> list[str]:
    """The files worth reading again for ``fmt``: none for text, JSON and JUnit (no lines),
    every file for HTML (its timelines), and for SARIF and GitHub only the native files
    with a reason or warning that names an event but not its line (a finding read from a
    file carries its line already; only a native file has a line per event)."""
    if fmt == "html":
        return list(paths)
    if fmt not in ("sarif", "github"):
        return []
    wanted = {r.path for r in run.results
              if r.source == "native" and (r.verdict == "BLOCK" or r.warnings)
              and any(f.seq is not None and f.location.line is None
                      for f in (*r.reasons, *r.warnings))}
    return [p for p in paths if p in wanted]


def replay_document(run: ReplayRun, spec: Any, *, fmt: str, summary_only: bool = False,
                    by_field: str | None = None, located: Located | None = None) -> str:
    """A replay run in any format ``roadcheck replay --format`` offers.

    ``located`` (the trajectories read again) gives the CI formats file lines
    and the HTML page its timelines.
    """
    if fmt in CI_FORMATS:
        from roadcheck.report.cases import replay_cases

        return ci_report(fmt, "replay", replay_cases(run, located), run.exit)
    if fmt == "html":
        from roadcheck.report.html_replay import replay_html

        return replay_html(run, spec, by_field=by_field, located=located or {})
    from roadcheck.report.replay import replay_report

    return replay_report(run, spec, fmt=fmt, summary_only=summary_only, by_field=by_field)
