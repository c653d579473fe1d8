"""``roadcheck guard daemon`` and the hook's thin client: resident, durable, failing closed."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from roadcheck import _hook_client as client
from roadcheck.errors import InputError
from roadcheck.guard import claude_code, hooks
from roadcheck.guard.daemon import Daemon
from roadcheck.guard.store import verify_session
from roadcheck.harness.audit import load_trail

from ..conftest import DATA, ROOT

PAYLOADS = DATA / "guard-daemon"
SPEC = ROOT / "examples" / "guard" / "spec.yaml"
PRE = (PAYLOADS / "pre_tool_use_push.json").read_bytes()
POST = (PAYLOADS / "post_tool_use_push.json").read_bytes()
PROMPT = (PAYLOADS / "user_prompt_submit.json").read_bytes()
PERMISSION = (PAYLOADS / "permission_request.json").read_bytes()
SESSION = "daemon-1"


@pytest.fixture
def short() -> Iterator[Path]:
    """A directory with a short path (a Unix socket's path has at most 107 bytes)."""
    where = Path(tempfile.mkdtemp(prefix="rgd", dir="/tmp"))
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


class Setup:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.sock = str(base / "run" / "guard.sock")
        self.state = base / "state"
        self.spec = base / "spec.yaml"
        shutil.copy(SPEC, self.spec)
        self.args = ["--spec", str(self.spec), "--state-dir", str(self.state)]

    def ask(self, payload: bytes, **kw: Any) -> tuple[bytes, bytes, int] | None:
        return client.ask("claude-code", self.args, payload,
                          {**os.environ, client.ENV_SOCKET: self.sock}, start=False, **kw)

    def in_process(self, payload: bytes, state: Path) -> tuple[bytes, bytes, int]:
        got = claude_code.run_hook(payload, str(self.spec), str(state))
        return got.stdout.encode(), got.stderr.encode(), got.exit

    def decisions(self, state: Path | None = None) -> list[str]:
        trail = load_trail(state or self.state, SESSION)
        return [r["gate"]["summary"] for r in trail.records]


@pytest.fixture
def setup(short: Path) -> Setup:
    return Setup(short)


@pytest.fixture
def daemon(setup: Setup) -> Iterator[Daemon]:
    """A daemon in this process, on the setup's socket."""
    found = Daemon(setup.sock, idle_exit=600)
    assert found.bind()
    thread = threading.Thread(target=found.serve, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        found.stop()
        thread.join(timeout=10)
        found.release()


def _spawn(setup: Setup) -> subprocess.Popen[bytes]:
    """``roadcheck guard daemon`` as its own process; waits for its socket."""
    proc = subprocess.Popen([sys.executable, "-m", "roadcheck", "guard", "daemon", "--socket",
                             setup.sock], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while client.socket_problem(setup.sock) is not None:
        assert proc.poll() is None, "the daemon ended"
        assert time.monotonic() < deadline, "the daemon did not start"
        time.sleep(0.02)
    return proc


class TestAnswers:
    def test_the_daemon_answers_as_the_process_does(self, setup: Setup,
                                                    daemon: Daemon) -> None:
        """Prompt, ask, approval at the prompt, the push again (spent), the permission
        dialog: the same bytes and exit codes as the in-process hook, the same log."""
        other = setup.base / "other"
        for payload in (PROMPT, PRE, POST, PRE, PERMISSION):
            assert setup.ask(payload) == setup.in_process(payload, other)
        assert setup.decisions() == setup.decisions(other)
        assert setup.decisions() == ["ask Bash", "allow Bash", "ask Bash", "ask Bash"]
        assert verify_session(setup.state, SESSION).ok

    def test_a_session_written_by_the_process_meanwhile_is_read_again(
            self, setup: Setup, daemon: Daemon) -> None:
        """The in-process hook (the fallback) writes the session between two daemon calls:
        the daemon reads it again, and the log stays one chain."""
        setup.ask(PRE)
        setup.in_process(POST, setup.state)  # approved at the prompt, in process
        out = setup.ask(PRE)
        assert out is not None and b'"ask"' in out[0]
        assert setup.decisions() == ["ask Bash", "allow Bash", "ask Bash"]
        assert verify_session(setup.state, SESSION).ok

    def test_a_changed_spec_is_read_again(self, setup: Setup, daemon: Daemon) -> None:
        """The spec file rewritten while the daemon runs: the next call is judged by it."""
        assert b'"ask"' in (setup.ask(PRE) or (b"",))[0]
        setup.spec.write_text("mandatory_checkpoints:\n  - {checkpoint_id: send_ok, "
                              "must_precede: mcp__mail__send_report}\n")
        assert setup.ask(PRE) == (b"", b"", 0)  # a push no rule guards: no decision

    def test_a_bad_spec_denies(self, setup: Setup, daemon: Daemon) -> None:
        setup.spec.write_text("mandatory_checkpoints: [{]\n")
        out = setup.ask(PRE)
        assert out is not None and out[2] == 2 and b"denied" in out[1]

    def test_another_environment_is_answered_in_process(self, setup: Setup,
                                                        daemon: Daemon) -> None:
        """A call made with another state directory in its environment is not the
        daemon's: nothing is decided there, the hook answers it itself."""
        env = {**os.environ, client.ENV_SOCKET: setup.sock,
               "ROADCHECK_GUARD_STATE_DIR": str(setup.base / "elsewhere")}
        assert client.ask("claude-code", setup.args, PRE, env, start=False) is None
        assert not setup.state.exists()

    def test_status_and_stop(self, setup: Setup) -> None:
        from roadcheck.guard.daemon import control

        proc = _spawn(setup)
        try:
            code, said = control(setup.sock, "status")
            assert code == 0 and said.startswith(f"running: pid {proc.pid}, 0 calls")
            assert control(setup.sock, "stop") == (0, "stopping")
            assert proc.wait(timeout=10) == 0
            assert not os.path.lexists(setup.sock)
            assert control(setup.sock, "status") == (1, f"no daemon on {setup.sock}")
        finally:
            proc.kill()
            proc.wait()

    def test_a_second_daemon_on_the_socket_exits(self, setup: Setup, daemon: Daemon) -> None:
        assert Daemon(setup.sock).bind() is False


class TestConcurrency:
    def test_a_stalled_client_does_not_block_another(self, setup: Setup, daemon: Daemon,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
        """One client sends half a request and stops; another session's call, and a call
        of the same session, are answered meanwhile, long before the stalled one is cut."""
        from roadcheck.guard import daemon as resident

        monkeypatch.setattr(resident, "REQUEST_TIMEOUT", 60.0)
        stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stalled.connect(setup.sock)
        try:
            stalled.sendall(b"RCG1 10 10\nclaude")
            t0 = time.monotonic()
            out = setup.ask(PRE)
            assert out is not None and b'"ask"' in out[0]
            other = PRE.replace(SESSION.encode(), b"daemon-2")
            out = setup.ask(other)
            assert out is not None and b'"ask"' in out[0]
            assert time.monotonic() - t0 < 30
            stalled.settimeout(0)
            with pytest.raises(BlockingIOError):  # still open: not cut off, not answered
                stalled.recv(1)
        finally:
            stalled.close()

    def test_a_stalled_client_is_cut_off(self, setup: Setup, daemon: Daemon,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
        from roadcheck.guard import daemon as resident

        monkeypatch.setattr(resident, "REQUEST_TIMEOUT", 0.2)
        stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stalled.settimeout(10)
        stalled.connect(setup.sock)
        try:
            stalled.sendall(b"RCG1 10")
            assert stalled.recv(100) == b""  # closed, nothing answered
        finally:
            stalled.close()

    def test_many_clients_at_once(self, setup: Setup, daemon: Daemon) -> None:
        """Eight threads, two sessions each: every call answered, each log one chain."""
        results: list[Any] = []

        def run(n: int) -> None:
            payload = PRE.replace(SESSION.encode(), f"many-{n % 4}".encode())
            results.extend(setup.ask(payload) for _ in range(3))

        threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(results) == 24 and all(r is not None and r[2] == 0 and b'"ask"' in r[0]
                                          for r in results)
        for n in range(4):
            assert verify_session(setup.state, f"many-{n}").records == 6


class TestDurability:
    def test_killed_after_an_answer_the_decision_is_in_the_log(self, setup: Setup) -> None:
        """kill -9 right after an answer: the decision is on disk, and a new daemon goes
        on from it (the asked call's approval at the prompt still counts)."""
        proc = _spawn(setup)
        try:
            out = setup.ask(PRE)
            assert out is not None and b'"ask"' in out[0]
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            proc.kill()
            proc.wait()
        assert setup.decisions() == ["ask Bash"]
        assert verify_session(setup.state, SESSION).ok
        os.unlink(setup.sock)  # what a killed daemon leaves: a socket no one listens on
        assert setup.ask(PRE) is None  # no daemon: the hook would answer in process
        proc = _spawn(setup)
        try:
            setup.ask(POST)
            assert setup.decisions() == ["ask Bash", "allow Bash"]
        finally:
            proc.terminate()
            proc.wait()
        assert verify_session(setup.state, SESSION).ok


def _fake_daemon(path: str, reply: bytes | None, hold: float = 0.0) -> socket.socket:
    """A socket at ``path`` that reads a request and answers ``reply`` (None: closes)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    os.chmod(path, 0o600)
    sock.listen(4)

    def serve() -> None:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        with conn:
            conn.recv(1 << 16)
            time.sleep(hold)
            if reply is not None:
                with contextlib.suppress(OSError):  # a client that gave up
                    conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    return sock


class TestFailClosed:
    @pytest.mark.parametrize("reply", [
        None,  # the daemon dies mid-request
        b"",
        b"garbage",
        b"RCG1 0 5 0\nab",  # cut short
        b"RCG1 0 0 0\nextra",  # more than it says
        b"RCG1 999 0 0\n",
        b"RCG1 0 x 0\n",
        b"RCG2 0 0 0\n",
        b"RCG1 fallback 9\nshort",
    ])
    def test_a_broken_answer_denies(self, setup: Setup, reply: bytes | None) -> None:
        server = _fake_daemon(setup.sock, reply)
        try:
            out = setup.ask(PRE)
        finally:
            server.close()
        assert out is not None and out[0] == b"" and out[2] == 2
        assert out[1].startswith(b"roadcheck guard: denied: the guard daemon")

    def test_no_answer_in_time_denies(self, setup: Setup,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(client, "ANSWER_TIMEOUT", 0.2)
        server = _fake_daemon(setup.sock, b"RCG1 0 0 0\n", hold=2.0)
        try:
            out = setup.ask(PRE)
        finally:
            server.close()
        assert out is not None and out[2] == 2 and b"did not answer" in out[1]

    @pytest.mark.parametrize("kind", ["fifo", "file", "loose", "dir-loose", "other-user"])
    def test_a_socket_path_someone_put_there_denies(self, setup: Setup, kind: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
        """A FIFO, a regular file, a socket others may use or that is not this user's:
        deny, and no daemon starts there."""
        os.makedirs(os.path.dirname(setup.sock), mode=0o700)
        server = None
        if kind == "fifo":
            os.mkfifo(setup.sock, 0o600)
        elif kind == "file":
            Path(setup.sock).write_bytes(b"RCG1 0 0 0\n")
        else:
            server = _fake_daemon(setup.sock, b"RCG1 0 0 0\n")
            if kind == "loose":
                os.chmod(setup.sock, 0o666)
            elif kind == "dir-loose":
                os.chmod(os.path.dirname(setup.sock), 0o755)
            else:
                monkeypatch.setattr(client.os, "getuid", lambda: os.geteuid() + 1)
        try:
            out = client.ask("claude-code", setup.args, PRE,
                             {**os.environ, client.ENV_SOCKET: setup.sock})
        finally:
            monkeypatch.undo()
            if server is not None:
                server.close()
        assert out is not None and out[2] == 2 and b"socket is unsafe" in out[1]
        assert not os.path.exists(setup.sock + ".start")

    def test_the_daemon_refuses_a_fifo_in_its_place(self, setup: Setup) -> None:
        os.makedirs(os.path.dirname(setup.sock), mode=0o700)
        os.mkfifo(setup.sock, 0o600)
        with pytest.raises(InputError, match="is not a socket"):
            Daemon(setup.sock).bind()

    def test_the_daemon_refuses_a_directory_others_may_enter(self, setup: Setup) -> None:
        os.makedirs(os.path.dirname(setup.sock), mode=0o755)
        os.chmod(os.path.dirname(setup.sock), 0o755)
        with pytest.raises(InputError, match="only you can use"):
            Daemon(setup.sock).bind()

    def test_the_socket_is_private(self, setup: Setup, daemon: Daemon) -> None:
        assert os.stat(setup.sock).st_mode & 0o777 == 0o600
        assert os.stat(os.path.dirname(setup.sock)).st_mode & 0o777 == 0o700


def _hook(setup: Setup, payload: bytes, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "roadcheck", "guard", "claude-code",
                           *setup.args], input=payload, capture_output=True, timeout=60,
                          env={**os.environ, client.ENV_SOCKET: setup.sock, **env})


class TestThinClient:
    def test_no_daemon_answers_in_process_and_starts_one(self, setup: Setup) -> None:
        """The first call finds no daemon: it is answered in process, and a daemon is
        started, detached, which answers the next call."""
        first = _hook(setup, PRE, ROADCHECK_GUARD_DAEMON="1")
        try:
            assert first.returncode == 0, first.stderr
            assert orjson.loads(first.stdout)["hookSpecificOutput"]["permissionDecision"] == \
                "ask"
            deadline = time.monotonic() + 30
            while client.socket_problem(setup.sock) is not None:
                assert time.monotonic() < deadline, "no daemon was started"
                time.sleep(0.05)
            second = _hook(setup, POST, ROADCHECK_GUARD_DAEMON="1")
            assert second.returncode == 0, second.stderr
            from roadcheck.guard.daemon import control

            code, said = control(setup.sock, "status")
            assert code == 0 and ", 1 calls answered" in said
            assert setup.decisions() == ["ask Bash", "allow Bash"]
        finally:
            from roadcheck.guard.daemon import control

            control(setup.sock, "stop")

    def test_turned_off_it_neither_asks_nor_starts(self, setup: Setup) -> None:
        done = _hook(setup, PRE, ROADCHECK_GUARD_DAEMON="0")
        assert done.returncode == 0 and b'"ask"' in done.stdout
        assert not os.path.lexists(setup.sock) and not os.path.lexists(setup.sock + ".start")

    def test_an_unsafe_socket_denies_the_hook(self, setup: Setup) -> None:
        os.makedirs(os.path.dirname(setup.sock), mode=0o700)
        os.mkfifo(setup.sock, 0o600)
        done = _hook(setup, PRE, ROADCHECK_GUARD_DAEMON="1")
        assert done.returncode == 2 and done.stdout == b""
        assert b"socket is unsafe" in done.stderr

    def test_the_client_imports_almost_nothing(self) -> None:
        """What asking the daemon costs a hook process: os, sys and built-ins only."""
        code = ("import sys; before = set(sys.modules); import roadcheck._hook_client; "
                "print(sorted(set(sys.modules) - before))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout
        loaded = set(eval(out))
        assert loaded <= {"roadcheck", "roadcheck._hook_client", "roadcheck._lazy",
                          "roadcheck._version", "__future__"}, loaded


class TestHttpHook:
    @pytest.fixture
    def server(self, setup: Setup) -> Iterator[Any]:
        from roadcheck.guard import GuardStore
        from roadcheck.guard.serve import GuardServer

        found = GuardServer(GuardStore(setup.state, setup.spec), "127.0.0.1", 0)
        thread = threading.Thread(target=found.serve_forever, args=(0.01,), daemon=True)
        thread.start()
        try:
            yield found
        finally:
            found.shutdown()
            found.server_close()
            thread.join()

    @staticmethod
    def post(server: Any, body: bytes, path: str = "/v1/hooks/claude-code",
             headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
        try:
            conn.request("POST", path, body=body,
                         headers=headers or {"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def test_claude_codes_payloads_are_answered(self, server: Any, setup: Setup) -> None:
        """The hook's JSON in the body; the command hook's output as the 200 answer."""
        other = setup.base / "other"
        for payload in (PROMPT, PRE, POST, PRE, PERMISSION):
            status, body = self.post(server, payload)
            assert status == 200
            assert body == setup.in_process(payload, other)[0]
        assert setup.decisions() == setup.decisions(other)

    @pytest.mark.parametrize(("body", "path", "key"), [
        (b"not json", "/v1/hooks/claude-code", "continue"),
        (b'{"hook_event_name": "PreToolUse", "session_id": "s"}', "/v1/hooks/claude-code",
         "permissionDecision"),
        (b'{"hook_event_name": "PreToolUse", "session_id": "../x", "tool_name": "Bash", '
         b'"tool_input": {}}', "/v1/hooks/claude-code", "permissionDecision"),
        (PRE, "/v1/hooks/codex", "permissionDecision"),
    ])
    def test_every_failure_is_a_200_deny(self, server: Any, body: bytes, path: str,
                                         key: str) -> None:
        status, answer = self.post(server, body, path)
        assert status == 200
        doc = orjson.loads(answer)
        if key == "continue":
            assert doc["continue"] is False and doc["decision"] == "block"
        else:
            assert doc["hookSpecificOutput"]["permissionDecision"] == "deny"
            assert doc["hookSpecificOutput"]["permissionDecisionReason"].startswith(
                "roadcheck guard: denied:")

    def test_an_internal_error_is_a_200_deny(self, server: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
        from roadcheck.guard.serve import GuardServer

        def broken(*args: Any) -> Any:
            raise RuntimeError("boom")

        monkeypatch.setattr(GuardServer, "hook", broken)
        status, answer = self.post(server, PRE)
        assert status == 200
        reason = orjson.loads(answer)["hookSpecificOutput"]["permissionDecisionReason"]
        assert reason == "roadcheck guard: denied: internal error: RuntimeError: boom"

    def test_a_huge_body_is_a_200_deny(self, server: Any) -> None:
        status, answer = self.post(server, b"", headers={"Content-Length": str(10 << 20)})
        assert status == 200 and orjson.loads(answer)["decision"] == "block"


class TestSeam:
    def test_one_answer_for_the_process_and_the_daemon(self, setup: Setup) -> None:
        """answer() without stores is the process path; with them, the resident one: the
        same bytes, relative paths read against the hook's directory."""
        from roadcheck.guard.answer import Stores, answer

        stores = Stores()
        try:
            rel = ["--spec", "spec.yaml", "--state-dir", "state"]
            mine = answer("claude-code", rel, PRE, stores, cwd=str(setup.base))
            other = ["--spec", str(setup.spec), "--state-dir", str(setup.base / "other")]
            plain = answer("claude-code", other, PRE)
        finally:
            stores.close()
        assert (mine.stdout, mine.stderr, mine.exit) == (plain.stdout, plain.stderr, 0)
        assert b'"ask"' in mine.stdout and setup.decisions() == ["ask Bash"]

    @pytest.mark.parametrize(("name", "args"), [("cline-x", ["--spec", "s"]),
                                                ("claude-code", ["--help"])])
    def test_what_the_daemon_cannot_take_falls_back(self, name: str, args: list[str]) -> None:
        from roadcheck.guard.answer import answer

        found = answer(name, args, PRE)
        assert found.fallback and found.stdout == b""


HOOKS = DATA / "hooks"
#: Each CLI whose recorded payloads lie under tests/data/hooks (a folder named after an
#: adapter; others, such as the stop gate's sessions, are not payloads of one CLI).
CLIS = sorted(p.name for p in HOOKS.iterdir() if p.is_dir() and p.name in hooks.ADAPTERS)


class TestEveryAdapter:
    @pytest.mark.parametrize("cli", CLIS)
    def test_the_daemon_answers_every_cli_as_its_process_does(self, cli: str, setup: Setup,
                                                              daemon: Daemon) -> None:
        """Each CLI's recorded payloads, in order, through the daemon and in process: the
        same output and exit code, event for event (malformed ones included)."""
        from roadcheck.guard.answer import answer

        spec = str(HOOKS / "spec.yaml")
        names = sorted(p.name for p in (HOOKS / cli).glob("*.json") if p.name != "expected.json")
        assert names
        mine = ["--spec", spec, "--state-dir", str(setup.state)]
        other = ["--spec", spec, "--state-dir", str(setup.base / "other")]
        for name in names:
            payload = (HOOKS / cli / name).read_bytes()
            got = client.ask(cli, mine, payload, {**os.environ, client.ENV_SOCKET: setup.sock},
                             start=False)
            plain = answer(cli, other, payload)
            assert got is not None
            # the approve command a held call's reason gives names the state directory
            same = tuple(part.replace(str(setup.base / "other").encode(), str(setup.state)
                                      .encode()) for part in (plain.stdout, plain.stderr))
            assert got == (*same, plain.exit), (cli, name)

    @pytest.mark.parametrize("cli", CLIS)
    def test_an_unsafe_socket_stops_the_call_in_the_clis_own_form(self, cli: str,
                                                                  setup: Setup) -> None:
        from roadcheck.guard.hooks import load

        os.makedirs(os.path.dirname(setup.sock), mode=0o700)
        os.mkfifo(setup.sock, 0o600)
        payload = (HOOKS / cli / "pre_ask.json").read_bytes()
        done = subprocess.run([sys.executable, "-m", "roadcheck", "guard", cli, "--spec",
                               str(HOOKS / "spec.yaml"), "--state-dir", str(setup.state)],
                              input=payload, capture_output=True, timeout=60,
                              env={**os.environ, client.ENV_SOCKET: setup.sock,
                                   client.ENV_DAEMON: "1"})
        want = load(cli).fail("x")
        assert done.returncode == want.exit
        assert b"socket is unsafe" in done.stdout + done.stderr
        assert bool(done.stdout) == bool(want.stdout)
        assert not setup.state.exists()

    def test_relative_paths_are_shown_as_given(self, setup: Setup,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
        """The approve command a held call's reason gives names the spec and the state
        directory as the hook's command line did, through the daemon as in process."""
        from roadcheck.guard.answer import Stores, answer

        shutil.copy(HOOKS / "spec.yaml", setup.base / "hooks.yaml")
        payload = (HOOKS / "codex" / "pre_ask.json").read_bytes()
        stores = Stores()
        try:
            resident = answer("codex", ["--spec", "hooks.yaml", "--state-dir", "a"], payload,
                              stores, cwd=str(setup.base))
        finally:
            stores.close()
        monkeypatch.chdir(setup.base)
        plain = answer("codex", ["--spec", "hooks.yaml", "--state-dir", "b"], payload)
        assert b"--state-dir a " in resident.stdout + resident.stderr
        assert (resident.stdout.replace(b"--state-dir a ", b"--state-dir b "),
                resident.stderr.replace(b"--state-dir a ", b"--state-dir b "),
                resident.exit) == (plain.stdout, plain.stderr, plain.exit)
