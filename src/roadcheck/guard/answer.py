"""One seam for every hook adapter: a hook's payload in, the adapter's output and exit code out.

Each coding agent's hook has an adapter (:mod:`roadcheck.guard.hooks`,
:mod:`roadcheck.guard.adapters`), answered by :func:`roadcheck.guard.hooks.run`,
which opens the session in a store: by default a
:class:`~roadcheck.guard.store.GuardStore` for the one call, or whatever its
``open_store`` returns.

:func:`answer` is that, from a hook command line: what ``roadcheck guard daemon``
calls for each hook call it is sent, with its :class:`Stores` (the sessions stay in
memory, see :mod:`roadcheck.guard.resident`); without stores it is the hook
process's own path.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["Answer", "Stores", "answer", "deny"]

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
    """Exit code 2 with the reason on standard error (how most CLIs are told to stop)."""
    return Answer(b"", f"roadcheck guard: denied: {reason}\n".encode(), _EXIT_BLOCK)


_STORE_KEYS = ("spec", "state_dir", "key_file", "no_key", "approver")


def answer(name: str, args: list[str], payload: bytes, stores: Stores | None = None,
           cwd: str | None = None) -> Answer:
    """Answer ``payload`` as ``roadcheck guard NAME ARGS`` would; never raises.

    ``cwd``: the directory the hook ran in, for relative paths in ``args``. A command
    line the adapter does not take as plain (``--help``, a bad option), or an unknown
    ``NAME``, answers ``fallback``: the click CLI says what is wrong with it.
    """
    from roadcheck.guard import hooks

    if name not in hooks.ADAPTERS:
        return Answer(b"", b"", _EXIT_BLOCK, f"no adapter {name!r} here")
    adapter = None
    try:
        from roadcheck.guard.claude_code import parse_args

        adapter = hooks.load(name)
        given, shown = _absolute(args, cwd) if cwd is not None else (args, {})
        options = parse_args(given) if name == "claude-code" else parse_args(
            given, adapter.options)
        if options is None:
            return Answer(b"", b"", _EXIT_BLOCK, "a command line for the click CLI")
        open_store = None
        if stores is not None:
            def open_store() -> Any:
                return stores.get(options)
        found = hooks.run(adapter, payload, options["spec"], options["state_dir"],
                          approver=options["approver"], grant=options["grant"],
                          catch_up=options["catch_up"], key_file=options["key_file"],
                          no_key=options["no_key"], open_store=open_store, shown=shown,
                          contract=options.get("contract"),
                          max_reprompts=options.get("max_reprompts"))
        return Answer(found.stdout.encode(), found.stderr.encode(), found.exit)
    except Exception as exc:  # fail closed: a bug in the seam must not let the call run
        reason = f"internal error: {type(exc).__name__}: {exc}"
        try:
            if adapter is not None:
                failed = adapter.fail(reason)
                return Answer(failed.stdout.encode(), failed.stderr.encode(), failed.exit)
        except Exception:
            pass
        return deny(reason)


#: The options whose value is a path, shared by every adapter's command.
PATH_OPTIONS = ("--spec", "--state-dir", "--key-file")


def _absolute(args: list[str], cwd: str) -> tuple[list[str], dict[str, str]]:
    """``args`` with the value of each path option made absolute against ``cwd``, and the
    values as given (``spec``, ``state_dir``), which the messages show."""
    out: list[str] = []
    given: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in PATH_OPTIONS and eq:
            given[name[2:].replace("-", "_")] = value
            arg = f"{name}={os.path.join(cwd, value)}"
        elif arg in PATH_OPTIONS and i + 1 < len(args):
            out.append(arg)
            i += 1
            given[arg[2:].replace("-", "_")] = args[i]
            arg = os.path.join(cwd, args[i])
        out.append(arg)
        i += 1
    given.pop("key_file", None)
    return _absolute_contract(out, cwd), given


def _absolute_contract(args: list[str], cwd: str) -> list[str]:
    """``--contract FILE`` made absolute against ``cwd`` (a ``builtin:NAME`` stays)."""
    out = list(args)
    for i, arg in enumerate(out):
        name, eq, value = arg.partition("=")
        if name == "--contract" and eq and not value.startswith("builtin:"):
            out[i] = f"--contract={os.path.join(cwd, value)}"
        elif (arg == "--contract" and i + 1 < len(out)
              and not out[i + 1].startswith("builtin:")):
            out[i + 1] = os.path.join(cwd, out[i + 1])
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
