"""What the integrations promise without their frameworks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from assay.integrations import MissingExtraError, require


def test_missing_extra_names_the_extra() -> None:
    with pytest.raises(MissingExtraError) as info:
        require("assay_no_such_framework", "openai-agents")
    assert str(info.value) == (
        "assay_no_such_framework is not installed: pip install 'assay[openai-agents]'")
    assert "\n" not in str(info.value)


def test_importing_assay_imports_no_framework() -> None:
    """``import assay`` and reading the new formats load no framework package."""
    code = ("import sys, assay, assay.ingest.otel, assay.ingest.atif, "
            "assay.ingest.openai_agents\n"
            "bad = [m for m in ('agents', 'langgraph', 'opentelemetry', 'pydantic_ai') "
            "if m in sys.modules]\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
