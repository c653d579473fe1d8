"""Every shell block in README.md and docs/ runs as written and prints what it shows.

The marker convention and the substitutions are described in
scripts/refresh_docs_output.py, which this test shares; after an intended
output change, ``.venv/bin/python scripts/refresh_docs_output.py`` rewrites
the shown outputs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import ROOT, load_script

docrun: ModuleType = load_script(ROOT / "scripts" / "refresh_docs_output.py")

RUN_BLOCKS, MARKER_PROBLEMS = docrun.run_blocks(docrun.doc_files())


@pytest.fixture(scope="module")
def sandbox() -> Iterator[object]:
    with docrun.Sandbox() as box:
        yield box


def _doc(tmp_path: Path, text: str, name: str = "page.md") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


class TestDocsRun:
    def test_every_shell_block_carries_a_marker(self) -> None:
        """No shell block in README or docs/ is left unmarked or wrongly marked."""
        assert not MARKER_PROBLEMS, (
            "\n".join(MARKER_PROBLEMS)
            + "\nsee scripts/refresh_docs_output.py for <!-- run -->, <!-- synopsis -->, "
            "<!-- norun: REASON -->")

    def test_the_docs_are_covered(self) -> None:
        """README and each framework page hold at least one run block, so the check bites."""
        where = {b.path.relative_to(ROOT).as_posix() for b in RUN_BLOCKS}
        pages = ["README.md", "docs/formats.md", "docs/audit-tau.md", "docs/accept.md",
                 "docs/revalidate.md", "docs/harness.md", "docs/transcripts.md", "docs/recipes.md",
                 *(f"docs/frameworks/{p.name}" for p in (ROOT / "docs/frameworks").glob("*.md"))]
        assert not [p for p in pages if p not in where]

    @pytest.mark.parametrize("block", RUN_BLOCKS, ids=[b.where for b in RUN_BLOCKS])
    def test_block_prints_what_it_shows(self, block: object, sandbox: object) -> None:
        """The block's commands exit as marked and print the output shown under them."""
        outcome = docrun.check_block(block, sandbox)
        assert outcome.ok, (f"the block at {block.where} drifted\n"
                            + "\n".join(outcome.problems) + "\n" + docrun.REFRESH_HINT)


class TestMarkers:
    def test_unmarked_shell_blocks_are_reported(self, tmp_path: Path) -> None:
        """A console block and a bare fence without a marker are problems; a text block is not."""
        path = _doc(tmp_path, "```console\n$ ls\n```\n\n```\nroadcheck x\n```\n\n```text\nx\n```\n")
        _, problems = docrun.parse(path)
        assert [p.split(": ")[0].rsplit(":", 1)[1] for p in problems] == ["1", "5"]
        assert all("without a marker" in p for p in problems)

    def test_norun_needs_a_reason(self, tmp_path: Path) -> None:
        """<!-- norun --> alone is refused; with a reason it is accepted."""
        bare = _doc(tmp_path, "<!-- norun -->\n```console\n$ make\n```\n", "a.md")
        reasoned = _doc(tmp_path, "<!-- norun: installs -->\n```console\n$ make\n```\n", "b.md")
        assert "needs a reason" in docrun.parse(bare)[1][0]
        assert docrun.parse(reasoned)[1] == []

    @pytest.mark.parametrize(("text", "problem"), [
        ("<!-- run -->\n```json\n$ ls\n```\n", "is a ```console block"),
        ("<!-- run: exit=1,2 -->\n```console\n$ ls\n```\n", "gives 2 codes for 1 commands"),
        ("<!-- run: retries=2 -->\n```console\n$ ls\n```\n", "unknown run option"),
        ("<!-- run -->\n```console\nhello\n$ ls\n```\n", "output before the first"),
        ("<!-- run -->\n```console\n```\n", "at least one '$ ' command"),
        ("<!-- synopsis: x -->\n```\nroadcheck\n```\n", "takes no options"),
    ])
    def test_bad_markers_are_reported(self, tmp_path: Path, text: str, problem: str) -> None:
        """Each malformed run or synopsis marker is named with its problem."""
        (found,) = docrun.parse(_doc(tmp_path, text))[1]
        assert problem in found

    def test_commands_continuations_and_exits(self, tmp_path: Path) -> None:
        """'$ ' lines start commands, a trailing backslash continues one, exit= is per command."""
        path = _doc(tmp_path, "<!-- run: exit=1,0 -->\n```console\n$ a \\\n    b\nout 1\n"
                              "out 2\n$ c\n```\n")
        (block,), problems = docrun.parse(path)
        assert problems == []
        assert [(c.text, c.expected) for c in block.commands] == [
            ("a \\\n    b", ["out 1", "out 2"]), ("c", [])]
        assert block.exits == [1, 0]


