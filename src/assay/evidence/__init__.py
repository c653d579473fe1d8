"""Evidence: the durable, hash-chained record of every gate evaluation.

>>> from assay.evidence import verify_run
>>> verify_run("runs", "my-run").ok  # doctest: +SKIP
True
"""

from __future__ import annotations

from assay.evidence.chain import ChainCheck, verify_chain
from assay.evidence.record import FIELDS, GENESIS, record_hash, seal
from assay.evidence.store import (
    STORE_KINDS,
    EvidenceStore,
    JsonlStore,
    SqliteStore,
    check_run_id,
    detect_store,
    open_store,
    verify_run,
)

__all__ = [
    "FIELDS",
    "GENESIS",
    "STORE_KINDS",
    "ChainCheck",
    "EvidenceStore",
    "JsonlStore",
    "SqliteStore",
    "check_run_id",
    "detect_store",
    "open_store",
    "record_hash",
    "seal",
    "verify_chain",
    "verify_run",
]
