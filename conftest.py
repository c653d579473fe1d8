"""What the doctests of ``src/roadcheck`` see: ``examples``, the repository's examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _examples_for_doctests(doctest_namespace: dict[str, Any]) -> None:
    doctest_namespace["examples"] = Path(__file__).resolve().parent / "examples"
