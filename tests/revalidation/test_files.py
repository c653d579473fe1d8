"""Artifacts are regular files; relative paths stay in the checkpoint's folder; no hang.

Every case that could hang on a broken reader runs the CLI in a subprocess with
a time limit, so a hang fails the test instead of blocking the suite.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from roadcheck.revalidation import revalidate

from .conftest import NOW, Site, sha

LIMIT = 20


def _cli(path: Path) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "roadcheck", "revalidate", str(path), "--now", NOW,
                           "--format", "json"], capture_output=True, text=True, timeout=LIMIT,
                          check=False)
    assert proc.returncode in (0, 1), proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return proc.returncode, doc


def _finding(doc: dict[str, Any], question: str) -> list[tuple[str, str]]:
    return [(f["code"], f["message"]) for f in doc["findings"] if f["question"] == question]


def _media(site: Site, path: str, **extra: Any) -> dict[str, Any]:
    return {"final_media": {"path": path, "expect": {"min_bytes": 1}, **extra}}


class TestNotRegular:
    """A FIFO, a device or a link to one is an invalid artifact that escalates."""

    @pytest.mark.parametrize("make", ["fifo", "link-to-socket", "absolute-socket"])
    def test_refused_and_escalated(self, site: Site, make: str) -> None:
        """The artifact is refused with its kind named, and the decision is escalate."""
        target = site.root / "build" / "final.mp4"
        target.unlink()
        path = "build/final.mp4"
        if make == "fifo":
            os.mkfifo(target)
        else:  # a socket outside the site, linked to or named by its absolute path
            sock = site.root.parent / f"{site.root.name}.sock"
            with socket.socket(socket.AF_UNIX) as server:
                server.bind(str(sock))
            if make == "link-to-socket":
                target.symlink_to(sock)
            else:
                path = str(sock)
        code, doc = _cli(site.write(artifacts=_media(site, path, digest=sha(site.media))))
        assert code == 1 and doc["decision"] == "escalate"
        [(reason, message)] = _finding(doc, "artifacts")
        assert reason == "artifact-not-regular"
        assert ("named pipe" if make == "fifo" else "a socket") in message

    def test_format_check_never_opens_a_fifo(self, site: Site) -> None:
        """An artifact with an expected format that is a FIFO is refused, not parsed."""
        target = site.root / "build" / "meta.json"
        os.mkfifo(target)
        arts = {"meta": {"path": "build/meta.json", "expect": {"format": "json"}}}
        code, doc = _cli(site.write(artifacts=arts))
        assert code == 1
        assert _finding(doc, "artifacts")[0][0] == "artifact-not-regular"

    def test_directory_with_a_fifo_member(self, site: Site) -> None:
        """A directory artifact whose tree holds a FIFO is refused, not hashed forever."""
        seg = site.root / "build" / "segments"
        seg.mkdir()
        (seg / "seg01.ts").write_bytes(b"x")
        os.mkfifo(seg / "seg02.ts")
        arts = {"segments": {"path": "build/segments",
                             "expect": {"members": {"glob": "seg*.ts", "count": 2}}}}
        code, doc = _cli(site.write(artifacts=arts))
        assert code == 1
        [(reason, message)] = _finding(doc, "artifacts")
        assert reason == "artifact-not-regular" and "seg02.ts" in message

    def test_fifo_input_is_not_read(self, site: Site) -> None:
        """An input that is a FIFO makes the inputs unusable instead of hanging."""
        os.mkfifo(site.root / "src.txt")
        _, doc = _cli(site.write(inputs=["src.txt"]))
        [message] = [m for c, m in _finding(doc, "artifacts") if c == "inputs-changed"]
        assert "src.txt" in message and "named pipe" in message

    def test_fifo_ledger_is_no_answer(self, site: Site) -> None:
        """A ledger that is a FIFO gives no answer: reconcile first, no hang."""
        (site.root / "ledger.jsonl").unlink()
        os.mkfifo(site.root / "ledger.jsonl")
        effs = {"upload": {"state": "attempted", "idempotency_key": "job/upload",
                           "ledger": "ledger.jsonl"}}
        code, doc = _cli(site.write(external_effects=effs))
        assert code == 1
        assert _finding(doc, "effects")[0][0] == "effect-unknown"
        assert "named pipe" in _finding(doc, "effects")[0][1]

    def test_fifo_spent_file_is_unknown(self, site: Site) -> None:
        """A budget's spent_file that is a FIFO is an unknown budget, no hang."""
        os.mkfifo(site.root / "spent.txt")
        code, doc = _cli(site.write(budgets={"minutes": {"limit": 10,
                                                         "spent_file": "spent.txt"}}))
        assert code == 1
        assert "budget-unknown" in [c for c, _ in _finding(doc, "allowed")]


