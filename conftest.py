"""What every test and doctest sees: the user's state and config directories moved into a
temporary directory (so the guard never writes the real ``~/.local/state`` or
``~/.config``, and no hook command starts the guard daemon), and, for the doctests of
``src/roadcheck``, ``examples``, the repository's examples, and ``tmp``, a fresh
directory of the example's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

#: Where the guard looks for its state directory and key, by platform; each is pointed
#: into a temporary directory for every test.
_USER_DIRS = ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "LOCALAPPDATA", "APPDATA")
_GUARD_ENV = ("ROADCHECK_GUARD_STATE_DIR", "ROADCHECK_GUARD_KEY_FILE", "ROADCHECK_GUARD_NO_KEY")


@pytest.fixture(scope="session")
def _user_dirs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("user-dirs")


@pytest.fixture(autouse=True)
def _isolated_user_dirs(_user_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's state and config directories, and the guard's variables, for this test."""
    for name in _USER_DIRS:
        monkeypatch.setenv(name, str(_user_dirs / name.lower()))
    for name in _GUARD_ENV:
        monkeypatch.delenv(name, raising=False)
    # a hook command run by a test answers in process and starts no daemon, unless the
    # test asks for one on a socket of its own (tests/guard/test_daemon.py)
    monkeypatch.setenv("ROADCHECK_GUARD_DAEMON", "0")
    monkeypatch.delenv("ROADCHECK_GUARD_SOCKET", raising=False)


@pytest.fixture(autouse=True)
def _examples_for_doctests(doctest_namespace: dict[str, Any], tmp_path: Path) -> None:
    doctest_namespace["examples"] = Path(__file__).resolve().parent / "examples"
    doctest_namespace["tmp"] = tmp_path
