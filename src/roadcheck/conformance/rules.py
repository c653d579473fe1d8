"""The rules on what actions may do: ``forbidden``, ``limits``, ``obligations``, ``flows``.

Each rule is compiled once (:class:`Gate`) and judged by the one engine
(:class:`~roadcheck.conformance.engine.Replayer`) as events come. Its state is
plain values kept on the replayer (``gate_count``, ``gate_open``, ``gate_licences``,
``gate_taint``, ``gate_text``, ``gate_lengths``), so a guard's snapshot holds it: per rule a count
of matches, an open mark (the seq and line of the event that opened an obligation,
or of the latest source of a flow), the checkpoints ``unless`` left to use, and for
a ``match: value`` flow the values its sources returned.

:func:`judge` applies the rules to an event that happened; :func:`would` answers,
without changing anything, what judging the event now would find (the guard's
question). Both return the same findings.

Every rule of a spec, old and new, is listed by :func:`rule_table` with its id, its
kind and its selectors, so a tool can enumerate them; :attr:`Replayer.gate_count`
says how often each new rule's selector matched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import msgspec
import orjson

from roadcheck.conformance.result import Finding
from roadcheck.conformance.spec import RULE_KINDS, RULE_SELECTORS, Spec, guarded_actions
from roadcheck.events import Event
from roadcheck.findings import Location
from roadcheck.reasons import Reason
from roadcheck.selectors import Selector, compile_selector

__all__ = ["COMMAND_SHOWN", "Gate", "GateTable", "RuleEntry", "judge", "pins", "rule_table",
           "would"]

#: The longest command a finding quotes; a longer one is cut, ending in ``...``.
COMMAND_SHOWN = 120
#: The shortest string a ``match: value`` flow follows (shorter ones are too common).
TAINT_MIN = 4

#: The reason each kind of rule reports.
_CODES = {"forbidden": Reason.FORBIDDEN_ACTION, "limits": Reason.LIMIT_EXCEEDED,
          "obligations": Reason.OBLIGATION_UNMET, "flows": Reason.TAINTED_FLOW}

Evidence = tuple[str | None, str | None, str | None]
Where = Callable[[int, "int | None"], str]
Locate = Callable[..., Location]


def _text_or_none(value: Any) -> str | None:
    return value if type(value) is str and value else None


def evidence(data: Mapping[str, Any]) -> Evidence:
    """The call id, span id and command (on one line, shortened) of an action's record."""
    command = _text_or_none(data.get("command"))
    if command is not None:
        command = " ".join(command.split())
        if len(command) > COMMAND_SHOWN:
            command = command[:COMMAND_SHOWN - 3] + "..."
    return _text_or_none(data.get("call_id")), _text_or_none(data.get("span_id")), command


def action_text(action: str, ev: Evidence) -> str:
    """A guarded action as messages name it: ``'Bash' (git push origin main)``."""
    command = ev[2]
    return f"'{action}'" if command is None else f"'{action}' ({command})"


def evidence_fields(ev: Evidence) -> dict[str, str]:
    """The known parts of an action's evidence, as location fields."""
    call_id, span_id, command = ev
    out = {}
    if call_id is not None:
        out["call_id"] = call_id
    if span_id is not None:
        out["span_id"] = span_id
    if command is not None:
        out["command"] = command
    return out


