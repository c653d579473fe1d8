"""The hook command's thin client: ask ``roadcheck guard daemon`` over its Unix socket.

``roadcheck guard claude-code`` (and every hook adapter of :mod:`roadcheck.guard.answer`)
runs once per hook event, a new process each time. Before it imports the guard it
sends the event to the daemon, which holds the sessions in memory, and writes the
daemon's answer as its own. This module imports ``os``, ``sys``, ``time`` and the
``_socket``, ``_thread`` built-ins only, so the process costs close to the start-up
of any Python program.

* No daemon (no socket, or a socket no one listens on): it is started, detached,
  and this call is answered in process (:func:`ask` returns None).
* The socket cannot be reached in :data:`CONNECT_TIMEOUT` seconds, or the daemon
  says the call is not for it (another environment, a command line for the click
  CLI): answered in process too; nothing was decided.
* Anything wrong once the event was sent (the daemon closes the connection, no
  answer within :data:`ANSWER_TIMEOUT` seconds, an answer that is not well formed)
  stops the call, in the adapter's own form (for Claude Code: exit code 2 with the
  reason on standard error; only then is the adapter imported). So does a socket path that
  is not a socket only this user can use (a FIFO, a regular file, another owner,
  a directory others may enter): someone put it there.

``ROADCHECK_GUARD_DAEMON=0`` turns the daemon off (the hook answers in process, as
before); ``ROADCHECK_GUARD_SOCKET`` names the socket (default:
:func:`socket_path`).

The wire format, one request per connection: ``RCG1 <header bytes> <payload bytes>\\n``,
then the header (NUL-separated: the adapter name, the working directory, ``-ARG``
for each argument, ``=NAME=VALUE`` for each variable of :data:`ENV`), then the
payload; the answer is ``RCG1 <exit> <stdout bytes> <stderr bytes>\\n`` and those
bytes, or ``RCG1 fallback <n>\\n`` and ``n`` bytes saying why.
"""

from __future__ import annotations

import os
import sys

__all__ = ["ANSWER_TIMEOUT", "CONNECT_TIMEOUT", "ENV", "ENV_DAEMON", "ENV_SOCKET", "ask",
           "enabled", "exchange", "parse_answer", "request", "run", "socket_path", "socket_problem"]

ENV_SOCKET = "ROADCHECK_GUARD_SOCKET"
ENV_DAEMON = "ROADCHECK_GUARD_DAEMON"
#: The variables that decide which state, key and spec files a call uses: a daemon
#: answers only calls made in an environment that agrees with its own on each.
ENV = ("HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "ROADCHECK_GUARD_STATE_DIR",
       "ROADCHECK_GUARD_KEY_FILE", "ROADCHECK_GUARD_NO_KEY", "ROADCHECK_GUARD_SIGN_KEY_FILE")
#: Seconds to wait for the daemon to take the connection (nothing is sent before).
CONNECT_TIMEOUT = 0.25
#: Seconds to wait for its answer once the event is sent: within the hook's own
#: deadline (:data:`roadcheck.guard.claude_code.DEADLINE`, 10 s).
ANSWER_TIMEOUT = 8.0
#: The largest answer read.
MAX_ANSWER = 1 << 22
#: Seconds between two starts of the daemon by hook calls.
START_EVERY = 10.0
MAGIC = b"RCG1"
_EXIT_BLOCK = 2
_S_IFMT, _S_IFSOCK, _S_IFDIR = 0o170000, 0o140000, 0o040000


def enabled(env: dict[str, str] | os._Environ[str]) -> bool:
    """False when ``ROADCHECK_GUARD_DAEMON`` turns the daemon off (``0``, ``off``, ``no``)."""
    return env.get(ENV_DAEMON, "").strip().lower() not in ("0", "off", "no", "false")


def socket_path(env: dict[str, str] | os._Environ[str]) -> str | None:
    """The daemon's socket: ``$ROADCHECK_GUARD_SOCKET``, else
    ``$XDG_RUNTIME_DIR/roadcheck/guard.sock``, else
    ``$XDG_STATE_HOME/roadcheck/run/guard.sock`` (``~/.local/state/...``); None where
    there are no Unix sockets (Windows: the hook answers in process)."""
    if os.name != "posix":
        return None
    named = env.get(ENV_SOCKET)
    if named:
        return named
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "roadcheck", "guard.sock")
    state = env.get("XDG_STATE_HOME")
    if not (state and os.path.isabs(state)):
        state = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "roadcheck", "run", "guard.sock")


def socket_problem(path: str) -> str | None:
    """Why ``path`` is not a socket only this user can use ("" when there is none yet)."""
    try:
        st = os.lstat(path)
        parent = os.lstat(os.path.dirname(path) or ".")
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    uid = os.getuid()
    if st.st_mode & _S_IFMT != _S_IFSOCK:
        return f"{path} is not a socket"
    if st.st_uid != uid or parent.st_uid != uid:
        return f"{path} or its directory belongs to another user"
    if parent.st_mode & _S_IFMT != _S_IFDIR or parent.st_mode & 0o077 or st.st_mode & 0o077:
        return f"{path} or its directory can be used by other users"
    return None


def request(adapter: str, args: list[str], payload: bytes, cwd: str,
            env: dict[str, str] | os._Environ[str]) -> bytes:
    """One request on the wire (see the module docstring)."""
    fields = [adapter, cwd, *("-" + a for a in args),
              *(f"={k}={env[k]}" for k in ENV if k in env)]
    header = "\0".join(fields).encode("utf-8", "surrogateescape")
    return b"%s %d %d\n" % (MAGIC, len(header), len(payload)) + header + payload


