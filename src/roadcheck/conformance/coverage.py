"""What a spec's rules met in a batch of runs: per rule, how often it was reached, matched
and failed; the names it guards that never occur; irreversible actions no rule guards.

Each kind of rule is one entry of :data:`RULE_KINDS`: a function from the compiled spec
to one :class:`Probe` per rule, which says which events reach the rule, which of them it
matches, which findings of a verdict are its failures, and which names it expects to
see. A new kind of rule is covered by adding its entry; the counting, the report and
``roadcheck spec check`` read the table and nothing else.

The probes ask the spec's own compiled selectors (:class:`CompiledSpec`), so an event
reaches a rule here exactly when the engine would take it for that rule.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from roadcheck.conformance.engine import CompiledSpec, _Rule
from roadcheck.conformance.result import ReplayResult
from roadcheck.events import Event
from roadcheck.findings import Finding
from roadcheck.reasons import Reason

__all__ = ["RULE_KINDS", "Coverage", "Probe", "RuleCount", "RuleKind", "destructive", "probes"]


def _never(_: Any) -> bool:
    return False


@dataclass(frozen=True)
class Probe:
    """One rule of a spec as coverage sees it."""

    #: Where the rule is declared: its key path in the spec (``mandatory_checkpoints.0``).
    loc: tuple[str | int, ...]
    #: The rule in a few words, for the report.
    label: str
    #: True when an event reaching this rule is an action the rule guards.
    guards: bool
    #: The events that reach the rule (the engine takes them for it).
    reaches: Callable[[Event], bool]
    #: Of the events seen, those the rule matches (its checkpoint recorded, its selector
    #: true); ``matched`` counts them.
    matches: Callable[[Event], bool] = _never
    #: The findings of a verdict that are this rule failing.
    fails: Callable[[Finding], bool] = _never
    #: A checkpoint id whose derived checkpoints count as matches.
    derived: str | None = None
    #: Which count must be above zero over a batch for the rule to be live:
    #: ``reached`` or ``matched``.
    live: str = "reached"
    #: The names the rule expects to occur: (what, name), ``("action_type", "Bash")``.
    names: tuple[tuple[str, str], ...] = ()
    #: A rule nested in another (a ``voided_by`` selector): shown, never unreachable.
    part: bool = False


@dataclass(frozen=True)
class RuleKind:
    """One kind of rule: its section of the spec and its probes."""

    section: str
    probes: Callable[[CompiledSpec], list[Probe]]


def _guard_names(rule: _Rule) -> tuple[tuple[str, str], ...]:
    """The action types a checkpoint rule names: plain ones, and those of its selectors."""
    out: list[tuple[str, str]] = []
    for g in rule.guarded:
        if isinstance(g, str):
            out.append(("action_type", g))
            continue
        want = g.get("action_type")
        if isinstance(want, str):
            out.append(("action_type", want))
        elif isinstance(want, dict) and "in" in want:
            out.extend(("action_type", w) for w in want["in"])
    out.append(("checkpoint_id", rule.cid))
    return tuple(out)


def _checkpoint_probes(c: CompiledSpec) -> list[Probe]:
    out: list[Probe] = []
    for rule in c.rules:
        names = frozenset(g for g in rule.guarded if isinstance(g, str))
        sels = tuple(rule.guard_selectors)
        cid = rule.cid

        def reaches(e: Event, names: frozenset[str] = names,
                    sels: tuple[Any, ...] = sels) -> bool:
            return e.kind == "action" and (e.data.get("action_type") in names
                                           or any(s(e) for s in sels))

        def matches(e: Event, cid: str = cid) -> bool:
            return e.kind == "checkpoint" and e.data.get("checkpoint_id") == cid

        def fails(f: Finding, cid: str = cid, names: frozenset[str] = names,
                  any_action: bool = bool(sels)) -> bool:
            return (f.code in _CHECKPOINT_FAILURES and f.location.checkpoint_id == cid
                    and (any_action or f.location.action_type in names))

        out.append(Probe(("mandatory_checkpoints", rule.index),
                         f"checkpoint '{cid}' before {rule.guard_text}", True, reaches,
                         matches, fails, derived=cid, names=_guard_names(rule)))
        for k, (sel, kind) in enumerate(rule.voiders):
            out.append(Probe(("mandatory_checkpoints", rule.index, "voided_by", k),
                             f"voids checkpoint '{cid}'", False,
                             _of_kind(kind), sel, part=True))
    return out


def _of_kind(kind: str | None) -> Callable[[Event], bool]:
    if kind is None:
        return lambda e: True
    return lambda e: e.kind == kind


def _derive_probes(c: CompiledSpec) -> list[Probe]:
    from roadcheck.selectors import compile_selector

    out: list[Probe] = []
    for i, d in enumerate(c.spec.derive):
        import msgspec

        when = msgspec.to_builtins(d.when)
        kind = when.get("event") if isinstance(when.get("event"), str) else None
        out.append(Probe(("derive", i), f"derives checkpoint '{d.checkpoint_id}'", False,
                         _of_kind(kind), compile_selector(when, checked=c.spec.checked),
                         live="matched"))
    return out


def _contract_probes(c: CompiledSpec) -> list[Probe]:
    out: list[Probe] = []
    for i, contract in enumerate(c.spec.handoff_contracts):
        border = (contract.from_agent, contract.to_agent)

        def reaches(e: Event, border: tuple[str, str] = border) -> bool:
            return (e.kind == "handoff" and e.data.get("from_agent") == border[0]
                    and e.data.get("to_agent") == border[1])

        def fails(f: Finding, border: tuple[str, str] = border) -> bool:
            return (f.code in _CONTRACT_FAILURES
                    and (f.location.from_agent, f.location.to_agent) == border)

        out.append(Probe(("handoff_contracts", i), f"handoff {border[0]}->{border[1]}", False,
                         reaches, reaches, fails,
                         names=(("agent", border[0]), ("agent", border[1]))))
    return out


def _gate_probes(section: str) -> Callable[[CompiledSpec], list[Probe]]:
    """The probes of one section of the rules on what actions may do: reached by the
    selector that triggers the rule (``when``, ``after``, ``source``), matched by the one
    that answers it (``require``, ``sink``; ``when`` for forbidden and limits), failed by
    a finding of its reason code that names its id."""
    from roadcheck.conformance.rules import pins

    def build(c: CompiledSpec) -> list[Probe]:
        out: list[Probe] = []
        for g in (g for g in c.gates.gates if g.kind == section):
            code, rid = g.code.value, g.id

            def fails(f: Finding, code: str = code, rid: str = rid) -> bool:
                return f.code == code and f.location.rule_id == rid

            first = pins(g.sels[0]) or ()
            out.append(Probe((section, int(g.at.partition(".")[2])), f"{section} '{rid}'",
                             section in ("forbidden", "limits"), g.first,
                             g.second or g.first, fails,
                             names=tuple(("action_type", t) for t in first)))
        return out

    return build


_CHECKPOINT_FAILURES = frozenset({Reason.CHECKPOINT_SKIPPED.value,
                                  Reason.CHECKPOINT_AFTER_ACTION.value})
_CONTRACT_FAILURES = frozenset({Reason.HANDOFF_CONTRACT_VIOLATION.value,
                                Reason.UNVERIFIED_CLAIM_CONSUMED.value})

#: Every kind of rule coverage knows, in the order of the spec's sections.
RULE_KINDS: tuple[RuleKind, ...] = (
    RuleKind("mandatory_checkpoints", _checkpoint_probes),
    RuleKind("derive", _derive_probes),
    RuleKind("handoff_contracts", _contract_probes),
    RuleKind("forbidden", _gate_probes("forbidden")),
    RuleKind("limits", _gate_probes("limits")),
    RuleKind("obligations", _gate_probes("obligations")),
    RuleKind("flows", _gate_probes("flows")),
)


def probes(compiled: CompiledSpec) -> list[Probe]:
    """The probes of every rule of the spec, section by section."""
    return [p for kind in RULE_KINDS for p in kind.probes(compiled)]


@dataclass(frozen=True)
class NumericCondition:
    """A ``gt``/``ge``/``lt``/``le`` condition on a path of an event's object, where the
    spec declares it."""

    #: The rule's place and selector role: ``forbidden.0.when``.
    at: str
    #: ``args``, ``result`` or ``payload``, and the dotted path inside it.
    obj: str
    path: str
    #: The condition as written: ``{"gt": 1000}``.
    shown: str
    #: The action types the selector names (empty: any event with the object).
    action_types: frozenset[str] = frozenset()

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.path.split(".")) if self.path not in ("", ".") else ()


_ORDERS = frozenset({"gt", "ge", "lt", "le"})


def numeric_conditions(compiled: CompiledSpec) -> tuple[NumericCondition, ...]:
    """Every numeric condition of the spec's selectors, each once."""
    import json

    from roadcheck.conformance.rules import rule_table

    found: dict[NumericCondition, None] = {}

    def visit(at: str, sel: Any, types: frozenset[str]) -> None:
        if not isinstance(sel, dict):
            return
        named = sel.get("action_type")
        if isinstance(named, str):
            types = frozenset({named})
        elif isinstance(named, dict) and isinstance(named.get("in"), list):
            types = frozenset(n for n in named["in"] if isinstance(n, str))
        for key, cond in sel.items():
            if key in ("all", "any"):
                for part in cond if isinstance(cond, list) else ():
                    visit(at, part, types)
            elif key == "not":
                visit(at, cond, types)
            elif key in ("args", "result", "payload") and isinstance(cond, dict):
                for path, want in cond.items():
                    for leaf in _leaves(want):
                        found[NumericCondition(at, key, path, json.dumps(
                            leaf, sort_keys=True, separators=(",", ":")), types)] = None

    for entry in rule_table(compiled.spec):
        for role, sels in entry.selectors:
            for sel in sels:
                visit(f"{entry.at}.{role}", sel, frozenset())
    return tuple(found)


