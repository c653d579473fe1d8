"""Smoke test for ``benchmarks/harness_overhead.py`` so the script keeps working."""

from __future__ import annotations

import pytest

from ..conftest import ROOT, load_script


class TestOverheadScript:
    """The overhead benchmark on a tiny workflow."""

    def test_measures_all_three(self, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
        """A 5-phase measurement reports the bare loop and both stores."""
        monkeypatch.chdir(str(tmp_path))
        module = load_script(ROOT / "benchmarks" / "harness_overhead.py")
        times = module.measure(5, 1)
        assert set(times) == {"bare", "jsonl", "sqlite"}
        assert all(v > 0 for v in times.values())