def _deny(reason: str) -> tuple[bytes, bytes, int]:
    return b"", f"roadcheck guard: denied: {reason}\n".encode(errors="replace"), _EXIT_BLOCK


def _fail(adapter: str, reason: str) -> tuple[bytes, bytes, int]:
    """The adapter's own answer that stops the call (some CLIs want JSON, not exit 2);
    its module is imported only on this path."""
    try:
        from roadcheck.guard.hooks import load

        failed = load(adapter).fail(reason)
        return failed.stdout.encode(), failed.stderr.encode(), failed.exit
    except BaseException:
        return _deny(reason)


def parse_answer(raw: bytes) -> tuple[bytes, bytes, int] | str | None:
    """``(stdout, stderr, exit)`` from the daemon's answer; None for a fallback; for
    anything not well formed, why (a ``str``: the call is stopped)."""
    head, newline, rest = raw.partition(b"\n")
    parts = head.split(b" ")
    if not newline or parts[0] != MAGIC or not all(p.isdigit() for p in parts[2:]):
        return "the guard daemon's answer is not well formed"
    if len(parts) == 3 and parts[1] == b"fallback" and int(parts[2]) == len(rest):
        return None
    if len(parts) != 4 or not parts[1].isdigit():
        return "the guard daemon's answer is not well formed"
    code, out, err = int(parts[1]), int(parts[2]), int(parts[3])
    if code > 255 or out + err != len(rest):
        return "the guard daemon's answer is not well formed"
    return rest[:out], rest[out:], code


def _start(path: str, env: dict[str, str] | os._Environ[str]) -> None:
    """Start the daemon on ``path``, detached, at most once per :data:`START_EVERY` s."""
    import time

    marker = path + ".start"
    try:
        if time.time() - os.stat(marker).st_mtime < START_EVERY:
            return
    except OSError:
        pass
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        os.utime(marker)
        null = os.devnull
        actions = [(os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0)]
        os.posix_spawn(sys.executable, [sys.executable, "-m", "roadcheck", "guard", "daemon",
                                        "--socket", path], dict(env), file_actions=actions,
                       setsid=True)
    except OSError:  # no daemon: every call is answered in process
        pass


def ask(adapter: str, args: list[str], payload: bytes,
        env: dict[str, str] | os._Environ[str] | None = None,
        start: bool = True) -> tuple[bytes, bytes, int] | None:
    """The daemon's ``(stdout, stderr, exit)`` for this hook call, or None when the call
    is to be answered in process (see the module docstring); a failure is exit code 2
    with the reason on standard error. Never raises."""
    got = exchange(adapter, args, payload, env, start)
    return _deny(got) if isinstance(got, str) else got


def exchange(adapter: str, args: list[str], payload: bytes,
             env: dict[str, str] | os._Environ[str] | None = None,
             start: bool = True) -> tuple[bytes, bytes, int] | str | None:
    """:func:`ask`, with a failure as its reason (a ``str``) for the adapter to answer."""
    import _socket
    import time

    env = os.environ if env is None else env
    path = socket_path(env)
    if path is None:
        return None
    problem = socket_problem(path)
    if problem:
        return (f"the guard daemon's socket is unsafe: {problem}; remove it, and the "
                "next hook call starts the daemon again")
    if problem == "":
        if start:
            _start(path, env)
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):  # a daemon that is gone
            if start:
                _start(path, env)
            return None
        except OSError:  # busy: nothing was sent, the process answers
            return None
        deadline = time.monotonic() + ANSWER_TIMEOUT
        sock.settimeout(ANSWER_TIMEOUT)
        sock.sendall(request(adapter, args, payload, os.getcwd(), env))
        chunks = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out")
            sock.settimeout(left)
            data = sock.recv(65536)
            if not data:
                break
            size += len(data)
            if size > MAX_ANSWER:
                return "the guard daemon's answer is too large"
            chunks.append(data)
        return parse_answer(b"".join(chunks))
    except OSError as exc:
        return f"the guard daemon did not answer: {exc.strerror or exc}"
    finally:
        sock.close()


def _read_stdin() -> bytes:
    chunks: list[bytes] = []
    while True:
        data = os.read(0, 1 << 16)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def run(adapter: str, args: list[str], deadline: float = 10.0) -> None:
    """Answer the hook call through the daemon and end the process; return (with the
    event put back on standard input) when it is to be answered in process.

    Whatever it waits on, the process denies (exit 2) after ``deadline`` seconds.
    """
    import _thread

    done = _thread.allocate_lock()
    done.acquire()

    def watch() -> None:
        if done.acquire(timeout=deadline):
            return
        out, err, code = _fail(adapter, f"the hook did not answer within {deadline:g} s")
        try:
            _write(1, out)
            _write(2, err)
        finally:
            os._exit(code)

    _thread.start_new_thread(watch, ())
    try:
        payload = _read_stdin()
        got = exchange(adapter, args, payload)
    except BaseException as exc:  # an interrupt, a bug: the call is blocked
        got = f"{type(exc).__name__}: {exc}"
    if isinstance(got, str):
        got = _fail(adapter, got)
    if got is None:
        done.release()
        import io

        sys.stdin = io.TextIOWrapper(io.BytesIO(payload))
        return
    out, err, code = got
    try:
        _write(1, out)
    except OSError as exc:  # an answer the agent cannot read must not pass for "none"
        err, code = _deny(f"cannot write the answer: {exc.strerror or exc}")[1], _EXIT_BLOCK
    try:
        _write(2, err)
    finally:
        os._exit(code)
