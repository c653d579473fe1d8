"""Reference checks: is a document still valid by its documented format?

These are written from the format documents (docs/formats.md, docs/accept.md,
docs/harness.md, docs/revalidate.md, docs/transcripts.md, docs/frameworks/),
independently of the code under test. They are deliberately *conservative*:
where a format leaves room (an optional key, a free-form payload, an external
format that tolerates extra keys) they accept, so that a document counted as
"made invalid" really is invalid, and a PASS on it really is a false pass.

Each ``check_*`` returns ``None`` when the document is valid, else a short
reason. Roadcheck's own documents forbid unknown keys at every depth and never read
``null`` as "use the default".
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Callable
from typing import Any

__all__ = ["EXTERNAL", "check_doc"]

Check = Callable[[Any, str], str | None]


class _Bad(Exception):
    pass


def _fail(where: str, why: str) -> None:
    raise _Bad(f"{where}: {why}")


# ---------------------------------------------------------------- schema atoms


def text(v: Any, w: str) -> None:
    if not isinstance(v, str) or not v:
        _fail(w, "must be a non-empty string")


def anytext(v: Any, w: str) -> None:
    if not isinstance(v, str):
        _fail(w, "must be a string")


def null(v: Any, w: str) -> None:
    if v is not None:
        _fail(w, "must be null")


def flag(v: Any, w: str) -> None:
    if not isinstance(v, bool):
        _fail(w, "must be true or false")


def integer(lo: int | None = None, hi: int | None = None) -> Check:
    def check(v: Any, w: str) -> None:
        if not isinstance(v, int) or isinstance(v, bool):
            _fail(w, "must be an integer")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            _fail(w, "out of range")
    return check


def number(positive: bool = False) -> Check:
    def check(v: Any, w: str) -> None:
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            _fail(w, "must be a finite number")
        if v < 0 or (positive and v <= 0):
            _fail(w, "out of range")
    return check


def one_of(*values: Any) -> Check:
    def check(v: Any, w: str) -> None:
        if not isinstance(v, str) or v not in values:
            _fail(w, f"must be one of {values}")
    return check


def any_value(v: Any, w: str) -> None:
    if isinstance(v, float) and not math.isfinite(v):
        _fail(w, "not a JSON number")


def scalar(v: Any, w: str) -> None:
    if isinstance(v, (dict, list)):
        _fail(w, "must be a string, number, boolean or null")
    any_value(v, w)


def listof(item: Check, min_len: int = 0) -> Check:
    def check(v: Any, w: str) -> None:
        if not isinstance(v, list) or len(v) < min_len:
            _fail(w, f"must be a list of at least {min_len}")
        for i, x in enumerate(v):
            item(x, f"{w}.{i}")
    return check


def mapof(value: Check, min_len: int = 0) -> Check:
    def check(v: Any, w: str) -> None:
        if not isinstance(v, dict) or len(v) < min_len:
            _fail(w, "must be a mapping")
        for k, x in v.items():
            if not isinstance(k, str) or not k:
                _fail(w, f"key {k!r} is not a non-empty string")
            value(x, f"{w}.{k}")
    return check


def obj(required: dict[str, Check], optional: dict[str, Check] | None = None,
        extra: Check | None = None) -> Check:
    optional = optional or {}

    def check(v: Any, w: str) -> None:
        if not isinstance(v, dict):
            _fail(w, "must be an object")
        for k, c in required.items():
            if k not in v:
                _fail(f"{w}.{k}", "required")
            c(v[k], f"{w}.{k}")
        for k, x in v.items():
            if k in required:
                continue
            if k in optional:
                optional[k](x, f"{w}.{k}")
            elif extra is not None:
                extra(x, f"{w}.{k}")
            else:
                _fail(f"{w}.{k}", "unknown key")
    return check


def either(*checks: Check) -> Check:
    def check(v: Any, w: str) -> None:
        why = None
        for c in checks:
            try:
                c(v, w)
                return
            except _Bad as exc:
                why = str(exc)
        _fail(w, why or "no alternative")
    return check


def argv(v: Any, w: str) -> None:
    listof(text, 1)(v, w)


_ISO = re.compile(r"\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d+)?)?)?(Z|[+-]\d\d:?\d\d)?")


def timestamp(v: Any, w: str) -> None:
    if isinstance(v, _dt.datetime):
        return
    if not isinstance(v, str) or not _ISO.fullmatch(v):
        _fail(w, "must be an ISO 8601 timestamp")
    try:
        _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        _fail(w, "not a real time")


_DURATION = re.compile(r"(\d{1,6}(\.\d+)?[smhd])+|\d{1,6}(\.\d+)?")


def duration(v: Any, w: str) -> None:
    # 90s, 30m, 24h, 7d, 1h30m or seconds; a six-digit count of days is already three millennia
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if not math.isfinite(v) or v <= 0 or v > 10**9:
            _fail(w, "not a usable duration")
        return
    if not isinstance(v, str) or not _DURATION.fullmatch(v):
        _fail(w, "must be a duration like 90s, 30m, 24h, 7d")


def digest(v: Any, w: str) -> None:
    if not isinstance(v, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", v):
        _fail(w, "must be sha256:<64 hex>")


# ---------------------------------------------------------------- replay spec

_KINDS = ("action", "checkpoint", "handoff", "final", "message")
#: Event fields a selector may name, with the type of their value (docs/formats.md).
_FIELD_TYPES: dict[str, Check] = {
    "event": one_of(*_KINDS), "seq": integer(), "agent": anytext, "ts": anytext,
    "action_type": anytext, "irreversible": flag, "call_id": anytext,
    "checkpoint_id": anytext, "confirmed_by": anytext, "decision": anytext,
    "from_agent": anytext, "to_agent": anytext,
    "task_success": flag, "role": one_of("user", "assistant", "system", "tool"),
    "text": anytext, "yields_turn": flag,
}


def selector(v: Any, w: str) -> None:
    if not isinstance(v, dict) or not v:
        _fail(w, "a selector is a non-empty mapping")
    for k, cond in v.items():
        if k not in _FIELD_TYPES:
            _fail(f"{w}.{k}", "not an event field")
        typed = _FIELD_TYPES[k]
        where = f"{w}.{k}"
        if isinstance(cond, dict):
            if set(cond) == {"regex"}:
                if typed is not anytext:
                    _fail(where, "regex on a field that is not text")
                text(cond["regex"], f"{where}.regex")
                try:
                    re.compile(cond["regex"])
                except re.error:
                    _fail(where, "bad regex")
            elif set(cond) == {"in"}:
                listof(typed, 1)(cond["in"], f"{where}.in")
            else:
                _fail(where, "a condition is a value, {regex} or {in}")
        else:
            typed(cond, where)


def _names(v: Any, w: str) -> None:
    either(text, listof(text, 1))(v, w)


SPEC = obj({}, {
    "mandatory_checkpoints": listof(obj(
        {"checkpoint_id": text, "must_precede": _names},
        {"scope": one_of("first", "each"), "consume": flag, "confirmed_by": listof(text),
         "voided_by": listof(selector)})),
    "handoff_contracts": listof(obj(
        {"from_agent": text, "to_agent": text},
        {"required_fields": listof(text), "require_verified": flag})),
    "derive": listof(obj({"checkpoint_id": text, "when": selector})),
})


def check_spec(doc: Any, w: str = "spec") -> None:
    SPEC(doc, w)
    if not doc.get("mandatory_checkpoints") and not doc.get("handoff_contracts"):
        _fail(w, "checks nothing")
    pairs = [(c["from_agent"], c["to_agent"]) for c in doc.get("handoff_contracts", [])]
    if len(set(pairs)) != len(pairs):
        _fail(w, "two contracts for one border")


# ---------------------------------------------------------------- native trajectory

_BY_KIND: dict[str, dict[str, Check]] = {
    "action": {"action_type": text},
    "checkpoint": {"checkpoint_id": text},
    "handoff": {"from_agent": text, "to_agent": text, "payload": mapof(any_value)},
    "final": {"task_success": flag},
    "message": {"role": one_of("user", "assistant", "system", "tool")},
}
_OPTIONAL: dict[str, Check] = {"agent": anytext, "ts": anytext, "irreversible": flag,
                               "confirmed_by": anytext, "text": anytext, "yields_turn": flag}


def check_native(lines: Any, w: str = "line") -> None:
    if not isinstance(lines, list) or not lines:
        _fail(w, "no events")
    last = None
    for i, ev in enumerate(lines):
        where = f"{w} {i + 1}"
        if not isinstance(ev, dict):
            _fail(where, "not an object")
        seq = ev.get("seq")
        integer()(seq, f"{where}.seq")
        if last is not None and seq <= last:
            _fail(where, "seq does not increase")
        last = seq
        kind = ev.get("event")
        one_of(*_KINDS)(kind, f"{where}.event")
        for k, c in _BY_KIND[kind].items():
            if k not in ev:
                _fail(f"{where}.{k}", "required")
            c(ev[k], f"{where}.{k}")
        for k, c in _OPTIONAL.items():
            if k in ev and k not in _BY_KIND[kind]:
                c(ev[k], f"{where}.{k}")
        for k, v in ev.items():
            any_value(v, f"{where}.{k}")
        if (kind == "final") != (i == len(lines) - 1):
            _fail(where, "exactly one final, and last")


# ---------------------------------------------------------------- accept

_TYPE_NAMES = ("string", "integer", "number", "boolean", "array", "object", "null")
_CLAIM = either(text, obj({"tool": text}, {"args": mapof(text)}))
CONTRACT = obj({}, {
    "required": mapof(either(one_of(*_TYPE_NAMES), listof(one_of(*_TYPE_NAMES), 1))),
    "enums": mapof(listof(scalar)),
    "claims": mapof(_CLAIM),
    "claim_requires_action": mapof(_CLAIM),
    "json_schema": mapof(any_value),
})


def check_contract(doc: Any, w: str = "contract") -> None:
    CONTRACT(doc, w)
    if not any(doc.get(k) for k in ("required", "enums", "claims", "claim_requires_action",
                                    "json_schema")):
        _fail(w, "checks nothing")


def check_result(doc: Any, w: str = "result") -> None:
    """Any JSON value parses; whether it is acceptable is the contract's judgement."""
    any_value(doc, w)


