"""Reading a stored run back for audit: its manifest, records and chain check."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import StoreError
from assay.evidence.chain import ChainCheck
from assay.evidence.store import check_run_id, open_store

__all__ = ["RunTrail", "load_trail"]


@dataclass(frozen=True, slots=True)
class RunTrail:
    """One run's evidence trail as stored, and whether its hash chain holds."""

    run_id: str
    workflow: str
    store: str
    records: list[dict[str, Any]]
    check: ChainCheck
    manifest: dict[str, Any]

    @property
    def exit(self) -> int:
        """0 when the chain holds, 1 when it was tampered with."""
        return self.check.exit


def load_trail(runs_dir: str | os.PathLike[str], run_id: str) -> RunTrail:
    """Read a run's records and verify its chain; a missing run is a :class:`StoreError`."""
    from assay.harness.engine import MANIFEST

    run_dir = Path(runs_dir) / check_run_id(run_id)
    manifest: dict[str, Any] = {}
    if (run_dir / MANIFEST).exists():
        from assay.harness.engine import read_manifest

        manifest = read_manifest(run_dir)
    store = open_store(runs_dir, run_id)
    try:
        records = store.records()
        check = store.verify()
    finally:
        store.close()
    if not records and not manifest:
        raise StoreError(f"no evidence for run {run_id!r}", path=str(run_dir))
    workflow = str(manifest.get("workflow") or (records[0].get("workflow") if records else ""))
    return RunTrail(run_id, workflow, store.kind, records, check, manifest)
