"""sha256 in hex, without loading OpenSSL for a few bytes.

:mod:`hashlib` loads OpenSSL as it is imported, which costs a short command more
than all the hashing it does: the spec's digest and a report of a few files. The
interpreter's own sha256 (the one :mod:`hashlib` itself falls back to) costs
nothing to load and is slower per byte, so what stays under :data:`SMALL` bytes is
hashed there and anything larger by :mod:`hashlib`. The digest is the same either
way; where the interpreter was built without its own sha256, :mod:`hashlib` hashes
everything.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any, cast

__all__ = ["SMALL", "Sha256", "sha256_hex"]

#: Bytes hashed without OpenSSL: below this the loading costs more than the hashing saves.
SMALL = 1 << 19

_UNSET: Any = object()
_BUILTIN: Any = _UNSET


def _builtin() -> Callable[[bytes], Any] | None:
    """The interpreter's own sha256 constructor (``_sha2`` from 3.12, ``_sha256`` before),
    or None where it was built without it."""
    global _BUILTIN
    if _BUILTIN is _UNSET:
        _BUILTIN = None
        for name in ("_sha2", "_sha256"):
            try:
                _BUILTIN = import_module(name).sha256
            except (ImportError, AttributeError):
                continue
            break
    return cast("Callable[[bytes], Any] | None", _BUILTIN)


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data``, as 64 lowercase hex digits."""
    small = _builtin() if len(data) <= SMALL else None
    if small is not None:
        return str(small(data).hexdigest())
    import hashlib

    return hashlib.sha256(data).hexdigest()


class Sha256:
    """An incremental sha256 (``update``, ``hexdigest``): the bytes are held until they
    pass :data:`SMALL`, then handed to :mod:`hashlib` with everything after them."""

    __slots__ = ("_hash", "_held")

    def __init__(self) -> None:
        self._held = bytearray()
        self._hash: Any = None

    def update(self, data: bytes) -> None:
        """Add ``data``."""
        if self._hash is not None:
            self._hash.update(data)
            return
        self._held += data
        if len(self._held) > SMALL:
            import hashlib

            self._hash = hashlib.sha256(self._held)
            self._held = bytearray()

    def hexdigest(self) -> str:
        """The digest of everything added, as 64 lowercase hex digits."""
        if self._hash is not None:
            return str(self._hash.hexdigest())
        return sha256_hex(bytes(self._held))
