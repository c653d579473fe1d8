"""A checkpoint is its document's structs, read once; no class repeats their fields."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from roadcheck.documents.checkpoint import ArtifactDoc, CheckpointDoc, EffectDoc
from roadcheck.revalidation import checkpoint as checkpoint_mod
from roadcheck.revalidation import load_checkpoint, parse_checkpoint

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples" / "resume"


def test_a_loaded_checkpoint_holds_the_struct_the_loader_read() -> None:
    """load_checkpoint keeps the CheckpointDoc it read, with its source and sha256."""
    cp = load_checkpoint(EXAMPLES / "video" / "checkpoint.yaml")
    assert type(cp.doc) is CheckpointDoc
    assert all(type(a) is ArtifactDoc for a in cp.doc.artifacts.values())
    assert all(type(e) is EffectDoc for e in cp.doc.external_effects.values())
    assert cp.source == str(EXAMPLES / "video" / "checkpoint.yaml")
    assert cp.base == EXAMPLES / "video" and len(cp.sha256 or "") == 64


def test_the_part_names_are_the_document_structs() -> None:
    """The names the module has always exported are the document's own structs."""
    assert checkpoint_mod.Artifact is ArtifactDoc
    assert checkpoint_mod.Effect is EffectDoc


def test_paths_times_and_durations_resolve_through_the_checkpoint(tmp_path: Path) -> None:
    """A path resolves against the checkpoint's folder; times are UTC; durations parse."""
    cp = parse_checkpoint({"observed_at": "2026-08-10T12:00:00+02:00", "remaining": [],
                           "inputs": ["a.txt", "/abs/b.txt"],
                           "capabilities": {"push": {"state": "allowed", "max_age": "1h30m",
                                                     "checked_at": "2026-08-10T09:00:00Z"}}},
                          str(tmp_path / "checkpoint.yaml"))
    assert cp.observed_at == datetime(2026, 8, 10, 10, tzinfo=UTC)
    assert cp.inputs == (tmp_path / "a.txt", Path("/abs/b.txt"))
    cap = cp.doc.capabilities["push"]
    assert cp.duration(cap.max_age) == timedelta(minutes=90)
    assert cp.time(cap.checked_at) == datetime(2026, 8, 10, 9, tzinfo=UTC)
    assert cp.raw["inputs"] == ["a.txt", "/abs/b.txt"]
