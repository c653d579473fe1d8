"""Handing a failed attempt back to the producer of the next one.

The producer of attempt N+1 finds the failure of attempt N in the environment:
``ROADCHECK_FEEDBACK_FILE`` (JSON: ``summary``, ``detail`` and the full ``record``)
and ``ROADCHECK_LAST_GATE_SUMMARY``, ``ROADCHECK_LAST_GATE_DETAIL``, ``ROADCHECK_LAST_GATE_EXIT``.
Every attempt also gets ``ROADCHECK_ATTEMPT`` and ``ROADCHECK_ITERATION``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

__all__ = ["FEEDBACK_VARS", "producer_env", "write_feedback"]

FEEDBACK_VARS = ("ROADCHECK_FEEDBACK_FILE", "ROADCHECK_LAST_GATE_SUMMARY",
                 "ROADCHECK_LAST_GATE_DETAIL", "ROADCHECK_LAST_GATE_EXIT")


def write_feedback(path: Path, record: Mapping[str, Any]) -> Path:
    """Write the feedback document for a failed record and return its path."""
    gate = record.get("gate") or {}
    doc = {"summary": gate.get("summary", ""), "detail": gate.get("detail", ""),
           "record": dict(record)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    return path


def producer_env(base: Mapping[str, str], *, attempt: int, iteration: int,
                 feedback: Path | None, last: Mapping[str, Any] | None,
                 extra: Mapping[str, str]) -> dict[str, str]:
    """The environment of one producer run; stale feedback from outside is removed."""
    env = {k: v for k, v in base.items() if k not in FEEDBACK_VARS}
    env.update(extra)
    env["ROADCHECK_ATTEMPT"] = str(attempt)
    env["ROADCHECK_ITERATION"] = str(iteration)
    if feedback is not None and last is not None:
        gate = last.get("gate") or {}
        code = gate.get("exit_code")
        env["ROADCHECK_FEEDBACK_FILE"] = os.fspath(feedback)
        env["ROADCHECK_LAST_GATE_SUMMARY"] = str(gate.get("summary", ""))
        env["ROADCHECK_LAST_GATE_DETAIL"] = str(gate.get("detail", ""))
        env["ROADCHECK_LAST_GATE_EXIT"] = "" if code is None else str(code)
    return env
