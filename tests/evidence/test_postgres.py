"""The PostgreSQL store: schema migration, records, fencing, and the tamper matrix.

The matrix is the file stores' (tests/evidence/test_tamper_matrix.py) applied to
rows: every class at every position on a finished five-record run, with and
without a key. Run with ``-s`` to see the table.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson
import psycopg
import pytest

from roadcheck.errors import RoadcheckError, StoreError
from roadcheck.evidence import FIELDS, GENESIS, EvidenceKey, params_digest
from roadcheck.evidence.postgres import (
    SCHEMA_VERSION,
    Claim,
    Database,
    LeaseLost,
    PostgresStore,
    redact,
    verify_pg_run,
)

from ..postgres import sql
from .test_tamper_matrix import KEY, KEY_ONLY, N, matching_head, rehash

PARAMS = {"doc": "a"}

State = tuple[list[dict[str, Any]], dict[str, Any]]


pytestmark = pytest.mark.usefixtures("no_evidence_key")


def _manifest(key: EvidenceKey | None) -> dict[str, Any]:
    return {"run_id": "r", "workflow": "w", "store": "postgres", "params": PARAMS,
            "gated": True, "auth": "hmac-sha256" if key else "none",
            "key_id": key.key_id if key else None}


def _record(i: int) -> dict[str, Any]:
    return {"run_id": "r", "workflow": "w", "phase": f"p{i}", "attempt": 1, "iteration": i,
            "verdict": "fail" if i == 2 else "pass",
            "gate": {"kind": "command", "summary": "ok", "detail": "", "exit_code": 0,
                     "output": ""},
            "artifact": {"path": f"p{i}.txt", "sha256": "ab" * 32, "bytes": 4},
            "role": "writer", "identity": "alice", "started_at": "2026-01-01T00:00:00.000Z",
            "finished_at": "2026-01-01T00:00:01.000Z", "params_sha256": params_digest(PARAMS)}


def build(url: str, key: EvidenceKey | None, n: int = N) -> None:
    """A finished run ``r`` of ``n`` records."""
    db = Database(url)
    try:
        db.create_run(_manifest(key), "writer", key)
        store = PostgresStore(db, "r", key)
        for i in range(1, n + 1):
            store.append(_record(i))
    finally:
        db.close()


def verify(url: str, key: EvidenceKey | None) -> bool:
    """True when the run verifies; an error that refuses to judge counts as detection."""
    try:
        return verify_pg_run(url, "r", key).ok
    except RoadcheckError:
        return False


# -- reading and writing a run the way an attacker with database access would ---------------

def read_state(url: str) -> State:
    rows = sql(url, f"SELECT {', '.join(FIELDS)} FROM roadcheck_evidence WHERE run_id = 'r' "
                    "ORDER BY position")
    recs = []
    for row in rows:
        rec = dict(zip(FIELDS, row, strict=True))
        rec["gate"], rec["artifact"] = orjson.loads(rec["gate"]), orjson.loads(rec["artifact"])
        recs.append(rec)
    (doc,), = sql(url, "SELECT doc FROM roadcheck_heads WHERE run_id = 'r'")
    return recs, orjson.loads(str(doc))


def write_state(url: str, records: list[dict[str, Any]], head: dict[str, Any] | None) -> None:
    """Write records back with positions 1..n; ``head=None`` leaves the head as it is.
    One connection, each statement on its own (autocommit), as :func:`sql` runs them."""
    cols = [k for k in FIELDS if k != "run_id"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM roadcheck_evidence WHERE run_id = 'r'")
        for pos, r in enumerate(records, 1):
            values = [orjson.dumps(r[k]).decode() if k in ("gate", "artifact") else r[k]
                      for k in cols]
            conn.execute(f"INSERT INTO roadcheck_evidence (run_id, position, {', '.join(cols)}) "
                         f"VALUES ('r', %s, {', '.join(['%s'] * len(cols))})",
                         (pos, *values))  # type: ignore[arg-type]
        if head is not None:
            conn.execute("UPDATE roadcheck_heads SET doc = %s WHERE run_id = 'r'",
                         (orjson.dumps(head).decode(),))


Tamper = Callable[[str], None]


def _edit(i: int) -> Tamper:
    def go(url: str) -> None:
        recs, _ = read_state(url)
        recs[i]["verdict"] = "pass" if recs[i]["verdict"] == "fail" else "fail"
        write_state(url, recs, None)
    return go


def _delete(i: int) -> Tamper:
    def go(url: str) -> None:
        recs, _ = read_state(url)
        del recs[i]
        write_state(url, recs, None)
    return go


def _delete_row(i: int) -> Tamper:
    def go(url: str) -> None:
        sql(url, "DELETE FROM roadcheck_evidence WHERE run_id = 'r' AND position = %s", i + 1)
    return go


def _swap(i: int) -> Tamper:
    def go(url: str) -> None:
        recs, _ = read_state(url)
        recs[i], recs[i + 1] = recs[i + 1], recs[i]
        write_state(url, recs, None)
    return go


def _rehash(i: int) -> Tamper:
    def go(url: str) -> None:
        recs, head = read_state(url)
        recs[i]["verdict"] = "pass" if recs[i]["verdict"] == "fail" else "fail"
        rehash(recs, i)
        write_state(url, recs, matching_head(head, recs))
    return go


def _append(naive: bool) -> Tamper:
    def go(url: str) -> None:
        recs, head = read_state(url)
        forged = copy.deepcopy(recs[-1])
        forged.update(phase="forged", iteration=N + 1, verdict="pass")
        recs.append(forged)
        rehash(recs, len(recs) - 1)
        write_state(url, recs, None if naive else matching_head(head, recs))
    return go


def _cut(k: int, naive: bool) -> Tamper:
    def go(url: str) -> None:
        recs, head = read_state(url)
        recs = recs[:-k]
        write_state(url, recs, None if naive else matching_head(head, recs))
    return go


def _manifest_edit(url: str) -> None:
    (raw,), = sql(url, "SELECT manifest FROM roadcheck_runs WHERE run_id = 'r'")
    doc = orjson.loads(str(raw))
    doc["params"] = {"doc": "b"}
    sql(url, "UPDATE roadcheck_runs SET manifest = %s WHERE run_id = 'r'",
        orjson.dumps(doc).decode())


def _head_gone(url: str) -> None:
    sql(url, "DELETE FROM roadcheck_heads WHERE run_id = 'r'")


CLASSES: dict[str, list[Tamper]] = {
    "edit": [_edit(i) for i in range(N)],
    "delete": [_delete(i) for i in range(N - 1)],
    "delete-row": [_delete_row(i) for i in range(N - 1)],
    "swap": [_swap(i) for i in range(N - 1)],
    "re-hash": [_rehash(i) for i in range(N)],
    "append": [_append(naive=False)],
    "cut-tail": [_cut(k, naive=False) for k in range(1, N + 1)],
    "naive-append": [_append(naive=True)],
    "naive-cut-tail": [_cut(k, naive=True) for k in range(1, N + 1)],
    "manifest": [_manifest_edit],
    "head-deleted": [_head_gone],
}


def sample(cases: list[Tamper]) -> list[Tamper]:
    """A class's first, middle and last position (the default run; ``-m stress``: all)."""
    return [cases[i] for i in sorted({0, len(cases) // 2, len(cases) - 1})]


def run_matrix(url: str, key: EvidenceKey | None, *, whole: bool = False,
               ) -> dict[str, tuple[int, int]]:
    """``{class: (detected, total)}`` for one key mode, every position of each class or
    its :func:`sample`; the run is restored between cases."""
    build(url, key)
    assert verify(url, key)
    records, head = read_state(url)
    (manifest,), = sql(url, "SELECT manifest FROM roadcheck_runs WHERE run_id = 'r'")
    out = {}
    for name, every in CLASSES.items():
        cases = every if whole else sample(every)
        detected = 0
        for tamper in cases:
            tamper(url)
            detected += not verify(url, key)
            sql(url, "UPDATE roadcheck_runs SET manifest = %s WHERE run_id = 'r'", manifest)
            sql(url, "INSERT INTO roadcheck_heads (run_id, doc) VALUES ('r', %s) ON CONFLICT "
                     "(run_id) DO UPDATE SET doc = excluded.doc", orjson.dumps(head).decode())
            write_state(url, copy.deepcopy(records), None)
            assert verify(url, key), f"{name}: the run was not restored"
        out[name] = (detected, len(cases))
    return out


def table(key: EvidenceKey | None, counts: dict[str, tuple[int, int]]) -> str:
    lines = [f"tamper matrix: postgres store, {'with' if key else 'without'} a key"]
    for name, (hit, total) in counts.items():
        honest = " (not detectable without a key)" if key is None and name in KEY_ONLY else ""
        lines.append(f"  {name:<15} {hit}/{total} detected{honest}")
    return "\n".join(lines)


class TestTamperMatrix:
    """Detected/total per class, per key mode: the file stores' results on rows. The default
    run tampers at three positions of each class; ``pytest -m stress`` at every one."""

    @pytest.mark.parametrize("whole", [pytest.param(True, marks=pytest.mark.stress), False],
                             ids=["every-position", "sampled"])
    def test_with_a_key_every_class_is_detected(self, url: str, whole: bool) -> None:
        """With a key: 100% in every class."""
        counts = run_matrix(url, KEY, whole=whole)
        report = table(KEY, counts)
        print(report)
        assert set(counts) == set(CLASSES)
        assert all(hit == total for hit, total in counts.values()), report

    @pytest.mark.parametrize("whole", [pytest.param(True, marks=pytest.mark.stress), False],
                             ids=["every-position", "sampled"])
    def test_without_a_key(self, url: str, whole: bool) -> None:
        """Without a key: every naive class is caught; head-rewriting ones are honestly not."""
        counts = run_matrix(url, None, whole=whole)
        report = table(None, counts)
        print(report)
        assert set(counts) == set(CLASSES)
        for name, (hit, total) in counts.items():
            if name in KEY_ONLY:
                assert hit == 0, report
            else:
                assert hit == total, report


class TestSchema:
    """roadcheck creates and migrates its schema itself."""

    def test_migration_is_idempotent(self, url: str) -> None:
        """Opening the database twice applies each version once."""
        Database(url).close()
        Database(url).close()
        rows = sql(url, "SELECT version FROM roadcheck_schema_version ORDER BY version")
        assert rows == [(v,) for v in range(1, SCHEMA_VERSION + 1)]

    def test_a_newer_schema_is_refused(self, url: str) -> None:
        """A database migrated by a newer roadcheck is not written by an older one."""
        Database(url).close()
        sql(url, "INSERT INTO roadcheck_schema_version (version) VALUES (%s)", SCHEMA_VERSION + 1)
        with pytest.raises(StoreError, match="upgrade roadcheck"):
            Database(url)

    def test_unreachable_server_is_one_line_error(self) -> None:
        """A server that does not answer is a store error naming it, password hidden."""
        with pytest.raises(StoreError, match=r"cannot open the evidence database") as caught:
            Database("postgresql://u:secret@127.0.0.1:1/x", timeout=2)
        assert "secret" not in str(caught.value) and "u:***@127.0.0.1:1" in str(caught.value)

    def test_redact_keeps_everything_but_the_password(self) -> None:
        """Only the password is hidden."""
        assert redact("postgresql://u:pw@h:5/db?x=1") == "postgresql://u:***@h:5/db?x=1"
        assert redact("postgresql://h/db") == "postgresql://h/db"


class TestStore:
    """Records round-trip and writes are fenced by the claim."""

    def test_records_round_trip_and_verify(self, url: str) -> None:
        """What is appended is read back sealed, in order, and the chain verifies."""
        build(url, KEY, n=3)
        db = Database(url)
        try:
            recs = PostgresStore(db, "r", KEY).records()
        finally:
            db.close()
        assert [r["phase"] for r in recs] == ["p1", "p2", "p3"]
        assert recs[0]["prev_hash"] == GENESIS and recs[1]["prev_hash"] == recs[0]["hash"]
        check = verify_pg_run(url, "r", KEY)
        assert check.ok and check.authenticated and check.records == 3

    def test_a_keyed_run_needs_its_key(self, url: str) -> None:
        """Verifying an authenticated run without its key refuses to judge."""
        build(url, KEY, n=1)
        with pytest.raises(RoadcheckError, match="give its key"):
            verify_pg_run(url, "r", None)

    def test_a_second_run_of_one_id_is_refused(self, url: str) -> None:
        """Run ids are unique in the database."""
        build(url, None, n=0)
        db = Database(url)
        try:
            with pytest.raises(RoadcheckError, match="already exists"):
                db.create_run(_manifest(None), "writer", None)
        finally:
            db.close()

    def test_a_lost_lease_writes_nothing(self, url: str) -> None:
        """Once another worker took the run over, the old claim can append nothing."""
        build(url, None, n=1)
        db = Database(url)
        try:
            first = db.claim("w", "writer", "alice", lease=30)
            assert first is not None
            assert db.claim("w", "writer", "bob", lease=30) is None  # held
            sql(url, "UPDATE roadcheck_runs SET lease_expires = now() - interval '1 second'")
            second = db.claim("w", "writer", "bob", lease=30)
            assert second is not None and second.token != first.token
            stale = PostgresStore(db, "r", None, claim=first)
            with pytest.raises(LeaseLost, match="another worker took the run over"):
                stale.append(_record(2))
            with pytest.raises(LeaseLost):
                stale.append_effect({"phase": "p2", "state": "attempted"})
            assert not db.heartbeat(first, 30)
            assert db.heartbeat(second, 30)
            PostgresStore(db, "r", None, claim=second).append(_record(2))
            assert len(PostgresStore(db, "r", None).records()) == 2
        finally:
            db.close()
        assert verify_pg_run(url, "r", None).ok

    def test_a_lease_lost_between_appends_writes_nothing(self, url: str) -> None:
        """A store that appended under its claim (and so knows the head) writes nothing once
        the claim is taken over: the one-statement append is fenced like the first."""
        build(url, None, n=0)
        db = Database(url)
        try:
            first = db.claim("w", "writer", "alice", lease=30)
            assert first is not None
            store = PostgresStore(db, "r", None, claim=first)
            store.append(_record(1))
            store.append(_record(2))
            sql(url, "UPDATE roadcheck_runs SET lease_expires = now() - interval '1 second'")
            second = db.claim("w", "writer", "bob", lease=30)
            assert second is not None
            with pytest.raises(LeaseLost, match="another worker took the run over"):
                store.append(_record(3))
            assert len(PostgresStore(db, "r", None).records()) == 2
            PostgresStore(db, "r", None, claim=second).append(_record(3))
        finally:
            db.close()
        check = verify_pg_run(url, "r", None)
        assert check.ok and check.records == 3

    def test_an_append_behind_a_stores_back_is_chained_on(self, url: str) -> None:
        """Two stores of one run appending in turn: each append chains on the head in the
        database, not on the one its store wrote last."""
        build(url, KEY, n=0)
        db = Database(url)
        try:
            one, two = PostgresStore(db, "r", KEY), PostgresStore(db, "r", KEY)
            for i in range(1, 7):
                (one if i % 3 else two).append(_record(i))
            recs = one.records()
        finally:
            db.close()
        assert [r["phase"] for r in recs] == [f"p{i}" for i in range(1, 7)]
        check = verify_pg_run(url, "r", KEY)
        assert check.ok and check.records == 6

    def test_a_forged_claim_token_writes_nothing(self, url: str) -> None:
        """A claim that is not the run's lease is refused like a lost one."""
        build(url, None, n=1)
        db = Database(url)
        try:
            with pytest.raises(LeaseLost):
                PostgresStore(db, "r", None, claim=Claim("r", "x" * 32, {})).append(_record(2))
        finally:
            db.close()
