"""CI runs the README's test command and then the stress runs that command leaves out."""

from __future__ import annotations

import re

from .conftest import ROOT


class TestStressMarker:
    def test_ci_runs_the_default_suite_then_stress(self) -> None:
        """.ci/run runs the README's test command, then ``pytest -m stress``."""
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        test_command = re.findall(r"^(scripts/test-services && python3 -m venv .*pytest)$", readme,
                                  flags=re.M)[-1]
        assert test_command in ci
        assert ".venv/bin/python -m pytest -m stress" in ci
        assert ci.index(test_command) < ci.index(".venv/bin/python -m pytest -m stress")

    def test_default_run_leaves_stress_out(self) -> None:
        """The default options deselect ``stress``; the long run carries it, the short does not."""
        import tomllib

        from .revalidation.test_harness import TestCrashResume

        config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
        options = config["tool"]["pytest"]["ini_options"]
        addopts = options["addopts"]
        assert addopts[addopts.index("-m") + 1] == "not stress and not ray"
        assert any(m.startswith("stress:") for m in options["markers"])
        # the fuzz properties are part of the default run, not deselected with stress
        assert any(m.startswith("fuzz:") for m in options["markers"])

        def marks(test: object) -> set[str]:
            return {m.name for m in getattr(test, "pytestmark", [])}

        assert "stress" in marks(TestCrashResume.test_fifty_kills)
        assert "stress" not in marks(TestCrashResume.test_five_kills)
