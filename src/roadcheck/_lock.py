"""An exclusive lock on an open file, held until the descriptor is closed.

On POSIX systems it is ``flock``; on Windows ``msvcrt.locking`` on the file's first
byte. The platform module is imported when a lock is taken, never when roadcheck is
imported, so every module imports on every platform.
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["lock"]

#: how long a waiting lock sleeps between tries on Windows, where the lock call
#: itself gives up after ten tries of a second
_POLL = 0.005


def lock(fd: int, *, wait: bool = True) -> bool:
    """Take the exclusive lock on ``fd``: True once held, False when another holder
    has it and ``wait`` is False. Closing the descriptor releases it."""
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            except OSError:
                if not wait:
                    return False
                time.sleep(_POLL)
            else:
                return True
    else:
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        return True
