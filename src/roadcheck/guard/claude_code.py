"""The Claude Code hook command: ``roadcheck guard claude-code``, one process per hook event.

Claude Code runs ``roadcheck guard claude-code --spec SPEC`` for each hook event it
is configured for, with the event as JSON on standard input. What the events mean
and how they are answered is :mod:`roadcheck.guard.adapters.claude_code`; the guard's
side, the same for every CLI, is :mod:`roadcheck.guard.hooks`. This module keeps the
command's entry points (:func:`parse_args`, :func:`main`, :func:`run_hook`,
:func:`blocked`) and the options every hook command shares.

Anything that goes wrong (a bad spec, bad hook input, an unreadable session
state, a bug) denies: exit 2 with the reason on standard error, which Claude
Code shows and which blocks the call. It never exits 0 without having decided.
"""

from __future__ import annotations

from typing import Any

from roadcheck.guard.hooks import HookAnswer

__all__ = ["DEADLINE", "HookAnswer", "blocked", "main", "parse_args", "run_hook"]

#: The hook events the guard reads; others are answered with nothing.
HOOK_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit",
               "PermissionRequest", "Stop", "SubagentStop")
MAIN_AGENT = "claude"

#: Every hook command's options: name -> (key, takes a value).
_OPTIONS = {"--spec": ("spec", True), "--state-dir": ("state_dir", True),
            "--key-file": ("key_file", True), "--no-key": ("no_key", False),
            "--approver": ("approver", True), "--grant": ("grant", False),
            "--catch-up": ("catch_up", False), "--contract": ("contract", True),
            "--max-reprompts": ("max_reprompts", True)}
_SHARED = frozenset({"--spec", "--state-dir", "--key-file", "--no-key"})
#: The options of the hook commands that check a stop's claims.
STOP_OPTIONS = frozenset({"--contract", "--max-reprompts"})
_CLAUDE_CODE = frozenset({"--approver", "--grant", "--catch-up"}) | STOP_OPTIONS


def parse_args(args: list[str], allowed: frozenset[str] = _CLAUDE_CODE) -> dict[str, Any] | None:
    """The options of ``roadcheck guard CLI ARGS``, read without click; None to defer.

    Only a plain command line is taken: each option at most once and one the command
    has (``allowed``, beside ``--spec``, ``--state-dir``, ``--key-file``, ``--no-key``),
    every value present and not option-like, ``--spec`` given, and the paths as
    click's ``Path`` checks would pass them (the spec and the key file not
    directories, the state directory not a file, each readable where it exists).
    Anything else (``--help``, an unknown option, a stray argument) returns None, and
    the click CLI answers it, with its usual messages.
    """
    options: dict[str, Any] = {"state_dir": None, "key_file": None, "no_key": False,
                               "approver": "user", "grant": False, "catch_up": False,
                               "contract": None, "max_reprompts": None}
    seen: set[str] = set()
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        known = _OPTIONS.get(name)
        if known is None or name in seen or not (name in _SHARED or name in allowed):
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
    if "spec" not in options or not _stop_options_ok(options):
        return None
    if not (_path_ok(options["spec"], dir_okay=False)
            and (options["state_dir"] is None or _path_ok(options["state_dir"], dir_okay=True))
            and (options["key_file"] is None or _path_ok(options["key_file"], dir_okay=False))):
        return None
    return options


def _stop_options_ok(options: dict[str, Any]) -> bool:
    """``--max-reprompts`` a count (made an int), ``--contract`` a readable file or
    ``builtin:NAME``; anything else is left to click, which says what is wrong."""
    limit = options["max_reprompts"]
    if limit is not None:
        if not limit.isdigit():
            return False
        options["max_reprompts"] = int(limit)
    contract = options["contract"]
    return contract is None or contract.startswith("builtin:") or _path_ok(contract,
                                                                           dir_okay=False)


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


def _adapter() -> Any:
    from roadcheck.guard.adapters.claude_code import ADAPTER

    return ADAPTER


def main(options: dict[str, Any]) -> int:
    """Read the hook event on standard input, answer it, return the exit code.

    The answer comes within :data:`DEADLINE` seconds, or it is deny (exit 2).
    """
    from roadcheck.guard import hooks

    return hooks.main(_adapter(), options, run_hook, DEADLINE)


def blocked(exc: BaseException) -> int:
    """Say on standard error that ``exc`` (an interrupt or a bug) blocks the call; exit code 2.

    For the few failures that escape :func:`run_hook` (an interrupt, a failed import):
    Claude Code lets the call run on any exit code but 2.
    """
    from roadcheck.guard import hooks

    return hooks.blocked(exc)


def run_hook(data: bytes, spec: str, state_dir: str | None, *, approver: str = "user",
             grant: bool = False, catch_up: bool = False, **store_options: Any) -> HookAnswer:
    """Answer one Claude Code hook event; never raises, any failure denies.

    With ``catch_up``, a session the guard has not seen before starts from its
    transcript (``transcript_path``, read with the Claude Code reader): what
    happened before the hook was installed counts. ``state_dir`` and
    ``store_options`` (``key_file``, ``no_key``, and ``linger`` for the hook process,
    which ends once it has answered): see :class:`~roadcheck.guard.store.GuardStore`.
    """
    from roadcheck.guard import hooks

    return hooks.run(_adapter(), data, spec, state_dir, approver=approver, grant=grant,
                     catch_up=catch_up, **store_options)


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
    import orjson

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
