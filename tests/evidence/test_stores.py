"""Tests for the evidence stores, the hash chain and ``roadcheck evidence verify``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.evidence_layout import (
    attempt_file,
    copy_lines,
    record_lines,
    to_attempt_files,
    write_record_lines,
)

from roadcheck.cli import cli
from roadcheck.errors import InputError, StoreError
from roadcheck.evidence import (
    FIELDS,
    GENESIS,
    EvidenceKey,
    JsonlStore,
    SqliteStore,
    open_store,
    record_hash,
    verify_run,
)
from roadcheck.evidence.store import COPIES, SLOT


def _record(phase: str, attempt: int, iteration: int, verdict: str = "pass") -> dict[str, Any]:
    return {"run_id": "r", "workflow": "w", "phase": phase, "attempt": attempt,
            "iteration": iteration, "verdict": verdict,
            "gate": {"kind": "command", "summary": "gate command exited 0", "detail": "",
                     "exit_code": 0, "output": ""},
            "artifact": {"path": f"{phase}.txt", "sha256": "ab" * 32, "bytes": 4},
            "role": "writer", "identity": "alice", "started_at": "2026-01-01T00:00:00.000Z",
            "finished_at": "2026-01-01T00:00:01.000Z", "params_sha256": "cd" * 32}


def _fill(store: JsonlStore | SqliteStore) -> list[dict[str, Any]]:
    out = [store.append(_record("a", 1, 1, "fail")), store.append(_record("a", 2, 2)),
           store.append(_record("b", 1, 3)), store.append(_record("c", 1, 4))]
    store.close()
    return out


@pytest.fixture(params=["jsonl", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[JsonlStore | SqliteStore]:
    """A fresh store of each kind for run ``r`` under tmp_path/runs."""
    s = open_store(tmp_path / "runs", "r", request.param)
    yield s
    s.close()


class TestRecord:
    """The record shape and its hash."""

    def test_sealed_fields_in_order(self, store: JsonlStore | SqliteStore) -> None:
        """A sealed record carries every field in order and chains from GENESIS."""
        first = store.append(_record("a", 1, 1))
        assert tuple(first) == FIELDS
        assert first["prev_hash"] == GENESIS
        assert first["hash"] == record_hash(first)

    def test_round_trip(self, store: JsonlStore | SqliteStore) -> None:
        """Records read back equal the records appended, in order."""
        written = _fill(store)
        assert store.records() == written

    def test_chain_links(self, store: JsonlStore | SqliteStore) -> None:
        """Each record's prev_hash is the hash of the record before it."""
        written = _fill(store)
        assert [r["prev_hash"] for r in written[1:]] == [r["hash"] for r in written[:-1]]

    def test_reopened_store_continues_the_chain(self, store: JsonlStore | SqliteStore,
                                                tmp_path: Path) -> None:
        """A second store object on the same run appends after the last record."""
        written = _fill(store)
        again = open_store(tmp_path / "runs", "r")
        try:
            nxt = again.append(_record("d", 1, 5))
        finally:
            again.close()
        assert nxt["prev_hash"] == written[-1]["hash"]
        assert verify_run(tmp_path / "runs", "r").ok


class TestJsonlStore:
    """The flat-file store."""

    def test_layout(self, tmp_path: Path) -> None:
        """evidence.jsonl holds its head line, then one line per record; attempts.jsonl the
        attempt copy of each, line for line; no file per attempt."""
        _fill(JsonlStore(tmp_path / "r", "r"))
        lines = (tmp_path / "r" / "evidence.jsonl").read_bytes().splitlines(keepends=True)
        assert len(lines) == 5 and len(lines[0]) == SLOT
        assert json.loads(lines[0])["head"]["records"] == 4
        assert not (tmp_path / "r" / "head.json").exists()
        assert copy_lines(tmp_path / "r") == [line.decode().rstrip("\n") for line in lines[1:]]
        assert [json.loads(c)["phase"] for c in copy_lines(tmp_path / "r")] == ["a", "a", "b",
                                                                              "c"]
        assert not (tmp_path / "r" / "phases").exists()

    def test_unreadable_line(self, tmp_path: Path) -> None:
        """A line that is not JSON is a store error naming the line."""
        (tmp_path / "r").mkdir()
        (tmp_path / "r" / "evidence.jsonl").write_text('{"a": 1}\nnot json\n')
        with pytest.raises(StoreError, match=r"evidence.jsonl:2: unreadable record"):
            JsonlStore(tmp_path / "r", "r").records()


