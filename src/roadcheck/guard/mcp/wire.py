"""JSON-RPC as the proxy reads it: one message checked with the SDK's wire types.

A message from the client is parsed (orjson) and validated against the SDK's
``JSONRPCMessage`` (:mod:`mcp_types.jsonrpc`) before anything is forwarded: a
line that is not one JSON-RPC message is answered with an error and never
reaches the upstream. Which protocol a request speaks, and whether its client
can be asked (form elicitation), come from the ``initialize`` handshake
(2025-11-25 and earlier) or from the request's own ``_meta`` (2026-07-28).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["Client", "Malformed", "error", "parse", "response"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"


class Malformed(Exception):
    """Not one JSON-RPC message; ``answer`` is the error response to send (None: no id)."""

    def __init__(self, message: str, answer: dict[str, Any] | None) -> None:
        super().__init__(message)
        self.answer = answer


def error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def response(msg_id: Any, result: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-RPC result response."""
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def parse(raw: bytes) -> dict[str, Any]:
    """One JSON-RPC message, validated by the SDK's wire types; else :class:`Malformed`."""
    from mcp_types.jsonrpc import jsonrpc_message_adapter
    from pydantic import ValidationError

    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise Malformed(f"not JSON: {exc}", error(None, PARSE_ERROR, "parse error")) from None
    msg_id = doc.get("id") if isinstance(doc, dict) else None
    if not isinstance(doc, dict):
        raise Malformed("not one JSON-RPC message (a batch or a scalar)",
                        error(None, INVALID_REQUEST, "invalid request: one JSON-RPC "
                              "message per line"))
    try:
        jsonrpc_message_adapter.validate_python(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        notification = "id" not in doc and "method" in doc  # is answered by nothing
        raise Malformed(f"invalid JSON-RPC message ({where}: {first.get('msg')})",
                        None if notification else
                        error(msg_id if isinstance(msg_id, (str, int)) else None,
                              INVALID_REQUEST, "invalid request")) from None
    return doc


@dataclass
class Client:
    """What the client declared at ``initialize`` (2025-11-25 and earlier)."""

    protocol: str | None = None
    can_elicit: bool = False

    def initialized(self, params: Any) -> None:
        """Note the client's ``initialize`` request."""
        if isinstance(params, Mapping):
            version = params.get("protocolVersion")
            self.protocol = version if isinstance(version, str) else None
            caps = params.get("capabilities")
            self.can_elicit = _form_elicitation(caps)

    def of(self, params: Any) -> tuple[bool, bool]:
        """``(modern, can_elicit)`` for a request: 2026-07-28 per request, else the handshake."""
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        version = meta.get(_VERSION_KEY) if isinstance(meta, Mapping) else None
        if version in _modern() and self.protocol is None:
            return True, _form_elicitation(meta.get(_CAPS_KEY))  # type: ignore[union-attr]
        return False, self.can_elicit


def _modern() -> tuple[str, ...]:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return MODERN_PROTOCOL_VERSIONS


def _form_elicitation(caps: Any) -> bool:
    """True when the capabilities declare form elicitation (``{}`` means form, as the spec says)."""
    elicit = caps.get("elicitation") if isinstance(caps, Mapping) else None
    if not isinstance(elicit, Mapping):
        return False
    return not elicit or "form" in elicit
