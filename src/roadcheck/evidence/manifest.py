"""The run manifest (``run.json``): written once, exclusively, when a run is created.

A run is created in a staging directory beside its final place: ``run.json`` and
the store's anchored head are written and fsynced there, and the directory is
then renamed into place. The rename fails when a run of that id exists, so of
two creations racing for one id exactly one wins, and a crash leaves either no
run or a whole one. The head records the manifest's digest, so a later edit of
``run.json`` (its params above all) breaks the evidence.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from roadcheck._files import fsync_dir
from roadcheck.errors import InputError, StoreError

__all__ = ["MANIFEST", "create_run", "manifest_digest", "params_digest", "read_manifest"]

MANIFEST = "run.json"


def _canonical(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def params_digest(params: Mapping[str, str]) -> str:
    """The sha256 of a run's params as canonical JSON; every record carries it."""
    return hashlib.sha256(_canonical(dict(params))).hexdigest()


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    """The sha256 of the whole manifest as canonical JSON; the head carries it."""
    return hashlib.sha256(_canonical(dict(manifest))).hexdigest()


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """The run's manifest (workflow, store, params); a run without one does not exist."""
    from roadcheck.ingest._json import find_duplicate, no_duplicate_keys

    path = run_dir / MANIFEST
    try:
        data = path.read_bytes()
        doc = orjson.loads(data)
    except FileNotFoundError:
        raise InputError(f"no run {run_dir.name!r} in {run_dir.parent}", path=str(path)) from None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise StoreError(f"unreadable run manifest: {exc}", path=str(path)) from None
    if not isinstance(doc, dict):
        raise StoreError("the run manifest must be an object", path=str(path))
    if not no_duplicate_keys(data, doc):
        dup = find_duplicate(data)
        if dup is not None:
            raise StoreError(f"unreadable run manifest: duplicate key {dup!r} (readers disagree "
                             "on which value counts)", path=str(path))
    return doc


def write_durable(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file: fsync, rename, fsync the directory."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def create_run(runs_dir: Path, run_id: str, manifest: Mapping[str, Any],
               init: Callable[[Path], None] | None = None) -> Path:
    """Create run ``run_id`` with ``manifest`` exclusively; ``init`` fills the staging directory.

    Raises :class:`InputError` when a run of that id already exists.
    """
    run_dir = runs_dir / run_id
    exists = InputError(f"run {run_id!r} already exists; continue it with --resume",
                        path=str(run_dir))
    if (run_dir / MANIFEST).exists():
        raise exists
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
        stage = runs_dir / f".{run_id}.{os.urandom(4).hex()}.creating"
        stage.mkdir()
    except OSError as exc:
        raise StoreError(f"cannot create the run: {exc.strerror or exc}",
                         path=str(runs_dir)) from None
    try:
        try:
            write_durable(stage / MANIFEST,
                          orjson.dumps(dict(manifest), option=orjson.OPT_INDENT_2))
            if init is not None:
                init(stage)
            fsync_dir(stage)
        except OSError as exc:
            raise StoreError(f"cannot create the run: {exc.strerror or exc}",
                             path=str(stage)) from None
        try:
            # a rename onto an existing, non-empty directory fails: the loser of a race lands here
            os.rename(stage, run_dir)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                raise exists from None
            raise StoreError(f"cannot create the run: {exc.strerror or exc}",
                             path=str(run_dir)) from None
        fsync_dir(runs_dir)
    except BaseException:
        import shutil  # only to clear a failed stage

        with contextlib.suppress(OSError):
            shutil.rmtree(stage)
        raise
    return run_dir