class TestSqliteStore:
    """The SQLite store."""

    def test_wal_and_one_row_per_record(self, tmp_path: Path) -> None:
        """The database is in WAL mode and holds one row per record with identical fields."""
        written = _fill(SqliteStore(tmp_path / "r", "r"))
        conn = sqlite3.connect(tmp_path / "r" / "evidence.sqlite")
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            cols = [row[1] for row in conn.execute("PRAGMA table_info(evidence)")]
            assert conn.execute("SELECT count(*) FROM evidence").fetchone()[0] == len(written)
        finally:
            conn.close()
        assert cols == ["seq", *FIELDS]

    def test_committed_before_append_returns(self, tmp_path: Path) -> None:
        """Another connection sees a record as soon as append returns."""
        s = SqliteStore(tmp_path / "r", "r")
        try:
            s.append(_record("a", 1, 1))
            other = sqlite3.connect(tmp_path / "r" / "evidence.sqlite")
            try:
                assert other.execute("SELECT count(*) FROM evidence").fetchone()[0] == 1
            finally:
                other.close()
        finally:
            s.close()


class TestSqliteExtend:
    """Several records, their head and side documents in one commit."""

    def test_records_head_and_side_documents_commit_together(self, tmp_path: Path) -> None:
        key = EvidenceKey(b"k" * 32)
        s = SqliteStore(tmp_path / "r", "r", key)
        try:
            seen: list[Any] = []

            def side(head: Any) -> dict[str, str]:
                seen.append(head)
                return {"note": f"{head.records}:{head.last_hash}"}

            sealed = s.extend([_record("a", 1, 1), _record("b", 1, 2)],
                              manifest_sha256="ab" * 32, side=side)
            head, top, last = s.tail()
            assert top == 2 and last == sealed[-1]
            assert head == seen[0] and head.records == 2 and head.manifest_sha256 == "ab" * 32
            assert key.check(head.sealed(key).body(), head.mac)
            assert s.side_doc("note") == f"2:{sealed[-1]['hash']}"
            assert s.side_doc("other") is None
        finally:
            s.close()
        assert verify_run(tmp_path, "r", key).ok

    def test_a_store_without_side_documents_has_none(self, tmp_path: Path) -> None:
        s = SqliteStore(tmp_path / "r", "r")
        try:
            s.append(_record("a", 1, 1))
            assert s.side_doc("note") is None
            assert s.tail()[1] == 1
        finally:
            s.close()

    def test_a_failing_side_rolls_everything_back(self, tmp_path: Path) -> None:
        s = SqliteStore(tmp_path / "r", "r")
        try:
            s.append(_record("a", 1, 1))

            def side(head: Any) -> dict[str, str]:
                raise RuntimeError("no")

            with pytest.raises(RuntimeError):
                s.extend([_record("b", 1, 2)], side=side)
            assert s.tail()[1] == 1 and s.count() == 1
        finally:
            s.close()


def _tamper_jsonl(run_dir: Path, how: str) -> None:
    path = run_dir / "evidence.jsonl"
    lines = record_lines(path)
    if how == "edited":
        rec = json.loads(lines[1])
        rec["verdict"] = "pass" if rec["verdict"] == "fail" else "fail"
        lines[1] = json.dumps(rec)
    elif how == "dropped":
        del lines[1]
    elif how == "reordered":
        lines[1], lines[2] = lines[2], lines[1]
    elif how == "cut-tail":
        del lines[-1]
    write_record_lines(path, lines)


