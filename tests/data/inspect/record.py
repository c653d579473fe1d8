"""Record the Inspect AI eval logs under this folder (offline: Inspect's mockllm model).

    python tests/data/inspect/record.py

needs ``pip install inspect-ai``. One small task: a reporter with two tools,
``lookup_account`` and the irreversible ``send_report``; the mock model's
script is chosen by the sample's input. Each log is one ``inspect eval`` run
with its own approval policy:

- approved.eval / approved.json: the ``owner`` approver approves every
  ``send_report``; samples ``send`` (one send) and ``lookup-error`` (the lookup
  tool fails, then a send);
- missing.json: no approval policy, sample ``send``;
- rejected.json: ``triage`` escalates, then Inspect's ``auto`` approver rejects;
  the send never runs;
- modified.json: the ``owner`` approver modifies the recipient, the send runs
  with the modified arguments;
- auto.json: Inspect's ``auto`` approver approves (no person involved).

And, under matrix/, one log per scenario of the end-to-end matrix
(tests/frameworks/matrix.py) that Inspect can express, each with the one
sample ``send`` (or ``send-fails``) and only ``send_report`` gated:
approved.json (the ``owner`` approves), missing.json (no approver),
rejected-not-sent.json (the ``owner`` rejects; the send never runs),
errored-tool.json (no approver; the send raises), and handoff.json: a
``triage`` react agent hands over to a ``reporter`` react agent through
Inspect's ``handoff()`` (no arguments: the transfer carries no ``account``),
and the reporter sends once the ``owner`` approves; Inspect's ``auto``
approver approves the other tools.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.agent import as_solver, handoff, react
from inspect_ai.approval import Approval, ApprovalPolicy, approver, auto_approver
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import ToolError, tool

HERE = Path(__file__).resolve().parent


@tool
def lookup_account() -> Any:
    async def execute(name: str) -> str:
        """Look an account up.

        Args:
            name: The account name.
        """
        if name == "missing":
            raise ToolError(f"no account named {name}")
        return f"account {name}: 3 open invoices"

    return execute


@tool
def send_report() -> Any:
    async def execute(to: str, body: str) -> str:
        """Send the report by e-mail (irreversible).

        Args:
            to: The recipient.
            body: The report.
        """
        if to == "down@example.com":
            raise ToolError("mail server unreachable")
        return f"sent to {to}"

    return execute


SCRIPTS: dict[str, list[tuple[str, dict[str, Any]] | str]] = {
    "send": [("send_report", {"to": "cfo@example.com", "body": "Q3 report"}), "Report sent."],
    "send-fails": [("send_report", {"to": "down@example.com", "body": "Q3 report"}),
                   "The send failed."],
    "lookup-error": [("lookup_account", {"name": "missing"}),
                     ("send_report", {"to": "cfo@example.com", "body": "no account"}),
                     "Done."],
}


def script(input: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
    """The mock model's turn: the next step of the sample's script."""
    key = str(input[0].text).strip()
    done = sum(1 for m in input if m.role == "assistant")
    step = SCRIPTS[key][done]
    if isinstance(step, str):
        out = ModelOutput.from_content("mockllm/model", step)
    else:
        out = ModelOutput.for_tool_call("mockllm/model", step[0], step[1])
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # no tokenizer
    return out


@approver(name="owner")
def owner() -> Any:
    """Stands in for the account owner: approves each send."""
    async def approve(message: str, call: Any, view: Any, history: Any) -> Approval:
        return Approval(decision="approve", explanation="owner approved the send")

    return approve


@approver(name="owner")
def owner_rejects() -> Any:
    """The owner says no."""
    async def approve(message: str, call: Any, view: Any, history: Any) -> Approval:
        return Approval(decision="reject", explanation="do not send it")

    return approve


@approver(name="owner")
def owner_modifies() -> Any:
    """The owner approves the send with another recipient."""
    async def approve(message: str, call: Any, view: Any, history: Any) -> Approval:
        from inspect_ai.tool import ToolCall

        changed = ToolCall(id=call.id, function=call.function,
                           arguments={**call.arguments, "to": "owner@example.com"})
        return Approval(decision="modify", modified=changed,
                        explanation="send it to me instead")

    return approve


@approver(name="triage")
def triage() -> Any:
    """Does not decide sends: escalates to the next approver."""
    async def approve(message: str, call: Any, view: Any, history: Any) -> Approval:
        return Approval(decision="escalate", explanation="not mine to decide")

    return approve


def task(samples: list[str]) -> Task:
    return Task(dataset=[Sample(id=s, input=s) for s in samples],
                solver=[use_tools(lookup_account(), send_report()), generate()],
                name="reporter")


def run(name: str, fmt: str, samples: list[str], approval: list[ApprovalPolicy] | None,
        folder: Path = HERE) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model = get_model("mockllm/model", custom_outputs=script)
        logs = eval(task(samples), model=model, approval=approval, log_dir=tmp,
                    log_format=fmt, display="none")
        assert logs[0].status == "success", logs[0].error
        found = list(Path(tmp).glob(f"*.{fmt}"))
        assert len(found) == 1, found
        shutil.copyfile(found[0], folder / f"{name}.{fmt}")


#: The handoff sample's model turns, in order: triage hands over, the reporter sends and
#: submits, then triage submits.
HANDOFF_STEPS: list[tuple[str, dict[str, Any]]] = [
    ("transfer_to_reporter", {}),
    ("send_report", {"to": "cfo@example.com", "body": "Q3 report"}),
    ("submit", {"answer": "Report sent."}),
    ("submit", {"answer": "Handed over; the report is sent."}),
]


def record_handoff(folder: Path) -> None:
    """matrix/handoff.json: triage hands over to reporter (Inspect agents and handoff())."""
    turns = iter(HANDOFF_STEPS)

    def scripted(input: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        fn, args = next(turns)  # StopIteration ends a run that went off script
        out = ModelOutput.for_tool_call("mockllm/model", fn, args)
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return out

    reporter = react(name="reporter", description="Sends the report.",
                     prompt="Send the report.", tools=[send_report()])
    triage = react(name="triage", description="Routes the request.",
                   prompt="Hand the request over to the reporter.", tools=[handoff(reporter)])
    policy = [ApprovalPolicy(owner(), "send_report"), ApprovalPolicy(auto_approver(), "*")]
    with tempfile.TemporaryDirectory() as tmp:
        logs = eval(Task(dataset=[Sample(id="send", input="send")], solver=as_solver(triage),
                         name="reporter", message_limit=40),
                    model=get_model("mockllm/model", custom_outputs=scripted), approval=policy,
                    log_dir=tmp, log_format="json", display="none")
        assert logs[0].status == "success", logs[0].error
        (found,) = Path(tmp).glob("*.json")
        shutil.copyfile(found, folder / "handoff.json")


def main() -> int:
    owner_send = [ApprovalPolicy(owner(), "send_report"), ApprovalPolicy(auto_approver(), "*")]
    run("approved", "eval", ["send", "lookup-error"], owner_send)
    run("approved", "json", ["send", "lookup-error"], owner_send)
    run("missing", "json", ["send"], None)
    run("rejected", "json", ["send"], [ApprovalPolicy(triage(), "send_report"),
                                       ApprovalPolicy(auto_approver("reject"), "send_report")])
    run("modified", "json", ["send"], [ApprovalPolicy(owner_modifies(), "send_report")])
    run("auto", "json", ["send"], [ApprovalPolicy(auto_approver(), "*")])
    matrix = HERE / "matrix"
    matrix.mkdir(exist_ok=True)
    for scenario, sample, policy in (
            ("approved", "send", [ApprovalPolicy(owner(), "send_report")]),
            ("missing", "send", None),
            ("rejected-not-sent", "send", [ApprovalPolicy(owner_rejects(), "send_report")]),
            ("errored-tool", "send-fails", None)):
        run(scenario, "json", [sample], policy, matrix)
    record_handoff(matrix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
