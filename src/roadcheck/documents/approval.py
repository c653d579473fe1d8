"""A signed approval: the approver's Ed25519 signature over the one call it approves.

Carried by a checkpoint event as ``approval`` (its ``confirmed_by`` is the
signing key's id), made by ``roadcheck guard approve --key``, and checked by
:mod:`roadcheck.evidence.approval` wherever a rule's ``confirmed_by`` names a
key id: the guard, replay, and the guard's stored sessions alike.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

__all__ = ["KEY_ID_PREFIX", "Approval"]

#: A ``confirmed_by`` that starts with this names a key, not a person.
KEY_ID_PREFIX = "ed25519:"


class Approval(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """What the approver signed, and the signature.

    The signature covers the RFC 8785 canonical JSON of every field but
    ``signature``. The public key travels with it; the verifier takes it only when
    its id (``ed25519:`` and the first 16 hex digits of its sha256) is the one the
    rule names, so the rule pins the key.
    """

    #: The checkpoint this approval records.
    checkpoint_id: Annotated[str, msgspec.Meta(min_length=1)]
    #: The call approved: its tool, the digest of its arguments, its call id (null when
    #: the call has none).
    tool: Annotated[str, msgspec.Meta(min_length=1)]
    args_sha256: Annotated[str, msgspec.Meta(pattern=r"^sha256:[0-9a-f]{64}$")]
    call_id: str | None
    #: RFC 3339 time (UTC, ``Z``) after which the approval counts for nothing.
    expires_at: Annotated[str, msgspec.Meta(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")]
    #: The approver's Ed25519 public key, 32 raw bytes in base64url without padding.
    public_key: str
    #: The Ed25519 signature, base64url without padding.
    signature: str
