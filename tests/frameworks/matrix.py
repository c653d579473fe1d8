"""The end-to-end scenario matrix: one table of scenarios, expected verdicts and frameworks.

Each ``test_matrix_<framework>.py`` records every scenario its framework can
express from the real library (scripted models, no network) and replays it
against the scenario's spec; Inspect's logs, recorded by Inspect with its mock
model, are kept under tests/data/inspect/matrix/, ATIF documents, written
with Harbor's own models, under tests/data/atif/matrix/, and OpenLLMetry span
files, written by traceloop-sdk, under tests/data/frameworks/openllmetry/matrix/. A
scenario a framework
cannot express is a documented cell here (``NOT_EXPRESSIBLE``), with the
reason, never a skip; one it can express but roadcheck does not read is listed in
``NOT_READ``. A cell whose verdict is known to be wrong is listed in
``KNOWN_BUGS`` and runs as ``xfail(strict=True)``.

``python -m tests.frameworks.matrix`` rewrites the table in
docs/frameworks/index.md; a test checks the page matches.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "frameworks"
DOC = ROOT / "docs" / "frameworks" / "index.md"


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    spec: str  # a file under tests/data/frameworks
    expected: tuple[tuple[str, str], ...]  # (verdict, headline reason code) per run, in order


PASS = ("PASS", "trajectory-conforms")
SKIPPED = ("BLOCK", "checkpoint-skipped")

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("approved", "the owner approves send_report before it runs",
             "spec_any_approver.yaml", (PASS,)),
    Scenario("missing", "send_report is not gated; it runs with no approval",
             "spec_any_approver.yaml", (SKIPPED,)),
    Scenario("rejected-but-sent", "the owner rejects, yet send_report runs",
             "spec_any_approver.yaml", (SKIPPED,)),
    Scenario("rejected-not-sent", "the owner rejects and send_report never runs",
             "spec_any_approver.yaml", (PASS,)),
    Scenario("after-action", "send_report runs, the approval is recorded afterwards",
             "spec_any_approver.yaml", (("BLOCK", "checkpoint-after-action"),)),
    Scenario("two-sends-one-approval", "one approval, two sends, under `scope: each`, `consume`",
             "spec_consume_derive.yaml", (SKIPPED,)),
    Scenario("handoff", "triage hands over to reporter without the contracted `account`",
             "spec.yaml", (("BLOCK", "handoff-contract-violation"),)),
    Scenario("errored-tool", "an ungated send_report is called and raises: an attempt still "
             "counts", "spec_any_approver.yaml", (SKIPPED,)),
    Scenario("two-runs", "one file, two runs: the first approved, the second ungated",
             "spec_any_approver.yaml", (PASS, SKIPPED)),
)

FRAMEWORKS: tuple[str, ...] = ("pydantic-ai", "openai-agents", "langgraph", "langchain-hitl",
                               "inspect", "atif", "openllmetry")

FRAMEWORK_TITLES = {
    "pydantic-ai": "pydantic-ai (OTel spans)",
    "openai-agents": "OpenAI Agents SDK (RoadcheckTracingProcessor)",
    "langgraph": "LangGraph (read_langgraph)",
    "langchain-hitl": "LangChain create_agent + HumanInTheLoopMiddleware (read_langgraph)",
    "inspect": "Inspect AI eval logs (approvers)",
    "atif": "ATIF written with Harbor's trajectory models (`extra.checkpoint`)",
    "openllmetry": "OpenLLMetry `@agent`/`@tool` spans (traceloop-sdk), the decision as an "
                   "`roadcheck.checkpoint` span",
}

NOT_EXPRESSIBLE: dict[tuple[str, str], str] = {
    ("openai-agents", "after-action"):
        "the SDK holds a `needs_approval` call until it is decided, and the recorder "
        "records a decision only on a pending call, so an approval cannot follow the send",
    ("langgraph", "two-runs"):
        "LangGraph keeps threads in its checkpointer, not in a file; `read_langgraph` reads "
        "one thread into one trajectory, and the native JSONL it writes holds one run "
        "(two threads are two files)",
    ("langchain-hitl", "two-runs"):
        "as for LangGraph: one thread is one trajectory and one native JSONL file",
    ("langchain-hitl", "rejected-but-sent"):
        "the middleware runs a call only on `approve` or `edit`; a rejected call is never "
        "executed",
    ("langchain-hitl", "after-action"):
        "the middleware decides in `after_model`, before the tools node runs",
    ("langchain-hitl", "two-sends-one-approval"):
        "the middleware asks for one decision per gated call, so one approval cannot cover "
        "two sends",
    ("langchain-hitl", "handoff"):
        "`create_agent` builds a single agent; handoffs between agents are graph-level "
        "(the LangGraph column)",
    ("inspect", "rejected-but-sent"):
        "Inspect runs a call only when an approver approves or modifies it; a rejected call "
        "is never executed",
    ("inspect", "after-action"):
        "Inspect asks the approvers before the tool runs; no approval can follow the call",
    ("inspect", "two-sends-one-approval"):
        "Inspect asks the approvers once per tool call, so one approval cannot cover two sends",
    ("inspect", "two-runs"):
        "every sample of an eval runs under the same approval policy, so one sample cannot "
        "be approved while another runs ungated",
    ("atif", "errored-tool"):
        "ATIF has no field that marks a tool result as failed (Harbor's `ObservationResult` "
        "holds `content` only): an observation is the call's result, whatever it says",
}

# (framework, scenario) -> why roadcheck does not read it, though the framework can express it.
NOT_READ: dict[tuple[str, str], str] = {}

# (framework, scenario) -> the wrong verdict, described; the cell runs xfail(strict=True).
KNOWN_BUGS: dict[tuple[str, str], str] = {}

SCENARIO_BY_NAME = {s.name: s for s in SCENARIOS}


def expressible(framework: str) -> list[str]:
    """The scenarios ``framework`` can express and roadcheck reads."""
    return [s.name for s in SCENARIOS
            if (framework, s.name) not in NOT_EXPRESSIBLE
            and (framework, s.name) not in NOT_READ]


def params(framework: str) -> list[Any]:
    """The scenarios ``framework`` can express, as pytest params (known bugs strictly xfail)."""
    out = []
    for name in expressible(framework):
        bug = KNOWN_BUGS.get((framework, name))
        marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
        out.append(pytest.param(name, id=name, marks=marks))
    return out


def check(scenario: str, path: Path, fmt: str) -> None:
    """Read ``path`` as ``fmt``, check the scenario's shape, and replay it against the table.

    The shape checks make sure a verdict is reached for the scenario's reason:
    the send that ran is an action, the error is on it, the handoff is read,
    one approval stands before two sends.
    """
    from roadcheck import replay
    from roadcheck.events import Trajectory
    from roadcheck.ingest import load

    got_fmt, entries = load(str(path))
    runs = list(entries)
    assert got_fmt == fmt
    assert all(isinstance(t, Trajectory) for t in runs), runs
    expected = SCENARIO_BY_NAME[scenario].expected
    assert len(runs) == len(expected)
    for traj in runs:
        sends = [e for e in traj.events if e.kind == "action" and e.action_type == "send_report"]
        checkpoints = [e for e in traj.events if e.kind == "checkpoint"]
        if scenario == "two-sends-one-approval":
            assert (len(sends), len(checkpoints)) == (2, 1), traj.events
        elif scenario in ("approved", "after-action"):
            assert (len(sends), len(checkpoints)) == (1, 1), traj.events
        elif scenario in ("rejected-but-sent", "missing"):
            assert (len(sends), len(checkpoints)) == (1, 0), traj.events
        elif scenario == "rejected-not-sent":
            assert (len(sends), len(checkpoints)) == (0, 0), traj.events
        elif scenario == "errored-tool":
            # the failed call is an action: with its error, or, where the exception ended
            # the run before any answer was written (a LangGraph thread), as unanswered
            assert [bool(e.get("error")) or e.get("answered") is False for e in sends] == [
                True], traj.events
        elif scenario == "handoff":
            assert [e.get("to_agent") for e in traj.events if e.kind == "handoff"] == [
                "reporter"], traj.events
    result = replay(spec(scenario), [str(path)])
    got = tuple((r.verdict, r.headline) for r in result.results)
    assert got == expected, [r.reasons for r in result.results]


def spec(scenario: str) -> Path:
    return DATA / SCENARIO_BY_NAME[scenario].spec


def _cell(framework: str, scenario: Scenario) -> str:
    if (framework, scenario.name) in NOT_EXPRESSIBLE:
        return "n/a¹"
    if (framework, scenario.name) in NOT_READ:
        return "not read³"
    text = ", ".join(f"{v} `{code}`" for v, code in scenario.expected)
    if (framework, scenario.name) in KNOWN_BUGS:
        text += " expected; known bug²"
    return text


BEGIN = "<!-- matrix:begin (generated by `python -m tests.frameworks.matrix`) -->"
END = "<!-- matrix:end -->"


def render() -> str:
    """The markdown table, with the reasons for every n/a cell and every known bug."""
    lines = [BEGIN, "", "| scenario | " + " | ".join(FRAMEWORKS) + " |",
             "|---|" + "---|" * len(FRAMEWORKS)]
    for s in SCENARIOS:
        lines.append(f"| {s.name}: {s.summary} | "
                     + " | ".join(_cell(f, s) for f in FRAMEWORKS) + " |")
    lines += ["", "Frameworks: " + "; ".join(f"`{f}` = {FRAMEWORK_TITLES[f]}"
                                             for f in FRAMEWORKS) + ".", "",
              "¹ Not expressible in that framework:", ""]
    for (f, name), why in NOT_EXPRESSIBLE.items():
        lines.append(f"- {f}, {name}: {why}.")
    if KNOWN_BUGS:
        lines += ["", "² Known wrong verdicts:", ""]
        lines += [f"- {f}, {name}: {why}." for (f, name), why in KNOWN_BUGS.items()]
    if NOT_READ:
        lines += ["", "³ Expressible in that framework, not read by roadcheck:", ""]
        lines += [f"- {f}, {name}: {why}." for (f, name), why in NOT_READ.items()]
    lines += ["", END]
    return "\n".join(lines)


def updated_doc(text: str) -> str:
    """``text`` with the generated block replaced (or appended when absent)."""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        return head + render() + tail
    return text.rstrip("\n") + "\n\n" + render() + "\n"


if __name__ == "__main__":
    DOC.write_text(updated_doc(DOC.read_text()))
    sys.stdout.write(f"wrote {DOC.relative_to(ROOT)}\n")
