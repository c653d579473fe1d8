"""``roadcheck guard daemon``: every hook adapter's calls answered by one resident process.

The daemon listens on a Unix socket (:func:`roadcheck._hook_client.socket_path`), a
socket only its user may use: mode 0600, in a directory of mode 0700 that the user
owns (a directory others may enter, or a path in it that is not a socket, is
refused), and each connection's peer must be the same user (``SO_PEERCRED``). One
daemon runs per socket: it holds ``<socket>.lock``, and a second one started on the
same path exits at once.

Each connection carries one hook call (the wire format:
:mod:`roadcheck._hook_client`), answered by :func:`roadcheck.guard.answer.answer` with
the daemon's resident stores (:class:`~roadcheck.guard.answer.Stores`): the
sessions stay in memory, and each call's decisions are on disk before its answer
is sent (:mod:`roadcheck.guard.resident`). A call whose environment disagrees with
the daemon's on a variable of :data:`roadcheck._hook_client.ENV` is sent back to be
answered in process (``fallback``). Each connection has a thread of its own and
:data:`REQUEST_TIMEOUT` seconds to send its request, so a stalled client holds up
no other; calls for one session take turns.

The daemon ends on SIGTERM, SIGINT, ``roadcheck guard daemon --stop``, or after
``idle_exit`` seconds without a call, removing its socket.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from roadcheck._hook_client import ENV, MAGIC, socket_problem
from roadcheck.errors import InputError
from roadcheck.guard.answer import Answer, Stores, answer, deny

__all__ = ["IDLE_EXIT", "REQUEST_TIMEOUT", "Daemon", "control", "run"]

#: Seconds a client has to send its whole request.
REQUEST_TIMEOUT = 5.0
#: Seconds without a call after which the daemon ends (the next hook call starts it again).
IDLE_EXIT = 1800.0
#: The largest request read (a hook event with its arguments).
MAX_REQUEST = 1 << 23
_HEADER_MAX = 64


def _own_env() -> dict[str, str | None]:
    return {k: os.environ.get(k) for k in ENV}


def _check_dir(path: str) -> None:
    """The socket's directory: created 0700, and refused unless only its owner, this user,
    may use it."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise InputError(f"cannot create the daemon's directory: {exc.strerror or exc}",
                         path=path) from None
    if not os.path.isdir(path) or os.path.islink(path) or st.st_uid != os.getuid() or (
            st.st_mode & 0o077):
        raise InputError("the daemon's directory is not one only you can use (a directory "
                         "you own, mode 0700): fix it or name another socket", path=path)


@dataclass
class _Request:
    adapter: str
    cwd: str
    args: list[str]
    env: dict[str, str | None]
    payload: bytes


def _read_exact(conn: socket.socket, size: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request was not sent in time")
        conn.settimeout(left)
        data = conn.recv(min(size - got, 1 << 16))
        if not data:
            raise ConnectionError("the client closed the connection mid-request")
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


def _read_request(conn: socket.socket) -> _Request:
    deadline = time.monotonic() + REQUEST_TIMEOUT
    line = b""
    while not line.endswith(b"\n"):
        if len(line) > _HEADER_MAX:
            raise ValueError("not a guard request")
        line += _read_exact(conn, 1, deadline)
    parts = line[:-1].split(b" ")
    if len(parts) != 3 or parts[0] != MAGIC or not (parts[1].isdigit() and parts[2].isdigit()):
        raise ValueError("not a guard request")
    header_size, payload_size = int(parts[1]), int(parts[2])
    if header_size + payload_size > MAX_REQUEST:
        raise ValueError(f"a request of more than {MAX_REQUEST} bytes")
    header = _read_exact(conn, header_size, deadline).decode("utf-8", "surrogateescape")
    payload = _read_exact(conn, payload_size, deadline)
    fields = header.split("\0")
    if len(fields) < 2:
        raise ValueError("not a guard request")
    env: dict[str, str | None] = dict.fromkeys(ENV)
    args = []
    for field in fields[2:]:
        if field.startswith("-"):
            args.append(field[1:])
        elif field.startswith("="):
            name, _, value = field[1:].partition("=")
            if name in env:
                env[name] = value
        else:
            raise ValueError("not a guard request")
    return _Request(fields[0], fields[1], args, env, payload)


def _frame(found: Answer) -> bytes:
    if found.fallback:
        why = found.fallback.encode()
        return b"%s fallback %d\n" % (MAGIC, len(why)) + why
    return (b"%s %d %d %d\n" % (MAGIC, found.exit, len(found.stdout), len(found.stderr))
            + found.stdout + found.stderr)


def _peer_is_me(conn: socket.socket) -> bool:
    cred = getattr(socket, "SO_PEERCRED", None)
    if cred is None:  # no way to ask (macOS): the socket's mode and directory guard it
        return True
    try:
        _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, cred,
                                                        struct.calcsize("3i")))
    except OSError:
        return False
    return bool(uid == os.getuid())


