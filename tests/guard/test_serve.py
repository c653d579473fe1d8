"""``roadcheck guard serve``: the guard over HTTP on loopback, failing closed."""

from __future__ import annotations

import http.client
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.errors import InputError
from roadcheck.guard import GuardStore
from roadcheck.guard.serve import GuardServer, loopback
from roadcheck.guard.store import verify_session
from roadcheck.harness.audit import load_trail

from ..conftest import ROOT

SPEC = {"mandatory_checkpoints": [
    {"checkpoint_id": "send_ok", "must_precede": "send_report", "scope": "each",
     "consume": True, "confirmed_by": ["owner", "cfo"], "binds": {"tool": True, "args": True}}]}
EXAMPLE_SPEC = str(ROOT / "examples" / "guard" / "spec.yaml")
SEND = {"event": "action", "action_type": "send_report", "args": {"to": "cfo"}}


class Client:
    """Requests to a running server, one connection each."""

    def __init__(self, server: GuardServer) -> None:
        self.host, self.port = server.server_address[0], server.server_address[1]

    def post(self, path: str, body: Any = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
        conn = http.client.HTTPConnection(str(self.host), self.port, timeout=30)
        try:
            data = raw if raw is not None else (b"" if body is None else orjson.dumps(body))
            conn.request("POST", path, body=data, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, orjson.loads(resp.read())
        finally:
            conn.close()

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        conn = http.client.HTTPConnection(str(self.host), self.port, timeout=30)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, orjson.loads(resp.read())
        finally:
            conn.close()


TOKEN = "s3cret-approver-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Client]:
    server = GuardServer(GuardStore(tmp_path, SPEC), "127.0.0.1", 0, approve_token=TOKEN)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield Client(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class TestServe:
    def test_ask_then_bound_approval_then_allow_then_spent(self, client: Client,
                                                         tmp_path: Path) -> None:
        """check asks; approve(by=cfo) allows that call only; the send spends it."""
        assert client.post("/v1/sessions/run-1") == (201, {"session": "run-1", "created": True})
        status, asked = client.post("/v1/sessions/run-1/check", SEND)
        assert status == 200 and asked["verdict"] == "ask"
        assert asked["reasons"][0]["code"] == "checkpoint-skipped"
        status, other = client.post("/v1/sessions/run-1/approve", {"event": SEND, "by": "cfo"},
                                    headers=AUTH)
        assert status == 200 and other["verdict"] == "allow" and other["approvers"] == ["cfo"]
        everyone = {**SEND, "args": {"to": "everyone"}}
        assert client.post("/v1/sessions/run-1/check", everyone)[1]["verdict"] == "ask"
        assert client.post("/v1/sessions/run-1/observe", SEND) == (200, {"seq": 2})
        assert client.post("/v1/sessions/run-1/check", SEND)[1]["verdict"] == "ask"
        assert verify_session(tmp_path, "run-1").ok
        verdicts = [r["verdict"] for r in load_trail(tmp_path, "run-1").records]
        assert verdicts == ["fail", "pass", "fail", "fail"]

    def test_creating_twice_keeps_the_session(self, client: Client) -> None:
        """A second create answers 200 and loses nothing."""
        client.post("/v1/sessions/s")
        client.post("/v1/sessions/s/approve", {"event": SEND, "by": "cfo"}, headers=AUTH)
        assert client.post("/v1/sessions/s") == (200, {"session": "s", "created": False})
        assert client.post("/v1/sessions/s/check", SEND)[1]["verdict"] == "allow"

    def test_approver_the_rule_does_not_accept(self, client: Client) -> None:
        """approve(by=user) on a rule for owner or cfo: still not allowed."""
        client.post("/v1/sessions/s")
        status, after = client.post("/v1/sessions/s/approve", {"event": SEND, "by": "user"},
                                    headers=AUTH)
        assert status == 200 and after["verdict"] == "ask"


class TestFailClosed:
    @pytest.mark.parametrize(("path", "body", "status", "words"), [
        ("/v1/sessions/nobody/check", SEND, 400, "unknown guard session 'nobody'"),
        ("/v1/sessions/s/check", None, 400, "not JSON"),
        ("/v1/sessions/s/check", [1, 2], 400, "not a JSON object"),
        ("/v1/sessions/s/observe", {"event": "action"}, 400, "action_type"),
        ("/v1/sessions/s/approve", {"event": SEND}, 400, "'by'"),
        ("/v1/sessions/s/approve", {"by": "cfo"}, 400, "'event'"),
        ("/v1/sessions/s/drop", SEND, 404, "no such endpoint"),
        ("/v2/anything", SEND, 404, "no such endpoint"),
        ("/v1/sessions/..%2F..%2Fetc/check", SEND, 400, "unusable session id"),
    ])
    def test_unusable_requests_are_denied(self, client: Client, path: str, body: Any,
                                          status: int, words: str) -> None:
        """Each is a non-2xx status and verdict deny with a one-line reason."""
        client.post("/v1/sessions/s")
        got, doc = client.post(path, body, headers=AUTH)
        assert got == status and doc["verdict"] == "deny"
        assert words in doc["error"] and "\n" not in doc["error"]


class TestApprovalCredential:
    """An approval is a person's word: the server takes it only with the approver's token."""

    @pytest.mark.parametrize("headers", [
        {}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
        {"Authorization": f"Basic {TOKEN}"}])
    def test_approve_without_the_token_is_refused(self, client: Client,
                                                  headers: dict[str, str]) -> None:
        """No token, a wrong one, or one not given as a bearer token: 401, deny, and the
        call is still asked about."""
        client.post("/v1/sessions/s")
        status, doc = client.post("/v1/sessions/s/approve", {"event": SEND, "by": "cfo"},
                                  headers=headers)
        assert status == 401 and doc["verdict"] == "deny" and "token" in doc["error"]
        assert client.post("/v1/sessions/s/check", SEND)[1]["verdict"] == "ask"

    def test_a_session_named_approve_needs_no_token(self, client: Client) -> None:
        """Only the approve endpoint takes the token: creating or checking a session that
        happens to be called "approve" does not."""
        assert client.post("/v1/sessions/approve")[0] == 201
        assert client.post("/v1/sessions/approve/check", SEND)[1]["verdict"] == "ask"

    def test_a_server_without_a_token_takes_no_approval(self, tmp_path: Path) -> None:
        """Started without --approve-token-file, approve is off (403) and says how to
        turn it on; check and observe work as before."""
        server = GuardServer(GuardStore(tmp_path, SPEC), "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
        thread.start()
        try:
            c = Client(server)
            c.post("/v1/sessions/s")
            status, doc = c.post("/v1/sessions/s/approve", {"event": SEND, "by": "cfo"},
                                 headers=AUTH)
            assert status == 403 and "--approve-token-file" in doc["error"]
            assert c.post("/v1/sessions/s/check", SEND)[1]["verdict"] == "ask"
        finally:
            server.shutdown()
            server.server_close()
            thread.join()

    def test_the_cli_refuses_a_token_file_others_can_read(self, tmp_path: Path) -> None:
        """A token file readable by the group or others is refused before anything is
        served (exit 2, one line), as is an empty one."""
        token = tmp_path / "token"
        token.write_text(TOKEN)
        token.chmod(0o644)
        got = CliRunner().invoke(cli, ["guard", "serve", "--spec", EXAMPLE_SPEC, "--state-dir",
                                       str(tmp_path / "state"), "--port", "0",
                                       "--approve-token-file", str(token)])
        assert got.exit_code == 2 and "readable by others" in got.output
        token.write_text("")
        token.chmod(0o600)
        got = CliRunner().invoke(cli, ["guard", "serve", "--spec", EXAMPLE_SPEC, "--state-dir",
                                       str(tmp_path / "state"), "--port", "0",
                                       "--approve-token-file", str(token)])
        assert got.exit_code == 2 and "empty" in got.output


class TestConcurrency:
    def test_a_slow_client_does_not_hold_up_another(self, client: Client) -> None:
        """One client that has sent half a request does not stop a second from being
        answered; the first is answered when it finishes."""
        import socket

        client.post("/v1/sessions/s")
        slow = socket.create_connection((str(client.host), client.port), timeout=30)
        try:
            body = orjson.dumps(SEND)
            slow.sendall(b"POST /v1/sessions/s/check HTTP/1.1\r\nHost: x\r\n")
            status, doc = client.post("/v1/sessions/s/check", SEND)  # answered meanwhile
            assert status == 200 and doc["verdict"] == "ask"
            slow.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            answer = http.client.HTTPResponse(slow)
            answer.begin()
            assert answer.status == 200 and orjson.loads(answer.read())["verdict"] == "ask"
        finally:
            slow.close()

    def test_a_request_that_never_ends_is_cut_off(self, client: Client,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
        """A client that stops sending is disconnected after the per-request bound."""
        import socket

        from roadcheck.guard import serve as serving

        monkeypatch.setattr(serving._Handler, "timeout", 0.2)
        slow = socket.create_connection((str(client.host), client.port), timeout=30)
        try:
            slow.sendall(b"POST /v1/sessions/s/check HTTP/1.1\r\n")
            assert slow.recv(65536) == b""  # closed by the server, nothing answered
        finally:
            slow.close()

    def test_a_repeated_key_is_a_deny(self, client: Client) -> None:
        """Two readers of '{"args": {"to": "a", "to": "b"}}' disagree: nothing is judged."""
        client.post("/v1/sessions/s")
        got, doc = client.post("/v1/sessions/s/check", raw=b'{"event": "action", '
                               b'"action_type": "send_report", "args": {"to": "cfo", '
                               b'"to": "everyone"}}')
        assert got == 400 and doc["verdict"] == "deny"
        assert "duplicate key 'to'" in doc["error"]

    def test_a_malformed_event_checked_is_a_deny(self, client: Client) -> None:
        """check on an event replay would refuse answers deny (bad-input), status 200."""
        client.post("/v1/sessions/s")
        status, doc = client.post("/v1/sessions/s/check", {"event": "action"})
        assert status == 200 and doc["verdict"] == "deny"
        assert doc["reasons"][0]["code"] == "bad-input"

    def test_get_chunked_and_huge_bodies_are_refused(self, client: Client) -> None:
        """Only POST is answered, and only with a body of known, bounded length."""
        assert client.get("/v1/sessions/s/check") == (405, {
            "verdict": "deny", "reason": "bad-input", "error": "use POST"})
        status, doc = client.post("/v1/sessions/s/check", raw=b"", headers={
            "Content-Length": str(10 << 20)})
        assert status == 413 and doc["verdict"] == "deny"
        status, doc = client.post("/v1/sessions/s/check", raw=b"", headers={
            "Transfer-Encoding": "chunked"})
        assert status == 411 and doc["verdict"] == "deny"

    def test_an_internal_error_denies(self, client: Client, monkeypatch: Any) -> None:
        """A bug while answering is a 500 with verdict deny, and the server keeps serving."""
        client.post("/v1/sessions/s")

        def broken(*args: Any) -> Any:
            raise RuntimeError("boom")

        monkeypatch.setattr(GuardServer, "answer", broken)
        assert client.post("/v1/sessions/s/check", SEND) == (500, {
            "verdict": "deny", "reason": "internal", "error": "RuntimeError: boom"})
        monkeypatch.undo()
        assert client.post("/v1/sessions/s/check", SEND)[1]["verdict"] == "ask"


class TestLoopbackOnly:
    @pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
    def test_loopback_is_accepted(self, host: str) -> None:
        """Loopback addresses pass (localhost as 127.0.0.1)."""
        assert loopback(host) == ("127.0.0.1" if host == "localhost" else host)

    @pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "example.com", ""])
    def test_any_other_address_is_refused(self, host: str, tmp_path: Path) -> None:
        """Refused before anything is bound."""
        with pytest.raises(InputError, match="not a loopback address"):
            GuardServer(GuardStore(tmp_path, SPEC), host, 0)

    def test_cli_refuses_with_one_line_and_exit_2(self, tmp_path: Path) -> None:
        """roadcheck guard serve --host 0.0.0.0: error[bad-input], exit 2, nothing served."""
        out = CliRunner().invoke(cli, ["guard", "serve", "--spec", EXAMPLE_SPEC,
                                       "--state-dir", str(tmp_path), "--host", "0.0.0.0"])
        assert out.exit_code == 2
        assert out.output.strip().splitlines() == [
            "error[bad-input]: --host '0.0.0.0' is not a loopback address: the guard serves "
            "on 127.0.0.1, ::1 or localhost only"]

    def test_cli_serves_until_interrupted(self, tmp_path: Path) -> None:
        """The command prints its URL and answers a check."""
        proc = subprocess.Popen([sys.executable, "-c", "from roadcheck.cli import main; main()",
                                 "guard", "serve", "--spec", EXAMPLE_SPEC,
                                 "--state-dir", str(tmp_path), "--port", "0"],
                                stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            assert line.startswith("roadcheck guard: serving on http://127.0.0.1:")
            port = int(line.rsplit(":", 1)[1])
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/v1/sessions/x", body=b"")
            assert conn.getresponse().status == 201
            conn.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            if proc.stderr is not None:
                proc.stderr.close()
