"""``roadcheck guard mcp``: the guard as an MCP proxy in front of any MCP server.

The proxy speaks MCP on one side (stdio, or Streamable HTTP on a loopback
address) and forwards to the upstream server on the other. Every ``tools/call``
is decided by the guard before it is forwarded; the whole MCP session is one
guard session, kept in the guard's sealed store and hash-chained decision log
(see :mod:`roadcheck.guard.store`). Needs the ``mcp`` extra
(``pip install 'roadcheck[mcp]'``); see docs/mcp.md.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

__all__ = ["new_session_id", "run"]


def new_session_id() -> str:
    """A fresh session id: ``mcp-`` and the UTC time, then random hex."""
    return f"mcp-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(4)}"


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(options: dict[str, Any], serve: Callable[..., int] | None = None) -> int:
    """Open the guard session and proxy until the client leaves (stdio) or interrupted (HTTP).

    ``options``: ``spec``, ``state_dir``, ``key_file``, ``no_key``, ``session``,
    ``principal``, ``ttl``, ``pin``, ``mark``, ``durable``, and ``command`` (stdio) or
    ``upstream``, ``host``, ``port`` (HTTP).
    """
    from roadcheck.guard.mcp.policy import McpPolicy, Pins, Settings
    from roadcheck.guard.store import GuardStore

    store = GuardStore(options["state_dir"], options["spec"], approver=options["principal"],
                       key_file=options["key_file"], no_key=options["no_key"])
    session = options.get("session") or new_session_id()
    upstream = options.get("upstream") or " ".join(options.get("command") or ())
    pins = Pins(store, upstream)
    with store.held(session, create=True) as held:
        settings = Settings(principal=options["principal"], ttl=options["ttl"],
                            refuse_changed=options["pin"], mark=options["mark"],
                            durable=options.get("durable", False))
        policy = McpPolicy(held, settings, pins=pins, notice=_say,
                           key=store.key.secret if store.key is not None else None)
        _say(f"roadcheck guard mcp: session {session} (state in {store.dir})")
        if options.get("upstream"):
            from roadcheck.guard.mcp.http import run_http

            return run_http(policy, options["upstream"], options["host"], options["port"],
                            ready=_say)
        from roadcheck.guard.mcp.stdio import run_stdio

        return run_stdio(policy, list(options["command"]))