def check_trace(doc: Any, w: str = "trace") -> None:
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "seq" in doc[0]:
        check_native(doc, w)
        return
    listof(obj({"tool": text}, {"args": mapof(any_value), "result": any_value},
               extra=any_value))(doc, w)


# ---------------------------------------------------------------- workflow

_PLACEHOLDERS = {"run_dir", "run_id", "artifact", "input", "python", "spec_dir", "phase"}


def real(v: Any, w: str) -> None:
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        _fail(w, "must be a finite number")


_GATE = either(
    obj({"command": argv}, {"timeout": number(positive=True)}),
    obj({"schema": text}),
    obj({"callable": text}),
    obj({"score": argv, "threshold": real}, {"timeout": number(positive=True)}),
    obj({"accept": text}),
)
_PHASE = obj(
    {"name": text, "role": text, "producer": argv, "artifact": text, "gate": _GATE},
    {"max_attempts": integer(1, 100), "reviews": text, "input": text,
     "timeout": number(positive=True),
     "effect": obj({"retry_class": one_of("safe_to_retry", "unsafe_to_retry",
                                          "reconcile_first")},
                   {"idempotency_key": text, "reconcile": argv,
                    "timeout": number(positive=True)})})
_PARAM = either(anytext, obj({}, {"default": anytext, "description": anytext}))
WORKFLOW = obj({"workflow": text, "phases": listof(_PHASE, 1)},
               {"params": mapof(_PARAM), "allowed_roots": listof(text)})


