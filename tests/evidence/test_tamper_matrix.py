"""The tamper matrix: every class of tampering, both stores, with and without a key.

Each class is applied at every position it can take on a finished five-record
run; a case is detected when ``verify_run`` does not say OK (a broken check, or
an error that refuses to judge). Run with ``-s`` to see the table.
"""

from __future__ import annotations

import copy
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.evidence_layout import (
    head_of,
    put_head,
    to_attempt_files,
    write_copies,
    write_record_lines,
)
from tests.evidence_layout import records as records_of

from roadcheck.errors import RoadcheckError
from roadcheck.evidence import (
    FIELDS,
    GENESIS,
    EvidenceKey,
    Head,
    manifest_digest,
    open_store,
    params_digest,
    record_hash,
    verify_run,
)
from roadcheck.evidence.keys import AnyKey
from roadcheck.evidence.manifest import create_run
from roadcheck.evidence.store import JsonlStore, SqliteStore

KEY = EvidenceKey(b"k" * 32)
ATTACKER_KEY = EvidenceKey(b"a" * 32)
N = 5
#: Without a key, these need a writer who also rewrites the head, and nothing can tell.
KEY_ONLY = {"re-hash", "append", "cut-tail"}

State = tuple[list[dict[str, Any]], dict[str, Any]]


def _record(i: int, params: dict[str, str]) -> dict[str, Any]:
    return {"run_id": "r", "workflow": "w", "phase": f"p{i}", "attempt": 1, "iteration": i,
            "verdict": "fail" if i == 2 else "pass",
            "gate": {"kind": "command", "summary": "ok", "detail": "", "exit_code": 0,
                     "output": ""},
            "artifact": {"path": f"p{i}.txt", "sha256": "ab" * 32, "bytes": 4},
            "role": "writer", "identity": "alice", "started_at": "2026-01-01T00:00:00.000Z",
            "finished_at": "2026-01-01T00:00:01.000Z", "params_sha256": params_digest(params)}


def build(root: Path, kind: str, key: AnyKey | None) -> Path:
    """A finished run of N records under root/runs/r."""
    params = {"doc": "a"}
    manifest = {"run_id": "r", "workflow": "w", "store": kind, "params": params, "gated": True,
                "auth": key.auth if key else "none", "key_id": key.key_id if key else None}

    def init(stage: Path) -> None:
        store = (SqliteStore if kind == "sqlite" else JsonlStore)(stage, "r", key)
        store.create(manifest_digest(manifest))
        store.close()

    create_run(root / "runs", "r", manifest, init)
    store = open_store(root / "runs", "r", kind, key)  # type: ignore[arg-type]
    for i in range(1, N + 1):
        store.append(_record(i, params))
    store.close()
    return root / "runs"


# -- reading and writing a run the way an attacker with write access would -------------------

def read_state(run_dir: Path, kind: str) -> State:
    if kind == "jsonl":
        return records_of(run_dir / "evidence.jsonl"), head_of(run_dir)
    conn = sqlite3.connect(run_dir / "evidence.sqlite")
    try:
        rows = conn.execute(f"SELECT {', '.join(FIELDS)} FROM evidence ORDER BY seq").fetchall()
        head = orjson.loads(conn.execute("SELECT doc FROM head").fetchone()[0])
    finally:
        conn.close()
    recs = []
    for row in rows:
        rec = dict(zip(FIELDS, row, strict=True))
        rec["gate"], rec["artifact"] = orjson.loads(rec["gate"]), orjson.loads(rec["artifact"])
        recs.append(rec)
    return recs, head


