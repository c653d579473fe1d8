"""The success gate: judge a claimed result against its contract, its trace and a probe.

Three checks, run in order; every applicable one runs and every reason is kept:

1. ``contract`` (and ``schema`` when the contract has a ``json_schema``): the
   result parses, is an object, has its required fields with their types, and
   its values are on their allow-lists. A result that does not parse or is not
   an object stops here: the later checks have nothing to read.
2. ``claim``: each verb the result claims (in ``status`` or ``summary``) is
   backed by a successful call of its tool in the trace, with bound arguments
   equal to the result's fields.
3. ``said``: each claim the contract looks for in the agent's final message
   ("all tests pass", "opened PR #12") is backed by the session: the last call
   that would make it true exists, succeeded, came after what it must follow, and
   holds the value the claim names (:mod:`roadcheck.acceptance.said`).
4. ``probe``: an optional read-only callable confirms the effect is there.

A rejection is data (a :class:`GateResult`), never an exception.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any, Literal

from roadcheck.acceptance.contract import (
    Contract,
    json_type,
    load_contract,
    parse_contract,
    value_key,
)
from roadcheck.acceptance.trace import Call, calls_of
from roadcheck.errors import InputError
from roadcheck.findings import Finding, Location

if TYPE_CHECKING:
    from roadcheck.acceptance.said import TurnEnd

__all__ = ["CHECKS", "GateReason", "GateResult", "said_at_turn_ends", "verify", "verify_session"]

#: The check names a reason can carry, in the order the checks run.
CHECKS = ("contract", "schema", "claim", "said", "probe")

Verdict = Literal["ACCEPTED", "REJECTED"]
_MISSING = object()


@dataclass(frozen=True, slots=True)
class GateReason:
    """One finding of the gate: whether it holds, which check made it, and why."""

    ok: bool
    check: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape: ``{"ok", "check", "message"}``."""
        return {"ok": self.ok, "check": self.check, "message": self.message}

    def __str__(self) -> str:
        return f"{'ok' if self.ok else 'FAIL'}: {self.message}"

    def finding(self) -> Finding:
        """This reason in the shared shape: the check is its code and its location."""
        return Finding(self.check, self.message, Location(check=self.check),
                       "ok" if self.ok else "error")