def _strings(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, dict):
        return [s for x in v.values() for s in _strings(x)]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    return []


def check_workflow(doc: Any, w: str = "workflow") -> None:
    WORKFLOW(doc, w)
    for name in doc.get("params", {}):
        if name in _PLACEHOLDERS:
            _fail(f"{w}.params.{name}", "a built-in name cannot be a param")
    known = _PLACEHOLDERS | set(doc.get("params", {}))
    names: dict[str, str] = {}
    for i, phase in enumerate(doc["phases"]):
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", phase["name"]):
            _fail(f"{w}.phases.{i}.name", "not a safe name")
        if phase["name"] in names:
            _fail(f"{w}.phases.{i}.name", "a second phase of this name")
        if "reviews" in phase and (phase["reviews"] not in names
                                   or names[phase["reviews"]] == phase["role"]):
            _fail(f"{w}.phases.{i}.reviews", "must name an earlier phase of another role")
        names[phase["name"]] = phase["role"]
        for s in _strings(phase):
            for name in re.findall(r"\{([^{}]*)\}", s):
                if name not in known:
                    _fail(f"{w}.phases.{i}", f"unknown placeholder {name!r}")
            if s.count("{") != s.count("}"):
                _fail(f"{w}.phases.{i}", "a brace that is not a placeholder")


