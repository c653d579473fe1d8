"""SARIF 2.1.0: one result per reason, located at the file (and line, where known).

Code-scanning services read this format. The log is written as it goes: the
header, then one result per line as cases arrive, then the tool with a rule for
each code the results used (its short and full description from docs/reasons.md
and a help link to its section there) and the closing brackets.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from roadcheck._reason_docs import SECTIONS
from roadcheck._version import HOME, __version__
from roadcheck.report._text import dumps_json
from roadcheck.report.cases import Case, Totals

__all__ = ["SarifWriter"]

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: The sections of docs/reasons.md whose codes each command reports, in the order a
#: code is looked up.
_SECTIONS = {"replay": ("replay", "shared"), "accept": ("shared",),
             "revalidate": ("revalidate-resume-time-revalidation", "shared")}
_PROPAGATED = re.compile(r"unverified-claim-propagated-\d+-hops")


def _uri(path: str) -> str:
    """A relative path as a relative URI reference; an absolute one as a ``file:`` URI.
    The file name's own bytes are percent-encoded (one that is not UTF-8 included)."""
    pure = PurePath(path)
    if pure.is_absolute():
        return pure.as_uri() if os.sep == "/" or pure.drive else "file://" + quote(
            os.fsencode(pure.as_posix()))
    return quote(os.fsencode(pure.as_posix()))


def _first_clause(markdown: str) -> str:
    """A table cell up to its first ``;``, ``:`` or ``.`` that ends a clause, without its
    asides in brackets (neither counts inside a code span)."""
    out: list[str] = []
    quoted = False
    depth = 0
    for i, char in enumerate(markdown):
        if char == "`":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")" and depth:
            depth -= 1
            continue
        elif char in ";:." and not quoted and not depth and markdown[i + 1:i + 2] == " ":
            break
        if not depth:
            out.append(char)
    short = " ".join("".join(out).split()).replace(" ,", ",")
    return short.split(", e.g")[0]


def _plain(markdown: str) -> str:
    """A table cell as plain text: its code spans unquoted."""
    return markdown.replace("`", "")


def _dumps(value: Any) -> str:
    return dumps_json(value).decode()


class SarifWriter:
    """A SARIF log with one run of the ``roadcheck`` tool."""

    def __init__(self, command: str) -> None:
        self.command = command
        self._first = True
        #: code -> its index in the rules, in the order the results first use them
        self._rules: dict[str, int] = {}

    def start(self) -> str:
        """The log's opening, up to the results array."""
        return ("{\"$schema\": " + _dumps(SCHEMA) + ", \"version\": \"2.1.0\", \"runs\": [{"
                f"\"automationDetails\": {{\"id\": {_dumps('roadcheck/' + self.command + '/')}}}, "
                "\"results\": [\n")

    def _rule_index(self, code: str) -> int:
        return self._rules.setdefault(code, len(self._rules))

    def _rule(self, code: str) -> dict[str, Any]:
        """The rule of ``code``: what docs/reasons.md says of it, and a link there."""
        key = "unverified-claim-propagated-N-hops" if _PROPAGATED.fullmatch(code) else code
        for section in _SECTIONS.get(self.command, ("shared",)):
            when = SECTIONS.get(section, {}).get(key)
            if when is not None:
                short = _first_clause(when)
                return {"id": code, "name": key,
                        "shortDescription": {"text": _plain(short)},
                        "fullDescription": {"text": _plain(when), "markdown": when},
                        "helpUri": f"{HOME}/blob/main/docs/reasons.md#{section}"}
        page = "accept.md" if self.command == "accept" else "reasons.md"
        return {"id": code, "name": code, "shortDescription": {"text": code},
                "helpUri": f"{HOME}/blob/main/docs/{page}"}

    def add(self, case: Case) -> str:
        """One result per issue of the case."""
        out = []
        for issue in case.issues:
            result: dict[str, Any] = {
                "ruleId": issue.code,
                "ruleIndex": self._rule_index(issue.code),
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
        driver = {"name": "roadcheck", "version": __version__, "informationUri": HOME,
                  "rules": [self._rule(code) for code in self._rules]}
        return (f"{tail}], \"tool\": {{\"driver\": {_dumps(driver)}}}, "
                f"\"invocations\": [{_dumps(invocation)}]}}]}}\n")
