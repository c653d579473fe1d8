"""The replay engine: one forward pass over a trajectory's events.

State is kept per trajectory and per rule, never as whole-log tables, so the
same :class:`Replayer` can be fed events as they arrive (:meth:`Replayer.feed`)
and asked for a verdict at the end (:meth:`Replayer.finish`).

The verdict never reads ``task_success``: the final event is recorded for
contrast and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, cast

import msgspec
import orjson

from roadcheck.conformance import rules as _gates
from roadcheck.conformance.result import Finding, ReplayResult, TrajectoryStats
from roadcheck.conformance.rules import (
    COMMAND_SHOWN,
    RuleEntry,
    action_text,
    evidence,
    evidence_fields,
    rule_table,
)
from roadcheck.conformance.spec import Spec, bound_parts, guarded_actions
from roadcheck.documents.approval import KEY_ID_PREFIX
from roadcheck.documents.spec import CheckpointRuleDoc, HandoffContractDoc
from roadcheck.events import EVENT_KINDS, Event, args_digest, field_verified
from roadcheck.findings import NOWHERE, Location, Severity
from roadcheck.reasons import Reason, propagated
from roadcheck.selectors import Selector, compile_selector

__all__ = ["COMMAND_SHOWN", "CompiledSpec", "Replayer", "error_result"]

_PASS_DETAIL = ("every mandatory checkpoint came before its guarded action; "
                "every contracted handoff was satisfied")


def _quote(names: Iterable[str]) -> str:
    return "[" + ", ".join(f"'{n}'" for n in names) + "]"


def _show(value: Any) -> str:
    """A value as compact, deterministic JSON text, for messages."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _pinned_kind(selector: Any) -> str | None:
    """The event type a selector requires (``event: message``), or None when it pins none."""
    kind = selector.get("event") if isinstance(selector, dict) else None
    return kind if isinstance(kind, str) else None


Hooks = tuple[list[tuple[int, list[Selector]]], list[tuple[Selector, str]]]
#: A handoff as messages name it: (from agent, to agent, seq, line).
_Border = tuple[str, str, int, "int | None"]



def _unsigned(cid: str, key_id: str, event: Event) -> str | None:
    """Why a checkpoint confirmed by the key ``key_id`` does not count (its signed approval
    is missing, forged, for another call or expired), or None."""
    from roadcheck.evidence.approval import approval_problem

    return approval_problem(event.data.get("approval"), key_id=key_id, checkpoint_id=cid,
                            call=event.data, at=event.ts)

class _Rule:
    """A mandatory checkpoint, compiled: what it guards and what voids it."""

    __slots__ = ("binds", "cid", "confirmed_by", "consume", "doc", "each", "guard_selectors",
                 "guard_text", "guarded", "index", "key", "never_ran", "void_pins",
                 "voiders", "warn")

    def __init__(self, index: int, rule: CheckpointRuleDoc, *, checked: bool) -> None:
        self.index = index
        #: Where the spec declares it, as reports name it.
        self.key = f"mandatory_checkpoints.{index}"
        #: The rule as the spec document declares it.
        self.doc = rule
        self.cid = rule.checkpoint_id
        #: What it guards: action types, and action selectors as plain mappings.
        self.guarded: tuple[str | dict[str, Any], ...] = tuple(
            g if isinstance(g, str) else msgspec.to_builtins(g) for g in guarded_actions(rule))
        self.guard_selectors = [compile_selector(g, checked=checked, guarding=True)
                                for g in self.guarded
                                if not isinstance(g, str)]
        self.each = rule.scope == "each"
        self.consume = rule.consume
        self.confirmed_by = frozenset(rule.confirmed_by) if rule.confirmed_by is not None else None
        self.binds = bound_parts(rule.binds)
        #: ``severity: warn``: its findings are warnings.
        self.warn = rule.severity == "warn"
        # (selector, the event type it pins or None), so the engine can skip by type.
        voided_by = [msgspec.to_builtins(s) for s in rule.voided_by]
        self.voiders = [(compile_selector(s, checked=checked, guarding=True), _pinned_kind(s))
                        for s in voided_by]
        #: The action types each voiding selector names (None: it names none).
        self.void_pins = [_gates.pins(s) for s in voided_by]

        shown = [g if isinstance(g, str) else _show(g) for g in self.guarded]
        self.guard_text = f"'{shown[0]}'" if len(shown) == 1 else _quote(shown)
        #: The note of a trajectory in which no guarded action ran (the same every time).
        self.never_ran = Finding("note", f"checkpoint '{self.cid}': guarded action "
                                 f"{self.guard_text} never ran; nothing to gate",
                                 Location(checkpoint_id=self.cid), "note")