def _tamper_sqlite(run_dir: Path, how: str) -> None:
    conn = sqlite3.connect(run_dir / "evidence.sqlite")
    try:
        if how == "edited":
            conn.execute("UPDATE evidence SET identity = 'mallory' WHERE seq = 2")
        elif how == "dropped":
            conn.execute("DELETE FROM evidence WHERE seq = 2")
        elif how == "reordered":
            conn.execute("UPDATE evidence SET seq = 100 WHERE seq = 2")
            conn.execute("UPDATE evidence SET seq = 2 WHERE seq = 3")
            conn.execute("UPDATE evidence SET seq = 3 WHERE seq = 100")
        elif how == "cut-tail":
            conn.execute("DELETE FROM evidence WHERE seq = 4")
        conn.commit()
    finally:
        conn.close()


class TestVerifyChain:
    """Chain verification catches the first edited, dropped or reordered record."""

    @pytest.mark.parametrize(("how", "position"), [("edited", 2), ("dropped", 2),
                                                   ("reordered", 2), ("cut-tail", 4)])
    def test_tampering_is_caught(self, store: JsonlStore | SqliteStore, tmp_path: Path,
                                 how: str, position: int) -> None:
        """Each kind of tampering is named with the position of the first bad record."""
        _fill(store)
        run_dir = tmp_path / "runs" / "r"
        (_tamper_jsonl if store.kind == "jsonl" else _tamper_sqlite)(run_dir, how)
        check = verify_run(tmp_path / "runs", "r")
        assert not check.ok
        assert check.exit == 1
        assert check.problem == how.split("-")[0]
        assert check.position == position

    def test_intact_chain(self, store: JsonlStore | SqliteStore, tmp_path: Path) -> None:
        """An untouched run verifies OK."""
        _fill(store)
        check = verify_run(tmp_path / "runs", "r")
        assert (check.ok, check.records, check.exit) == (True, 4, 0)

    def test_cli_reports_edit(self, store: JsonlStore | SqliteStore, tmp_path: Path) -> None:
        """``roadcheck evidence verify`` exits 1 naming the edited record, 0 when intact."""
        _fill(store)
        runner = CliRunner()
        args = ["evidence", "verify", "r", "--runs-dir", str(tmp_path / "runs")]
        ok = runner.invoke(cli, args)
        assert ok.exit_code == 0
        assert "OK" in ok.output
        (_tamper_jsonl if store.kind == "jsonl" else _tamper_sqlite)(tmp_path / "runs" / "r",
                                                                     "edited")
        bad = runner.invoke(cli, [*args, "--format", "json"])
        assert bad.exit_code == 1
        doc = json.loads(bad.output)
        assert (doc["problem"], doc["position"], doc["ok"]) == ("edited", 2, False)

    def test_unknown_run(self, tmp_path: Path) -> None:
        """Verifying a run with no evidence exits 2."""
        result = CliRunner().invoke(cli, ["evidence", "verify", "ghost", "--runs-dir",
                                          str(tmp_path)])
        assert result.exit_code == 2
        assert "no evidence for run 'ghost'" in result.stderr

    def test_escaping_run_id(self, tmp_path: Path) -> None:
        """A run id that could leave the runs directory is refused."""
        with pytest.raises(InputError):
            verify_run(tmp_path, "../etc")


