"""Guard sessions kept in memory between calls, each saved durably before its call is answered.

A :class:`ResidentStore` wraps a :class:`~roadcheck.guard.store.GuardStore` and
offers the same :meth:`~ResidentStore.session` block, for a process that answers
many calls (``roadcheck guard daemon``, ``roadcheck guard serve``). The first call of
a session reads and checks it from disk as the store always does; later calls use
the guard held in memory, and on leaving the block the store saves what the call
added exactly as for a short-lived hook process: the decisions in the log
(committed, ``synchronous=FULL``), the state file when events were observed (fsync,
rename, fsync the directory), the head beside the key. So the answer goes out only
once it is on disk, and a daemon killed at any moment loses nothing it answered.

Each call still takes the session's file lock, so a hook process that runs the
same session at the same time (the in-process fallback) takes turns with the
daemon. Whether anyone else wrote the session since this process last saved it
is told by its files' status (inode, size, modification and change times, the
last of which no one can set back): when any differs, the session is read and
checked from disk again, as on a first call. A block that raises drops the
session from memory, so nothing half-done survives it (the next call reads the
disk).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roadcheck.guard import files
from roadcheck.guard.store import _LOCK, _LOG, STATE, GuardSession, GuardStore, _Stored

__all__ = ["MAX_SESSIONS", "ResidentStore"]

#: How many sessions are held in memory at most; the least recently used is let go
#: (it is on disk: its next call reads it again).
MAX_SESSIONS = 256

_WATCHED = (STATE, _LOG, f"{_LOG}-wal")


def _status(paths: list[Path]) -> tuple[Any, ...]:
    out: list[Any] = []
    for path in paths:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            out.append(None)
        else:
            out.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(out)


@dataclass
class _Held:
    stored: _Stored
    live: GuardSession
    watched: list[Path]
    status: tuple[Any, ...] = ()


class ResidentStore:
    """The sessions of ``store``, held in memory between calls (see the module docstring).

    Safe for threads: calls for one session take turns, calls for different
    sessions do not wait for each other.
    """

    def __init__(self, store: GuardStore, *, max_sessions: int = MAX_SESSIONS) -> None:
        self.store = store
        self.max_sessions = max_sessions
        self._held: OrderedDict[str, _Held] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @property
    def spec(self) -> Any:
        """The spec the sessions are checked against."""
        return self.store.spec

    def exists(self, session: str) -> bool:
        """True when the session has stored state."""
        return self.store.exists(session)

    def _lock_for(self, session: str) -> threading.Lock:
        with self._guard:
            lock = self._locks.get(session)
            if lock is None:
                lock = self._locks[session] = threading.Lock()
            return lock

    def _load(self, session: str, where: Path, create: bool) -> _Held:
        store = self.store
        stored = _Stored(store.sealer, store.heads, where, session, store.spec_sha256,
                         shared=True)
        try:
            live = store.opened(stored, session, create)
        except BaseException:
            stored.close()
            raise
        watched = [where / name for name in _WATCHED]
        if store.heads is not None:
            watched.append(store.heads.path(session))
        return _Held(stored, live, watched)

    def _drop(self, session: str) -> None:
        with self._guard:
            held = self._held.pop(session, None)
        if held is not None:
            held.stored.close()

    def _keep(self, session: str, held: _Held) -> None:
        with self._guard:
            self._held[session] = held
            self._held.move_to_end(session)
            extra = len(self._held) - self.max_sessions
            # the least recently used, unless a call holds it now (it is kept a while longer)
            gone = [name for name in list(self._held)[:max(extra, 0)]
                    if not self._locks[name].locked()]
            let_go = [self._held.pop(name) for name in gone]
        for old in let_go:
            old.stored.close()

    @contextlib.contextmanager
    def session(self, session: str, *, create: bool = False) -> Iterator[GuardSession]:
        """Lock a session, yield its guard, then log its decisions and save what changed
        (durable before the block's caller answers); the contract of
        :meth:`GuardStore.session`."""
        where = self.store._dir(session)
        with self._lock_for(session):
            files.make_dir(where)
            fd = files.lock(where / _LOCK)
            try:
                with self._guard:
                    held = self._held.get(session)
                if held is not None and _status(held.watched) != held.status:
                    self._drop(session)  # written by someone else: read and check it again
                    held = None
                if held is None:
                    held = self._load(session, where, create)
                try:
                    yield held.live
                    held.stored.save(held.live)
                except BaseException:
                    self._drop(session)
                    held.stored.close()
                    raise
                held.live.settled()
                held.status = _status(held.watched)
                self._keep(session, held)
            finally:
                os.close(fd)

    def close(self) -> None:
        """Let every session go (each is on disk already)."""
        with self._guard:
            held, self._held = list(self._held.values()), OrderedDict()
        for one in held:
            one.stored.close()
