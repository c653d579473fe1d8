"""The evidence key, the anchored head, crash recovery and SQLite's integrity check."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import orjson
import pytest
from tests.evidence_layout import head_of, put_head

from roadcheck.errors import InputError
from roadcheck.evidence import EvidenceKey, Head, JsonlStore, load_key, verify_run

from .test_tamper_matrix import KEY, build

pytestmark = pytest.mark.usefixtures("no_evidence_key")


class TestLoadKey:
    """Where the key comes from."""

    def test_none_without_configuration(self) -> None:
        """No file and no variable: no key."""
        assert load_key(env={}) is None

    def test_file_wins_over_variable(self, tmp_path: Path) -> None:
        """A key file is read (trailing newline dropped) before the variable."""
        (tmp_path / "k").write_bytes(b"f" * 20 + b"\n")
        key = load_key(tmp_path / "k", env={"ROADCHECK_EVIDENCE_KEY": "v" * 20})
        assert key == EvidenceKey(b"f" * 20)

    def test_variable(self) -> None:
        """ROADCHECK_EVIDENCE_KEY holds the secret itself."""
        assert load_key(env={"ROADCHECK_EVIDENCE_KEY": "v" * 20}) == EvidenceKey(b"v" * 20)

    def test_short_key_is_refused(self) -> None:
        """A key shorter than 16 bytes is refused."""
        with pytest.raises(InputError, match="at least 16"):
            load_key(env={"ROADCHECK_EVIDENCE_KEY": "short"})

    def test_repr_hides_the_secret(self) -> None:
        """The key's repr names its id, never the secret."""
        assert "kkkk" not in repr(KEY) and KEY.key_id in repr(KEY)


class TestHeadDocument:
    """The head's stored shape and the bytes its MAC covers."""

    @pytest.mark.parametrize("key", [None, EvidenceKey(b"k" * 32)])
    def test_to_dict_is_every_field_in_order(self, key: EvidenceKey | None) -> None:
        """to_dict gives what dataclasses.asdict gives: every field, declaration order."""
        head = Head("r", 3, "a" * 64, "b" * 64).sealed(key)
        assert list(head.to_dict().items()) == list(dataclasses.asdict(head).items())
        unsigned = {k: v for k, v in dataclasses.asdict(head).items() if k != "mac"}
        assert head.body() == orjson.dumps(unsigned, option=orjson.OPT_SORT_KEYS)

    def test_sealing_without_a_key_is_idempotent(self) -> None:
        """An unkeyed head sealed again is the same head."""
        head = Head("r", 1, "a" * 64).sealed(None)
        assert head.sealed(None) == head
        keyed = Head("r", 1, "a" * 64).sealed(EvidenceKey(b"k" * 32))
        assert keyed.sealed(None) == head


class TestDowngrade:
    """A keyed run never verifies or resumes as unkeyed, and the reverse is flagged."""

    def test_keyed_run_without_key_cannot_be_judged(self, tmp_path: Path) -> None:
        """Verifying a keyed run with no key exits 2 and asks for the key."""
        runs = build(tmp_path, "jsonl", KEY)
        with pytest.raises(InputError, match="give its key"):
            verify_run(runs, "r")

    def test_wrong_key(self, tmp_path: Path) -> None:
        """Another key is refused by its key id."""
        runs = build(tmp_path, "sqlite", KEY)
        with pytest.raises(InputError, match="is not the key of run"):
            verify_run(runs, "r", EvidenceKey(b"x" * 32))

    @pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
    def test_unkeyed_run_with_key_is_unauthenticated(self, tmp_path: Path, kind: str) -> None:
        """A key holder does not accept a run without a MAC (it may be a downgrade)."""
        runs = build(tmp_path, kind, None)
        check = verify_run(runs, "r", KEY)
        assert (check.ok, check.problem) == (False, "unauthenticated")

    def test_stripped_mac_is_caught(self, tmp_path: Path) -> None:
        """Rewriting a keyed head as unkeyed is caught by whoever holds the key."""
        runs = build(tmp_path, "jsonl", KEY)
        head = head_of(runs / "r")
        put_head(runs / "r", {**head, "auth": "none", "key_id": None, "mac": None})
        assert verify_run(runs, "r", KEY).problem == "unauthenticated"

    def test_keyed_ok_is_authenticated(self, tmp_path: Path) -> None:
        """A keyed run verifies with its key and says so."""
        check = verify_run(build(tmp_path, "jsonl", KEY), "r", KEY)
        assert check.ok and check.authenticated
        assert check.scope.startswith("authenticated (hmac-sha256")


class TestCrashBetweenRecordAndHead:
    """One last record the head does not count never committed: resume sets it aside."""

    @pytest.mark.parametrize("key", [None, KEY])
    def test_uncounted_record_is_set_aside(self, tmp_path: Path,
                                           key: EvidenceKey | None) -> None:
        """Verify calls it appended; recover moves it and its attempt file aside."""
        runs = build(tmp_path, "jsonl", key)
        store = JsonlStore(runs / "r", "r", key)
        head = Head.from_dict(head_of(runs / "r"))
        records = store.records()
        lag = dataclasses.replace(head, records=4, last_hash=records[3]["hash"]).sealed(key)
        put_head(runs / "r", lag.to_dict())
        check = store.verify()
        assert (check.problem, check.position) == ("appended", 5)
        assert "resume sets it aside" in check.message
        notes, after = store.recover()
        assert after.ok and after.records == 4, after.message
        assert "set aside as evidence.torn.1" in notes[0]
        assert orjson.loads((runs / "r" / "evidence.torn.1").read_bytes()) == records[4]
        assert (runs / "r" / "evidence.torn.1.attempt.json").exists()

    def test_two_uncounted_records_are_refused(self, tmp_path: Path) -> None:
        """Only one record can be in flight: two uncounted ones stay broken."""
        runs = build(tmp_path, "jsonl", None)
        store = JsonlStore(runs / "r", "r")
        head = Head.from_dict(head_of(runs / "r"))
        records = store.records()
        lag = dataclasses.replace(head, records=3, last_hash=records[2]["hash"])
        put_head(runs / "r", lag.to_dict())
        notes, after = store.recover()
        assert (notes, after.problem, after.position) == ([], "appended", 4)


class TestSqliteIntegrity:
    """SQLite verify runs PRAGMA integrity_check."""

    def test_corrupt_page_is_reported(self, tmp_path: Path) -> None:
        """Garbage written over an index page is reported as corrupt, exit 1."""
        runs = build(tmp_path, "sqlite", None)
        db = runs / "r" / "evidence.sqlite"
        conn = sqlite3.connect(db)
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE type = 'index' AND "
                            "tbl_name = 'evidence'").fetchone()[0]
        conn.close()
        data = bytearray(db.read_bytes())
        data[(root - 1) * page + 8:(root - 1) * page + 64] = b"\xff" * 56
        db.write_bytes(bytes(data))
        check = verify_run(runs, "r")
        assert (check.ok, check.problem) == (False, "corrupt")
