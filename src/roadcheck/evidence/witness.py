"""Anchoring a run's head to a witness outside its store, so a rollback is seen.

A key makes a head unforgeable but not unique: whoever can write the store can
put back an earlier head together with its records (a rollback), and it
verifies. A witness closes that gap for every head it saw. ``roadcheck
evidence witness RUN --key PEM`` verifies the run and writes a
:class:`~roadcheck.documents.evidence.HeadWitness`: the run id, the head's record
count and last hash, the time, and the witness's Ed25519 signature over the
RFC 8785 canonical JSON of those fields. Kept where the store's writers cannot
reach (another machine, a CI artifact, a transparency log), it is given back to
``roadcheck evidence verify RUN --witness FILE --witness-key PUB``, which
checks, after the chain and head verify:

1. the file is a head witness (the declared shape, for this run);
2. its public key is the pinned ``--witness-key`` and its signature verifies;
3. the chain holds at least the witnessed number of records, and the record at
   that position has the witnessed hash: the witnessed head is a prefix of the
   chain. Anything else is ``rollback`` (exit 1): the store was rolled back to
   before the witnessed head, or rewritten after it.

It cannot see a rollback to a head after the latest statement the verifier
holds: witness often (each phase, each CI job) and keep the newest.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from roadcheck._files import read_input
from roadcheck.documents.evidence import HeadWitness
from roadcheck.errors import InputError
from roadcheck.evidence.chain import ChainCheck
from roadcheck.evidence.record import AnyRecord, as_dict

__all__ = ["apply_witness", "read_witness", "rollback_problem", "sign_witness", "verified_head",
           "witness_run"]

KIND = "roadcheck-head-witness"


def _body(witness: HeadWitness) -> dict[str, Any]:
    body: dict[str, Any] = msgspec.to_builtins(witness)
    del body["signature"]
    return body


def sign_witness(key: Any, run_id: str, records: int, last_hash: str,
                 now: dt.datetime | None = None) -> HeadWitness:
    """The witness statement of a head, signed with the Ed25519 private ``key``."""
    when = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    body = {"kind": KIND, "run_id": run_id, "records": records, "last_hash": last_hash,
            "witnessed_at": when.isoformat(timespec="seconds").replace("+00:00", "Z"),
            "public_key": key.public.raw_text}
    return msgspec.convert({**body, "signature": key.sign(body)}, HeadWitness)


def read_witness(path: str | Path) -> HeadWitness:
    """The head witness in the JSON file ``path``; anything else is one line, exit 2."""
    data = read_input(path, "the witness")
    try:
        return msgspec.json.decode(data, type=HeadWitness)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InputError(f"not a head witness: {exc}", path=str(path)) from None


def rollback_problem(witness: HeadWitness, witness_key: Any, run_id: str,
                     records: Sequence[AnyRecord]) -> str | None:
    """Why the chain ``records`` of ``run_id`` does not extend the witnessed head (or the
    witness is not the pinned ``witness_key``'s), or None."""
    if witness.run_id != run_id:
        raise InputError(f"the witness is of run {witness.run_id!r}, not {run_id!r}")
    if witness.public_key != witness_key.raw_text:
        raise InputError(f"the witness is signed by another key than the witness key given "
                         f"({witness_key.key_id})")
    if not witness_key.verify(_body(witness), witness.signature):
        return (f"the witness statement's signature does not verify with key "
                f"{witness_key.key_id}: it was not made by the witness")
    n = witness.records
    if n == 0:
        return None
    if len(records) < n:
        return (f"rolled back: the witness saw {n} records (last {witness.last_hash[:12]}, "
                f"{witness.witnessed_at}), the store holds {len(records)}")
    found = as_dict(records[n - 1]).get("hash")
    if found != witness.last_hash:
        return (f"rolled back or rewritten: the witness saw record {n} as "
                f"{witness.last_hash[:12]} ({witness.witnessed_at}), the store has "
                f"{str(found)[:12]}")
    return None


def apply_witness(check: ChainCheck, witness: HeadWitness, witness_key: Any,
                  records: Sequence[AnyRecord]) -> ChainCheck:
    """``check`` with the witness's verdict: ``rollback`` when the chain does not extend
    the witnessed head, else a note saying what the witness vouched for."""
    if not check.ok:
        return check
    why = rollback_problem(witness, witness_key, check.run_id, records)
    if why is not None:
        return dataclasses.replace(check, problem="rollback", position=None, message=why)
    note = (f"witness {witness_key.key_id} saw {witness.records} records at "
            f"{witness.witnessed_at}; the chain extends that head")
    return dataclasses.replace(check, notes=(*check.notes, note), witnessed=True)


def verified_head(runs_dir: str | Path, run_id: str, key: Any) -> tuple[int, str]:
    """``(records, last hash)`` of the head of a run that verifies (with its evidence
    ``key``, or the environment's); a run that does not verify is refused."""
    from roadcheck.errors import EvidenceError
    from roadcheck.evidence.store import verify_run

    check = verify_run(runs_dir, run_id, key)
    if not check.ok or check.head_records is None or check.head_hash is None:
        raise EvidenceError(f"run {run_id!r}: {check.message}; not witnessed")
    return check.head_records, check.head_hash


def witness_run(runs_dir: str | Path, run_id: str, key: Any, witness_key_file: str,
                now: dt.datetime | None = None) -> HeadWitness:
    """``roadcheck evidence witness``: verify the run (with its evidence ``key``, or the
    environment's), then sign the statement of its head with the witness's private key
    in ``witness_key_file``. A run that does not verify is not witnessed."""
    from roadcheck.evidence.signing import load_signing_key

    signer = load_signing_key(witness_key_file)
    records, last_hash = verified_head(runs_dir, run_id, key)
    return sign_witness(signer, run_id, records, last_hash, now)
