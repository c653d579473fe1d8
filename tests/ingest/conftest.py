"""Fixtures shared by the ingest tests."""

from __future__ import annotations

import pytest

import roadcheck._accel as accel  # the extension is built by the install: never skipped
from roadcheck import _ext


@pytest.fixture(params=["check_lines", "re-encoding"])
def key_check(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test once with the C extension (its check for repeated keys, the OTel index),
    once with the re-encoding checks alone (as where the extension is not built)."""
    if request.param == "check_lines":
        monkeypatch.setattr(_ext, "_CHECK_LINES", accel.check_lines)
        monkeypatch.setattr(_ext, "_NATIVE", accel)
    else:
        monkeypatch.setattr(_ext, "_CHECK_LINES", None)
        monkeypatch.setattr(_ext, "_NATIVE", None)
    return str(request.param)
