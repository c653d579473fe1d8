"""The guard: the replay engine fed as events happen, asked before each guarded call.

A :class:`Guard` holds one session's state: a :class:`~roadcheck.conformance.Replayer`
fed with every event that happened (:meth:`Guard.observe`). :meth:`Guard.check`
asks whether an action (or a handoff) would be a violation if it ran *now*,
without changing anything, and answers with a :class:`Decision`:

* ``allow``: replay would find nothing wrong with it;
* ``ask``: only a checkpoint is missing (absent, voided, consumed, confirmed by
  someone the rule does not accept, or approving another call), and a person
  can still give it before the call runs: record the checkpoint, then call again.
  When the guard was told who answers its questions (``approver``), a rule that
  does not accept that identity is a ``deny``: asking them cannot satisfy it;
* ``deny``: something no approval can mend: a handoff that breaks its contract
  or completes a second (or later) hop of an unverified value, a forbidden action
  (one no ``unless`` checkpoint can license), an action beyond its limit, a sink
  after a source, a ``final`` event while an obligation is open, an unusable
  event, or a checkpoint the approver at hand cannot give. A forbidden action or
  a flow whose rule names an ``unless`` checkpoint is an ``ask`` for it.

Its reasons are the findings replay reports on the same event (code, message,
seq). One difference is by nature: before the call, a checkpoint that is
missing is ``checkpoint-skipped``; replay, which sees the whole run, reports it
as ``checkpoint-after-action`` when the checkpoint came later anyway. A value
relayed unverified is denied at each handoff that completes a hop beyond the
first; replay reports its longest chain once, at the run's end.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, Literal, TypeVar

from roadcheck.conformance.engine import CompiledSpec, Replayer, unlicensed
from roadcheck.conformance.result import Finding
from roadcheck.conformance.spec import Spec
from roadcheck.errors import TraceError
from roadcheck.events import Event, args_digest, field_verified
from roadcheck.findings import Location
from roadcheck.ingest.native import parse_record
from roadcheck.reasons import Reason

__all__ = ["Decision", "Guard", "GuardDenied", "Verdict"]

Verdict = Literal["allow", "deny", "ask"]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer to "may this run now?": a verdict, and replay's reasons when it may not."""

    verdict: Verdict
    #: The action's tool (``action_type``), or ``None`` for another event.
    tool: str | None = None
    #: :func:`roadcheck.events.args_digest` of the action's ``args``.
    args_sha256: str | None = None
    #: The findings replay reports on this event: code, message, seq.
    reasons: tuple[Finding, ...] = ()
    #: For each reason, what would satisfy its rule ("" when nothing can).
    satisfy: tuple[str, ...] = ()
    #: Who confirmed the checkpoints that license an allowed call, where known.
    approvers: tuple[str, ...] = ()
    #: The seq the event had, or would have had, in the session.
    seq: int | None = None
    #: The call id of the action, where it has one (a hook's ``tool_use_id``).
    call_id: str | None = None
    #: The rules (checkpoint ids) whose missing checkpoint a person may give.
    missing: tuple[str, ...] = field(default=())

    @property
    def allowed(self) -> bool:
        """True for ``allow``."""
        return self.verdict == "allow"

    @property
    def message(self) -> str:
        """One line: the verdict, then each reason and what would satisfy it."""
        if not self.reasons:
            who = f" (approved by {', '.join(self.approvers)})" if self.approvers else ""
            return f"allow: {self.tool or 'event'}{who}"
        parts = []
        for reason, need in zip(self.reasons, self.satisfy, strict=True):
            parts.append(f"{reason.code}: {reason.message}" + (f"; needs {need}" if need else ""))
        return f"{self.verdict}: " + " | ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape written to the decision log."""
        return {"verdict": self.verdict, "tool": self.tool, "args_sha256": self.args_sha256,
                "call_id": self.call_id, "seq": self.seq,
                "reasons": [{**r.to_dict(), "seq": r.seq, "satisfy": s}
                            for r, s in zip(self.reasons, self.satisfy, strict=True)],
                "approvers": list(self.approvers)}