class CompiledSpec:
    """A spec turned into lookup tables for the hot path; build once, replay many."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.rules = [_Rule(i, r, checked=spec.checked)
                      for i, r in enumerate(spec.mandatory_checkpoints)]
        self.by_action: dict[str, list[_Rule]] = {}
        self.by_checkpoint: dict[str, list[_Rule]] = {}
        #: Rules that guard actions through a selector (``must_precede: {command: ...}``).
        self.by_selector: list[tuple[Selector, _Rule]] = []
        for rule in self.rules:
            for action in rule.guarded:
                if isinstance(action, str):
                    self.by_action.setdefault(action, []).append(rule)
            self.by_selector.extend((sel, rule) for sel in rule.guard_selectors)
            self.by_checkpoint.setdefault(rule.cid, []).append(rule)
        #: Per action type, the entries of ``by_selector`` whose selector names it (with
        #: those that name no action type), and for any other type those alone: a selector
        #: that names an ``action_type`` matches no other.
        self.selecting: dict[str, list[tuple[Selector, _Rule]]] = {}
        self.selecting_any: list[tuple[Selector, _Rule]] = []
        self._index_selectors()
        self.contracts = {(c.from_agent, c.to_agent): c for c in spec.handoff_contracts}
        # Per receiving agent, the contracted borders that must have been crossed before it
        # runs a guarded action.
        self.contracts_to: dict[str, list[tuple[str, str]]] = {}
        #: Each contracted border with the warning of a trajectory that never crossed it,
        #: and where the spec declares its contract.
        self.never_crossed = [(border, Finding(
            Reason.CONTRACTED_HANDOFF_ABSENT,
            f"the contracted handoff {border[0]}->{border[1]} never happened in this "
            "trajectory; its contract was never checked",
            Location(from_agent=border[0], to_agent=border[1]), "warn"),
            f"handoff_contracts.{i}") for i, border in enumerate(self.contracts)]
        for border in self.contracts:
            self.contracts_to.setdefault(border[1], []).append(border)
        #: The guarded action names, for messages.
        self.guard_text = _quote(sorted(self.by_action) + sorted(
            {_show(g) for r in self.rules for g in r.guarded if not isinstance(g, str)}))
        when = [(d.checkpoint_id, msgspec.to_builtins(d.when)) for d in spec.derive]
        derive = [(compile_selector(sel, checked=spec.checked), cid, _pinned_kind(sel))
                  for cid, sel in when]
        # Per event type, the voiding selectors and derive rules that can match it: most
        # selectors pin ``event``, and the hot path should not call them on other events.
        self.hooks: dict[str, Hooks] = {}
        for kind in (*EVENT_KINDS, None):
            voiding = [(r.index, [sel for sel, k in r.voiders if k is None or kind is None
                                  or k == kind]) for r in self.rules]
            self.hooks[kind or ""] = (
                [(i, sels) for i, sels in voiding if sels],
                [(sel, cid) for sel, cid, k in derive if k is None or kind is None or k == kind],
            )
        # Most specs select nothing; the hot path skips the selector hooks entirely then.
        self.selects = any(v or d for v, d in self.hooks.values())
        #: For an action, per action type some selector names, the hooks that can match it;
        #: for another type, those whose selectors name none.
        self.action_hooks: dict[str, Hooks] = {}
        derive_pins = [_gates.pins(sel) for _, sel in when]
        named = {t for r in self.rules for p in r.void_pins if p for t in p}
        named.update(t for p in derive_pins if p for t in p)
        for name in (*sorted(named), None):
            voiding = [(r.index, [sel for (sel, k), p in zip(r.voiders, r.void_pins, strict=True)
                                  if k in (None, "action") and (p is None or name in p)])
                       for r in self.rules]
            hooks = ([(i, sels) for i, sels in voiding if sels],
                     [(sel, cid) for (sel, cid, k), p in zip(derive, derive_pins, strict=True)
                      if k in (None, "action") and (p is None or name in p)])
            if name is None:
                self.action_hooks_other = hooks
            else:
                self.action_hooks[name] = hooks
        #: The forbidden, limits, obligations and flows rules, in that order.
        self.gates = _gates.GateTable(_gates.compile_gates(spec))
        #: How many of them (0 for most specs: the hot path then skips them).
        self.gate_count = len(self.gates)
        #: Where the spec declares each of them, as reports name it (``forbidden.0``).
        self.gate_keys = tuple(g.at for g in self.gates.gates)
        #: The objects of an event (``args``, ``result``, ``payload``) some rule reads: a
        #: live session must keep them for later events to be judged as replay would.
        self.reads = _gates.objects_read(rule_table(spec), self.gates)
        #: The checkpoint ids those rules name in ``unless``.
        self.unless_ids = frozenset(g.unless for g in self.gates if g.unless is not None)
        #: No rule reads more of an event than its type's own fields: a reader need not
        #: keep the free text (a tool's output, a message) for this spec.
        self.typed = not self.selects and not self.by_selector and not self.gates
        self._no_actions: dict[str, Finding] = {}

    def replayer(self, *, locate_messages: bool = False) -> Replayer:
        """A :class:`Replayer` of this spec, for one trajectory (a spec that also feeds
        other judges the same events, as ``roadcheck diff`` does, returns its own)."""
        return Replayer(self, locate_messages=locate_messages)

    def hooks_for(self, event: Event) -> Hooks:
        """The voiding selectors and derive rules that can match this event."""
        if event.kind == "action":
            return self.action_hooks.get(event.data["action_type"], self.action_hooks_other)
        return self.hooks.get(event.kind) or self.hooks[""]

    def _index_selectors(self) -> None:
        named: list[tuple[int, tuple[str, ...], tuple[Selector, _Rule]]] = []
        at = 0
        for rule in self.rules:
            sels = [g for g in rule.guarded if not isinstance(g, str)]
            for doc, sel in zip(sels, rule.guard_selectors, strict=True):
                pins = _gates.pins(doc)
                if pins is None:
                    self.selecting_any.append((sel, rule))
                    named.append((at, (), (sel, rule)))
                else:
                    named.append((at, pins, (sel, rule)))
                at += 1
        for name in dict.fromkeys(t for _, pins, _ in named for t in pins):
            self.selecting[name] = [entry for _, pins, entry in named
                                    if not pins or name in pins]

    def selectors_for(self, action_type: str) -> list[tuple[Selector, _Rule]]:
        """The entries of ``by_selector`` that can match an action of this type, in order."""
        return self.selecting.get(action_type, self.selecting_any)

    @property
    def rule_table(self) -> tuple[RuleEntry, ...]:
        """Every rule of the spec with its id, kind, place and selectors, for tools."""
        return rule_table(self.spec)

    def no_actions(self, source: str) -> Finding:
        """The warning of a trajectory read as ``source`` that records no tool call."""
        found = self._no_actions.get(source)
        if found is None:
            found = self._no_actions[source] = Finding(
                Reason.NO_ACTIONS_RECORDED,
                f"the trajectory (read as {source}) records no tool call at all, yet the spec "
                f"guards {self.guard_text}; a reader that found no call is no evidence that "
                "none was made", NOWHERE, "warn")
        return found


#: Where an action stands beyond its seq and line: its call id, span id and command
#: (shortened), each None when the record has none.
_Evidence = tuple[str | None, str | None, str | None]
#: A guarded action that ran without a licence: seq, action, where, why, voided by, line,
#: evidence.
_Unlicensed = tuple[int, str, str, str, int | None, int | None, _Evidence]

#: The formats whose events carry the line of the file they were read from: the native
#: format, and the JSON-lines sessions of Claude Code and Codex (each event the line of
#: its entry).
FILE_LINE_SOURCES = frozenset({"native", "claude-code", "codex"})


_evidence = evidence
_action_text = action_text
_evidence_fields = evidence_fields


class _RuleState:
    """Per-trajectory state of one mandatory checkpoint rule."""

    __slots__ = ("bound", "done", "failures", "last_void", "licences", "pending", "rule",
                 "seen_action", "skipped", "void_seq", "why_not")

    def __init__(self, rule: _Rule) -> None:
        self.rule = rule
        # Valid checkpoints not yet consumed or voided: (seq, where).
        self.licences: list[tuple[int, str]] = []
        # Guarded actions with no licence, awaiting a later checkpoint:
        # (seq, action, where, why, the seq of the voiding event behind why, line).
        self.pending: list[_Unlicensed] = []
        # Guarded actions with no licence whose window a voiding event closed: a later
        # checkpoint answers something else, so they stay skipped (never "after action").
        self.skipped: list[_Unlicensed] = []
        # Where the latest voiding event was, for messages ("" before the first one).
        self.last_void = ""
        # The seq of the voiding event the current ``why_not`` or ``last_void`` names.
        self.void_seq: int | None = None
        self.failures: list[Finding] = []
        self.done = False  # scope first: the first guarded action was judged
        self.seen_action = False
        # Why no licence is available right now (voided, consumed, wrong confirmer), for messages.
        self.why_not = ""
        # A rule with ``binds``: licence seq -> the call its checkpoint names.
        self.bound: dict[int, tuple[Any, ...]] = {}


class Replayer:
    """Judge one trajectory, fed event by event."""

    #: The action type of each irreversible action no rule guarded, in order (rare: a
    #: trajectory that has one gets its own tuple).
    unguarded: tuple[str, ...] = ()

    def __init__(self, compiled: CompiledSpec, *, locate_messages: bool = False) -> None:
        self.c = compiled
        self.states = [_RuleState(r) for r in compiled.rules]
        self.handoff_reasons: list[Finding] = []
        self.warnings: list[Finding] = []
        # the agents met, in order (None, for events that name none, is left out of the verdict)
        self.agents: dict[str | None, None] = {}
        self.events = 0
        self.handoffs = 0
        self.checkpoints = 0
        #: (seq, checkpoint id) of each checkpoint a derive rule took from an event
        self.derived_at: list[tuple[int, str]] = []
        self.irreversible = 0
        self.actions = 0
        self.final: Event | None = None
        # field name + canonical value -> agent -> (hops, first seq, first border)
        # (the canonical value: a string or an integer is itself, anything else its canonical
        # JSON bytes; no two JSON values share one, and the three kinds never compare equal)
        self.chains: dict[tuple[str, Any], dict[str, tuple[int, int, _Border]]] = {}
        # field name + canonical value -> longest chain seen: (hops, first seq, first border,
        # last seq, last border, value)
        self.longest: dict[tuple[str, Any], tuple[int, int, _Border, int, _Border, Any]] = {}
        self.locate_messages = locate_messages
        # Contracted borders crossed so far, and those already reported absent.
        self.crossed: set[tuple[str, str]] = set()
        self.absent: set[tuple[str, str]] = set()
        # (source step, checkpoint id) of each checkpoint taken from a step that names
        # its source step (``step_id``): one step licenses a checkpoint id once.
        self.step_checkpoints: set[tuple[Any, str]] = set()
        # The state of the forbidden, limits, obligations and flows rules, as plain values
        # (a guard's snapshot keeps them), and the findings they made.
        n = compiled.gate_count
        #: How many events matched each rule's first selector (when, after, source).
        self.gate_count = [0] * n
        # Obligations: (seq, line) of the event that opened one; flows: of the latest
        # source since the last ``unless`` checkpoint.
        self.gate_open: list[tuple[int, int | None] | None] = [None] * n
        # Forbidden: the ``unless`` checkpoints not yet used.
        self.gate_licences = [0] * n
        # ``match: value`` flows: value -> seq of the source whose result held it; its
        # strings in one text, each followed by NUL; and their lengths.
        self.gate_text = [""] * n
        if n:
            self.gate_taint: list[dict[Any, int]] = [{} for _ in range(n)]
            self.gate_lengths: list[dict[int, None]] = [{} for _ in range(n)]
        else:  # most specs have none of these rules: a replayer per trajectory stays cheap
            self.gate_taint = []
            self.gate_lengths = []
        self.gate_findings: list[Finding] = []

    # -- the forward pass --------------------------------------------------------------

    def where(self, event: Event) -> str:
        """How a message names an event: its seq, and its message index for transcripts."""
        return self._where(event.seq, event.line)

    def _where(self, seq: int, line: int | None) -> str:
        if self.locate_messages and line is not None:
            return f"seq {seq} (message {line})"
        return f"seq {seq}"

    def locate(self, seq: int, line: int | None, **named: Any) -> Location:
        """The location of the event at ``seq``: its file line, or its message index."""
        if self.locate_messages:
            return Location(seq=seq, message_index=line, **named)
        return Location(seq=seq, line=line, **named)

    def _border(self, border: _Border) -> str:
        """A handoff as messages name it: ``a->b (seq N)``."""
        src, dst, seq, line = border
        return f"{src}->{dst} ({self._where(seq, line)})"

    def feed(self, event: Event) -> None:
        """Take the next event of the trajectory: the one judge of every rule, for replay
        and the guard alike (:meth:`feed_all` of the one event)."""
        self.feed_all((event,))

    def feed_all(self, events: Iterable[Event]) -> None:
        """Take the next events of the trajectory, in order: the one judge of every rule.

        The counts are kept in locals while the events come, and stored when the loop
        ends, a reader's error included.
        """
        c = self.c
        selects = c.selects
        gates = c.gate_count
        by_action = c.by_action
        by_selector = c.by_selector
        agents = self.agents
        # (actions are counted as the events that are not: most events are actions)
        events_seen = others = irreversible = handoffs = checkpoints = 0
        try:
            for events_seen, event in enumerate(events, 1):  # noqa: B007 (counted too)
                # (by index: an Event is no exact tuple, which unpacking has no fast way for)
                kind, agent, data = event[1], event[2], event[4]
                # (None too: it is taken out when the verdict is made; setting a key held
                # keeps its place, and is cheaper than asking first)
                agents[agent] = None
                if selects:
                    self._select(event)
                if kind == "action":
                    action_type = data["action_type"]
                    # (``irreversible`` asked with ``in`` first: most actions do not carry it)
                    if by_selector or action_type in by_action:
                        if self._action(event, action_type, data):
                            irreversible += 1
                    elif "irreversible" in data and data["irreversible"] is True:
                        irreversible += 1  # an irreversible action no rule guards
                        self.unguarded += (action_type,)
                else:
                    others += 1
                    if kind == "handoff":
                        handoffs += 1
                        self._handoff(event)
                    elif kind == "checkpoint":
                        checkpoints += 1
                        self._checkpoint(data["checkpoint_id"], data.get("confirmed_by"), event)
                    elif kind == "final":
                        self.final = event
                if gates:
                    self._gate(event)
        finally:
            self.events += events_seen
            self.actions += events_seen - others
            self.irreversible += irreversible
            self.handoffs += handoffs
            self.checkpoints += checkpoints

    def _action(self, event: Event, action_type: str, data: Mapping[str, Any]) -> bool:
        """Judge an action a rule may guard (by its type, or by a selector); True when it
        is irreversible."""
        c = self.c
        undone = "irreversible" in data and data["irreversible"] is True
        rules = c.by_action.get(action_type)
        if c.by_selector:
            rules = _with_picked(rules, c.selecting.get(action_type, c.selecting_any), event)
        if rules:
            if event.agent in c.contracts_to:
                self._contracted_before(event)
            states = self.states
            for rule in rules:
                self._guarded(states[rule.index], event)
        elif undone:
            self.unguarded += (action_type,)
        return undone

    def _gate(self, event: Event) -> None:
        """Judge the forbidden, limits, obligations and flows rules on this event."""
        for gate, found in _gates.judge(self.c.gates, self, event, self._where, self.locate):
            (self.warnings if gate.warn else self.gate_findings).append(found)

    def would(self, event: Event) -> list[tuple[_gates.Gate, Finding]]:
        """What the forbidden, limits, obligations and flows rules would find on ``event``
        fed now; changes nothing (the guard's question)."""
        c = self.c
        if not c.gates:
            return []
        derived: frozenset[str] = frozenset()
        if c.selects and c.unless_ids:
            derive = c.hooks_for(event)[1]
            derived = frozenset(cid for sel, cid in derive
                                if cid in c.unless_ids and sel(event))
        return _gates.would(c.gates, self, event, self._where, self.locate, derived)

    def open_obligations(self) -> list[_gates.OpenObligation]:
        """The obligations opened and not yet met, in rule order: each its rule id, the seq
        of the event that opened it and one line saying what is owed (its text)."""
        out = []
        for g in self.c.gates:
            opened = self.gate_open[g.index] if g.kind == "obligations" else None
            if opened is not None:
                out.append(_gates.OpenObligation(
                    g.id, opened[0], f"obligation-unmet: rule '{g.id}': the event at "
                    f"{self._where(*opened)} obliges an event matching {g.shown} before "
                    "the run ends"))
        return out

    def _select(self, event: Event) -> None:
        """Apply the voiding selectors, then the derive rules, that can match this event."""
        kind = event.kind
        voiding, derive = self.c.hooks_for(event)
        for index, sels in voiding:
            for sel in sels:
                if sel(event):
                    self._void(self.states[index], event)
                    break
        # One event is at most one checkpoint per id: a recorded checkpoint that a derive
        # rule also matches, or two derive rules naming the same id, license once.
        licensed = {event.data["checkpoint_id"]} if kind == "checkpoint" else set()
        for sel, cid in derive:
            if cid not in licensed and sel(event):
                licensed.add(cid)
                self.derived_at.append((event.seq, cid))
                who = event.data.get("role") if kind == "message" else event.agent
                self._checkpoint(cid, who, event)

    def _void(self, st: _RuleState, event: Event) -> None:
        where = self.where(event)
        # The void that takes a licence is the one a later skip names; a void with no
        # licence to take closes the window only when no earlier void is named.
        if st.licences or st.void_seq is None:
            st.void_seq = event.seq
        if st.licences:
            if self.locate_messages:
                at = ", ".join(w for _, w in st.licences)
            else:
                at = "seq " + ", ".join(str(s) for s, _ in st.licences)
            st.why_not = f"checkpoint '{st.rule.cid}' at {at} was voided by {where}"
            st.licences.clear()
            st.bound.clear()
            st.last_void = ""
        else:
            st.last_void = where
        if st.pending:
            st.skipped.extend((seq, action, at, why or "absent", void, line, ev)
                              for seq, action, at, why, void, line, ev in st.pending)
            st.pending.clear()

    def _checkpoint(self, cid: str, confirmed_by: Any, event: Event) -> None:
        rules = self.c.by_checkpoint.get(cid)
        unless = self.c.unless_ids
        if not rules and cid not in unless:
            return
        step = event.data.get("step_id")
        if type(step) is int or type(step) is str:
            # One source step is one approval: a step whose text a derive rule matches
            # and that also records the checkpoint (ATIF's extra.checkpoint) licenses once.
            once = (step, cid)
            if once in self.step_checkpoints:
                return
            self.step_checkpoints.add(once)
        if unless and cid in unless:
            _gates.licence(self.c.gates, self, cid)
        if not rules:
            return
        for rule in rules:
            st = self.states[rule.index]
            if rule.confirmed_by is not None and (not isinstance(confirmed_by, str)
                                                  or confirmed_by not in rule.confirmed_by):
                allowed = _quote(sorted(rule.confirmed_by))
                st.why_not = (f"checkpoint '{cid}' at {self.where(event)} was confirmed by "
                              f"{_show(confirmed_by)}, not one of {allowed}")
                st.void_seq = st.void_seq if st.last_void else None
                continue
            if rule.confirmed_by is not None and confirmed_by.startswith(KEY_ID_PREFIX):
                why = _unsigned(cid, confirmed_by, event)
                if why is not None:
                    st.why_not = f"checkpoint '{cid}' at {self.where(event)} does not count: {why}"
                    st.void_seq = st.void_seq if st.last_void else None
                    continue
            if rule.binds:
                key = _named_call(rule.binds, event.data)
                if key is None:
                    st.why_not = (f"checkpoint '{cid}' at {self.where(event)} names no "
                                  f"{'/'.join(_BIND_FIELDS[b] for b in rule.binds)} to bind "
                                  "it to a call")
                    st.void_seq = st.void_seq if st.last_void else None
                    continue
                st.bound[event.seq] = key
            st.licences.append((event.seq, self.where(event)))
            for seq, action, where, _, _, line, ev in st.pending:
                st.failures.append(Finding(
                    Reason.CHECKPOINT_AFTER_ACTION,
                    f"checkpoint '{cid}' came at {self.where(event)}, after the action it "
                    f"guards: {_action_text(action, ev)} ran at {where}",
                    self.locate(seq, line, checkpoint_id=cid, action_type=action,
                                **_evidence_fields(ev))))
            st.pending.clear()

    def _guarded(self, st: _RuleState, event: Event) -> None:
        st.seen_action = True
        rule = st.rule
        if not rule.each:
            if st.done:
                return
            st.done = True
        at = 0
        if st.licences and rule.binds:
            at = _bound_licence(st, event)
            if at < 0:
                st.why_not = (f"checkpoint '{rule.cid}' at {st.licences[-1][1]} approves "
                              f"another call than {_call_text(rule.binds, event.data)}")
                st.void_seq = st.void_seq if st.last_void else None
        if st.licences and at >= 0:
            if rule.consume:
                seq, used = st.licences.pop(at)
                st.bound.pop(seq, None)
                st.why_not = (f"checkpoint '{rule.cid}' at {used} was already used by "
                              f"{self.where(event)}")
                st.last_void = ""
                st.void_seq = None
            return
        why = st.why_not
        if st.last_void:
            since = f"no checkpoint since the last voiding event, {st.last_void}"
            why = f"{why}; {since}" if why else since
        void = st.void_seq if why else None
        st.pending.append((event.seq, event.data["action_type"], self.where(event), why, void,
                           event.line, _evidence(event.data)))

    def _contracted_before(self, event: Event) -> None:
        """Warn when a guarded action's agent never received a handoff its contract promises."""
        for border in self.c.contracts_to[event.agent or ""]:
            if border not in self.crossed and border not in self.absent:
                self.absent.add(border)
                ev = _evidence(event.data)
                action = event.data["action_type"]
                self.warnings.append(Finding(
                    Reason.CONTRACTED_HANDOFF_ABSENT,
                    f"guarded action {_action_text(action, ev)} ran at {self.where(event)} "
                    f"but the contracted handoff {border[0]}->{border[1]} never happened "
                    "before it; what the contract checks was never delivered",
                    self.locate(event.seq, event.line, action_type=action,
                                from_agent=border[0], to_agent=border[1],
                                **_evidence_fields(ev)), "warn"))

    def _handoff(self, event: Event) -> None:
        seq, data, line = event[0], event[4], event[5]
        src = data["from_agent"]
        dst = data["to_agent"]
        payload: Mapping[str, Any] = data["payload"]
        border = (src, dst)
        self.crossed.add(border)
        contract = self.c.contracts.get(border)
        if contract is None:
            self.warnings.append(Finding(
                Reason.UNCONTRACTED_HANDOFF,
                f"{self._border((src, dst, seq, line))} is covered by no contract; flagged, "
                "not blocked, because the spec may be incomplete",
                self.locate(seq, line, from_agent=src, to_agent=dst), "warn"))
        else:
            self._contracted(contract, payload, src, dst, seq, line)
        here: _Border | None = None
        chains = self.chains
        for _, key, value in _claims(payload):
            if here is None:
                here = (src, dst, seq, line)
            holders = chains.get(key)
            if holders is None:  # (not setdefault: no dict built for a value already held)
                holders = chains[key] = {}
            held = holders.get(src)
            if held is None:
                hops, first_seq, first_border = 1, seq, here
            else:
                hops, first_seq, first_border = held[0] + 1, held[1], held[2]
            prior = holders.get(dst)
            if prior is None or prior[0] < hops:
                holders[dst] = (hops, first_seq, first_border)
            if hops >= 2:
                best = self.longest.get(key)
                if best is None or best[0] < hops:
                    self.longest[key] = (hops, first_seq, first_border, seq, here, value)

    def _contracted(self, contract: HandoffContractDoc, payload: Mapping[str, Any], src: str,
                    dst: str, seq: int, line: int | None) -> None:
        """Check a handoff against the contract of its border: each required field
        delivered, and verified where the contract demands it."""
        warn = contract.severity == "warn"
        found = self.warnings if warn else self.handoff_reasons
        severity: Severity = "warn" if warn else "error"
        missing = None
        for f in contract.required_fields:  # (a loop: no comprehension's frame to build)
            if f not in payload:
                missing = [f for f in contract.required_fields if f not in payload]
                break
        if missing:
            found.append(Finding(
                Reason.HANDOFF_CONTRACT_VIOLATION,
                f"{self._border((src, dst, seq, line))} did not deliver required fields "
                f"{_quote(missing)}", self.locate(seq, line, from_agent=src, to_agent=dst),
                severity))
        if contract.require_verified:
            unverified = None
            for f in contract.required_fields:
                # (field_verified, inline: a call a field costs more than the test)
                if f in payload and not (isinstance(raw := payload[f], dict)
                                         and raw.get("verified") is True and "value" in raw):
                    unverified = [f for f in contract.required_fields
                                  if f in payload and not field_verified(payload[f])]
                    break
            if unverified:
                found.append(Finding(
                    Reason.UNVERIFIED_CLAIM_CONSUMED,
                    f"{self._border((src, dst, seq, line))}: required fields "
                    f"{_quote(unverified)} arrived without verified=true where the "
                    "contract demands verification",
                    self.locate(seq, line, from_agent=src, to_agent=dst), severity))

    def propagation(self, event: Event) -> list[Finding]:
        """The chains of unverified values this handoff, fed now, would make 2 or more hops
        long: one finding per value, at the handoff that completes the hop (the guard's
        question; replay reports each value's longest chain when the run ends). Changes
        nothing."""
        seq, _, _, _, data, line = event
        src, dst = data["from_agent"], data["to_agent"]
        here = (src, dst, seq, line)
        out = []
        for name, key, value in _claims(data["payload"]):
            held = self.chains.get(key, {}).get(src)
            if held is not None:
                out.append(self._chain(name, value, held[0] + 1, held[2], seq, here))
        return out

    def _chain(self, name: str, value: Any, hops: int, first_border: _Border, last_seq: int,
               last_border: _Border) -> Finding:
        """The finding of an unverified value that crossed ``hops`` handoffs."""
        return Finding(
            propagated(hops),
            f"field '{name}'={_show(value)} entered unverified at "
            f"{self._border(first_border)} and crossed {hops} handoffs without anyone "
            f"verifying it, the last at {self._border(last_border)}",
            self.locate(last_seq, last_border[3], from_agent=last_border[0],
                        to_agent=last_border[1]))

    # -- the verdict -------------------------------------------------------------------

    def _rule_findings(self, notes: list[Finding], warned: list[Finding],
                       unreached: list[str]) -> list[Finding]:
        """The findings of the mandatory checkpoint rules, in rule order, each rule's in seq
        order; a rule's note goes to ``notes``, a ``severity: warn`` rule's to ``warned``,
        the key of a rule this trajectory never reached to ``unreached``."""
        reasons: list[Finding] = []
        for st in self.states:
            rule = st.rule
            if not st.seen_action:
                notes.append(rule.never_ran)
                unreached.append(rule.key)
                continue
            if not (st.failures or st.skipped or st.pending):
                continue
            judged = list(st.failures)
            for seq, action, where, why, void, line, ev in st.skipped + st.pending:
                shown = _action_text(action, ev)
                if why == "absent":
                    msg = (f"checkpoint '{rule.cid}' was absent when the guarded action "
                           f"{shown} ran at {where}")
                elif why:
                    msg = f"no valid checkpoint '{rule.cid}' before {shown} at {where}: {why}"
                else:
                    msg = (f"checkpoint '{rule.cid}' is absent from the trajectory; the guarded "
                           f"action {shown} ran at {where}")
                judged.append(Finding(Reason.CHECKPOINT_SKIPPED, msg, self.locate(
                    seq, line, checkpoint_id=rule.cid, action_type=action, voided_by_seq=void,
                    **_evidence_fields(ev))))
            judged.sort(key=lambda f: f.seq or 0)
            if rule.warn:
                warned.extend(msgspec.structs.replace(f, severity="warn") for f in judged)
            else:
                reasons.extend(judged)
        return reasons

    def finish(self, traj_id: str, path: str | None, *, source: str = "native",
               meta: dict[str, Any] | None = None) -> ReplayResult:
        """Fold the state into the verdict on this trajectory."""
        notes: list[Finding] = []
        warned: list[Finding] = []
        # The rules this trajectory never reached: a guarded action that never ran, a
        # contracted border never crossed (a batch names those no trajectory reached).
        unreached: list[str] = []
        reasons = self._rule_findings(notes, warned, unreached)
        if self.c.gate_count:  # a rule on what actions may do whose trigger never matched
            unreached.extend(k for k, n in zip(self.c.gate_keys, self.gate_count, strict=True)
                             if n == 0)
        reasons.extend(self.handoff_reasons)
        for (name, _), (hops, _first, first_border, last_seq, last_border, value) in sorted(
                self.longest.items(), key=_chain_order) if self.longest else ():
            reasons.append(self._chain(name, value, hops, first_border, last_seq, last_border))
        reasons.extend(self.gate_findings)
        if self.c.gate_count and self.final is None:
            for gate, found in _gates.unmet(self.c.gates, self, self._where, self.locate, None):
                (warned if gate.warn else reasons).append(found)
        task_success = None
        final: Mapping[str, Any] = {}
        if self.final is not None:
            final = self.final.data
            task_success = final.get("task_success")
        derived_count = len(self.derived_at)
        agents = self.agents
        named = cast("dict[str, None]", agents) if None not in agents else {
            a: None for a in agents if a is not None}
        stats = TrajectoryStats(self.events, tuple(named), self.handoffs,
                                self.checkpoints + derived_count, derived_count,
                                self.irreversible, self.actions)
        warnings = list(self.warnings)
        warnings.extend(warned)
        if self.states and not self.actions:
            warnings.append(self.c.no_actions(source))
        crossed, absent = self.crossed, self.absent
        for border, never, key in self.c.never_crossed:
            if border not in crossed:
                unreached.append(key)
                if border not in absent:
                    warnings.append(never)
        if source not in FILE_LINE_SOURCES and not self.locate_messages:
            # A native file and a coding agent's session have a line per record; another
            # reader's line is its own (a span, a record), so the findings name the seq
            # alone.
            reasons, warnings = _seq_only(reasons), _seq_only(warnings)
        derived = tuple(self.derived_at)
        reach = ((tuple(unreached), self.unguarded) if unreached or self.unguarded
                 else _REACHED_ALL)
        if reasons:
            return ReplayResult(traj_id, path, "BLOCK", tuple(reasons), tuple(warnings),
                                tuple(notes), task_success, stats, source, final, meta or {},
                                derived, reach)
        return ReplayResult(traj_id, path, "PASS", _PASS_REASONS, tuple(warnings),
                            tuple(notes), task_success, stats, source, final, meta or {},
                            derived, reach)


def _with_picked(rules: list[_Rule] | None, selecting: list[tuple[Selector, _Rule]],
                 event: Event) -> list[_Rule] | None:
    """The rules guarding an action by its type, and after them those whose selectors
    pick it (each once)."""
    picked = [r for sel, r in selecting if sel(event)]
    if not picked:
        return rules
    return [*(rules or ()), *(r for r in picked if r not in (rules or ()))]


#: The reach of a trajectory that reached every rule and ran no unguarded irreversible
#: action (most do): one tuple, the same each time.
_REACHED_ALL: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())