# ---------------------------------------------------------------- checkpoint

_T = {"state": text}
_PATHS = either(text, listof(text))
CHECKPOINT = obj({"observed_at": timestamp, "remaining": listof(obj(
    {"step": text, "retry_class": one_of("safe_to_retry", "unsafe_to_retry", "reconcile_first")},
    {"effect": text, "idempotency_key": text}))}, {
    "task": obj({"path": text}, {"state": text}),
    "inputs": _PATHS,
    "inputs_digest": digest,
    "artifacts": mapof(obj({"path": text}, {
        "state": text, "digest": digest,
        "expect": obj({}, {"min_bytes": integer(0), "format": one_of("json", "jsonl", "yaml"),
                           "members": obj({"glob": text, "count": integer(0)}),
                           "newer_than": _PATHS})})),
    "external_effects": mapof(obj({"state": one_of("attempted", "confirmed", "unknown")}, {
        "remote_id": text, "idempotency_key": text, "ledger": text, "reconcile": argv,
        "timeout": number(positive=True)})),
    "capabilities": mapof(obj({}, {"state": one_of("allowed", "denied"),
                                   "checked_at": timestamp, "max_age": duration,
                                   "check": argv, "timeout": number(positive=True)})),
    "budgets": mapof(obj({"limit": number()}, {"spent": number(), "spent_file": text,
                                               "spent_command": argv,
                                               "timeout": number(positive=True)})),
    "blockers": listof(obj({"name": text}, {"file": text, "active": flag,
                                            "until": timestamp})),
    "date_gates": listof(obj({"name": text}, {"not_before": timestamp,
                                              "not_after": timestamp})),
    "cadence": obj({"every": duration}, {"last_output_at": timestamp, "command": argv,
                                         "timeout": number(positive=True)}),
    "next_action": text,
    "decision": one_of("continue", "reconcile_first", "escalate"),
    "findings": listof(obj({"question": text, "code": text, "message": anytext})),
})


def check_checkpoint(doc: Any, w: str = "checkpoint") -> None:
    CHECKPOINT(doc, w)
    for name, budget in doc.get("budgets", {}).items():
        if sum(k in budget for k in ("spent", "spent_file", "spent_command")) != 1:
            _fail(f"{w}.budgets.{name}", "exactly one of spent, spent_file, spent_command")


# ---------------------------------------------------------------- external formats

#: Per external format: keys that must stay present where the seed had them, and keys
#: whose scalar value must keep its type. Containers must always keep theirs (null is
#: allowed where the format allows it).
EXTERNAL: dict[str, dict[str, frozenset[str]]] = {
    "transcript": {
        "required": frozenset({"role", "messages", "traj", "simulations", "function", "name",
                               "tool_call_id", "id", "arguments"}),
        "typed": frozenset({"role", "id", "name", "tool_call_id", "arguments", "type",
                            "requestor"}),
        "nullable": frozenset({"tool_calls", "content", "info"}),
    },
    "otel": {
        # attributes, events and an attribute's value may be absent in OTLP: not required
        "required": frozenset({"resourceSpans", "scopeSpans", "spans", "traceId", "spanId",
                               "name", "key", "context", "span_id", "trace_id"}),
        "typed": frozenset({"traceId", "spanId", "parentSpanId", "name", "key", "stringValue",
                            "startTimeUnixNano", "endTimeUnixNano", "timeUnixNano",
                            "span_id", "trace_id", "parent_id", "start_time", "end_time",
                            "boolValue", "intValue"}),
        "nullable": frozenset({"parent", "status"}),
    },
    "atif": {
        "required": frozenset({"schema_version", "session_id", "steps", "step_id", "source",
                               "tool_calls", "tool_call_id", "function_name", "observation",
                               "results", "source_call_id", "subagent_trajectory_ref",
                               "agent", "name"}),
        "typed": frozenset({"schema_version", "session_id", "step_id", "source",
                            "tool_call_id", "function_name", "source_call_id", "name",
                            "timestamp"}),
        "nullable": frozenset({"extra", "metrics"}),
    },
    "openai-agents": {
        "required": frozenset({"object", "id", "trace_id", "span_data", "type", "tool_name",
                               "call_id", "decision", "agent", "name", "item", "raw_item"}),
        "typed": frozenset({"object", "id", "trace_id", "parent_id", "type", "name",
                            "tool_name", "call_id", "decision", "confirmed_by", "agent",
                            "started_at", "ended_at", "from_agent", "to_agent", "arguments",
                            "input"}),
        "nullable": frozenset({"error", "metadata", "group_id", "output", "mcp_data"}),
    },
}


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number" if math.isfinite(v) else "inf"
    return type(v).__name__


