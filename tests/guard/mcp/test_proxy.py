"""End to end: the SDK's client, through ``roadcheck guard mcp``, to the SDK's server.

Over stdio and Streamable HTTP, with 2026-07-28 (``InputRequiredResult`` and
``requestState``) and 2025-11-25 (``elicitation/create``): an allowed call passes,
an asked call runs only once a person says yes, a denied or refused call never
reaches the server (its ``outbox.txt`` stays as it was), a forged, replayed or
re-aimed approval state is refused or asked again, and an upstream crash is an error
answer.
"""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest

from .conftest import Proxied, answering, connect

SEND = {"to": "cfo", "body": "Q3 numbers"}


def run(fn: Any) -> Any:
    return anyio.run(fn)


def events(p: Proxied) -> list[dict[str, Any]]:
    raw = (p.state / p.session / "guard.json").read_bytes()
    return list(orjson.loads(raw[raw.index(b"\n") + 1:])["events"])


def test_an_allowed_call_passes_and_tools_list_is_marked(route: Proxied) -> None:
    async def main() -> None:
        async with connect(route, route.mode) as client:
            listed = await client.list_tools()
            marks = {t.name: (t.meta or {}).get("anthropic/requiresUserInteraction")
                     for t in listed.tools}
            assert marks == {"send_report": True, "wipe_outbox": True, "list_files": None,
                             "crash": None}
            result = await client.call_tool("list_files", {})
            assert not result.is_error
            want = "2026-07-28" if route.mode == "auto" else "2025-11-25"
            assert client.protocol_version == want

    run(main)
    (action,) = [e for e in events(route) if e["event"] == "action"]
    assert action["action_type"] == "list_files"
    assert action["read_only_hint"] is True  # the server's annotation, kept as a hint


def test_asked_then_approved_runs_once(route: Proxied) -> None:
    yes = answering("accept")

    async def main() -> None:
        async with connect(route, route.mode, elicitation_callback=yes) as client:
            result = await client.call_tool("send_report", SEND)
            assert not result.is_error, result
            assert result.content[0].text == "sent to cfo"

    run(main)
    assert route.sent() == "cfo: Q3 numbers\n"
    (asked,) = yes.asked
    assert "send_report" in asked.message and "Q3 numbers" in asked.message
    kinds = [(e["event"], e.get("checkpoint_id") or e.get("action_type") or e.get("role"))
             for e in events(route)]
    assert kinds == [("checkpoint", "approve_send"), ("action", "send_report"),
                     ("message", "tool")]
    assert events(route)[0]["confirmed_by"] == "user"


@pytest.mark.parametrize("action", ["decline", "cancel", "accept-no"])
def test_asked_then_refused_never_runs(route: Proxied, action: str) -> None:
    no = answering("accept", approve=False) if action == "accept-no" else answering(action)

    async def main() -> None:
        async with connect(route, route.mode, elicitation_callback=no) as client:
            result = await client.call_tool("send_report", SEND)
            assert result.is_error
            assert "did not approve send_report" in result.content[0].text

    run(main)
    assert route.sent() == ""
    assert not [e for e in events(route) if e["event"] == "action"]


def test_denied_call_never_reaches_the_server(route: Proxied) -> None:
    route.outbox.write_text("kept\n")
    yes = answering("accept")

    async def main() -> None:
        async with connect(route, route.mode, elicitation_callback=yes) as client:
            result = await client.call_tool("wipe_outbox", {})
            assert result.is_error
            text = result.content[0].text
            assert text.startswith("roadcheck guard: deny: checkpoint-skipped")
            assert "owner_ok by one of owner" in text

    run(main)
    assert route.sent() == "kept\n"
    assert yes.asked == []  # no approval the user can give mends it: not asked


def test_a_client_that_cannot_be_asked_is_told_how_to_approve(route: Proxied) -> None:
    async def main() -> None:
        async with connect(route, route.mode) as client:
            result = await client.call_tool("send_report", SEND)
            assert result.is_error
            text = result.content[0].text
            assert "cannot be asked here" in text
            assert f"/v1/sessions/{route.session}/approve" in text

    run(main)
    assert route.sent() == ""


def test_forged_replayed_and_reaimed_request_state(proxied: Proxied) -> None:
    from mcp_types import ElicitResult, InputRequiredResult

    yes = {"roadcheck-guard-approve": ElicitResult(action="accept", content={"approve": True})}

    async def main() -> None:
        async with connect(proxied, "auto", elicitation_callback=answering("accept")) as client:
            session = client.session
            first = await session.call_tool("send_report", SEND, allow_input_required=True)
            assert isinstance(first, InputRequiredResult)
            state = first.request_state
            assert state is not None and state.startswith("roadcheck-guard/1.")
            body, _, mac = state.rpartition(".")
            forged = f"{body}.{'0' * len(mac)}"
            result = await session.call_tool("send_report", SEND, input_responses=yes,
                                             request_state=forged,
                                             allow_input_required=True)
            assert result.is_error and "does not verify" in result.content[0].text
            # the approval was given for SEND: other arguments are asked about again
            other = {**SEND, "to": "everyone"}
            again = await session.call_tool("send_report", other, input_responses=yes,
                                            request_state=state, allow_input_required=True)
            assert isinstance(again, InputRequiredResult)
            assert proxied.sent() == ""
            ok = await session.call_tool("send_report", SEND, input_responses=yes,
                                         request_state=state, allow_input_required=True)
            assert not ok.is_error
            replayed = await session.call_tool("send_report", SEND, input_responses=yes,
                                               request_state=state, allow_input_required=True)
            assert isinstance(replayed, InputRequiredResult)

    run(main)
    assert proxied.sent() == "cfo: Q3 numbers\n"


@pytest.mark.stress  # two proxy sessions in a row
def test_a_state_from_another_session_is_asked_again(tmp_path: Any) -> None:
    from mcp_types import ElicitResult, InputRequiredResult

    yes = {"roadcheck-guard-approve": ElicitResult(action="accept", content={"approve": True})}
    first_p = Proxied(tmp_path, "stdio", session="mcp-one")
    other_p = Proxied(tmp_path, "stdio", session="mcp-two")

    async def main() -> None:
        async with connect(first_p, "auto", elicitation_callback=answering("accept")) as client:
            first = await client.session.call_tool("send_report", SEND,
                                                   allow_input_required=True)
            assert isinstance(first, InputRequiredResult)
        async with connect(other_p, "auto", elicitation_callback=answering("accept")) as client:
            again = await client.session.call_tool("send_report", SEND, input_responses=yes,
                                                   request_state=first.request_state,
                                                   allow_input_required=True)
            assert isinstance(again, InputRequiredResult)

    run(main)
    assert first_p.sent() == ""


def test_an_upstream_crash_is_an_error_answer(route: Proxied) -> None:
    from mcp.shared.exceptions import MCPError

    yes = answering("accept")

    async def main() -> None:
        async with connect(route, route.mode, elicitation_callback=yes) as client:
            with pytest.raises(MCPError, match="the upstream MCP server"):
                await client.call_tool("crash", {})
            with anyio.fail_after(5), pytest.raises(MCPError, match="the upstream MCP server"):
                await client.call_tool("send_report", SEND)

    run(main)
    assert route.sent() == ""
