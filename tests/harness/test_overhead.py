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

    def test_one_sync_per_phase_two_with_an_effect(self, tmp_path: object,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
        """The flat-file store makes each record durable with one sync; an effect adds one."""
        monkeypatch.chdir(str(tmp_path))
        module = load_script(ROOT / "benchmarks" / "harness_overhead.py")
        assert module.fsyncs_per_phase(3, False)[0] == 1.0
        assert module.fsyncs_per_phase(3, True)[0] == 2.0

    def test_cli_figure_runs(self, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
        """The CLI figure on a 2-phase workflow: both sides measured, wall and CPU."""
        monkeypatch.chdir(str(tmp_path))
        module = load_script(ROOT / "benchmarks" / "harness_overhead.py")
        base, cli = module.cli_overhead(2, 1)
        assert base > 0 and cli > 0
        assert set(module.CLI_CPU) == {"bare", "cli"} and module.CLI_CPU["cli"] > 0
