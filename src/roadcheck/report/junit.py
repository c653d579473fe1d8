"""JUnit XML: one ``<testcase>`` per case, its reasons as the failure text.

The document is the shape pytest's ``--junitxml`` writes (the JUnit 10 schema
CI servers read). The suite's counts are attributes of its opening tag, so the
cases are held until :meth:`JUnitWriter.finish`.
"""

from __future__ import annotations

import re
from xml.sax.saxutils import escape, quoteattr

from roadcheck.report._text import escape_controls
from roadcheck.report.cases import Case, Totals

__all__ = ["JUnitWriter"]

# Characters XML 1.0 cannot carry at all, even as a reference; escape_controls has shown
# the C0 controls already, so only the noncharacters remain.
_NOT_XML = re.compile("[\ufffe\uffff]")


def _text(value: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", escape_controls(value))


def _attr(value: str) -> str:
    return quoteattr(_text(value))


class JUnitWriter:
    """Writes one ``<testsuite>`` named after the command, one ``<testcase>`` per case."""

    def __init__(self, suite: str) -> None:
        self.suite = suite
        self._held: list[str] = []

    def start(self) -> str:
        """Nothing yet: the suite's tag carries the counts."""
        return ""

    def add(self, case: Case) -> str:
        """Hold the case's ``<testcase>`` element until the counts are known."""
        classname = f"roadcheck.{case.command}" + (f".{case.file}" if case.file else "")
        out = [f"    <testcase classname={_attr(classname)} name={_attr(case.name)} time=\"0\""]
        errors = [i for i in case.issues if i.level == "error"]
        others = [i for i in case.issues if i.level != "error"]
        if not case.failed and not others:
            self._held.append("".join(out) + " />\n")
            return ""
        out.append(">\n")
        if case.failed:
            tag = "error" if case.outcome == "error" else "failure"
            head = errors[0].code if errors else case.verdict
            body = "\n".join(_text(f"{i.code}: {i.message}") for i in errors) or case.verdict
            out.append(f"      <{tag} type={_attr(case.verdict)} message={_attr(head)}>"
                       f"{escape(body)}</{tag}>\n")
        if others:
            body = "\n".join(_text(f"{i.level}: {i.code}: {i.message}") for i in others)
            out.append(f"      <system-out>{escape(body)}</system-out>\n")
        out.append("    </testcase>\n")
        self._held.append("".join(out))
        return ""

    def finish(self, totals: Totals) -> str:
        """The whole document: the suite with its counts around every held case."""
        head = ("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<testsuites>\n"
                f"  <testsuite name={_attr(self.suite)} tests=\"{totals.tests}\" "
                f"failures=\"{totals.failed}\" errors=\"{totals.errors}\" skipped=\"0\" "
                "time=\"0\">\n")
        body = "".join(self._held)
        self._held = []
        return f"{head}{body}  </testsuite>\n</testsuites>\n"
