"""roadcheck imports on every platform: nothing at import time needs a POSIX-only module."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "roadcheck"

#: modules that exist on Linux and macOS but not on Windows
POSIX_ONLY = ("fcntl", "termios", "pwd", "grp", "resource", "tty", "pty")


def _module_level_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """The modules a file imports when it is imported: its top level, and the
    bodies of top-level ``if``/``try`` blocks, not function bodies."""
    found: list[tuple[int, str]] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module.split(".")[0]))
        elif isinstance(node, ast.If | ast.With):
            pending += node.body + getattr(node, "orelse", [])
        elif isinstance(node, ast.Try):
            pending += node.body + node.orelse + node.finalbody
            for handler in node.handlers:
                pending += handler.body
    return found


class TestImports:
    def test_no_module_imports_a_posix_only_module_at_import_time(self) -> None:
        """No module of the package imports fcntl, termios, pwd and the like when it is
        imported; a function that needs one imports it where it runs."""
        offenders = []
        for path in sorted(PACKAGE.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            offenders += [f"{path.relative_to(PACKAGE)}:{line}: {name}"
                          for line, name in _module_level_imports(tree) if name in POSIX_ONLY]
        assert offenders == []

    def test_every_module_imports_without_posix_only_modules(self) -> None:
        """With fcntl, termios, pwd, grp, resource, tty and pty unimportable, as on
        Windows, every module of the package imports. The framework adapters are left
        out (the AST test above covers them): Ray and the Agents SDK import fcntl
        themselves on POSIX systems."""
        script = textwrap.dedent(f"""
            import importlib, pkgutil, sys
            for name in {POSIX_ONLY!r}:
                sys.modules[name] = None
            import roadcheck
            names = [m.name for m in pkgutil.walk_packages(roadcheck.__path__, "roadcheck.")]
            for name in names:
                if not name.startswith("roadcheck.integrations."):
                    importlib.import_module(name)
            print(len(names))
        """)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, check=False)
        assert done.returncode == 0, done.stderr
        assert int(done.stdout) > 50

    @pytest.mark.parametrize("wait", [True, False])
    def test_the_lock_is_exclusive_across_processes(self, tmp_path: Path, wait: bool) -> None:
        """A lock held by one process is refused to another that does not wait, and
        given to it once the holder closes the descriptor."""
        from roadcheck._lock import lock

        path = tmp_path / "x.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            assert lock(fd, wait=wait)
            probe = ("import os, sys; from roadcheck._lock import lock; "
                     "fd = os.open(sys.argv[1], os.O_RDWR); print(lock(fd, wait=False))")
            held = subprocess.run([sys.executable, "-c", probe, str(path)],
                                  capture_output=True, text=True, check=True)
            assert held.stdout.strip() == "False"
        finally:
            os.close(fd)
        free = subprocess.run([sys.executable, "-c", probe, str(path)],
                              capture_output=True, text=True, check=True)
        assert free.stdout.strip() == "True"
