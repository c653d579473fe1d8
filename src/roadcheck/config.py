"""Project defaults from ``[tool.roadcheck]`` in ``pyproject.toml``, found from a directory upward.

::

    [tool.roadcheck]
    spec = "specs/replay.yaml"   # the spec assert_conforms and the pytest fixture use
    runs_dir = "runs"            # --runs-dir of run, worker, audit and evidence verify
    format = "github"            # --format of replay, accept and revalidate

The first ``pyproject.toml`` with a ``[tool.roadcheck]`` table, from the start
directory up to the file system root, is the one read; paths in it are
relative to its directory. A flag given on the command line always wins. An
unknown key or a value of the wrong kind is an :class:`~roadcheck.errors.InputError`
naming the file, the line and the key (exit 2).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from roadcheck.errors import InputError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["FORMATS", "Config", "find_config"]

#: The values ``format`` may take; ``html`` only applies to replay.
FORMATS = ("text", "json", "junit", "sarif", "github", "html")
_KEYS = ("spec", "runs_dir", "format")
_RUNS_DIR_COMMANDS = ("run", "submit", "worker", "audit")
_FORMAT_COMMANDS = ("replay", "accept", "revalidate")


class Config(NamedTuple):
    """The ``[tool.roadcheck]`` settings; ``source`` is the file they came from (None: none found).

    A named tuple: every configured command builds one, and defining a dataclass would
    cost each of them more than reading its settings."""

    source: Path | None = None
    spec: Path | None = None
    runs_dir: Path | None = None
    format: str | None = None

    def default_map(self) -> dict[str, Any]:
        """The settings as click defaults per command; a flag given still overrides them."""
        out: dict[str, Any] = {}
        if self.runs_dir is not None:
            for name in _RUNS_DIR_COMMANDS:
                out[name] = {"runs_dir": str(self.runs_dir)}
            out["evidence"] = {"verify": {"runs_dir": str(self.runs_dir)}}
        if self.format is not None:
            for name in _FORMAT_COMMANDS:
                if self.format != "html" or name == "replay":
                    out.setdefault(name, {})["fmt"] = self.format
        return out


def _line_of(text: str, key: str) -> int | None:
    """The line of ``key = ...`` inside the ``[tool.roadcheck]`` table, for the error message."""
    inside = False
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped.replace(" ", "") == "[tool.roadcheck]"
        elif inside and re.match(rf"[\"']?{re.escape(key)}[\"']?\s*=", stripped):
            return n
    return None


def _parse(path: Path, text: str, table: Any) -> Config:
    name = str(path)
    if not isinstance(table, dict):
        raise InputError("tool.roadcheck must be a table", path=name,
                         line=_line_of(text, "roadcheck"))
    for key in table:
        if key not in _KEYS:
            raise InputError(f"unknown key tool.roadcheck.{key} (known: {', '.join(_KEYS)})",
                             path=name, line=_line_of(text, key))
    for key, value in table.items():
        if not isinstance(value, str) or not value:
            raise InputError(f"tool.roadcheck.{key} must be a non-empty string, got {value!r}",
                             path=name, line=_line_of(text, key))
    fmt = table.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"tool.roadcheck.format must be one of {', '.join(FORMATS)}, got {fmt!r}",
                         path=name, line=_line_of(text, "format"))
    base = path.parent
    spec, runs_dir = table.get("spec"), table.get("runs_dir")
    return Config(path, base / spec if spec else None, base / runs_dir if runs_dir else None,
                  fmt)


def find_config(start: str | Path | None = None) -> Config:
    """The ``[tool.roadcheck]`` settings nearest ``start`` (default: the current directory)."""
    # os.path, not pathlib: every configured command starts here, and pathlib (with the
    # urllib.parse it imports) would add to each command's start-up
    here = os.path.realpath(start if start is not None else os.getcwd())
    while True:
        path = os.path.join(here, "pyproject.toml")
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                if "tool.roadcheck" in text or "[tool]" in text:
                    import tomllib

                    doc = tomllib.loads(text)
                else:
                    doc = {}  # the common case, without parsing the file
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read: {exc}", path=path) from None
            except ValueError as exc:  # tomllib.TOMLDecodeError, imported only when needed
                raise InputError(f"not valid TOML: {exc}", path=path) from None
            tool = doc.get("tool")
            if isinstance(tool, dict) and "roadcheck" in tool:
                from pathlib import Path

                return _parse(Path(path), text, tool["roadcheck"])
        parent = os.path.dirname(here)
        if parent == here:
            return Config()
        here = parent
