"""Recomputing a run's hash chain and naming the first record that breaks it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from roadcheck.documents.evidence import EvidenceRecord
from roadcheck.evidence.record import GENESIS, AnyRecord, record_hash

__all__ = ["NO_KEY_SCOPE", "ChainCheck", "ChainWalk", "Problem", "malformed_record",
           "record_problem", "verify_chain"]

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
    #: True when a witness (a signed head statement or a time-stamp token) vouched for an
    #: earlier head that this chain extends.
    witnessed: bool = False

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
        rollback = ("a rollback to before the witnessed head is detected; to a later "
                    "head, not" if self.witnessed else
                    "restoring an earlier head together with its records (a rollback) is not")
        if self.authenticated:
            return (f"authenticated ({self.auth}, key id {self.key_id}): edited, re-hashed, "
                    f"appended and cut records are detected; {rollback}")
        if self.witnessed:
            return f"{NO_KEY_SCOPE}; {rollback}"
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


class ChainWalk:
    """A run's records checked one at a time, as they are read: each record's hash and its
    link to the one before, its params digest and (with ``shapes``) its shape.

    Nothing but each record's own hash is kept, so a store can stream a million
    records through it without holding them. :meth:`check` gives the outcome
    :func:`verify_chain` gives for the same records; :attr:`shape` is the first
    record without the evidence record's shape (see :func:`malformed_record`).
    """

    __slots__ = ("_broken", "_expected", "_params", "_run_id", "_shapes", "_workflow",
                 "hashes", "shape")

    def __init__(self, run_id: str, params_sha256: str | None = None,
                 workflow: str | None = None, *, shapes: bool = False) -> None:
        self._run_id = run_id
        self._params = params_sha256
        self._workflow = workflow
        self._shapes = shapes
        self._expected: object = GENESIS
        #: ``(problem, position, the record's prev_hash, where it is)`` of the first break.
        self._broken: tuple[Problem, int, object, str] | None = None
        #: Every record's ``hash`` as read, in order.
        self.hashes: list[object] = []
        #: ``(position, why)`` of the first record without the evidence record's shape.
        self.shape: tuple[int, str] | None = None

    def add(self, rec: AnyRecord) -> None:
        """Check the next record."""
        own: object
        prev: object
        params: object
        if isinstance(rec, EvidenceRecord):
            own, prev, params = rec.hash, rec.prev_hash, rec.params_sha256
            # a typed record of this run was checked as it was read; any other is judged
            fine = rec.run_id == self._run_id and self._workflow in (None, rec.workflow)
        else:
            own, prev, params = rec.get("hash"), rec.get("prev_hash"), rec.get("params_sha256")
            fine = False
        self.hashes.append(own)
        if self._broken is None:
            if record_hash(rec) != own:
                self._broken = ("edited", len(self.hashes), prev, _where(rec))
            elif prev != self._expected:
                self._broken = ("dropped", len(self.hashes), prev, _where(rec))
            elif self._params is not None and params != self._params:
                self._broken = ("manifest", len(self.hashes), prev, _where(rec))
            else:
                self._expected = own
        if self._shapes and self.shape is None and not fine:
            self.shape = _shape_problem(rec, len(self.hashes), self._run_id, self._workflow)

    def extend(self, records: Iterable[AnyRecord]) -> ChainWalk:
        """Check each of ``records`` in turn; return the walk."""
        for rec in records:
            self.add(rec)
        return self

    def check(self, known_hashes: Sequence[str] = ()) -> ChainCheck:
        """The outcome: the first edited, dropped or reordered record, or the chain intact."""
        run_id, n = self._run_id, len(self.hashes)
        if self._broken is not None:
            problem, pos, prev, where = self._broken
            if problem == "edited":
                return ChainCheck(run_id, n, "edited", pos, f"record {pos} ({where}) was "
                                  "edited: its content no longer matches its hash")
            if problem == "manifest":
                return ChainCheck(run_id, n, "manifest", pos, f"record {pos} ({where}) was "
                                  "made under other params than run.json holds now")
            hashes = [str(h) for h in self.hashes]
            if prev in hashes:
                return ChainCheck(run_id, n, "reordered", pos,
                                  f"record {pos} ({where}) is out of order: the record it "
                                  f"follows is at position {hashes.index(str(prev)) + 1}")
            return ChainCheck(run_id, n, "dropped", pos,
                              f"a record before record {pos} ({where}) was dropped: the "
                              "record it follows is missing")
        present = {str(h) for h in self.hashes} if known_hashes else set()
        for h in known_hashes:
            if h not in present:
                return ChainCheck(run_id, n, "dropped", n + 1,
                                  f"a record (hash {h[:12]}) is missing from the chain after "
                                  f"record {n}")
        return ChainCheck(run_id, n, None, None, f"{n} records, hash chain intact")


def verify_chain(run_id: str, records: Sequence[AnyRecord],
                 known_hashes: Sequence[str] = (), params_sha256: str | None = None,
                 ) -> ChainCheck:
    """Recompute every hash and link; report the first edited, dropped or reordered record.

    ``known_hashes`` are hashes the store saw elsewhere (per-attempt files, the
    highest row id); one that is missing from the chain means a record was dropped.
    ``params_sha256``, when given, must be the params digest of every record.
    """
    return ChainWalk(run_id, params_sha256).extend(records).check(known_hashes)


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
    for pos, rec in enumerate(records, 1):
        found = _shape_problem(rec, pos, run_id, workflow)
        if found is not None:
            return found
    return None


def _shape_problem(rec: AnyRecord, pos: int, run_id: str,
                   workflow: str | None) -> tuple[int, str] | None:
    """``(pos, why)`` when the record at ``pos`` is no well-typed record of this run."""
    if not isinstance(rec, EvidenceRecord):  # a typed record was checked as it was read
        from roadcheck.documents.loader import Problem, convert

        try:
            convert(dict(rec), EvidenceRecord)
        except Problem as exc:
            field = ".".join(str(p) for p in exc.loc)
            return pos, f"record {pos} is not an evidence record: {field}: {exc.message}"
    got = _get(rec, "run_id")
    if got != run_id:
        return pos, f"record {pos} belongs to run_id {got!r}, not {run_id!r}"
    if workflow is not None and (got := _get(rec, "workflow")) != workflow:
        return pos, f"record {pos} belongs to workflow {got!r}, not {workflow!r}"
    return None
