"""The Claude Code hook: one short-lived process per hook event, state in a :class:`GuardStore`.

Claude Code runs ``roadcheck guard claude-code --spec SPEC`` for each hook event it
is configured for, with the event as JSON on standard input:

* ``UserPromptSubmit``: the prompt is observed as a user ``message`` (derive
  rules can turn "yes, send it" into a checkpoint);
* ``PreToolUse``: the call (``tool_name``, ``tool_input`` as ``args``,
  ``tool_use_id`` as ``call_id``, and the shell line of a ``Bash`` call as
  ``command``) is checked, and the answer is
  ``hookSpecificOutput.permissionDecision`` ``deny`` or ``ask`` with
  ``permissionDecisionReason``; an allowed call gets ``allow`` with ``--grant``,
  and otherwise no decision (Claude Code's own permission rules still apply);
* ``PermissionRequest``: the same check; a denied call is answered
  ``decision.behavior: deny`` with the reason, anything else is left to the prompt;
* ``PostToolUse``: the call ran and is observed. When the guard had answered
  ``ask`` for that ``tool_use_id``, the person at the prompt approved it: the
  missing checkpoints are observed first, ``confirmed_by`` the approver
  (``--approver``, default ``user``) and bound to the call.

Anything that goes wrong (a bad spec, bad hook input, an unreadable session
state, a bug) denies: exit 2 with the reason on standard error, which Claude
Code shows and which blocks the call. It never exits 0 without having decided.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from roadcheck.guard.core import Decision

__all__ = ["HookAnswer", "main", "parse_args", "run_hook"]

#: The hook events the guard reads; others are answered with nothing.
HOOK_EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "PermissionRequest")
MAIN_AGENT = "claude"
_EXIT_BLOCK = 2


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """What the hook process prints and how it exits."""

    exit: int
    stdout: str = ""
    stderr: str = ""
    decision: Decision | None = None


class _BadInput(Exception):
    pass


def _field(doc: dict[str, Any], key: str, kind: type, what: str) -> Any:
    value = doc.get(key)
    if not isinstance(value, kind) or (kind is str and not value):
        shown = "missing" if key not in doc else f"a {type(value).__name__}"
        raise _BadInput(f"'{key}' must be {what}, got {shown}")
    return value


def _call(doc: dict[str, Any]) -> dict[str, Any]:
    """The action event of a tool hook's call."""
    from roadcheck.shellcmd import command_text

    tool = _field(doc, "tool_name", str, "a non-empty string")
    args = _field(doc, "tool_input", dict, "an object")
    call: dict[str, Any] = {"event": "action", "agent": MAIN_AGENT, "action_type": tool,
                            "args": args}
    call_id = doc.get("tool_use_id")
    if call_id is not None:
        call["call_id"] = _field(doc, "tool_use_id", str, "a non-empty string")
    if tool == "Bash":
        command = command_text(args.get("command"))
        if command is not None:
            call["command"] = command
    return call


def _kept(guard: Any, call: dict[str, Any]) -> dict[str, Any]:
    """The call as the session keeps it: its arguments only where a rule binds them.

    Every hook process reads and rewrites the session, and a tool's input can be a
    whole file (``Write``); no rule reads the arguments except a binding one (the
    response is never kept: no rule reads it).
    """
    from roadcheck.events import Event

    event = Event.make(guard.last_seq + 1, "action", call.get("agent"),
                       **{k: v for k, v in call.items() if k not in ("event", "agent")})
    c = guard.compiled
    rules = list(c.by_action.get(call["action_type"]) or ())
    rules.extend(rule for sel, rule in c.by_selector if sel(event))
    if any("args" in rule.binds for rule in rules):
        return call
    return {k: v for k, v in call.items() if k != "args"}


#: The command's options as the click CLI declares them: name -> (key, takes a value).
_OPTIONS = {"--spec": ("spec", True), "--state-dir": ("state_dir", True),
            "--key-file": ("key_file", True), "--no-key": ("no_key", False),
            "--approver": ("approver", True), "--grant": ("grant", False),
            "--catch-up": ("catch_up", False)}


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The options of ``roadcheck guard claude-code ARGS``, read without click; None to defer.

    Only a plain command line is taken: each option at most once, every value
    present and not option-like, ``--spec`` given, and the paths as click's
    ``Path`` checks would pass them (the spec and the key file not directories,
    the state directory not a file, each readable where it exists). Anything else
    (``--help``, an unknown option, a stray argument) returns None, and the click
    CLI answers it, with its usual messages.
    """
    options: dict[str, Any] = {"state_dir": None, "key_file": None, "no_key": False,
                               "approver": "user", "grant": False, "catch_up": False}
    seen: set[str] = set()
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        known = _OPTIONS.get(name)
        if known is None or name in seen:
            return None
        seen.add(name)
        key, takes_value = known
        if not takes_value:
            if eq:
                return None
            options[key] = True
        else:
            if not eq:
                i += 1
                if i == len(args):
                    return None
                value = args[i]
            if value.startswith("-"):
                return None
            options[key] = value
        i += 1
    if "spec" not in options:
        return None
    if not (_path_ok(options["spec"], dir_okay=False)
            and (options["state_dir"] is None or _path_ok(options["state_dir"], dir_okay=True))
            and (options["key_file"] is None or _path_ok(options["key_file"], dir_okay=False))):
        return None
    return options


def _path_ok(path: str, *, dir_okay: bool) -> bool:
    """What click's ``Path(dir_okay=..., file_okay=not dir_okay)`` lets through."""
    import os
    import stat

    try:
        st = os.stat(path)
    except OSError:
        return True
    if stat.S_ISDIR(st.st_mode) if not dir_okay else stat.S_ISREG(st.st_mode):
        return False  # a directory as the spec, a file as the state directory
    return os.access(path, os.R_OK)


