"""The distribution as the package index would take it: built, checked, and what it holds."""

from __future__ import annotations

import email.parser
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built from the working tree with the installed backend."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                    str(ROOT)], check=True, capture_output=True)
    return out


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("*.whl")
    return wheel


def _sdist(dist: Path) -> Path:
    (sdist,) = dist.glob("*.tar.gz")
    return sdist


def _metadata(dist: Path) -> email.message.Message:
    with zipfile.ZipFile(_wheel(dist)) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(zf.read(name).decode())


class TestDistribution:
    def test_twine_check_passes(self, dist: Path) -> None:
        """``twine check --strict`` accepts the sdist and the wheel, long description included."""
        done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                               str(_sdist(dist)), str(_wheel(dist))],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.count("PASSED") == 2

    def test_the_wheel_is_pure_python_and_named_roadcheck(self, dist: Path) -> None:
        """One wheel for every platform, holding only the ``roadcheck`` package: no native
        code, no other top-level package."""
        wheel = _wheel(dist)
        assert wheel.name.startswith("roadcheck-") and wheel.name.endswith("-py3-none-any.whl")
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
        tops = {n.split("/")[0] for n in names}
        assert {t for t in tops if not t.endswith(".dist-info")} == {"roadcheck"}
        assert "roadcheck/py.typed" in names
        assert not [n for n in names if n.endswith((".c", ".so", ".pyd"))]

    def test_metadata_names_the_project(self, dist: Path) -> None:
        """Name, licence file, authors, classifiers, URLs, keywords and the two entry
        points (the console script and the pytest plugin) are in the metadata."""
        meta = _metadata(dist)
        assert meta["Name"] == "roadcheck"
        assert meta["License-Expression"] == "MIT"
        assert meta["License-File"] == "LICENSE"
        assert meta["Author"]
        assert meta["Keywords"]
        assert "Typing :: Typed" in meta.get_all("Classifier")
        urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
        assert {"Homepage", "Source", "Issues", "Documentation", "Changelog"} <= urls.keys()
        with zipfile.ZipFile(_wheel(dist)) as zf:
            (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt")]
            entry_points = zf.read(name).decode()
            assert any(n.endswith(".dist-info/licenses/LICENSE") for n in zf.namelist())
        assert "roadcheck = roadcheck.__main__:main" in entry_points
        assert "roadcheck = roadcheck.pytest_plugin" in entry_points

    def test_long_description_links_resolve_off_the_repository(self, dist: Path) -> None:
        """Every link of the README given to the index is absolute or an anchor: a relative
        link has no repository to resolve against on the index page."""
        meta = _metadata(dist)
        assert meta["Description-Content-Type"] == "text/markdown"
        body = meta.get_payload()
        assert isinstance(body, str) and body.startswith("# roadcheck")
        links = re.findall(r"\]\(([^)\s]+)\)", body)
        assert links
        assert [link for link in links if not link.startswith(("https://", "http://", "#"))] == []
        # each absolute link into the repository names a file that exists in it
        base = "https://github.com/roadcheck/roadcheck/blob/main/"
        missing = [link for link in links if link.startswith(base)
                   and not (ROOT / link[len(base):].split("#")[0]).exists()]
        assert missing == []

    def test_the_sdist_holds_what_a_build_and_the_docs_need(self, dist: Path) -> None:
        """The sdist builds the package and runs the docs' commands (examples, the recorded
        tau runs with their licences), and holds no test it could not run."""
        with tarfile.open(_sdist(dist)) as tf:
            names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
        for needed in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md",
                       "src/roadcheck/__init__.py", "docs/formats.md", "examples/spec.json",
                       "tests/data/tau/taubench/gpt-4o-airline.json.gz"):
            assert needed in names, needed
        assert not [n for n in names if n.startswith("tests/") and n.endswith(".py")]
        assert not [n for n in names if n.endswith((".c", ".so"))]
        licences = [n for n in names if n.startswith("tests/data/tau/") and "LICENSE" in n.upper()]
        assert licences


class TestWorkflows:
    def _load(self, name: str) -> dict[str, object]:
        import yaml

        doc = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text(encoding="utf-8"))
        assert isinstance(doc, dict)
        return doc

    def test_release_publishes_on_a_tag_with_trusted_publishing(self) -> None:
        """The release workflow runs on version tags, builds and checks both files, and
        publishes with an OIDC token (trusted publishing), never a stored password."""
        doc = self._load("release.yml")
        assert doc[True]["push"]["tags"] == ["v*"]  # YAML reads the key `on` as True
        jobs = doc["jobs"]
        assert isinstance(jobs, dict)
        steps = " ".join(str(s.get("run", "")) for s in jobs["build"]["steps"])
        assert "python -m build" in steps and "twine check --strict" in steps
        publish = jobs["publish"]
        assert publish["permissions"] == {"id-token": "write"}
        (step,) = publish["steps"][1:]
        assert step["uses"].startswith("pypa/gh-action-pypi-publish@")
        assert "with" not in step or "password" not in step["with"]

    def test_the_suite_runs_on_three_systems(self) -> None:
        """The test workflow's matrix covers Linux, macOS and Windows."""
        matrix = self._load("test.yml")["jobs"]["test"]["strategy"]["matrix"]  # type: ignore[index]
        assert set(matrix["os"]) == {"ubuntu-latest", "macos-latest", "windows-latest"}
