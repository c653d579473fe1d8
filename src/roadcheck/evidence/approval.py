"""Signing an approval, and checking one with nothing but the public key it carries.

An approval (:class:`roadcheck.documents.approval.Approval`) names one call: the
checkpoint it records, the tool, the sha256 of the arguments, the call id, and
an expiry. A rule whose ``confirmed_by`` lists a key id counts a checkpoint
confirmed by that key id only when :func:`approval_problem` finds nothing wrong:
the approval is well formed, its public key has the rule's key id, the signature
verifies over the RFC 8785 canonical JSON of its other fields, it names the very
checkpoint and call the checkpoint event names, and the checkpoint was recorded
before it expired. Needs the ``sign`` extra; without it a signed checkpoint does
not count (fail closed).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import msgspec

from roadcheck.documents.approval import KEY_ID_PREFIX, Approval
from roadcheck.errors import InputError

__all__ = ["approval_problem", "approve_with_key", "is_key_id", "sign_approval",
           "signature_problem"]


def is_key_id(name: object) -> bool:
    """Whether a ``confirmed_by`` names a key (``ed25519:<16 hex>``) rather than a person."""
    return isinstance(name, str) and name.startswith(KEY_ID_PREFIX)


def _time(text: str) -> dt.datetime | None:
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def sign_approval(key: Any, *, checkpoint_id: str, tool: str, args_sha256: str,
                  call_id: str | None, expires_at: str) -> Approval:
    """The approval of one call, signed with the Ed25519 private ``key``
    (:class:`roadcheck.evidence.signing.SigningKey`)."""
    body = {"checkpoint_id": checkpoint_id, "tool": tool, "args_sha256": args_sha256,
            "call_id": call_id, "expires_at": expires_at,
            "public_key": key.public.raw_text}
    approval = msgspec.convert({**body, "signature": key.sign(body)}, Approval)
    return approval


def approve_with_key(key_file: str, *, checkpoint_id: str, tool: str, args_sha256: str,
                     call_id: str | None, expires_in: float,
                     now: dt.datetime | None = None) -> Approval:
    """``roadcheck guard approve --key``: the approval of one call, signed with the private
    key in ``key_file``, expiring ``expires_in`` seconds from ``now``."""
    from roadcheck.evidence.signing import load_signing_key

    if expires_in <= 0:
        raise InputError("--expires-in must be a positive number of seconds")
    until = (now or dt.datetime.now(dt.UTC)) + dt.timedelta(seconds=expires_in)
    expires_at = until.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    try:
        return sign_approval(load_signing_key(key_file), checkpoint_id=checkpoint_id, tool=tool,
                             args_sha256=args_sha256, call_id=call_id, expires_at=expires_at)
    except msgspec.ValidationError as exc:
        raise InputError(f"cannot approve: {exc}") from None


def approval_problem(doc: object, *, key_id: str, checkpoint_id: str,
                     call: Mapping[str, Any], at: str | None) -> str | None:
    """Why the checkpoint confirmed by ``key_id``, naming ``call`` (its ``tool``,
    ``args_sha256`` and ``call_id``) and recorded at ``at``, does not count; None when
    its ``approval`` ``doc`` holds."""
    if doc is None:
        return f"it names key {key_id} but carries no signed approval"
    try:
        approval = msgspec.convert(doc, Approval)
    except msgspec.ValidationError as exc:
        return f"its approval is not an approval: {exc}"
    return signature_problem(approval, key_id) or _scope_problem(approval, checkpoint_id,
                                                                  call, at)


def signature_problem(approval: Approval, key_id: str) -> str | None:
    """Why the approval is not ``key_id``'s signature, or None."""
    try:
        from roadcheck.evidence.signing import VerifyKey

        public = VerifyKey.from_raw(approval.public_key)
        if public is None:
            return "its approval's public key is not 32 bytes of base64url"
        body = msgspec.to_builtins(approval)
        del body["signature"]
        if public.key_id != key_id:
            return f"its approval is signed by key {public.key_id}, not {key_id}"
        if not public.verify(body, approval.signature):
            return f"its approval's signature does not verify with key {key_id}"
    except ImportError:
        return "its signed approval cannot be checked: the 'sign' extra is not installed"
    return None


def _scope_problem(approval: Approval, checkpoint_id: str, call: Mapping[str, Any],
                   at: str | None) -> str | None:
    """Why the approval does not cover this checkpoint of this call at ``at``, or None."""
    for name in ("tool", "args_sha256", "call_id"):
        if call.get(name) != getattr(approval, name):
            return (f"its approval names {name} {getattr(approval, name)!r}, the checkpoint "
                    f"{call.get(name)!r}")
    if approval.checkpoint_id != checkpoint_id:
        return f"its approval is for checkpoint {approval.checkpoint_id!r}"
    when, until = (_time(at) if isinstance(at, str) else None), _time(approval.expires_at)
    if when is None or until is None:
        return "it carries no time to hold its approval's expiry against"
    if when > until:
        return f"its approval expired at {approval.expires_at}"
    return None
