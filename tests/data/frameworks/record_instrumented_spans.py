"""Record span files written by the instrumentation libraries themselves.

``record_span_conventions.py`` builds spans with each convention's attribute
names; this script lets the libraries write them, offline:

- ``openinference/langchain_instrumented.json``: OpenInference's
  ``LangChainInstrumentor`` traces LangChain's ``create_agent`` (scripted chat
  model) looking up an account, then calling ``send_report``. No approval is
  recorded anywhere.
- ``openllmetry/traceloop_decorated.json``: OpenLLMetry's ``@agent`` and
  ``@tool`` decorators (``traceloop-sdk``) around the same two tools, the same
  story.

(The error case is left to ``record_span_conventions.py``: the libraries
write the Python traceback, with the recording machine's paths, into the
span.)

Spans are taken from an in-memory exporter and written as OTLP/JSON (with the
encoder of ``record_span_conventions.py``); span ids are fixed, times are the
recording's. Needs ``openinference-instrumentation-langchain``,
``traceloop-sdk``, ``langgraph`` and ``opentelemetry-sdk``:

    python tests/data/frameworks/record_instrumented_spans.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from record_span_conventions import _Ids, otlp_json

HERE = Path(__file__).resolve().parent
SEND_ARGS = {"account": "acme", "summary": "3 open tickets"}


def openinference_langchain() -> dict[str, Any]:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from openinference.instrumentation.langchain import LangChainInstrumentor

    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=_Ids())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    LangChainInstrumentor().instrument(tracer_provider=provider)
    @tool
    def lookup_account(name: str) -> str:
        """Look up an account."""
        return json.dumps({"account": name, "open_tickets": 3})

    @tool
    def send_report(account: str, summary: str) -> str:
        """Send the report (cannot be taken back)."""
        return f"sent report on {account}"

    class Model(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    def calls(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])

    model = Model(responses=[calls("lookup_account", {"name": "acme"}, "c1"),
                             calls("send_report", SEND_ARGS, "c2"),
                             AIMessage("report sent")])
    agent = create_agent(model, tools=[lookup_account, send_report], name="reporter")
    agent.invoke({"messages": [HumanMessage("weekly report for acme")]})
    LangChainInstrumentor().uninstrument()
    return otlp_json(exporter.get_finished_spans())


def openllmetry_decorators() -> dict[str, Any]:
    os.environ["TRACELOOP_TELEMETRY"] = "false"
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import agent, tool

    exporter = InMemorySpanExporter()
    Traceloop.init(app_name="reports", exporter=exporter, disable_batch=True,
                   telemetry_enabled=False, instruments=set())
    @tool(name="lookup_account")
    def lookup_account(name: str) -> dict[str, Any]:
        return {"account": name, "open_tickets": 3}

    @tool(name="send_report")
    def send_report(account: str, summary: str) -> str:
        return f"sent report on {account}"

    @agent(name="reporter")
    def reporter() -> str:
        lookup_account(name="acme")
        return send_report(**SEND_ARGS)

    reporter()
    return otlp_json(exporter.get_finished_spans())


def main() -> None:
    for path, make in ((HERE / "openinference" / "langchain_instrumented.json",
                        openinference_langchain),
                       (HERE / "openllmetry" / "traceloop_decorated.json",
                        openllmetry_decorators)):
        path.write_text(json.dumps(make(), indent=1) + "\n", encoding="utf-8")
        sys.stdout.write(f"wrote {path.relative_to(HERE)}\n")


if __name__ == "__main__":
    main()