def _leaves(cond: Any) -> list[dict[str, Any]]:
    """The numeric conditions inside one path's condition (through all/any/not)."""
    if not isinstance(cond, dict):
        return []
    out = [{k: v} for k, v in cond.items() if k in _ORDERS]
    for key in ("all", "any"):
        for part in cond.get(key) or ():
            out.extend(_leaves(part))
    if "not" in cond:
        out.extend(_leaves(cond["not"]))
    return out


def _count_names(e: Event, actions: Counter[str], checkpoints: Counter[str],
                 agents: Counter[str]) -> None:
    """Count the names one event carries: its agent, action type, checkpoint id, and the
    agents a handoff names."""
    if e.agent is not None:
        agents[e.agent] += 1
    if e.kind == "action":
        actions[str(e.data.get("action_type"))] += 1
    elif e.kind == "checkpoint":
        checkpoints[str(e.data.get("checkpoint_id"))] += 1
    elif e.kind == "handoff":
        for key in ("from_agent", "to_agent"):
            name = e.data.get(key)
            if isinstance(name, str) and name != e.agent:
                agents[name] += 1


def destructive(event: Event) -> bool:
    """An action that cannot be taken back: the native ``irreversible`` flag, or an MCP
    tool's ``destructiveHint`` annotation where the record carries it (``destructiveHint``
    or ``annotations.destructiveHint``)."""
    data = event.data
    if data.get("irreversible") is True or data.get("destructiveHint") is True:
        return True
    notes = data.get("annotations")
    return isinstance(notes, dict) and notes.get("destructiveHint") is True


