"""docs/revalidate.md: both stories run exactly as printed there."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _sessions() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "revalidate.md").read_text()
    out = []
    for block in re.findall(r"```(?:console)?\n(\$ roadcheck revalidate .*?)```", text, flags=re.S):
        command, _, output = block.partition("\n")
        if "--format json" not in command:  # the JSON example is shown elided
            out.append((command[2:], output))
    return out


class TestDocumentedStories:
    """Each ``$ roadcheck revalidate`` block in docs/revalidate.md prints what it shows."""

    def test_both_stories_are_documented(self) -> None:
        """The video job and the chain health check both appear."""
        commands = [c for c, _ in _sessions()]
        assert any("resume/video" in c for c in commands)
        assert any("resume/chain" in c for c in commands)

    def test_output_matches(self) -> None:
        """Running each documented command from the repository root prints the same text."""
        for command, shown in _sessions():
            argv = shlex.split(command)
            proc = subprocess.run([sys.executable, "-m", "roadcheck", *argv[1:]], cwd=ROOT,
                                  capture_output=True, text=True, check=False)
            assert proc.stdout == shown, command
            expected = 0 if "decision: continue" in shown else 1
            assert proc.returncode == expected, command
