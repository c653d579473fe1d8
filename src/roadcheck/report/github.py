"""GitHub Actions workflow commands: one ``::error`` or ``::warning`` line per reason.

A run step that prints these lines gets an annotation on the file (and line,
where known) in the pull request. Every value is escaped the way the runner
reads it back (``%``, CR and LF as ``%25``, ``%0D``, ``%0A``; also ``:`` and
``,`` in properties), and any other control or bidi character is shown as
``repr`` shows it, so no value can start a command of its own.
"""

from __future__ import annotations

from roadcheck.report._text import escape_controls, plural
from roadcheck.report.cases import Case, Totals

__all__ = ["GitHubWriter", "escape_data", "escape_property"]


def escape_data(value: str) -> str:
    """A command's message, escaped: ``%``, CR and LF."""
    text = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return escape_controls(text)


def escape_property(value: str) -> str:
    """A command property's value, escaped: ``%``, CR, LF, ``:`` and ``,``."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


class GitHubWriter:
    """One annotation per reason of a case that did not pass, and per warning."""

    def __init__(self, command: str) -> None:
        self.command = command

    def start(self) -> str:
        """No header."""
        return ""

    def add(self, case: Case) -> str:
        """The annotations of one case."""
        lines = []
        for issue in case.issues:
            props = []
            if case.file is not None:
                props.append(f"file={escape_property(case.file)}")
            if issue.line is not None:
                props.append(f"line={issue.line}")
            props.append(f"title={escape_property(f'{case.verdict} {issue.code}')}")
            where = "" if case.name == case.file else f"{case.name}: "
            lines.append(f"::{issue.level} {','.join(props)}::"
                         f"{escape_data(where + issue.message)}\n")
        return "".join(lines)

    def finish(self, totals: Totals) -> str:
        """One closing line with the counts and the exit code, a notice on the run."""
        word = "trajectory" if self.command == "replay" else "case"
        words = "trajectories" if self.command == "replay" else None
        return (f"::notice title=roadcheck {self.command}::{plural(totals.tests, word, words)}: "
                f"{totals.passed} passed, {totals.failed} failed, {totals.errors} could not "
                f"be judged -> exit {totals.exit}\n")
