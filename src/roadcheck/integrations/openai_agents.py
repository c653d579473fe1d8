"""Record OpenAI Agents SDK runs for ``roadcheck replay --input-format openai-agents``.

::

    recorder = RoadcheckTracingProcessor("run.jsonl")
    agents.set_trace_processors([recorder])      # or add_trace_processor
    with agents.trace("weekly report"):
        result = await Runner.run(triage, "weekly report for acme")
        recorder.record_items(result)
        if result.interruptions:
            state = result.to_state()
            for item in result.interruptions:
                recorder.approve(state, item, by="owner")   # or recorder.reject(...)
            result = await Runner.run(triage, state)
            recorder.record_items(result)

The SDK records who ran which tool, and the handoffs, as spans; it does not
record who approved a tool call. :meth:`RoadcheckTracingProcessor.approve` and
:meth:`~RoadcheckTracingProcessor.reject` write that decision next to the spans and
then call ``RunState.approve`` / ``RunState.reject``. Each record is filed
under the trace of the run it belongs to (the one the SDK stores in the run
result and state), so runs at the same time, and decisions given later outside
the run's ``trace()`` block, keep to their own run. A decision taken with
``RunState.approve`` directly is not recorded, so the trajectory has no
checkpoint for it.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from os import PathLike
from typing import Any

from roadcheck.ingest.openai_agents import read_openai_agents
from roadcheck.integrations import require

_tracing = require("agents.tracing", "openai-agents")
_Processor: Any = _tracing.TracingProcessor

__all__ = ["RoadcheckTracingProcessor", "read_openai_agents"]


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _text(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool, list, dict)):
        return value
    return str(value)


class RoadcheckTracingProcessor(_Processor):  # type: ignore[misc]
    """A tracing processor that appends the SDK's traces and spans to a JSONL file."""

    def __init__(self, path: str | PathLike[str]) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in shutdown
        self._seen: set[tuple[str, str, Any]] = set()

    def _write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, default=str)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    # -- TracingProcessor -------------------------------------------------------------------
    def on_trace_start(self, trace: Any) -> None:
        exported = trace.export()
        if exported:
            self._write(exported)

    def on_trace_end(self, trace: Any) -> None:
        pass

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        exported = span.export()
        if exported:
            self._write(exported)

    def shutdown(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def force_flush(self) -> None:
        with self._lock:
            self._file.flush()

    # -- run items and approvals -------------------------------------------------------------
    @staticmethod
    def _trace_of(run: Any, trace_id: str | None) -> str:
        """The trace id a run result or run state belongs to.

        An explicit ``trace_id`` wins; else the trace the SDK stored with the run
        (``RunResult`` / ``RunState`` keep it, so a run resumed later, or decided
        outside its ``trace()`` block, is still filed under its own trace); else
        the trace current in this task. Never "the trace started last": with
        runs at the same time that files a decision under another run.
        """
        if trace_id is not None:
            return trace_id
        stored = getattr(run, "_trace_state", None)
        tid = getattr(stored, "trace_id", None)
        if isinstance(tid, str) and tid:
            return tid
        trace = getattr(run, "trace", None)
        tid = getattr(trace, "trace_id", None)
        if isinstance(tid, str) and tid:
            return tid
        current = _tracing.get_current_trace()
        tid = getattr(current, "trace_id", None)
        if isinstance(tid, str) and tid:
            return tid
        raise ValueError(
            f"cannot tell which run {type(run).__name__} belongs to: it carries no trace and "
            "no trace is current; pass the run's result or state, or trace_id=")

    def record_items(self, result: Any, *, resumed_from: Any = None,
                     trace_id: str | None = None) -> None:
        """Append the run items of a run result (each item once across resumed runs).

        The items are filed under the result's own trace. A run resumed from a
        ``RunState`` outside any ``trace()`` block does not carry it (the SDK
        keeps it only on interrupted results): pass ``resumed_from=state``.
        """
        if trace_id is None and resumed_from is not None and getattr(
                getattr(result, "_trace_state", None), "trace_id", None) is None:
            trace_id = self._trace_of(resumed_from, None)
        trace_id = self._trace_of(result, trace_id)
        for item in result.new_items:
            raw = getattr(item, "raw_item", None)
            call_id = getattr(raw, "call_id", None)
            if call_id is None and isinstance(raw, dict):
                call_id = raw.get("call_id")
            key = (str(trace_id), item.type, call_id if call_id is not None else id(item))
            if key in self._seen:
                continue
            self._seen.add(key)
            record: dict[str, Any] = {"object": "run_item", "trace_id": trace_id,
                                      "type": item.type, "agent": item.agent.name,
                                      "call_id": call_id, "at": _now()}
            name = getattr(item, "tool_name", None) or getattr(raw, "name", None)
            if name is not None:
                record["name"] = name
            arguments = getattr(raw, "arguments", None)
            if arguments is not None:
                record["arguments"] = arguments
            if item.type == "tool_call_output_item":
                record["output"] = _text(getattr(item, "output", None))
            self._write(record)

    def _decision(self, state: Any, item: Any, decision: str, by: str | None,
                  checkpoint_id: str | None, trace_id: str | None) -> None:
        raw = getattr(item, "raw_item", None)
        record: dict[str, Any] = {
            "object": "approval", "trace_id": self._trace_of(state, trace_id),
            "tool_name": item.tool_name, "call_id": getattr(raw, "call_id", None),
            "agent": item.agent.name, "decision": decision, "at": _now()}
        if by is not None:
            record["confirmed_by"] = by
        if checkpoint_id is not None:
            record["checkpoint_id"] = checkpoint_id
        self._write(record)

    def approve(self, state: Any, item: Any, *, by: str | None = None,
                checkpoint_id: str | None = None, always_approve: bool = False,
                trace_id: str | None = None) -> None:
        """Record the approval of a ``tool_approval_item``, then approve it in ``state``.

        The decision is filed under the run ``state`` belongs to (the trace the
        SDK stored in it), or under ``trace_id`` when given; with neither, and no
        current trace, it is a ``ValueError`` and nothing is written.
        ``checkpoint_id`` defaults to ``approve_<tool name>``; ``by`` is who approved.
        """
        self._decision(state, item, "approved", by, checkpoint_id, trace_id)
        state.approve(item, always_approve=always_approve)

    def reject(self, state: Any, item: Any, *, by: str | None = None,
               checkpoint_id: str | None = None, message: str | None = None,
               trace_id: str | None = None) -> None:
        """Record the rejection of a ``tool_approval_item``, then reject it in ``state``.

        Filed under the run like :meth:`approve`.
        """
        self._decision(state, item, "rejected", by, checkpoint_id, trace_id)
        state.reject(item, rejection_message=message)