class TestMatching:
    @pytest.mark.parametrize(("pattern", "ok"), [
        (["a", "b", "c", "d"], True),
        (["a", "...", "d"], True),
        (["...", "c", "d"], True),
        (["a", "..."], True),
        (["...", "b", "..."], True),
        (["...", "b", "c", "..."], True),
        (["a", "...", "c", "...", "d"], True),
        (["...", "x", "..."], False),
        (["a", "b", "c"], False),
        (["b", "..."], False),
        (["...", "c"], False),
        (["...", "c", "b", "..."], False),
    ])
    def test_ellipsis_stands_for_any_lines(self, pattern: list[str], ok: bool) -> None:
        """'...' matches zero or more lines; everything else is compared line by line."""
        assert docrun.matches(pattern, ["a", "b", "c", "d"]) is ok

    def test_only_what_must_vary_is_masked(self) -> None:
        """The evidence head's hash and run ids are masked; a report hash is not."""
        assert docrun.matches(["head : 4 records, last 0123456789abcdef"],
                              ["head : 4 records, last fedcba9876543210"])
        assert docrun.matches(["run 20260711T031405Z-a1b2c3"], ["run 20270101T000000Z-ffffff"])
        assert not docrun.matches(["report-sha256: 3c03df99"], ["report-sha256: 3c03df98"])
        assert not docrun.matches(["at 2026-08-10T15:00:00Z"], ["at 2026-08-10T15:00:01Z"])

    def test_projection_keeps_the_elisions(self) -> None:
        """A refreshed excerpt keeps its head, tail and excerpt positions with fresh lines."""
        actual = ["h1", "x", "mid NEW", "mid 2", "y", "t1"]
        assert docrun.project(["h0", "...", "mid NEW", "mid 1", "...", "t0"], actual) == [
            "h1", "...", "mid NEW", "mid 2", "...", "t1"]
        assert docrun.project(["...", "gone", "..."], actual) is None