class GuardDenied(Exception):
    """A guarded call was not allowed to run; ``decision`` says why."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.message)
        self.decision = decision


def _spec_of(spec: Spec | Mapping[str, Any] | str | PathLike[str]) -> Spec:
    from roadcheck.conformance.api import _spec_of as load

    return load(spec)


def _names(values: frozenset[str] | None) -> str:
    return "" if values is None else " by one of " + ", ".join(sorted(values))


class Guard:
    """One session's guard: :meth:`observe` what happened, :meth:`check` before a call.

    ``spec`` is a :class:`~roadcheck.Spec`, a spec document (dict) or a spec path.
    ``approver``, when given, is who answers the guard's questions (the person
    at a permission prompt): a missing checkpoint that identity cannot give is
    a ``deny``, not an ``ask``. ``log``, when given, receives every
    :class:`Decision` :meth:`check` makes.
    """

    def __init__(self, spec: Spec | Mapping[str, Any] | str | PathLike[str], *,
                 approver: str | None = None,
                 log: Callable[[Decision], None] | None = None) -> None:
        self.spec = _spec_of(spec)
        self.compiled = CompiledSpec(self.spec)
        self.approver = approver
        self.log = log
        self._replayer = Replayer(self.compiled)
        self._last = 0
        self._ended = False
        #: checkpoint seq -> who confirmed it, to name the approver of an allowed call.
        self._confirmers: dict[int, str] = {}
        #: Every observed record, in order (what a session store keeps).
        self.records: list[Mapping[str, Any]] = []

    # -- events ----------------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The seq of the last observed event (0 before the first)."""
        return self._last

    def event(self, event: Event | Mapping[str, Any]) -> Event:
        """Validate an event (an :class:`Event` or a native dict; ``seq`` defaults to the next).

        Raises :class:`~roadcheck.errors.TraceError` for an event replay would refuse.
        """
        if type(event) is dict:
            # a copy: the session must not change when the caller reuses its dict
            rec: Any = dict(event) if "seq" in event else {"seq": self._last + 1, **event}
        elif isinstance(event, Event):
            rec = event.data
        elif isinstance(event, Mapping):
            rec = dict(event)
            if "seq" not in rec:
                rec = {"seq": self._last + 1, **rec}
        else:
            raise TraceError(f"an event is an Event or a native event dict, got "
                             f"{type(event).__name__}")
        parsed = parse_record(rec if type(rec) is dict else dict(rec), 0)
        if parsed.seq <= self._last:
            raise TraceError(f"seq {parsed.seq} does not follow seq {self._last}; seq must "
                             "increase")
        if self._ended:
            raise TraceError("the session ended with its final event; nothing follows it")
        return Event(parsed.seq, parsed.kind, parsed.agent, parsed.ts, parsed.data)

    def observe(self, event: Event | Mapping[str, Any]) -> Event:
        """Take an event that happened: a message, checkpoint, handoff, or a call that ran."""
        ev = self.event(event)
        self._replayer.feed(ev)
        self._last = ev.seq
        self.records.append(ev.data)
        if ev.kind == "checkpoint":
            who = ev.data.get("confirmed_by")
            if isinstance(who, str):
                self._confirmers[ev.seq] = who
        elif ev.kind == "final":
            self._ended = True
        return ev

    def approve(self, decision: Decision, by: str, *, agent: str | None = None) -> list[Event]:
        """Observe that ``by`` approved the call ``decision`` asked about.

        One checkpoint per rule the decision found missing, each naming the call
        (``tool``, ``args_sha256``, ``call_id``), so a rule that ``binds`` it
        counts it for that call only. Whether ``by`` may approve is the rule's
        ``confirmed_by``, judged as for any checkpoint.
        """
        out = []
        for cid in decision.missing:
            rec: dict[str, Any] = {"event": "checkpoint", "checkpoint_id": cid,
                                   "confirmed_by": by}
            if agent is not None:
                rec["agent"] = agent
            for key, value in (("tool", decision.tool), ("args_sha256", decision.args_sha256),
                               ("call_id", decision.call_id)):
                if value is not None:
                    rec[key] = value
            out.append(self.observe(rec))
        return out

    # -- the question ----------------------------------------------------------------------

    def check(self, event: Event | Mapping[str, Any]) -> Decision:
        """Would this event be a violation if it happened now? Changes no state.

        An action is judged against every mandatory checkpoint that guards it and
        the forbidden, limits and flows rules, a handoff against its contract, a
        ``final`` event against the obligations still open; other events are
        always allowed. An
        event replay would refuse as malformed is a ``deny`` (``bad-input``).
        """
        try:
            ev = self.event(event)
        except TraceError as exc:
            decision = Decision("deny", _tool_of(event), None,
                                (Finding(Reason.BAD_INPUT, exc.message),), ("",))
        else:
            decision = self._decide(ev)
        if self.log is not None:
            self.log(decision)
        return decision

    def _decide(self, ev: Event) -> Decision:
        if ev.kind == "handoff":
            reasons = self._handoff(ev) + tuple(self._replayer.propagation(ev))
            return Decision("deny" if reasons else "allow", None, None, reasons,
                            ("",) * len(reasons), seq=ev.seq)
        gated = self._gated(ev)
        if ev.kind != "action":
            if not gated:
                return Decision("allow", seq=ev.seq)
            return Decision("deny", None, None, tuple(f for f, _ in gated),
                            tuple(need for _, need in gated), seq=ev.seq)
        data = ev.data
        tool = data["action_type"]
        call_id = data.get("call_id") if isinstance(data.get("call_id"), str) else None
        try:
            digest = args_digest(data.get("args"))
        except ValueError as exc:
            return Decision("deny", tool, None,
                            (Finding(Reason.BAD_INPUT, str(exc), Location(seq=ev.seq,
                                                                           action_type=tool)),),
                            ("",), seq=ev.seq, call_id=call_id)
        found = [(rule, why) for rule, why in unlicensed(self._replayer, ev) if not rule.warn]
        if not found and not gated:
            return Decision("allow", tool, digest, approvers=self._approvers(ev), seq=ev.seq,
                            call_id=call_id)
        found_reasons, satisfy, verdict = self._unlicensed(ev, found, digest, call_id)
        missing = [r.cid for r, _ in found]
        for finding, need in gated:
            found_reasons.append(finding)
            satisfy.append(need)
            if need:
                missing.append(need)
            else:
                verdict = "deny"
        return Decision(verdict, tool, digest, tuple(found_reasons), tuple(satisfy), seq=ev.seq,
                        call_id=call_id, missing=tuple(dict.fromkeys(missing)))

    def _unlicensed(self, ev: Event, found: list[tuple[Any, str]], digest: str,
                    call_id: str | None) -> tuple[list[Finding], list[str], Verdict]:
        """The checkpoint-skipped reasons of an action the rules ``found`` it unlicensed
        under, what would satisfy each, and ask, or deny when the approver cannot."""
        tool = ev.data["action_type"]
        found_reasons: list[Finding] = []
        satisfy: list[str] = []
        verdict: Verdict = "ask"
        for rule, why in found:
            where = f"seq {ev.seq}"
            if why:
                msg = f"no valid checkpoint '{rule.cid}' before '{tool}' at {where}: {why}"
            else:
                msg = (f"checkpoint '{rule.cid}' is absent; the guarded action '{tool}' would "
                       f"run at {where}")
            st = self._replayer.states[rule.index]
            if why.startswith("the call itself voids"):
                void: int | None = ev.seq
            elif why and (why == st.why_not or st.last_void) and not (st.licences
                                                                      and rule.binds):
                void = st.void_seq
            else:
                void = None
            found_reasons.append(Finding(Reason.CHECKPOINT_SKIPPED, msg, Location(
                seq=ev.seq, checkpoint_id=rule.cid, action_type=tool, voided_by_seq=void)))
            need = f"{rule.cid}{_names(rule.confirmed_by)}"
            if rule.binds:
                bound = {"tool": f"tool {tool}", "args": f"args_sha256 {digest}",
                         "call": f"call_id {call_id}"}
                need += ", naming " + ", ".join(bound[b] for b in rule.binds)
            satisfy.append(need)
            if (self.approver is not None and rule.confirmed_by is not None
                    and self.approver not in rule.confirmed_by):
                verdict = "deny"
        return found_reasons, satisfy, verdict

    def _gated(self, ev: Event) -> list[tuple[Finding, str]]:
        """What the forbidden, limits, obligations and flows rules would find on this
        event, each with the checkpoint that would mend it ("" when none can)."""
        out = []
        for gate, finding in self._replayer.would(ev):
            if gate.warn:
                continue
            mends = gate.kind in ("forbidden", "flows") and gate.unless is not None
            out.append((finding, gate.unless if mends and gate.unless else ""))
        return out

    def open_obligations(self) -> list[Any]:
        """The obligations opened and not yet met (``rule_id``, the ``seq`` of the event
        that opened it, and as its text one line saying what is owed): while one is open,
        a ``final`` event is denied, and a coding agent's hook blocks its stop."""
        return self._replayer.open_obligations()

    def guarding(self, event: Event | Mapping[str, Any]) -> tuple[str, ...]:
        """The ids of the mandatory checkpoints that guard this action (none for other events).

        Raises :class:`~roadcheck.errors.TraceError` for an event replay would refuse.
        """
        ev = self.event(event)
        if ev.kind != "action":
            return ()
        return tuple(dict.fromkeys(rule.cid for rule in self._rules(ev)))

    def _rules(self, ev: Event) -> list[Any]:
        """The mandatory-checkpoint rules that guard this action."""
        c = self.compiled
        rules = list(c.by_action.get(ev.data["action_type"]) or ())
        rules.extend(r for sel, r in c.selectors_for(ev.data["action_type"])
                     if r not in rules and sel(ev))
        return rules

    def _approvers(self, ev: Event) -> tuple[str, ...]:
        """Who confirmed the licences this call would use."""
        from roadcheck.conformance.engine import _bound_licence

        out: dict[str, None] = {}
        for rule in self._rules(ev):
            st = self._replayer.states[rule.index]
            if not st.licences or (not rule.each and st.done):
                continue
            at = _bound_licence(st, ev) if rule.binds else 0
            who = self._confirmers.get(st.licences[at][0]) if at >= 0 else None
            if who is not None:
                out[who] = None
        return tuple(out)

    def _handoff(self, ev: Event) -> tuple[Finding, ...]:
        """The contract findings replay reports on this handoff."""
        data = ev.data
        src, dst, payload = data["from_agent"], data["to_agent"], data["payload"]
        contract = self.compiled.contracts.get((src, dst))
        if contract is None or contract.severity == "warn":
            return ()
        border, where = f"{src}->{dst}", f"seq {ev.seq}"
        out = []
        missing = [f for f in contract.required_fields if f not in payload]
        if missing:
            out.append(Finding(Reason.HANDOFF_CONTRACT_VIOLATION,
                               f"{border} ({where}) did not deliver required fields "
                               f"{_quote(missing)}",
                               Location(seq=ev.seq, from_agent=src, to_agent=dst)))
        if contract.require_verified:
            unverified = [f for f in contract.required_fields
                          if f in payload and not field_verified(payload[f])]
            if unverified:
                out.append(Finding(Reason.UNVERIFIED_CLAIM_CONSUMED,
                                   f"{border} ({where}): required fields {_quote(unverified)} "
                                   "arrived without verified=true where the contract demands "
                                   "verification",
                                   Location(seq=ev.seq, from_agent=src, to_agent=dst)))
        return tuple(out)

    # -- plain Python ----------------------------------------------------------------------

    def tool(self, name: str, *, agent: str | None = None) -> Callable[[F], F]:
        """Guard a function as the tool ``name``: check, then run and observe, or raise.

        The call's arguments (bound to the signature, defaults applied) are the
        action's ``args``; a call that is not allowed raises :class:`GuardDenied`
        and does not run. A call that ran is observed with its result (or the
        exception it raised, as ``error``).
        """
        def wrap(fn: F) -> F:
            signature = inspect.signature(fn)

            @functools.wraps(fn)
            def guarded(*args: Any, **kwargs: Any) -> Any:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                call: dict[str, Any] = {"event": "action", "action_type": name,
                                        "args": dict(bound.arguments)}
                if agent is not None:
                    call["agent"] = agent
                decision = self.check(call)
                if not decision.allowed:
                    raise GuardDenied(decision)
                try:
                    result = fn(*args, **kwargs)
                except Exception as exc:
                    self.observe({**call, "error": f"{type(exc).__name__}: {exc}"})
                    raise
                self.observe({**call, "result": _jsonable(result)})
                return result

            return guarded  # type: ignore[return-value]

        return wrap


def _quote(names: list[str]) -> str:
    return "[" + ", ".join(f"'{n}'" for n in names) + "]"


def _tool_of(event: Any) -> str | None:
    data = event.data if isinstance(event, Event) else event
    tool = data.get("action_type") if isinstance(data, Mapping) else None
    return tool if isinstance(tool, str) else None


def _jsonable(value: Any) -> Any:
    """A result as the event records it: itself when JSON can hold it, else its repr."""
    import orjson

    try:
        orjson.dumps(value)
    except TypeError:
        return repr(value)
    return value
