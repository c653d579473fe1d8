"""What the doctests of ``src/roadcheck`` see: ``examples``, the repository's examples, and
``tmp``, a fresh directory of the example's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _examples_for_doctests(doctest_namespace: dict[str, Any], tmp_path: Path) -> None:
    doctest_namespace["examples"] = Path(__file__).resolve().parent / "examples"
    doctest_namespace["tmp"] = tmp_path
