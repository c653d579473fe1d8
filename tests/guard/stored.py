"""Reading what a guard stored, as a test (or a forger) would: past the seal line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def payload(path: Path) -> bytes:
    """The bytes a sealed guard file holds after its seal line."""
    line, _, rest = path.read_bytes().partition(b"\n")
    assert line.startswith(b"roadcheck-seal/1 "), line[:40]
    return rest


def state(path: Path) -> dict[str, Any]:
    """A session's state file (``guard.json``) as its JSON document."""
    doc: dict[str, Any] = json.loads(payload(path))
    return doc
