"""Replay is a pipeline: documents -> ingest -> conformance -> report -> cli, no way back.

Read from the source (every import statement, at the top or inside a function), so a
lazy import that climbs the pipeline is found as surely as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "roadcheck"

#: the pipeline, lowest first; a module may import its own layer and those below it
PIPELINE = ("documents", "ingest", "conformance", "report", "cli")


def _layer(module: str) -> int | None:
    """The pipeline position of a ``roadcheck`` module (``roadcheck.cli`` as a module or
    a package), or None for a module outside the pipeline."""
    parts = module.split(".")
    if parts[0] != "roadcheck" or len(parts) < 2 or parts[1] not in PIPELINE:
        return None
    return PIPELINE.index(parts[1])


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement of the file names, with its line."""
    package = _name(path) if path.name == "__init__.py" else _name(path).rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # a relative import, resolved against the file's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # `from roadcheck import report` names a module through its package
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def climbs(path: Path) -> list[str]:
    """The imports of one file that name a module above the file's own layer."""
    own = _layer(_name(path))
    if own is None:
        return []
    found = []
    for line, module in _imports(path):
        layer = _layer(module)
        if layer is not None and layer > own:
            found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} "
                         f"({PIPELINE[layer]})")
    return found


class TestPipeline:
    def test_no_module_imports_one_above_it(self) -> None:
        """documents < ingest < conformance < report < cli: nothing imports upward."""
        found = [line for path in sorted(PACKAGE.rglob("*.py")) for line in climbs(path)]
        assert found == []

    @pytest.mark.parametrize(("where", "source", "found"), [
        ("ingest/x.py", "from roadcheck.report.replay import render\n", True),
        ("ingest/x.py", "def f():\n    import roadcheck.conformance.engine\n", True),
        ("conformance/x.py", "from roadcheck import report\n", True),
        ("documents/x.py", "from ..ingest import native\n", True),
        ("report/x.py", "from roadcheck.conformance.result import ReplayResult\n", False),
        ("cli/x.py", "from roadcheck.report import ci\n", False),
        ("ingest/x.py", "from roadcheck.documents import spec\n", False),
    ])
    def test_the_check_finds_a_climbing_import(self, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch, where: str,
                                               source: str, found: bool) -> None:
        """The reading finds an upward import at the top, in a function, through a
        package and relative; an import downward or sideways is not one."""
        fake = tmp_path / "roadcheck"
        path = fake / where
        path.parent.mkdir(parents=True)
        path.write_text(source, encoding="utf-8")
        monkeypatch.setitem(globals(), "PACKAGE", fake)
        assert bool(climbs(path)) is found
