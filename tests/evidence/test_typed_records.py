"""Evidence records are read in one pass into the typed record, and hash as they always did.

A line written as the stores write it decodes into
:class:`~roadcheck.documents.evidence.EvidenceRecord`, whose sorted encoding is the
canonical JSON the hash covers. Any other line (another key order, spacing, a null
written out, a number spelt otherwise) is read as a mapping and gives the same digest
for the same content: records written before, by hand or by other tools, still verify.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.evidence_layout import copy_lines, record_lines, write_copies, write_record_lines

from roadcheck.documents.evidence import EvidenceRecord
from roadcheck.evidence import GENESIS, JsonlStore, record_hash, seal
from roadcheck.evidence.record import as_dict, read_record


def _record(i: int = 1, **over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "run_id": "r", "workflow": "w", "phase": "a", "attempt": 1, "iteration": i,
        "verdict": "pass", "gate": {"kind": "command", "summary": "exit 0", "detail": "",
                                    "exit_code": 0, "output": ""},
        "artifact": {"path": "a.txt", "sha256": "ab" * 32, "bytes": 4}, "role": "writer",
        "identity": "alice", "started_at": "2026-01-01T00:00:00.000Z",
        "finished_at": "2026-01-01T00:00:01.000Z", "params_sha256": "cd" * 32}
    rec.update(over)
    return rec


def _producer(cost: object) -> dict[str, Any]:
    return {"kind": "agent", "provider": "openai", "model": "m", "served_model": None,
            "request_ids": ["req_1"], "turns": 1, "tool_calls": 0, "stop": "end",
            "outcome": "ok", "usage": {"input_tokens": 1, "output_tokens": 2,
                                       "total_tokens": 3},
            "cost": cost, "cost_source": None if cost is None else "price",
            "prompt_sha256": "ef" * 32}


def test_a_written_line_is_read_typed_and_hashes_as_before() -> None:
    sealed = seal(_record(), GENESIS)
    rec = read_record(orjson.dumps(sealed))
    assert isinstance(rec, EvidenceRecord)
    assert record_hash(rec) == record_hash(sealed) == sealed["hash"]
    assert as_dict(rec) == sealed


@pytest.mark.parametrize("cost", [0, 3, 0.25, 1e16, 1.5e-7, None])
def test_an_agent_record_hashes_the_same_either_way(cost: object) -> None:
    """A whole cost stays whole, an exponent keeps its writer's spelling (``1e+16``)."""
    sealed = seal(_record(artifact={"path": "a.txt", "sha256": "ab" * 32, "bytes": 4,
                                    "producer": _producer(cost)}), GENESIS)
    line = orjson.dumps(sealed)
    rec = read_record(line)
    if rec is not None:
        assert record_hash(rec) == sealed["hash"]
        assert orjson.dumps(as_dict(rec)) == line
    assert record_hash(orjson.loads(line)) == sealed["hash"]


_TEXT = st.text(st.characters(codec="utf-8"), max_size=30)


@settings(max_examples=150, deadline=None)
@given(summary=_TEXT, output=_TEXT, detail=_TEXT, path=_TEXT,
       cost=st.none() | st.integers(0, 2**53) | st.floats(0, 1e300),
       exit_code=st.none() | st.integers(-(2**31), 2**31))
def test_typed_and_mapping_hashes_agree(summary: str, output: str, detail: str, path: str,
                                        cost: object, exit_code: int | None) -> None:
    """Whatever the text (control characters, any plane) and numbers, the typed reading of
    a written line hashes exactly as the mapping does, or is not used."""
    sealed = seal(_record(gate={"kind": "command", "summary": summary, "detail": detail,
                                "exit_code": exit_code, "output": output},
                          artifact={"path": path, "sha256": None, "bytes": None,
                                    "producer": _producer(cost)}), GENESIS)
    rec = read_record(orjson.dumps(sealed))
    if rec is not None:
        assert record_hash(rec) == sealed["hash"]


@pytest.mark.parametrize("spell", ["indented", "reordered", "null-producer", "escaped"])
def test_lines_not_written_by_the_store_still_verify(tmp_path: Path, spell: str) -> None:
    """Records written another way (an older writer, another tool, by hand) are read as
    mappings and verify as before; their copies are compared by content."""
    store = JsonlStore(tmp_path, "r")
    for i in range(1, 4):
        store.append(_record(i))
    store.close()
    path = tmp_path / "evidence.jsonl"
    docs = [json.loads(line) for line in record_lines(path)]
    if spell == "null-producer":  # a null written out is a different record: re-seal it
        prev = GENESIS
        for doc in docs:
            doc["artifact"]["producer"] = None
            doc.update(seal(doc, prev))
            prev = doc["hash"]
        from tests.evidence_layout import head_of, put_head
        head = head_of(tmp_path)
        head["last_hash"] = prev
        put_head(tmp_path, head)
    lines = {"indented": [json.dumps(d, indent=1).replace("\n", "") for d in docs],
             "reordered": [json.dumps(dict(reversed(list(d.items())))) for d in docs],
             "null-producer": [json.dumps(d, separators=(",", ":")) for d in docs],
             "escaped": [json.dumps(d, ensure_ascii=True).replace("a.txt", "\\u0061.txt")
                         for d in docs]}[spell]
    typed = [read_record(line.encode()) for line in lines]
    # a null written out compactly is read typed, and kept apart from an absent producer
    assert all((r is not None) == (spell == "null-producer") for r in typed)
    write_record_lines(path, lines)
    if spell == "null-producer":
        write_copies(tmp_path, docs)
    check = JsonlStore(tmp_path, "r").verify()
    assert check.ok, check.message
    assert check.records == 3


def test_a_repeated_key_is_never_read_typed(tmp_path: Path) -> None:
    """msgspec keeps the last of two values; the line is not the record that was written."""
    store = JsonlStore(tmp_path, "r")
    store.append(_record())
    store.close()
    path = tmp_path / "evidence.jsonl"
    line = record_lines(path)[0]
    twice = line.replace('"role":"writer"', '"role":"reviewer","role":"writer"')
    assert read_record(twice.encode()) is None
    write_record_lines(path, [twice])
    check = JsonlStore(tmp_path, "r").verify()
    assert check.problem == "edited"


def test_a_copy_that_differs_is_found_even_when_the_rest_match(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path, "r")
    for i in range(1, 4):
        store.append(_record(i))
    store.close()
    copies = copy_lines(tmp_path)
    assert copies == record_lines(tmp_path / "evidence.jsonl")
    docs = [json.loads(c) for c in copies]
    docs[1]["identity"] = "mallory"
    write_copies(tmp_path, docs)
    check = JsonlStore(tmp_path, "r").verify()
    assert (check.problem, check.position) == ("edited", 2)
