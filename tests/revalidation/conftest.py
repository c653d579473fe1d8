"""Fixtures for revalidation tests: a checkpoint directory built from real files."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

NOW = "2026-08-10T15:00:00Z"
OBSERVED = "2026-08-10T14:20:00Z"


def sha(data: bytes) -> str:
    """``sha256:<hex>`` of some bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def py(code: str) -> list[str]:
    """An argv that runs a line of Python: a real subprocess, never a shell."""
    return [sys.executable, "-c", code]


class Site:
    """A directory holding a task file, artifacts, a ledger and the checkpoint."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.media = b"\x00" * 2048
        (root / "build").mkdir()
        (root / "build" / "final.mp4").write_bytes(self.media)
        (root / "task.json").write_text(json.dumps({"state": "active"}))
        (root / "ledger.jsonl").write_text(
            json.dumps({"idempotency_key": "job/upload", "remote_id": "yt-123"}) + "\n")

    def doc(self, **over: Any) -> dict[str, Any]:
        """A valid checkpoint document, with top-level keys replaced by ``over``."""
        base: dict[str, Any] = {
            "observed_at": OBSERVED,
            "task": {"path": "task.json", "state": "active"},
            "artifacts": {"final_media": {"path": "build/final.mp4", "state": "validated",
                                          "digest": sha(self.media),
                                          "expect": {"min_bytes": 1000}}},
            "external_effects": {"upload": {"state": "confirmed", "remote_id": "yt-123",
                                            "ledger": "ledger.jsonl"}},
            "capabilities": {"publish": {"state": "allowed",
                                         "checked_at": "2026-08-10T14:19:00Z"}},
            "remaining": [{"step": "distribute", "retry_class": "reconcile_first"}],
            "next_action": "verify each destination before creating anything",
        }
        base.update(over)
        return {k: v for k, v in base.items() if v is not None}

    def write(self, name: str = "checkpoint.yaml", **over: Any) -> Path:
        """Write the checkpoint as YAML (or JSON for a .json name) and return its path."""
        path = self.root / name
        doc = self.doc(**over)
        if name.endswith(".json"):
            path.write_text(json.dumps(doc, indent=2))
        else:
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path


@pytest.fixture
def site(tmp_path: Path) -> Site:
    """A fresh checkpoint directory with valid evidence."""
    return Site(tmp_path)


Codes = Callable[..., list[str]]
