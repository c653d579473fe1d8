"""``roadcheck guard``: the replay spec enforced live, before each call."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from roadcheck.cli._base import DIRECTORY, FILE, cli

__all__ = ["guard"]


def _guard_store_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--spec``, ``--state-dir``, ``--key-file``, ``--no-key``: what every guard command
    enforces, where it keeps its state, and the key that authenticates it."""
    command = click.option(
        "--no-key", is_flag=True,
        help="Run without a key: the stored state is not authenticated (also "
             "ROADCHECK_GUARD_NO_KEY=1).")(command)
    command = click.option(
        "--key-file", type=FILE, default=None, metavar="FILE",
        help="The key that authenticates the stored state, kept outside the state directory "
             "and created on first use (default: $ROADCHECK_GUARD_KEY_FILE, else "
             "~/.config/roadcheck/guard.key or %APPDATA%\\roadcheck\\guard.key).")(command)
    command = click.option(
        "--state-dir", default=None, type=DIRECTORY,
        help="Directory holding one directory per session: its state and decision log "
             "(default: $ROADCHECK_GUARD_STATE_DIR, else the user's state directory, "
             "~/.local/state/roadcheck/guard or %LOCALAPPDATA%\\roadcheck\\guard).")(command)
    return click.option("--spec", "spec", required=True, type=FILE,
                        help="The replay spec to enforce (JSON or YAML).")(command)


def _stop_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--contract``, ``--max-reprompts``: check the agent's final message at a stop."""
    command = click.option(
        "--max-reprompts", type=click.IntRange(min=0), default=None, metavar="N",
        help="How many times a turn a stop with unbacked claims is sent back to the agent "
             "before it is let through with a warning to the person (default 2).")(command)
    return click.option(
        "--contract", default=None, metavar="CONTRACT",
        help="Check the claims of the agent's final message when it hands the turn back "
             "against the session (the contract's 'said'; a file or builtin:coding-agent): "
             "an unbacked claim holds the stop with the reason.")(command)


@cli.group()
def guard() -> None:
    """Enforce a replay spec live: check each call before it runs."""


@guard.command("claude-code", short_help="Answer a Claude Code hook event from a spec.")
@_guard_store_options
@_stop_options
@click.option("--approver", default="user", show_default=True, metavar="NAME",
              help="Who answers at Claude Code's permission prompt: the confirmed_by of the "
                   "checkpoint recorded when an asked call is approved there.")
@click.option("--grant", is_flag=True,
              help="Answer allow for an allowed call (skipping Claude Code's prompt); without "
                   "it an allowed call gets no decision and Claude Code's own rules apply.")
@click.option("--catch-up", is_flag=True,
              help="Start a session the guard has not seen from its transcript "
                   "(transcript_path), so what happened before the hook counts.")
def guard_claude_code(spec: str, state_dir: str | None, key_file: str | None, no_key: bool,
                      contract: str | None, max_reprompts: int | None, approver: str,
                      grant: bool, catch_up: bool) -> None:
    """Read one hook event (JSON) on standard input and answer in the hook protocol.

    PreToolUse and PermissionRequest are checked against SPEC; UserPromptSubmit,
    PostToolUse, PostToolUseFailure, Stop and SubagentStop are observed. A deny or
    ask is printed as hookSpecificOutput JSON (exit 0). With --contract, Stop and
    SubagentStop check the agent's final message against the session and answer
    decision: block for an unbacked claim. Any error (bad spec, bad input,
    unreadable state or contract) denies: exit 2 with the reason on standard error.
    """
    from roadcheck.guard.claude_code import blocked, main

    try:
        code = main({"spec": spec, "state_dir": state_dir, "key_file": key_file,
                     "no_key": no_key, "approver": approver, "grant": grant,
                     "catch_up": catch_up, "contract": contract,
                     "max_reprompts": max_reprompts})
    except BaseException as exc:  # an interrupt or a bug blocks the call
        code = blocked(exc)
    sys.exit(code)


