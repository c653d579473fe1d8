"""Every failure the fuzz campaign found, replayed from its saved smallest input.

``tests/data/fuzz_regressions/manifest.json`` lists each case: the surface,
the seed it mutated, the file holding the mutated document and the failure it
showed. An entry with an ``xfail`` reason still fails on the current code and
is expected to (strictly: once fixed, remove its ``xfail`` so it guards the fix).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .mutate import Mutation
from .surfaces import REGRESSIONS, SURFACES, Case, Workspace

_MANIFEST = REGRESSIONS / "manifest.json"
ENTRIES: list[dict[str, Any]] = (json.loads(_MANIFEST.read_text(encoding="utf-8"))
                                 if _MANIFEST.exists() else [])


def _param(entry: dict[str, Any]) -> Any:
    marks = []
    if entry.get("xfail"):
        marks.append(pytest.mark.xfail(strict=True, reason=entry["xfail"]))
    return pytest.param(entry, id=entry["file"], marks=marks)


@pytest.mark.parametrize("entry", [_param(e) for e in ENTRIES])
def test_regression(entry: dict[str, Any], workspace: Workspace) -> None:
    """The saved input gives no internal error and, when invalid, no pass."""
    seed = next(s for s in SURFACES[entry["surface"]] if s.name == entry["seed"])
    data = (REGRESSIONS / entry["file"]).read_bytes()
    out = workspace.judge(Case(seed, Mutation(data, entry["op"], entry["detail"])))
    if entry["kind"] == "false_pass":
        # the input must stay invalid by the reference check, or this test proves nothing
        assert out.invalid is not None
    assert out.internal is None, out.internal
    assert out.false_pass is None, f"{out.false_pass} passed on an invalid input: {out.invalid}"


def test_manifest_files_exist() -> None:
    """Every manifest entry names a file that is there, under its surface's directory."""
    for entry in ENTRIES:
        assert (REGRESSIONS / entry["file"]).is_file()
        assert entry["file"].startswith(entry["surface"] + "/")
        assert entry["surface"] in SURFACES


def test_duplicate_hash_key_in_an_evidence_record_is_not_ok(workspace: Workspace) -> None:
    """A record carrying ``hash`` twice is not the record that was written: verify is not OK.

    Built from this session's seed run (its hashes differ from run to run), so it
    cannot be a saved file.
    """
    seed = next(s for s in SURFACES["store"] if s.name == "jsonl evidence.jsonl")
    lines = workspace.seed_bytes(seed).decode().splitlines(keepends=True)
    lines[1] = lines[1].replace('"hash":', '"hash": "' + "0" * 64 + '", "hash":', 1)
    data = "".join(lines).encode()
    out = workspace.judge(Case(seed, Mutation(data, "duplicate_key", "duplicated 1.hash")))
    assert out.invalid is not None and out.exits["verify"] != 0
