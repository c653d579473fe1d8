"""The replay engine: one forward pass over a trajectory's events.

State is kept per trajectory and per rule, never as whole-log tables, so the
same :class:`Replayer` can be fed events as they arrive (:meth:`Replayer.feed`)
and asked for a verdict at the end (:meth:`Replayer.finish`).

The verdict never reads ``task_success``: the final event is recorded for
contrast and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from assay.conformance.result import Finding, ReplayResult, TrajectoryStats, Verdict
from assay.conformance.spec import MandatoryCheckpoint, Spec
from assay.events import Event, field_verified
from assay.reasons import Reason, propagated

__all__ = ["CompiledSpec", "Replayer", "error_result"]

_PASS_DETAIL = ("every mandatory checkpoint came before its guarded action; "
                "every contracted handoff was satisfied")


def _quote(names: Iterable[str]) -> str:
    return "[" + ", ".join(f"'{n}'" for n in names) + "]"


def _show(value: Any) -> str:
    """A value as compact, deterministic JSON text, for messages."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


class _Rule:
    """A mandatory checkpoint, compiled: what it guards and what voids it."""

    __slots__ = ("cid", "confirmed_by", "consume", "each", "guarded", "index", "voiders")

    def __init__(self, index: int, rule: MandatoryCheckpoint) -> None:
        self.index = index
        self.cid = rule.checkpoint_id
        self.guarded = rule.guarded
        self.each = rule.scope == "each"
        self.consume = rule.consume
        self.confirmed_by = frozenset(rule.confirmed_by) if rule.confirmed_by is not None else None
        self.voiders = rule.void_selectors()

    def guard_text(self) -> str:
        return f"'{self.guarded[0]}'" if len(self.guarded) == 1 else _quote(self.guarded)