#: The other CLIs' hook commands: name -> (the CLI, the hook options it takes).
_HOOK_COMMANDS = {
    "codex": ("Codex", ("approver", "catch_up", "contract")),
    "gemini": ("Gemini CLI", ("approver", "grant", "contract")),
    "opencode": ("OpenCode plugin", ("approver",)),
    "copilot": ("GitHub Copilot CLI", ("approver", "grant")),
    "cursor": ("Cursor", ("approver", "grant")),
    "cline": ("Cline", ("approver",)),
}


def _hook_command(name: str, cli_name: str, takes: tuple[str, ...]) -> None:
    def command(spec: str, state_dir: str | None, key_file: str | None, no_key: bool,
                approver: str = "user", grant: bool = False, catch_up: bool = False,
                contract: str | None = None, max_reprompts: int | None = None) -> None:
        from roadcheck.guard import claude_code, hooks

        adapter = hooks.load(name)
        try:
            code = hooks.main(adapter, {"spec": spec, "state_dir": state_dir,
                                        "key_file": key_file, "no_key": no_key,
                                        "approver": approver, "grant": grant,
                                        "catch_up": catch_up, "contract": contract,
                                        "max_reprompts": max_reprompts},
                              deadline=claude_code.DEADLINE)
        except BaseException as exc:  # an interrupt or a bug blocks the call
            code = hooks.blocked(exc, adapter)
        sys.exit(code)

    command.__doc__ = (f"Read one {cli_name} hook event (JSON) on standard input and answer "
                       f"in its format.\n\nSee docs/guard.md for the events handled, how an "
                       f"ask is answered, and what an error does.")
    if "contract" in takes:
        command = _stop_options(command)
    if "catch_up" in takes:
        command = click.option(
            "--catch-up", is_flag=True,
            help="Start a session the guard has not seen from its transcript "
                 "(transcript_path).")(command)
    if "grant" in takes:
        command = click.option(
            "--grant", is_flag=True,
            help="Answer allow for an allowed call; without it an allowed call gets no "
                 "decision and the CLI's own rules apply.")(command)
    command = click.option(
        "--approver", default="user", show_default=True, metavar="NAME",
        help="Who answers the guard's questions: a rule that does not accept NAME "
             "answers deny, and an approval recorded for an asked call names NAME.")(command)
    command = _guard_store_options(command)
    article = "an" if cli_name[0] in "AEIOU" else "a"
    guard.command(name, short_help=f"Answer {article} {cli_name} hook event from a spec.")(command)


for _name, (_cli_name, _takes) in _HOOK_COMMANDS.items():
    _hook_command(_name, _cli_name, _takes)


@guard.command("approve", short_help="Approve one call of a guarded session, as a person.")
@_guard_store_options
@click.option("--session", "session", required=True, metavar="ID",
              help="The session (the hook's session id) the call belongs to.")
@click.option("--checkpoint", "checkpoints", required=True, multiple=True, metavar="ID",
              help="A checkpoint the call needs (repeatable): the guard's reason names them.")
@click.option("--tool", default=None, metavar="NAME", help="The call's tool.")
@click.option("--args-sha256", default=None, metavar="DIGEST",
              help="The digest of the call's arguments (sha256:...), as the reason gives it.")
@click.option("--call-id", default=None, metavar="ID", help="The call's id, where it has one.")
@click.option("--by", "by", default=None, metavar="NAME",
              help="Who approves: the checkpoint's confirmed_by (with --key: the key's id).")
@click.option("--key", "signing_key", type=FILE, default=None, metavar="PEM",
              help="Sign each approval with this Ed25519 private key (roadcheck keys new): "
                   "a rule whose confirmed_by lists the key's id counts only such an "
                   "approval of this very call. Needs --tool and --args-sha256.")
@click.option("--expires-in", default=300.0, show_default=True, type=float, metavar="SECONDS",
              help="With --key: how long the signed approval counts.")