@dataclass
class RuleCount:
    """What one rule met over a batch."""

    probe: Probe
    #: Events that reached it, and the trajectories with at least one.
    reached: int = 0
    runs: int = 0
    matched: int = 0
    #: Its failures (findings), and the trajectories with at least one.
    failed: int = 0
    failed_runs: int = 0

    @property
    def live(self) -> bool:
        """Reached (or matched, for a rule that is its selector) at least once."""
        return (self.matched if self.probe.live == "matched" else self.reached) > 0


@dataclass
class Coverage:
    """Counts over a batch, per rule and per name: a :class:`~roadcheck.conformance.panel.
    Watcher` of the trajectories a panel judges."""

    compiled: CompiledSpec
    rules: list[RuleCount] = field(default_factory=list)
    trajectories: int = 0
    #: How often each name occurred: action types, checkpoint ids (recorded or derived),
    #: agents.
    names: dict[str, Counter[str]] = field(default_factory=dict)
    #: Irreversible actions no rule guards: action type -> occurrences, and the first
    #: (path, seq) of each.
    unguarded: Counter[str] = field(default_factory=Counter)
    first_unguarded: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: Numeric conditions (``gt``, ``ge``, ``lt``, ``le``) that met a value that is no
    #: number: the condition -> [occurrences, the first value, its (path, seq)].
    non_numbers: dict[NumericCondition, list[Any]] = field(default_factory=dict)
    _pending: list[tuple[str, int]] = field(default_factory=list)
    _numeric: tuple[NumericCondition, ...] = ()
    _met: list[tuple[NumericCondition, Any, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rules = [RuleCount(p) for p in probes(self.compiled)]
        for what in ("action_type", "checkpoint_id", "agent"):
            self.names.setdefault(what, Counter())
        self._numeric = numeric_conditions(self.compiled)

    def _numbers(self, e: Event) -> None:
        from roadcheck.selectors import as_number, reach

        for cond in self._numeric:
            if cond.action_types and e.data.get("action_type") not in cond.action_types:
                continue
            held = e.data.get(cond.obj)
            if held is None:
                continue
            for value in reach(held, cond.parts):
                if as_number(value) is None and value is not None:
                    self._met.append((cond, value, e.seq))

    def events(self, events: Sequence[Event]) -> None:
        """Count one trajectory's events."""
        self.trajectories += 1
        actions, checkpoints, agents = (self.names[w] for w in
                                        ("action_type", "checkpoint_id", "agent"))
        guards = [r for r in self.rules if r.probe.guards]
        reached = [0] * len(self.rules)
        for e in events:
            _count_names(e, actions, checkpoints, agents)
            for i, count in enumerate(self.rules):
                p = count.probe
                if p.reaches(e):
                    reached[i] += 1
                if p.matches(e):
                    count.matched += 1
            if self._numeric:
                self._numbers(e)
            if e.kind == "action" and destructive(e) and not any(
                    r.probe.reaches(e) for r in guards):
                name = str(e.data.get("action_type"))
                self.unguarded[name] += 1
                if name not in self.first_unguarded:
                    self._pending.append((name, e.seq))
        for i, n in enumerate(reached):
            if n:
                self.rules[i].reached += n
                self.rules[i].runs += 1

    def judged(self, result: ReplayResult) -> None:
        """Count the failures of the verdict on the trajectory just counted."""
        for name, seq in self._pending:
            self.first_unguarded.setdefault(name, (result.path or result.id, seq))
        self._pending.clear()
        for cond, value, seq in self._met:
            seen = self.non_numbers.setdefault(cond, [0, value, (result.path or result.id, seq)])
            seen[0] += 1
        self._met.clear()
        for _, cid in result.derived:
            self.names["checkpoint_id"][cid] += 1
        for count in self.rules:
            p = count.probe
            if p.derived is not None:
                count.matched += sum(1 for _, cid in result.derived if cid == p.derived)
            failed = sum(1 for f in result.reasons if p.fails(f))
            if failed:
                count.failed += failed
                count.failed_runs += 1
