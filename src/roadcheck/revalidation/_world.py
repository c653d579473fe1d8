"""Reading the world for revalidation: digests, paths against the checkpoint's folder,
read-only commands, and the small parsers the questions share. Nothing here writes."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import orjson

from roadcheck._commands import run_command
from roadcheck._files import FileRefused, digest_regular, inside, read_regular, regular_under

__all__ = [
    "ago",
    "leaves",
    "parses",
    "read_number",
    "rel",
    "rel_msg",
    "run",
    "sha256_file",
    "tree_digest",
    "written_relative",
]


def sha256_file(path: Path) -> str:
    """``sha256:<hex>`` of a regular file, read in large chunks.

    A FIFO, a device or a socket raises :class:`roadcheck._files.NotRegularFile`
    (an ``OSError``) instead of blocking or reading forever.
    """
    return "sha256:" + digest_regular(path)[0]


def tree_digest(root: Path) -> str:
    """The digest of every regular file under ``root``; anything else raises ``FileRefused``."""
    h = hashlib.sha256()
    real = os.path.realpath(root)
    for p in regular_under(root):
        digest = "sha256:" + digest_regular(p, (real,))[0]
        h.update(f"{p.relative_to(root).as_posix()}\0{digest}\n".encode())
    return "sha256:" + h.hexdigest()


def written_relative(path: Path, base: Path) -> str | None:
    """The path as written relative to the checkpoint's folder, or None if written absolute.

    The parser joins a relative path onto ``base``; a path that does not start
    with ``base`` was written absolute and may name any file.
    """
    try:
        return os.path.normpath(path.relative_to(base))
    except ValueError:
        return None


def leaves(path: Path, base: Path) -> bool:
    """Whether a relative path leaves the folder, through ``..`` or through a symlink."""
    relative = written_relative(path, base)
    if relative is None:
        return False
    if relative.split(os.sep, 1)[0] == os.pardir:
        return True
    return not inside(os.path.realpath(path), [os.path.realpath(base)])


def run(argv: Sequence[str], cwd: Path, timeout: float) -> tuple[int | None, str]:
    """Run a read-only command without a shell: (exit code or None, stdout or the failure)."""
    done = run_command(argv, cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)
    if done.error is not None:
        return None, done.error
    return done.exit_code, done.stdout


def rel(path: Path, base: Path) -> str:
    """``path`` relative to ``base``, as the findings name it."""
    return os.path.relpath(path, base)


def rel_msg(exc: FileRefused, base: Path) -> str:
    """A refusal as ``<path relative to the checkpoint> <why>``."""
    return f"{rel(Path(exc.path), base)} {exc.why}"


def ago(delta: timedelta) -> str:
    """A duration as the findings say it: ``36h``, ``1.5h``, ``12m``, ``40s``."""
    seconds = int(delta.total_seconds())
    if seconds >= 86400 and seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    if seconds >= 60:
        return f"{seconds // 60}m"
    return f"{seconds}s"


def _format_problem(data: bytes, fmt: str) -> str | None:
    if fmt == "json":
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            return f"not JSON: {exc.msg} at line {exc.lineno}"
    elif fmt == "jsonl":
        for n, line in enumerate(data.splitlines(), 1):
            if line.strip():
                try:
                    orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    return f"not JSON Lines: line {n}: {exc.msg}"
    else:
        import yaml

        try:
            yaml.safe_load(data)
        except yaml.YAMLError as exc:
            return f"not YAML: {str(exc).splitlines()[0]}"
    return None


def parses(path: Path, fmt: str) -> str | None:
    """Why the file at ``path`` is not a non-empty ``json``, ``jsonl`` or ``yaml``
    document, or None when it is one."""
    try:
        data = read_regular(path)
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    problem = _format_problem(data, fmt)
    if problem is not None:
        return problem
    if not data.strip():
        return f"empty, not {fmt}"
    return None


def read_number(text: str) -> float | None:
    """A number, or an object's ``spent`` number, from a file or a command's output."""
    text = text.strip()
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, dict):
        value = value.get("spent")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
