"""The README's ``roadcheck run`` sequence, run as written: it finishes the doc pipeline."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- run: exit=3,3,0,0 -->"


def _readme_lines() -> list[str]:
    """The commands of the README's ``roadcheck run`` block (its ``$ `` lines)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text[text.index(MARKER):]
    block = re.search(r"```console\n(.*?)```", after, flags=re.S)
    assert block is not None
    return [line[2:] for line in block.group(1).splitlines() if line.startswith("$ ")]


@pytest.fixture
def shell(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Run one README line with bash in a scratch folder that sees the repository's examples."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "roadcheck"  # the roadcheck of the interpreter running the tests
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m roadcheck "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name in ("ROADCHECK_IDENTITY", "ROADCHECK_ROLE", "ROADCHECK_EVIDENCE_KEY",
                 "ROADCHECK_EVIDENCE_KEY_FILE"):
        env.pop(name, None)

    def run(line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True,
                              text=True, check=False)

    run.work = work  # type: ignore[attr-defined]
    return run


def test_readme_sequence_finishes_the_doc_pipeline(shell) -> None:  # type: ignore[no-untyped-def]
    """Writer (exit 3), reviewer as someone else (exit 3), writer (exit 0), verify and audit."""
    lines = _readme_lines()
    assert len(lines) == 4
    outs = [shell(line) for line in lines]
    assert [o.returncode for o in outs] == [3, 3, 0, 0], [o.stderr for o in outs]
    assert all(o.stderr == "" for o in outs)
    # each printed next command is the README's next line, up to the identity slot
    hint = outs[0].stdout.split("next   : ", 1)[1].splitlines()[0]
    assert hint.replace("SOMEONE_OTHER_THAN_alice", "bob") == lines[1]
    hint = outs[1].stdout.split("next   : ", 1)[1].splitlines()[0]
    assert f"{hint} --identity alice" == lines[2]
    assert "status : completed (exit 0)" in outs[2].stdout
    assert "evidence demo: OK" in outs[3].stdout
    assert (shell.work / "audit.html").is_file()


def test_same_identity_as_reviewer_is_refused_and_recorded(shell) -> None:  # type: ignore[no-untyped-def]
    """alice resuming as reviewer: exit 1, and the audit shows the refusal."""
    first, second = _readme_lines()[:2]
    assert shell(first).returncode == 3
    refused = shell(second.replace("--identity bob", "--identity alice"))
    assert refused.returncode == 1
    assert "role-guard-refused" not in refused.stderr
    assert "refused: identity 'alice' produced 'summarize'" in refused.stdout
    audit = shell("roadcheck audit demo")
    assert audit.returncode == 0
    assert "review attempt 1 REFUSED [role-guard]" in audit.stdout
