"""Running a command the way every part of assay does: an argv list, never a shell.

Gates, producers, reconcile and capability checks all go through
:func:`run_command`; a missing program or a timeout is reported in the
result, never raised, so the caller decides what it means (a failed gate, an
unknown effect).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OUTPUT_LIMIT", "CommandRun", "run_command", "tail_output"]

#: Output kept from a command: the tail, where the failure usually is.
OUTPUT_LIMIT = 16_384


def tail_output(text: str) -> str:
    """``text`` trimmed to its last :data:`OUTPUT_LIMIT` characters."""
    return text if len(text) <= OUTPUT_LIMIT else "...\n" + text[-OUTPUT_LIMIT:]


def _decode(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data


@dataclass(frozen=True, slots=True)
class CommandRun:
    """A finished subprocess: exit code (``None`` when it never ran to the end) and output."""

    exit_code: int | None
    stdout: str
    stderr: str
    error: str | None = None

    @property
    def output(self) -> str:
        """stdout then stderr, trimmed to the record limit."""
        both = self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr
        return tail_output(both)


def run_command(argv: Sequence[str], *, cwd: Path | None, timeout: float,
                env: Mapping[str, str] | None = None, stdin: int | None = None) -> CommandRun:
    """Run ``argv`` without a shell; a missing program or a timeout is reported, not raised.

    ``env`` replaces the environment when given; ``stdin`` is passed to
    :func:`subprocess.run` (``subprocess.DEVNULL`` for read-only checks).
    """
    try:
        proc = subprocess.run(list(argv), cwd=cwd, env=None if env is None else dict(env),
                              stdin=stdin, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        return CommandRun(None, _decode(exc.stdout), _decode(exc.stderr),
                          f"timed out after {timeout:g}s")
    except OSError as exc:
        return CommandRun(None, "", "", f"could not start {argv[0]!r}: {exc.strerror or exc}")
    return CommandRun(proc.returncode, _decode(proc.stdout), _decode(proc.stderr))
