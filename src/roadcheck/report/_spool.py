"""Where a streamed report's bytes wait until the report is written: in memory while they
are few, in an anonymous temporary file once they pass :data:`IN_MEMORY`.

A report of a few files (the usual run) never creates a file, nor imports
:mod:`tempfile` (some 4 ms of a start); a large batch holds at most
:data:`IN_MEMORY` bytes of a spool in memory, so its memory stays flat.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import IO, Any

__all__ = ["IN_MEMORY", "Spool", "copy_range"]

#: The bytes a spool holds in memory before it moves them to a temporary file.
IN_MEMORY = 1 << 20

#: The block size spooled bytes are copied out in.
_BLOCK = 1 << 20


class Spool:
    """Bytes appended in order, then read back: the lines, or a range copied out."""

    __slots__ = ("_file", "_memory")

    def __init__(self) -> None:
        self._memory = bytearray()
        self._file: IO[bytes] | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Append ``data``."""
        if self._file is not None:
            self._file.write(data)
            return
        self._memory += data
        if len(self._memory) > IN_MEMORY:
            self._spill()

    def _spill(self) -> IO[bytes]:
        """Move the bytes held in memory to a temporary file, from now on the spool."""
        if self._file is None:
            import tempfile

            self._file = tempfile.TemporaryFile("w+b")  # noqa: SIM115 - closed by close()
            self._file.write(self._memory)
            self._memory = bytearray()
        return self._file

    def size(self) -> int:
        """How many bytes were appended."""
        if self._file is None:
            return len(self._memory)
        self._file.flush()
        return os.fstat(self._file.fileno()).st_size

    def lines(self) -> Iterator[bytes]:
        """The bytes appended, line by line (each with its newline)."""
        if self._file is None:
            return iter(bytes(self._memory).splitlines(keepends=True))
        self._file.flush()
        self._file.seek(0)
        return iter(self._file)

    def copy(self, offset: int, length: int, write: Callable[[bytes], Any],
             digest: Any = None) -> None:
        """Give ``length`` bytes from ``offset`` to ``write`` in blocks (and to ``digest``)."""
        if self._file is None:
            view = memoryview(self._memory)
            for at in range(offset, offset + length, _BLOCK):
                block = bytes(view[at:min(at + _BLOCK, offset + length)])
                if digest is not None:
                    digest.update(block)
                write(block)
            return
        self._file.flush()
        copy_range(self._file.fileno(), offset, length, write, digest)

    def close(self) -> None:
        """Drop the bytes (and the temporary file)."""
        self._memory = bytearray()
        if self._file is not None:
            self._file.close()


def copy_range(fd: int, offset: int, length: int, write: Callable[[bytes], Any],
               digest: Any = None) -> None:
    """Give ``length`` bytes at ``offset`` of descriptor ``fd`` to ``write`` in blocks, and
    to ``digest`` as they go."""
    while length:
        chunk = os.pread(fd, min(length, _BLOCK), offset)
        if not chunk:
            raise OSError(f"a spooled file ended early ({length} bytes short)")
        offset += len(chunk)
        length -= len(chunk)
        if digest is not None:
            digest.update(chunk)
        write(chunk)