def write_state(run_dir: Path, kind: str, records: list[dict[str, Any]],
                head: dict[str, Any] | None) -> None:
    """Write records back (attempt copies and row ids kept consistent); ``head=None`` leaves
    it."""
    if kind == "jsonl":
        write_record_lines(run_dir / "evidence.jsonl", [orjson.dumps(r).decode() for r in records])
        write_copies(run_dir, records)
        if head is not None:
            put_head(run_dir, head)
        return
    conn = sqlite3.connect(run_dir / "evidence.sqlite")
    try:
        conn.execute("DELETE FROM evidence")
        for seq, r in enumerate(records, 1):
            values = [orjson.dumps(r[k]).decode() if k in ("gate", "artifact") else r[k]
                      for k in FIELDS]
            conn.execute(f"INSERT INTO evidence (seq, {', '.join(FIELDS)}) VALUES "
                         f"(?, {', '.join('?' * len(FIELDS))})", [seq, *values])
        conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'evidence'",
                     (len(records),))
        if head is not None:
            conn.execute("UPDATE head SET doc = ?", (orjson.dumps(head).decode(),))
        conn.commit()
    finally:
        conn.close()


def rehash(records: list[dict[str, Any]], start: int = 0) -> None:
    prev = records[start - 1]["hash"] if start else GENESIS
    for r in records[start:]:
        r["prev_hash"] = prev
        r["hash"] = record_hash(r)
        prev = r["hash"]


