"""Writing the files assay writes on a user's behalf: whole or not at all.

:func:`write_output` writes to a temporary file beside the target, fsyncs it
and renames it over the target, so a reader sees the old file or the new one,
never half of one. :func:`check_writable_dir` refuses a directory assay could
not create or write into before anything is written. A bad path is an
:class:`~assay.errors.InputError` (exit 2) naming the path and the OS reason,
never an internal error.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from os import PathLike
from pathlib import Path

from assay.errors import InputError

__all__ = ["check_writable_dir", "write_output"]


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


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every filesystem lets a directory be fsynced
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_output(path: str | PathLike[str], data: str | bytes, *, what: str = "") -> None:
    """Write ``data`` (text is UTF-8) to ``path`` atomically, or raise :class:`InputError`.

    ``what`` names the file in the message (``cannot write the HTML page: ...``).
    """
    name = os.fspath(path)
    target = Path(name)
    parent = target.parent
    cannot = f"cannot write {what}" if what else "cannot write"
    if target.is_dir():
        raise InputError(f"{cannot}: it is a directory", path=name)
    if not parent.is_dir():
        state = "does not exist" if not parent.exists() else "is not a directory"
        raise InputError(f"{cannot}: the directory {str(parent)!r} {state}", path=name)
    body = data.encode("utf-8") if isinstance(data, str) else data
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(body)
            fh.flush()
            os.fchmod(fh.fileno(), _new_file_mode(target))
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise InputError(f"{cannot}: {_reason(exc)}", path=name) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    _fsync_dir(parent)


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
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".assay-probe-")
    except OSError as exc:
        raise InputError(f"cannot write: {_reason(exc)}", path=name) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)
