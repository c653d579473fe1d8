"""SARIF 2.1.0: one result per reason, located at the file (and line, where known).

Code-scanning services read this format. The log is written as it goes: the
header, then one result per line as cases arrive, then the closing brackets.
"""

from __future__ import annotations

import os
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from roadcheck._version import __version__
from roadcheck.report._text import dumps_json
from roadcheck.report.cases import Case, Totals

__all__ = ["SarifWriter"]

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> str:
    """A relative path as a relative URI reference; an absolute one as a ``file:`` URI.
    The file name's own bytes are percent-encoded (one that is not UTF-8 included)."""
    pure = PurePath(path)
    if pure.is_absolute():
        return pure.as_uri() if os.sep == "/" or pure.drive else "file://" + quote(
            os.fsencode(pure.as_posix()))
    return quote(os.fsencode(pure.as_posix()))


def _dumps(value: Any) -> str:
    return dumps_json(value).decode()


class SarifWriter:
    """A SARIF log with one run of the ``roadcheck`` tool."""

    def __init__(self, command: str) -> None:
        self.command = command
        self._first = True

    def start(self) -> str:
        """The log's opening, up to the results array."""
        driver = {"name": "roadcheck", "version": __version__,
                  "informationUri": "https://pypi.org/project/roadcheck/"}
        return ("{\"$schema\": " + _dumps(SCHEMA) + ", \"version\": \"2.1.0\", \"runs\": [{"
                f"\"tool\": {{\"driver\": {_dumps(driver)}}}, "
                f"\"automationDetails\": {{\"id\": {_dumps('roadcheck/' + self.command + '/')}}}, "
                "\"results\": [\n")

    def add(self, case: Case) -> str:
        """One result per issue of the case."""
        out = []
        for issue in case.issues:
            result: dict[str, Any] = {
                "ruleId": issue.code,
                "level": issue.level,
                "message": {"text": issue.message},
            }
            location: dict[str, Any] = {"logicalLocations": [
                {"name": case.name, "kind": "object"}]}
            if case.file is not None:
                physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(case.file)}}
                if issue.line is not None:
                    physical["region"] = {"startLine": issue.line}
                location["physicalLocation"] = physical
            result["locations"] = [location]
            props: dict[str, Any] = {"verdict": case.verdict, "subject": case.name}
            if issue.seq is not None:
                props["seq"] = issue.seq
            result["properties"] = props
            out.append(("" if self._first else ",\n") + _dumps(result))
            self._first = False
        return "".join(out)

    def finish(self, totals: Totals) -> str:
        """The closing brackets and the invocation's outcome."""
        invocation = {"executionSuccessful": totals.exit in (0, 1),
                      "exitCode": totals.exit}
        tail = "\n" if not self._first else ""
        return f"{tail}], \"invocations\": [{_dumps(invocation)}]}}]}}\n"
