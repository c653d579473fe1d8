"""The files roadcheck reads as evidence and the files it writes for the user.

Reading: an artifact path comes from a spec, a template or a checkpoint, so it
can name anything: a FIFO (whose ``open`` waits for a writer forever),
``/dev/zero`` (whose read never ends), a symlink to either, or a path that
climbs out of the directory it belongs to. Every read here opens the path once
with ``O_NONBLOCK``, checks the open descriptor with ``fstat`` and reads from
that same descriptor, so what was checked is what is read. With ``roots``, the
path's real location (symlinks resolved) must lie inside one of them; the
resolved path is then opened with ``O_NOFOLLOW``.

Writing: :func:`write_output` (and :func:`atomic_output`, for a report written
as it is made) writes to a temporary file beside the target, fsyncs it and
renames it over the target, so a reader sees the old file or the new one,
never half of one. That is for a new path and a regular file; a symlink is
followed, so the link stays and the file it names is replaced. A target that
exists and is not a regular file (a FIFO, a device) is written through, as
``pytest --junitxml`` would: it is never replaced by a file. A FIFO that no
process reads is refused after :data:`FIFO_WAIT` seconds rather than waited on
forever. :func:`check_writable_dir` refuses a directory
roadcheck could not create or write into before anything is written. A bad path is
an :class:`~roadcheck.errors.InputError` (exit 2) naming the path and the OS
reason, never an internal error.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
from collections.abc import Iterable, Iterator, Sequence
from os import PathLike
from pathlib import Path
from typing import TextIO

from roadcheck.errors import InputError

__all__ = [
    "FileRefused",
    "NotRegularFile",
    "OutsideRoots",
    "atomic_output",
    "check_writable_dir",
    "describe",
    "digest_regular",
    "fsync_dir",
    "inside",
    "open_regular",
    "read_regular",
    "regular_under",
    "write_output",
]

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class FileRefused(OSError):
    """A path that cannot be evidence; ``why`` says so in a few words."""

    def __init__(self, path: str | os.PathLike[str], why: str) -> None:
        self.path = os.fspath(path)
        self.why = why
        super().__init__(f"{self.path} {why}")


class NotRegularFile(FileRefused):
    """The path is a FIFO, a device, a socket or a directory, not a regular file."""


class OutsideRoots(FileRefused):
    """The path resolves outside every directory it is allowed in."""


def describe(mode: int) -> str:
    """What a file of ``mode`` is, in words: ``a named pipe (FIFO)``, ``a character device``."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def inside(path: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]]) -> bool:
    """Whether ``path`` lies in (or is) one of ``roots``, compared as normalised absolute paths.

    Purely lexical: resolve symlinks first when they matter.
    """
    target = os.path.normpath(os.path.abspath(path))
    for root in roots:
        base = os.path.normpath(os.path.abspath(root))
        if target == base or target.startswith(base.rstrip(os.sep) + os.sep):
            return True
    return False


def _inside_real(target: str, roots: Sequence[str | os.PathLike[str]]) -> bool:
    """Whether the real path ``target`` lies in one of ``roots``, symlinks in the roots resolved.

    Every leading part of a real path is a directory that is no symlink, so a root
    written without ``..`` that holds ``target`` as written is its own real path:
    resolving it changes nothing. The roots are resolved only when that does not
    settle it (a root through a symlink, or written with ``..``, which a symlink
    before it would take elsewhere).
    """
    plain = [r for r in roots if os.pardir not in os.fspath(r).split(os.sep)]
    return inside(target, plain) or inside(target, [os.path.realpath(r) for r in roots])


def open_regular(path: str | os.PathLike[str],
                 roots: Sequence[str | os.PathLike[str]] | None = None) -> int:
    """A read-only descriptor of the regular file at ``path``; the caller closes it.

    Raises :class:`NotRegularFile` or :class:`OutsideRoots` (both ``OSError``),
    or the ``OSError`` of the failed open (``FileNotFoundError`` when nothing is there).
    """
    target: str | os.PathLike[str] = path
    flags = _FLAGS
    if roots is not None:
        target = os.path.realpath(path)
        if not _inside_real(target, roots):
            shown = "" if os.fspath(target) == os.path.abspath(path) else f" (via {target})"
            mode = stat.S_IFREG
            with contextlib.suppress(OSError):
                mode = os.stat(target).st_mode
            if not stat.S_ISREG(mode):  # a device or FIFO is named as such first
                raise NotRegularFile(path, f"is {describe(mode)}{shown}, not a regular file")
            raise OutsideRoots(path, f"resolves outside the directories it may be read "
                                     f"from{shown}")
        flags |= _NOFOLLOW
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        raise
    except OSError:
        # a socket cannot be opened at all (ENXIO): name what is there instead
        try:
            mode = os.stat(target).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, f"is {describe(mode)}, not a regular file") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
    except OSError:  # pragma: no cover - fstat on a fresh descriptor
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(path, f"is {describe(mode)}, not a regular file")
    return fd