def guard_approve(spec: str, state_dir: str | None, key_file: str | None, no_key: bool,
                  session: str, checkpoints: tuple[str, ...], tool: str | None,
                  args_sha256: str | None, call_id: str | None, by: str | None,
                  signing_key: str | None, expires_in: float) -> None:
    """Record that BY approved one call: one checkpoint per --checkpoint, naming the call.

    Run it yourself, in a terminal of your own, where the agent cannot: it writes the
    session's state, so whatever can run it can approve. The session must exist.
    With --key each checkpoint also carries the approver's signature over the call
    (checkpoint, tool, args_sha256, call id, expiry), checked with the public key
    alone wherever a rule names the key's id.
    """
    from roadcheck.errors import InputError
    from roadcheck.guard.hooks import approve_call, approve_call_signed

    store = {"key_file": key_file, "no_key": no_key}
    if signing_key is not None:
        if by is not None:
            raise InputError("--key signs as the key's id: give --by or --key, not both")
        call = {"tool": tool, "args_sha256": args_sha256, "call_id": call_id}
        seqs, by = approve_call_signed(spec, state_dir, session, checkpoints,
                                       signing_key=signing_key, call=call,
                                       expires_in=expires_in, **store)
    elif by is None:
        raise InputError("say who approves: --by NAME, or --key PEM to sign the approval")
    else:
        seqs = approve_call(spec, state_dir, session, checkpoints, by=by, tool=tool,
                            args_sha256=args_sha256, call_id=call_id, **store)
    click.echo(f"roadcheck guard: approved by {by}: {', '.join(checkpoints)} "
               f"(session {session}, seq {', '.join(map(str, seqs))})")


@guard.command("serve", short_help="Answer guard checks over HTTP on a loopback address.")
@_guard_store_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Loopback address to listen on (127.0.0.1, ::1 or localhost); any other "
                   "address is refused.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port, printed at start).")
@click.option("--approver", default=None, metavar="NAME",
              help="Who answers the guard's questions: a rule that does not accept NAME "
                   "answers deny instead of ask.")
@click.option("--approve-token-file", type=FILE, default=None, metavar="FILE",
              help="The approver's token (a file only its owner can read, kept where the "
                   "agent cannot read it): /approve needs 'Authorization: Bearer TOKEN'. "
                   "Without it the server takes no approval.")
def guard_serve(spec: str, state_dir: str | None, key_file: str | None, no_key: bool,
                host: str, port: int, approver: str | None,
                approve_token_file: str | None) -> None:
    """Answer check, observe and approve for the sessions in --state-dir, over HTTP.

    POST /v1/sessions/ID creates a session; POST /v1/sessions/ID/check,
    /observe and /approve take a JSON event; /approve needs the token of
    --approve-token-file. Anything unusable (an unknown
    session, a bad event, an internal error) is a non-2xx status with verdict
    deny. Runs until interrupted.
    """
    from roadcheck.guard.serve import read_token, serve
    from roadcheck.guard.store import GuardStore

    token = None if approve_token_file is None else read_token(approve_token_file)
    store = GuardStore(state_dir, spec, approver=approver, key_file=key_file, no_key=no_key)
    if store.key_notice:
        from roadcheck.guard.seal import say_once

        say_once(store.key_notice)
    serve(store, host, port, approve_token=token)