class TestMalformedStores:
    """A store file that is not what was written is broken evidence, never a crash."""

    def test_duplicate_key_in_a_record_line_is_broken(self, tmp_path: Path) -> None:
        """A record carrying ``hash`` twice is read differently by different readers: broken."""
        _fill(JsonlStore(tmp_path / "runs" / "r", "r"))
        ev = tmp_path / "runs" / "r" / "evidence.jsonl"
        lines = ev.read_text().splitlines(keepends=True)
        # line 1 is the head: record 2 is line 3
        lines[2] = lines[2].replace('"hash":', '"hash":"' + "0" * 64 + '","hash":', 1)
        ev.write_text("".join(lines))
        with pytest.raises(StoreError, match=r"evidence\.jsonl:3: unreadable record"):
            JsonlStore(tmp_path / "runs" / "r", "r").records()
        check = verify_run(tmp_path / "runs", "r")
        assert (check.problem, check.position) == ("edited", 2)

    def test_duplicate_key_in_an_attempt_copy_is_broken(self, tmp_path: Path) -> None:
        """The attempt copy of a record is held to the same rule."""
        _fill(JsonlStore(tmp_path / "runs" / "r", "r"))
        copies = tmp_path / "runs" / "r" / COPIES
        lines = copies.read_text().splitlines(keepends=True)
        lines[2] = lines[2].replace('"verdict":', '"verdict":"fail","verdict":', 1)
        copies.write_text("".join(lines))
        check = verify_run(tmp_path / "runs", "r")
        assert (check.problem, check.position) == ("edited", 3)

    def test_duplicate_key_in_an_attempt_file_is_broken(self, tmp_path: Path) -> None:
        """In a run made before attempts.jsonl, the attempt file is held to the same rule."""
        _fill(JsonlStore(tmp_path / "runs" / "r", "r"))
        to_attempt_files(tmp_path / "runs" / "r")
        attempt = tmp_path / "runs" / "r" / "phases" / "b.attempt1.pass.json"
        text = attempt.read_text()
        attempt.write_text(text.replace('"verdict":', '"verdict": "fail", "verdict":', 1))
        check = verify_run(tmp_path / "runs", "r")
        assert (check.problem, check.position) == ("edited", 3)

    def test_corrupt_sqlite_bytes_never_crash(self, tmp_path: Path) -> None:
        """Bytes that are not UTF-8 anywhere in the database: verify and audit exit 0, 1 or 2."""
        _fill(SqliteStore(tmp_path / "runs" / "r", "r"))
        db = tmp_path / "runs" / "r" / "evidence.sqlite"
        intact = db.read_bytes()
        runner = CliRunner()
        broken = 0
        for at in range(0, len(intact), 61):
            db.write_bytes(intact[:at] + b"\xfe\xff" + intact[at + 2:])
            for args in (["evidence", "verify", "r"], ["audit", "r"]):
                result = runner.invoke(cli, [*args, "--runs-dir", str(tmp_path / "runs")])
                assert result.exit_code in (0, 1, 2), (at, args, result.output)
                assert result.exception is None or isinstance(result.exception, SystemExit), \
                    (at, args, repr(result.exception))
                broken += result.exit_code != 0
        assert broken > 0


def _to_earlier_layout(run_dir: Path) -> None:
    """Rewrite a run as the earlier layout wrote it: records only, the head in head.json,
    a file per attempt copy."""
    to_attempt_files(run_dir)
    head_line, rest = (run_dir / "evidence.jsonl").read_bytes()[:SLOT], \
        (run_dir / "evidence.jsonl").read_bytes()[SLOT:]
    (run_dir / "evidence.jsonl").write_bytes(rest)
    (run_dir / "head.json").write_bytes(json.dumps(json.loads(head_line)["head"]).encode()
                                        + b"\n")


class TestEarlierLayout:
    """Runs written with the head in head.json still verify, resume and show tampering."""

    def _run(self, tmp_path: Path, key: EvidenceKey | None = None) -> Path:
        store = JsonlStore(tmp_path / "runs" / "r", "r", key)
        _fill(store)
        store.close()
        _to_earlier_layout(tmp_path / "runs" / "r")
        return tmp_path / "runs"

    @pytest.mark.parametrize("key", [None, EvidenceKey(b"k" * 32)])
    def test_verifies(self, tmp_path: Path, key: EvidenceKey | None) -> None:
        """The same records and head, in the earlier files, verify as before."""
        runs = self._run(tmp_path, key)
        check = verify_run(runs, "r", key)
        assert check.ok and check.records == 4, check.message

    def test_edit_and_cut_are_caught(self, tmp_path: Path) -> None:
        """An edited record and a cut tail are still broken evidence."""
        runs = self._run(tmp_path)
        ev = runs / "r" / "evidence.jsonl"
        lines = ev.read_text().splitlines()
        ev.write_text("\n".join(lines[:-1]) + "\n")
        assert verify_run(runs, "r").problem == "cut"
        ev.write_text("\n".join([lines[0].replace('"verdict":"fail"', '"verdict":"pass"'),
                                 *lines[1:]]) + "\n")
        assert not verify_run(runs, "r").ok

    def test_appends_in_its_own_layout(self, tmp_path: Path) -> None:
        """A resumed run keeps the layout it was created with: head.json moves on."""
        runs = self._run(tmp_path)
        store = JsonlStore(runs / "r", "r")
        try:
            assert store.legacy()
            store.append(_record("d", 1, 5))
        finally:
            store.close()
        assert json.loads((runs / "r" / "head.json").read_text())["records"] == 5
        assert not (runs / "r" / "evidence.jsonl").read_bytes().startswith(b'{"head":')
        assert (runs / "r" / "phases" / "d.attempt1.pass.json").is_file()
        assert not (runs / "r" / COPIES).exists()
        check = verify_run(runs, "r")
        assert check.ok and check.records == 5, check.message

    def test_no_head_at_all_is_unanchored(self, tmp_path: Path) -> None:
        """Records with neither a head line nor head.json are refused as unanchored."""
        runs = self._run(tmp_path)
        (runs / "r" / "head.json").unlink()
        check = verify_run(runs, "r")
        assert (check.ok, check.problem) == (False, "unanchored")


