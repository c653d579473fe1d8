"""Fixtures for harness tests: small producer and gate scripts written into tmp_path."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: Writes argv[1] with "good" when a feedback file is present, else "bad".
FIXES_ON_FEEDBACK = """
import json, os, sys
fb = os.environ.get("ROADCHECK_FEEDBACK_FILE")
seen = {k: os.environ.get(k) for k in ("ROADCHECK_ATTEMPT", "ROADCHECK_ITERATION",
        "ROADCHECK_LAST_GATE_SUMMARY", "ROADCHECK_LAST_GATE_DETAIL", "ROADCHECK_LAST_GATE_EXIT")}
if fb:
    seen["feedback"] = json.load(open(fb))
open(sys.argv[1], "w").write("good" if fb else "bad")
open(sys.argv[1] + ".env.json", "w").write(json.dumps(seen))
"""
#: Writes "good" to argv[1].
WRITES_GOOD = "import sys\nopen(sys.argv[1], 'w').write('good')\n"
#: Exits 0 when argv[1] holds "good"; otherwise prints why and exits 4.
CHECK_GOOD = """
import sys
text = open(sys.argv[1]).read()
if text != "good":
    print(f"expected good, found {text!r}")
    sys.exit(4)
"""


@pytest.fixture
def script(tmp_path: Path) -> Callable[[str, str], str]:
    """Write a Python script under tmp_path and return its path."""

    def write(name: str, body: str) -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(body), encoding="utf-8")
        return str(path)

    return write


@pytest.fixture
def phase(script: Callable[[str, str], str]) -> Callable[..., dict[str, Any]]:
    """Build one phase document: a Python producer and, by default, a command gate."""

    def build(name: str, *, role: str = "writer", producer: str = WRITES_GOOD,
              gate: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
        prod = script(f"produce_{name}.py", producer)
        check = script("check_good.py", CHECK_GOOD)
        doc = {"name": name, "role": role, "producer": ["{python}", prod, "{artifact}"],
               "artifact": f"{name}.txt",
               "gate": gate or {"command": ["{python}", check, "{artifact}"]}}
        doc.update(extra)
        return doc

    return build


@pytest.fixture
def workflow_file(tmp_path: Path) -> Callable[..., Path]:
    """Write a workflow document as JSON and return its path."""

    def write(*phases: dict[str, Any], name: str = "wf", **extra: Any) -> Path:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"workflow": name, "phases": list(phases), **extra}),
                        encoding="utf-8")
        return path

    return write