@dataclass(frozen=True, slots=True)
class GateResult:
    """The gate's verdict on one result, with every reason in the order the checks ran."""

    reasons: tuple[GateReason, ...]
    #: False when the contract checks claims and none was checked (no trace, accepted
    #: on purpose with ``claims_unchecked``); the report then says so.
    claims_checked: bool = True
    #: The verbs the result claims that went unchecked for want of a trace.
    unchecked_claims: tuple[str, ...] = ()

    @property
    def verdict(self) -> Verdict:
        """``REJECTED`` when any reason failed, else ``ACCEPTED``."""
        for r in self.reasons:
            if not r.ok:
                return "REJECTED"
        return "ACCEPTED"

    @property
    def accepted(self) -> bool:
        """True only for an ``ACCEPTED`` verdict."""
        return self.verdict == "ACCEPTED"

    @property
    def exit(self) -> int:
        """The exit code of the verdict: 0 ACCEPTED, 1 REJECTED."""
        return 0 if self.accepted else 1

    @property
    def failures(self) -> tuple[GateReason, ...]:
        """The reasons that failed."""
        return tuple(r for r in self.reasons if not r.ok)

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape: ``{"verdict", "exit", "reasons": [...], "claims_checked"}``.

        ``unchecked_claims`` (the verbs claimed and not checked) appears when
        ``claims_checked`` is false.
        """
        out: dict[str, Any] = {"verdict": self.verdict, "exit": self.exit,
                               "reasons": [r.to_dict() for r in self.reasons],
                               "claims_checked": self.claims_checked}
        if not self.claims_checked:
            out["unchecked_claims"] = list(self.unchecked_claims)
        return out


def _contract_of(contract: Contract | Mapping[str, Any] | str | PathLike[str]) -> Contract:
    if isinstance(contract, Contract):
        return contract
    if isinstance(contract, Mapping):
        return parse_contract(dict(contract))
    return load_contract(contract)


def _parse(result: Any, out: list[GateReason]) -> dict[str, Any] | None:
    """The result as an object, or ``None`` after recording why it is not one."""
    if isinstance(result, (str, bytes, bytearray)):
        try:
            result = json.loads(result)
        except RecursionError:
            out.append(GateReason(False, "contract", "result is not valid JSON: nested too deep"))
            return None
        except ValueError as exc:  # JSONDecodeError, bad UTF-8, an integer too long
            out.append(GateReason(False, "contract", f"result is not valid JSON: {exc}"))
            return None
    if not isinstance(result, dict):
        out.append(GateReason(False, "contract",
                              f"result is {_a(json_type(result))}, expected a JSON object"))
        return None
    return result


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _check_contract(obj: dict[str, Any], contract: Contract, out: list[GateReason]) -> None:
    failed = False
    for name, names, tests in contract._types:
        value = obj.get(name, _MISSING)
        if value is _MISSING:
            out.append(GateReason(False, "contract", f"required field '{name}' is missing"))
            failed = True
            continue
        for test in tests:
            if test(value):
                break
        else:
            out.append(GateReason(False, "contract", f"field '{name}' is {json_type(value)}, "
                                  f"expected {' or '.join(names)}"))
            failed = True
    for name, keys, shown in contract._allowed:
        value = obj.get(name, _MISSING)
        if value is _MISSING:
            continue  # absence is the required check's business
        key = value_key(value)
        if key is None or key not in keys:
            out.append(GateReason(False, "contract",
                                  f"field '{name}' = {_show(value)} is not on its allow-list "
                                  f"{shown}"))
            failed = True
    if not failed:
        n, m = len(contract._types), len(contract._allowed)
        out.append(GateReason(True, "contract",
                              f"result has the contract's shape: {n} required "
                              f"field{'' if n == 1 else 's'} typed, {m} allow-list"
                              f"{'' if m == 1 else 's'} held"))


def _show(value: Any) -> str:
    """A value for a message, kept short: results may be large and arbitrary."""
    if isinstance(value, (dict, list, tuple)):
        return f"<{json_type(value)}>"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        return "<large integer>"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_schema(obj: dict[str, Any], contract: Contract, out: list[GateReason]) -> None:
    try:
        errors = sorted(contract._validator.iter_errors(obj),
                        key=lambda e: ([str(p) for p in e.absolute_path], e.message))
    except Exception as exc:  # a Python value JSON Schema cannot judge
        out.append(GateReason(False, "schema",
                              f"could not validate against the JSON Schema: {type(exc).__name__}"))
        return
    for err in errors:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
        message = err.message if len(err.message) <= 200 else err.message[:197] + "..."
        out.append(GateReason(False, "schema", f"at ${where}: {message}"))
    if not errors:
        out.append(GateReason(True, "schema", "result satisfies the JSON Schema"))


def _claim_text(obj: dict[str, Any]) -> str:
    status, summary = obj.get("status"), obj.get("summary")
    return (f"{status if isinstance(status, str) else ''} "
            f"{summary if isinstance(summary, str) else ''}")


def _check_claims(obj: dict[str, Any], contract: Contract, trace: Any,
                  out: list[GateReason]) -> None:
    text = _claim_text(obj)
    calls: list[Call] | None = None
    for verb, rule, search in contract._claims:
        if search(text) is None:
            continue
        if calls is None:
            calls = calls_of(trace)
        out.append(_judge_claim(verb, rule.tool, rule.args, obj, calls))


def _same(a: Any, b: Any) -> bool:
    ka = value_key(a)
    if ka is not None:
        return ka == value_key(b)
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # an odd Python value that cannot be compared
        return False


def _judge_claim(verb: str, tool: str, binds: Mapping[str, str], obj: dict[str, Any],
                 calls: list[Call]) -> GateReason:
    called = sorted({c.tool for c in calls})
    seen = f"(tools called: {called or 'none'})"
    of_tool = [c for c in calls if c.tool == tool]
    if not of_tool:
        return GateReason(False, "claim", f"claims '{verb}' but the trace has no '{tool}' call "
                          f"{seen}")
    bound = of_tool
    if binds:
        for fld in binds.values():
            if fld not in obj:
                return GateReason(False, "claim", f"claims '{verb}' but the result has no "
                                  f"'{fld}' to match a '{tool}' call against {seen}")
        bound = [c for c in of_tool
                 if all(_same(c.args.get(arg, _MISSING), obj[fld]) for arg, fld in binds.items())]
        if not bound:
            want = ", ".join(f"{arg}={_show(obj[fld])}" for arg, fld in binds.items())
            got = "; ".join(", ".join(f"{arg}={_show(c.args.get(arg, _MISSING))}"
                                      if arg in c.args else f"no {arg}" for arg in binds)
                            for c in of_tool[:5])
            return GateReason(False, "claim", f"claims '{verb}' but no '{tool}' call has "
                              f"{want}; the calls had {got} {seen}")
    good = [c for c in bound if not c.errored]
    if not good:
        n = len(bound)
        return GateReason(False, "claim", f"claims '{verb}' but {'the' if n == 1 else 'every'} "
                          f"matching '{tool}' call returned an error, at {_where(bound)} "
                          f"{seen}")
    bind_note = ""
    if binds:
        bind_note = " with " + ", ".join(f"{arg}={_show(obj[fld])}" for arg, fld in binds.items())
    return GateReason(True, "claim", f"claim '{verb}' is backed by a '{tool}' call{bind_note} "
                      f"({good[0].where})")


def _where(calls: list[Call]) -> str:
    shown = ", ".join(c.where for c in calls[:5])
    return shown + (", ..." if len(calls) > 5 else "")


def _check_probe(probe: Callable[[], Any], out: list[GateReason]) -> None:
    label = getattr(probe, "label", None) or "probe"
    try:
        answer = probe()
        confirmed = bool(answer)
    except Exception as exc:
        text = str(exc)
        if len(text) > 200:
            text = text[:197] + "..."
        out.append(GateReason(False, "probe", f"{label} could not complete: "
                              f"{type(exc).__name__}{': ' + text if text else ''}"))
        return
    if confirmed:
        out.append(GateReason(True, "probe", f"{label} confirmed the effect on read-back"))
    else:
        detail = getattr(answer, "detail", None)
        out.append(GateReason(False, "probe", f"{label} found no effect on read-back "
                              f"(wrong-effect){'; ' + detail if detail else ''}"))


def verify(result: Any, contract: Contract | Mapping[str, Any] | str | PathLike[str],
           trace: Any = None, probe: Callable[[], Any] | None = None, *,
           claims_unchecked: bool = False) -> GateResult:
    """Accept an agent's claimed result only when every applicable check passes.

    Args:
        result: what the agent returned: an object, or JSON text (parsed first).
        contract: a :class:`Contract`, a contract document as a dict, or a path to one.
        trace: the calls the agent made (see :func:`roadcheck.acceptance.calls_of`).
        probe: an optional read-only callable; truthy means the effect is there.
        claims_unchecked: accept a contract that checks claims without a trace. The
            claims are then not checked, and the result says so
            (``claims_checked`` false, ``unchecked_claims``).

    Returns:
        A :class:`GateResult`; rejecting is never an exception.

    Raises:
        InputError: the contract checks claims, no trace was given, and
            ``claims_unchecked`` is false: a claim nobody checked is no evidence,
            so the gate cannot judge (exit 2). An unusable contract (given as a
            dict or path) raises :class:`~roadcheck.errors.SpecError`.
    """
    c = _contract_of(contract)
    if trace is None and c._said:
        raise InputError("the contract checks the claims in the agent's final message "
                         "('said'), and no session was given (--trace)")
    if trace is None and c._claims and not claims_unchecked:
        verbs = ", ".join(f"'{verb}'" for verb, _, _ in c._claims)
        raise InputError(f"the contract checks claims ({verbs}) against a trace, and no trace "
                         "was given: a claim nobody checked is no evidence; give the trace "
                         "(--trace), or --claims-unchecked to judge without checking claims")
    out: list[GateReason] = []
    obj = _parse(result, out)
    unchecked: tuple[str, ...] = ()
    if obj is not None:
        _check_contract(obj, c, out)
        if c._validator is not None:
            _check_schema(obj, c, out)
        if trace is not None and c._claims:
            _check_claims(obj, c, trace, out)
        elif c._claims:
            text = _claim_text(obj)
            unchecked = tuple(verb for verb, _, search in c._claims if search(text) is not None)
        if c._said:
            _check_said(c, trace, out)
        if probe is not None:
            _check_probe(probe, out)
    return GateResult(tuple(out), claims_checked=not c._claims or trace is not None,
                      unchecked_claims=unchecked)


def verify_session(contract: Contract | Mapping[str, Any] | str | PathLike[str],
                   session: Any, *, every_turn: bool = False) -> GateResult:
    """Judge a session on its own: the claims the agent's final message makes, each
    against the calls the session holds (the contract's ``said``).

    ``session`` is a :class:`~roadcheck.events.Trajectory` or its events. With
    ``every_turn``, every turn end is judged (see :func:`said_at_turn_ends`), each
    reason starting with the seq of its message. A contract that also checks a
    result's fields, or that looks for no words, needs the result (:func:`verify`)
    and raises :class:`InputError`.
    """
    c = _session_contract(contract)
    out: list[GateReason] = []
    if every_turn:
        ends = said_at_turn_ends(c, session)
        if not ends:
            out.append(GateReason(False, "said", "the contract checks the claims in the "
                                  "agent's words, and the trace holds no message of the "
                                  "agent's"))
        for end in ends:
            out.extend(GateReason(s.ok, "said", f"at seq {end.seq}: {s.message}")
                       for s in end.shown)
        if ends and not out:
            n = len(c._said)
            out.append(GateReason(True, "said", f"none of the agent's {len(ends)} turn "
                                  f"end{'s' if len(ends) != 1 else ''} makes any of the "
                                  f"contract's {n} claim{'s' if n != 1 else ''}"))
        return GateResult(tuple(out))
    _check_said(c, session, out)
    return GateResult(tuple(out))


def said_at_turn_ends(contract: Contract | Mapping[str, Any] | str | PathLike[str],
                      session: Any) -> list[TurnEnd]:
    """The claims each turn end of ``session`` makes (the agent's last message before
    each message of the user's, and its last message), each judged on the session up
    to that message by the contract's ``said``: the same judge as the final message's.

    Raises :class:`InputError` as :func:`verify_session` does for a contract it
    cannot judge a session with, and for a ``session`` that is no trajectory.
    """
    from roadcheck.acceptance.said import check_turn_ends

    c = _session_contract(contract)
    events = _events_of(session)
    if events is None:
        raise InputError("a session is a Trajectory or a list of its events")
    return check_turn_ends(events, c._said)


def _session_contract(contract: Contract | Mapping[str, Any] | str | PathLike[str]
                      ) -> Contract:
    c = _contract_of(contract)
    if not c._said:
        raise InputError("the contract looks for no claim in the agent's words (no 'said'); "
                         "give the agent's result (--result) to judge it")
    if c._types or c._allowed or c._claims or c._validator is not None:
        raise InputError("the contract also checks the fields of a result (required, enums, "
                         "claims or json_schema); give the agent's result (--result)")
    return c


def _events_of(trace: Any) -> list[Any] | None:
    from roadcheck.events import Event, Trajectory

    if isinstance(trace, Trajectory):
        return list(trace.events)
    if isinstance(trace, (list, tuple)) and all(isinstance(e, Event) for e in trace):
        return list(trace)
    return None


def _check_said(contract: Contract, trace: Any, out: list[GateReason]) -> None:
    from roadcheck.acceptance.said import check_said, final_message

    events = _events_of(trace)
    text = final_message(events) if events is not None else None
    if events is None or text is None:
        out.append(GateReason(False, "said", "the contract checks the claims in the agent's "
                              "final message, and the trace holds no message of the agent's"))
        return
    shown = check_said(text, events, contract._said)
    if not shown:
        n = len(contract._said)
        out.append(GateReason(True, "said", f"the agent's final message makes none of the "
                              f"contract's {n} claim{'s' if n != 1 else ''}"))
    out.extend(GateReason(s.ok, "said", s.message) for s in shown)
