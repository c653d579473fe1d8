"""A real MCP client (the SDK's) through ``roadcheck guard mcp`` to a real MCP server.

``proxied`` starts the upstream (``report_server.py``, whose ``send_report`` appends
to ``outbox.txt``) behind the proxy, over stdio or Streamable HTTP, and yields a
connected :class:`mcp.client.client.Client` with the protocol asked for: ``auto``
settles on 2026-07-28, ``legacy`` on 2025-11-25 (the initialize handshake).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
SERVER = HERE / "report_server.py"
SPEC = HERE / "spec.yaml"


@dataclass
class Proxied:
    """One proxy session: where its state and the upstream's outbox are."""

    tmp: Path
    transport: str
    spec: Path = SPEC
    extra: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    session: str = "mcp-test"
    #: ``auto`` (2026-07-28 with the SDK's server) or ``legacy`` (2025-11-25).
    mode: str = "auto"
    #: The upstream's HTTP port (None: any free one); pins are kept per upstream URL.
    port: int | None = None

    @property
    def outbox(self) -> Path:
        return self.tmp / "outbox.txt"

    @property
    def state(self) -> Path:
        return self.tmp / "state"

    def sent(self) -> str:
        return self.outbox.read_text() if self.outbox.exists() else ""

    def guard_args(self) -> list[str]:
        return [sys.executable, "-m", "roadcheck", "guard", "mcp", "--spec", str(self.spec),
                "--state-dir", str(self.state), "--key-file", str(self.tmp / "guard.key"),
                "--session", self.session, *self.extra]

    def environ(self) -> dict[str, str]:
        return {**os.environ, "ROADCHECK_GUARD_KEY_FILE": str(self.tmp / "guard.key"),
                **self.env}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[Any], deadline: float = 60.0) -> None:
    # (a generous deadline: on a loaded machine the server imports for many seconds;
    # a server that ends, or fails to start, is seen at once)
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"process ended ({proc.returncode}) before listening")
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


@contextlib.asynccontextmanager
async def connect(p: Proxied, mode: str = "auto", **kw: Any) -> AsyncIterator[Any]:
    """A client connected through the proxy (stdio or HTTP, as ``p.transport`` says)."""
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    upstream = [sys.executable, str(SERVER), str(p.outbox)]
    if p.transport == "stdio":
        cmd = [*p.guard_args(), "--", *upstream]
        params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=p.environ())
        with open(p.tmp / "proxy.err", "a") as err:
            async with Client(stdio_client(params, errlog=err), mode=mode, **kw) as client:
                yield client
        return
    up, port = p.port or free_port(), free_port()
    with open(p.tmp / "proxy.err", "a") as err:
        server = subprocess.Popen([*upstream, "http", str(up)], env=p.environ(),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proxy = subprocess.Popen([*p.guard_args(), "--upstream",
                                  f"http://127.0.0.1:{up}/mcp", "--port", str(port)],
                                 env=p.environ(), stdout=subprocess.DEVNULL, stderr=err)
        try:
            wait_port(up, server)
            wait_port(port, proxy)
            async with Client(f"http://127.0.0.1:{port}/mcp", mode=mode, **kw) as client:
                client.upstream_process = server  # type: ignore[attr-defined]
                yield client
        finally:
            proxy.terminate()  # it saves what it has not saved yet, then ends
            with contextlib.suppress(subprocess.TimeoutExpired):
                proxy.wait(5)
            for proc in (proxy, server):
                proc.kill()
                proc.wait()


@pytest.fixture(params=["stdio", "http"])
def proxied(request: pytest.FixtureRequest, tmp_path: Path) -> Proxied:
    return Proxied(tmp_path, request.param)


#: Transport and protocol: each transport with each protocol version by default once
#: (stdio with 2026-07-28, HTTP with 2025-11-25), the other two pairs under ``stress``.
ROUTES = [pytest.param(("stdio", "auto"), id="stdio-2026"),
          pytest.param(("http", "legacy"), id="http-2025"),
          pytest.param(("stdio", "legacy"), id="stdio-2025", marks=pytest.mark.stress),
          pytest.param(("http", "auto"), id="http-2026", marks=pytest.mark.stress)]


@pytest.fixture(params=ROUTES)
def route(request: pytest.FixtureRequest, tmp_path: Path) -> Proxied:
    transport, mode = request.param
    return Proxied(tmp_path, transport, mode=mode)


def answering(action: str, approve: bool = True) -> Callable[..., Any]:
    """An elicitation callback that answers every question the same way."""
    from mcp_types import ElicitResult

    async def callback(_ctx: Any, params: Any) -> Any:
        callback.asked.append(params)  # type: ignore[attr-defined]
        content = {"approve": approve} if action == "accept" else None
        return ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    callback.asked = []  # type: ignore[attr-defined]
    return callback
