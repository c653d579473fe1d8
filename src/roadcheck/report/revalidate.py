"""The revalidation report: findings under their question, the classes, the decision."""

from __future__ import annotations

from roadcheck.report._text import dump_json, text_lines
from roadcheck.revalidation.checkpoint import format_ts
from roadcheck.revalidation.result import QUESTIONS, Revalidation

__all__ = ["revalidate_report"]

HEADER = "roadcheck revalidate: a checkpoint is a remembered observation, not a lease on reality"
_MARK = {"ok": "ok  ", "warn": "WARN", "invalid": "FAIL", "reconcile": "HOLD",
         "escalate": "STOP"}


def revalidate_report(result: Revalidation, *, fmt: str = "text") -> str:
    """Render a revalidation as text or as the public JSON document."""
    if fmt == "json":
        return dump_json(result.to_dict())
    lines = [HEADER, f"checkpoint: {result.source}  now: {format_ts(result.now)}"]
    if result.checkpoint_sha256 is not None:
        lines.append(f"checkpoint-sha256: {result.checkpoint_sha256}")
    for question in QUESTIONS:
        found = [f for f in result.findings if f.question == question]
        if not found:
            continue
        lines.append(f"{question}:")
        lines.extend(f"  {_MARK[f.severity]}  {f.code}: {f.message}" for f in found)
    if result.remaining:
        lines.append("remaining:")
        lines.extend(f"  {s.step}: {s.retry_class}" for s in result.remaining)
    lines.append(f"next action: {result.next_action}")
    lines.append(f"decision: {result.decision} (exit {result.exit})")
    return text_lines(lines)
