"""The replay engine: one forward pass over a trajectory's events.

State is kept per trajectory and per rule, never as whole-log tables, so the
same :class:`Replayer` can be fed events as they arrive (:meth:`Replayer.feed`)
and asked for a verdict at the end (:meth:`Replayer.finish`).

The verdict never reads ``task_success``: the final event is recorded for
contrast and nothing else.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any, NamedTuple

import orjson

from roadcheck.conformance.result import (
    Finding,
    ReplayResult,
    new_finding,
    new_location,
    new_result,
    new_stats,
)
from roadcheck.conformance.spec import MandatoryCheckpoint, Spec
from roadcheck.events import EVENT_KINDS, Event, args_digest, field_verified
from roadcheck.findings import NOWHERE, Location
from roadcheck.reasons import Reason, propagated
from roadcheck.selectors import Selector

__all__ = ["CompiledSpec", "Replayer", "error_result"]

_agent_of = attrgetter("agent")

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


class _Rule:
    """A mandatory checkpoint, compiled: what it guards and what voids it."""

    __slots__ = ("binds", "cid", "confirmed_by", "consume", "each", "guard_text", "guarded",
                 "index", "never_ran", "voiders")

    def __init__(self, index: int, rule: MandatoryCheckpoint) -> None:
        self.index = index
        self.cid = rule.checkpoint_id
        self.guarded = rule.guarded
        self.each = rule.scope == "each"
        self.consume = rule.consume
        self.confirmed_by = frozenset(rule.confirmed_by) if rule.confirmed_by is not None else None
        self.binds = rule.binds
        # (selector, the event type it pins or None), so the engine can skip by type.
        self.voiders = list(zip(rule.void_selectors(), map(_pinned_kind, rule.voided_by),
                                strict=True))

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
        self.rules = [_Rule(i, r) for i, r in enumerate(spec.mandatory_checkpoints)]
        self.by_action: dict[str, list[_Rule]] = {}
        self.by_checkpoint: dict[str, list[_Rule]] = {}
        #: Rules that guard actions through a selector (``must_precede: {command: ...}``).
        self.by_selector: list[tuple[Selector, _Rule]] = []
        for rule, source in zip(self.rules, spec.mandatory_checkpoints, strict=True):
            for action in source.guard_names():
                self.by_action.setdefault(action, []).append(rule)
            self.by_selector.extend((sel, rule) for sel in source.guard_selectors())
            self.by_checkpoint.setdefault(rule.cid, []).append(rule)
        self.contracts = {(c.from_agent, c.to_agent): c for c in spec.handoff_contracts}
        # Per receiving agent, the contracted borders that must have been crossed before it
        # runs a guarded action.
        self.contracts_to: dict[str, list[tuple[str, str]]] = {}
        #: Each contracted border with the warning of a trajectory that never crossed it.
        self.never_crossed = [(border, Finding(
            Reason.CONTRACTED_HANDOFF_ABSENT,
            f"the contracted handoff {border[0]}->{border[1]} never happened in this "
            "trajectory; its contract was never checked",
            Location(from_agent=border[0], to_agent=border[1]), "warn"))
            for border in self.contracts]
        for border in self.contracts:
            self.contracts_to.setdefault(border[1], []).append(border)
        #: The guarded action names, for messages.
        self.guard_text = _quote(sorted(self.by_action) + sorted(
            {_show(g) for r in spec.mandatory_checkpoints for g in r.guarded
             if not isinstance(g, str)}))
        derive = [(d.selector(), d.checkpoint_id, _pinned_kind(d.when)) for d in spec.derive]
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
        #: No rule reads more of an event than its type's own fields, so typed records
        #: (:meth:`Replayer.feed_records`) judge exactly as whole events do.
        self.typed = not self.selects and not self.by_selector
        #: What :func:`roadcheck._accel.scan_native` is asked to pick out: the guarded action
        #: types and the checkpoint ids a rule names, as UTF-8.
        self.scan_names = (tuple(n.encode() for n in self.by_action),
                           tuple(n.encode() for n in self.by_checkpoint))
        #: The rules and contracts as :func:`roadcheck._accel.make_plan` takes them, or None
        #: when a rule binds its checkpoint to a call (judged in Python alone).
        self.native_rules: tuple[Any, Any] | None = None
        if self.typed and not any(r.binds for r in self.rules):
            self.native_rules = (
                tuple((r.cid.encode(), tuple(n.encode() for n in source.guard_names()),
                       r.each, r.consume,
                       None if r.confirmed_by is None else tuple(
                           n.encode() for n in r.confirmed_by),
                       _quote(sorted(r.confirmed_by or ())).encode())
                      for r, source in zip(self.rules, spec.mandatory_checkpoints,
                                           strict=True)),
                tuple((src.encode(), dst.encode(),
                       tuple(f.encode() for f in c.required_fields), c.require_verified)
                      for (src, dst), c in self.contracts.items()))
        self._plan: Any = None
        self._no_actions: dict[str, Finding] = {}

    def plan(self, accel: Any) -> Any:
        """The compiled plan of :func:`roadcheck._accel.judge_native` for this spec, or None."""
        if self._plan is None and self.native_rules is not None:
            self._plan = accel.make_plan(*self.native_rules) or False
        return self._plan or None

    def no_actions(self, source: str) -> Finding:
        """The warning of a trajectory read as ``source`` that records no tool call."""
        found = self._no_actions.get(source)
        if found is None:
            found = self._no_actions[source] = new_finding(
                Reason.NO_ACTIONS_RECORDED,
                f"the trajectory (read as {source}) records no tool call at all, yet the spec "
                f"guards {self.guard_text}; a reader that found no call is no evidence that "
                "none was made", severity="warn")
        return found


#: A guarded action that ran without a licence: seq, action, where, why, voided by, line.
_Unlicensed = tuple[int, str, str, str, int | None, int | None]


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

    def __init__(self, compiled: CompiledSpec, *, locate_messages: bool = False) -> None:
        self.c = compiled
        self.states = [_RuleState(r) for r in compiled.rules]
        self.handoff_reasons: list[Finding] = []
        self.warnings: list[Finding] = []
        self.agents: dict[str, None] = {}
        self.events = 0
        self.handoffs = 0
        self.checkpoints = 0
        self.derived = 0
        self.irreversible = 0
        self.actions = 0
        self.final: Event | None = None
        # field name + canonical value -> agent -> (hops, first seq, first border)
        self.chains: dict[tuple[str, bytes], dict[str, tuple[int, int, _Border]]] = {}
        # field name + canonical value -> longest chain seen: (hops, first seq, first border,
        # last seq, last border, value)
        self.longest: dict[tuple[str, bytes], tuple[int, int, _Border, int, _Border, Any]] = {}
        self.locate_messages = locate_messages
        # Contracted borders crossed so far, and those already reported absent.
        self.crossed: set[tuple[str, str]] = set()
        self.absent: set[tuple[str, str]] = set()

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
            return new_location(seq=seq, message_index=line, **named)
        return new_location(seq=seq, line=line, **named)

    def _border(self, border: _Border) -> str:
        """A handoff as messages name it: ``a->b (seq N)``."""
        src, dst, seq, line = border
        return f"{src}->{dst} ({self._where(seq, line)})"

    def feed(self, event: Event) -> None:
        """Take the next event of the trajectory."""
        self.feed_all((event,))

    def feed_all(self, events: Iterable[Event]) -> None:
        """Take the next events of the trajectory, in order.

        The hot loop of replay: counters live in locals and are written back
        even when the event source raises half-way.
        """
        c = self.c
        agents = self.agents
        by_action = c.by_action
        by_selector = c.by_selector
        selects = c.selects
        states = self.states
        n = actions = irreversible = handoffs = checkpoints = 0
        try:
            for event in events:
                n += 1
                agent = event.agent
                if agent is not None and agent not in agents:
                    agents[agent] = None
                if selects:
                    self._select(event)
                kind = event.kind
                data = event.data
                if kind == "action":
                    actions += 1
                    if data.get("irreversible") is True:
                        irreversible += 1
                    rules = by_action.get(data["action_type"])
                    if by_selector:
                        picked = [r for sel, r in by_selector if sel(event)]
                        if picked:
                            rules = [*(rules or ()), *(r for r in picked
                                                       if r not in (rules or ()))]
                    if rules:
                        if agent in c.contracts_to:
                            self._contracted_before(event)
                        for rule in rules:
                            self._guarded(states[rule.index], event)
                elif kind == "handoff":
                    handoffs += 1
                    self._handoff(event)
                elif kind == "checkpoint":
                    checkpoints += 1
                    self._checkpoint(data["checkpoint_id"], data.get("confirmed_by"), event)
                elif kind == "final":
                    self.final = event
        finally:
            self.events += n
            self.actions += actions
            self.irreversible += irreversible
            self.handoffs += handoffs
            self.checkpoints += checkpoints

    def feed_records(self, records: Sequence[Any], final: Event) -> None:
        """Take a whole native trajectory decoded into typed records, then its final event.

        The records are :func:`roadcheck.ingest.native.typed_records`: one per line
        before the final one, already checked (types, required keys, increasing ``seq``),
        each with ``kind`` and the fields of its type as attributes. Only for a spec
        whose rules read nothing else (``CompiledSpec.typed``); the verdict is the
        one :meth:`feed_all` gives on the same events.
        """
        c = self.c
        agents = self.agents
        by_action = c.by_action
        by_checkpoint = c.by_checkpoint
        contracts_to = c.contracts_to
        states = self.states
        actions = irreversible = handoffs = checkpoints = 0
        # first seen first, as feed_all lists them
        agents.update(dict.fromkeys(map(_agent_of, records)))
        agents.pop(None, None)  # type: ignore[call-overload]
        for line, rec in enumerate(records, 1):
            kind = rec.kind
            if kind == "action":
                actions += 1
                if rec.irreversible is True:
                    irreversible += 1
                rules = by_action.get(rec.action_type)
                if rules:  # a guarded action: the rules read it as an event
                    event: Any = _RecordEvent(rec, line)
                    if rec.agent in contracts_to:
                        self._contracted_before(event)
                    for rule in rules:
                        self._guarded(states[rule.index], event)
            elif kind == "handoff":
                handoffs += 1
                self._handoff_at(rec.from_agent, rec.to_agent, rec.payload, rec.seq, line)
            elif kind == "checkpoint":
                checkpoints += 1
                if rec.checkpoint_id in by_checkpoint:
                    seen: Any = _RecordEvent(rec, line)
                    self._checkpoint(rec.checkpoint_id, rec.confirmed_by, seen)
        if final.agent is not None and final.agent not in agents:
            agents[final.agent] = None
        self.final = final
        self.events += len(records) + 1
        self.actions += actions
        self.irreversible += irreversible
        self.handoffs += handoffs
        self.checkpoints += checkpoints

    def feed_scanned(self, data: bytes, scanned: tuple[Any, ...], final: Event) -> None:
        """Take a whole native trajectory as :func:`roadcheck._accel.scan_native` read it.

        The scan vouches for the file as :func:`roadcheck.ingest._native_typed.typed_records`
        would and hands over only what the rules read: the agents, the counts, and
        the guarded actions, named checkpoints and handoffs, with the byte spans of
        what is decoded here (a payload, a ``confirmed_by``, a whole line when a
        message or a bound call reads it). Only for ``CompiledSpec.typed``; the
        verdict is the one :meth:`feed_records` gives.
        """
        c = self.c
        agents = self.agents
        by_action = c.by_action
        contracts_to = c.contracts_to
        states = self.states
        loads = orjson.loads
        agents.update(dict.fromkeys(scanned[0]))
        for kind, seq, line, agent, name, dst, start, end, at, stop in scanned[9]:
            if kind == 1:
                self._handoff_at(name, dst, loads(data[start:end]), seq, line)
                continue
            if kind == 0:
                event: Any = _ScannedEvent(data, "action", seq, agent, line, at, stop)
                if agent in contracts_to:
                    self._contracted_before(event)
                for rule in by_action[name]:
                    self._guarded(states[rule.index], event)
            else:
                event = _ScannedEvent(data, "checkpoint", seq, agent, line, at, stop)
                self._checkpoint(name, loads(data[start:end]) if start >= 0 else None, event)
        if final.agent is not None and final.agent not in agents:
            agents[final.agent] = None
        self.final = final
        self.events += scanned[5] + 1
        self.actions += scanned[1]
        self.irreversible += scanned[2]
        self.handoffs += scanned[3]
        self.checkpoints += scanned[4]

    def _select(self, event: Event) -> None:
        """Apply the voiding selectors, then the derive rules, that can match this event."""
        kind = event.kind
        voiding, derive = self.c.hooks.get(kind) or self.c.hooks[""]
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
                self.derived += 1
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
            st.skipped.extend((seq, action, at, why or "absent", void, line)
                              for seq, action, at, why, void, line in st.pending)
            st.pending.clear()

    def _checkpoint(self, cid: str, confirmed_by: Any, event: Event) -> None:
        rules = self.c.by_checkpoint.get(cid)
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
            for seq, action, where, _, _, line in st.pending:
                st.failures.append(new_finding(
                    Reason.CHECKPOINT_AFTER_ACTION,
                    f"checkpoint '{cid}' came at {self.where(event)}, after the action it "
                    f"guards: '{action}' ran at {where}",
                    self.locate(seq, line, checkpoint_id=cid, action_type=action)))
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
                           event.line))

    def _contracted_before(self, event: Event) -> None:
        """Warn when a guarded action's agent never received a handoff its contract promises."""
        for border in self.c.contracts_to[event.agent or ""]:
            if border not in self.crossed and border not in self.absent:
                self.absent.add(border)
                self.warnings.append(new_finding(
                    Reason.CONTRACTED_HANDOFF_ABSENT,
                    f"guarded action '{event.data['action_type']}' ran at {self.where(event)} "
                    f"but the contracted handoff {border[0]}->{border[1]} never happened "
                    "before it; what the contract checks was never delivered",
                    self.locate(event.seq, event.line, action_type=event.data["action_type"],
                                from_agent=border[0], to_agent=border[1]), "warn"))

    def _handoff(self, event: Event) -> None:
        data = event.data
        self._handoff_at(data["from_agent"], data["to_agent"], data["payload"], event.seq,
                         event.line)

    def _handoff_at(self, src: str, dst: str, payload: Mapping[str, Any], seq: int,
                    line: int | None) -> None:
        self.crossed.add((src, dst))
        contract = self.c.contracts.get((src, dst))
        if contract is None:
            self.warnings.append(new_finding(
                Reason.UNCONTRACTED_HANDOFF,
                f"{self._border((src, dst, seq, line))} is covered by no contract; flagged, "
                "not blocked, because the spec may be incomplete",
                self.locate(seq, line, from_agent=src, to_agent=dst), "warn"))
        else:
            missing = [f for f in contract.required_fields if f not in payload]
            if missing:
                self.handoff_reasons.append(new_finding(
                    Reason.HANDOFF_CONTRACT_VIOLATION,
                    f"{self._border((src, dst, seq, line))} did not deliver required fields "
                    f"{_quote(missing)}", self.locate(seq, line, from_agent=src, to_agent=dst)))
            if contract.require_verified:
                unverified = [f for f in contract.required_fields
                              if f in payload and not field_verified(payload[f])]
                if unverified:
                    self.handoff_reasons.append(new_finding(
                        Reason.UNVERIFIED_CLAIM_CONSUMED,
                        f"{self._border((src, dst, seq, line))}: required fields "
                        f"{_quote(unverified)} arrived without verified=true where the "
                        "contract demands verification",
                        self.locate(seq, line, from_agent=src, to_agent=dst)))
        here: _Border | None = None
        for name, raw in payload.items():
            if isinstance(raw, dict) and "value" in raw:
                if raw.get("verified") is True:
                    continue  # verified: it travels no further as a claim
                value = raw["value"] if "verified" in raw else raw
            else:
                value = raw
            key = (name, orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
            if here is None:
                here = (src, dst, seq, line)
            holders = self.chains.setdefault(key, {})
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

    # -- the verdict -------------------------------------------------------------------

    def finish(self, traj_id: str, path: str | None, *, source: str = "native",
               meta: dict[str, Any] | None = None) -> ReplayResult:
        """Fold the state into the verdict on this trajectory."""
        reasons: list[Finding] = []
        notes: list[Finding] = []
        for st in self.states:
            rule = st.rule
            if not st.seen_action:
                notes.append(rule.never_ran)
                continue
            if not (st.failures or st.skipped or st.pending):
                continue
            judged = list(st.failures)
            for seq, action, where, why, void, line in st.skipped + st.pending:
                if why == "absent":
                    msg = (f"checkpoint '{rule.cid}' was absent when the guarded action "
                           f"'{action}' ran at {where}")
                elif why:
                    msg = f"no valid checkpoint '{rule.cid}' before '{action}' at {where}: {why}"
                else:
                    msg = (f"checkpoint '{rule.cid}' is absent from the trajectory; the guarded "
                           f"action '{action}' ran at {where}")
                judged.append(new_finding(Reason.CHECKPOINT_SKIPPED, msg, self.locate(
                    seq, line, checkpoint_id=rule.cid, action_type=action, voided_by_seq=void)))
            judged.sort(key=lambda f: f.seq or 0)
            reasons.extend(judged)
        reasons.extend(self.handoff_reasons)
        for (name, _), (hops, _first, first_border, last_seq, last_border, value) in sorted(
                self.longest.items(), key=_chain_order) if self.longest else ():
            reasons.append(new_finding(
                propagated(hops),
                f"field '{name}'={_show(value)} entered unverified at "
                f"{self._border(first_border)} and crossed {hops} handoffs without anyone "
                f"verifying it, the last at {self._border(last_border)}",
                self.locate(last_seq, last_border[3], from_agent=last_border[0],
                            to_agent=last_border[1])))
        task_success = None
        final: Mapping[str, Any] = {}
        if self.final is not None:
            final = self.final.data
            task_success = final.get("task_success")
        stats = new_stats(self.events, tuple(self.agents), self.handoffs,
                          self.checkpoints + self.derived, self.derived, self.irreversible,
                          self.actions)
        warnings = list(self.warnings)
        if self.states and not self.actions:
            warnings.append(self.c.no_actions(source))
        crossed, absent = self.crossed, self.absent
        for border, never in self.c.never_crossed:
            if border not in crossed and border not in absent:
                warnings.append(never)
        if source != "native" and not self.locate_messages:
            # Only a native JSONL file has one event per line; another reader's line
            # is its own (a span, a record), so the findings name the seq alone.
            reasons, warnings = _seq_only(reasons), _seq_only(warnings)
        if reasons:
            return new_result(traj_id, path, "BLOCK", tuple(reasons), tuple(warnings),
                              tuple(notes), task_success, stats, source, final, meta or {})
        return new_result(traj_id, path, "PASS", _PASS_REASONS, tuple(warnings),
                          tuple(notes), task_success, stats, source, final, meta or {})


def _record_data(record: Any) -> dict[str, Any]:
    import msgspec

    return {"seq": record.seq, "event": record.kind, **msgspec.structs.asdict(record)}


class _RecordEvent:
    """A typed record as the rules read an event: ``seq``, ``kind``, ``agent``, ``ts`` and
    ``line`` at hand, ``data`` (what :func:`_event` holds) built only when a rule reads it
    (a message about an unlicensed action, a call a checkpoint binds)."""

    __slots__ = ("_data", "agent", "kind", "line", "rec", "seq", "ts")

    def __init__(self, record: Any, line: int) -> None:
        self.rec = record
        self.seq = record.seq
        self.kind = record.kind
        self.agent = record.agent
        self.ts = record.ts
        self.line = line
        self._data: dict[str, Any] | None = None

    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            self._data = _record_data(self.rec)
        return self._data


#: The findings :func:`roadcheck._accel.judge_native` makes, by the number it gives them.
_NATIVE_CODES: tuple[tuple[str, str], ...] = (
    (Reason.CHECKPOINT_AFTER_ACTION, "error"), (Reason.CHECKPOINT_SKIPPED, "error"),
    (Reason.HANDOFF_CONTRACT_VIOLATION, "error"), (Reason.UNVERIFIED_CLAIM_CONSUMED, "error"),
    ("", "error"),  # propagated(hops)
    (Reason.CONTRACTED_HANDOFF_ABSENT, "warn"), (Reason.UNCONTRACTED_HANDOFF, "warn"))


def _native_finding(made: tuple[Any, ...]) -> Finding:
    code, message, seq, line, cid, action, src, dst, hops = made
    reason, severity = _NATIVE_CODES[code]
    return new_finding(reason or propagated(hops), message,
                       new_location(seq, line, None, cid, action, None, src, dst), severity)


def final_event(data: bytes, head: tuple[Any, ...]) -> Event | None:
    """The final event of a file :func:`roadcheck._accel.judge_native` or ``scan_native`` read
    (both results begin alike: ... records, final seq, final line's start and end): its
    line decoded whole, as the strict reader holds it (``--by`` and the reports read any
    of its fields); None when it does not decode after all (Python judges the file then)."""
    final = _final_line(data, head)
    if final is None:
        return None
    return Event(head[6], "final", final.get("agent"), final.get("ts"), final, head[5] + 1)


def _final_line(data: bytes, head: tuple[Any, ...]) -> dict[str, Any] | None:
    """The final line's fields, of :func:`final_event`; None when it does not decode."""
    try:
        final: dict[str, Any] = orjson.loads(data[head[7]:head[8]])
    except orjson.JSONDecodeError:
        return None
    return final


def _native_pieces(compiled: CompiledSpec, data: bytes, judged: tuple[Any, ...]
                   ) -> tuple[dict[str, Any], list[Finding], tuple[Finding, ...]] | None:
    """What :func:`native_result` and :func:`native_parts` both read of a file the C judge
    judged, beyond its tuples: the final line's fields (its agent added to ``judged``'s
    agents),
    the warnings the spec gives rather than the C judge (no action recorded, a contracted
    border never crossed, after the judge's own) and the notes of rules whose action never
    ran; None when the final line does not decode after all (Python judges it then)."""
    final = _final_line(data, judged)
    if final is None:
        return None
    agents, actions, uncrossed, unseen = judged[0], judged[1], judged[12], judged[11]
    agent = final.get("agent")
    if agent is not None and agent not in agents:
        agents.append(agent)
    extra = [compiled.no_actions("native")] if compiled.rules and not actions else []
    if uncrossed:
        never = compiled.never_crossed
        extra.extend(never[i][1] for i in uncrossed)
    return final, extra, tuple(compiled.rules[i].never_ran for i in unseen) if unseen else ()


def native_result(compiled: CompiledSpec, data: bytes, judged: tuple[Any, ...],
                  path: str) -> ReplayResult | None:
    """The result of a native file :func:`roadcheck._accel.judge_native` judged, the one
    :meth:`Replayer.finish` gives after :meth:`Replayer.feed_records` on the same file;
    None when its final line does not decode after all (Python judges it then)."""
    pieces = _native_pieces(compiled, data, judged)
    if pieces is None:
        return None
    final, extra, notes = pieces
    (agents, actions, irreversible, handoffs, checkpoints, records, _seq, _start, _end,
     reasons, found, _unseen, _uncrossed) = judged
    stats = new_stats(records + 1, tuple(agents), handoffs, checkpoints, 0, irreversible,
                      actions)
    return new_result(path, path, "BLOCK" if reasons else "PASS",
                      tuple(map(_native_finding, reasons)) if reasons else _PASS_REASONS,
                      (*map(_native_finding, found), *extra), notes,
                      final.get("task_success"), stats, "native", final, {})


def _native_finding_json(made: tuple[Any, ...]) -> dict[str, Any]:
    """``_native_finding(made).to_dict()``, without the objects."""
    code, message, seq, line, cid, action, src, dst, hops = made
    reason = _NATIVE_CODES[code][0]
    out: dict[str, Any] = {"code": str(reason or propagated(hops)), "message": message}
    # the location's known fields, in Location's order
    for key, value in zip(_NATIVE_PLACES, (seq, line, cid, action, src, dst), strict=True):
        if value is not None:
            out[key] = value
    return out


_NATIVE_PLACES = ("seq", "line", "checkpoint_id", "action_type", "from_agent", "to_agent")


class NativeParts(NamedTuple):
    """What a report prints of :func:`native_result`, without the result objects (see
    :func:`native_parts`)."""

    verdict: str
    reasons: Any
    warnings: list[dict[str, Any]]
    notes: list[dict[str, Any]]
    final: dict[str, Any]
    agents: list[str]
    events: int
    handoffs: int
    checkpoints: int
    irreversible: int


def native_parts(compiled: CompiledSpec, data: bytes, judged: tuple[Any, ...]
                 ) -> NativeParts | None:
    """What a report prints of :func:`native_result`, without the result objects: the
    verdict; the reasons (the shared PASS tuple of findings, or each reason's
    ``to_dict()``); the warnings' and notes' ``to_dict()``; the final event's fields; and
    the counts of its stats (agents, events, handoffs, checkpoints, irreversible actions).
    None where :func:`native_result` gives None."""
    pieces = _native_pieces(compiled, data, judged)
    if pieces is None:
        return None
    final, extra, notes = pieces
    (agents, _actions, irreversible, handoffs, checkpoints, records, _seq, _start, _end,
     reasons, found, _unseen, _uncrossed) = judged
    warnings = list(map(_native_finding_json, found))
    if extra:
        warnings.extend(w.to_dict() for w in extra)
    listed: Any = [_native_finding_json(f) for f in reasons] if reasons else _PASS_REASONS
    return NativeParts("BLOCK" if reasons else "PASS", listed, warnings,
                       [n.to_dict() for n in notes] if notes else [], final, agents,
                       records + 1, handoffs, checkpoints, irreversible)


class NativeFindings:
    """What every result of a spec the C judge judges may carry beyond the judge's own
    findings (see :func:`native_findings`)."""

    __slots__ = ("codes", "never_crossed", "never_ran", "no_actions", "passed", "propagated")

    def __init__(self, passed: tuple[Finding, ...], codes: tuple[str, ...],
                 propagated: tuple[str, str], never_ran: tuple[Finding, ...],
                 no_actions: Finding | None, never_crossed: tuple[Finding, ...]) -> None:
        #: The reasons of every PASS.
        self.passed = passed
        #: Each C finding code's reason code, by the judge's number; the propagated one
        #: is the text before and after its number of hops.
        self.codes = codes
        self.propagated = propagated
        #: Per rule, the note of a trajectory whose guarded action never ran.
        self.never_ran = never_ran
        #: The warning of a native file recording no action, None when the spec has no
        #: rule.
        self.no_actions = no_actions
        #: Per contract (the plan's order), the warning of a border never crossed.
        self.never_crossed = never_crossed


def native_findings(compiled: CompiledSpec) -> NativeFindings:
    """The findings :func:`native_result` adds to the C judge's, for renderers that render
    without the result objects (``ResultRenderer.native_style``)."""
    hops = 1234567
    before, after = propagated(hops).split(str(hops))
    return NativeFindings(
        _PASS_REASONS, tuple(str(reason) for reason, _severity in _NATIVE_CODES),
        (before, after), tuple(r.never_ran for r in compiled.rules),
        compiled.no_actions("native") if compiled.rules else None,
        tuple(finding for _border, finding in compiled.never_crossed))


class _ScannedEvent:
    """An event of a scanned file as the rules read it: ``data`` (the line decoded,
    as the strict reader holds it) only when a rule reads it."""

    __slots__ = ("_data", "_end", "_start", "agent", "kind", "line", "raw", "seq")

    def __init__(self, raw: bytes, kind: str, seq: int, agent: str | None, line: int,
                 start: int, end: int) -> None:
        self.raw = raw
        self.kind = kind
        self.seq = seq
        self.agent = agent
        self.line = line
        self._start = start
        self._end = end
        self._data: dict[str, Any] | None = None

    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            self._data = orjson.loads(self.raw[self._start:self._end])
        return self._data


#: The reasons of every PASS: one finding, the same each time.
_PASS_REASONS = (Finding(Reason.TRAJECTORY_CONFORMS, _PASS_DETAIL, severity="ok"),)


def _chain_order(kv: tuple[tuple[str, bytes], tuple[Any, ...]]) -> tuple[Any, str, bytes]:
    return kv[1][1], kv[0][0], kv[0][1]


def _seq_only(findings: list[Finding]) -> list[Finding]:
    return [f if f.location.line is None
            else dataclasses.replace(f, location=dataclasses.replace(f.location, line=None))
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
    rules.extend(rule for sel, rule in c.by_selector if rule not in rules and sel(event))
    if not rules:
        return []
    voided: set[int] = set()
    derived: set[str] = set()
    if c.selects:  # what the event itself does first: void licences, derive checkpoints
        voiding, derive = c.hooks.get(event.kind) or c.hooks[""]
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
