"""Resume: which phases already passed, and the seam where they are re-checked.

Before the engine skips a phase that passed in an earlier invocation it calls a
:data:`Revalidator` with the phase, its passing record and the run directory.
The default, :func:`artifact_unchanged`, compares the artifact's sha256 on
disk with the one in the record: a pass whose artifact changed is gated again,
not trusted. :func:`keep_passed` trusts every recorded pass. Returning a message
withdraws the pass and the phase runs again; the message is kept in the run's
notes.

Phases with an ``effect`` keep an append-only effects log (``effects.jsonl``
in the run directory): ``attempted`` before the producer runs (made durable
before it starts), ``confirmed`` when the gate passes (not synced: the passing
record already is) or reconciling finds the effect, ``not_found`` or
``unknown`` from reconciling (durable).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from roadcheck._files import FileRefused, digest_regular, fsync_dir
from roadcheck.evidence.store import last_effect_states
from roadcheck.harness.model import Phase

__all__ = [
    "EFFECTS_LOG",
    "Revalidator",
    "append_effect",
    "artifact_unchanged",
    "effect_states",
    "keep_passed",
    "passed_records",
]

EFFECTS_LOG = "effects.jsonl"

#: ``(phase, passing record, run directory) -> None`` to skip, or a reason to re-run.
Revalidator = Callable[[Phase, Mapping[str, Any], Path], "str | None"]


def keep_passed(phase: Phase, record: Mapping[str, Any], run_dir: Path) -> str | None:
    """The default revalidator: a recorded pass stands."""
    return None


def passed_records(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The latest passing record of each phase."""
    out: dict[str, Mapping[str, Any]] = {}
    for rec in records:
        if rec.get("verdict") == "pass":
            out[str(rec.get("phase"))] = rec
    return out


def artifact_unchanged(phase: Phase, record: Mapping[str, Any], run_dir: Path) -> str | None:
    """Withdraw a pass whose artifact no longer has the sha256 of its evidence record.

    The artifact is read as a regular file; a relative path must stay inside the
    run directory (symlinks resolved). A FIFO, a device or a path that leaves the
    run withdraws the pass like a changed file does.
    """
    artifact = record.get("artifact") or {}
    recorded = artifact.get("sha256")
    raw = artifact.get("path")
    if not recorded or not raw:
        return None
    path = Path(raw)
    roots = None
    if not path.is_absolute():
        path = run_dir / path
        roots = (run_dir,)
    try:
        now, _ = digest_regular(path, roots)
    except FileRefused as exc:
        return f"artifact-changed: {raw} {exc.why}; its evidence record cannot be trusted"
    except OSError:
        return f"artifact-changed: {raw} is gone; its evidence record cannot be trusted"
    if now != recorded:
        return (f"artifact-changed: sha256 of {raw} is {now[:12]}..., its evidence record "
                f"says {recorded[:12]}...")
    return None


def append_effect(run_dir: Path, entry: Mapping[str, Any], *, durable: bool = True) -> None:
    """Append one line to the effects log; with ``durable``, fdatasync it before returning.

    The log is created (and its directory entry made durable) with the run's
    first effect. ``durable=False`` is for a state the evidence already implies
    (``confirmed`` by a passing gate, whose record is durable): losing that line
    leaves ``attempted``, and a later attempt asks the effect's owner first.
    """
    path = run_dir / EFFECTS_LOG
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        os.write(fd, (b"\n" if torn else b"") + orjson.dumps(dict(entry)) + b"\n")
        if durable:
            os.fdatasync(fd)
    finally:
        os.close(fd)
    if durable and created:
        fsync_dir(run_dir)


def effect_states(run_dir: Path) -> dict[str, str]:
    """The last recorded effect state of each phase; a torn last line is ignored."""
    try:
        data = (run_dir / EFFECTS_LOG).read_bytes()
    except FileNotFoundError:
        return {}
    return last_effect_states(data.splitlines())