class Daemon:
    """The resident guard on the Unix socket ``path`` (see the module docstring)."""

    def __init__(self, path: str, *, idle_exit: float = IDLE_EXIT) -> None:
        self.path = os.path.abspath(path)
        self.idle_exit = idle_exit
        self.stores = Stores()
        self.env = _own_env()
        self.started = time.time()
        self.calls = 0
        self._active = 0
        self._last = time.monotonic()
        self._count = threading.Lock()
        self._stop = threading.Event()
        self._lock_fd: int | None = None
        self._sock: socket.socket | None = None
        self._ino: int | None = None

    def bind(self) -> bool:
        """Take the socket (False: another daemon holds it)."""
        import fcntl

        _check_dir(os.path.dirname(self.path))
        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._lock_fd = fd
        problem = socket_problem(self.path)
        if problem:  # a FIFO, a file, another user's: someone put it there
            self.release()
            raise InputError(f"refusing the daemon's socket: {problem}: remove it",
                             path=self.path)
        # bound and listening under another name, then renamed into place (over a socket
        # a daemon left behind: we hold the lock): a client never meets a socket that
        # does not listen yet
        fresh = f"{self.path}.{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(fresh)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(fresh)
            os.chmod(fresh, 0o600)
            sock.listen(128)
            os.rename(fresh, self.path)
        except OSError as exc:
            sock.close()
            with contextlib.suppress(OSError):
                os.unlink(fresh)
            self.release()
            raise InputError(f"cannot listen on the daemon's socket: {exc.strerror or exc}",
                             path=self.path) from None
        finally:
            os.umask(old)
        sock.settimeout(0.5)
        self._sock = sock
        self._ino = os.lstat(self.path).st_ino
        return True

    def release(self) -> None:
        """Close the socket, remove it (when it is still ours) and free the lock."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            try:
                if os.lstat(self.path).st_ino == self._ino:
                    os.unlink(self.path)
            except OSError:
                pass
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        self.stores.close()

    def stop(self) -> None:
        """Ask the accept loop to end (at once where the system wakes a waiting accept)."""
        self._stop.set()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)

    def serve(self) -> None:
        """Accept calls until stopped or idle for ``idle_exit`` seconds."""
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                with self._count:
                    idle = not self._active and time.monotonic() - self._last > self.idle_exit
                if idle:
                    return
                continue
            except OSError:
                if self._stop.is_set():
                    return
                raise
            with self._count:
                self._active += 1
                self._last = time.monotonic()
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            if not _peer_is_me(conn):
                return
            try:
                req = _read_request(conn)
            except (OSError, ValueError, UnicodeError):
                return  # a client that did not send a whole request gets no answer
            conn.settimeout(REQUEST_TIMEOUT)
            conn.sendall(_frame(self.answer(req)))
        except OSError:
            pass  # the client went away; its call was decided and logged, or never began
        finally:
            conn.close()
            with self._count:
                self._active -= 1
                self._last = time.monotonic()

    def answer(self, req: _Request) -> Answer:
        """The answer to one request; never raises."""
        try:
            if req.adapter.startswith("!"):
                return self._control(req.adapter[1:])
            if req.env != self.env:
                return Answer(b"", b"", 2, "another environment than the daemon's")
            if any(req.env[k] and not os.path.isabs(req.env[k] or "")
                   for k in ("ROADCHECK_GUARD_STATE_DIR", "ROADCHECK_GUARD_KEY_FILE",
                             "ROADCHECK_GUARD_SIGN_KEY_FILE")):
                return Answer(b"", b"", 2, "a relative path in the environment")
            found = answer(req.adapter, req.args, req.payload, self.stores, req.cwd)
            with self._count:
                self.calls += 1
            return found
        except Exception as exc:  # fail closed
            return deny(f"internal error: {type(exc).__name__}: {exc}")

    def _control(self, what: str) -> Answer:
        if what == "stop":
            self.stop()
            return Answer(b"stopping\n", b"", 0)
        if what == "status":
            with self._count:
                calls = self.calls
            return Answer(f"running: pid {os.getpid()}, {calls} calls answered since "
                          f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(self.started))}"
                          "\n".encode(), b"", 0)
        return Answer(b"", f"unknown control {what!r}\n".encode(), 2)


def run(path: str, *, idle_exit: float = IDLE_EXIT, quiet: bool = False) -> int:
    """Run the daemon on ``path`` until stopped; 0, also when one already runs there."""
    daemon = Daemon(path, idle_exit=idle_exit)
    if not daemon.bind():
        if not quiet:
            sys.stderr.write(f"roadcheck guard: a daemon already runs on {daemon.path}\n")
        return 0

    def stop(signum: int, frame: Any) -> None:
        daemon.stop()

    os.chdir("/")  # the daemon outlives the project directory it was started in
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if not quiet:
        sys.stderr.write(f"roadcheck guard: daemon listening on {daemon.path}\n")
        sys.stderr.flush()
    try:
        daemon.serve()
    finally:
        daemon.release()
    return 0


def control(path: str, what: str) -> tuple[int, str]:
    """Send ``stop`` or ``status`` to the daemon on ``path``: (exit code, what it said)."""
    from roadcheck._hook_client import parse_answer, request

    problem = socket_problem(path)
    if problem:
        raise InputError(f"the daemon's socket is unsafe: {problem}", path=path)
    if problem == "":
        return 1, f"no daemon on {path}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(REQUEST_TIMEOUT)
    try:
        sock.connect(path)
        sock.sendall(request("!" + what, [], b"", os.getcwd(), {}))
        raw = b""
        while True:
            data = sock.recv(65536)
            if not data:
                break
            raw += data
    except (FileNotFoundError, ConnectionRefusedError):
        return 1, f"no daemon on {path}"
    except OSError as exc:
        return 1, f"the daemon on {path} did not answer: {exc.strerror or exc}"
    finally:
        sock.close()
    got = parse_answer(raw)
    if got is None:
        return 1, "the daemon did not understand"
    if isinstance(got, str):
        return 1, got
    out, err, code = got
    return code, (out or err).decode(errors="replace").rstrip("\n")
