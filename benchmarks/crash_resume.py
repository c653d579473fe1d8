"""Kill a harness run with a side-effecting publish phase at random instants, resume it.

Each trial starts ``roadcheck run`` on a three-phase workflow (build, publish,
announce) whose publish phase appends to a fake provider's ledger, kills the
whole process group with SIGKILL after a random delay, then resumes the run
until it completes. A trial is clean when:

- the publish effect is in the provider's ledger exactly once;
- every phase that advanced has a passing evidence record, and no phase has a
  record before the previous phase's pass;
- ``roadcheck evidence verify`` still accepts the hash chain.

The same trials run a second time as a baseline, with the publish phase's
``effect`` left out, to show what the reconcile step prevents.

Run ``python benchmarks/crash_resume.py [TRIALS] [SEED]``; it prints the counts.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

#: The fake provider: ``publish`` appends one ledger line (never deduplicated) and
#: writes a receipt; ``lookup`` is the read-only reconcile; ``check`` is the gate.
#: With ``CRASH_AFTER_PUBLISH`` set, ``publish`` kills the run and itself right after
#: the ledger line is durable: a crash after the remote commit, before the receipt.
PROVIDER = '''
import json, os, sys, time
cmd, ledger, key = sys.argv[1:4]
if cmd == "publish":
    out = sys.argv[4]
    time.sleep(0.005)
    rec = {"idempotency_key": key, "remote_id": "pub-%d" % os.getpid()}
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, (json.dumps(rec) + "\\n").encode())
    os.fsync(fd)
    os.close(fd)
    if os.environ.get("CRASH_AFTER_PUBLISH"):
        # The local side crashes after the remote commit: the run and this
        # producer die together, so no receipt is ever written.
        import signal
        os.kill(os.getppid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.005)
    with open(out + ".tmp", "w") as fh:
        fh.write(json.dumps(rec))
    os.replace(out + ".tmp", out)
elif cmd == "lookup":
    if os.environ.get("RECONCILE_EXIT"):
        sys.exit(int(os.environ["RECONCILE_EXIT"]))
    if os.path.exists(ledger):
        for line in open(ledger):
            rec = json.loads(line)
            if rec["idempotency_key"] == key:
                print(json.dumps(rec))
                sys.exit(0)
    sys.exit(1)
elif cmd == "check":
    rec = json.load(open(sys.argv[4]))
    sys.exit(0 if rec.get("idempotency_key") == key and rec.get("remote_id") else 4)
'''

WRITE = "import sys, time; time.sleep(0.005); open(sys.argv[1], 'w').write('built')\n"
NONEMPTY = "import sys; sys.exit(0 if open(sys.argv[1]).read() else 4)\n"


def setup(root: Path, retry_class: str = "unsafe_to_retry", declare: bool = True) -> Path:
    """Write the provider, scripts and workflow under ``root``; return the workflow.

    ``declare=False`` leaves the publish phase's ``effect`` out: the baseline.
    """
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    (root / "provider.py").write_text(textwrap.dedent(PROVIDER))
    (root / "write.py").write_text(WRITE)
    (root / "nonempty.py").write_text(NONEMPTY)
    key = "{run_id}/publish"
    provider = ["{python}", "{spec_dir}/provider.py"]
    wf = {
        "workflow": "publish-once",
        "params": {"ledger": str(root / "ledger.jsonl")},
        "phases": [
            {"name": "build", "role": "ops", "producer": ["{python}", "{spec_dir}/write.py",
                                                          "{artifact}"],
             "artifact": "build.txt",
             "gate": {"command": ["{python}", "{spec_dir}/nonempty.py", "{artifact}"]}},
            {"name": "publish", "role": "ops",
             "producer": [*provider, "publish", "{ledger}", key, "{artifact}"],
             "artifact": "receipt.json",
             "gate": {"command": [*provider, "check", "{ledger}", key, "{artifact}"]},
             "effect": {"retry_class": retry_class, "idempotency_key": key,
                        "reconcile": [*provider, "lookup", "{ledger}", key]}},
            {"name": "announce", "role": "ops", "producer": ["{python}", "{spec_dir}/write.py",
                                                             "{artifact}"],
             "artifact": "announce.txt",
             "gate": {"command": ["{python}", "{spec_dir}/nonempty.py", "{artifact}"]}},
        ],
    }
    if not declare:
        del wf["phases"][1]["effect"]  # type: ignore[index]
    path = root / "workflow.json"
    path.write_text(json.dumps(wf, indent=2))
    return path


def roadcheck(root: Path, *args: str, env: dict[str, str] | None = None,
          ) -> subprocess.CompletedProcess[str]:
    """Run the roadcheck CLI in ``root`` and wait for it."""
    return subprocess.run([sys.executable, "-m", "roadcheck", *args], cwd=root, capture_output=True,
                          text=True, check=False, env={**os.environ, **(env or {})})


def run_args(run_id: str, resume: bool) -> list[str]:
    """The ``roadcheck run`` arguments of a new run or of a resume."""
    return ["run", "workflow.json", "--as", "ops", "--identity", "bench", "--runs-dir", "runs",
            *(["--resume", run_id] if resume else ["--run-id", run_id])]


@dataclass
class Trial:
    """What one kill-and-resume trial observed."""

    delay: float
    #: The kill landed while the run was still going (not after it finished).
    killed: bool = False
    publishes: int = 0
    resumes: int = 0
    exit: int | None = None
    chain_ok: bool = False
    order_ok: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Exactly one publish, a completed run, a valid chain and ordered evidence."""
        return (self.publishes == 1 and self.exit == 0 and self.chain_ok and self.order_ok
                and not self.problems)


