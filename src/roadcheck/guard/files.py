"""The guard's own files: read and written so that nothing put in their place blocks it.

Claude Code lets a call run when its hook does not answer in time, so a guard
that can be made to wait is a guard that can be switched off. Whoever can write
the state directory can leave a FIFO where the guard reads (its ``open`` would
wait for a writer forever), a link to ``/dev/zero`` or to a file elsewhere, a
directory, or a FIFO at a temporary name the guard writes through. So:

* every read opens the path once with ``O_NONBLOCK`` and ``O_NOFOLLOW`` and checks
  the open descriptor with ``fstat`` before reading from it: anything but a
  regular file (a link included) is refused with one line naming the file;
* every write goes to a new temporary file created exclusively under a random
  name (``O_EXCL``, ``O_NOFOLLOW``, mode 0600), then renamed over its target;
* directories the guard makes are mode 0700, and the session directory must be
  a directory, not a link to one;
* the session lock is taken within :data:`LOCK_WAIT` seconds or not at all.

A refusal is a :class:`StateFileError` (a :class:`~roadcheck.errors.StoreError`):
the hook answers deny.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from pathlib import Path

from roadcheck._files import describe
from roadcheck.errors import StoreError

__all__ = ["LOCK_WAIT", "READ_LIMIT", "StateFileError", "check_dir", "check_plain", "lock",
           "make_dir", "read", "temporary", "write"]

#: How long a guard waits for a session's lock, in seconds (the lock is held for
#: milliseconds by a guard answering; longer means something else holds it).
LOCK_WAIT = 5.0
#: The largest state file read, in bytes.
READ_LIMIT = 256 << 20
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_BINARY", 0)
_LINK = "is a symbolic link; the guard's files are never links"


class StateFileError(StoreError):
    """A guard file that cannot be used as one: not a regular file, a link, too big."""


def _refuse_mode(path: Path, mode: int) -> StateFileError:
    if stat.S_ISLNK(mode):
        return StateFileError(_LINK, path=str(path))
    return StateFileError(f"is {describe(mode)}, not a regular file", path=str(path))


def _lstat_mode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateFileError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None


def read(path: Path, limit: int = READ_LIMIT) -> bytes | None:
    """The bytes of the regular file at ``path``; ``None`` when nothing is there.

    Never blocks on what stands there instead: a FIFO, a device, a socket, a
    directory or a link is a :class:`StateFileError`, and so is a file above ``limit``.
    """
    if not _NOFOLLOW:  # Windows: no O_NOFOLLOW, so look first
        mode = _lstat_mode(path)
        if mode is None:
            return None
        if not stat.S_ISREG(mode):
            raise _refuse_mode(path, mode)
    try:
        fd = os.open(path, _READ)
    except FileNotFoundError:
        return None
    except OSError as exc:
        mode = _lstat_mode(path)  # a link (ELOOP), a socket (ENXIO): name what is there
        if mode is not None and not stat.S_ISREG(mode):
            raise _refuse_mode(path, mode) from None
        raise StateFileError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse_mode(path, st.st_mode)
        if st.st_size > limit:
            raise StateFileError(f"is {st.st_size} bytes, more than a guard file can be "
                                 f"({limit})", path=str(path))
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, max(st.st_size, 1 << 16)))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise StateFileError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise StateFileError(f"grew past {limit} bytes while read", path=str(path))
    return data


def check_plain(path: Path) -> bool:
    """True when a regular file is at ``path``, False when nothing is; else StateFileError.

    For the files opened by others (SQLite's), which cannot be opened here first.
    """
    mode = _lstat_mode(path)
    if mode is None:
        return False
    if not stat.S_ISREG(mode):
        raise _refuse_mode(path, mode)
    return True


def check_dir(path: Path) -> bool:
    """True when ``path`` is a directory (not a link to one), False when nothing is there."""
    mode = _lstat_mode(path)
    if mode is None:
        return False
    if stat.S_ISLNK(mode):
        raise StateFileError("is a symbolic link; a guard directory is never a link",
                             path=str(path))
    if not stat.S_ISDIR(mode):
        raise StateFileError(f"is {describe(mode)}, not a directory", path=str(path))
    return True


def make_dir(path: Path) -> None:
    """Create ``path`` (and its parents) as directories only their owner can enter; an
    existing one must be a directory, not a link."""
    if check_dir(path):
        return
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StateFileError(f"cannot create the directory: {exc.strerror or exc}",
                             path=str(path)) from None
    check_dir(path)


def temporary(directory: Path, name: str) -> tuple[int, Path]:
    """A new file only its owner can read, created exclusively under a random name beside
    ``name`` in ``directory``: its descriptor (open for writing) and path."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = directory / f".{name}.{os.urandom(6).hex()}.tmp"
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", str(directory))


def write(path: Path, data: bytes, *, durable: bool) -> None:
    """Replace ``path`` with ``data`` through a new temporary file (mode 0600) and a rename.

    ``durable``: fsync the file before the rename and the directory after it.
    Raises ``OSError``; the temporary file never stays behind.
    """
    fd, tmp = temporary(path.parent, path.name)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        from roadcheck._files import fsync_dir

        with contextlib.suppress(OSError):  # not every file system lets a directory be fsynced
            fsync_dir(path.parent)


def lock(path: Path, wait: float = LOCK_WAIT) -> int:
    """Open the lock file at ``path`` and take its exclusive lock within ``wait`` seconds.

    Returns the descriptor (closing it releases the lock). A lock file that is not
    a regular file, or a lock another process holds longer, is a :class:`StateFileError`.
    """
    from roadcheck._lock import lock as take

    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW \
        | getattr(os, "O_CLOEXEC", 0)
    if not _NOFOLLOW:
        mode = _lstat_mode(path)
        if mode is not None and not stat.S_ISREG(mode):
            raise _refuse_mode(path, mode)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        mode = _lstat_mode(path)
        if mode is not None and not stat.S_ISREG(mode):
            raise _refuse_mode(path, mode) from None
        raise StateFileError(f"cannot open the lock: {exc.strerror or exc}",
                             path=str(path)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse_mode(path, mode)
        deadline = time.monotonic() + wait
        pause = 0.002
        while not take(fd, wait=False):
            if time.monotonic() >= deadline:
                raise StateFileError(f"the session is locked by another process (waited "
                                     f"{wait:g} s)", path=str(path))
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
    except BaseException:
        os.close(fd)
        raise
    return fd
