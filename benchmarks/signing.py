"""Verifying a million signed evidence records, beside sha256 of the same bytes.

A run's records are hash-chained (each holds the sha256 of the one before it)
and its head, which counts them and names the last hash, is signed with Ed25519
over its RFC 8785 canonical JSON. One signature thus covers every record: a
verifier with only the public key recomputes each record's hash and link and
checks the one signature. That is what is timed here, for ``--records`` records
(default 1,000,000) written as a JSONL run directory in a temporary folder
(``evidence.jsonl`` with its signed head line, and ``attempts.jsonl``, the
attempt copies):

- verify: what ``roadcheck evidence verify --key-file PUBLIC`` does, through
  :meth:`roadcheck.evidence.store.JsonlStore.verify`: read the file, decode each
  line in one pass into the typed evidence record, recompute its hash and its
  link to the one before, compare the last hash and the count with the head,
  check the head's signature with the public key, and compare every attempt copy
  with its record. Target: under 10 s of wall time, as a user waits for it,
  on an idle machine; the process's CPU time (user + system) is printed beside
  it, and the load average before the run, since on a shared machine the wall
  time also counts the time the process waited for a core.
- baseline: read the same file and take the sha256 of each line's bytes, the
  floor any verification of those bytes pays. The ratio is printed beside it.

For reference, the rate of one Ed25519 verification per record (what signing
every record would cost) is measured on ``--per-record`` signatures and printed
as the time a million would take. Exits 1 when the target is missed, 2 when the
``sign`` extra is not installed.

    python benchmarks/signing.py [--records 1000000] [--per-record 20000]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from roadcheck.evidence.head import Head  # noqa: E402
from roadcheck.evidence.record import GENESIS, seal  # noqa: E402
from roadcheck.evidence.store import COPIES, JsonlStore  # noqa: E402

TARGET_S = 10.0
RUN_ID = "bench-signing"


def write_records(run_dir: Path, n: int, key: Any) -> Path:
    """Write a run of ``n`` chained evidence records, as the JSONL store lays it out, its
    head signed with ``key``; return the evidence file."""
    prev = GENESIS
    path = run_dir / "evidence.jsonl"
    with open(path, "wb") as out, open(run_dir / COPIES, "wb") as copies:
        out.write(b" " * 1024)  # the head slot, written once the last hash is known
        for i in range(n):
            rec = seal({"run_id": RUN_ID, "workflow": "bench", "phase": f"p{i % 50}",
                        "attempt": 1, "iteration": i, "verdict": "pass",
                        "gate": {"kind": "command", "summary": "exit 0", "detail": "",
                                 "exit_code": 0, "output": ""},
                        "artifact": {"path": f"out/{i}.txt", "sha256": "0" * 64, "bytes": 12},
                        "role": "producer", "identity": "ci",
                        "started_at": "2026-12-02T10:00:00Z",
                        "finished_at": "2026-12-02T10:00:01Z",
                        "params_sha256": "1" * 64}, prev)
            prev = str(rec["hash"])
            line = orjson.dumps(rec) + b"\n"
            out.write(line)
            copies.write(line)
    store = JsonlStore(run_dir, RUN_ID)
    slot = store._slot(Head(RUN_ID, n, prev).sealed(key))
    with open(path, "r+b") as out:
        out.write(slot)
    return path


def verify(run_dir: Path, public: Any) -> bool:
    """What a verifier holding only the public key does: chain, head, signature, copies."""
    return JsonlStore(run_dir, RUN_ID, key=public).verify().ok


def baseline(path: Path) -> int:
    """sha256 of each line's bytes, read the same way."""
    n = 0
    with open(path, "rb") as fh:
        for line in fh.read().split(b"\n"):
            hashlib.sha256(line).digest()
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--per-record", type=int, default=20_000)
    args = parser.parse_args(argv)
    try:
        from roadcheck.evidence.signing import SigningKey
        key = SigningKey.generate()
    except ImportError as exc:
        print(f"signing: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="roadcheck-signing-") as tmp:
        run_dir = Path(tmp)
        started = time.perf_counter()
        path = write_records(run_dir, args.records, key)
        written = time.perf_counter() - started
        size = os.path.getsize(path)
        print(f"records: {args.records:,} ({size / 1e6:.0f} MB, written in {written:.1f} s), "
              f"load {os.getloadavg()[0]:.2f}")
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        baseline(path)
        base_wall, base = time.perf_counter() - t0, time.process_time() - c0
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        ok = verify(run_dir, key.public)
        took_wall, took = time.perf_counter() - t0, time.process_time() - c0
        head = JsonlStore(run_dir, RUN_ID)._read_slot()
        assert isinstance(head, Head)
        forged = Head(RUN_ID, args.records - 1, head.last_hash, auth=head.auth,
                      key_id=head.key_id, mac=head.mac)
        refused = not key.public.check(forged.body(), forged.mac)
    data = [key.sign_bytes(i.to_bytes(8, "big")) for i in range(args.per_record)]
    t0 = time.perf_counter()
    for i, sig in enumerate(data):
        key.public.verify_bytes(i.to_bytes(8, "big"), sig)
    per = (time.perf_counter() - t0) / max(1, args.per_record)
    met = ok and refused and took_wall < TARGET_S
    busy = os.getloadavg()[0] >= (os.cpu_count() or 1)
    print(f"verify (chain + signed head): {took_wall:.2f} s wall vs sha256 of each line "
          f"{base_wall:.2f} s -> {took_wall / max(base_wall, 1e-9):.2f} x (CPU {took:.2f} s vs "
          f"{base:.2f} s -> {took / max(base, 1e-9):.2f} x); target < {TARGET_S:.0f} s wall: "
          f"{'met' if met else 'MISSED'}"
          f"{' (the machine is busy: the wall time counts waiting for a core)' if busy else ''}"
          f"{'' if ok else ' (the chain did not verify)'}"
          f"{'' if refused else ' (a forged head was accepted)'}")
    print(f"  for reference, one Ed25519 verification per record: {per * 1e6:.1f} us each, "
          f"{per * args.records:.1f} s for {args.records:,}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
