"""Where the guard keeps its state and its key: the user's directories, outside the project.

The agent a guard watches can write the project it works in, so nothing the guard
relies on lives there by default:

* the **state directory** (sessions, decision logs, the spec cache) is the user's
  state directory: ``$XDG_STATE_HOME/roadcheck/guard``, else
  ``~/.local/state/roadcheck/guard`` (Linux, macOS), ``%LOCALAPPDATA%\\roadcheck\\guard``
  (Windows). ``--state-dir`` or ``ROADCHECK_GUARD_STATE_DIR`` names another.
* the **key** that authenticates that state is in the user's configuration
  directory, beside nothing the state directory holds:
  ``$XDG_CONFIG_HOME/roadcheck/guard.key``, else ``~/.config/roadcheck/guard.key``,
  ``%APPDATA%\\roadcheck\\guard.key``. ``--key-file`` or ``ROADCHECK_GUARD_KEY_FILE``
  names another; ``--no-key`` or ``ROADCHECK_GUARD_NO_KEY=1`` runs without one.

>>> env = {"XDG_STATE_HOME": "/s", "XDG_CONFIG_HOME": "/c"}
>>> str(default_state_dir(env, "linux")), str(default_key_path(env, "linux"))
('/s/roadcheck/guard', '/c/roadcheck/guard.key')
>>> str(default_state_dir({"HOME": "/home/ann"}, "darwin"))
'/home/ann/.local/state/roadcheck/guard'
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path, PurePath, PureWindowsPath

__all__ = ["ENV_KEY_FILE", "ENV_NO_KEY", "ENV_SIGN_KEY_FILE", "ENV_STATE_DIR", "default_key_path",
           "default_state_dir", "heads_dir", "no_key_requested", "state_dir"]

ENV_STATE_DIR = "ROADCHECK_GUARD_STATE_DIR"
ENV_KEY_FILE = "ROADCHECK_GUARD_KEY_FILE"
ENV_NO_KEY = "ROADCHECK_GUARD_NO_KEY"
#: A PEM Ed25519 private key that signs every session's decision log (see
#: :mod:`roadcheck.guard.signed`).
ENV_SIGN_KEY_FILE = "ROADCHECK_GUARD_SIGN_KEY_FILE"
_APP = "roadcheck"


def _home(env: Mapping[str, str]) -> str:
    home = env.get("HOME") or env.get("USERPROFILE")
    return home if home else os.path.expanduser("~")


def _user_dir(env: Mapping[str, str], platform: str, xdg: str, fallback: tuple[str, ...],
              windows: str) -> PurePath:
    if platform == "win32":
        base = env.get(windows) or os.path.join(_home(env), "AppData",
                                                 "Local" if windows == "LOCALAPPDATA"
                                                 else "Roaming")
        return PureWindowsPath(base, _APP)
    value = env.get(xdg)
    if value and os.path.isabs(value):  # a relative XDG value is to be ignored (the spec)
        return Path(value, _APP)
    return Path(_home(env), *fallback, _APP)


def default_state_dir(env: Mapping[str, str] | None = None,
                      platform: str | None = None) -> PurePath:
    """The user's state directory for the guard (see the module docstring)."""
    env = os.environ if env is None else env
    return _user_dir(env, platform or sys.platform, "XDG_STATE_HOME", (".local", "state"),
                     "LOCALAPPDATA") / "guard"


def default_key_path(env: Mapping[str, str] | None = None,
                     platform: str | None = None) -> PurePath:
    """The user's guard key file (see the module docstring)."""
    env = os.environ if env is None else env
    return _user_dir(env, platform or sys.platform, "XDG_CONFIG_HOME", (".config",),
                     "APPDATA") / "guard.key"


def state_dir(given: str | os.PathLike[str] | None = None,
              env: Mapping[str, str] | None = None) -> Path:
    """The state directory to use: ``given``, else ``$ROADCHECK_GUARD_STATE_DIR``, else the
    user's (:func:`default_state_dir`)."""
    env = os.environ if env is None else env
    if given is not None:
        return Path(given)
    named = env.get(ENV_STATE_DIR)
    return Path(named) if named else Path(default_state_dir(env))


def no_key_requested(env: Mapping[str, str] | None = None) -> bool:
    """True when ``ROADCHECK_GUARD_NO_KEY`` asks for a guard without a key."""
    env = os.environ if env is None else env
    return env.get(ENV_NO_KEY, "").strip().lower() not in ("", "0", "false", "no")


def heads_dir(key_path: str | os.PathLike[str]) -> Path:
    """Where the sessions' heads are kept: beside the key (``guard.key`` -> ``guard.heads``)."""
    path = Path(key_path)
    stem = path.name[:-4] if path.name.endswith(".key") else path.name
    return path.with_name(f"{stem}.heads")