class TestAttemptCopies:
    """attempts.jsonl: line N is the copy of record N, and a crash leaves only the last one
    short."""

    def _run(self, tmp_path: Path) -> Path:
        _fill(JsonlStore(tmp_path / "runs" / "r", "r"))
        return tmp_path / "runs" / "r"

    def _rewrite(self, run_dir: Path, lines: list[str], tail: str = "") -> None:
        (run_dir / COPIES).write_text("".join(f"{line}\n" for line in lines) + tail)

    def test_a_missing_copy_is_dropped(self, tmp_path: Path) -> None:
        """A copy cut from the end is a record without its copy: dropped, at that record."""
        run_dir = self._run(tmp_path)
        self._rewrite(run_dir, copy_lines(run_dir)[:-1])
        check = verify_run(run_dir.parent, "r")
        assert (check.problem, check.position) == ("dropped", 4)
        assert f"missing from {COPIES}" in check.message

    def test_a_deleted_copies_file_is_dropped(self, tmp_path: Path) -> None:
        """Without attempts.jsonl, the first record has no copy."""
        run_dir = self._run(tmp_path)
        (run_dir / COPIES).unlink()
        check = verify_run(run_dir.parent, "r")
        assert (check.problem, check.position) == ("dropped", 1)

    @pytest.mark.parametrize("how", ["edit", "delete", "swap"])
    def test_a_changed_copy_is_edited(self, tmp_path: Path, how: str) -> None:
        """An edited, deleted or moved copy no longer matches its record."""
        run_dir = self._run(tmp_path)
        lines = copy_lines(run_dir)
        if how == "edit":
            lines[1] = lines[1].replace('"verdict":"pass"', '"verdict":"fail"')
        elif how == "delete":
            del lines[1]
        else:
            lines[1], lines[2] = lines[2], lines[1]
        self._rewrite(run_dir, lines)
        check = verify_run(run_dir.parent, "r")
        assert (check.problem, check.position) == ("edited", 2)

    def test_a_copy_without_record_is_dropped(self, tmp_path: Path) -> None:
        """A copy line past the last record holds a record missing from the chain."""
        run_dir = self._run(tmp_path)
        lines = copy_lines(run_dir)
        self._rewrite(run_dir, [*lines, lines[-1]])
        check = verify_run(run_dir.parent, "r")
        assert (check.problem, check.position) == ("dropped", 5)

    def test_a_torn_copy_after_counted_records_is_broken(self, tmp_path: Path) -> None:
        """An unterminated copy line that no uncounted record explains is refused."""
        run_dir = self._run(tmp_path)
        lines = copy_lines(run_dir)
        self._rewrite(run_dir, lines, lines[0][:40])
        check = verify_run(run_dir.parent, "r")
        assert (check.problem, check.position) == ("edited", 5)

    @pytest.mark.parametrize("copy", ["none", "torn", "whole"])
    def test_an_uncounted_record_is_set_aside_with_its_copy(self, tmp_path: Path,
                                                            copy: str) -> None:
        """Killed after a record and before its head: with no copy, a torn one or a whole one,
        the record and what there is of its copy are set aside, and the run goes on."""
        run_dir = tmp_path / "runs" / "r"
        store = JsonlStore(run_dir, "r")
        _fill(store)
        head = (run_dir / "evidence.jsonl").read_bytes()[:SLOT]
        before = (run_dir / COPIES).read_bytes()
        store = JsonlStore(run_dir, "r")
        store.append(_record("d", 1, 5))
        store.close()
        ev = run_dir / "evidence.jsonl"
        ev.write_bytes(head + ev.read_bytes()[SLOT:])  # the head never counted record 5
        last = copy_lines(run_dir)[-1]
        (run_dir / COPIES).write_bytes(before + {"none": b"", "torn": last[:30].encode(),
                                                 "whole": last.encode() + b"\n"}[copy])
        check = verify_run(run_dir.parent, "r")
        assert (check.problem, check.position) == ("appended", 5)
        again = JsonlStore(run_dir, "r")
        try:
            notes, check = again.recover()
            assert check.ok, check.message
            assert notes and "evidence.torn.1" in notes[0]
            aside = run_dir / "evidence.torn.1.attempt.json"
            assert aside.exists() == (copy != "none")
            assert (run_dir / COPIES).read_bytes() == before
            again.append(_record("d", 1, 5))
        finally:
            again.close()
        check = verify_run(run_dir.parent, "r")
        assert check.ok and check.records == 5, check.message

    def test_appends_keep_one_file(self, tmp_path: Path) -> None:
        """A reopened store appends its copies to the same attempts.jsonl."""
        run_dir = self._run(tmp_path)
        store = JsonlStore(run_dir, "r")
        try:
            assert store.copies()
            store.append(_record("d", 1, 5))
        finally:
            store.close()
        assert len(copy_lines(run_dir)) == 5 and not (run_dir / "phases").exists()
        assert verify_run(run_dir.parent, "r").ok