def _show(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


class RuleEntry(msgspec.Struct, frozen=True):
    """One rule of a spec as tools list it: its id, kind, where it is declared, its
    selectors (plain mappings, or action names) and severity.

    A frozen msgspec struct, not a dataclass: every replay lists its spec's rules, and
    building a frozen dataclass's methods would cost its start-up more."""

    id: str
    #: ``mandatory_checkpoint``, ``handoff_contract``, ``derive``, ``forbidden``,
    #: ``limit``, ``obligation`` or ``flow``.
    kind: str
    #: Where the spec declares it: ``forbidden.0``.
    at: str
    #: Selector role (``must_precede``, ``voided_by``, ``when``, ``after``, ``source``...)
    #: -> the selectors in that role.
    selectors: tuple[tuple[str, tuple[Any, ...]], ...]
    severity: str = "block"


_KIND_NAMES = {"forbidden": "forbidden", "limits": "limit", "obligations": "obligation",
               "flows": "flow"}


def rule_table(spec: Spec) -> tuple[RuleEntry, ...]:
    """Every rule of the spec, in the order of the document: checkpoints, contracts,
    derive rules, then forbidden, limits, obligations and flows."""
    d = spec.doc
    out = []
    for i, r in enumerate(d.mandatory_checkpoints):
        guarded = tuple(g if isinstance(g, str) else msgspec.to_builtins(g)
                        for g in guarded_actions(r))
        out.append(RuleEntry(r.checkpoint_id, "mandatory_checkpoint",
                             f"mandatory_checkpoints.{i}",
                             (("must_precede", guarded), ("voided_by", tuple(
                                 msgspec.to_builtins(s) for s in r.voided_by))), r.severity))
    for i, c in enumerate(d.handoff_contracts):
        out.append(RuleEntry(f"{c.from_agent}->{c.to_agent}", "handoff_contract",
                             f"handoff_contracts.{i}", (), c.severity))
    for i, dr in enumerate(d.derive):
        out.append(RuleEntry(dr.checkpoint_id, "derive", f"derive.{i}",
                             (("when", (msgspec.to_builtins(dr.when),)),)))
    for kind in RULE_KINDS:
        for i, rule in enumerate(getattr(d, kind)):
            out.append(RuleEntry(rule.id, _KIND_NAMES[kind], f"{kind}.{i}", tuple(
                (name, (msgspec.to_builtins(getattr(rule, name)),))
                for name, _ in RULE_SELECTORS[kind]), rule.severity))
    return tuple(out)


def objects_read(table: tuple[RuleEntry, ...], gates: Iterable[Gate]) -> frozenset[str]:
    """Which of an event's objects (``args``, ``result``, ``payload``) some rule reads: a
    selector naming it (inside ``all``/``any``/``not`` too), or a ``match: value`` flow
    (a source's result)."""
    found: set[str] = set()
    stack: list[Any] = [sel for entry in table for _, sels in entry.selectors for sel in sels]
    while stack:
        sel = stack.pop()
        if not isinstance(sel, dict):
            continue
        found.update(k for k in ("args", "result", "payload") if k in sel)
        for key in ("all", "any"):
            stack.extend(sel.get(key) or ())
        if "not" in sel:
            stack.append(sel["not"])
    if any(g.value for g in gates):
        found.update(("args", "result"))
    return frozenset(found)


class OpenObligation(NamedTuple):
    """An obligation opened and not yet met: its rule, the seq of the event that opened
    it, and (its text) one line saying what is owed."""

    rule_id: str
    seq: int
    line: str

    def __str__(self) -> str:
        return self.line


class Gate:
    """A forbidden, limits, obligations or flows rule, compiled."""

    __slots__ = ("at", "at_most", "code", "doc", "first", "id", "index", "kind", "second",
                 "sels", "shown", "unless", "value", "warn")

    def __init__(self, index: int, kind: str, doc: Any, *, checked: bool, at: str) -> None:
        self.index = index
        self.kind = kind
        #: Where the spec declares it, as reports name it: ``forbidden.0``.
        self.at = at
        self.doc = doc
        self.id: str = doc.id
        self.code = _CODES[kind]
        self.warn = doc.severity == "warn"
        names = [name for name, _ in RULE_SELECTORS[kind]]
        sels = [msgspec.to_builtins(getattr(doc, n)) for n in names]
        #: The selectors as plain mappings, in the order of ``RULE_SELECTORS``.
        self.sels: tuple[dict[str, Any], ...] = tuple(sels)
        #: The selector that triggers the rule (when, after, source) and the second one
        #: (require, sink), or None.
        # What a rule holds (when, after, source, sink) takes an unknown command line as a
        # match; the action that meets an obligation (require) is evidence and does not.
        self.first: Selector = compile_selector(sels[0], checked=checked, guarding=True)
        self.second: Selector | None = (
            compile_selector(sels[1], checked=checked, guarding=kind != "obligations")
            if len(sels) > 1 else None)
        self.shown = _show(sels[-1])
        self.unless: str | None = getattr(doc, "unless", None)
        self.at_most: int = getattr(doc, "at_most", 0)
        self.value = getattr(doc, "match", "session") == "value"


def pins(sel: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The action types a selector can match (its ``action_type``, a name or ``{in: [...]}``),
    or None when it names none: only an action has an ``action_type``."""
    at = sel.get("action_type")
    if isinstance(at, str):
        return (at,)
    if isinstance(at, Mapping) and "in" in at:
        return tuple(at["in"])
    return None


#: Per action type, the gates to apply to it, and the gates for any other event.
_Index = tuple[dict[str, tuple[Gate, ...]], tuple[Gate, ...]]


def _index(gates: list[Gate], selectors: Callable[[Gate], tuple[dict[str, Any], ...]]) -> _Index:
    """The gates some selector of which (``selectors``) can match each action type; a gate
    with a selector that names no action type is in every list and in the other one."""
    by_type: dict[str, list[Gate]] = {}
    other: list[Gate] = []
    for g in gates:
        named = [pins(sel) for sel in selectors(g)]
        if any(p is None for p in named):
            other.append(g)
            continue
        for name in dict.fromkeys(t for p in named if p for t in p):
            by_type.setdefault(name, []).append(g)
    merged = {name: tuple(sorted({*found, *other}, key=lambda g: g.index))
              for name, found in by_type.items()}
    return merged, tuple(other)


class GateTable:
    """The gates of a spec and, per action type, the ones that can match it, so an event
    is judged against the few rules that name its tool (the others cannot match)."""

    def __init__(self, gates: tuple[Gate, ...]) -> None:
        self.gates = gates
        listed = list(gates)
        #: For :func:`judge`: every selector of a rule.
        self.judged = _index(listed, lambda g: g.sels)
        #: For :func:`would`: ``when`` of forbidden and limits, ``sink`` of flows.
        self.asked = _index([g for g in listed if g.kind != "obligations"],
                            lambda g: (g.sels[-1],) if g.kind == "flows" else g.sels[:1])
        self.obligations = tuple(g for g in gates if g.kind == "obligations")

    def __bool__(self) -> bool:
        return bool(self.gates)

    def __iter__(self) -> Iterator[Gate]:
        return iter(self.gates)

    def __len__(self) -> int:
        return len(self.gates)

    def for_judging(self, event: Event) -> tuple[Gate, ...]:
        """The gates :func:`judge` applies to ``event``."""
        if event.kind == "final":
            return self.gates
        by_type, other = self.judged
        if event.kind == "action":
            return by_type.get(event.data["action_type"], other)
        return other

    def for_asking(self, event: Event) -> tuple[Gate, ...]:
        """The gates :func:`would` applies to ``event``."""
        if event.kind == "final":
            return self.obligations
        if event.kind != "action":
            return ()
        by_type, other = self.asked
        return by_type.get(event.data["action_type"], other)


def compile_gates(spec: Spec) -> tuple[Gate, ...]:
    """The spec's forbidden, limits, obligations and flows rules, in that order."""
    out: list[Gate] = []
    for kind in RULE_KINDS:
        for i, doc in enumerate(getattr(spec.doc, kind)):
            out.append(Gate(len(out), kind, doc, checked=spec.checked, at=f"{kind}.{i}"))
    return tuple(out)


def licence(gates: Iterable[Gate], st: Any, cid: str) -> None:
    """A checkpoint ``cid`` was recorded: it licenses a forbidden action, or clears a flow."""
    for g in gates:
        if g.unless != cid:
            continue
        if g.kind == "forbidden":
            st.gate_licences[g.index] += 1
        elif g.kind == "flows":
            st.gate_open[g.index] = None
            st.gate_taint[g.index].clear()
            st.gate_lengths[g.index].clear()
            st.gate_text[g.index] = ""


def _values(value: Any, out: dict[Any, None]) -> None:
    """The strings of 4 or more characters and the numbers a value holds, at any depth
    (never a bool: ``True`` and ``1`` would be one key)."""
    stack = [value]
    while stack:
        v = stack.pop()
        kind = type(v)
        if kind is str:
            if len(v) >= TAINT_MIN:
                out[v] = None
        elif kind is int or kind is float:
            out[v] = None
        elif kind is dict:
            stack.extend(reversed(v.values()))
        elif kind is list:
            stack.extend(reversed(v))


def _carried(st: Any, i: int, args: Any) -> tuple[Any, int] | None:
    """The first value the arguments share with a source's result, or None: a value equal
    to one the result held, a string of the arguments that appears inside one of the
    result's, or a string of the arguments holding one of the result's."""
    taint: Mapping[Any, int] = st.gate_taint[i]
    if not taint:
        return None
    found: dict[Any, None] = {}
    _values(args, found)
    for v in found:
        seq = taint.get(v)
        if seq is not None:
            return v, seq
    text: str = st.gate_text[i]
    lengths: Mapping[int, None] = st.gate_lengths[i]
    for a in found:
        if type(a) is not str:
            continue
        at = text.find(a)
        while at >= 0:  # inside a returned string (one search of them all)
            start = text.rfind("\0", 0, at) + 1
            whole = text[start:text.find("\0", at)]
            if a in whole:
                return a, taint[whole]
            at = text.find(a, at + 1)  # it spanned two of them
        got = _holding(a, taint, lengths)
        if got is not None:
            return got
    return None


def _holding(a: str, taint: Mapping[Any, int], lengths: Mapping[int, None],
             ) -> tuple[str, int] | None:
    """A returned string that ``a`` holds, looked up by each of their lengths, or by
    trying each returned string when that is fewer steps."""
    size = len(a)
    if size * len(lengths) <= len(taint):
        for n in lengths:
            for j in range(size - n + 1 if n < size else 0):
                piece = a[j:j + n]
                seq = taint.get(piece)
                if seq is not None:
                    return piece, seq
        return None
    for t, seq in taint.items():
        if type(t) is str and t in a:
            return t, seq
    return None


def _returned(result: Any, out: dict[Any, None]) -> None:
    """The values of a source's result; a result that is JSON text is read for its own."""
    _values(result, out)
    if type(result) is str and result[:1] in ("{", "["):
        try:
            decoded = orjson.loads(result)
        except orjson.JSONDecodeError:
            return
        _values(decoded, out)


def _finding(g: Gate, event: Event, message: str, locate: Locate, at: int, line: int | None,
             **extra: Any) -> tuple[Gate, Finding]:
    data = event.data
    action = data.get("action_type") if event.kind == "action" else None
    ev = evidence(data) if action is not None else (None, None, None)
    loc = locate(at, line, action_type=action, rule_id=g.id, **extra, **evidence_fields(ev))
    return g, Finding(g.code, f"rule '{g.id}': {message}", loc, "warn" if g.warn else "error")


def _name(event: Event) -> str:
    if event.kind == "action":
        data = event.data
        return action_text(data["action_type"], evidence(data))
    return f"the {event.kind}"


def _check(g: Gate, st: Any, event: Event, where: Where, locate: Locate,
           derived: frozenset[str]) -> tuple[tuple[Gate, Finding] | None, bool]:
    """What the rule finds on ``event`` (or None), and whether its first selector matched;
    changes nothing."""
    if g.kind == "flows":
        return _check_flow(g, st, event, where, locate, derived)
    if event.kind != "action" or not g.first(event):
        return None, False
    seq, line = event.seq, event.line
    here = where(seq, line)
    if g.kind == "forbidden":
        if g.unless is not None and (st.gate_licences[g.index] > 0 or g.unless in derived):
            return None, True
        why = f"; no checkpoint '{g.unless}' licensed it" if g.unless else ""
        return _finding(g, event, f"{_name(event)} at {here} is forbidden{why}", locate,
                        seq, line), True
    if g.kind == "limits":
        count = st.gate_count[g.index] + 1
        if count <= g.at_most:
            return None, True
        return _finding(g, event, f"{_name(event)} at {here} is match {count} of a rule that "
                        f"allows at most {g.at_most}", locate, seq, line), True
    return None, True  # obligations: judged when the run ends


def _check_flow(g: Gate, st: Any, event: Event, where: Where, locate: Locate,
                derived: frozenset[str]) -> tuple[tuple[Gate, Finding] | None, bool]:
    """A sink after a source (or carrying a value a source returned), or None."""
    assert g.second is not None
    hit = g.first(event)
    if event.kind != "action" or not g.second(event) or g.unless in derived:
        return None, hit
    seq, line = event.seq, event.line
    here = where(seq, line)
    since = f" with no checkpoint '{g.unless}' between them" if g.unless else ""
    if g.value:
        got = _carried(st, g.index, event.data.get("args"))
        if got is None:
            return None, hit
        value, src = got
        return _finding(g, event, f"{_name(event)} at {here} carries {_show(value)}, which "
                        f"the source at seq {src} returned{since}", locate, seq, line), hit
    opened = st.gate_open[g.index]
    if opened is None:
        return None, hit
    return _finding(g, event, f"{_name(event)} at {here} comes after the source at "
                    f"{where(*opened)}{since}", locate, seq, line), hit


def _obligation(g: Gate, st: Any, event: Event, where: Where, locate: Locate,
                closes: bool) -> tuple[Gate, Finding] | None:
    """An open obligation at the final event, unless the final event itself fulfils it."""
    opened = st.gate_open[g.index]
    if opened is None or closes:
        return None
    return _finding(g, event, f"the event at {where(*opened)} obliges an event matching "
                    f"{g.shown} before the run ends; none came", locate, event.seq,
                    event.line)


def would(table: GateTable, st: Any, event: Event, where: Where, locate: Locate,
          derived: frozenset[str] = frozenset()) -> list[tuple[Gate, Finding]]:
    """The findings judging ``event`` now would make; changes nothing. ``derived``: the
    checkpoint ids the event itself records (a derive rule matched it)."""
    out = []
    for g in table.for_asking(event):
        if g.kind == "obligations":
            if event.kind == "final":
                found = _obligation(g, st, event, where, locate, _closes(g, st, event))
                if found is not None:
                    out.append(found)
            continue
        found, _ = _check(g, st, event, where, locate, derived)
        if found is not None:
            out.append(found)
    return out


def _closes(g: Gate, st: Any, event: Event) -> bool:
    assert g.second is not None
    return st.gate_open[g.index] is not None and g.second(event)


def judge(table: GateTable, st: Any, event: Event, where: Where,
          locate: Locate) -> list[tuple[Gate, Finding]]:
    """Apply the rules to an event that happened; the findings it makes, in rule order."""
    out = []
    for g in table.for_judging(event):
        i = g.index
        if g.kind == "obligations":
            if _closes(g, st, event):
                st.gate_open[i] = None
            if g.first(event):
                st.gate_count[i] += 1
                if st.gate_open[i] is None:
                    st.gate_open[i] = (event.seq, event.line)
            if event.kind == "final":
                found = _obligation(g, st, event, where, locate, False)
                if found is not None:
                    out.append(found)
                    st.gate_open[i] = None
            continue
        found, hit = _check(g, st, event, where, locate, frozenset())
        if found is not None:
            out.append(found)
        if hit:
            st.gate_count[i] += 1
            if g.kind == "forbidden" and found is None and g.unless is not None:
                st.gate_licences[i] -= 1
            elif g.kind == "flows":
                st.gate_open[i] = (event.seq, event.line)
                if g.value:
                    found_values: dict[Any, None] = {}
                    _returned(event.data.get("result"), found_values)
                    _taint(st, i, found_values, event.seq)
    return out


def _taint(st: Any, i: int, values: Mapping[Any, None], seq: int) -> None:
    """Keep the values a source returned: each with the seq of the first source that did,
    its strings also in one text (each followed by NUL) and their lengths, for
    :func:`_carried`."""
    taint = st.gate_taint[i]
    lengths = st.gate_lengths[i]
    added = []
    for v in values:
        if v not in taint:
            taint[v] = seq
            if type(v) is str:
                added.append(v)
                lengths[len(v)] = None
    if added:
        st.gate_text[i] += "\0".join(added) + "\0"


def unmet(gates: Iterable[Gate], st: Any, where: Where, locate: Locate,
          final: Event | None) -> list[tuple[Gate, Finding]]:
    """Obligations still open when a run without a final event ended."""
    if final is not None:
        return []
    out = []
    for g in gates:
        opened = st.gate_open[g.index] if g.kind == "obligations" else None
        if opened is not None:
            out.append((g, Finding(g.code, f"rule '{g.id}': the event at {where(*opened)} "
                                   f"obliges an event matching {g.shown} before the run "
                                   "ends; the run ended without one",
                                   locate(opened[0], opened[1], rule_id=g.id),
                                   "warn" if g.warn else "error")))
    return out
