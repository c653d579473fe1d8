"""GuardStore: sessions on disk, one process per call, and the decision log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import roadcheck
from roadcheck.errors import StoreError
from roadcheck.guard.store import verify_session
from roadcheck.harness.audit import load_trail
from roadcheck.report.harness import audit_text

from ..conftest import ROOT
from . import stored

SPEC = {"mandatory_checkpoints": [{"checkpoint_id": "ok", "must_precede": "deploy",
                                   "scope": "each", "consume": True}]}


class TestSessions:
    def test_state_survives_between_stores(self, tmp_path: Path) -> None:
        """What one store object observed, a fresh one (another process) sees."""
        with roadcheck.GuardStore(tmp_path, SPEC).session("s-1", create=True) as live:
            live.observe({"event": "checkpoint", "checkpoint_id": "ok", "confirmed_by": "ann"})
        with roadcheck.GuardStore(tmp_path, SPEC).session("s-1") as live:
            d = live.check({"event": "action", "action_type": "deploy"})
            assert d.allowed and d.approvers == ("ann",)
            live.observe({"event": "action", "action_type": "deploy"})
        with roadcheck.GuardStore(tmp_path, SPEC).session("s-1") as live:
            assert live.check({"event": "action", "action_type": "deploy"}).verdict == "ask"

    def test_the_spec_cache_keeps_the_latest_specs(self, tmp_path: Path) -> None:
        """Each edit of a spec file caches one more checked spec; the oldest are removed,
        and a spec whose cache entry went is read and checked again, the same."""
        import hashlib
        import os

        from roadcheck.guard.snapshot import SPEC_CACHE_KEEP

        state = tmp_path / "state"
        spec = tmp_path / "spec.json"
        digests: list[str] = []
        for i in range(SPEC_CACHE_KEEP + 4):
            doc = {"mandatory_checkpoints": [{"checkpoint_id": f"ok{i}",
                                              "must_precede": "deploy"}]}
            spec.write_text(json.dumps(doc))
            roadcheck.GuardStore(state, spec)
            digest = hashlib.sha256(spec.read_bytes()).hexdigest()
            digests.append(digest)
            os.utime(state / ".specs" / digest, (1_000_000 + i, 1_000_000 + i))  # in order
        cached = list((state / ".specs").iterdir())
        assert sorted(p.name for p in cached) == sorted(digests[-SPEC_CACHE_KEEP:])
        assert not [p for p in cached if p.name.startswith(".")]
        first = {"mandatory_checkpoints": [{"checkpoint_id": "ok0", "must_precede": "deploy"}]}
        spec.write_text(json.dumps(first))
        store = roadcheck.GuardStore(state, spec)
        assert [r.checkpoint_id for r in store.spec.mandatory_checkpoints] == ["ok0"]

    def test_unknown_session_fails_closed(self, tmp_path: Path) -> None:
        """A session that was never created is an error, not an empty past."""
        with pytest.raises(StoreError, match="unknown guard session 'nope'"), \
                roadcheck.GuardStore(tmp_path, SPEC).session("nope"):
            pass

    @pytest.mark.parametrize("body", [b"{", b"[]", b'{"format": "roadcheck-guard-state/1"}',
                                      b'{"format": "roadcheck-guard-state/2", "session": "s", '
                                      b'"events": [{"seq": 1}]}'])
    def test_unsealed_state_fails_closed(self, tmp_path: Path, body: bytes) -> None:
        """A state file the guard did not seal (by hand, or an earlier version's) is an error."""
        (tmp_path / "s").mkdir()
        (tmp_path / "s" / "guard.json").write_bytes(body)
        with pytest.raises(StoreError, match=r"guard\.json: is not a sealed guard file"), \
                roadcheck.GuardStore(tmp_path, SPEC).session("s"):
            pass

    @pytest.mark.parametrize("doc", [[], {"format": "roadcheck-guard-state/3"},
                                     {"format": "roadcheck-guard-state/3", "session": "s",
                                      "events": [{"seq": 1}]}])
    def test_a_sealed_state_of_another_shape_fails_closed(self, tmp_path: Path,
                                                          doc: object) -> None:
        """Sealed with the key, yet not a state of this session: still an error."""
        store = roadcheck.GuardStore(tmp_path, SPEC)
        (tmp_path / "s").mkdir()
        (tmp_path / "s" / "guard.json").write_bytes(
            store.sealer.seal("state", "s", 1, json.dumps(doc).encode()))
        with pytest.raises(StoreError, match="corrupt guard state"), store.session("s"):
            pass

    def test_bad_session_id_is_refused(self, tmp_path: Path) -> None:
        """A session id that could name a path outside the store is refused."""
        with pytest.raises(StoreError, match="unusable session id"), \
                roadcheck.GuardStore(tmp_path, SPEC).session("../x", create=True):
            pass

    def test_nothing_is_saved_when_the_block_raises(self, tmp_path: Path) -> None:
        """An exception inside the session leaves the stored state as it was."""
        def fail() -> None:
            with roadcheck.GuardStore(tmp_path, SPEC).session("s", create=True) as live:
                live.observe({"event": "checkpoint", "checkpoint_id": "ok"})
                raise RuntimeError

        with pytest.raises(RuntimeError):
            fail()
        assert not (tmp_path / "s" / "guard.json").exists()

    def test_concurrent_processes_lose_no_event(self, tmp_path: Path) -> None:
        """Processes observing into one session at once all land: the lock serialises them."""
        code = ("import sys, roadcheck\n"
                f"store = roadcheck.GuardStore(sys.argv[1], {SPEC!r})\n"
                "for _ in range(10):\n"
                "    with store.session('s', create=True) as live:\n"
                "        live.observe({'event': 'checkpoint', 'checkpoint_id': 'ok'})\n")
        procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT)
                 for _ in range(4)]
        assert [p.wait(timeout=60) for p in procs] == [0] * 4
        state = stored.state(tmp_path / "s" / "guard.json")
        assert [e["seq"] for e in state["events"]] == list(range(1, 41))


class TestDecisionLog:
    def test_every_decision_is_a_chained_record_audit_renders(self, tmp_path: Path) -> None:
        """Decisions land in the evidence store; the chain verifies and audit lists them."""
        store = roadcheck.GuardStore(tmp_path, SPEC)
        with store.session("s", create=True) as live:
            live.check({"event": "action", "action_type": "deploy", "args": {"env": "prod"}})
            live.observe({"event": "checkpoint", "checkpoint_id": "ok", "confirmed_by": "ann"})
            live.check({"event": "action", "action_type": "deploy", "args": {"env": "prod"}})
        assert verify_session(tmp_path, "s").ok
        trail = load_trail(tmp_path, "s")
        assert [r["verdict"] for r in trail.records] == ["fail", "pass"]
        assert trail.records[1]["identity"] == "ann"
        text = audit_text(trail)
        assert "audit: guard session s (sqlite store), 2 decisions" in text
        assert " ASK deploy " in text and " ALLOW deploy " in text
        assert "approved by ann" in text
        assert "checkpoint-skipped: checkpoint 'ok' is absent" in text

    def test_an_edited_decision_is_detected(self, tmp_path: Path) -> None:
        """Rewriting a logged verdict breaks the chain."""
        import sqlite3

        with roadcheck.GuardStore(tmp_path, SPEC).session("s", create=True) as live:
            live.check({"event": "action", "action_type": "deploy"})
        conn = sqlite3.connect(tmp_path / "s" / "evidence.sqlite")
        conn.execute("UPDATE evidence SET verdict = 'pass'")
        conn.commit()
        conn.close()
        assert verify_session(tmp_path, "s").problem == "edited"
