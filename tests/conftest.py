"""Shared test configuration: paths, the CLI runner, and golden-file handling."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

# Property tests are part of the CI gate, so they are deterministic: the same
# examples every run (a flaky test is a defect), no example database, and no
# health check that trips only because a loaded machine generates slowly.
settings.register_profile("roadcheck", derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
# The fuzz properties (marked ``fuzz``) are sized by ``examples(n)``: the default run draws
# a quarter of each n; HYPOTHESIS_PROFILE=stress draws all of them (CI runs both).
settings.register_profile("stress", settings.get_profile("roadcheck"))
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "roadcheck")
settings.load_profile(PROFILE)


def examples(full: int) -> int:
    """A fuzz property's example count: ``full`` under the stress profile, else a quarter."""
    return full if PROFILE == "stress" else max(full // 4, 1)

# The suite checks the plain report's bytes: a FORCE_COLOR set where it runs would turn
# replay's text report into the terminal view (tests/test_terminal.py sets it on purpose).
os.environ.pop("FORCE_COLOR", None)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DATA = Path(__file__).resolve().parent / "data"
GOLDEN = Path(__file__).resolve().parent / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="Rewrite golden report files from the current output (on purpose only).")


@pytest.fixture
def golden(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Compare text with ``tests/golden/<name>``; ``--update-golden`` rewrites the file."""
    update = request.config.getoption("--update-golden")

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"golden file {name} missing: run pytest --update-golden once"
        assert text == path.read_text(encoding="utf-8")

    return check


def load_script(path: Path) -> ModuleType:
    """Import a script that is not part of the package (a benchmark, a docs generator)."""
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules while a class is built
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def no_evidence_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No evidence key from the environment: the test says which key it uses."""
    monkeypatch.delenv("ROADCHECK_EVIDENCE_KEY", raising=False)
    monkeypatch.delenv("ROADCHECK_EVIDENCE_KEY_FILE", raising=False)


@pytest.fixture
def url() -> Iterator[str]:
    """A PostgreSQL URL whose connections work in a schema of their own, dropped after the
    test (see tests/postgres.py)."""
    from .postgres import pg_schema

    with pg_schema() as found:
        yield found