#: How long a hook process may take, in seconds, before it answers deny on its own:
#: well inside Claude Code's hook timeout (60 s by default), after which the call would run.
DEADLINE = 10.0


def _watchdog(seconds: float) -> Callable[[], None]:
    """Start a thread that, unless the returned function is called within ``seconds``,
    says the call is denied and ends the process with exit code 2.

    Whatever the hook waits on (a file system that hangs, a read the guard did not
    bound), Claude Code gets a deny in time rather than a timeout that lets the
    call run. A bare ``_thread``: the hook does not pay for importing ``threading``.
    """
    import _thread
    import os

    done = _thread.allocate_lock()
    done.acquire()

    def watch() -> None:
        if done.acquire(timeout=seconds):
            return
        try:
            os.write(2, _deny(f"the hook did not answer within {seconds:g} s").stderr.encode())
        finally:
            os._exit(_EXIT_BLOCK)

    _thread.start_new_thread(watch, ())
    return done.release


def main(options: dict[str, Any]) -> int:
    """Read the hook event on standard input, answer it, return the exit code.

    The answer comes within :data:`DEADLINE` seconds, or it is deny (exit 2).
    """
    import sys

    stop = _watchdog(DEADLINE)
    try:
        answer = run_hook(sys.stdin.buffer.read(), options["spec"], options["state_dir"],
                          approver=options["approver"], grant=options["grant"],
                          catch_up=options["catch_up"], key_file=options["key_file"],
                          no_key=options["no_key"], linger=True)
        try:
            sys.stdout.write(answer.stdout)
            sys.stdout.flush()
        except OSError as exc:  # an answer Claude Code cannot read must not pass for "none"
            sys.stderr.write(_deny(f"cannot write the answer: {exc}").stderr)
            return _EXIT_BLOCK
        sys.stderr.write(answer.stderr)
        return answer.exit
    finally:
        stop()


def blocked(exc: BaseException) -> int:
    """Say on standard error that ``exc`` (an interrupt or a bug) blocks the call; exit code 2.

    For the few failures that escape :func:`run_hook` (an interrupt, a failed import):
    Claude Code lets the call run on any exit code but 2.
    """
    import sys

    what = ("interrupted" if isinstance(exc, KeyboardInterrupt)
            else f"internal error: {type(exc).__name__}: {exc}")
    text = _deny(what).stderr
    try:
        from roadcheck.report._text import escape_controls

        text = escape_controls(text.rstrip("\n")) + "\n"
    except BaseException:  # the plain text still says why
        pass
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except BaseException:  # nothing left to tell; the exit code blocks
        pass
    return _EXIT_BLOCK


def _deny(reason: str) -> HookAnswer:
    return HookAnswer(_EXIT_BLOCK, "", f"roadcheck guard: denied: {reason}\n")


def _json(doc: dict[str, Any]) -> str:
    return orjson.dumps(doc).decode() + "\n"


def run_hook(data: bytes, spec: str, state_dir: str | None, *, approver: str = "user",
             grant: bool = False, catch_up: bool = False,
             open_store: Callable[[], Any] | None = None, **store_options: Any) -> HookAnswer:
    """Answer one Claude Code hook event; never raises, any failure denies.

    With ``catch_up``, a session the guard has not seen before starts from its
    transcript (``transcript_path``, read with the Claude Code reader): what
    happened before the hook was installed counts. ``state_dir`` and
    ``store_options`` (``key_file``, ``no_key``, and ``linger`` for the hook process,
    which ends once it has answered): see :class:`~roadcheck.guard.store.GuardStore`.
    ``open_store``: returns the store to use instead (a resident one, in a process that
    answers many calls: see :mod:`roadcheck.guard.answer`); its failures deny too.
    """
    try:
        return _answer(data, spec, state_dir, approver, grant, catch_up, store_options,
                       open_store)
    except _BadInput as exc:
        return _deny(f"bad hook input: {exc}")
    except Exception as exc:  # fail closed: a guard that crashes must not let the call run
        from roadcheck.errors import RoadcheckError

        if isinstance(exc, RoadcheckError):
            return _deny(f"{exc.reason}: {exc.location_message()}")
        return _deny(f"internal error: {type(exc).__name__}: {exc}")