class TestRoots:
    """A relative artifact path may not leave the checkpoint's folder; an absolute one may."""

    def test_dotdot_escape_is_refused(self, site: Site) -> None:
        """``../x`` that leaves the folder is refused even when the file is fine."""
        outside = site.root.parent / f"{site.root.name}-outside.bin"
        outside.write_bytes(site.media)
        try:
            rv = revalidate(site.write(artifacts=_media(site, f"../{outside.name}")), now=NOW)
        finally:
            outside.unlink()
        [finding] = [f for f in rv.findings if f.question == "artifacts"]
        assert finding.code == "artifact-outside-root"
        assert rv.decision == "escalate"

    def test_symlink_leaving_the_folder_is_refused(self, site: Site) -> None:
        """A link inside the folder to a file outside it is refused."""
        outside = site.root.parent / f"{site.root.name}-target.bin"
        outside.write_bytes(site.media)
        try:
            (site.root / "build" / "final.mp4").unlink()
            (site.root / "build" / "final.mp4").symlink_to(outside)
            rv = revalidate(site.write(), now=NOW)
        finally:
            outside.unlink()
        assert [f.code for f in rv.findings if f.question == "artifacts"] == [
            "artifact-outside-root"]

    def test_absolute_path_elsewhere_is_allowed(self, site: Site) -> None:
        """An absolute path names its file wherever it is."""
        outside = site.root.parent / f"{site.root.name}-abs.bin"
        outside.write_bytes(site.media)
        try:
            rv = revalidate(site.write(artifacts=_media(site, str(outside),
                                                        digest=sha(site.media))), now=NOW)
        finally:
            outside.unlink()
        assert [f.code for f in rv.findings if f.question == "artifacts"] == ["artifact-valid"]
        assert rv.decision == "continue"

    def test_dotdot_inside_the_folder_is_fine(self, site: Site) -> None:
        """``build/../build/final.mp4`` stays inside and is read."""
        rv = revalidate(site.write(artifacts=_media(site, "build/../build/final.mp4")), now=NOW)
        assert [f.code for f in rv.findings if f.question == "artifacts"] == ["artifact-valid"]

    def test_next_checkpoint_elsewhere_writes_absolute_paths(self, site: Site) -> None:
        """A next checkpoint in a subfolder names files outside it by absolute path."""
        (site.root / "later").mkdir()
        revalidate(site.write(), now=NOW, write_next=site.root / "later" / "cp.yaml")
        doc = yaml.safe_load((site.root / "later" / "cp.yaml").read_text())
        media = doc["artifacts"]["final_media"]["path"]
        assert os.path.isabs(media) and Path(media) == (site.root / "build/final.mp4").resolve()
        assert revalidate(site.root / "later" / "cp.yaml", now=NOW).decision == "continue"


class TestExamples:
    """The shipped resume examples still read the same."""

    @pytest.mark.parametrize("name", ["video", "chain"])
    def test_examples_have_no_refused_artifact(self, name: str) -> None:
        """No artifact of an example is refused by the file rules."""
        root = Path(__file__).resolve().parents[2] / "examples" / "resume" / name
        rv = revalidate(root / "checkpoint.yaml", now=NOW)
        codes = {f.code for f in rv.findings}
        assert not codes & {"artifact-not-regular", "artifact-outside-root"}
        assert any(f.code == "artifact-valid" for f in rv.findings)


class TestUnusablePaths:
    """A path the file system refuses (a name too long) is judged, never a crash."""

    LONG = "x" * 5000

    def test_blocker_file_that_cannot_be_checked_is_active(self, site: Site) -> None:
        """Whether a blocker file exists cannot be told: the blocker counts as active."""
        path = site.write(blockers=[{"name": "pause", "file": self.LONG}])
        code, doc = _cli(path)
        assert code == 1 and doc["decision"] == "escalate"
        [(reason, message)] = _finding(doc, "allowed")[-1:]
        assert reason == "blocker-active" and "cannot tell" in message

    def test_member_glob_that_cannot_be_counted_is_a_mismatch(self, site: Site) -> None:
        """A members glob the file system refuses counts nothing: the artifact is invalid."""
        media = _media(site, "build/final.mp4")
        media["final_media"]["expect"]["members"] = {"glob": self.LONG, "count": 1}
        _, doc = _cli(site.write(artifacts=media))
        [(reason, message)] = _finding(doc, "artifacts")
        assert reason == "artifact-members-mismatch" and "cannot count" in message
