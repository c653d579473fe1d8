"""Reading and rewriting a flat-file store the way a test (or an attacker) does.

``evidence.jsonl`` opens with its head line (:data:`roadcheck.evidence.store.SLOT`
bytes, ``{"head": {...}}`` padded with spaces); every later line is a record.
``attempts.jsonl`` (:data:`roadcheck.evidence.store.COPIES`) holds the attempt copy
of each record, line for line; runs made before it kept one file per copy in
``phases/``, which :func:`to_attempt_files` rewrites a run into.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from roadcheck.evidence.store import COPIES, SLOT


def split(path: Path) -> tuple[bytes, bytes]:
    """``(head line, the record lines after it)`` of ``evidence.jsonl``."""
    data = path.read_bytes()
    return data[:SLOT], data[SLOT:]


def record_lines(path: Path) -> list[str]:
    """The record lines of ``evidence.jsonl``, without the head line."""
    return split(path)[1].decode().splitlines()


def records(path: Path) -> list[dict[str, Any]]:
    """The records of ``evidence.jsonl`` as JSON objects."""
    return [json.loads(line) for line in record_lines(path)]


def write_record_lines(path: Path, lines: list[str]) -> None:
    """Replace the records after the head line; the head line stays as it is."""
    head, _ = split(path)
    path.write_bytes(head + "".join(f"{line}\n" for line in lines).encode())


def head_of(run_dir: Path) -> dict[str, Any]:
    """The head document of a run's ``evidence.jsonl``."""
    doc: dict[str, Any] = json.loads(split(run_dir / "evidence.jsonl")[0])["head"]
    return doc


def put_head(run_dir: Path, head: dict[str, Any]) -> None:
    """Rewrite the head line in place, padded to its fixed size."""
    path = run_dir / "evidence.jsonl"
    body = json.dumps({"head": head}, separators=(",", ":")).encode()
    line = body + b" " * (SLOT - 1 - len(body)) + b"\n"
    path.write_bytes(line + split(path)[1])


def copy_lines(run_dir: Path) -> list[str]:
    """The lines of a run's ``attempts.jsonl``."""
    return (run_dir / COPIES).read_text().splitlines()


def write_copies(run_dir: Path, records: list[dict[str, Any]]) -> None:
    """Write the attempt copies of ``records`` in the run's own layout: the lines of
    ``attempts.jsonl``, or (a run made before it) one file each in ``phases/``."""
    if (run_dir / COPIES).exists() or not (run_dir / "phases").is_dir():
        (run_dir / COPIES).write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
        return
    for old in (run_dir / "phases").glob("*.json"):
        old.unlink()
    for r in records:
        (run_dir / "phases" / attempt_file(r)).write_bytes(
            orjson.dumps(r, option=orjson.OPT_INDENT_2) + b"\n")


def attempt_file(record: dict[str, Any]) -> str:
    """The name of a record's attempt file in ``phases/`` (the layout before
    ``attempts.jsonl``)."""
    return f"{record['phase']}.attempt{record['attempt']}.{record['verdict']}.json"


def to_attempt_files(run_dir: Path) -> None:
    """Rewrite a run as it was made before ``attempts.jsonl``: each attempt copy in a file
    of its own, ``phases/<phase>.attempt<N>.<verdict>.json``, written as that code wrote
    it (indented JSON and a newline)."""
    copies = [json.loads(line) for line in copy_lines(run_dir)]
    (run_dir / "phases").mkdir()
    (run_dir / COPIES).unlink()
    write_copies(run_dir, copies)
