"""The doc_pipeline benchmark's two facts, asserted from its own ``run_benchmark``."""

from __future__ import annotations

from types import ModuleType

import pytest

from ..conftest import EXAMPLES, load_script


def _benchmark_module() -> ModuleType:
    return load_script(EXAMPLES / "doc_pipeline" / "benchmark.py")


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> object:
    """One benchmark run shared by the tests of this module."""
    return _benchmark_module().run_benchmark(tmp_path_factory.mktemp("doc_pipeline"))


@pytest.mark.benchmark
class TestDocPipelineBenchmark:
    """Gated vs ungated on the seeded corpus."""

    def test_no_gated_phase_advanced_without_evidence(self, facts: object) -> None:
        """Across the 6 gated runs, 0 phases advanced without a passing, evidence-backed gate."""
        assert len(facts.docs) == 6  # type: ignore[attr-defined]
        assert facts.gated_advances > 0  # type: ignore[attr-defined]
        assert facts.unbacked_advances == 0  # type: ignore[attr-defined]

    def test_gates_stopped_what_ungated_published(self, facts: object) -> None:
        """4 broken docs published ungated were stopped: 1 normalize, 1 summarize, 2 review."""
        broken = facts.broken_published_ungated  # type: ignore[attr-defined]
        assert len(broken) == 4
        by_phase = facts.stopped_by_phase  # type: ignore[attr-defined]
        assert by_phase == {"normalize": 1, "summarize": 1, "review": 2}
        assert all(d.stopped_at == d.ungated_broken_at for d in broken)

    def test_clean_documents_complete(self, facts: object) -> None:
        """The two clean documents pass every gate and publish."""
        docs = facts.docs  # type: ignore[attr-defined]
        clean = [d for d in docs if d.gated_status == "completed"]
        assert [d.doc.split("_")[1] for d in clean] == ["clean", "clean"]

    def test_report_is_self_contained(self, facts: object) -> None:
        """The HTML report carries both facts and loads nothing from outside."""
        html = _benchmark_module().render_html(facts)
        assert "Fact 1." in html
        assert "Fact 2." in html
        assert "<script" not in html
        assert "src=" not in html