#: The reasons of every PASS: one finding, the same each time.
_PASS_REASONS = (Finding(Reason.TRAJECTORY_CONFORMS, _PASS_DETAIL, severity="ok"),)


def _claims(payload: Mapping[str, Any]) -> list[tuple[str, tuple[str, Any], Any]]:
    """The payload's fields that travel as claims: (name, chain key, value) of each field
    whose value is not verified. The key is the field name and the canonical value: a
    string or an integer is itself, anything else its canonical JSON bytes."""
    out = []
    for name, raw in payload.items():
        if isinstance(raw, dict) and "value" in raw:
            if raw.get("verified") is True:
                continue  # verified: it travels no further as a claim
            value = raw["value"] if "verified" in raw else raw
        else:
            value = raw
        kind = type(value)
        out.append((name, (name, value if kind is str or kind is int
                           else orjson.dumps(value, option=orjson.OPT_SORT_KEYS)), value))
    return out


def _chain_order(kv: tuple[tuple[str, Any], tuple[Any, ...]]) -> tuple[Any, str, bytes]:
    """Chains in the order of their first seq, then field name, then canonical JSON value."""
    canonical = kv[0][1]
    if type(canonical) is not bytes:
        canonical = orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)
    return kv[1][1], kv[0][0], canonical


def _seq_only(findings: list[Finding]) -> list[Finding]:
    return [f if f.location.line is None
            else msgspec.structs.replace(f, location=msgspec.structs.replace(f.location,
                                                                             line=None))
            for f in findings]


