"""Accept reports: the verdict block people read and the JSON document scripts read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roadcheck.acceptance.gate import GateResult
from roadcheck.report._text import dump_json, text_lines

__all__ = ["accept_batch_report", "accept_report", "self_test_report", "verdict_block"]

_OK = "       ok - "
_FAIL = "    FAIL - "
_UNCHECKED = "UNCHECKED - "


def verdict_block(label: str, result: GateResult) -> list[str]:
    """``[VERDICT] label`` and one indented line per reason, in the order the checks ran."""
    lines = [f"[{result.verdict}] {label}"]
    if not result.claims_checked:  # first, so nobody reads the verdict without it
        claimed = ", ".join(f"'{v}'" for v in result.unchecked_claims)
        what = f"the result claims {claimed}: NOT checked" if claimed else \
            "claims were NOT checked"
        lines.append(f"{_UNCHECKED}{what}, no trace was given (--claims-unchecked)")
    lines.extend(f"{_OK if r.ok else _FAIL}{r.message}" for r in result.reasons)
    return lines


def accept_report(label: str, result: GateResult, *, fmt: str = "text") -> str:
    """Render one gate result as the text block or the JSON document."""
    if fmt == "json":
        return dump_json(result.to_dict())
    return text_lines(verdict_block(label, result))


def accept_batch_report(runs: Sequence[Any], *, fmt: str = "text") -> str:
    """Render the verdicts of many sessions (``accept_sessions``): a block each, then the
    totals; JSON: ``{"sessions": [{"label", ...the gate's shape}], "summary", "exit"}``."""
    accepted = sum(1 for r in runs if r.result.accepted)
    exit_code = max((r.exit for r in runs), default=0)
    rejected = len(runs) - accepted
    if fmt == "json":
        return dump_json({
            "sessions": [{"label": r.label, **r.result.to_dict()} for r in runs],
            "summary": {"sessions": len(runs), "accepted": accepted, "rejected": rejected},
            "exit": exit_code,
        })
    lines: list[str] = []
    for r in runs:
        lines.extend(verdict_block(r.label, r.result))
    lines.append(f"summary: {len(runs)} session{'s' if len(runs) != 1 else ''}: {accepted} "
                 f"ACCEPTED, {rejected} REJECTED -> overall exit {exit_code}")
    return text_lines(lines)


def self_test_report(cases: Sequence[Any], *, fmt: str = "text") -> str:
    """Render the self-test: each fixture's verdict block, then how many came out as expected."""
    good = sum(1 for c in cases if c.as_expected)
    exit_code = 0 if good == len(cases) else 1
    if fmt == "json":
        return dump_json({
            "self_test": [{"fixture": c.fixture.title, "label": c.fixture.label,
                           "expected": c.fixture.expected, **c.result.to_dict()}
                          for c in cases],
            "exit": exit_code,
        })
    lines = ["roadcheck accept self-test: four fixtures, no agent, no network", ""]
    for i, c in enumerate(cases, 1):
        lines.append(f"--- fixture {i}: {c.fixture.title} ---")
        lines.extend(verdict_block(c.fixture.label, c.result))
        lines.append("")
    lines.append(f"self-test: {good} of {len(cases)} fixtures gave the expected verdict")
    return text_lines(lines)