def matching_head(head: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """The head a writer without the key would write: counts fit, the MAC is a guess."""
    out = dict(head, records=len(records),
               last_hash=records[-1]["hash"] if records else GENESIS)
    if out.get("auth") == "hmac-sha256":
        forged = Head.from_dict({**out, "mac": None})
        out["mac"] = ATTACKER_KEY.mac(forged.body())
    return out


# -- the classes: each yields one tampering function per position ---------------------------

Tamper = Callable[[Path, str], None]


def _edit(i: int) -> Tamper:
    def go(d: Path, kind: str) -> None:
        recs, _ = read_state(d, kind)
        recs[i]["verdict"] = "pass" if recs[i]["verdict"] == "fail" else "fail"
        write_state(d, kind, recs, None)
    return go


def _delete(i: int) -> Tamper:
    def go(d: Path, kind: str) -> None:
        recs, _ = read_state(d, kind)
        del recs[i]
        write_state(d, kind, recs, None)
    return go


def _swap(i: int) -> Tamper:
    def go(d: Path, kind: str) -> None:
        recs, _ = read_state(d, kind)
        recs[i], recs[i + 1] = recs[i + 1], recs[i]
        write_state(d, kind, recs, None)
    return go


def _truncate(fraction: float) -> Tamper:
    def go(d: Path, kind: str) -> None:
        path = d / ("evidence.jsonl" if kind == "jsonl" else "evidence.sqlite")
        data = path.read_bytes()
        path.write_bytes(data[:max(1, int(len(data) * fraction))])
    return go


def _rehash(i: int) -> Tamper:
    def go(d: Path, kind: str) -> None:
        recs, head = read_state(d, kind)
        recs[i]["verdict"] = "pass" if recs[i]["verdict"] == "fail" else "fail"
        rehash(recs, i)
        write_state(d, kind, recs, matching_head(head, recs))
    return go


def _append(naive: bool) -> Tamper:
    def go(d: Path, kind: str) -> None:
        recs, head = read_state(d, kind)
        forged = copy.deepcopy(recs[-1])
        forged.update(phase="forged", iteration=N + 1, verdict="pass")
        recs.append(forged)
        rehash(recs, len(recs) - 1)
        write_state(d, kind, recs, None if naive else matching_head(head, recs))
    return go


def _cut(k: int, naive: bool) -> Tamper:
    def go(d: Path, kind: str) -> None:
        recs, head = read_state(d, kind)
        recs = recs[:-k]
        write_state(d, kind, recs, None if naive else matching_head(head, recs))
    return go


CLASSES: dict[str, list[Tamper]] = {
    "edit": [_edit(i) for i in range(N)],
    "delete": [_delete(i) for i in range(N - 1)],
    "swap": [_swap(i) for i in range(N - 1)],
    "truncate": [_truncate(f) for f in (0.1, 0.3, 0.5, 0.7, 0.9, 0.99)],
    "re-hash": [_rehash(i) for i in range(N)],
    "append": [_append(naive=False)],
    "cut-tail": [_cut(k, naive=False) for k in range(1, N + 1)],
    "naive-append": [_append(naive=True)],
    "naive-cut-tail": [_cut(k, naive=True) for k in range(1, N + 1)],
}


def run_matrix(tmp: Path, kind: str, key: AnyKey | None, attempt_files: bool = False, *,
               base: Path | None = None, witness: Any = None) -> dict[str, tuple[int, int]]:
    """``{class: (detected, total)}`` for one store kind and key mode; ``attempt_files``:
    a flat-file run as made before ``attempts.jsonl``, a file per attempt copy; ``base``:
    a run already built, when the key that wrote it is not the one that verifies;
    ``witness``: a verified time-stamp token of a head of ``base`` checked as well."""
    if base is None:
        base = build(tmp / "base", kind, key)
        if attempt_files:
            to_attempt_files(base / "r")
    assert verify_run(base, "r", key, witness=witness).ok
    out = {}
    for name, cases in CLASSES.items():
        detected = 0
        for n, tamper in enumerate(cases):
            runs = tmp / f"{name}-{n}"
            shutil.copytree(base, runs)
            tamper(runs / "r", kind)
            try:
                caught = not verify_run(runs, "r", key, witness=witness).ok
            except RoadcheckError:
                caught = True
            detected += caught
            shutil.rmtree(runs)
        out[name] = (detected, len(cases))
    return out


def table(kind: str, key: AnyKey | None, counts: dict[str, tuple[int, int]]) -> str:
    lines = [f"tamper matrix: {kind} store, {'with' if key else 'without'} a key"]
    for name, (hit, total) in counts.items():
        honest = " (not detectable without a key)" if key is None and name in KEY_ONLY else ""
        lines.append(f"  {name:<15} {hit}/{total} detected{honest}")
    return "\n".join(lines)


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROADCHECK_EVIDENCE_KEY", raising=False)
    monkeypatch.delenv("ROADCHECK_EVIDENCE_KEY_FILE", raising=False)


class TestTamperMatrix:
    """Detected/total per class, per store, per key mode."""

    @pytest.mark.parametrize("kind", ["jsonl", "jsonl-attempt-files", "sqlite"])
    def test_with_a_key_every_class_is_detected(self, tmp_path: Path, kind: str) -> None:
        """With a key: 100% in every class."""
        counts = run_matrix(tmp_path, kind.split("-")[0], KEY, kind.endswith("-files"))
        report = table(kind, KEY, counts)
        print(report)
        assert all(hit == total for hit, total in counts.values()), report

    @pytest.mark.parametrize("kind", ["jsonl", "jsonl-attempt-files", "sqlite"])
    def test_without_a_key(self, tmp_path: Path, kind: str) -> None:
        """Without a key: every naive class is caught; head-rewriting ones are honestly not."""
        counts = run_matrix(tmp_path, kind.split("-")[0], None, kind.endswith("-files"))
        report = table(kind, None, counts)
        print(report)
        for name, (hit, total) in counts.items():
            if name in KEY_ONLY:
                assert hit == 0, report  # what the docs and `verify` say cannot be seen
            else:
                assert hit == total, report

    @pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
    def test_signed_and_checked_with_the_public_key_alone(self, tmp_path: Path,
                                                          kind: str) -> None:
        """A run whose head is signed with an Ed25519 private key: every class is detected
        by a verifier holding only the public key, which could not forge a head."""
        from roadcheck.evidence.signing import SigningKey

        signer = SigningKey.generate()
        base = build(tmp_path / "signed", kind, signer)
        assert verify_run(base, "r", signer.public).authenticated
        counts = run_matrix(tmp_path, kind, signer.public, base=base)
        report = table(kind, signer.public, counts)
        print(report)
        assert all(hit == total for hit, total in counts.values()), report

    def test_unkeyed_verify_says_what_it_cannot_detect(self, tmp_path: Path) -> None:
        """An unkeyed OK names its limits."""
        check = verify_run(build(tmp_path, "jsonl", None), "r")
        assert check.ok and not check.authenticated
        assert "no key: a writer of the run directory could re-hash the chain" in check.scope
        assert "internal consistency only" in check.scope
