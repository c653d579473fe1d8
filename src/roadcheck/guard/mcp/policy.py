"""What the MCP proxy decides, apart from any transport: one guard session, held.

:class:`McpPolicy` turns a ``tools/call`` into a :class:`Step`: forward it
(``Forward``: the call was allowed and is now part of the session), answer it
without forwarding (``Answer``: a tool result with ``isError: true`` and the
reason, or a 2026-07-28 ``InputRequiredResult`` asking a person), or ask over
``elicitation/create`` first (``Elicit``: 2025-11-25, when the client declared
it can). It also rewrites a ``tools/list`` result (pins, marks, hints) and
observes what a forwarded call returned. Every decision goes to the session's
hash-chained decision log and is on disk before the answer that depends on it.

Nothing here reads a socket or a pipe: :mod:`roadcheck.guard.mcp.stdio` and
:mod:`roadcheck.guard.mcp.http` carry the messages.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from roadcheck.conformance.result import Finding
from roadcheck.errors import RoadcheckError
from roadcheck.events import args_digest
from roadcheck.guard.core import Decision
from roadcheck.guard.mcp.approvals import PREFIX, Approvals, Binding
from roadcheck.guard.store import GuardStore, HeldSession
from roadcheck.reasons import Reason

__all__ = ["APPROVE_KEY", "Answer", "Deferred", "Elicit", "Forward", "McpPolicy", "Step",
           "denied_result", "elicitation_params"]

#: The key of the proxy's elicitation in an ``InputRequiredResult``'s ``inputRequests``.
APPROVE_KEY = "roadcheck-guard-approve"
#: Claude Code prompts for a tool that carries this in its ``_meta``, whatever its permissions.
REQUIRES_INTERACTION = "anthropic/requiresUserInteraction"
#: How much of a result's text the session keeps.
_RESULT_TEXT = 2000


@dataclass(frozen=True, slots=True)
class Forward:
    """Forward the call: ``params`` is what goes upstream (None: the original bytes)."""

    params: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """Answer the call with ``result`` (a JSON-RPC result object); nothing is forwarded."""

    result: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Elicit:
    """Ask the client (``elicitation/create`` with ``params``), then :meth:`McpPolicy.elicited`."""

    params: dict[str, Any]
    call: dict[str, Any] = field(repr=False)
    decision: Decision = field(repr=False)


Step = Forward | Answer | Elicit


def denied_result(text: str) -> dict[str, Any]:
    """A tool result the model can read: the call did not run, and why."""
    return {"content": [{"type": "text", "text": text}], "isError": True, "resultType": "complete"}


def elicitation_params(tool: str, args: Any, decision: Decision) -> dict[str, Any]:
    """A form elicitation: what would run, with which arguments, and why it needs a yes."""
    shown = orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
    if len(shown) > 1000:
        shown = shown[:1000] + "..."
    why = "; ".join(r.message for r in decision.reasons)
    return {"mode": "form",
            "message": f"Approve the call {tool}({shown})? It needs a yes: {why}",
            "requestedSchema": {"type": "object", "properties": {"approve": {
                "type": "boolean", "title": f"Run {tool} with these arguments",
                "description": f"args_sha256 {decision.args_sha256}"}},
                "required": ["approve"]}}


def accepted(response: Any) -> bool:
    """True for an elicitation result that accepts with ``approve: true``."""
    return (isinstance(response, Mapping) and response.get("action") == "accept"
            and isinstance(response.get("content"), Mapping)
            and response["content"].get("approve") is True)


def _definition_digest(tool: Mapping[str, Any]) -> str:
    kept = {k: tool.get(k) for k in ("title", "description", "inputSchema", "outputSchema",
                                     "annotations")}
    return hashlib.sha256(orjson.dumps(kept, option=orjson.OPT_SORT_KEYS)).hexdigest()


class Pins:
    """The definitions of the guarded tools seen in earlier runs of the same upstream.

    Kept as one sealed file of the state directory (``.mcp-pins/<upstream>``), so an
    edited pin file is refused like any other guard file.
    """

    def __init__(self, store: GuardStore, upstream: str) -> None:
        from roadcheck.guard import files, snapshot

        self._store = store
        self.name = hashlib.sha256(upstream.encode()).hexdigest()[:32]
        self.path = Path(store.dir) / ".mcp-pins" / self.name
        files.make_dir(self.path.parent)
        raw = snapshot.read_cache(self.path)
        sealed = store.sealer.open(raw, self.path, "pins", self.name, torn_ok=True) \
            if raw else None
        self.pins: dict[str, str] = dict(orjson.loads(sealed.payload)) if sealed else {}
        self.counter = sealed.counter if sealed else 0

    def save(self) -> None:
        from roadcheck.guard import files

        self.counter += 1
        data = self._store.sealer.seal("pins", self.name, self.counter,
                                       orjson.dumps(self.pins, option=orjson.OPT_SORT_KEYS))
        files.write(self.path, data, durable=True)


@dataclass(frozen=True, slots=True)
class Settings:
    """How a :class:`McpPolicy` decides.

    ``principal``: who approves at the client's prompt (the ``confirmed_by`` of the
    checkpoint an approval records); ``ttl``: seconds an approval request stays valid;
    ``refuse_changed``: a guarded tool whose definition changed is hidden and refused;
    ``mark``: mark guarded tools ``_meta["anthropic/requiresUserInteraction"]``;
    ``durable``: save each decision before answering.
    """

    principal: str = "user"
    ttl: float = 120.0
    refuse_changed: bool = False
    mark: bool = True
    durable: bool = False


class McpPolicy:
    """One MCP session's guard: decides each ``tools/call``, rewrites ``tools/list``.

    ``held``: the guard session this MCP session is (see :meth:`GuardStore.held`);
    ``settings``: see :class:`Settings`; ``key``: the guard key (approval tokens are
    MAC'd under a key derived from it; None: a random one); ``pins``: the pinned tool
    definitions, or None; ``notice``: where a report (a changed definition) goes.
    """

    def __init__(self, held: HeldSession, settings: Settings | None = None, *,
                 key: bytes | None = None, pins: Pins | None = None,
                 notice: Callable[[str], None] | None = None) -> None:
        settings = settings or Settings()
        self.held = held
        self.session = held.live.session
        self.principal = settings.principal
        self.approvals = Approvals(key, self.session, ttl=settings.ttl)
        self.pins = pins
        self.refuse_changed = settings.refuse_changed
        self.mark = settings.mark
        #: Save before every answer; else the transport's ``defer`` saves soon after it.
        self.durable = settings.durable
        self.notice = notice or (lambda _line: None)
        #: Set by a transport: schedule a save (None: save at once).
        self.defer: Callable[[], None] | None = None
        #: Why the session can no longer be saved (every call is then refused).
        self.broken: str | None = None
        #: tool -> its annotations, as the upstream's last tools/list gave them (untrusted).
        self.hints: dict[str, dict[str, bool]] = {}
        #: Guarded tools whose definition changed since they were pinned (refused with --pin).
        self.changed: dict[str, str] = {}

    # -- events ----------------------------------------------------------------------------

    def save(self) -> None:
        """Log the decisions made and save the session: now, or soon (``defer``)."""
        if self.durable or self.defer is None:
            self.flush()
        else:
            self.defer()

    def flush(self) -> None:
        """Save now. A session that cannot be saved refuses every later call."""
        try:
            self.held.flush()
        except RoadcheckError as exc:
            if self.broken is None:
                self.notice(f"roadcheck guard mcp: cannot save the session: {exc}")
            self.broken = f"the guard session cannot be saved ({exc}); nothing is forwarded"

    def action(self, tool: str, args: Any) -> dict[str, Any]:
        """The action event of a call, with the tool's annotations as hints."""
        rec: dict[str, Any] = {"event": "action", "action_type": tool, "args": args}
        rec.update(self.hints.get(tool, {}))
        return rec

    def _check(self, call: dict[str, Any]) -> Decision:
        try:
            return self.held.live.check(call)
        except RoadcheckError as exc:
            decision = Decision("deny", call.get("action_type"), None,
                                (Finding(Reason.BAD_INPUT, f"guard error: {exc}"),), ("",))
        except Exception as exc:  # a bug denies the call; it never lets it through
            decision = Decision("deny", call.get("action_type"), None,
                                (Finding(Reason.BAD_INPUT, "guard error: "
                                         f"{type(exc).__name__}: {exc}"),), ("",))
        self.held.live.record(decision)
        return decision

    def _refuse(self, call: Mapping[str, Any], message: str, digest: str | None) -> Answer:
        decision = Decision("deny", call.get("action_type"), digest,
                            (Finding(Reason.BAD_INPUT, message),), ("",))
        self.held.live.record(decision)
        self.save()
        return Answer(denied_result(f"roadcheck guard: deny: {message}"))

    # -- tools/call ------------------------------------------------------------------------

    def _usable(self, params: Any) -> Answer | tuple[dict[str, Any], str]:
        """The call's action event and its arguments' digest; or the refusal of a call
        that cannot be judged (no tool name, arguments JSON cannot hold, a session that
        cannot be saved, a pinned tool that changed)."""
        if self.broken is not None:
            return Answer(denied_result(f"roadcheck guard: deny: {self.broken}"))
        if not isinstance(params, Mapping) or not isinstance(params.get("name"), str):
            return self._refuse({}, "tools/call without a tool name", None)
        tool = params["name"]
        args = params.get("arguments")
        call = self.action(tool, {} if args is None else args)
        try:
            digest = args_digest(call["args"])
        except ValueError as exc:
            return self._refuse(call, str(exc), None)
        if tool in self.changed and self.refuse_changed:
            return self._refuse(call, self.changed[tool], digest)
        return call, digest

    def call(self, params: Any, *, modern: bool, can_elicit: bool) -> Step:
        """Decide a ``tools/call`` (its ``params``) before anything is forwarded."""
        usable = self._usable(params)
        if isinstance(usable, Answer):
            return usable
        call, digest = usable
        tool = call["action_type"]
        binding = Binding("tools/call", tool, digest, self.principal, self.session)
        state = params.get("requestState")
        again = ""
        if isinstance(state, str) and state.startswith(PREFIX):
            opened = self.approvals.open(state, binding)
            if opened.status == "forged":
                return self._refuse(call, opened.why, digest)
            if opened.status == "ok":
                return self._retried(call, params)
            again = f" (asked again: the approval given {opened.why})"
        decision = self._check(call)
        if decision.verdict == "allow":
            return self._forward(call, None)
        self.save()
        if decision.verdict == "ask" and can_elicit:
            return self._ask(call, binding, decision, modern=modern)
        return Answer(denied_result(self.reason(decision) + again))

    def _retried(self, call: dict[str, Any], params: Mapping[str, Any]) -> Step:
        """A retry carrying a good approval state: the person's answer decides."""
        responses = params.get("inputResponses")
        answer = responses.get(APPROVE_KEY) if isinstance(responses, Mapping) else None
        stripped = {k: v for k, v in params.items()
                    if k not in ("requestState", "inputResponses")}
        return self._approved(call, stripped, accepted(answer))

    def _ask(self, call: dict[str, Any], binding: Binding, decision: Decision, *,
             modern: bool) -> Step:
        args = call["args"]
        if modern:
            token = self.approvals.mint(binding)
            return Answer({"resultType": "input_required", "inputRequests": {
                APPROVE_KEY: {"method": "elicitation/create",
                              "params": elicitation_params(binding.tool, args, decision)}},
                "requestState": token})
        return Elicit(elicitation_params(binding.tool, args, decision), call, decision)

    def reason(self, decision: Decision) -> str:
        """What the model reads for a call that did not run, and how it could."""
        text = f"roadcheck guard: {decision.message}"
        if decision.verdict == "ask":
            text += (f". This client cannot be asked here (no elicitation): a person approves "
                     f"out of band, by recording checkpoint(s) {', '.join(decision.missing)} "
                     f"in guard session {self.session} (roadcheck guard serve, POST "
                     f"/v1/sessions/{self.session}/approve, while no proxy holds the "
                     f"session), then the proxy is run again with --session {self.session} "
                     "and the call retried")
        return text

    def _approved(self, call: dict[str, Any], params: dict[str, Any] | None,
                  yes: bool) -> Step:
        decision = self._check(call)
        if decision.verdict == "ask" and yes:
            self.held.live.guard.approve(decision, self.principal)
            decision = self._check(call)
        elif decision.verdict == "ask":
            self.save()
            return Answer(denied_result(f"roadcheck guard: deny: {self.principal} did not "
                                        f"approve {decision.tool}"))
        if decision.verdict == "allow":
            return self._forward(call, params)
        self.save()
        return Answer(denied_result(self.reason(decision)))

    def elicited(self, step: Elicit, response: Any) -> Step:
        """The client answered the proxy's ``elicitation/create`` (``response``: its result)."""
        return self._approved(step.call, None, accepted(response))

    def _forward(self, call: dict[str, Any], params: dict[str, Any] | None) -> Forward:
        self.held.live.observe(call)
        self.save()
        return Forward(params)

    def returned(self, tool: str, response: Mapping[str, Any]) -> None:
        """A forwarded call's answer (a JSON-RPC response): kept as a tool message."""
        result = response.get("result")
        if isinstance(result, Mapping):
            texts = [c.get("text", "") for c in result.get("content") or ()
                     if isinstance(c, Mapping) and isinstance(c.get("text"), str)]
            text = ("error: " if result.get("isError") else "") + "\n".join(texts)
        else:
            error = response.get("error")
            text = f"error: {error.get('message') if isinstance(error, Mapping) else error}"
        rec = {"event": "message", "role": "tool", "text": f"{tool}: {text}"[:_RESULT_TEXT]}
        try:
            self.held.live.observe(rec)
            self.save()
        except RoadcheckError as exc:
            self.notice(f"roadcheck guard mcp: cannot record the result of {tool}: {exc}")

    # -- tools/list ------------------------------------------------------------------------

    def listed(self, result: Any) -> Any:
        """A ``tools/list`` result, rewritten: hints kept, pins checked, guarded tools marked."""
        tools = result.get("tools") if isinstance(result, Mapping) else None
        if not isinstance(tools, list):
            return result
        kept = []
        pins_changed = False
        for tool in tools:
            name = tool.get("name") if isinstance(tool, Mapping) else None
            if not isinstance(name, str):
                continue  # a tool without a name cannot be called; not shown
            hints = _hints(tool.get("annotations"))
            self.hints[name] = hints
            try:
                guarded = bool(self.held.live.guard.guarding(self.action(name, {})))
            except RoadcheckError:
                guarded = True
            if self._always_denied(name):
                continue
            if guarded and self.pins is not None:
                digest = _definition_digest(tool)
                pinned = self.pins.pins.get(name)
                if pinned is None or (pinned != digest and not self.refuse_changed):
                    if pinned is not None:
                        self.notice(f"roadcheck guard mcp: the definition of guarded tool "
                                    f"{name!r} changed since it was pinned")
                    self.pins.pins[name] = digest
                    pins_changed = True
                elif pinned != digest:
                    self.changed[name] = (f"the definition of guarded tool {name!r} changed "
                                          "since it was pinned (--pin refuses it)")
                    self.notice(f"roadcheck guard mcp: {self.changed[name]}")
                    continue
            if guarded and self.mark:
                tool = dict(tool)
                tool["_meta"] = {**(tool.get("_meta") or {}), REQUIRES_INTERACTION: True}
            kept.append(tool)
        if pins_changed and self.pins is not None:
            self.pins.save()
        return {**result, "tools": kept}

    def _always_denied(self, name: str) -> bool:
        """A tool every call of which the spec refuses, hidden from the list.

        The rule language has no rule that always refuses a tool yet, so nothing is
        hidden; a call of a hidden tool would still be checked and refused.
        """
        return False


class Deferred:
    """A policy's ``defer``: one save ``delay`` seconds after the first unsaved decision."""

    def __init__(self, policy: McpPolicy, loop: Any, delay: float = 0.2) -> None:
        self.policy, self.loop, self.delay = policy, loop, delay
        self._handle: Any = None

    def __call__(self) -> None:
        if self._handle is None:
            self._handle = self.loop.call_later(self.delay, self._run)

    def _run(self) -> None:
        self._handle = None
        self.policy.flush()


def _hints(annotations: Any) -> dict[str, bool]:
    """The tool's ``destructiveHint`` / ``readOnlyHint``, as event fields (untrusted hints)."""
    out: dict[str, bool] = {}
    if isinstance(annotations, Mapping):
        for key, name in (("destructiveHint", "destructive_hint"),
                          ("readOnlyHint", "read_only_hint")):
            if isinstance(annotations.get(key), bool):
                out[name] = annotations[key]
    return out
