"""Reading a file that is evidence: a regular file, inside known roots, never blocking.

An artifact path comes from a spec, a template or a checkpoint, so it can name
anything: a FIFO (whose ``open`` waits for a writer forever), ``/dev/zero``
(whose read never ends), a symlink to either, or a path that climbs out of the
directory it belongs to. Every read here opens the path once with
``O_NONBLOCK``, checks the open descriptor with ``fstat`` and reads from that
same descriptor, so what was checked is what is read.

With ``roots``, the path's real location (symlinks resolved) must lie inside
one of them; the resolved path is then opened with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "FileRefused",
    "NotRegularFile",
    "OutsideRoots",
    "describe",
    "digest_regular",
    "inside",
    "open_regular",
    "read_regular",
    "regular_under",
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
        if not inside(target, [os.path.realpath(r) for r in roots]):
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


def digest_regular(path: str | os.PathLike[str],
                   roots: Sequence[str | os.PathLike[str]] | None = None) -> tuple[str, int]:
    """``(sha256 hex, size in bytes)`` of the regular file at ``path``."""
    h = hashlib.sha256()
    size = 0
    with open(open_regular(path, roots), "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
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
