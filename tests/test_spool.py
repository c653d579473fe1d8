"""The spool a streamed report waits in: memory while small, a temporary file past
IN_MEMORY, the same bytes either way."""

from __future__ import annotations

import hashlib
import sys

import pytest

from roadcheck.report import _spool
from roadcheck.report._spool import Spool


@pytest.mark.parametrize("limit", [1 << 20, 10])
def test_the_bytes_come_back_as_written(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    monkeypatch.setattr(_spool, "IN_MEMORY", limit)
    monkeypatch.setattr(_spool, "_BLOCK", 7)  # copies span several blocks
    spool = Spool()
    lines = [b'["a.jsonl","native",1,0,0]\n', b'["b.jsonl","native",0,1,0]\n', b"x\n"]
    for line in lines:
        spool.write(line)
    data = b"".join(lines)
    try:
        assert spool.size() == len(data)
        assert list(spool.lines()) == lines
        got: list[bytes] = []
        digest = hashlib.sha256()
        spool.copy(3, len(data) - 3, got.append, digest)
        assert b"".join(got) == data[3:]
        assert digest.hexdigest() == hashlib.sha256(data[3:]).hexdigest()
        assert all(len(block) <= 7 for block in got)
        assert (spool._file is None) == (limit > len(data))
    finally:
        spool.close()


def test_a_small_spool_needs_no_temporary_file() -> None:
    """A report of a few files is spooled in memory: tempfile is never imported for it."""
    import subprocess

    code = ("import sys\nfrom roadcheck.report._spool import Spool\ns = Spool()\n"
            "s.write(b'x' * 1000)\ns.copy(0, s.size(), sys.stdout.buffer.write)\n"
            "s.close()\nprint('tempfile' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    assert out == b"x" * 1000 + b"False\n"