class TestAttemptFiles:
    """Runs made before attempts.jsonl, a file per attempt copy in phases/: they verify,
    show tampering and are appended to in their own layout."""

    def _run(self, tmp_path: Path) -> Path:
        _fill(JsonlStore(tmp_path / "runs" / "r", "r"))
        to_attempt_files(tmp_path / "runs" / "r")
        return tmp_path / "runs" / "r"

    def test_verifies(self, tmp_path: Path) -> None:
        """The same records, their copies in files, verify."""
        run_dir = self._run(tmp_path)
        check = verify_run(run_dir.parent, "r")
        assert check.ok and check.records == 4, check.message

    def test_appends_in_its_own_layout(self, tmp_path: Path) -> None:
        """A resumed run keeps a file per attempt copy; no attempts.jsonl appears."""
        run_dir = self._run(tmp_path)
        store = JsonlStore(run_dir, "r")
        try:
            assert not store.copies()
            record = store.append(_record("d", 1, 5))
        finally:
            store.close()
        assert not (run_dir / COPIES).exists()
        copy = run_dir / "phases" / attempt_file(record)
        assert json.loads(copy.read_text()) == record
        check = verify_run(run_dir.parent, "r")
        assert check.ok and check.records == 5, check.message

    @pytest.mark.parametrize(("how", "problem", "position"), [
        ("delete", "dropped", 2), ("rename", "dropped", 1), ("edit", "edited", 3)])
    def test_tampered_attempt_files_are_caught(self, tmp_path: Path, how: str, problem: str,
                                               position: int) -> None:
        """A deleted, renamed (fail to pass) or edited attempt file is broken evidence."""
        phases = self._run(tmp_path) / "phases"
        if how == "delete":
            (phases / "a.attempt2.pass.json").unlink()
        elif how == "rename":
            (phases / "a.attempt1.fail.json").rename(phases / "a.attempt1.pass.json")
        else:
            path = phases / "b.attempt1.pass.json"
            path.write_text(path.read_text().replace('"alice"', '"mallory"'))
        check = verify_run(phases.parent.parent, "r")
        assert (check.problem, check.position) == (problem, position), check.message