def read_regular(path: str | os.PathLike[str],
                 roots: Sequence[str | os.PathLike[str]] | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (see :func:`open_regular`)."""
    with open(open_regular(path, roots), "rb") as fh:
        return fh.read()


def read_input(path: str | os.PathLike[str], what: str) -> bytes:
    """The bytes of the file a command was given; one line naming it, exit 2, when it
    cannot be read (``what`` says what the file was to be: ``the witness``)."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", path=str(path)) from None


def digest_regular(path: str | os.PathLike[str],
                   roots: Sequence[str | os.PathLike[str]] | None = None) -> tuple[str, int]:
    """``(sha256 hex, size in bytes)`` of the regular file at ``path``."""
    h = hashlib.sha256()
    size = 0
    # read from the descriptor itself: a file object would add a buffer and three calls
    # (fstat, a terminal check, a seek) to what is one open and one read for most artifacts
    fd = open_regular(path, roots)
    try:
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return h.hexdigest(), size


def regular_under(root: Path) -> list[Path]:
    """Every regular file under the directory ``root``, sorted; anything else is refused.

    A member that is a FIFO, a device or a socket, a symlink leaving ``root`` or a
    symlink to a directory raises :class:`FileRefused`: a tree whose digest skipped
    such a member would not stand for the tree.
    """
    real = os.path.realpath(root)
    found: list[Path] = []
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in dirs:
            if os.path.islink(os.path.join(here, name)):
                raise NotRegularFile(Path(here, name), "is a symlink to a directory")
        for name in files:
            member = Path(here, name)
            if os.path.islink(member) and not inside(os.path.realpath(member), [real]):
                raise OutsideRoots(member, f"resolves outside {root}")
            try:
                mode = os.stat(member).st_mode
            except FileNotFoundError:
                continue  # a dangling link or a file removed meanwhile is not a member
            if not stat.S_ISREG(mode):
                raise NotRegularFile(member, f"is {describe(mode)}, not a regular file")
            found.append(member)
    return sorted(found)


def _mkstemp(directory: str | PathLike[str], prefix: str, suffix: str) -> tuple[int, str]:
    """``tempfile.mkstemp(dir=directory, prefix=prefix, suffix=suffix)`` without loading
    :mod:`tempfile` (and shutil, lzma, random with it): a new file only this user can read
    and write, created exclusively under a random name."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | _NOFOLLOW
    for _ in range(100):
        name = os.path.join(directory, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", os.fspath(directory))


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _new_file_mode(target: Path) -> int:
    """Keep an existing file's mode; a new file gets what ``open()`` would give it."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (a create, a rename) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_output(path: str | PathLike[str], data: str | bytes, *, what: str = "") -> None:
    """Write ``data`` (text is UTF-8) to ``path`` atomically, or raise :class:`InputError`.

    ``what`` names the file in the message (``cannot write the HTML page: ...``).
    """
    with atomic_output(path, what=what) as fh:
        if isinstance(data, str):
            fh.write(data)
        else:
            fh.flush()
            fh.buffer.write(data)


#: How a write fails for want of room or a writable disk: said as the output's fault.
_WRITE_FAILED = frozenset(getattr(errno, n) for n in ("ENOSPC", "EDQUOT", "EFBIG", "EIO", "EROFS")
                          if hasattr(errno, n))


#: How long a write to a FIFO waits for a process to open it for reading.
FIFO_WAIT = 10.0


