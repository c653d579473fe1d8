"""Reading and rewriting a flat-file store the way a test (or an attacker) does.

``evidence.jsonl`` opens with its head line (:data:`roadcheck.evidence.store.SLOT`
bytes, ``{"head": {...}}`` padded with spaces); every later line is a record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from roadcheck.evidence.store import SLOT


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
