"""MCP proxy latency: what ``roadcheck guard mcp`` adds to each ``tools/call``.

The SDK's client calls the SDK's server (``tests/guard/mcp/report_server.py``, tool
``list_files``, which the spec leaves unguarded, so each call is checked, allowed,
forwarded, observed and its result kept, every decision saved before the answer)
two ways in the same run, the calls taken in turn: directly, and through the proxy.
Over stdio and over Streamable HTTP on 127.0.0.1. The figure is the p50 of the
per-call difference (proxied minus the direct call next to it); target <= 2 ms
for each transport. Exits 1 on a miss.

Usage: ``python benchmarks/mcp_proxy.py [--calls 200]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "tests" / "guard" / "mcp" / "report_server.py"
SPEC = ROOT / "tests" / "guard" / "mcp" / "spec.yaml"
TARGET_MS = 2.0


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(port: int) -> None:
    for _ in range(500):
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


def _guard(tmp: Path) -> list[str]:
    return [sys.executable, "-m", "roadcheck", "guard", "mcp", "--spec", str(SPEC),
            "--state-dir", str(tmp / "state"), "--key-file", str(tmp / "guard.key")]


@contextlib.asynccontextmanager
async def _clients(transport: str, tmp: Path) -> AsyncIterator[tuple[Any, Any]]:
    """(direct, proxied) clients, each to its own server process."""
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    upstream = [sys.executable, str(SERVER), str(tmp / "outbox.txt")]
    if transport == "stdio":
        direct = StdioServerParameters(command=upstream[0], args=upstream[1:])
        cmd = [*_guard(tmp), "--", *upstream]
        proxied = StdioServerParameters(command=cmd[0], args=cmd[1:])
        with open(os.devnull, "w") as err:
            async with Client(stdio_client(direct, errlog=err)) as a, \
                    Client(stdio_client(proxied, errlog=err)) as b:
                yield a, b
        return
    up1, up2, port = _port(), _port(), _port()
    procs = [subprocess.Popen([*upstream, "http", str(p)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for p in (up1, up2)]
    procs.append(subprocess.Popen([*_guard(tmp), "--upstream", f"http://127.0.0.1:{up2}/mcp",
                                   "--port", str(port)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))
    try:
        for p in (up1, up2, port):
            _wait(p)
        async with Client(f"http://127.0.0.1:{up1}/mcp") as a, \
                Client(f"http://127.0.0.1:{port}/mcp") as b:
            yield a, b
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


async def _measure(transport: str, calls: int) -> tuple[float, float, float]:
    """(direct p50, proxied p50, added p50) in ms."""
    with tempfile.TemporaryDirectory() as tmp:
        async with _clients(transport, Path(tmp)) as (direct, proxied):
            for client in (direct, proxied):  # warm: first calls import and connect
                for _ in range(5):
                    await client.call_tool("list_files", {})
            base, through, added = [], [], []
            for _ in range(calls):
                t0 = time.perf_counter()
                await direct.call_tool("list_files", {})
                t1 = time.perf_counter()
                result = await proxied.call_tool("list_files", {})
                t2 = time.perf_counter()
                if result.is_error:
                    raise RuntimeError(f"the proxied call failed: {result}")
                base.append(t1 - t0)
                through.append(t2 - t1)
                added.append((t2 - t1) - (t1 - t0))
    ms = 1000.0
    return (statistics.median(base) * ms, statistics.median(through) * ms,
            statistics.median(added) * ms)


def measure(transport: str, calls: int) -> tuple[float, float, float]:
    import anyio

    return anyio.run(_measure, transport, calls)


def verdict(figures: dict[str, tuple[float, float, float]]) -> int:
    """Print each transport's figures; 1 when any added p50 is over the target."""
    missed = 0
    for transport, (base, through, added) in figures.items():
        ok = added <= TARGET_MS
        missed |= not ok
        print(f"{transport:6} direct p50 {base:7.3f} ms  proxied p50 {through:7.3f} ms  "
              f"added p50 {added:6.3f} ms  (target <= {TARGET_MS} ms) "
              f"{'ok' if ok else 'MISS'}")
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    return verdict({t: measure(t, args.calls) for t in ("stdio", "http")})


if __name__ == "__main__":
    sys.exit(main())