def _catch_up(live: Any, transcript: Any, current: str | None) -> None:
    """Observe a transcript's events (not its final line, nor the call being asked about)."""
    if not isinstance(transcript, str) or not transcript:
        raise _BadInput("'transcript_path' must name the session transcript to catch up from")
    from roadcheck.errors import TraceError
    from roadcheck.ingest import ReadFailure, load

    _, entries = load(transcript, "claude-code")
    for entry in entries:
        if isinstance(entry, ReadFailure):
            raise TraceError(f"cannot catch up from the transcript: {entry.error.message}",
                             path=transcript)
        for event in entry.events:
            if event.kind == "final" or (current is not None
                                         and event.data.get("call_id") == current):
                continue
            live.observe({k: v for k, v in event.data.items() if k != "seq"})


def _answer(data: bytes, spec: str, state_dir: str | None, approver: str, grant: bool,
            catch_up: bool, store_options: dict[str, Any],
            open_store: Callable[[], Any] | None = None) -> HookAnswer:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise _BadInput(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise _BadInput(f"expected a JSON object, got {type(doc).__name__}")
    from roadcheck.ingest._json import message, repeated_key

    twice = repeated_key(data, doc)
    if twice is not None:
        raise _BadInput(message(twice))
    name = _field(doc, "hook_event_name", str, "a non-empty string")
    session = _field(doc, "session_id", str, "a non-empty string")
    if name not in HOOK_EVENTS:
        return HookAnswer(0)
    if open_store is not None:
        store = open_store()
    else:
        from roadcheck.guard.store import GuardStore

        store = GuardStore(state_dir, spec, approver=approver, **store_options)
    with store.session(session, create=True) as live:
        if catch_up and not live.guard.records:
            call_id = doc.get("tool_use_id")
            _catch_up(live, doc.get("transcript_path"),
                      call_id if isinstance(call_id, str) else None)
        if name == "UserPromptSubmit":
            prompt = _field(doc, "prompt", str, "a string")
            live.observe({"event": "message", "role": "user", "text": prompt})
            return HookAnswer(0)
        call = _call(doc)
        if name == "PostToolUse":
            asked = live.asked.pop(call.get("call_id", ""), None)
            if asked:
                from roadcheck.events import args_digest

                # the person at the prompt approved the call the guard asked about
                approved = Decision("allow", call["action_type"], args_digest(call["args"]),
                                    approvers=(approver,),
                                    seq=live.guard.last_seq + len(asked) + 1,
                                    call_id=call.get("call_id"), missing=tuple(asked))
                live.record(approved)
                live.guard.approve(approved, approver, agent=MAIN_AGENT)
            live.observe(_kept(live.guard, call))
            return HookAnswer(0)
        decision = live.check(call)
        if decision.verdict == "ask" and "call_id" in call:
            live.asked[call["call_id"]] = list(decision.missing)
    return _reply(name, decision, grant)


def _reply(name: str, decision: Decision, grant: bool) -> HookAnswer:
    reason = f"roadcheck guard: {decision.message}"
    if name == "PermissionRequest":
        if decision.verdict != "deny":
            return HookAnswer(0, "", "", decision)
        out = {"hookSpecificOutput": {"hookEventName": name,
                                      "decision": {"behavior": "deny", "message": reason}}}
        return HookAnswer(0, _json(out), "", decision)
    if decision.verdict == "allow" and not grant:
        return HookAnswer(0, "", "", decision)
    out = {"hookSpecificOutput": {"hookEventName": name,
                                  "permissionDecision": decision.verdict,
                                  "permissionDecisionReason": reason}}
    return HookAnswer(0, _json(out), "", decision)


def http_body(data: bytes, answer: HookAnswer) -> bytes:
    """The body of the 2xx response to Claude Code's ``http`` hook for ``answer``.

    Claude Code lets the call run on a non-2xx status, a timeout or a refused
    connection, so every answer is a 2xx: an answer the process would give on
    standard output is the body as is (empty: no decision), and one that denies
    with exit code 2 is written as the deny of the event's own JSON output
    (:func:`deny_body`).
    """
    if answer.exit == 0:
        return answer.stdout.encode()
    return deny_body(data, answer.stderr.strip() or "roadcheck guard: denied")


def deny_body(data: bytes, reason: str) -> bytes:
    """A JSON hook output that stops the call ``data`` asked about, whatever ``data`` is.

    ``PreToolUse``: ``permissionDecision: deny``; ``PermissionRequest``: ``behavior:
    deny``; another event the guard reads: ``decision: block``; a body that names no
    such event (not JSON, no ``hook_event_name``): ``decision: block`` and
    ``continue: false``, which stops Claude Code's turn.
    """
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
    name = doc.get("hook_event_name") if isinstance(doc, dict) else None
    out: dict[str, Any]
    if name == "PreToolUse":
        out = {"hookSpecificOutput": {"hookEventName": name, "permissionDecision": "deny",
                                      "permissionDecisionReason": reason}}
    elif name == "PermissionRequest":
        out = {"hookSpecificOutput": {"hookEventName": name,
                                      "decision": {"behavior": "deny", "message": reason}}}
    elif name in HOOK_EVENTS:
        out = {"decision": "block", "reason": reason}
    else:
        out = {"decision": "block", "reason": reason, "continue": False, "stopReason": reason}
    return orjson.dumps(out) + b"\n"
