"""Recomputing a run's hash chain and naming the first record that breaks it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from assay.evidence.record import GENESIS, record_hash

__all__ = ["ChainCheck", "verify_chain"]

Problem = Literal["edited", "dropped", "reordered"]


@dataclass(frozen=True, slots=True)
class ChainCheck:
    """The outcome of a chain verification; ``position`` is 1-based."""

    run_id: str
    records: int
    problem: Problem | None = None
    position: int | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        """True when every record is intact and in place."""
        return self.problem is None

    @property
    def exit(self) -> int:
        """0 when the chain holds, 1 when the evidence was tampered with."""
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``assay evidence verify --format json``."""
        return {"run_id": self.run_id, "ok": self.ok, "records": self.records,
                "problem": self.problem, "position": self.position, "message": self.message,
                "exit": self.exit}


def _where(record: Mapping[str, Any]) -> str:
    return (f"phase {record.get('phase')!r} attempt {record.get('attempt')} "
            f"(iteration {record.get('iteration')})")


def verify_chain(run_id: str, records: Sequence[Mapping[str, Any]],
                 known_hashes: Sequence[str] = ()) -> ChainCheck:
    """Recompute every hash and link; report the first edited, dropped or reordered record.

    ``known_hashes`` are hashes the store saw elsewhere (per-attempt files, the
    highest row id); one that is missing from the chain means a record was dropped.
    """
    hashes = [str(r.get("hash")) for r in records]
    expected = GENESIS
    for i, rec in enumerate(records):
        pos = i + 1
        if record_hash(rec) != rec.get("hash"):
            return ChainCheck(run_id, len(records), "edited", pos,
                              f"record {pos} ({_where(rec)}) was edited: its content no longer "
                              "matches its hash")
        prev = rec.get("prev_hash")
        if prev != expected:
            if prev in hashes:
                return ChainCheck(run_id, len(records), "reordered", pos,
                                  f"record {pos} ({_where(rec)}) is out of order: the record it "
                                  f"follows is at position {hashes.index(str(prev)) + 1}")
            return ChainCheck(run_id, len(records), "dropped", pos,
                              f"a record before record {pos} ({_where(rec)}) was dropped: the "
                              "record it follows is missing")
        expected = str(rec["hash"])
    present = set(hashes)
    for h in known_hashes:
        if h not in present:
            return ChainCheck(run_id, len(records), "dropped", len(records) + 1,
                              f"a record (hash {h[:12]}) is missing from the chain after "
                              f"record {len(records)}")
    return ChainCheck(run_id, len(records), None, None,
                      f"{len(records)} records, hash chain intact")
