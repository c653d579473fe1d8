"""The workflow spec: ordered phases, each a producer and a gate written in code.

A workflow is a JSON or YAML document declared by the structs of
:mod:`roadcheck.documents.workflow` and read by the one document loader. Unknown
keys are refused at every depth, every gate is one of the kinds in
:data:`GATE_KINDS` (a natural-language "please check" has no place to go), a
declared param may not take the name of a built-in placeholder, and a review
phase whose role equals the role of the phase it reviews is rejected here,
before anything runs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from string import Formatter
from typing import Any

from roadcheck.documents.loader import Problem, convert, problems
from roadcheck.documents.workflow import (
    GATE_KINDS,
    AcceptGate,
    AgentProducer,
    AgentSpec,
    Budget,
    CallableGate,
    CommandGate,
    EffectSpec,
    Gate,
    Param,
    Phase,
    SchemaGate,
    ScoreGate,
    WorkflowSpec,
)
from roadcheck.errors import SpecError
from roadcheck.harness._prompts import PROMPT_ONLY, prompt_names

__all__ = [
    "GATE_KINDS",
    "PLACEHOLDERS",
    "AcceptGate",
    "AgentProducer",
    "AgentSpec",
    "Budget",
    "CallableGate",
    "CommandGate",
    "EffectSpec",
    "Gate",
    "Param",
    "Phase",
    "SchemaGate",
    "ScoreGate",
    "WorkflowSpec",
    "accept_available",
    "load_workflow_spec",
    "parse_workflow_spec",
]

#: Placeholders every producer and gate argument may use, besides the workflow's params.
#: Their values come from the engine; a param may never take one of these names.
PLACEHOLDERS = frozenset({"run_dir", "run_id", "artifact", "input", "python", "spec_dir",
                          "phase"})


def accept_available() -> bool:
    """True when the accept capability is installed."""
    return importlib.util.find_spec("roadcheck.acceptance") is not None


def _placeholders(args: list[str]) -> set[str]:
    names: set[str] = set()
    for arg in args:
        try:
            parsed = list(Formatter().parse(arg))
        except ValueError as exc:
            raise ValueError(f"bad template {arg!r}: {exc}") from None
        names.update(name for _, name, _, _ in parsed if name is not None)
    return names


def _tag_gates(doc: Any) -> tuple[Any, list[Problem]]:
    """A copy of the document whose gates carry their kind as the union's tag.

    A gate that cannot be tagged is left as written and its problem returned, so
    the converter can report whichever problem of the document comes first.
    """
    if not isinstance(doc, Mapping) or not isinstance(doc.get("phases"), list):
        return doc, []
    phases = []
    found: list[Problem] = []
    for i, phase in enumerate(doc["phases"]):
        gate = phase.get("gate") if isinstance(phase, Mapping) else None
        at = ("phases", i, "gate")
        if isinstance(gate, str):
            found.append(Problem(at, "a gate is an object (command, schema, callable, score "
                                     "or accept), not text: a natural-language check is not "
                                     "a gate"))
        elif isinstance(gate, Mapping):
            kinds = [k for k in GATE_KINDS if k in gate]
            if "kind" in gate:
                found.append(Problem(at, "unknown key 'kind' (the gate's one kind key names "
                                         "it)", (*at, "kind")))
            elif not kinds:
                keys = ", ".join(repr(k) for k in gate) or "nothing"
                found.append(Problem(at, f"unknown gate kind ({keys}); a gate is one of "
                                         f"{', '.join(GATE_KINDS)}: code, never a request to "
                                         "check"))
            elif len(kinds) > 1:
                found.append(Problem(at, f"a gate has one kind, got {', '.join(kinds)}"))
            else:
                phase = {**phase, "gate": {"kind": kinds[0], **gate}}
        phases.append(phase)
    return {**doc, "phases": phases}, found


def _check_budget(budget: Budget | None, at: tuple[str | int, ...]) -> None:
    if budget is not None and budget.tokens is None and budget.cost is None:
        raise Problem(at, "a budget sets tokens, cost or both")


def _check_agent(agent: AgentSpec, names: frozenset[str], at: tuple[str | int, ...]) -> None:
    """One task prompt, at most one system prompt, known placeholders, no tool twice."""
    if (agent.task is None) == (agent.task_file is None):
        raise Problem(at, "an agent has one task prompt: task (inline) or task_file")
    if agent.system is not None and agent.system_file is not None:
        raise Problem((*at, "system_file"), "an agent has at most one system prompt: system "
                      "(inline) or system_file")
    for key in ("system", "task"):
        text = getattr(agent, key)
        unknown = set() if text is None else prompt_names(text) - names - PROMPT_ONLY
        if unknown:
            raise Problem((*at, key), "unknown placeholder(s) "
                          f"{', '.join('{' + u + '}' for u in sorted(unknown))} (write "
                          "{{name}} for the text {name})")
    if len(set(agent.tools)) != len(agent.tools):
        raise Problem((*at, "tools"), "a tool is listed twice")
    _check_budget(agent.budget, (*at, "budget"))


def _coherent(spec: WorkflowSpec) -> None:
    _check_budget(spec.budget, ("budget",))
    for name in spec.declarations:
        if name in PLACEHOLDERS:
            raise Problem(("params", name),
                          f"{name!r} is a built-in placeholder; a param may not take its name "
                          f"(built-in: {', '.join(sorted(PLACEHOLDERS))})", ("params",))
    by_name: dict[str, Phase] = {}
    for i, phase in enumerate(spec.phases):
        at = ("phases", i)
        if phase.name in by_name:
            raise Problem((*at, "name"), f"two phases are named {phase.name!r}")
        if phase.reviews is not None:
            reviewed = by_name.get(phase.reviews)
            if reviewed is None:
                where = ("a later phase" if any(p.name == phase.reviews for p in spec.phases)
                         else "no phase")
                raise Problem((*at, "reviews"),
                              f"phase {phase.name!r} reviews {phase.reviews!r}, which names "
                              f"{where}; a review must follow the phase it reviews")
            if reviewed.role == phase.role:
                raise Problem((*at, "reviews"),
                              f"role guard: phase {phase.name!r} reviews {reviewed.name!r} "
                              f"under the same role {phase.role!r}; a reviewer must hold a "
                              "different role")
        if isinstance(phase.gate, AcceptGate) and not accept_available():
            raise Problem((*at, "gate"), f"phase {phase.name!r}: gate kind 'accept' is not "
                          "available in this installation (roadcheck.acceptance is missing)")
        if isinstance(phase.producer, AgentProducer):
            _check_agent(phase.producer.agent, PLACEHOLDERS | spec.declared_params,
                         (*at, "producer", "agent"))
        try:
            used = _placeholders(phase.template_args())
        except ValueError as exc:
            raise Problem(at, str(exc)) from None
        unknown = used - PLACEHOLDERS - spec.declared_params
        if unknown:
            raise Problem(at, f"phase {phase.name!r} uses unknown placeholder(s) "
                              f"{', '.join('{' + u + '}' for u in sorted(unknown))}")
        by_name[phase.name] = phase


def parse_workflow_spec(doc: Any, source: str | None = None) -> WorkflowSpec:
    """Validate a decoded workflow document; every problem is one :class:`SpecError` line."""
    if not isinstance(doc, dict):
        raise SpecError(f"a workflow must be an object, got {type(doc).__name__}", path=source)
    with problems("workflow", source, SpecError):
        tagged, found = _tag_gates(doc)
        spec = convert(tagged, WorkflowSpec, found)
        _coherent(spec)
    return spec


def load_workflow_spec(path: str | Path) -> WorkflowSpec:
    """Read a JSON or YAML workflow file."""
    from roadcheck.documents.loader import decode, read_document

    source = str(path)
    data, _ = read_document(source, "workflow", SpecError)
    return parse_workflow_spec(decode(data, source, "workflow", SpecError), source)
