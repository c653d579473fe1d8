"""The evidence record: one per gate evaluation, chained by ``prev_hash`` / ``hash``.

A review the role guard refuses is recorded the same way (verdict ``refused``).

A record is a plain mapping with the fields below, in this order. ``hash`` is the
sha256 of the record's canonical JSON (sorted keys, no ``hash`` field), and
``prev_hash`` is the ``hash`` of the record before it in the run (:data:`GENESIS`
for the first), so an edited, dropped or reordered record breaks the chain.
``params_sha256`` is the sha256 of the run's params (see
:func:`roadcheck.evidence.manifest.params_digest`), so every record states the params
it was made under.

A store reads a record line in one pass into the typed
:class:`~roadcheck.documents.evidence.EvidenceRecord` (:func:`read_record`). When
the line is exactly what the writer writes for that record (compact, in field
order, numbers in the writer's spelling), its canonical JSON is the record's
sorted encoding with ``hash`` cut out, so :func:`record_hash` needs no second
reading; any other line is read as a plain mapping and hashed from it, giving the
same digest for the same content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec
import orjson

from roadcheck.documents.evidence import EvidenceRecord

__all__ = ["FIELDS", "GATE_FIELDS", "GENESIS", "AnyRecord", "as_dict", "read_record",
           "record_hash", "seal"]

#: A record as read: typed when its line was written as the stores write it, else a mapping.
AnyRecord = EvidenceRecord | Mapping[str, Any]

#: The fields of every record, in the order they are written.
FIELDS = ("run_id", "workflow", "phase", "attempt", "iteration", "verdict", "gate", "artifact",
          "role", "identity", "started_at", "finished_at", "params_sha256", "prev_hash", "hash")
#: The fields of a record's ``gate`` object.
GATE_FIELDS = ("kind", "summary", "detail", "exit_code", "output")
#: The ``prev_hash`` of the first record of a run.
GENESIS = "0" * 64


_DECODER = msgspec.json.Decoder(EvidenceRecord)
_WRITTEN = msgspec.json.Encoder()
_SORTED = msgspec.json.Encoder(order="sorted")


def read_record(raw: bytes) -> EvidenceRecord | None:
    """The typed record of the line ``raw`` when the line is exactly how the stores write
    that record; None when it is anything else (not a record's shape, a key given twice,
    other spacing or key order, a number spelt otherwise), which is then read as a mapping.

    A line equal to the record's own encoding holds each key once and spells each value
    as the writer does, so :func:`record_hash` may hash the record's sorted encoding.
    """
    try:
        rec = _DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if _WRITTEN.encode(rec) != raw:
        return None
    art = rec.artifact
    if art is not None and art.producer and type(art.producer.cost) is float \
            and b"e" in _WRITTEN.encode(art.producer.cost):
        return None  # the writer spells an exponent ``e+16``, msgspec ``e16``
    return rec


def as_dict(record: AnyRecord) -> dict[str, Any]:
    """The record as the plain mapping its line holds."""
    if isinstance(record, EvidenceRecord):
        out: dict[str, Any] = msgspec.to_builtins(record)
        return out
    return dict(record)


def record_hash(record: AnyRecord) -> str:
    """The sha256 of a record's canonical JSON, leaving out its own ``hash``."""
    if type(record) is EvidenceRecord:
        # sorted, ``hash`` falls between ``gate`` and ``identity``: hash around it
        full = _SORTED.encode(record)
        cut = full.find(b',"hash":"')
        if cut < 0 or len(record.hash) != 64 or full[cut + 9:cut + 74] != \
                record.hash.encode() + b'"':
            return record_hash(as_dict(record))  # a hash that is no sha256 is hashed as read
        return hashlib.sha256(full[:cut] + full[cut + 74:]).hexdigest()  # ,"hash":"<64 hex>"
    assert not isinstance(record, EvidenceRecord)
    body = dict(record)
    body.pop("hash", None)
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def seal(record: Mapping[str, Any], prev_hash: str) -> dict[str, Any]:
    """Return the record in field order with ``prev_hash`` set and ``hash`` computed."""
    out = {k: record.get(k) for k in FIELDS[:-2]}
    out["prev_hash"] = prev_hash
    out["hash"] = record_hash(out)
    return out
