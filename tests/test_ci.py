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

    def test_ci_runs_the_fuzz_properties_at_full_size(self) -> None:
        """The default run draws a quarter of each fuzz property's cases; CI runs them all."""
        from .conftest import PROFILE, examples

        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        assert 'HYPOTHESIS_PROFILE=stress .venv/bin/python -m pytest -m "fuzz and not stress"' \
            in ci
        assert examples(300) == (300 if PROFILE == "stress" else 75)

    def test_default_run_is_two_processes(self) -> None:
        """addopts runs two workers taking whole files; ``-n`` is in the test extra."""
        import tomllib

        config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
        addopts = config["tool"]["pytest"]["ini_options"]["addopts"]
        assert addopts[addopts.index("-n") + 1] == "2"
        assert addopts[addopts.index("--dist") + 1] == "loadfile"
        assert any(r.startswith("pytest-xdist") for r in
                   config["project"]["optional-dependencies"]["test"])

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
