"""Smoke test for ``benchmarks/harness_overhead.py`` so the script keeps working."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from ..conftest import ROOT


class TestOverheadScript:
    """The overhead benchmark on a tiny workflow."""

    def test_measures_all_three(self, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
        """A 5-phase measurement reports the bare loop and both stores."""
        monkeypatch.chdir(str(tmp_path))
        spec = importlib.util.spec_from_file_location(
            "harness_overhead", ROOT / "benchmarks" / "harness_overhead.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        times = module.measure(5, 1)
        assert set(times) == {"bare", "jsonl", "sqlite"}
        assert all(v > 0 for v in times.values())