_LINE = re.compile(r"line (\d+): ")


def error_result(traj_id: str, path: str | None, message: str, *, source: str = "native",
                 meta: dict[str, Any] | None = None) -> ReplayResult:
    """An ERROR verdict: the trajectory could not be judged."""
    # A native file that does not read names its bad line first: "line 2: ...".
    at = _LINE.match(message) if source == "native" else None
    where = Location(line=int(at.group(1))) if at else NOWHERE
    return ReplayResult(traj_id, path, "ERROR", (Finding(Reason.BAD_INPUT, message, where),),
                        source=source, meta=meta or {})


#: The checkpoint field each bound part of a call is named by.
_BIND_FIELDS = {"tool": "tool", "args": "args_sha256", "call": "call_id"}


def _named_call(binds: tuple[str, ...], data: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The call a checkpoint names (its ``tool``, ``args_sha256``, ``call_id``), or None."""
    key = tuple(data.get(_BIND_FIELDS[b]) for b in binds)
    return None if any(not isinstance(k, str) or not k for k in key) else key


def _action_call(binds: tuple[str, ...], data: Mapping[str, Any]) -> tuple[Any, ...]:
    """The same parts of an action: its ``action_type``, digest of ``args``, ``call_id``.

    Arguments JSON cannot hold (an integer beyond 64 bits) have no digest: no checkpoint
    names them.
    """
    return tuple(data.get("action_type") if b == "tool" else _digest(data.get("args"))
                 if b == "args" else data.get("call_id") for b in binds)


def _digest(args: Any) -> str | None:
    try:
        return args_digest(args)
    except ValueError:
        return None


def _call_text(binds: tuple[str, ...], data: Mapping[str, Any]) -> str:
    return ", ".join(f"{_BIND_FIELDS[b]} {v}" for b, v in zip(binds, _action_call(binds, data),
                                                              strict=True))


def _bound_licence(st: _RuleState, event: Event) -> int:
    """The index of the first licence whose checkpoint names this call, or -1."""
    key = _action_call(st.rule.binds, event.data)
    for i, (seq, _) in enumerate(st.licences):
        if st.bound.get(seq) == key:
            return i
    return -1


def unlicensed(r: Replayer, event: Event) -> list[tuple[_Rule, str]]:
    """The rules under which ``event``, fed now, would be a guarded action without a valid
    checkpoint, each with why. Reads the state and changes nothing: the question a runtime
    guard asks before a call, answered by the same rules :meth:`Replayer.feed` applies.
    """
    c = r.c
    if event.kind != "action":
        return []
    rules = list(c.by_action.get(event.data["action_type"]) or ())
    rules.extend(rule for sel, rule in c.selectors_for(event.data["action_type"])
                 if rule not in rules and sel(event))
    if not rules:
        return []
    voided: set[int] = set()
    derived: set[str] = set()
    if c.selects:  # what the event itself does first: void licences, derive checkpoints
        voiding, derive = c.hooks_for(event)
        voided.update(i for i, sels in voiding if any(sel(event) for sel in sels))
        derived.update(cid for sel, cid in derive if sel(event))
    out = []
    for rule in rules:
        st = r.states[rule.index]
        if not rule.each and st.done:
            continue
        if st.licences and rule.index not in voided and (not rule.binds
                                                        or _bound_licence(st, event) >= 0):
            continue
        if rule.cid in derived and not rule.binds and (
                rule.confirmed_by is None or event.agent in rule.confirmed_by):
            continue
        why = st.why_not
        if rule.index in voided:
            why = f"the call itself voids checkpoint '{rule.cid}'"
        elif st.licences and rule.binds:
            why = (f"checkpoint '{rule.cid}' at {st.licences[-1][1]} approves another call "
                   f"than {_call_text(rule.binds, event.data)}")
        elif st.last_void:
            since = f"no checkpoint since the last voiding event, {st.last_void}"
            why = f"{why}; {since}" if why else since
        out.append((rule, why))
    return out
