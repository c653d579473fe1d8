"""Running a command the way every part of roadcheck does: an argv list, never a shell.

Gates, producers, reconcile, probes and capability checks all go through
:func:`run_command`; a missing program or a timeout is reported in the
result, never raised, so the caller decides what it means (a failed gate, an
unknown effect).

Two promises hold for every command:

- **Nothing it started outlives it.** The command leads its own session
  (so its own process group). When it exits, whatever it left behind in that
  group (``sleep 300 &``) is killed with SIGKILL; on timeout the group gets
  SIGTERM, a short grace, then SIGKILL. A process that starts a session of
  its own escapes the group; nothing short of a container can follow it. If
  the caller itself is killed with SIGKILL it cannot clean up; a command run
  with ``die_with_parent`` is then killed, with its group, by the caller's
  watcher (Linux; see :func:`_lifeline`).

Every command is started without a ``preexec_fn`` (which forces a full fork of
the caller, about three times the cost of a plain start): with
:func:`os.posix_spawn` where it runs in the caller's directory (see
:func:`_spawn`), else with :class:`subprocess.Popen`, which starts it with vfork.
- **Output is bounded.** stdout and stderr are drained together as they
  arrive (a child never blocks on a full pipe) and only the first
  :data:`KEEP_HEAD` and last :data:`KEEP_TAIL` bytes of each are kept, with a
  marker saying how many bytes were dropped in between.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KEEP_HEAD", "KEEP_TAIL", "OUTPUT_LIMIT", "CommandRun", "run_command", "tail_output"]

#: Output kept in a record: the tail, where the failure usually is.
OUTPUT_LIMIT = 16_384
#: Bytes kept from the start of each stream.
KEEP_HEAD = 65_536
#: Bytes kept from the end of each stream.
KEEP_TAIL = 65_536
#: Seconds between SIGTERM and SIGKILL when a command runs out of time.
TERM_GRACE = 2.0
#: Seconds to keep reading pipes after the command exited and its group was killed
#: (only a process that escaped the group can hold them open that long).
DRAIN_GRACE = 1.0
#: Seconds to wait for a process after SIGKILL before giving up on it.
KILL_WAIT = 5.0
_CHUNK = 65_536
_POLL = 0.02  # only where the kernel offers no pidfd to wait on
#: The longest single wait: poll(2) takes an int of milliseconds, and the loop waits again.
_MAX_WAIT = 3600.0


def tail_output(text: str) -> str:
    """``text`` trimmed to its last :data:`OUTPUT_LIMIT` characters."""
    return text if len(text) <= OUTPUT_LIMIT else "...\n" + text[-OUTPUT_LIMIT:]


@dataclass(frozen=True, slots=True)
class CommandRun:
    """A finished subprocess: exit code (``None`` when it never ran to the end) and output.

    ``dropped`` counts the bytes of stdout and stderr that were not kept;
    ``timed_out`` tells a timeout from a command that could not start.
    """

    exit_code: int | None
    stdout: str
    stderr: str
    error: str | None = None
    dropped: int = 0
    timed_out: bool = False

    @property
    def output(self) -> str:
        """stdout then stderr, trimmed to the record limit."""
        both = self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr
        return tail_output(both)


class _Capture:
    """The head and tail of one stream, and how many bytes fell between them."""

    __slots__ = ("dropped", "head", "tail")

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = KEEP_HEAD - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        over = len(self.tail) - KEEP_TAIL
        if over > 0:
            del self.tail[:over]
            self.dropped += over

    def text(self) -> str:
        if not self.dropped:
            return bytes(self.head + self.tail).decode("utf-8", "replace")
        return (self.head.decode("utf-8", "replace")
                + f"\n... [{self.dropped} bytes dropped] ...\n"
                + self.tail.decode("utf-8", "replace"))


#: The watcher of a lifeline, run as ``python -I -S -c``: it reads its standard input
#: (the lifeline's read end) until end of file, which comes only once every copy of the
#: write end is closed, that is once the process holding it is gone. It then kills, with
#: their groups, the processes that still hold the read end: the commands started with
#: ``die_with_parent``, which inherited it, and whatever of theirs inherited it in turn.
_WATCHER = """
import os, signal
try:
    while os.read(0, 4096):
        pass
except OSError:
    pass