@guard.command("mcp", short_help="Put the guard in front of an MCP server (a proxy).")
@_guard_store_options
@click.option("--upstream", default=None, metavar="URL",
              help="The upstream server's Streamable HTTP URL; the proxy then listens on "
                   "--host/--port. Without it, the upstream is COMMAND, run over stdio.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="With --upstream: the loopback address to listen on (127.0.0.1, ::1 or "
                   "localhost); any other address is refused.")
@click.option("--port", default=8766, show_default=True, type=click.IntRange(0, 65535),
              help="With --upstream: the port to listen on (0: any free port, printed at "
                   "start).")
@click.option("--session", default=None, metavar="ID",
              help="The guard session this MCP session is (default: a new one, "
                   "mcp-<UTC time>-<random>, printed at start).")
@click.option("--approver", "principal", default="user", show_default=True, metavar="NAME",
              help="Who answers the client's approval prompt: the confirmed_by of the "
                   "checkpoint an approved call records.")
@click.option("--approval-ttl", "ttl", default=120.0, show_default=True,
              type=click.FloatRange(1, 3600), metavar="SECONDS",
              help="How long an approval request stays valid (2026-07-28 requestState).")
@click.option("--pin", is_flag=True,
              help="Refuse a guarded tool whose definition (description, schemas, "
                   "annotations) changed since it was pinned; without it a change is "
                   "reported and pinned anew.")
@click.option("--no-mark", "no_mark", is_flag=True,
              help="Do not mark guarded tools _meta[\"anthropic/requiresUserInteraction\"] "
                   "in tools/list.")
@click.option("--durable", is_flag=True,
              help="Write each decision to the log (fsync) before answering; without it "
                   "decisions are written within 0.2 s after the answer, and when the "
                   "session ends.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def guard_mcp(spec: str, state_dir: str | None, key_file: str | None, no_key: bool,
              upstream: str | None, host: str, port: int, session: str | None,
              principal: str, ttl: float, pin: bool, no_mark: bool, durable: bool,
              command: tuple[str, ...]) -> None:
    """Proxy MCP to an upstream server, deciding each tools/call before it is forwarded.

    Over stdio: roadcheck guard mcp --spec SPEC -- COMMAND [ARGS]... Over
    Streamable HTTP: roadcheck guard mcp --spec SPEC --upstream URL. An allowed
    call is forwarded unchanged; a denied one is answered as a tool result with
    isError and the reason; a call that needs a person's yes is asked (an
    elicitation), or denied with how to approve when the client cannot be
    asked. The MCP session is one guard session (decision log in --state-dir).
    """
    from roadcheck.errors import InputError

    if (upstream is None) == (not command):
        raise InputError("give the upstream MCP server: a COMMAND after '--' (stdio), or "
                         "--upstream URL (Streamable HTTP), not both")
    if upstream is not None:
        from roadcheck.guard.serve import loopback

        host = loopback(host)
    try:
        import mcp_types  # noqa: F401
    except ImportError:
        raise InputError("roadcheck guard mcp needs the MCP SDK: pip install "
                         "'roadcheck[mcp]'") from None
    from roadcheck.guard.mcp import run

    sys.exit(run({"spec": spec, "state_dir": state_dir, "key_file": key_file,
                  "no_key": no_key, "upstream": upstream, "host": host, "port": port,
                  "session": session, "principal": principal, "ttl": ttl, "pin": pin,
                  "mark": not no_mark, "durable": durable, "command": list(command)}))


@guard.command("daemon", short_help="Answer every hook call from one resident process.")
@click.option("--socket", "socket_path", default=None, metavar="PATH",
              help="The Unix socket to listen on (default: $ROADCHECK_GUARD_SOCKET, else "
                   "$XDG_RUNTIME_DIR/roadcheck/guard.sock, else "
                   "~/.local/state/roadcheck/run/guard.sock).")
@click.option("--idle-exit", default=1800.0, show_default=True, metavar="SECONDS",
              type=click.FloatRange(min=0.1),
              help="End after this many seconds without a call.")
@click.option("--stop", "stop", is_flag=True, help="Stop the daemon on the socket.")
@click.option("--status", "status", is_flag=True,
              help="Say whether a daemon runs on the socket (exit 0) or not (exit 1).")
def guard_daemon(socket_path: str | None, idle_exit: float, stop: bool, status: bool) -> None:
    """Hold guard sessions in memory and answer the hook commands over a Unix socket.

    Each `roadcheck guard claude-code` call asks this daemon first and starts it
    when it is not running; every decision is on disk before its answer goes out,
    so stopping or killing the daemon loses nothing. Runs until stopped, or idle
    for --idle-exit seconds. ROADCHECK_GUARD_DAEMON=0 keeps the hooks in process.
    """
    import os

    from roadcheck._hook_client import socket_path as default_socket
    from roadcheck.errors import InputError
    from roadcheck.guard.daemon import control, run

    path = socket_path or default_socket(os.environ)
    if path is None:
        raise InputError("the guard daemon needs Unix sockets, which this system lacks")
    if stop or status:
        code, said = control(path, "stop" if stop else "status")
        click.echo(said, err=code != 0)
        sys.exit(code)
    sys.exit(run(path, idle_exit=idle_exit))