def compare_external(seed: Any, doc: Any, fmt: str, w: str = "") -> None:
    """Fail when ``doc`` dropped a structural key, or retyped a structural value, of ``seed``."""
    rules = EXTERNAL[fmt]
    if isinstance(seed, dict):
        if not isinstance(doc, dict):
            _fail(w, "an object became something else")
        for k, sv in seed.items():
            if k not in doc:
                if k in rules["required"]:
                    _fail(f"{w}.{k}", "a required key is gone")
                continue
            dv = doc[k]
            if dv is None and k in rules["nullable"]:
                continue
            if (isinstance(sv, (dict, list)) or k in rules["typed"]) and _kind(sv) != _kind(dv):
                _fail(f"{w}.{k}", f"{_kind(sv)} became {_kind(dv)}")
            compare_external(sv, dv, fmt, f"{w}.{k}")
    elif isinstance(seed, list):
        if not isinstance(doc, list):
            _fail(w, "a list became something else")
        if len(seed) == len(doc):
            for i, (sv, dv) in enumerate(zip(seed, doc, strict=True)):
                if isinstance(sv, (dict, list)) and _kind(sv) != _kind(dv):
                    _fail(f"{w}.{i}", f"{_kind(sv)} became {_kind(dv)}")
                compare_external(sv, dv, fmt, f"{w}.{i}")
    elif isinstance(doc, float) and not math.isfinite(doc):
        _fail(w, "not a JSON number")


def _message_lists(v: Any) -> list[list[Any]]:
    found = []
    if isinstance(v, list) and any(isinstance(m, dict) and "role" in m for m in v):
        found.append(v)
    if isinstance(v, dict):
        for x in v.values():
            found += _message_lists(x)
    elif isinstance(v, list):
        for x in v:
            found += _message_lists(x)
    return found


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def check_transcript_calls(doc: Any, w: str = "transcript") -> None:
    """A tool message must answer a call an earlier assistant message made."""
    for messages in _message_lists(doc):
        made: set[Any] = set()
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                continue
            for call in _list(m.get("tool_calls")):
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    made.add(call["id"])
            if m.get("role") == "tool":
                answers = m.get("tool_call_id", m.get("id"))
                if isinstance(answers, str) and answers not in made:
                    _fail(f"{w}.{i}", f"answers call {answers!r}, which no message made")


def check_atif_calls(doc: Any, w: str = "atif") -> None:
    """An observation result must name a call of its own step."""
    docs = doc if isinstance(doc, list) else [doc]
    for d in docs:
        for i, step in enumerate(_list(d.get("steps") if isinstance(d, dict) else None)):
            if not isinstance(step, dict):
                continue
            calls = {str(c.get("tool_call_id")) for c in _list(step.get("tool_calls"))
                     if isinstance(c, dict)}
            obs = step.get("observation")
            for r in _list(obs.get("results") if isinstance(obs, dict) else None):
                if isinstance(r, dict) and "source_call_id" in r \
                        and str(r["source_call_id"]) not in calls:
                    _fail(f"{w}.steps.{i}", "a result for a call the step did not make")


def check_doc(kind: str, doc: Any, seed: Any = None) -> str | None:
    """``None`` when ``doc`` is valid as a ``kind`` document, else why not."""
    try:
        if kind == "spec":
            check_spec(doc)
        elif kind == "native":
            check_native(doc)
        elif kind == "contract":
            check_contract(doc)
        elif kind == "result":
            check_result(doc)
        elif kind == "trace":
            check_trace(doc)
        elif kind == "workflow":
            check_workflow(doc)
        elif kind == "checkpoint":
            check_checkpoint(doc)
        elif kind in EXTERNAL:
            compare_external(seed, doc, kind)
            if kind == "transcript":
                check_transcript_calls(doc)
            if kind == "atif":
                check_atif_calls(doc)
        else:
            raise ValueError(kind)
    except _Bad as exc:
        return str(exc)
    return None