mark = "pipe:[%d]" % os.fstat(0).st_ino
me = os.getpid()
for _ in range(20):
    found = False
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            fds = os.listdir(f"/proc/{name}/fd")
            held = any(os.readlink(f"/proc/{name}/fd/{fd}") == mark for fd in fds)
        except OSError:
            continue
        if held:
            found = True
            pid = int(name)
            try:
                if os.getpgid(pid) == pid:
                    os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    if not found:
        break
"""


class _Lifeline:
    """A pipe whose write end only this process holds, watched by a process of its own.

    Commands started with ``die_with_parent`` inherit the read end (``pass_fds``);
    when this process dies, however it dies, the watcher sees end of file and kills
    them. A command holds the read end from the instant it is forked (the fd table
    is copied then), and the watcher's end of file cannot come before the command
    has executed (until then the command also holds a copy of the write end, closed
    on exec), so no command can slip between the two, as none could with
    ``PR_SET_PDEATHSIG`` checked after the fork.
    """

    __slots__ = ("pid", "read", "write")

    def __init__(self, pid: int, read: int, write: int) -> None:
        self.pid, self.read, self.write = pid, read, write

    def close(self) -> None:
        for fd in (self.read, self.write):
            with contextlib.suppress(OSError):
                os.close(fd)


#: This process's lifeline once asked for (``None`` in it where none could start).
_LIFELINE: list[_Lifeline | None] = []
#: Whether the fork handler that drops an inherited lifeline is registered.
_REGISTERED: list[bool] = []


def _forget_lifeline() -> None:
    """In a forked child: the parent's lifeline is the parent's; the child's copy of its
    write end would keep the parent's watcher waiting after the parent died."""
    if _LIFELINE and _LIFELINE[0] is not None:
        _LIFELINE[0].close()
    _LIFELINE.clear()


def _start_lifeline() -> _Lifeline | None:
    """A new lifeline and its watcher (in a session of its own, so that killing this
    process's group leaves it to do its work); ``None`` where there is no ``/proc`` to
    find the commands in, or the watcher cannot start."""
    if not sys.platform.startswith("linux") or not sys.executable or not hasattr(
            os, "posix_spawn"):
        return None
    read, write = os.pipe()  # both close on exec: only pass_fds hands the read end on
    try:
        null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        try:
            os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", "-c", _WATCHER],
                           os.environ, setsid=True,
                           file_actions=[(os.POSIX_SPAWN_DUP2, read, 0),
                                         (os.POSIX_SPAWN_DUP2, null, 1),
                                         (os.POSIX_SPAWN_DUP2, null, 2)])
        finally:
            os.close(null)
    except OSError:
        os.close(read)
        os.close(write)
        return None
    return _Lifeline(os.getpid(), read, write)


def _lifeline() -> _Lifeline | None:
    """This process's lifeline, started with the first command that needs it."""
    if not _LIFELINE or (_LIFELINE[0] is not None and _LIFELINE[0].pid != os.getpid()):
        _forget_lifeline()
        _LIFELINE.append(_start_lifeline())
        if not _REGISTERED and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forget_lifeline)
            _REGISTERED.append(True)
    return _LIFELINE[0]


def _die_with_parent() -> Callable[[], None] | None:
    """The fallback where no watcher could start: a ``preexec_fn`` asking Linux to SIGKILL
    the child when its parent dies (it costs the command vfork)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - no libc symbol
        return None
    parent = os.getpid()

    def setup() -> None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the request took
            os.kill(os.getpid(), signal.SIGKILL)

    return setup


def _signal_group(proc: subprocess.Popen[bytes] | _Spawned, sig: int) -> None:
    """Send ``sig`` to the command's process group (its id is the leader's pid).

    Called only while the leader is unreaped, so the id cannot name another group.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _exited(proc: subprocess.Popen[bytes] | _Spawned) -> bool:
    """Whether the command has exited, without reaping it where the platform allows."""
    if not hasattr(os, "waitid"):  # pragma: no cover - reaps: the group id may then be reused
        return proc.poll() is not None
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # pragma: no cover - already reaped
        return True


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:  # pragma: no cover - not Linux
        return None
    try:
        fd: int = opener(pid)
    except OSError:  # pragma: no cover - kernel without pidfd
        return None
    return fd


