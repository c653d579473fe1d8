"""Params through ``roadcheck run``: checked before anything runs, paths read as documented."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import EXAMPLES

Build = Callable[..., dict[str, Any]]
WriteWorkflow = Callable[..., Path]

#: Copies the file named by argv[2] into the artifact argv[1].
COPIES = "import shutil, sys\nshutil.copy(sys.argv[2], sys.argv[1])\n"


def _roadcheck(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roadcheck", *args], cwd=cwd, capture_output=True,
                          text=True, check=False)


class TestRequiredParam:
    """A declared param without a default must be given, or nothing happens at all."""

    def test_doc_pipeline_without_doc_exits_2_and_writes_nothing(self, tmp_path: Path) -> None:
        """The README's workflow without --param doc: one line, exit 2, no run directory."""
        out = _roadcheck("run", str(EXAMPLES / "doc_pipeline" / "workflow.yaml"), "--as", "writer",
                     "--identity", "alice", cwd=tmp_path)
        assert out.returncode == 2
        assert out.stdout == ""
        assert out.stderr == ("error[bad-input]: workflow 'doc_pipeline' needs param(s) doc: "
                              "pass --param doc=VALUE\n")
        assert list(tmp_path.iterdir()) == []  # not even runs/

    def test_required_param_checked_before_any_producer(self, tmp_path: Path, phase: Build,
                                                        workflow_file: WriteWorkflow,
                                                        script: Callable[[str, str], str]
                                                        ) -> None:
        """A producer that would leave a mark never runs; the runs directory stays empty."""
        mark = tmp_path / "ran"
        prod = script("marks.py", f"open({str(mark)!r}, 'w').write('x')\n")
        make = phase("make")
        make["producer"] = ["{python}", prod, "{ticket}"]
        path = workflow_file(make, params={"ticket": {"description": "the issue"}})
        runs = tmp_path / "runs"
        runs.mkdir()
        out = _roadcheck("run", str(path), "--as", "writer", "--runs-dir", str(runs),
                     cwd=tmp_path)
        assert out.returncode == 2
        assert "needs param(s) ticket: pass --param ticket=VALUE" in out.stderr
        assert not mark.exists()
        assert list(runs.iterdir()) == []


class TestRelativePathParam:
    """A param is text; a relative path in it is read from where ``roadcheck run`` was started."""

    @pytest.fixture
    def layout(self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow,
               script: Callable[[str, str], str]) -> tuple[Path, Path]:
        """A workflow folder and a separate working folder, each with its own ``in.txt``."""
        make = phase("make", gate={"command": ["{python}", "-c", "pass"]})
        make["producer"] = ["{python}", script("copies.py", COPIES), "{artifact}", "{doc}"]
        path = workflow_file(make, params={"doc": {"description": "a file to copy"}})
        path.with_name("in.txt").write_text("beside the workflow")
        work = tmp_path / "work"
        work.mkdir()
        (work / "in.txt").write_text("in the working directory")
        return path, work

    def test_relative_param_resolves_against_the_working_directory(
            self, layout: tuple[Path, Path]) -> None:
        """``--param doc=in.txt`` copies the working directory's file, not the workflow's."""
        path, work = layout
        out = _roadcheck("run", str(path), "--as", "writer", "--identity", "alice",
                     "--run-id", "r", "--param", "doc=in.txt", cwd=work)
        assert out.returncode == 0, out.stderr
        assert (work / "runs" / "r" / "make.txt").read_text() == "in the working directory"
        manifest = json.loads((work / "runs" / "r" / "run.json").read_text())
        assert manifest["params"] == {"doc": "in.txt"}  # kept as given: text, never rewritten

    def test_spec_dir_template_reads_beside_the_workflow(
            self, layout: tuple[Path, Path], tmp_path: Path) -> None:
        """Writing ``{spec_dir}/{doc}`` in the workflow makes the param relative to its folder."""
        path, work = layout
        doc = json.loads(path.read_text())
        doc["phases"][0]["producer"][-1] = "{spec_dir}/{doc}"
        path.write_text(json.dumps(doc))
        out = _roadcheck("run", str(path), "--as", "writer", "--identity", "alice",
                     "--run-id", "r", "--param", "doc=in.txt", cwd=work)
        assert out.returncode == 0, out.stderr
        assert (work / "runs" / "r" / "make.txt").read_text() == "beside the workflow"

    def test_the_docs_say_so(self) -> None:
        """docs/harness.md states what a relative path in a param resolves against."""
        text = " ".join((EXAMPLES.parent / "docs" / "harness.md").read_text().split())
        assert ("a relative path in a param resolves against the directory `roadcheck run` "
                "is started from") in text
