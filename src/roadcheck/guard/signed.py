"""Ed25519 signatures over a guard session's decision log, and checking them, and the
signed approvals a trail carries, with the public keys alone.

The guard key (:mod:`roadcheck.guard.seal`) is an HMAC secret: only its holder can
check the decision log, and that holder could forge it too. Given a signing key
(``ROADCHECK_GUARD_SIGN_KEY_FILE``, a PEM Ed25519 private key as ``roadcheck keys
new`` writes it), the guard also signs the log's head on every commit: a side
document of the log, committed with the records it counts, holding the session,
the record count and the last record's hash, signed over its RFC 8785 canonical
JSON. Whoever holds the public key checks the head's signature, and through the
hash chain every decision before it (``roadcheck audit SESSION --public-key PUB``).

Approvals (:mod:`roadcheck.evidence.approval`) carry their own public key; the
audit counts one as good only when that key is one it was given and its signature
verifies. ``cryptography`` is imported only when a key is given.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from roadcheck.evidence.chain import ChainCheck
    from roadcheck.evidence.signing import SigningKey, VerifyKey

__all__ = ["FORMAT", "SIGNATURE", "SignedLog", "approval_problems", "check_signed_log",
           "log_signature_problem", "sign_log"]

#: The name of the side document of the decision log that holds the head's signature.
SIGNATURE = "signature"
FORMAT = "roadcheck-guard-log-signature/1"


def _body(session: str, records: int, last_hash: str, key_id: str) -> dict[str, Any]:
    return {"format": FORMAT, "session": session, "records": records, "last_hash": last_hash,
            "key_id": key_id}


def sign_log(key: SigningKey, session: str, records: int, last_hash: str) -> str:
    """The signed head of ``session``'s decision log: ``records`` records, the last
    hashed ``last_hash``, as the JSON text kept beside them."""
    body = _body(session, records, last_hash, key.key_id)
    return orjson.dumps({**body, "signature": key.sign(body)}).decode()


def log_signature_problem(doc: str | None, *, session: str, records: int, last_hash: str,
                          keys: Sequence[VerifyKey]) -> tuple[str | None, str | None]:
    """``(problem, key id)``: why the signed head ``doc`` does not vouch for a log of
    ``records`` records ending in ``last_hash`` under one of ``keys`` (None when it
    does), and the key id that signed it."""
    if doc is None:
        return "the decision log carries no signature (the guard ran without a signing key)", \
            None
    try:
        signed = orjson.loads(doc)
    except orjson.JSONDecodeError:
        signed = None
    if not isinstance(signed, dict) or signed.get("format") != FORMAT:
        return "the decision log's signature is not a signed head", None
    key_id = signed.get("key_id")
    key = next((k for k in keys if k.key_id == key_id), None)
    if key is None:
        return (f"the decision log is signed by key {key_id}, not by "
                f"{', '.join(k.key_id for k in keys)}"), None
    body = _body(session, records, last_hash, key.key_id)
    if not key.verify(body, signed.get("signature")):
        if {k: signed.get(k) for k in body} == body:
            return f"the decision log's signature does not verify with key {key_id}: forged", \
                None
        return (f"the decision log's signed head (session {signed.get('session')!r}, "
                f"{signed.get('records')} records) is not this log ({records} records): "
                "edited, cut, extended or copied from another session"), None
    return None, key.key_id


@dataclass(frozen=True, slots=True)
class SignedLog:
    """A decision log checked with public keys alone: its records, the check of its hash
    chain alone, the check of both (the chain, then the signed head: ``forged``, or
    ``unauthenticated`` when it carries none), and why the signature does not vouch
    for the records (None when it does)."""

    records: list[dict[str, Any]]
    chain: ChainCheck
    check: ChainCheck
    problem: str | None


def check_signed_log(directory: str | Path, session: str,
                     keys: Sequence[VerifyKey]) -> SignedLog:
    """Check the decision log of guard session ``session`` in the state directory
    ``directory``: every record's hash and link, and its signed head, under one of
    ``keys``."""
    import dataclasses

    from roadcheck.evidence.chain import verify_chain
    from roadcheck.evidence.record import GENESIS
    from roadcheck.evidence.store import SqliteStore, check_run_id

    store = SqliteStore(Path(directory) / check_run_id(session), session)
    try:
        records = store.records()
        doc = store.side_doc(SIGNATURE)
    finally:
        store.close()
    check = chain = verify_chain(session, records)
    last = str(records[-1].get("hash")) if records else GENESIS
    problem, key_id = log_signature_problem(doc, session=session, records=len(records),
                                            last_hash=last, keys=keys)
    if problem is None:
        check = dataclasses.replace(check, auth="ed25519", authenticated=check.ok,
                                    key_id=key_id, head_records=len(records), head_hash=last)
    elif check.ok:
        check = dataclasses.replace(check, problem="forged" if doc is not None
                                    else "unauthenticated", message=problem)
    return SignedLog(records, chain, check, problem)


def _approvals(doc: Any) -> Iterator[Mapping[str, Any]]:
    """Every object in ``doc`` that carries a signed ``approval`` (a checkpoint event)."""
    if isinstance(doc, Mapping):
        if isinstance(doc.get("approval"), Mapping):
            yield doc
        for value in doc.values():
            yield from _approvals(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from _approvals(value)


def approval_problems(docs: Any, keys: Sequence[VerifyKey]) -> tuple[list[str], int]:
    """Why each signed approval found in ``docs`` is not good under one of ``keys``, and
    how many were found: its public key must be one of them, name the key its
    checkpoint's ``confirmed_by`` names, and its signature must verify."""
    import msgspec

    from roadcheck.documents.approval import Approval
    from roadcheck.evidence.approval import signature_problem

    problems: list[str] = []
    found = 0
    ids = {k.key_id for k in keys}
    for event in _approvals(docs):
        found += 1
        where = f"approval {found} (checkpoint {event.get('checkpoint_id')!r})"
        try:
            approval = msgspec.convert(event["approval"], Approval)
        except msgspec.ValidationError as exc:
            problems.append(f"{where} is not an approval: {exc}")
            continue
        by = event.get("confirmed_by")
        problem = signature_problem(approval, str(by))
        if problem is None and by not in ids:
            problem = f"its key {by} is not one of the public keys given"
        if problem is not None:
            problems.append(f"{where}: {problem.removeprefix('its ')}")
    return problems, found
