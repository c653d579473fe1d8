"""The evidence record: one per gate evaluation, chained by ``prev_hash`` / ``hash``.

A review the role guard refuses is recorded the same way (verdict ``refused``).

A record is a plain mapping with the fields below, in this order. ``hash`` is the
sha256 of the record's canonical JSON (sorted keys, no ``hash`` field), and
``prev_hash`` is the ``hash`` of the record before it in the run (:data:`GENESIS`
for the first), so an edited, dropped or reordered record breaks the chain.
``params_sha256`` is the sha256 of the run's params (see
:func:`roadcheck.evidence.manifest.params_digest`), so every record states the params
it was made under.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["FIELDS", "GATE_FIELDS", "GENESIS", "record_hash", "seal"]

#: The fields of every record, in the order they are written.
FIELDS = ("run_id", "workflow", "phase", "attempt", "iteration", "verdict", "gate", "artifact",
          "role", "identity", "started_at", "finished_at", "params_sha256", "prev_hash", "hash")
#: The fields of a record's ``gate`` object.
GATE_FIELDS = ("kind", "summary", "detail", "exit_code", "output")
#: The ``prev_hash`` of the first record of a run.
GENESIS = "0" * 64


def record_hash(record: Mapping[str, Any]) -> str:
    """The sha256 of a record's canonical JSON, leaving out its own ``hash``."""
    body = dict(record)
    body.pop("hash", None)
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def seal(record: Mapping[str, Any], prev_hash: str) -> dict[str, Any]:
    """Return the record in field order with ``prev_hash`` set and ``hash`` computed."""
    out = {k: record.get(k) for k in FIELDS[:-2]}
    out["prev_hash"] = prev_hash
    out["hash"] = record_hash(out)
    return out