@contextlib.contextmanager
def _written_through(target: str, name: str, cannot: str, mode: int) -> Iterator[TextIO]:
    """A UTF-8 text stream straight into an existing FIFO or device at ``target``."""
    if stat.S_ISSOCK(mode):
        raise InputError(f"{cannot}: it is a socket, not a file", path=name)
    fifo = stat.S_ISFIFO(mode)
    flags = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | (getattr(os, "O_NONBLOCK", 0) if fifo
                                                          else 0)
    deadline = time.monotonic() + FIFO_WAIT
    while True:
        try:
            fd = os.open(target, flags)
            break
        except OSError as exc:
            # ENXIO: a FIFO nobody has open for reading yet
            if not (fifo and exc.errno == errno.ENXIO):
                raise InputError(f"{cannot}: {_reason(exc)}", path=name) from None
            if time.monotonic() >= deadline:
                raise InputError(f"{cannot}: no process opened the FIFO for reading within "
                                 f"{FIFO_WAIT:g} s", path=name) from None
            time.sleep(0.01)
    if fifo:
        os.set_blocking(fd, True)
    with open(fd, "w", encoding="utf-8", newline="") as fh:
        try:
            yield fh
            fh.flush()
        except OSError as exc:
            if exc.errno not in _WRITE_FAILED and exc.errno != errno.EPIPE:
                raise
            raise InputError(f"{cannot}: {_reason(exc)}", path=name) from None


@contextlib.contextmanager
def atomic_output(path: str | PathLike[str], *, what: str = "") -> Iterator[TextIO]:
    """A UTF-8 text stream whose content becomes the file at ``path`` when the block ends.

    The stream is a temporary file beside the target (no newline translation);
    leaving the block normally fsyncs it and renames it over the target, so a
    reader sees the old file or the new one, never part of one. An exception
    in the block (Ctrl-C included) removes the temporary and leaves the target
    as it was. A symlink is followed: the file it names is replaced and the link
    kept. An existing FIFO or device is written through instead (see the module
    docstring). A target that cannot be written raises :class:`InputError` before
    the block runs, naming the path and the reason, and so does a write in the
    block that fails for want of room (a full or read-only disk).
    """
    name = os.fspath(path)
    cannot = f"cannot write {what}" if what else "cannot write"
    # a link's target is what is written; the link itself stays as it is
    target = Path(os.path.realpath(name) if os.path.islink(name) else name)
    try:
        mode: int | None = target.stat().st_mode
    except OSError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise InputError(f"{cannot}: it is a directory", path=name)
    if mode is not None and not stat.S_ISREG(mode):
        with _written_through(str(target), name, cannot, mode) as fh:
            yield fh
        return
    parent = target.parent
    if not parent.is_dir():
        state = "does not exist" if not parent.exists() else "is not a directory"
        raise InputError(f"{cannot}: the directory {str(parent)!r} {state}", path=name)
    try:
        fd, tmp = _mkstemp(parent, f".{target.name}.", ".tmp")
    except OSError as exc:
        raise InputError(f"{cannot}: {_reason(exc)}", path=name) from None
    done = False
    try:
        with open(fd, "w", encoding="utf-8", newline="") as fh:
            try:
                yield fh
            except OSError as exc:
                if exc.errno not in _WRITE_FAILED:
                    raise
                raise InputError(f"{cannot}: {_reason(exc)}", path=name) from None
            try:
                fh.flush()
                if hasattr(os, "fchmod"):  # not on Windows before Python 3.13
                    os.fchmod(fh.fileno(), _new_file_mode(target))
                os.fsync(fh.fileno())
            except OSError as exc:
                raise InputError(f"{cannot}: {_reason(exc)}", path=name) from None
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise InputError(f"{cannot}: {_reason(exc)}", path=name) from None
        done = True
    finally:
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    with contextlib.suppress(OSError):  # not every filesystem lets a directory be fsynced
        fsync_dir(parent)


def check_writable_dir(path: str | PathLike[str]) -> None:
    """Raise :class:`InputError` unless ``path`` is, or can become, a writable directory.

    Writes nothing that stays: the nearest existing directory on the way is
    probed with a temporary file that is removed at once.
    """
    name = os.fspath(path)
    probe = Path(name)
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        where = "it" if str(probe) == name else repr(str(probe))
        raise InputError(f"cannot use as a directory: {where} is not a directory", path=name)
    try:
        fd, tmp = _mkstemp(probe, ".roadcheck-probe-", "")
    except OSError as exc:
        raise InputError(f"cannot write: {_reason(exc)}", path=name) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)
