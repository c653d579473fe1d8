"""Record the OpenLLMetry scenario matrix: ``openllmetry/matrix/<scenario>.json``.

Each file is one scenario of the end-to-end matrix (tests/frameworks/matrix.py)
as OpenLLMetry's own ``@agent`` and ``@tool`` decorators (``traceloop-sdk``)
trace it: a ``reporter`` agent calls the ``send_report`` tool; in the handoff
scenario a ``triage`` agent calls a ``transfer_to_reporter`` tool that runs
the reporter. OpenLLMetry records no approval, so the application records the
owner's decision as a span of its own with the ``roadcheck.checkpoint.*``
attributes (docs/frameworks/otel.md), in the run's trace. A send that raises
is a tool span with status ERROR; the exception events OpenTelemetry adds
(a traceback with the recording machine's paths) are left out of the file.

Spans are taken from an in-memory exporter and written as OTLP/JSON with the
encoder of ``record_span_conventions.py``; ids and times are the recording's.
Needs ``traceloop-sdk`` and ``opentelemetry-sdk``:

    python tests/data/frameworks/record_openllmetry_matrix.py
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

os.environ["TRACELOOP_TELEMETRY"] = "false"

from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from record_span_conventions import otlp_json
from traceloop.sdk import Traceloop
from traceloop.sdk.decorators import agent, tool

HERE = Path(__file__).resolve().parent
OUT = HERE / "openllmetry" / "matrix"


def decide(decision: str) -> None:
    """The application records the owner's decision in the run's trace."""
    with trace.get_tracer("reports").start_as_current_span("approval", attributes={
            "roadcheck.checkpoint.id": "approve_send_report",
            "roadcheck.checkpoint.confirmed_by": "owner",
            "roadcheck.checkpoint.decision": decision}):
        pass


@tool(name="send_report")
def send_report(account: str, summary: str) -> str:
    if account == "down":
        raise RuntimeError("mail server unreachable")
    return f"sent report on {account}"


def reporter_run(*steps: str) -> Callable[[], None]:
    """A reporter agent run: ``approve``/``reject`` record a decision, ``send`` sends."""
    @agent(name="reporter")
    def reporter() -> None:
        part = 0
        for step in steps:
            if step in ("approved", "rejected"):
                decide(step)
            elif step == "send":
                part += 1
                send_report(account="acme", summary=f"part {part}")
            elif step == "send-fails":
                with contextlib.suppress(RuntimeError):  # the run goes on after a failed send
                    send_report(account="down", summary="part 1")
    return reporter


def handoff() -> None:
    reporter = reporter_run("approved", "send")

    @tool(name="transfer_to_reporter")
    def transfer_to_reporter(note: str) -> str:
        reporter()
        return "report handled"

    @agent(name="triage")
    def triage() -> None:
        transfer_to_reporter(note="weekly report")

    triage()


def two_runs() -> None:
    reporter_run("approved", "send")()
    reporter_run("send")()


SCENARIOS: dict[str, Callable[[], None]] = {
    "approved": reporter_run("approved", "send"),
    "missing": reporter_run("send"),
    "rejected-but-sent": reporter_run("rejected", "send"),
    "rejected-not-sent": reporter_run("rejected"),
    "after-action": reporter_run("send", "approved"),
    "two-sends-one-approval": reporter_run("approved", "send", "send"),
    "handoff": handoff,
    "errored-tool": reporter_run("send-fails"),
    "two-runs": two_runs,
}


def main() -> None:
    exporter = InMemorySpanExporter()
    Traceloop.init(app_name="reports", exporter=exporter, disable_batch=True,
                   telemetry_enabled=False, instruments=set())
    OUT.mkdir(parents=True, exist_ok=True)
    for name, run in SCENARIOS.items():
        exporter.clear()
        run()
        doc = otlp_json(exporter.get_finished_spans())
        for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            span["events"] = [e for e in span["events"] if e["name"] != "exception"]
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        sys.stdout.write(f"wrote {path.relative_to(HERE)}\n")


if __name__ == "__main__":
    main()
