"""The approval state an asked ``tools/call`` carries back: MAC-protected, bound, spent once.

When the proxy asks a person to approve a call (a 2026-07-28 ``InputRequiredResult``),
it hands the client a ``requestState`` token the client echoes on its retry::

    roadcheck-guard/1.<base64url payload>.<hex HMAC-SHA256>

The payload (JSON) binds the approval to the JSON-RPC method, the tool, the
arguments' digest (``args_sha256``), the principal who may give it, the guard
session, a nonce and an expiry. The MAC is computed under the guard key (see
:mod:`roadcheck.guard.seal`, kept outside the state directory), or, when the
guard runs without one, under a random key that lives only in the proxy's memory.

:meth:`Approvals.open` answers what the echoed token is worth: ``forged``
(not a token, or a MAC that does not verify: refused), or ``stale`` (expired,
already spent, minted for another session, another call or other arguments:
asked again), or the binding itself when it holds. A nonce is spent on its first
successful use, so a replayed token never licenses a second call.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import time
from dataclasses import dataclass
from typing import Literal

import orjson

__all__ = ["PREFIX", "Approvals", "Binding", "Opened"]

#: Every token this proxy mints starts with it; any other ``requestState`` is the upstream's.
PREFIX = "roadcheck-guard/1."


@dataclass(frozen=True, slots=True)
class Binding:
    """What an approval is for."""

    method: str
    tool: str
    args_sha256: str
    principal: str
    session: str


@dataclass(frozen=True, slots=True)
class Opened:
    """An echoed token judged: ``ok`` (its binding holds), ``stale`` or ``forged``, and why."""

    status: Literal["ok", "stale", "forged"]
    why: str = ""


class Approvals:
    """Mints and checks approval tokens for one guard session."""

    def __init__(self, key: bytes | None, session: str, *, ttl: float = 120.0) -> None:
        self._key = hashlib.sha256(b"roadcheck-mcp-approval\0" + (key or os.urandom(32))
                                   ).digest()
        self.session = session
        self.ttl = ttl
        self._spent: set[str] = set()

    def _mac(self, payload: bytes) -> str:
        return hmac.new(self._key, payload, hashlib.sha256).hexdigest()

    def mint(self, binding: Binding, now: float | None = None) -> str:
        """A fresh token for ``binding``, valid for ``ttl`` seconds."""
        at = time.time() if now is None else now
        payload = orjson.dumps({"m": binding.method, "t": binding.tool,
                                "a": binding.args_sha256, "p": binding.principal,
                                "s": binding.session, "n": os.urandom(12).hex(),
                                "x": round(at + self.ttl, 3)}, option=orjson.OPT_SORT_KEYS)
        body = base64.urlsafe_b64encode(payload).decode().rstrip("=")
        return f"{PREFIX}{body}.{self._mac(payload)}"

    def open(self, token: str, binding: Binding, now: float | None = None) -> Opened:
        """Judge an echoed token against the call it comes back with (spends it when ok)."""
        rest = token[len(PREFIX):] if token.startswith(PREFIX) else ""
        body, _, mac = rest.rpartition(".")
        try:
            payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except ValueError:
            return Opened("forged", "the approval state is not one this guard minted")
        if not body or not hmac.compare_digest(self._mac(payload), mac):
            return Opened("forged", "the approval state does not verify (forged or altered)")
        doc = orjson.loads(payload)
        at = time.time() if now is None else now
        checks = (
            (doc.get("s") == binding.session, "it was given in another session"),
            (doc.get("m") == binding.method and doc.get("t") == binding.tool,
             "it approves another call"),
            (doc.get("a") == binding.args_sha256,
             "the arguments changed since it was given"),
            (doc.get("p") == binding.principal, "it names another principal"),
            (isinstance(doc.get("x"), (int, float)) and at <= doc["x"], "it expired"),
            (doc.get("n") not in self._spent, "it was used already"),
        )
        for holds, why in checks:
            if not holds:
                return Opened("stale", why)
        self._spent.add(doc["n"])
        return Opened("ok")
