"""Coding-agent hooks: one adapter per CLI over one guard core.

Every coding agent CLI runs a command for its hook events, with the event as JSON
on standard input, and reads the answer from standard output and the exit code.
What differs between them is the shape of that JSON, which events exist, whether a
hook may *ask* the person, and what happens when the hook fails. An adapter
(:mod:`roadcheck.guard.adapters`) is that difference and nothing else:

* ``parse(data) -> HookRequest``: the CLI's hook JSON as one of a few things the
  guard understands (a user prompt, a call about to run, a call that ran or failed,
  the assistant handing the turn back, or an event the guard does not read);
* ``answer(request, outcome, grant) -> HookAnswer``: the guard's outcome in the
  CLI's format (standard output and exit code);
* ``fail(reason) -> HookAnswer``: the answer that stops the call when anything goes
  wrong, in the one form that CLI treats as a block.

:func:`apply` is the guard's side, the same for every CLI: it observes and checks
on a :class:`~roadcheck.guard.store.GuardSession` (or anything with its ``guard``,
``asked``, ``observe``, ``check`` and ``record``), so a resident process can call it
as the one-process-per-event hook does. :func:`run` is the whole hook: parse, open
the session, apply, answer; it never raises, and any failure is the adapter's
``fail`` answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from roadcheck.guard.core import Decision

__all__ = ["ADAPTERS", "Adapter", "BadInput", "HookAnswer", "HookRequest", "Outcome", "apply",
           "approve_command", "held_message", "load", "main", "run", "stop_gate"]

#: The CLIs with a hook adapter: command name -> module.
ADAPTERS = {"claude-code": "roadcheck.guard.adapters.claude_code",
            "codex": "roadcheck.guard.adapters.codex",
            "gemini": "roadcheck.guard.adapters.gemini",
            "opencode": "roadcheck.guard.adapters.opencode",
            "copilot": "roadcheck.guard.adapters.copilot",
            "cursor": "roadcheck.guard.adapters.cursor",
            "cline": "roadcheck.guard.adapters.cline"}

Kind = Literal["prompt", "pre", "permission", "post", "failed", "stop", "ignore"]
MAIN_AGENT = "claude"
EXIT_BLOCK = 2


class BadInput(Exception):
    """Hook input the adapter cannot read: the call is stopped with this reason."""


class HookRequest:
    """One hook event, as the guard reads it.

    ``kind``: ``prompt`` (a user message, ``text``), ``pre`` (a call about to run,
    ``call``), ``permission`` (the CLI is about to ask the person about ``call``),
    ``post`` (``call`` ran), ``failed`` (``call`` ran and failed, ``text`` the error),
    ``stop`` (the assistant hands the turn back, ``text`` its last message where the
    CLI gives it, ``active`` the CLI's ``stop_hook_active``, ``agent_transcript`` a
    subagent's own transcript), ``ignore`` (an event the guard does not read). ``event`` is the
    CLI's own name for the event, echoed where its answer must name it; ``call`` the
    action event of a call (``action_type``, ``args``, ``call_id``, ``command``).

    A plain class, not a dataclass: every hook process builds the classes it imports.
    """

    __slots__ = ("active", "agent", "agent_transcript", "call", "event", "kind", "session",
                 "text", "transcript")

    def __init__(self, kind: Kind, event: str, session: str = "",
                 call: dict[str, Any] | None = None, text: str | None = None,
                 agent: str = MAIN_AGENT, transcript: str | None = None) -> None:
        self.kind = kind
        self.event = event
        self.session = session
        self.call = call
        self.text = text
        self.agent = agent
        self.transcript = transcript
        #: For a stop: the CLI says the agent already continues after a hook held a stop.
        self.active: bool | None = None
        #: For a subagent's stop: the subagent's own transcript, where the CLI names it.
        self.agent_transcript: str | None = None

    def stopping(self, active: bool | None, agent_transcript: str | None = None) -> HookRequest:
        """This stop request with the CLI's ``stop_hook_active`` and a subagent's own
        transcript set; returns itself."""
        self.active = active
        self.agent_transcript = agent_transcript
        return self

    def __repr__(self) -> str:
        return (f"HookRequest({self.kind!r}, {self.event!r}, {self.session!r}, "
                f"call={self.call!r}, text={self.text!r}, agent={self.agent!r})")


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """What the hook process prints and how it exits."""

    exit: int
    stdout: str = ""
    stderr: str = ""
    decision: Decision | None = None


class Outcome:
    """What the guard made of a request, for the adapter to put in the CLI's words.

    ``decision``: the decision on a call (``pre``, ``permission``), None for an event
    only observed; ``message``: for a person, what is held, why, and what to say or do
    to let it through; ``open``: obligations still open when the assistant hands the
    turn back (``stop``); ``held``: for a stop, the claims of the agent's final message
    the session does not back, one line each for the model
    (:mod:`roadcheck.guard.stopgate`); ``warning``: for the person, a stop let through
    with claims still unbacked once the re-prompts ran out.
    """

    __slots__ = ("decision", "held", "message", "open", "warning")

    def __init__(self, decision: Decision | None = None, message: str = "",
                 open: tuple[str, ...] = (), held: tuple[str, ...] = (),
                 warning: str = "") -> None:
        self.decision = decision
        self.message = message
        self.open = open
        self.held = held
        self.warning = warning

    def stop_reason(self) -> str:
        """For a stop: why it is held (open obligations, unbacked claims), or ""."""
        parts = []
        if self.open:
            parts.append("roadcheck guard: still open: " + "; ".join(self.open))
        if self.held:
            parts.append("roadcheck guard: " + "; ".join(self.held))
        return "\n".join(parts)


class Adapter:
    """One CLI's hook format (see the module docstring).

    ``can_ask``: the CLI can put a hook's question to the person (an ``ask`` answer);
    ``transcript_format``: the :mod:`roadcheck.ingest` reader of its transcript, for
    ``--catch-up``; ``options``: the hook options its command takes beside the
    shared ones.
    """

    __slots__ = ("answer", "can_ask", "fail", "name", "options", "parse", "transcript_format")

    def __init__(self, name: str, parse: Callable[[bytes], HookRequest],
                 answer: Callable[[HookRequest, Outcome, bool], HookAnswer],
                 fail: Callable[[str], HookAnswer], *, can_ask: bool,
                 transcript_format: str | None = None,
                 options: frozenset[str] = frozenset()) -> None:
        self.name = name
        self.parse = parse
        self.answer = answer
        self.fail = fail
        self.can_ask = can_ask
        self.transcript_format = transcript_format
        self.options = options


def load(name: str) -> Adapter:
    """The adapter of the CLI ``name`` (a key of :data:`ADAPTERS`), imported on demand."""
    import importlib

    adapter: Adapter = importlib.import_module(ADAPTERS[name]).ADAPTER
    return adapter


# -- reading hook JSON ----------------------------------------------------------------------

def read_object(data: bytes) -> dict[str, Any]:
    """The hook JSON: one object, no key given twice in any object of it."""
    import orjson

    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadInput(f"expected a JSON object, got {type(doc).__name__}")
    from roadcheck.ingest._json import message, repeated_key

    twice = repeated_key(data, doc)
    if twice is not None:
        raise BadInput(message(twice))
    return doc


def field_of(doc: dict[str, Any], key: str, kind: type, what: str) -> Any:
    """``doc[key]``, which must be a ``kind`` (a non-empty one, for a string)."""
    value = doc.get(key)
    if not isinstance(value, kind) or (kind is str and not value) or (
            kind is int and isinstance(value, bool)):
        shown = "missing" if key not in doc else f"a {type(value).__name__}"
        raise BadInput(f"'{key}' must be {what}, got {shown}")
    return value


def optional_text(doc: dict[str, Any], key: str) -> str | None:
    """``doc[key]`` when it is a string; None when absent or null; else bad input."""
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadInput(f"'{key}' must be a string, got a {type(value).__name__}")
    return value


def make_call(tool: str, args: dict[str, Any], call_id: str | None, *,
              shell_tools: tuple[str, ...] = ("Bash",), agent: str = MAIN_AGENT,
              command_key: str = "command") -> dict[str, Any]:
    """The action event of a call; a shell tool's line is its ``command``, and so is the
    ``command`` argument of any other tool (an MCP shell server's) when it is a line."""
    call: dict[str, Any] = {"event": "action", "agent": agent, "action_type": tool,
                            "args": args}
    if call_id is not None:
        call["call_id"] = call_id
    key = command_key if tool in shell_tools else "command"
    if key in args:
        from roadcheck.shellcmd import command_text

        command = command_text(args[key])
        if command is not None:
            call["command"] = command
    return call


def json_args(value: Any, key: str, *, text_ok: bool = False) -> dict[str, Any]:
    """Arguments given as an object, or (``text_ok``) as JSON text of one, as some CLIs
    send them."""
    if isinstance(value, str) and text_ok:
        import orjson

        raw = value.encode("utf-8", "surrogatepass")
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise BadInput(f"'{key}' is not JSON: {exc}") from None
        from roadcheck.ingest._json import message, repeated_key

        twice = repeated_key(raw, value)
        if twice is not None:
            raise BadInput(f"'{key}': {message(twice)}")
    if not isinstance(value, dict):
        shown = "missing" if value is None else f"a {type(value).__name__}"
        raise BadInput(f"'{key}' must be an object, got {shown}")
    return value


def dumps(doc: dict[str, Any]) -> str:
    """One line of JSON, as every CLI reads it."""
    import orjson

    return orjson.dumps(doc).decode() + "\n"


# -- the guard's side ------------------------------------------------------------------------

#: How much of one argument or of a call's output the session keeps for a stop's claims.
KEPT_TEXT = 2000


def _cut(value: Any) -> Any:
    return value[:KEPT_TEXT] if isinstance(value, str) else value


def _kept(guard: Any, call: dict[str, Any], *, claims: bool = False) -> dict[str, Any]:
    """The call as the session keeps it: its arguments only where a rule binds them or
    some selector reads them (``args``, a ``match: value`` flow).

    Every hook process reads and rewrites the session, and a tool's input can be a
    whole file; only a rule that reads the arguments needs them kept. Where the
    stop's claims are checked (``claims``), the arguments and the output are kept,
    each text cut at :data:`KEPT_TEXT` characters (a claim names a file or a PR
    number, not a file's contents); the arguments a rule reads are kept whole, as
    without it.
    """
    from roadcheck.events import Event

    kept = dict(call)
    if claims and "result" in kept:
        kept["result"] = _cut(kept["result"])
    else:
        kept.pop("result", None)
    c = guard.compiled
    if "args" in c.reads:
        return kept
    event = Event.make(guard.last_seq + 1, "action", call.get("agent"),
                       **{k: v for k, v in kept.items() if k not in ("event", "agent")})
    rules = list(c.by_action.get(call["action_type"]) or ())
    rules.extend(rule for sel, rule in c.selectors_for(call["action_type"]) if sel(event))
    if any("args" in rule.binds for rule in rules):
        return kept
    if claims:
        if isinstance(kept.get("args"), dict):
            kept["args"] = {k: _cut(v) for k, v in kept["args"].items()}
        return kept
    kept.pop("args", None)
    return kept


def asked_key(call: dict[str, Any]) -> str:
    """Where an asked call waits for its result: its call id, else its tool and arguments."""
    call_id = call.get("call_id")
    if isinstance(call_id, str) and call_id:
        return call_id
    from roadcheck.events import args_digest

    return f"{call['action_type']} {args_digest(call.get('args'))}"


def open_obligations(guard: Any) -> tuple[str, ...]:
    """What the guard says is still owed when the assistant hands the turn back.

    A guard that keeps obligations answers ``open_obligations()`` (one line each);
    one without them owes nothing.
    """
    ask = getattr(guard, "open_obligations", None)
    if not callable(ask):
        return ()
    return tuple(str(item) for item in ask())


def apply(live: Any, request: HookRequest, *, approver: str = "user",
          can_ask: bool = True, context: dict[str, str] | None = None,
          gate: Any = None) -> Outcome:
    """Observe or check ``request`` on a locked session ``live``; the guard's whole part.

    A call the guard answered ``ask`` before it runs (where the CLI can ask) waits in
    ``live.asked`` for its result: when it then ran, the person approved it at the
    prompt, and the missing checkpoints are observed first, confirmed by ``approver``
    and bound to the call.

    ``gate``, a :class:`~roadcheck.guard.stopgate.StopGate`: a stop is checked
    against its contract (the claims of the agent's final message, each backed by
    the session or held), and the calls are kept with what those claims read.
    """
    kind = request.kind
    if kind == "prompt":
        live.observe({"event": "message", "role": "user", "text": request.text or ""})
        return Outcome()
    if kind == "stop":
        held, warning, marks = (gate.judge(live, request) if gate is not None
                                else ((), "", ()))
        said: dict[str, Any] = {"event": "message", "role": "assistant", "agent": request.agent,
                                "yields_turn": True}
        if request.text is not None:
            said["text"] = request.text
        if marks:
            said["held"] = list(marks)
        live.observe(said)
        return Outcome(open=open_obligations(live.guard), held=held, warning=warning)
    if kind == "ignore":
        return Outcome()
    call = request.call
    if call is None:
        raise BadInput(f"a '{request.event}' event names no call")
    if kind in ("post", "failed"):
        asked = live.asked.pop(asked_key(call), None)
        if asked:
            from roadcheck.events import args_digest

            approved = Decision("allow", call["action_type"], args_digest(call.get("args")),
                                approvers=(approver,), seq=live.guard.last_seq + len(asked) + 1,
                                call_id=call.get("call_id"), missing=tuple(asked))
            live.record(approved)
            live.guard.approve(approved, approver, agent=call.get("agent"))
        ran = _kept(live.guard, call, claims=gate is not None)
        if kind == "failed":
            ran = {**ran, "error": request.text or "the call failed"}
        live.observe(ran)
        return Outcome()
    decision = live.check(call)
    if decision.verdict == "ask" and can_ask and kind == "pre":
        live.asked[asked_key(call)] = list(decision.missing)
    if decision.allowed:
        return Outcome(decision)
    derived = frozenset(d.checkpoint_id for d in live.guard.spec.derive)
    return Outcome(decision, held_message(decision, request, can_ask=can_ask,
                                          context=context or {}, derived=derived))


def approve_call(spec: str, state_dir: str | None, session: str, checkpoints: tuple[str, ...],
                 *, by: str, tool: str | None = None, args_sha256: str | None = None,
                 call_id: str | None = None, **store_options: Any) -> list[int]:
    """Observe that ``by`` approved one call of a stored ``session``: one checkpoint per id
    in ``checkpoints``, naming the call (``tool``, ``args_sha256``, ``call_id``); their seqs.

    The session must exist (:class:`~roadcheck.errors.StoreError` otherwise): an
    approval for a session the guard never saw licenses nothing it could check.
    """
    call = {"tool": tool, "args_sha256": args_sha256, "call_id": call_id}
    return _observe_approvals(spec, state_dir, session,
                              [_checkpoint(cid, by, call) for cid in checkpoints],
                              store_options)


def approve_call_signed(spec: str, state_dir: str | None, session: str,
                        checkpoints: tuple[str, ...], *, signing_key: str,
                        call: dict[str, str | None], expires_in: float = 300.0,
                        **store_options: Any) -> tuple[list[int], str]:
    """:func:`approve_call` with each checkpoint carrying the approver's signed approval
    of the ``call`` (its ``tool``, ``args_sha256``, ``call_id``), made with the Ed25519
    private key in ``signing_key`` and expiring ``expires_in`` seconds from now
    (:mod:`roadcheck.evidence.approval`); confirmed by the key's id. Their seqs and that
    id."""
    import msgspec

    from roadcheck.errors import InputError
    from roadcheck.evidence.approval import approve_with_key
    from roadcheck.evidence.signing import load_signing_key

    tool, digest = call.get("tool"), call.get("args_sha256")
    if tool is None or digest is None:
        raise InputError("--key signs the approval of one call: give its --tool and "
                         "--args-sha256")
    key_id = load_signing_key(signing_key).key_id
    recs = []
    for cid in checkpoints:
        approval = approve_with_key(signing_key, checkpoint_id=cid, tool=tool,
                                    args_sha256=digest, call_id=call.get("call_id"),
                                    expires_in=expires_in)
        rec = _checkpoint(cid, key_id, call)
        rec["ts"], rec["approval"] = _utc_now(), msgspec.to_builtins(approval)
        recs.append(rec)
    return _observe_approvals(spec, state_dir, session, recs, store_options), key_id


def _checkpoint(cid: str, by: str, call: dict[str, str | None]) -> dict[str, Any]:
    rec: dict[str, Any] = {"event": "checkpoint", "checkpoint_id": cid, "confirmed_by": by}
    rec.update((k, v) for k, v in call.items() if v is not None)
    return rec


def _observe_approvals(spec: str, state_dir: str | None, session: str,
                       recs: list[dict[str, Any]], store_options: dict[str, Any]) -> list[int]:
    from roadcheck.guard.store import GuardStore

    store = GuardStore(state_dir, spec, **store_options)
    with store.session(session) as live:
        return [live.observe(rec).seq for rec in recs]


def _utc_now() -> str:
    """Now, as RFC 3339 UTC with milliseconds and ``Z``."""
    import datetime as dt

    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- what a person reads -----------------------------------------------------------------------

def _what(decision: Decision, request: HookRequest) -> str:
    call = request.call or {}
    tool = decision.tool or call.get("action_type") or "the call"
    command = call.get("command")
    if isinstance(command, str) and command:
        shown = command if len(command) <= 80 else command[:77] + "..."
        return f"{tool} `{shown}`"
    return str(tool)


def approve_command(decision: Decision, session: str, context: dict[str, str]) -> str:
    """The ``roadcheck guard approve`` line a person runs to approve this exact call."""
    import shlex

    parts = ["roadcheck", "guard", "approve", "--spec", context.get("spec", "SPEC")]
    if context.get("state_dir"):
        parts += ["--state-dir", context["state_dir"]]
    parts += ["--session", session]
    for cid in decision.missing:
        parts += ["--checkpoint", cid]
    if decision.tool:
        parts += ["--tool", decision.tool]
    if decision.args_sha256:
        parts += ["--args-sha256", decision.args_sha256]
    parts += ["--by", context.get("approver", "NAME")]
    return " ".join(shlex.quote(p) for p in parts)


def held_message(decision: Decision, request: HookRequest, *, can_ask: bool,
                 context: dict[str, str], derived: frozenset[str] = frozenset()) -> str:
    """One paragraph for the person: what is held, why, how to let it through; then the
    rule ids and reason codes, and the seq the call would have.

    Where the CLI cannot ask, an ``ask`` is a deny, and the way through is a person's
    approval: a message saying so (where the spec derives the checkpoint from one,
    ``derived``) or the ``roadcheck guard approve`` line for this call.
    """
    whys, who = [], ""
    for reason, need in zip(decision.reasons, decision.satisfy, strict=True):
        cid = reason.location.checkpoint_id if reason.location is not None else None
        if not cid:
            whys.append(reason.message)
            continue
        detail = reason.message.split(": ", 1)[1] if ": " in reason.message else "not given"
        if "is absent" in reason.message:
            detail = "no approval was given for it"
        names = (need.split(" by one of ", 1)[1].split(", naming")[0].split(", ")
                 if " by one of " in need else [])
        if names:
            who = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        whys.append(f"it needs the approval '{cid}' first ({detail})"
                    + (f"; only {who} may give it" if names else ""))
    why = "; ".join(whys) or "the guard could not judge it"
    verdict = decision.verdict
    if verdict == "ask" and can_ask:
        how = "approve it at the prompt if you want it to run"
    elif verdict == "ask":
        said = (" say so in your next message, or" if derived & set(decision.missing) else "")
        how = (f"a person approves this exact call:{said} run "
               f"`{approve_command(decision, request.session, context)}` in a terminal of "
               "your own, then let the agent try again")
    elif decision.missing:
        shown = approve_command(decision, request.session, {**context, "approver": "NAME"})
        how = (f"{who or 'someone the rule names'} approves this exact call (a yes from "
               f"{context.get('approver', 'user')} does not count): run `{shown}` in a "
               "terminal of their own, then let the agent try again")
    else:
        how = "it cannot be approved: change the call or the spec"
    held = "held" if verdict == "ask" else "blocked"
    codes = sorted({r.code for r in decision.reasons})
    at = f" at seq {decision.seq}" if decision.seq is not None else ""
    tail = ", ".join([*(f"rule {r}" for r in decision.missing), *codes]) + at
    return (f"roadcheck guard {held} {_what(decision, request)}: {why}. "
            f"To let it through: {how}. [{tail}]")


# -- the hook process ------------------------------------------------------------------------

def _catch_up(live: Any, fmt: str, transcript: str | None, current: str | None) -> None:
    """Observe a transcript's events (not its final line, nor the call being asked about)."""
    if not transcript:
        raise BadInput("'transcript_path' must name the session transcript to catch up from")
    from roadcheck.errors import TraceError
    from roadcheck.ingest import ReadFailure
    from roadcheck.ingest import load as load_trace

    _, entries = load_trace(transcript, fmt)
    for entry in entries:
        if isinstance(entry, ReadFailure):
            raise TraceError(f"cannot catch up from the transcript: {entry.error.message}",
                             path=transcript)
        for event in entry.events:
            if event.kind == "final" or (current is not None
                                         and event.data.get("call_id") == current):
                continue
            live.observe({k: v for k, v in event.data.items() if k != "seq"})


def stop_gate(adapter: Adapter, contract: str | None, max_reprompts: int | None) -> Any:
    """The :class:`~roadcheck.guard.stopgate.StopGate` of the hook options, or None
    without ``contract``; its contract is read on the first stop it judges."""
    if not contract:
        return None
    from roadcheck.guard.stopgate import DEFAULT_LIMIT, StopGate

    return StopGate(contract, DEFAULT_LIMIT if max_reprompts is None else max_reprompts,
                    adapter.transcript_format)


def run(adapter: Adapter, data: bytes, spec: str, state_dir: str | None, *,
        approver: str = "user", grant: bool = False, catch_up: bool = False,
        open_store: Callable[[], Any] | None = None, **store_options: Any) -> HookAnswer:
    """Answer one hook event in ``adapter``'s format; never raises, any failure stops the call.

    ``contract`` (a keyword: a file or ``builtin:NAME``): a stop is checked against its
    ``said`` claims, held at most ``max_reprompts`` (a keyword, default 2) times a turn
    (see :func:`stop_gate`).
    ``state_dir`` and ``store_options`` (``key_file``, ``no_key``, ``linger``): see
    :class:`~roadcheck.guard.store.GuardStore`. ``open_store``: returns the store to
    use instead (a resident one, in a process that answers many calls: see
    :mod:`roadcheck.guard.answer`); its failures stop the call too. With it,
    ``store_options`` may hold ``shown``: the ``spec`` and ``state_dir`` as the hook's
    command line gave them, for the messages (a resident process is given them made
    absolute).
    """
    shown: dict[str, str] | None = store_options.pop("shown", None)
    contract: str | None = store_options.pop("contract", None)
    max_reprompts = store_options.pop("max_reprompts", None)
    try:
        request = adapter.parse(data)
        if request.kind == "ignore":
            return adapter.answer(request, Outcome(), grant)
        gate = stop_gate(adapter, contract, max_reprompts)
        if gate is not None and request.kind == "stop":
            gate.rules()  # an unreadable contract fails before the session is touched
        if open_store is not None:
            store = open_store()
        else:
            from roadcheck.guard.store import GuardStore

            store = GuardStore(state_dir, spec, approver=approver, **store_options)
        context = {"spec": spec, "approver": approver}
        if state_dir:
            context["state_dir"] = state_dir
        if shown:
            context.update(shown)
        with store.session(request.session, create=True) as live:
            if catch_up and adapter.transcript_format and not live.guard.records:
                call_id = (request.call or {}).get("call_id")
                _catch_up(live, adapter.transcript_format, request.transcript,
                          call_id if isinstance(call_id, str) else None)
            outcome = apply(live, request, approver=approver, can_ask=adapter.can_ask,
                            context=context, gate=gate)
        return adapter.answer(request, outcome, grant)
    except BadInput as exc:
        return adapter.fail(f"bad hook input: {exc}")
    except Exception as exc:  # fail closed: a guard that crashes must not let the call run
        from roadcheck.errors import RoadcheckError

        if isinstance(exc, RoadcheckError):
            return adapter.fail(f"{exc.reason}: {exc.location_message()}")
        return adapter.fail(f"internal error: {type(exc).__name__}: {exc}")


def watchdog(seconds: float, adapter: Adapter) -> Callable[[], None]:
    """Start a thread that, unless the returned function is called within ``seconds``,
    answers the adapter's ``fail`` and ends the process.

    Whatever the hook waits on (a file system that hangs, a read the guard did not
    bound), the CLI gets a block in time rather than a timeout that lets the call run.
    A bare ``_thread``: the hook does not pay for importing ``threading``.
    """
    import _thread
    import os

    done = _thread.allocate_lock()
    done.acquire()

    def watch() -> None:
        if done.acquire(timeout=seconds):
            return
        answer = adapter.fail(f"the hook did not answer within {seconds:g} s")
        try:
            if answer.stdout:
                os.write(1, answer.stdout.encode())
            if answer.stderr:
                os.write(2, answer.stderr.encode())
        finally:
            os._exit(answer.exit)

    _thread.start_new_thread(watch, ())
    return done.release


def main(adapter: Adapter, options: dict[str, Any],
         run_hook: Callable[..., HookAnswer] | None = None, deadline: float = 10.0) -> int:
    """Read the hook event on standard input, answer it, return the exit code.

    The answer comes within ``deadline`` seconds, or it is the adapter's ``fail``.
    """
    import sys

    stop = watchdog(deadline, adapter)
    try:
        stops = {"contract": options.get("contract"),
                 "max_reprompts": options.get("max_reprompts")}
        if run_hook is None:
            answer = run(adapter, sys.stdin.buffer.read(), options["spec"], options["state_dir"],
                         approver=options["approver"], grant=options["grant"],
                         catch_up=options["catch_up"], key_file=options["key_file"],
                         no_key=options["no_key"], linger=True, **stops)
        else:
            answer = run_hook(sys.stdin.buffer.read(), options["spec"], options["state_dir"],
                              approver=options["approver"], grant=options["grant"],
                              catch_up=options["catch_up"], key_file=options["key_file"],
                              no_key=options["no_key"], linger=True, **stops)
        try:
            sys.stdout.write(answer.stdout)
            sys.stdout.flush()
        except OSError as exc:  # an answer the CLI cannot read must not pass for "none"
            failed = adapter.fail(f"cannot write the answer: {exc}")
            sys.stderr.write(failed.stderr or f"roadcheck guard: denied: {exc}\n")
            return failed.exit if failed.exit else EXIT_BLOCK
        sys.stderr.write(answer.stderr)
        return answer.exit
    finally:
        stop()


def blocked(exc: BaseException, adapter: Adapter | None = None) -> int:
    """Say that ``exc`` (an interrupt or a bug) blocks the call, in the adapter's form.

    For the few failures that escape :func:`run` (an interrupt, a failed import).
    """
    import sys

    what = ("interrupted" if isinstance(exc, KeyboardInterrupt)
            else f"internal error: {type(exc).__name__}: {exc}")
    answer = (adapter.fail(what) if adapter is not None
              else HookAnswer(EXIT_BLOCK, "", f"roadcheck guard: denied: {what}\n"))
    text = answer.stderr
    try:
        from roadcheck.report._text import escape_controls

        if text:
            text = escape_controls(text.rstrip("\n")) + "\n"
    except BaseException:  # the plain text still says why
        pass
    try:
        if answer.stdout:
            sys.stdout.write(answer.stdout)
            sys.stdout.flush()
        sys.stderr.write(text)
        sys.stderr.flush()
    except BaseException:  # nothing left to tell; the exit code blocks
        pass
    return answer.exit


def denied(reason: str) -> HookAnswer:
    """Exit 2 with the reason on standard error: how Claude Code, Codex and Gemini CLI
    are told to stop a call."""
    return HookAnswer(EXIT_BLOCK, "", f"roadcheck guard: denied: {reason}\n")
