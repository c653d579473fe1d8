"""Verifying a million signed evidence records, beside sha256 of the same bytes.

A run's records are hash-chained (each holds the sha256 of the one before it)
and its head, which counts them and names the last hash, is signed with Ed25519
over its RFC 8785 canonical JSON. One signature thus covers every record: a
verifier with only the public key recomputes each record's hash and link and
checks the one signature. That is what is timed here, for ``--records`` records
(default 1,000,000) written as an evidence file (one JSON record per line) in a
temporary folder:

- verify: read the file, decode each line, recompute its hash and its link to
  the one before (``roadcheck.evidence.chain.verify_chain``), compare the last
  hash and the count with the head, and check the head's signature with the
  public key. Target: under 10 s.
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

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from roadcheck.evidence.chain import verify_chain  # noqa: E402
from roadcheck.evidence.record import GENESIS, seal  # noqa: E402

TARGET_S = 10.0
RUN_ID = "bench-signing"


def write_records(path: Path, n: int) -> dict[str, object]:
    """Write ``n`` chained evidence records to ``path``; return the unsigned head."""
    prev = GENESIS
    with open(path, "wb") as out:
        for i in range(n):
            rec = seal({"run_id": RUN_ID, "workflow": "bench", "phase": f"p{i % 50}",
                        "attempt": 1, "iteration": i, "verdict": "pass",
                        "gate": {"kind": "command", "summary": "exit 0", "detail": "",
                                 "exit_code": 0, "output": ""},
                        "artifact": {"path": f"out/{i}.txt", "sha256": "0" * 64, "size": 12},
                        "role": "producer", "identity": "ci",
                        "started_at": "2026-12-02T10:00:00Z",
                        "finished_at": "2026-12-02T10:00:01Z",
                        "params_sha256": "1" * 64}, prev)
            prev = str(rec["hash"])
            out.write(orjson.dumps(rec) + b"\n")
    return {"run_id": RUN_ID, "records": n, "last_hash": prev}


def verify(path: Path, head: dict[str, object], signature: str, public: object) -> bool:
    """What a verifier holding only the public key does: chain, head, signature."""
    with open(path, "rb") as fh:
        records = [orjson.loads(line) for line in fh]
    check = verify_chain(RUN_ID, records)
    last = records[-1]["hash"] if records else GENESIS
    return (check.ok and len(records) == head["records"] and last == head["last_hash"]
            and public.verify(head, signature))  # type: ignore[attr-defined]


def baseline(path: Path) -> int:
    """sha256 of each line's bytes, read the same way."""
    n = 0
    with open(path, "rb") as fh:
        for line in fh:
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
        path = Path(tmp) / "evidence.jsonl"
        started = time.perf_counter()
        head = write_records(path, args.records)
        signature = key.sign(head)
        written = time.perf_counter() - started
        size = os.path.getsize(path)
        print(f"records: {args.records:,} ({size / 1e6:.0f} MB, written in {written:.1f} s), "
              f"load {os.getloadavg()[0]:.2f}")
        gc.collect()
        t0 = time.perf_counter()
        baseline(path)
        base = time.perf_counter() - t0
        gc.collect()
        t0 = time.perf_counter()
        ok = verify(path, head, signature, key.public)
        took = time.perf_counter() - t0
        forged = dict(head, records=args.records - 1)
        refused = not key.public.verify(forged, signature)
    data = [key.sign_bytes(i.to_bytes(8, "big")) for i in range(args.per_record)]
    t0 = time.perf_counter()
    for i, sig in enumerate(data):
        key.public.verify_bytes(i.to_bytes(8, "big"), sig)
    per = (time.perf_counter() - t0) / max(1, args.per_record)
    met = ok and refused and took < TARGET_S
    print(f"verify (chain + signed head): {took:.2f} s vs sha256 of each line {base:.2f} s -> "
          f"{took / base:.2f} x; target < {TARGET_S:.0f} s: {'met' if met else 'MISSED'}"
          f"{'' if ok else ' (the chain did not verify)'}"
          f"{'' if refused else ' (a forged head was accepted)'}")
    print(f"  for reference, one Ed25519 verification per record: {per * 1e6:.1f} us each, "
          f"{per * args.records:.1f} s for {args.records:,}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
