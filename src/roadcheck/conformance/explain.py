"""``roadcheck explain``: which rules looked at one event, which of their selectors
matched, and for each that did not, the condition that failed.

The trajectory is read as replay reads it, judged up to the event (the replayer's
state is what the rules knew then), and each rule's selectors are asked condition by
condition with the same predicates the compiled selectors are built from
(:mod:`roadcheck.selectors`). Each kind of rule is one entry of :data:`EXPLAINERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson

from roadcheck.conformance.engine import CompiledSpec, Replayer, _Rule, unlicensed
from roadcheck.conformance.result import ReplayResult
from roadcheck.conformance.spec import Spec
from roadcheck.errors import InputError, TraceError
from roadcheck.events import Event, field_verified

__all__ = ["EXPLAINERS", "Explanation", "RuleLook", "SelectorLook", "explain", "explain_event",
           "explain_selector"]

_MISSING = object()


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(missing)"
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


@dataclass(frozen=True)
class SelectorLook:
    """One selector asked about the event: each condition, held or not."""

    role: str
    shown: str
    matched: bool
    #: (held, "field: condition, the event has value"), in the selector's order; the
    #: first that failed decides, and the rest are not asked.
    conditions: tuple[tuple[bool, str], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "selector": self.shown, "matched": self.matched,
                "conditions": [{"held": ok, "condition": text} for ok, text in self.conditions]}


@dataclass
class RuleLook:
    """One rule that looked at the event."""

    loc: tuple[str | int, ...]
    label: str
    outcome: str
    selectors: list[SelectorLook] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"field": ".".join(str(p) for p in self.loc), "rule": self.label,
                "outcome": self.outcome, "selectors": [s.to_dict() for s in self.selectors],
                "details": list(self.details)}


@dataclass
class Explanation:
    """What the rules of a spec made of one event."""

    trajectory: str
    seq: int
    summary: str
    rules: list[RuleLook] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"trajectory": self.trajectory, "seq": self.seq, "event": self.summary,
                "rules": [r.to_dict() for r in self.rules]}


#: Selector keys asked as a whole: conditions on an object's paths, combinations, ``ok``.
_WHOLE = frozenset({"args", "result", "payload", "all", "any", "not", "ok"})


def explain_selector(role: str, sel: Mapping[str, Any], event: Event, *,
                     guarding: bool = True) -> SelectorLook:
    """Ask ``sel`` about ``event`` one condition at a time (``event`` first, as the
    compiled selector does; ``guarding`` as :func:`roadcheck.selectors.compile_selector`
    takes it)."""
    from roadcheck.selectors import _command, _condition, compile_selector, succeeded

    conditions: list[tuple[bool, str]] = []
    order = sorted(sel, key=lambda k: k != "event")
    for key in order:
        cond = sel[key]
        if key in _WHOLE:
            # a condition on an object's paths, a combination, ``ok``: asked as one
            held = compile_selector({key: cond}, checked=True, guarding=guarding)(event)
            value = (succeeded(event) if key == "ok" else
                     event.data.get(key, _MISSING) if key not in ("all", "any", "not")
                     else "(the whole event)")
            shown = value if isinstance(value, str) and key in ("all", "any", "not") \
                else _show(value)
            conditions.append((held, f"{key}: {_show(cond)}, the event has {shown}"))
            if not held:
                break
            continue
        value = event.kind if key == "event" else event.data.get(key, _MISSING)
        if value is _MISSING:
            held = False
        else:
            check = _command(cond, guarding) if key == "command" else _condition(cond)
            held = check(value)
        conditions.append((held, f"{key}: {_show(cond)}, the event has {_show(value)}"))
        if not held:
            break
    matched = all(ok for ok, _ in conditions)
    return SelectorLook(role, _show(dict(sel)), matched, tuple(conditions))


def _guards(rule: _Rule, event: Event) -> list[SelectorLook]:
    out = []
    for g in rule.guarded:
        sel = {"event": "action", "action_type": g} if isinstance(g, str) else {
            "event": "action", **g}
        out.append(explain_selector("must_precede", sel, event))
    return out


def _checkpoint_rules(spec: CompiledSpec, before: Replayer, event: Event) -> list[RuleLook]:
    blocked = {rule.index: why for rule, why in unlicensed(before, event)}
    out = []
    for rule in spec.rules:
        look = RuleLook(("mandatory_checkpoints", rule.index),
                        f"checkpoint '{rule.cid}' before {rule.guard_text}", "")
        if event.kind == "action":
            look.selectors = _guards(rule, event)
        for k, sel in enumerate(msgspec.to_builtins(v) for v in rule.doc.voided_by):
            look.selectors.append(explain_selector(f"voided_by.{k}", sel, event))
        st = before.states[rule.index]
        guarded = any(s.matched for s in look.selectors if s.role == "must_precede")
        if guarded:
            if rule.index in blocked:
                why = blocked[rule.index] or f"no checkpoint '{rule.cid}' before it"
                look.outcome = f"guarded action without a valid checkpoint: {why}"
            elif not rule.each and st.done:
                look.outcome = "guarded action; scope first: the first one was judged already"
            else:
                at = ", ".join(w for _, w in st.licences) or "a checkpoint this event derives"
                look.outcome = f"guarded action, licensed by checkpoint '{rule.cid}' at {at}"
        elif event.kind == "checkpoint" and event.data.get("checkpoint_id") == rule.cid:
            look.outcome = f"records checkpoint '{rule.cid}'"
            if rule.confirmed_by is not None:
                who = event.data.get("confirmed_by")
                ok = isinstance(who, str) and who in rule.confirmed_by
                look.details.append(f"confirmed_by {_show(who)} is "
                                    f"{'' if ok else 'not '}one of "
                                    f"{_show(sorted(rule.confirmed_by))}")
        elif any(s.matched for s in look.selectors if s.role.startswith("voided_by")):
            look.outcome = f"voids checkpoint '{rule.cid}'"
        elif event.kind in ("action", "checkpoint") or look.selectors:
            look.outcome = "not concerned"
        else:
            continue
        out.append(look)
    return out


def _derive_rules(spec: CompiledSpec, before: Replayer, event: Event) -> list[RuleLook]:
    out = []
    for i, d in enumerate(spec.spec.derive):
        look = RuleLook(("derive", i), f"derives checkpoint '{d.checkpoint_id}'", "")
        s = explain_selector("when", msgspec.to_builtins(d.when), event, guarding=False)
        look.selectors.append(s)
        look.outcome = (f"derives checkpoint '{d.checkpoint_id}' from this event" if s.matched
                        else "does not derive")
        out.append(look)
    return out


def _contracts(spec: CompiledSpec, before: Replayer, event: Event) -> list[RuleLook]:
    if event.kind != "handoff":
        return []
    border = (event.data.get("from_agent"), event.data.get("to_agent"))
    out = []
    for i, c in enumerate(spec.spec.handoff_contracts):
        look = RuleLook(("handoff_contracts", i), f"handoff {c.from_agent}->{c.to_agent}", "")
        if (c.from_agent, c.to_agent) != border:
            look.outcome = f"not this border ({border[0]}->{border[1]})"
            out.append(look)
            continue
        payload = event.data.get("payload") or {}
        missing = [f for f in c.required_fields if f not in payload]
        unverified = [f for f in c.required_fields if f in payload
                      and c.require_verified and not field_verified(payload[f])]
        look.details.extend(f"required field '{f}': "
                            + ("missing" if f in missing else "unverified" if f in unverified
                               else "present") for f in c.required_fields)
        look.outcome = ("contract violated" if missing or unverified else "contract satisfied")
        out.append(look)
    return out


def _gates(spec: CompiledSpec, before: Replayer, event: Event) -> list[RuleLook]:
    """The rules on what actions may do: each selector asked, and what the engine, fed
    this event now, would find (the guard's question)."""
    from roadcheck.conformance.spec import RULE_SELECTORS

    found = {g.id: f for g, f in before.would(event)}
    out = []
    for g in spec.gates.gates:
        section, _, i = g.at.partition(".")
        look = RuleLook((section, int(i)), f"{g.kind} '{g.id}'", "")
        for (role, _), sel in zip(RULE_SELECTORS[g.kind], g.sels, strict=True):
            look.selectors.append(explain_selector(
                role, sel, event, guarding=not (g.kind == "obligations" and role == "require")))
        hit = found.get(g.id)
        if hit is not None:
            look.outcome = f"{hit.code}: {hit.message}"
        elif any(s.matched for s in look.selectors):
            look.outcome = "matched; nothing to find here"
        else:
            look.outcome = "not concerned"
        out.append(look)
    return out


Explainer = Callable[[CompiledSpec, Replayer, Event], list[RuleLook]]
#: Every kind of rule explain knows, in the order of the spec's sections.
EXPLAINERS: tuple[Explainer, ...] = (_checkpoint_rules, _derive_rules, _contracts, _gates)


def _summary(event: Event) -> str:
    d = event.data
    name = {"action": "action_type", "checkpoint": "checkpoint_id", "message": "role"}.get(
        event.kind)
    text = event.kind + (f" {d.get(name)}" if name and d.get(name) is not None else "")
    if event.kind == "handoff":
        text += f" {d.get('from_agent')}->{d.get('to_agent')}"
    if event.agent is not None:
        text += f" by {event.agent}"
    if event.line is not None:
        text += f" (line {event.line})"
    return text


def explain_event(spec: Spec, events: Sequence[Event], seq: int, result: ReplayResult | None,
                  name: str) -> Explanation:
    """Explain the event at ``seq`` of ``events`` (a :class:`InputError` when none is)."""
    at = next((i for i, e in enumerate(events) if e.seq == seq), None)
    if at is None:
        raise InputError(f"--seq: no event has seq {seq} in {name} (its seqs run "
                         f"{events[0].seq}..{events[-1].seq})" if events else
                         f"--seq: {name} holds no event")
    compiled = CompiledSpec(spec)
    before = compiled.replayer()
    before.feed_all(list(events[:at]))
    event = events[at]
    out = Explanation(name, seq, _summary(event))
    for explainer in EXPLAINERS:
        out.rules.extend(explainer(compiled, before, event))
    if result is not None:
        found = [f for f in (*result.reasons, *result.warnings) if f.location.seq == seq]
        if found:
            out.rules.append(RuleLook(("verdict",), f"{result.verdict} of the trajectory",
                                      f"{len(found)} finding(s) at this event",
                                      details=[f"{f.code}: {f.message}" for f in found]))
    return out


class _Capture:
    """A watcher that keeps each trajectory's events and verdict (explain reads one file)."""

    def __init__(self) -> None:
        self.runs: list[tuple[list[Event], ReplayResult | None]] = []

    def events(self, events: Sequence[Event]) -> None:
        self.runs.append((list(events), None))

    def judged(self, result: ReplayResult) -> None:
        self.runs[-1] = (self.runs[-1][0], result)


def explain(spec: Spec, path: str, seq: int, *, input_format: str | None = None,
            run: str | None = None) -> Explanation:
    """Explain event ``seq`` of the trajectory in ``path`` (with ``run``, the run of
    that id, for a file that holds several); a file that cannot be read raises
    :class:`TraceError`."""
    from roadcheck.conformance.panel import Panel, judge_paths

    cap = _Capture()
    panel = Panel(spec, watchers=[cap])
    for (result,) in judge_paths(panel, [path], input_format=input_format):
        if result.verdict == "ERROR":
            raise TraceError(result.reasons[0].message, path=result.path or result.id)
    runs = [(events, r) for events, r in cap.runs if r is not None]
    if run is not None:
        runs = [(events, r) for events, r in runs if r.id == run]
        if not runs:
            raise InputError(f"--run: {path} holds no run {run!r}")
    if not runs:
        raise InputError(f"{path} holds no trajectory")
    if len(runs) > 1:
        ids = ", ".join(r.id for _, r in runs[:5] if r is not None)
        raise InputError(f"{path} holds {len(runs)} runs ({ids}...); name one with --run")
    events, result = runs[0]
    return explain_event(spec, events, seq, result, result.id if result else path)
