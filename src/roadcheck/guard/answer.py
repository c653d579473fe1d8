"""One seam for every hook adapter: a hook's payload in, the adapter's output and exit code out.

Each coding agent's hook has an adapter module (``roadcheck guard claude-code`` is
:mod:`roadcheck.guard.claude_code`), registered in :data:`ADAPTERS`. An adapter
module offers:

* ``parse_args(args) -> dict | None``: the command's options (``spec``,
  ``state_dir``, ``key_file``, ``no_key``, ``approver`` and its own), or None for a
  command line only the click CLI answers;
* ``run_hook(payload, spec, state_dir, *, open_store=None, **options) -> HookAnswer``:
  the answer (``stdout``, ``stderr``, ``exit``); it never raises, any failure denies;
  ``open_store`` returns the store to keep sessions in (default: a
  :class:`~roadcheck.guard.store.GuardStore` opened for the one call).

:func:`answer` is what the hook process and ``roadcheck guard daemon`` both call:
the process with no ``stores`` (the sessions are read from disk and saved each
call), the daemon with its :class:`Stores` (the sessions stay in memory, see
:mod:`roadcheck.guard.resident`).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["ADAPTERS", "Answer", "Stores", "adapter", "answer", "deny"]

#: Hook adapters by command name: ``roadcheck guard NAME``.
ADAPTERS: dict[str, str] = {"claude-code": "roadcheck.guard.claude_code"}
_EXIT_BLOCK = 2


@dataclass(frozen=True, slots=True)
class Answer:
    """What the hook process writes and how it exits; ``fallback``: the caller should
    answer the call itself (in process), nothing was decided here."""

    stdout: bytes
    stderr: bytes
    exit: int
    fallback: str = ""


def deny(reason: str) -> Answer:
    """The deny every adapter's process can give: exit code 2, the reason on standard error."""
    return Answer(b"", f"roadcheck guard: denied: {reason}\n".encode(), _EXIT_BLOCK)


def adapter(name: str) -> Any:
    """The adapter module of ``roadcheck guard NAME``; KeyError for an unknown name."""
    return importlib.import_module(ADAPTERS[name])


_STORE_KEYS = ("spec", "state_dir", "key_file", "no_key", "approver")


def answer(name: str, args: list[str], payload: bytes, stores: Stores | None = None,
           cwd: str | None = None) -> Answer:
    """Answer ``payload`` as ``roadcheck guard NAME ARGS`` would; never raises.

    ``cwd``: the directory the hook ran in, for relative paths in ``args``.
    A command line the adapter does not take as plain (``--help``, a bad option)
    answers ``fallback``: the click CLI says what is wrong with it.
    """
    try:
        module = adapter(name)
    except KeyError:
        return Answer(b"", b"", _EXIT_BLOCK, f"no adapter {name!r} here")
    try:
        options = module.parse_args(_absolute(args, cwd) if cwd is not None else args)
        if options is None:
            return Answer(b"", b"", _EXIT_BLOCK, "a command line for the click CLI")
        rest = dict(options)
        spec, state_dir = rest.pop("spec"), rest.pop("state_dir")
        open_store = None
        if stores is not None:
            def open_store() -> Any:
                return stores.get(options)
        hook = module.run_hook(payload, spec, state_dir, open_store=open_store, **rest)
        return Answer(hook.stdout.encode(), hook.stderr.encode(), hook.exit)
    except Exception as exc:  # fail closed: a bug in the seam must not let the call run
        return deny(f"internal error: {type(exc).__name__}: {exc}")


#: The options whose value is a path, shared by every adapter's command.
PATH_OPTIONS = ("--spec", "--state-dir", "--key-file")


def _absolute(args: list[str], cwd: str) -> list[str]:
    """``args`` with the value of each path option made absolute against ``cwd``."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in PATH_OPTIONS and eq:
            arg = f"{name}={os.path.join(cwd, value)}"
        elif arg in PATH_OPTIONS and i + 1 < len(args):
            out.append(arg)
            i += 1
            arg = os.path.join(cwd, args[i])
        out.append(arg)
        i += 1
    return out


def _file_status(path: str) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Stores:
    """The resident stores of a process that answers many calls, one per spec and store
    options, each checked against its spec file on every call.

    A spec file whose status changed is read again: the same bytes keep the store;
    other bytes replace it (its sessions are read from disk again, under the new spec,
    which is how a session under a changed spec always starts). Safe for threads.
    """

    def __init__(self) -> None:
        self._stores: dict[tuple[Any, ...], tuple[Any, tuple[int, ...] | None, str]] = {}
        self._lock = threading.Lock()

    def get(self, options: dict[str, Any]) -> Any:
        """The resident store for these options (raises what GuardStore raises)."""
        from roadcheck.guard.resident import ResidentStore
        from roadcheck.guard.store import GuardStore

        key = tuple(options.get(k) for k in _STORE_KEYS)
        spec = str(options["spec"])
        status = _file_status(spec)
        with self._lock:
            found = self._stores.get(key)
        if found is not None and status is not None and found[1] == status:
            return found[0]
        digest = _digest(spec)
        if found is not None and digest is not None and found[2] == digest:
            with self._lock:
                self._stores[key] = (found[0], status, digest)
            return found[0]
        store = ResidentStore(GuardStore(options.get("state_dir"), spec,
                                         approver=options.get("approver"),
                                         key_file=options.get("key_file"),
                                         no_key=bool(options.get("no_key"))))
        with self._lock:
            # a replaced store is let go, not closed: a call may be using it still
            self._stores[key] = (store, status, store.store.spec.sha256 or "")
        return store

    def close(self) -> None:
        """Let every session go (each is on disk already)."""
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for store, _, _ in stores:
            store.close()


def _digest(path: str) -> str | None:
    from roadcheck._files import read_regular

    try:
        return hashlib.sha256(read_regular(path)).hexdigest()  # a FIFO is refused
    except OSError:
        return None
