"""Callable gates of the doc pipeline."""

from pathlib import Path
from typing import Any


def published_page(artifact: Path, ctx: Any) -> tuple[bool, str, str]:
    """A published page starts with a non-empty '# ' heading and lists its tags."""
    lines = artifact.read_text(encoding="utf-8").splitlines()
    if not lines or not lines[0].startswith("# ") or not lines[0][2:].strip():
        return False, "page has no title heading", repr(lines[0] if lines else "")
    if not any(line.startswith("Tags: ") and line[6:].strip() for line in lines):
        return False, "page lists no tags", ""
    return True, f"page '{lines[0][2:]}' is complete", ""
