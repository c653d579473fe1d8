"""The proxy over Streamable HTTP: a loopback server in front of the upstream's URL.

Each POST carries one JSON-RPC message. What the guard need not see is
forwarded as it came and its answer streamed back as it comes (JSON or an SSE
stream, headers included, so ``Mcp-Session-Id`` and ``Mcp-Protocol-Version``
work as they do without the proxy); GET (the server's stream) and DELETE (the
end of a session) likewise. A ``tools/call`` is decided first and, when
allowed, forwarded and its answer read whole (then passed on unchanged); a
``tools/list`` answer is read whole and rewritten. A 2025-11-25 client that
declared form elicitation is asked over the POST's own SSE stream, and its
answer, POSTed back, is taken by the proxy. An upstream that cannot be reached,
or answers with something that is not HTTP, is an error answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import orjson

from roadcheck.guard.mcp import wire
from roadcheck.guard.mcp.policy import Answer, Elicit, McpPolicy, Step

__all__ = ["HttpProxy", "run_http"]

_HOP = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding",
                  "te", "trailer", "upgrade", "proxy-authorization", "proxy-connection",
                  "accept-encoding"})
_HOP_BACK = frozenset({"content-length", "connection", "keep-alive", "transfer-encoding",
                       "content-encoding"})
_SESSION = "mcp-session-id"
_BAD_GATEWAY = 502


def sse_messages(body: bytes) -> list[Any]:
    """The JSON messages of an SSE body (``data:`` lines of each event, joined)."""
    out: list[Any] = []
    data: list[bytes] = []
    for line in [*body.replace(b"\r\n", b"\n").split(b"\n"), b""]:
        if not line:
            if data:
                with contextlib.suppress(orjson.JSONDecodeError):
                    out.append(orjson.loads(b"\n".join(data)))
                data = []
        elif line.startswith(b"data:"):
            data.append(line[5:].removeprefix(b" "))
    return out


def sse_event(doc: Any) -> bytes:
    return b"event: message\ndata: " + orjson.dumps(doc) + b"\n\n"


class HttpProxy:
    """The ASGI application: one upstream URL, one guard session."""

    def __init__(self, policy: McpPolicy, upstream: str, *, elicit_timeout: float = 300.0
                 ) -> None:
        import httpx

        self.policy = policy
        self.upstream = upstream
        self.path = urlsplit(upstream).path or "/"
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0))
        self.elicit_timeout = elicit_timeout
        #: Mcp-Session-Id -> what its client declared at initialize (2025-11-25).
        self.clients: dict[str, wire.Client] = {}
        self._asks: dict[str, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        from starlette.requests import Request
        from starlette.responses import Response

        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    from roadcheck.guard.mcp.policy import Deferred

                    self.policy.defer = Deferred(self.policy, asyncio.get_running_loop())
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    self.policy.defer = None
                    self.policy.flush()
                    await self.http.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        request = Request(scope, receive)
        if scope["type"] != "http" or request.url.path.rstrip("/") != self.path.rstrip("/"):
            await Response(status_code=404)(scope, receive, send)
            return
        try:
            response = await self._answer(request)
        except Exception as exc:  # a bug answers an error; it never forwards anything
            self.policy.notice(f"roadcheck guard mcp: {type(exc).__name__}: {exc}")
            response = _json(wire.error(None, wire.INTERNAL_ERROR,
                                        "roadcheck guard: internal error"), 500)
        await response(scope, receive, send)

    def _headers(self, request: Any) -> dict[str, str]:
        return {k: v for k, v in request.headers.items() if k.lower() not in _HOP}

    async def _answer(self, request: Any) -> Any:
        if request.method != "POST":
            return await self._stream(request.method, self._headers(request), None)
        raw = await request.body()
        try:
            doc = wire.parse(raw)
        except wire.Malformed as exc:
            self.policy.notice(f"roadcheck guard mcp: refused a client message: {exc}")
            if exc.answer is None:
                from starlette.responses import Response

                return Response(status_code=400)
            return _json(exc.answer, 400)
        method, msg_id = doc.get("method"), doc.get("id")
        headers = self._headers(request)
        if method is None and isinstance(msg_id, str) and msg_id in self._asks:
            future = self._asks.pop(msg_id)
            if not future.done():
                future.set_result(doc)
            from starlette.responses import Response

            return Response(status_code=202)
        if method == "tools/call" and msg_id is not None:
            return await self._call(doc, raw, headers)
        if method == "tools/list" and msg_id is not None:
            return await self._listed(raw, headers, msg_id)
        if method == "initialize":
            client = wire.Client()
            client.initialized(doc.get("params"))
            response = await self._stream("POST", headers, raw)
            sid = response.headers.get(_SESSION)
            if sid:
                self.clients[sid] = client
            return response
        return await self._stream("POST", headers, raw)

    async def _stream(self, method: str, headers: dict[str, str], body: bytes | None) -> Any:
        """Forward as it came, and stream the answer back."""
        import httpx
        from starlette.background import BackgroundTask
        from starlette.responses import StreamingResponse

        req = self.http.build_request(method, self.upstream, headers=headers, content=body)
        try:
            up = await self.http.send(req, stream=True)
        except httpx.HTTPError as exc:
            return _gone(None, exc)
        back = {k: v for k, v in up.headers.items() if k.lower() not in _HOP_BACK}
        return StreamingResponse(up.aiter_raw(), status_code=up.status_code, headers=back,
                                 background=BackgroundTask(up.aclose))

    async def _whole(self, headers: dict[str, str], body: bytes, msg_id: Any
                     ) -> tuple[int, dict[str, str], bytes]:
        """POST upstream and read the answer to ``msg_id``: a JSON body, or an SSE stream
        up to the event that answers it (the stream may stay open after it)."""
        req = self.http.build_request("POST", self.upstream, headers=headers, content=body)
        up = await self.http.send(req, stream=True)
        try:
            back = {k: v for k, v in up.headers.items() if k.lower() not in _HOP_BACK}
            if not back.get("content-type", "").startswith("text/event-stream"):
                return up.status_code, back, await up.aread()
            seen = bytearray()
            async for chunk in up.aiter_bytes():
                seen += chunk
                if b"\n\n" in chunk or b"\r\n\r\n" in chunk:
                    done = [d for d in sse_messages(bytes(seen)) if isinstance(d, dict)
                            and d.get("id") == msg_id and "method" not in d]
                    if done:
                        break
            return up.status_code, back, bytes(seen)
        finally:
            await up.aclose()

    async def _listed(self, raw: bytes, headers: dict[str, str], msg_id: Any) -> Any:
        import httpx
        from starlette.responses import Response

        try:
            status, back, body = await self._whole(headers, raw, msg_id)
        except httpx.HTTPError as exc:
            return _gone(msg_id, exc)
        sse = back.get("content-type", "").startswith("text/event-stream")
        docs = sse_messages(body) if sse else _one(body)
        out = []
        for doc in docs:
            if isinstance(doc, dict) and doc.get("id") == msg_id and \
                    isinstance(doc.get("result"), dict):
                doc = {**doc, "result": self.policy.listed(doc["result"])}
            out.append(doc)
        if sse:
            return Response(b"".join(sse_event(d) for d in out), status, back)
        return Response(orjson.dumps(out[0]) if out else body, status, back)

    async def _call(self, doc: dict[str, Any], raw: bytes, headers: dict[str, str]) -> Any:
        msg_id, params = doc["id"], doc.get("params")
        sid = headers.get(_SESSION)
        client = self.clients.get(sid) if sid else None
        modern, can_elicit = (client or wire.Client()).of(params)
        step: Step = self.policy.call(params, modern=modern, can_elicit=can_elicit)
        if isinstance(step, Elicit):
            return self._elicit(doc, step, headers)
        if isinstance(step, Answer):
            return _json(wire.response(msg_id, step.result), 200)
        body = raw if step.params is None else orjson.dumps({**doc, "params": step.params})
        return await self._forwarded(msg_id, params, body, headers)

    async def _forwarded(self, msg_id: Any, params: Any, body: bytes,
                         headers: dict[str, str]) -> Any:
        import httpx
        from starlette.responses import Response

        tool = params.get("name") if isinstance(params, dict) else None
        try:
            status, back, answer = await self._whole(headers, body, msg_id)
        except httpx.HTTPError as exc:
            self.policy.returned(str(tool), wire.error(msg_id, wire.INTERNAL_ERROR, str(exc)))
            return _gone(msg_id, exc)
        sse = back.get("content-type", "").startswith("text/event-stream")
        for doc in sse_messages(answer) if sse else _one(answer):
            if isinstance(doc, dict) and doc.get("id") == msg_id and "method" not in doc:
                self.policy.returned(str(tool), doc)
                break
        else:
            self.policy.returned(str(tool), wire.error(msg_id, wire.INTERNAL_ERROR,
                                                       f"HTTP {status} without an answer"))
        return Response(answer, status, back)

    def _elicit(self, doc: dict[str, Any], step: Elicit, headers: dict[str, str]) -> Any:
        """Ask on the POST's SSE stream; forward (or refuse) when the client answers."""
        from starlette.responses import StreamingResponse

        async def events() -> AsyncIterator[bytes]:
            ask_id = f"roadcheck-guard-elicit-{next(self._ids)}"
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._asks[ask_id] = future
            yield sse_event({"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create",
                             "params": step.params})
            try:
                answer = await asyncio.wait_for(future, self.elicit_timeout)
            except TimeoutError:
                answer = {}
            finally:
                self._asks.pop(ask_id, None)
            result = answer.get("result") if isinstance(answer, dict) else None
            then = self.policy.elicited(step, result)
            if isinstance(then, Answer):
                yield sse_event(wire.response(doc["id"], then.result))
                return
            reply = await self._forwarded(doc["id"], doc.get("params"), orjson.dumps(doc),
                                          headers)
            body = bytes(reply.body)
            if reply.headers.get("content-type", "").startswith("text/event-stream"):
                yield body
            else:
                yield sse_event(orjson.loads(body))

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache"})


def _one(body: bytes) -> list[Any]:
    try:
        return [orjson.loads(body)]
    except orjson.JSONDecodeError:
        return []


def _json(doc: Any, status: int) -> Any:
    from starlette.responses import Response

    return Response(orjson.dumps(doc), status, media_type="application/json")


def _gone(msg_id: Any, exc: Exception) -> Any:
    return _json(wire.error(msg_id, wire.INTERNAL_ERROR,
                            f"roadcheck guard: the upstream MCP server cannot be reached "
                            f"({type(exc).__name__}); nothing was forwarded"), _BAD_GATEWAY)


def run_http(policy: McpPolicy, upstream: str, host: str, port: int,
             ready: Callable[[str], None] | None = None) -> int:
    """Serve the proxy on ``host:port`` (a loopback address) until interrupted."""
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted connections inherit it: without it, a reply waits on the client's delayed ACK
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    app = HttpProxy(policy, upstream)
    where = f"[{host}]" if family == socket.AF_INET6 else host
    url = f"http://{where}:{bound}{app.path}"
    config = uvicorn.Config(app, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    if ready is not None:
        ready(f"roadcheck guard mcp: listening on {url} (upstream {upstream})")
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock])
    return 0
