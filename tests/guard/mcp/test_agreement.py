"""The proxy's session is a trajectory replay reads, and replay agrees with every decision.

After a session with an allowed call, an approved one, a refused one and a denied
one, ``roadcheck replay`` reads the session's ``guard.json`` (format ``guard-state``)
and finds nothing wrong with the road the proxy let through; and for each decision
in the hash-chained decision log, replaying the session up to that point plus the
call decided finds a violation exactly when the proxy did not allow the call.
"""

from __future__ import annotations

from typing import Any

import anyio
import orjson

from roadcheck.conformance import load_spec, replay_events
from roadcheck.events import Event, args_digest
from roadcheck.ingest import load

from .conftest import Proxied, connect

CALLS = [("list_files", {}), ("send_report", {"to": "cfo", "body": "yes"}),
         ("send_report", {"to": "all", "body": "no"}), ("wipe_outbox", {})]


def test_replay_reads_the_session_and_agrees_with_every_decision(tmp_path: Any) -> None:
    from mcp_types import ElicitResult

    from roadcheck.evidence.store import SqliteStore
    from roadcheck.guard.seal import guard_key
    from roadcheck.guard.store import verify_session

    p = Proxied(tmp_path, "stdio")
    answers = iter([True, False])

    async def elicit(_ctx: Any, _params: Any) -> Any:
        return ElicitResult(action="accept", content={"approve": next(answers)})

    async def main() -> None:
        async with connect(p, "auto", elicitation_callback=elicit) as client:
            await client.list_tools()
            for tool, args in CALLS:
                await client.call_tool(tool, args)

    anyio.run(main)
    assert p.sent() == "cfo: yes\n"
    fmt, entries = load(str(p.state / p.session / "guard.json"))
    assert fmt == "guard-state"
    (trajectory,) = entries
    spec = load_spec(p.spec)
    judged = replay_events(spec, trajectory.events, trajectory.id)
    assert judged.verdict == "PASS", judged.reasons

    key = guard_key(tmp_path / "guard.key").key
    assert verify_session(p.state, p.session, key).ok
    log = SqliteStore(p.state / p.session, p.session, key)
    try:
        decisions = [orjson.loads(r["gate"]["output"]) for r in log.records()]
    finally:
        log.close()
    args_of = {(tool, args_digest(args)): args for tool, args in CALLS}
    # an asked call is checked again when its approval comes back with the retry
    assert [d["verdict"] for d in decisions] == ["allow", "ask", "ask", "allow", "ask", "ask",
                                                 "deny"]
    for decision in decisions:
        tool = decision["tool"]
        args = args_of[tool, decision["args_sha256"]]
        before = [e for e in trajectory.events if e.seq < decision["seq"]]
        call = Event(decision["seq"], "action", None, None,
                     {"event": "action", "seq": decision["seq"], "action_type": tool,
                      "args": args})
        found = replay_events(spec, [*before, call])
        assert (found.verdict == "PASS") == (decision["verdict"] == "allow"), decision