def check(root: Path, run_id: str, trial: Trial) -> Trial:
    """Count the publishes, verify the chain and the order of the evidence."""
    ledger = root / "ledger.jsonl"
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    trial.publishes = sum(1 for ln in lines if json.loads(ln)["idempotency_key"]
                          == f"{run_id}/publish")
    trial.chain_ok = roadcheck(root, "evidence", "verify", run_id, "--runs-dir", "runs"
                           ).returncode == 0
    from roadcheck.evidence.store import JsonlStore  # reads either layout of the flat-file store

    store = JsonlStore(root / "runs" / run_id, run_id)
    try:
        records = store.records()
    finally:
        store.close()
    order = ["build", "publish", "announce"]
    passed: set[str] = set()
    ok = True
    for rec in records:
        i = order.index(rec["phase"])
        if i and order[i - 1] not in passed:
            ok = False
            trial.problems.append(f"{rec['phase']} recorded before {order[i - 1]} passed")
        if rec["verdict"] == "pass":
            passed.add(rec["phase"])
    trial.order_ok = ok and passed == set(order)
    return trial


def trial(root: Path, delay: float, run_id: str = "r1", declare: bool = True) -> Trial:
    """Start a run, SIGKILL its process group after ``delay`` seconds, resume until done."""
    setup(root, declare=declare)
    result = Trial(delay)
    proc = subprocess.Popen([sys.executable, "-m", "roadcheck", *run_args(run_id, False)], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    time.sleep(delay)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    result.killed = proc.wait() == -signal.SIGKILL
    for _ in range(4):
        started = (root / "runs" / run_id / "run.json").exists()
        done = roadcheck(root, *run_args(run_id, started))
        result.resumes += 1
        result.exit = done.returncode
        if done.returncode != 2:
            break
        result.problems.append(done.stderr.strip()[:200])
    if result.exit == 0:
        result.problems.clear()
    return check(root, run_id, result)


def run_trials(base: Path, count: int, seed: int, max_delay: float = 0.5,
               workers: int = 4, declare: bool = True) -> list[Trial]:
    """``count`` seeded trials, a few at a time, each in its own directory."""
    rnd = random.Random(seed)
    delays = [rnd.uniform(0.0, max_delay) for _ in range(count)]
    return run_delays(base, delays, workers=workers, declare=declare)


def run_delays(base: Path, delays: list[float], workers: int = 4,
               declare: bool = True) -> list[Trial]:
    """One trial per kill delay, a few at a time, each in its own directory."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda i: trial(base / f"t{i:03d}", delays[i], declare=declare),
                             range(len(delays))))


def summary(label: str, trials: list[Trial], took: float) -> list[str]:
    """The counts of one set of trials, as printed lines."""
    lines = [f"{label}: {len(trials)} trials in {took:.1f}s; killed mid-run: "
             f"{sum(t.killed for t in trials)}",
             f"  clean: {sum(t.clean for t in trials)}  publish exactly once: "
             f"{sum(t.publishes == 1 for t in trials)}  duplicates: "
             f"{sum(t.publishes > 1 for t in trials)}  missing: "
             f"{sum(t.publishes == 0 for t in trials)}",
             f"  evidence chain verifies: {sum(t.chain_ok for t in trials)}  no phase ahead of "
             f"its evidence: {sum(t.order_ok for t in trials)}  completed after resume: "
             f"{sum(t.exit == 0 for t in trials)}"]
    return lines


def main(argv: list[str]) -> int:
    """Run the trials with and without the effect declared; exit 1 unless all are clean
    and at least one kill landed while a run was going."""
    import tempfile

    count = int(argv[0]) if argv else 100
    seed = int(argv[1]) if len(argv) > 1 else 1
    results = {}
    for label, declare in (("declared effect", True), ("baseline, no effect declared", False)):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            trials = run_trials(Path(tmp), count, seed, declare=declare)
            results[label] = trials
            print("\n".join(summary(label, trials, time.perf_counter() - started)))
    for t in results["declared effect"]:
        if not t.clean:
            print(f"  not clean at delay {t.delay:.3f}s: publishes={t.publishes} exit={t.exit} "
                  f"{'; '.join(t.problems)}")
    failed = missed(results["declared effect"])
    print("missed: " + "; ".join(failed) if failed else "every trial clean")
    return 1 if failed else 0


def missed(trials: list[Trial]) -> list[str]:
    """What the declared-effect trials missed; no trial, or no kill mid-run, proves nothing."""
    out = []
    if not any(t.killed for t in trials):
        out.append("no trial was killed mid-run: nothing was measured")
    dirty = sum(not t.clean for t in trials)
    if dirty:
        out.append(f"{dirty} of {len(trials)} trials not clean")
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
