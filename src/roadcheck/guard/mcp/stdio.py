"""The proxy over stdio: the client speaks to us on stdin/stdout, we to the upstream's pipes.

Messages pass through byte for byte, one JSON line each, except what the guard
must see: a ``tools/call`` is decided before it is forwarded (and maybe never
is), a ``tools/list`` answer is rewritten (:meth:`McpPolicy.listed`), a
forwarded call's answer is observed, and the proxy's own ``elicitation/create``
requests and their answers never reach the upstream. When the upstream ends,
every request still waiting and every later one is answered with an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import sys
from typing import Any, BinaryIO

import orjson

from roadcheck.guard.mcp import wire
from roadcheck.guard.mcp.policy import Answer, Elicit, McpPolicy, Step

__all__ = ["StdioProxy", "run_stdio"]

#: The longest line either side may send (a larger one is refused, not buffered forever).
LINE_LIMIT = 64 * 1024 * 1024


class StdioProxy:
    """One client on ``out``/lines fed to :meth:`from_client`, one upstream process."""

    def __init__(self, policy: McpPolicy, command: list[str], out: BinaryIO,
                 *, elicit_timeout: float = 300.0) -> None:
        self.policy = policy
        self.command = command
        self.out = out
        self.client = wire.Client()
        self.elicit_timeout = elicit_timeout
        self.proc: asyncio.subprocess.Process | None = None
        self.ended: str | None = None
        #: request id -> (method, tool) of what was forwarded and not answered yet.
        self.waiting: dict[Any, tuple[str, str | None]] = {}
        self._asks: dict[str, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()

    # -- output ----------------------------------------------------------------------------

    def send(self, doc: dict[str, Any]) -> None:
        self.write_raw(orjson.dumps(doc))

    def write_raw(self, line: bytes) -> None:
        self.out.write(line.rstrip(b"\r\n") + b"\n")
        self.out.flush()

    async def upstream(self, line: bytes) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or self.ended is not None:
            raise ConnectionError(self.ended or "the upstream MCP server is not running")
        proc.stdin.write(line.rstrip(b"\r\n") + b"\n")
        await proc.stdin.drain()

    # -- the client's messages -------------------------------------------------------------

    async def from_client(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            doc = wire.parse(raw)
        except wire.Malformed as exc:
            self.policy.notice(f"roadcheck guard mcp: refused a client message: {exc}")
            if exc.answer is not None:
                self.send(exc.answer)
            return
        method, msg_id = doc.get("method"), doc.get("id")
        if method is None:  # a response: to one of our questions, or to the upstream's
            ask = self._asks.pop(msg_id, None) if isinstance(msg_id, str) else None
            if ask is not None:
                if not ask.done():
                    ask.set_result(doc)
                return
            await self._forward(raw, None)
            return
        if msg_id is None:  # a notification
            await self._forward(raw, None)
            return
        if method == "initialize":
            self.client.initialized(doc.get("params"))
        if method == "tools/call":
            task = asyncio.create_task(self._call(doc, raw))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        await self._forward(raw, (msg_id, method, None))

    async def _forward(self, raw: bytes, request: tuple[Any, str, str | None] | None) -> None:
        if request is not None:
            self.waiting[request[0]] = (request[1], request[2])
        try:
            await self.upstream(raw)
        except (ConnectionError, OSError) as exc:
            if request is not None:
                self.waiting.pop(request[0], None)
                self.send(wire.error(request[0], wire.INTERNAL_ERROR,
                                     f"roadcheck guard: the upstream MCP server is gone: {exc}"))

    async def _call(self, doc: dict[str, Any], raw: bytes) -> None:
        msg_id, params = doc["id"], doc.get("params")
        tool = params.get("name") if isinstance(params, dict) else None
        if self.ended is not None:
            self.send(wire.error(msg_id, wire.INTERNAL_ERROR,
                                 f"roadcheck guard: {self.ended}; the call was not forwarded"))
            return
        modern, can_elicit = self.client.of(params)
        step: Step = self.policy.call(params, modern=modern, can_elicit=can_elicit)
        if isinstance(step, Elicit):
            step = await self._elicit(step)
        if isinstance(step, Answer):
            self.send(wire.response(msg_id, step.result))
            return
        if step.params is not None:
            raw = orjson.dumps({**doc, "params": step.params})
        await self._forward(raw, (msg_id, "tools/call", tool))

    async def _elicit(self, step: Elicit) -> Step:
        ask_id = f"roadcheck-guard-elicit-{next(self._ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._asks[ask_id] = future
        self.send({"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create",
                   "params": step.params})
        try:
            answer = await asyncio.wait_for(future, self.elicit_timeout)
        except TimeoutError:
            answer = {}
        finally:
            self._asks.pop(ask_id, None)
        result = answer.get("result") if isinstance(answer, dict) else None
        return self.policy.elicited(step, result)

    # -- the upstream's messages -----------------------------------------------------------

    def from_upstream(self, raw: bytes) -> None:
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self.policy.notice("roadcheck guard mcp: dropped a line from the upstream that is "
                               "not JSON")
            return
        if not isinstance(doc, dict):
            self.policy.notice("roadcheck guard mcp: dropped a line from the upstream that is "
                               "not one JSON-RPC message")
            return
        msg_id = doc.get("id")
        if "method" not in doc and msg_id is not None:
            method, tool = self.waiting.pop(msg_id, (None, None))
            if method == "tools/list" and isinstance(doc.get("result"), dict):
                self.send({**doc, "result": self.policy.listed(doc["result"])})
                return
            if method == "tools/call" and tool is not None:
                self.policy.returned(tool, doc)
        self.write_raw(raw)

    def upstream_ended(self, why: str) -> None:
        self.ended = why
        for msg_id, (method, tool) in list(self.waiting.items()):
            answer = wire.error(msg_id, wire.INTERNAL_ERROR,
                                f"roadcheck guard: {why} before answering {method}")
            if method == "tools/call" and tool is not None:
                self.policy.returned(tool, answer)
            self.send(answer)
        self.waiting.clear()

    # -- running ---------------------------------------------------------------------------

    async def run(self, stdin: asyncio.StreamReader) -> int:
        from roadcheck.guard.mcp.policy import Deferred

        loop = asyncio.get_running_loop()
        self.policy.defer = Deferred(self.policy, loop)
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on Windows
            loop.add_signal_handler(signal.SIGTERM, self._terminated)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                limit=LINE_LIMIT)
        except OSError as exc:
            self.policy.notice(f"roadcheck guard mcp: cannot start {self.command[0]}: "
                               f"{exc.strerror or exc}")
            self.ended = "the upstream MCP server could not start"
        pump = asyncio.create_task(self._pump()) if self.proc is not None else None
        try:
            while True:
                try:
                    line = await stdin.readline()
                except ValueError:
                    self.policy.notice("roadcheck guard mcp: a client line is too long")
                    break
                if not line:
                    break
                await self.from_client(line)
        finally:
            for task in list(self._tasks):
                with contextlib.suppress(Exception):
                    await task
            await self._stop(pump)
            self.policy.defer = None
            self.policy.flush()
        return 0

    def _terminated(self) -> None:
        """SIGTERM: save the session, stop the upstream, end."""
        self.policy.defer = None
        self.policy.flush()
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
        raise SystemExit(143)

    async def _pump(self) -> None:
        if self.proc is None or self.proc.stdout is None:
            return
        out = self.proc.stdout
        while True:
            try:
                line = await out.readline()
            except ValueError:
                self.policy.notice("roadcheck guard mcp: an upstream line is too long")
                break
            if not line:
                break
            self.from_upstream(line)
        code = await self.proc.wait()
        self.upstream_ended(f"the upstream MCP server ended (exit {code})")

    async def _stop(self, pump: asyncio.Task[None] | None) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 2.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            await proc.wait()
        if pump is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(pump, 1.0)


async def _stdin_reader() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                 os.fdopen(os.dup(sys.stdin.fileno()), "rb"))
    return reader


def run_stdio(policy: McpPolicy, command: list[str]) -> int:
    """Serve one client on this process's stdin/stdout until it closes stdin."""
    async def main() -> int:
        proxy = StdioProxy(policy, command, sys.stdout.buffer)
        return await proxy.run(await _stdin_reader())

    return asyncio.run(main())
