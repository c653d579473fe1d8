"""Evidence: the durable, hash-chained record of every gate evaluation.

>>> from roadcheck.evidence import verify_run
>>> from roadcheck.harness import Workflow
>>> doc = examples / "doc_pipeline" / "corpus" / "01_clean_release_notes.txt"
>>> run = Workflow.load(examples / "doc_pipeline" / "workflow.yaml").run(
...     role="writer", identity="alice", runs_dir=tmp, run_id="r1", params={"doc": str(doc)})
>>> verify_run(tmp, "r1").ok
True

(``examples`` is the repository's ``examples/`` directory, ``tmp`` an empty one.)
"""

from __future__ import annotations

from roadcheck.evidence.chain import NO_KEY_SCOPE, ChainCheck, verify_chain
from roadcheck.evidence.head import Head
from roadcheck.evidence.keys import AUTH_HMAC, AUTH_NONE, EvidenceKey, load_key
from roadcheck.evidence.manifest import MANIFEST, manifest_digest, params_digest, read_manifest
from roadcheck.evidence.record import FIELDS, GENESIS, record_hash, seal
from roadcheck.evidence.store import (
    HEAD,
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
    "AUTH_HMAC",
    "AUTH_NONE",
    "FIELDS",
    "GENESIS",
    "HEAD",
    "MANIFEST",
    "NO_KEY_SCOPE",
    "STORE_KINDS",
    "ChainCheck",
    "EvidenceKey",
    "EvidenceStore",
    "Head",
    "JsonlStore",
    "SqliteStore",
    "check_run_id",
    "detect_store",
    "load_key",
    "manifest_digest",
    "open_store",
    "params_digest",
    "read_manifest",
    "record_hash",
    "seal",
    "verify_chain",
    "verify_run",
]