def _collect(proc: subprocess.Popen[bytes] | _Spawned, captures: Mapping[int, _Capture],
             timeout: float) -> bool:
    """Drain the pipes (``captures``: descriptor -> capture) until the command is done and
    its group is gone; True on timeout.

    One ``poll(2)`` set holds the pipes and, where the kernel offers one, a pidfd that
    becomes readable when the leader exits.
    """
    now = time.monotonic()
    deadline = now + timeout
    kill_at: float | None = None  # set once SIGTERM went out
    give_up: float | None = None  # set once SIGKILL went out
    drain_until: float | None = None  # set once the leader exited
    timed_out = False
    pidfd = _pidfd(proc.pid)
    poller = select.poll()
    pipes = dict(captures)  # the pipes still open
    for fd in pipes:
        poller.register(fd, select.POLLIN)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    try:
        while True:
            if drain_until is not None and (not pipes or now >= drain_until):
                break
            if drain_until is None:
                if give_up is not None and now >= give_up:
                    break  # unkillable (uninterruptible sleep): leave it unreaped
                if kill_at is None and now >= deadline:
                    timed_out = True
                    _signal_group(proc, signal.SIGTERM)
                    kill_at = now + TERM_GRACE
                elif kill_at is not None and give_up is None and now >= kill_at:
                    _signal_group(proc, signal.SIGKILL)
                    give_up = now + KILL_WAIT
                wake = give_up or kill_at or deadline
            else:
                wake = drain_until
            wait = min(max(0.0, wake - now), _MAX_WAIT)
            if pidfd is None and drain_until is None:
                wait = min(wait, _POLL)
            leader_done = False
            for fd, _ in poller.poll(math.ceil(wait * 1e3) if wait > 0 else 0):
                if fd == pidfd:
                    poller.unregister(fd)
                    leader_done = True
                    continue
                data = os.read(fd, _CHUNK)
                if data:
                    pipes[fd].add(data)
                else:
                    poller.unregister(fd)
                    del pipes[fd]
            if drain_until is None and (leader_done or (pidfd is None and _exited(proc))):
                # whatever the command left behind in its group goes with it
                _signal_group(proc, signal.SIGKILL)
                drain_until = time.monotonic() + DRAIN_GRACE
            now = time.monotonic()
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return timed_out


class _Spawned:
    """A command started with :func:`os.posix_spawn`: what :func:`run_command` needs of a
    :class:`subprocess.Popen` (its pid, its exit code once reaped, and waiting for it)."""

    __slots__ = ("pid", "returncode")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code once the command exited (reaping it), else None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # pragma: no cover - reaped elsewhere
                self.returncode = 255
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float) -> int:
        """The exit code, waiting up to ``timeout`` seconds for it."""
        deadline = time.monotonic() + timeout
        fd = _pidfd(self.pid)
        try:
            while (code := self.poll()) is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired([str(self.pid)], timeout)
                if fd is not None:
                    select.select([fd], [], [], left)
                else:  # pragma: no cover - not Linux
                    time.sleep(min(left, _POLL))
        finally:
            if fd is not None:
                os.close(fd)
        return code


#: Signals Python ignores at start-up that a command gets back at their default, as
#: :class:`subprocess.Popen` (``restore_signals``) gives them back.
_RESTORED = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ")
                  if hasattr(signal, name))
#: Set once posix_spawn turned out unable to start a session here.
_NO_SPAWN: list[bool] = []
#: ``/dev/null``, opened once, as the standard input of the commands that read none.
_DEVNULL: list[int] = []


def _devnull() -> int:
    if not _DEVNULL:
        _DEVNULL.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    return _DEVNULL[0]


def _can_spawn(argv: Sequence[str], stdin: int | None, keep: tuple[int, ...]) -> bool:
    """Whether :func:`_spawn` can start the command: a POSIX system with posix_spawn, a
    program named, and the descriptors it hands on above the three standard ones."""
    return (hasattr(os, "posix_spawn") and not _NO_SPAWN and bool(argv)
            and (stdin is None or stdin == subprocess.DEVNULL or stdin > 2)
            and all(fd > 2 for fd in keep))


def _program(name: str, env: Mapping[str, str] | None) -> str:
    """The file ``name`` runs, looked up as :class:`subprocess.Popen` looks it up: a name
    with a slash as it is, else the first executable file of that name on the ``PATH``
    of the command's environment."""
    if os.path.dirname(name):
        return name
    for folder in os.get_exec_path(env):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)


