"""Read-only probes: a command run without a shell, and a bounded GET on 127.0.0.1."""

from __future__ import annotations

import shlex
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from roadcheck import verify
from roadcheck.acceptance import Contract
from roadcheck.acceptance.probes import CommandProbe, ProbeError, UrlProbe

from ..processes import gone

CONTRACT = Contract(required={"status": "string"})
PY = sys.executable


class _Handler(BaseHTTPRequestHandler):
    """Answers by path: /ok 200, /missing 404, /hop 302 to /ok, /away 302 to another host."""

    def do_GET(self) -> None:
        if self.path == "/slow":
            time.sleep(1.0)
        if self.path == "/hop":
            self.send_response(302)
            self.send_header("Location", "/ok")
        elif self.path == "/away":
            self.send_response(302)
            self.send_header("Location", "http://other.invalid/ok")
        else:
            self.send_response(200 if self.path in ("/ok", "/slow") else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.server.seen.append((self.command, self.path))  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: object) -> None:
        """Keep test output quiet."""


@pytest.fixture
def server() -> Iterator[str]:
    """A server on 127.0.0.1 on a free port, stopped when the test ends."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


class TestCommandProbe:
    """--probe-cmd: exit 0 confirms, anything else does not."""

    def test_exit_zero_confirms(self) -> None:
        """A command that exits 0 confirms the effect."""
        assert CommandProbe([PY, "-c", "pass"])()

    def test_nonzero_exit_is_wrong_effect(self) -> None:
        """A non-zero exit is a falsy answer carrying the exit code."""
        r = verify({"status": "x"}, CONTRACT,
                   probe=CommandProbe([PY, "-c", "import sys; sys.exit(3)"]), claims_unchecked=True)
        assert r.reasons[-1].message.endswith("(wrong-effect); exit 3")

    def test_no_shell_sees_the_arguments(self) -> None:
        """Arguments reach the program verbatim: no variables, globs or separators expand."""
        code = "import sys; sys.exit(0 if sys.argv[1:] == ['$HOME', '*', ';', 'x'] else 4)"
        assert CommandProbe([PY, "-c", code, "$HOME", "*", ";", "x"])()

    def test_timeout_fails(self) -> None:
        """A command that outlives its timeout is a probe that could not complete."""
        probe = CommandProbe([PY, "-c", "import time; time.sleep(5)"], timeout=0.3)
        with pytest.raises(ProbeError, match=r"timed out after 0\.3s"):
            probe()

    def test_missing_program(self) -> None:
        """A program that does not exist is named in the failing reason."""
        r = verify({"status": "x"}, CONTRACT, probe=CommandProbe(["/nonexistent/probe-tool"]),
                   claims_unchecked=True)
        assert "could not complete: ProbeError: cannot run" in r.reasons[-1].message

    def test_background_child_does_not_outlive_the_probe(self, tmp_path: Path) -> None:
        """A probe that leaves a child behind holding its output returns, and the child dies."""
        pidfile = tmp_path / "pid"
        script = f"sleep 300 & echo $! > {pidfile}; exit 0"
        started = time.monotonic()
        assert CommandProbe(["sh", "-c", script], timeout=15)()
        assert time.monotonic() - started < 10
        assert gone(int(pidfile.read_text()))

    def test_shell_words_are_split_not_run(self) -> None:
        """The CLI's split keeps a quoted argument whole."""
        assert shlex.split("probe --id 'cust 1'") == ["probe", "--id", "cust 1"]


class TestUrlProbe:
    """--probe-url: one GET, 2xx confirms; tests use only 127.0.0.1."""

    def test_2xx_confirms(self, server: str) -> None:
        """A 200 answer confirms the effect."""
        probe = UrlProbe(f"{server}/ok", timeout=2)
        assert probe()

    def test_404_is_wrong_effect(self, server: str) -> None:
        """A 404 answer is a falsy answer carrying the status."""
        answer = UrlProbe(f"{server}/missing", timeout=2)()
        assert not answer
        assert answer.detail == "HTTP 404"

    def test_same_host_redirect_is_followed(self, server: str) -> None:
        """A redirect on the same origin is followed."""
        assert UrlProbe(f"{server}/hop", timeout=2)()

    def test_redirect_to_another_host_is_refused(self, server: str) -> None:
        """A redirect to another host is refused before any request leaves for it."""
        with pytest.raises(ProbeError, match="refused a redirect to another host"):
            UrlProbe(f"{server}/away", timeout=2)()

    def test_timeout(self, server: str) -> None:
        """An answer slower than the timeout is a probe that could not complete."""
        with pytest.raises(ProbeError, match="timed out"):
            UrlProbe(f"{server}/slow", timeout=0.2)()

    def test_refused_connection(self) -> None:
        """A closed port on 127.0.0.1 is a probe that could not complete."""
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with pytest.raises(ProbeError, match="cannot reach"):
            UrlProbe(f"http://127.0.0.1:{port}/x", timeout=2)()

    @pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "file:///etc/passwd", "http:///x"])
    def test_only_http_urls(self, url: str) -> None:
        """Only http and https URLs with a host are probes."""
        with pytest.raises(ValueError, match="http"):
            UrlProbe(url)


class TestProbeOptions:
    """The CLI's --probe-url and --probe-cmd, end to end."""

    @pytest.mark.parametrize(("path", "code", "line"), [
        ("/ok", 0, "       ok - probe GET http://127.0.0.1:"),
        ("/missing", 1, "    FAIL - probe GET http://127.0.0.1:"),
    ])
    def test_probe_url(self, server: str, path: str, code: int, line: str) -> None:
        """--probe-url confirms on 2xx and rejects otherwise."""
        from pathlib import Path

        from click.testing import CliRunner

        from roadcheck.cli import cli

        data = Path(__file__).resolve().parent.parent / "data" / "accept"
        r = CliRunner().invoke(cli, ["accept", "-c", str(data / "contract.json"),
                                     "-r", str(data / "result_sent.json"),
                                     "--probe-url", f"{server}{path}", "--probe-timeout", "2",
                                     "--claims-unchecked"])
        assert r.exit_code == code, r.output
        assert r.stdout.splitlines()[-1].startswith(line)
