"""Recomputing a run's hash chain and naming the first record that breaks it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from roadcheck.documents.evidence import EvidenceRecord
from roadcheck.evidence.record import GENESIS, AnyRecord, record_hash

__all__ = ["NO_KEY_SCOPE", "ChainCheck", "Problem", "malformed_record", "record_problem",
           "verify_chain"]

#: What the check found wrong. ``edited``, ``dropped``, ``reordered``: a record.
#: ``appended``, ``cut``, ``rehashed``, ``torn``: the chain disagrees with its head.
#: ``unanchored``: no usable head. ``forged``: the head's MAC does not verify.
#: ``unauthenticated``: a key was given but the run carries no MAC (a possible downgrade).
#: ``manifest``: ``run.json`` or the params no longer match what the evidence recorded.
#: ``corrupt``: the SQLite file fails ``PRAGMA integrity_check``.
#: ``malformed``: a chained, counted record does not have the evidence record's shape.
#: ``rollback``: the chain does not extend a head a witness saw (:mod:`.witness`).
Problem = Literal["edited", "dropped", "reordered", "appended", "cut", "rehashed", "torn",
                  "unanchored", "forged", "unauthenticated", "manifest", "corrupt",
                  "malformed", "rollback"]

#: What a check without a key cannot vouch for; printed with every unkeyed result.
NO_KEY_SCOPE = ("no key: a writer of the run directory could re-hash the chain, append or cut "
                "records and rewrite the head to match; verified: internal consistency only")


@dataclass(frozen=True, slots=True)
class ChainCheck:
    """The outcome of a chain verification; ``position`` is 1-based."""

    run_id: str
    records: int
    problem: Problem | None = None
    position: int | None = None
    message: str = ""
    #: ``none``, ``hmac-sha256`` or ``ed25519``: how the run's head is authenticated.
    auth: str = "none"
    #: True when a key verified the head's MAC.
    authenticated: bool = False
    key_id: str | None = None
    #: The head's record count and last hash, when a head was read.
    head_records: int | None = None
    head_hash: str | None = None
    #: Facts that do not break the evidence (a head one record behind, a torn uncommitted line).
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every record is intact and in place."""
        return self.problem is None

    @property
    def exit(self) -> int:
        """0 when the chain holds, 1 when the evidence was tampered with."""
        return 0 if self.ok else 1

    @property
    def scope(self) -> str:
        """One line saying what this check can and cannot vouch for."""
        if self.authenticated:
            return (f"authenticated ({self.auth}, key id {self.key_id}): edited, re-hashed, "
                    "appended and cut records are detected; restoring an earlier head together "
                    "with its records (a rollback) is not")
        return NO_KEY_SCOPE

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``roadcheck evidence verify --format json``."""
        head = (None if self.head_records is None
                else {"records": self.head_records, "last_hash": self.head_hash})
        return {"run_id": self.run_id, "ok": self.ok, "records": self.records,
                "problem": self.problem, "position": self.position, "message": self.message,
                "auth": self.auth, "authenticated": self.authenticated, "key_id": self.key_id,
                "head": head, "scope": self.scope, "notes": list(self.notes), "exit": self.exit}


def _get(record: AnyRecord, name: str) -> Any:
    if isinstance(record, EvidenceRecord):
        return getattr(record, name)
    return record.get(name)


def _where(record: AnyRecord) -> str:
    return (f"phase {_get(record, 'phase')!r} attempt {_get(record, 'attempt')} "
            f"(iteration {_get(record, 'iteration')})")


def _links(rec: AnyRecord) -> tuple[object, object, object]:
    """``(hash, prev_hash, params_sha256)`` of a record as read."""
    if type(rec) is EvidenceRecord:
        return rec.hash, rec.prev_hash, rec.params_sha256
    assert not isinstance(rec, EvidenceRecord)
    return rec.get("hash"), rec.get("prev_hash"), rec.get("params_sha256")


def verify_chain(run_id: str, records: Sequence[AnyRecord],
                 known_hashes: Sequence[str] = (), params_sha256: str | None = None,
                 ) -> ChainCheck:
    """Recompute every hash and link; report the first edited, dropped or reordered record.

    ``known_hashes`` are hashes the store saw elsewhere (per-attempt files, the
    highest row id); one that is missing from the chain means a record was dropped.
    ``params_sha256``, when given, must be the params digest of every record.
    """
    expected: object = GENESIS
    for i, rec in enumerate(records):
        pos = i + 1
        own, prev, params = _links(rec)
        if record_hash(rec) != own:
            return ChainCheck(run_id, len(records), "edited", pos,
                              f"record {pos} ({_where(rec)}) was edited: its content no longer "
                              "matches its hash")
        if prev != expected:
            hashes = [str(_get(r, "hash")) for r in records]
            if prev in hashes:
                return ChainCheck(run_id, len(records), "reordered", pos,
                                  f"record {pos} ({_where(rec)}) is out of order: the record it "
                                  f"follows is at position {hashes.index(str(prev)) + 1}")
            return ChainCheck(run_id, len(records), "dropped", pos,
                              f"a record before record {pos} ({_where(rec)}) was dropped: the "
                              "record it follows is missing")
        if params_sha256 is not None and params != params_sha256:
            return ChainCheck(run_id, len(records), "manifest", pos,
                              f"record {pos} ({_where(rec)}) was made under other params than "
                              "run.json holds now")
        expected = own
    present = {str(_get(r, "hash")) for r in records} if known_hashes else set()
    for h in known_hashes:
        if h not in present:
            return ChainCheck(run_id, len(records), "dropped", len(records) + 1,
                              f"a record (hash {h[:12]}) is missing from the chain after "
                              f"record {len(records)}")
    return ChainCheck(run_id, len(records), None, None,
                      f"{len(records)} records, hash chain intact")


def record_problem(records: Sequence[AnyRecord], run_id: str,
                   workflow: str | None) -> str | None:
    """Why the first record without the evidence record's shape is wrong, or None."""
    found = malformed_record(records, run_id, workflow)
    return None if found is None else found[1]


def malformed_record(records: Sequence[AnyRecord], run_id: str,
                     workflow: str | None) -> tuple[int, str] | None:
    """``(position, why)`` of the first record without the evidence record's shape, or None.

    A chain can be intact and still hold a record no engine wrote (without a key,
    a writer of the run directory can re-hash anything): before anything acts on
    the records, each must be a well-typed record of this run (and of ``workflow``,
    when it is known).
    """
    from roadcheck.documents.loader import Problem, convert

    for pos, rec in enumerate(records, 1):
        if not isinstance(rec, EvidenceRecord):  # a typed record was checked as it was read
            try:
                convert(dict(rec), EvidenceRecord)
            except Problem as exc:
                field = ".".join(str(p) for p in exc.loc)
                return pos, f"record {pos} is not an evidence record: {field}: {exc.message}"
        for key, want in (("run_id", run_id), ("workflow", workflow)):
            if want is not None and _get(rec, key) != want:
                return pos, f"record {pos} belongs to {key} {_get(rec, key)!r}, not {want!r}"
    return None
