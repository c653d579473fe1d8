"""One fuzz workspace per test session: copies of the resume examples and two seed runs."""

from __future__ import annotations

import pytest

from .surfaces import Workspace


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """A scratch directory with the seed runs of the evidence-store surface."""
    return Workspace(tmp_path_factory.mktemp("fuzz"))
