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


@cli.group()
def guard() -> None:
    """Enforce a replay spec live: check each call before it runs."""


@guard.command("claude-code", short_help="Answer a Claude Code hook event from a spec.")
@_guard_store_options
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
                      approver: str, grant: bool, catch_up: bool) -> None:
    """Read one hook event (JSON) on standard input and answer in the hook protocol.

    PreToolUse and PermissionRequest are checked against SPEC; UserPromptSubmit
    and PostToolUse are observed. A deny or ask is printed as
    hookSpecificOutput JSON (exit 0). Any error (bad spec, bad input, unreadable
    state) denies: exit 2 with the reason on standard error.
    """
    from roadcheck.guard.claude_code import blocked, main

    try:
        code = main({"spec": spec, "state_dir": state_dir, "key_file": key_file,
                     "no_key": no_key, "approver": approver, "grant": grant,
                     "catch_up": catch_up})
    except BaseException as exc:  # an interrupt or a bug blocks the call
        code = blocked(exc)
    sys.exit(code)


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