def _spawn(argv: Sequence[str], env: Mapping[str, str] | None, stdin: int | None,
           keep: tuple[int, ...]) -> tuple[_Spawned, int, int] | None:
    """Start ``argv`` with :func:`os.posix_spawn` in a session of its own: the process,
    and the read ends of its stdout and stderr.

    What :class:`subprocess.Popen` would do, without its per-command Python work
    (the environment encoded item by item, the error pipe, the file objects): the
    pipes are dup'ed onto 1 and 2, ``keep`` onto 3 and up (every other descriptor is
    close-on-exec), and a start that fails raises :class:`OSError` as Popen's does.
    None where the C library cannot start a session this way (Popen then starts it).
    """
    program = _program(argv[0], env)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    actions: list[tuple[int, int, int]] = []
    if stdin is not None:
        actions.append((os.POSIX_SPAWN_DUP2,
                        _devnull() if stdin == subprocess.DEVNULL else stdin, 0))
    actions += [(os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)]
    actions += [(os.POSIX_SPAWN_DUP2, fd, 3 + n) for n, fd in enumerate(keep)]
    try:
        pid = os.posix_spawn(program, list(argv), os.environ if env is None else env,
                             file_actions=actions, setsid=True, setsigdef=_RESTORED)
    except NotImplementedError:  # pragma: no cover - a libc without POSIX_SPAWN_SETSID
        _NO_SPAWN.append(True)
        os.close(out_r)
        os.close(err_r)
        return None
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    return _Spawned(pid), out_r, err_r


def run_command(argv: Sequence[str], *, cwd: Path | None, timeout: float,
                env: Mapping[str, str] | None = None, stdin: int | None = None,
                die_with_parent: bool = False) -> CommandRun:
    """Run ``argv`` without a shell; a missing program or a timeout is reported, not raised.

    ``env`` replaces the environment when given; ``stdin`` is passed to
    :class:`subprocess.Popen` (``subprocess.DEVNULL`` for read-only checks).
    The command runs in its own session and nothing it started survives it;
    its output is kept as head and tail (see the module docstring).
    ``die_with_parent`` (Linux) also kills the command, with its group, when this
    process dies before it ends (see :class:`_Lifeline`); it is kept for commands
    whose side effect must not complete behind a resume's back.
    """
    keep: tuple[int, ...] = ()
    preexec: Callable[[], None] | None = None
    if die_with_parent:
        line = _lifeline()
        if line is not None:
            keep = (line.read,)
        else:
            preexec = _die_with_parent()
    proc: subprocess.Popen[bytes] | _Spawned
    try:
        spawned = (_spawn(argv, env, stdin, keep)
                   if preexec is None and cwd is None and _can_spawn(argv, stdin, keep)
                   else None)
        if spawned is not None:
            proc, out_fd, err_fd = spawned
        else:
            # unbuffered: the pipes are read with os.read, and a buffered reader costs three
            # calls (fstat, a terminal check, a seek) per pipe to set up
            popen = subprocess.Popen(list(argv), bufsize=0, cwd=cwd,
                                     env=None if env is None else dict(env), stdin=stdin,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True, pass_fds=keep,
                                     preexec_fn=preexec)
            assert popen.stdout is not None
            assert popen.stderr is not None
            proc, out_fd, err_fd = popen, os.dup(popen.stdout.fileno()), os.dup(
                popen.stderr.fileno())
            popen.stdout.close()
            popen.stderr.close()
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        why = getattr(exc, "strerror", None) or exc
        return CommandRun(None, "", "", f"could not start {argv[0]!r}: {why}")
    out, err = _Capture(), _Capture()
    try:
        timed_out = _collect(proc, {out_fd: out, err_fd: err}, timeout)
    finally:
        if proc.returncode is None:
            _signal_group(proc, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=KILL_WAIT)
        os.close(out_fd)
        os.close(err_fd)
    dropped = out.dropped + err.dropped
    if timed_out:
        return CommandRun(None, out.text(), err.text(), f"timed out after {timeout:g}s", dropped,
                          timed_out=True)
    return CommandRun(proc.returncode, out.text(), err.text(), None, dropped)
