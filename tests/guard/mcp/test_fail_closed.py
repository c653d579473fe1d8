"""What the proxy cannot read it answers with an error and never forwards."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import httpx
import orjson

from .conftest import SERVER, Proxied, free_port, wait_port


def test_malformed_client_lines_are_answered_not_forwarded(tmp_path: Any) -> None:
    p = Proxied(tmp_path, "stdio")
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "send_report", "arguments": {"to": "x", "body": "y"}}}
    lines = [b"not json", orjson.dumps([call]), b'{"jsonrpc": "1.0", "id": 3, "method": 5}']
    proc = subprocess.run([*p.guard_args(), "--", sys.executable, str(SERVER), str(p.outbox)],
                          input=b"\n".join(lines) + b"\n", capture_output=True, env=p.environ(),
                          timeout=20, check=False)
    answers = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert [a["error"]["code"] for a in answers] == [-32700, -32600, -32600]
    assert [a["id"] for a in answers] == [None, None, 3]
    assert b"refused a client message" in proc.stderr
    assert p.sent() == ""


def test_http_refuses_a_batch_and_an_unreachable_upstream(tmp_path: Any) -> None:
    p = Proxied(tmp_path, "http")
    port, dead = free_port(), free_port()
    proxy = subprocess.Popen([*p.guard_args(), "--upstream", f"http://127.0.0.1:{dead}/mcp",
                              "--port", str(port)], env=p.environ(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proxy)
        url = f"http://127.0.0.1:{port}/mcp"
        batch = httpx.post(url, content=b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]')
        assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
        ping = httpx.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert ping.status_code == 502 and "cannot be reached" in ping.json()["error"]["message"]
        assert httpx.post(f"http://127.0.0.1:{port}/other", json={}).status_code == 404
    finally:
        proxy.kill()
        proxy.wait()


def test_http_listens_on_loopback_only(tmp_path: Any) -> None:
    p = Proxied(tmp_path, "http")
    proc = subprocess.run([*p.guard_args(), "--upstream", "http://127.0.0.1:1/mcp",
                           "--host", "0.0.0.0"], capture_output=True, text=True,
                          env=p.environ(), timeout=20, check=False)
    assert proc.returncode == 2
    assert "not a loopback address" in proc.stderr


def test_no_upstream_or_two_is_a_usage_error(tmp_path: Any) -> None:
    p = Proxied(tmp_path, "stdio")
    for extra in ([], ["--upstream", "http://127.0.0.1:1/mcp", "--", "true"]):
        proc = subprocess.run([*p.guard_args(), *extra], capture_output=True, text=True,
                              env=p.environ(), timeout=20, check=False)
        assert proc.returncode == 2, proc.stderr
        assert "give the upstream MCP server" in proc.stderr
        assert "Traceback" not in proc.stderr