class CompiledSpec:
    """A spec turned into lookup tables for the hot path; build once, replay many."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.rules = [_Rule(i, r) for i, r in enumerate(spec.mandatory_checkpoints)]
        self.by_action: dict[str, list[_Rule]] = {}
        self.by_checkpoint: dict[str, list[_Rule]] = {}
        for rule in self.rules:
            for action in rule.guarded:
                self.by_action.setdefault(action, []).append(rule)
            self.by_checkpoint.setdefault(rule.cid, []).append(rule)
        self.voiding = [r for r in self.rules if r.voiders]
        self.contracts = {(c.from_agent, c.to_agent): c for c in spec.handoff_contracts}
        self.derive = [(d.selector(), d.checkpoint_id) for d in spec.derive]


class _RuleState:
    """Per-trajectory state of one mandatory checkpoint rule."""

    __slots__ = ("done", "failures", "licences", "pending", "rule", "seen_action", "why_not")

    def __init__(self, rule: _Rule) -> None:
        self.rule = rule
        self.licences: list[int] = []  # seqs of valid checkpoints not yet consumed or voided
        # Guarded actions with no licence, awaiting a later checkpoint: (seq, action, where, why).
        self.pending: list[tuple[int, str, str, str]] = []
        self.failures: list[Finding] = []
        self.done = False  # scope first: the first guarded action was judged
        self.seen_action = False
        # Why no licence is available right now (voided, consumed, wrong confirmer), for messages.
        self.why_not = ""


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
        self.chains: dict[tuple[str, bytes], dict[str, tuple[int, int, str]]] = {}
        # field name + canonical value -> longest chain seen: (hops, first seq, first border,
        # last seq, last border, value)
        self.longest: dict[tuple[str, bytes], tuple[int, int, str, int, str, Any]] = {}
        self.locate_messages = locate_messages

    # -- the forward pass --------------------------------------------------------------

    def where(self, event: Event) -> str:
        """How a message names an event: its seq, and its message index for transcripts."""
        if self.locate_messages and event.line is not None:
            return f"seq {event.seq} (message {event.line})"
        return f"seq {event.seq}"

    def feed(self, event: Event) -> None:
        """Take the next event of the trajectory."""
        self.events += 1
        agent = event.agent
        if agent is not None and agent not in self.agents:
            self.agents[agent] = None
        c = self.c
        for rule in c.voiding:
            for sel in rule.voiders:
                if sel(event):
                    self._void(self.states[rule.index], event)
                    break
        for sel, cid in c.derive:
            if sel(event):
                self.derived += 1
                who = event.data.get("role") if event.kind == "message" else agent
                self._checkpoint(cid, who, event)
        kind = event.kind
        if kind == "action":
            self.actions += 1
            if event.data.get("irreversible") is True:
                self.irreversible += 1
            rules = c.by_action.get(event.data["action_type"])
            if rules:
                for rule in rules:
                    self._guarded(self.states[rule.index], event)
        elif kind == "checkpoint":
            self.checkpoints += 1
            self._checkpoint(event.data["checkpoint_id"], event.data.get("confirmed_by"), event)
        elif kind == "handoff":
            self.handoffs += 1
            self._handoff(event)
        elif kind == "final":
            self.final = event

    def _void(self, st: _RuleState, event: Event) -> None:
        if st.licences:
            seqs = ", ".join(str(s) for s in st.licences)
            st.why_not = (f"checkpoint '{st.rule.cid}' at seq {seqs} was voided by "
                          f"{self.where(event)}")
            st.licences.clear()

    def _checkpoint(self, cid: str, confirmed_by: Any, event: Event) -> None:
        rules = self.c.by_checkpoint.get(cid)
        if not rules:
            return
        for rule in rules:
            st = self.states[rule.index]
            if rule.confirmed_by is not None and confirmed_by not in rule.confirmed_by:
                allowed = _quote(sorted(rule.confirmed_by))
                st.why_not = (f"checkpoint '{cid}' at {self.where(event)} was confirmed by "
                              f"{_show(confirmed_by)}, not one of {allowed}")
                continue
            st.licences.append(event.seq)
            for seq, action, where, _ in st.pending:
                st.failures.append(Finding(
                    Reason.CHECKPOINT_AFTER_ACTION,
                    f"checkpoint '{cid}' came at {self.where(event)}, after the action it "
                    f"guards: '{action}' ran at {where}", seq))
            st.pending.clear()

    def _guarded(self, st: _RuleState, event: Event) -> None:
        st.seen_action = True
        rule = st.rule
        if not rule.each:
            if st.done:
                return
            st.done = True
        if st.licences:
            used = st.licences.pop(0) if rule.consume else st.licences[0]
            if rule.consume:
                st.why_not = (f"checkpoint '{rule.cid}' at seq {used} was already used by "
                              f"{self.where(event)}")
            return
        st.pending.append((event.seq, event.data["action_type"], self.where(event), st.why_not))

    def _handoff(self, event: Event) -> None:
        data = event.data
        src, dst, payload = data["from_agent"], data["to_agent"], data["payload"]
        border = f"{src}->{dst}"
        where = self.where(event)
        contract = self.c.contracts.get((src, dst))
        if contract is None:
            self.warnings.append(Finding(
                Reason.UNCONTRACTED_HANDOFF,
                f"{border} ({where}) is covered by no contract; flagged, not blocked, "
                "because the spec may be incomplete", event.seq))
        else:
            missing = [f for f in contract.required_fields if f not in payload]
            if missing:
                self.handoff_reasons.append(Finding(
                    Reason.HANDOFF_CONTRACT_VIOLATION,
                    f"{border} ({where}) did not deliver required fields {_quote(missing)}",
                    event.seq))
            if contract.require_verified:
                unverified = [f for f in contract.required_fields
                              if f in payload and not field_verified(payload[f])]
                if unverified:
                    self.handoff_reasons.append(Finding(
                        Reason.UNVERIFIED_CLAIM_CONSUMED,
                        f"{border} ({where}): required fields {_quote(unverified)} arrived "
                        "without verified=true where the contract demands verification",
                        event.seq))
        for name, raw in payload.items():
            if field_verified(raw):
                continue
            value = raw["value"] if isinstance(raw, dict) and "value" in raw and "verified" in raw \
                else raw
            key = (name, orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
            holders = self.chains.setdefault(key, {})
            held = holders.get(src)
            if held is None:
                hops, first_seq, first_border = 1, event.seq, f"{border} ({where})"
            else:
                hops, first_seq, first_border = held[0] + 1, held[1], held[2]
            prior = holders.get(dst)
            if prior is None or prior[0] < hops:
                holders[dst] = (hops, first_seq, first_border)
            if hops >= 2:
                best = self.longest.get(key)
                if best is None or best[0] < hops:
                    self.longest[key] = (hops, first_seq, first_border, event.seq,
                                         f"{border} ({where})", value)

    # -- the verdict -------------------------------------------------------------------

    def finish(self, traj_id: str, path: str | None, *, source: str = "native",
               meta: dict[str, Any] | None = None) -> ReplayResult:
        """Fold the state into the verdict on this trajectory."""
        reasons: list[Finding] = []
        notes: list[Finding] = []
        for st in self.states:
            rule = st.rule
            if not st.seen_action:
                notes.append(Finding("note", f"checkpoint '{rule.cid}': guarded action "
                                     f"{rule.guard_text()} never ran; nothing to gate"))
                continue
            judged = list(st.failures)
            for seq, action, where, why in st.pending:
                if why:
                    msg = f"no valid checkpoint '{rule.cid}' before '{action}' at {where}: {why}"
                else:
                    msg = (f"checkpoint '{rule.cid}' is absent from the trajectory; the guarded "
                           f"action '{action}' ran at {where}")
                judged.append(Finding(Reason.CHECKPOINT_SKIPPED, msg, seq))
            judged.sort(key=lambda f: f.seq or 0)
            reasons.extend(judged)
        reasons.extend(self.handoff_reasons)
        for (name, _), (hops, _first_seq, first_border, last_seq, last_border, value) in sorted(
                self.longest.items(), key=lambda kv: (kv[1][1], kv[0][0], kv[0][1])):
            reasons.append(Finding(
                propagated(hops),
                f"field '{name}'={_show(value)} entered unverified at {first_border} and "
                f"crossed {hops} handoffs without anyone verifying it, the last at {last_border}",
                last_seq))
        task_success = None
        final: dict[str, Any] = {}
        if self.final is not None:
            final = dict(self.final.data)
            task_success = final.get("task_success")
        stats = TrajectoryStats(self.events, tuple(self.agents), self.handoffs,
                                self.checkpoints + self.derived, self.derived, self.irreversible,
                                self.actions)
        verdict: Verdict
        if reasons:
            verdict = "BLOCK"
        else:
            verdict = "PASS"
            reasons.append(Finding(Reason.TRAJECTORY_CONFORMS, _PASS_DETAIL))
        return ReplayResult(traj_id, path, verdict, tuple(reasons), tuple(self.warnings),
                            tuple(notes), task_success, stats, source, final, meta or {})


def error_result(traj_id: str, path: str | None, message: str, *, source: str = "native",
                 meta: dict[str, Any] | None = None) -> ReplayResult:
    """An ERROR verdict: the trajectory could not be judged."""
    return ReplayResult(traj_id, path, "ERROR", (Finding(Reason.BAD_INPUT, message),),
                        source=source, meta=meta or {})