class TestRunning:
    def test_commands_run_in_a_copy_that_is_fresh_for_each_block(self, tmp_path: Path) -> None:
        """Files written by a block stay in its copy; the next block starts clean."""
        (tmp_path / "seed.txt").write_text("seed\n")
        page = _doc(tmp_path, "<!-- run -->\n```console\n$ echo hi > new.txt\n"
                              "$ cat new.txt seed.txt\nhi\nseed\n```\n\n"
                              "<!-- run: exit=1 -->\n```console\n$ test -e new.txt\n```\n")
        first, second = docrun.parse(page)[0]
        with docrun.Sandbox(tmp_path) as box:
            assert docrun.check_block(first, box).ok
            outcome = docrun.check_block(second, box)
        assert outcome.ok, outcome.problems
        assert not (tmp_path / "new.txt").exists()

    def test_exit_codes_are_checked_and_kept_for_the_next_command(self, tmp_path: Path) -> None:
        """A wrong exit code is a problem; '$ echo $?' sees the previous command's code."""
        page = _doc(tmp_path, "<!-- run -->\n```console\n$ (exit 3)\n$ echo $?\n3\n```\n")
        (block,) = docrun.parse(page)[0]
        with docrun.Sandbox(tmp_path) as box:
            outcome = docrun.check_block(block, box)
        assert outcome.exits == [3, 0]
        assert outcome.outputs == [[], ["3"]]
        (problem,) = outcome.problems
        assert "exit code 3, the block says 0" in problem

    def test_a_block_that_hangs_is_stopped_and_reported(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A command still running at the timeout is killed and named, not waited for."""
        monkeypatch.setattr(docrun, "TIMEOUT", 1)
        page = _doc(tmp_path, "<!-- run -->\n```console\n$ echo a\na\n$ sleep 30\n```\n")
        (block,) = docrun.parse(page)[0]
        with docrun.Sandbox(tmp_path) as box:
            outcome = docrun.check_block(block, box)
        assert outcome.exits == [0, docrun.NO_EXIT]
        (problem,) = outcome.problems
        assert "$ sleep 30\n  did not finish within 1 s" in problem

    def test_roadcheck_is_this_interpreters_script(self, tmp_path: Path) -> None:
        """'roadcheck' resolves to the script beside sys.executable, not to whatever PATH has."""
        page = _doc(tmp_path, "<!-- run -->\n```console\n$ command -v roadcheck\n```\n")
        (block,) = docrun.parse(page)[0]
        with docrun.Sandbox(tmp_path) as box:
            outputs, _ = docrun.execute(block, box)
        assert outputs == [[os.path.join(os.path.dirname(sys.executable), "roadcheck")]]

    def test_the_copy_path_prints_as_a_fixed_path(self, tmp_path: Path) -> None:
        """The copy's absolute path is shown as /path/to/roadcheck."""
        page = _doc(tmp_path,
                    "<!-- run -->\n```console\n$ echo $PWD/x\n/path/to/roadcheck/x\n```\n")
        (block,) = docrun.parse(page)[0]
        with docrun.Sandbox(tmp_path) as box:
            assert docrun.check_block(block, box).ok


class TestRefresh:
    def test_refresh_rewrites_only_what_drifted(self, tmp_path: Path) -> None:
        """Drifted outputs and exit codes are rewritten; matching blocks stay byte for byte."""
        text = ("# Page\n\n<!-- run -->\n```console\n$ printf 'one\\ntwo\\n'\none\nTWO\n"
                "$ (exit 2)\n```\n\ntext\n\n<!-- run -->\n```console\n$ echo same  \nsame\n```\n\n"
                "  <!-- run -->\n  ```console\n  $ seq 1 5\n  1\n  ...\n  9\n  ```\n")
        page = _doc(tmp_path, text)
        blocks, _ = docrun.parse(page)
        with docrun.Sandbox(tmp_path) as box:
            outcomes = [docrun.check_block(b, box) for b in blocks]
            message = outcomes[0].problems
            assert [o.ok for o in outcomes] == [False, True, False]
            assert docrun.refresh(outcomes) == []
            after = page.read_text()
            assert after == text.replace("<!-- run -->\n```console\n$ printf",
                                         "<!-- run: exit=0,2 -->\n```console\n$ printf").replace(
                "TWO", "two").replace("  9\n", "  5\n")
            assert all(docrun.check_block(b, box).ok for b in docrun.parse(page)[0])
        assert f"{page}:5: $ printf" in message[0]
        assert "-TWO\n+two" in message[0]

    def test_refresh_refuses_a_lost_excerpt(self, tmp_path: Path) -> None:
        """An excerpt that is no longer printed is left for a person to edit."""
        page = _doc(tmp_path, "<!-- run -->\n```console\n$ echo a\n...\nb\n...\n```\n")
        (block,) = docrun.parse(page)[0]
        with docrun.Sandbox(tmp_path) as box:
            stuck = docrun.refresh([docrun.check_block(block, box)])
        assert "edit this block by hand" in stuck[0]
