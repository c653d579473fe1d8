"""The repository holds everything its tests, benchmarks and documented commands read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import ROOT

#: Ways a path can leave the repository: a sibling folder named by a relative
#: path, or a path built from the repository root's parent.
OUTSIDE = re.compile(r"\.\./shared|\bROOT\.parent\b|[\"']shared[\"']|parents\[[3-9]\]")

#: Relative links inside the docs (``../examples/...``) point back into the repo.
DOC_LINK = re.compile(r"\]\(\.\./")


def _sources() -> list[Path]:
    found = [*ROOT.glob("tests/**/*.py"), *ROOT.glob("benchmarks/*.py"),
             *ROOT.glob("scripts/*.py"), ROOT / ".ci" / "run"]
    return sorted(p for p in found if p.resolve() != Path(__file__).resolve())


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))]


class TestSelfContained:
    """Nothing the test command or the docs run reads lives outside the repository."""

    @pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
    def test_code_reads_inside(self, path: Path) -> None:
        """No test, benchmark, script or CI step names a path outside the repository."""
        hits = [f"{n}: {line.strip()}"
                for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                if OUTSIDE.search(line)]
        assert not hits, hits

    @pytest.mark.parametrize("path", _docs(), ids=lambda p: str(p.relative_to(ROOT)))
    def test_docs_commands_read_inside(self, path: Path) -> None:
        """README and docs run their commands on files inside the repository."""
        hits = [f"{n}: {line.strip()}"
                for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                if "../" in DOC_LINK.sub("", line)]
        assert not hits, hits

    def test_recorded_runs_carry_their_licence(self) -> None:
        """Each folder of recorded runs keeps its LICENSE beside the data."""
        runs = sorted((ROOT / "tests" / "data" / "tau").glob("*/*.json.gz"))
        assert len(runs) == 2
        for data in runs:
            licence = data.parent / "LICENSE"
            assert licence.is_file(), data
            assert licence.read_text(encoding="utf-8").startswith("MIT License")

    def test_the_patterns_catch_what_they_guard(self) -> None:
        """The checks above do fire on the forms a path outside the repo takes."""
        for line in ['SHARED = ROOT.parent / "shared" / "data"',
                     "roadcheck replay spec.yaml ../shared/data/x.json",
                     "ROOT = Path(__file__).resolve().parents[3]"]:
            assert OUTSIDE.search(line), line
        assert "../" in DOC_LINK.sub("", "cat ../data/x")
        assert "../" not in DOC_LINK.sub("", "see [x](../examples/x.yaml)")

    def test_recorded_runs_match_their_listed_digests(self) -> None:
        """The compressed runs decompress to the documents whose digests their README lists."""
        import gzip
        import hashlib

        folder = ROOT / "tests" / "data" / "tau"
        listed = re.findall(r"^    ([0-9a-f]{64})  (\S+)$",
                            (folder / "README.md").read_text(encoding="utf-8"), flags=re.M)
        assert len(listed) == 2
        for digest, name in listed:
            data = gzip.decompress((folder / f"{name}.gz").read_bytes())
            assert hashlib.sha256(data).hexdigest() == digest, name
