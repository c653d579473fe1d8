"""roadcheck replay against pm4py's Declare conformance on the same 200,000-event log.

A log of ``--traces`` traces x 20 events (default 10,000: 200,000 events) is
written deterministically to a temporary directory twice, event for event the
same: as native trajectory files, one per trace, for roadcheck (the shape of the
replay benchmark's corpus: actions, two handoffs with payloads, checkpoints, a
final event), and as one CSV of case id, activity and timestamp for pm4py (the
three columns its Declare check reads; CSV through pandas is pm4py's cheapest
reading, so the baseline gets the cheapest input there is). ``--pm4py-input
xes`` gives pm4py the same events as an XES file instead (written by pm4py
before the timing, read with ``pm4py.read_xes``).
An event's activity is its ``action_type``, its ``checkpoint_id``, or its
event type (``handoff``, ``final``).

The same two constraints are written both ways:

- roadcheck: ``mandatory_checkpoints`` ``confirm_with_user`` must precede
  ``send_report``, ``approve_archive`` must precede ``archive`` (``scope:
  first``, the default: a checkpoint before the first guarded action);
- pm4py: a Declare model of two ``precedence`` constraints over the same
  activities, checked with ``pm4py.conformance_declare`` (precedence(a, b): if
  b occurs, a occurs before b's first occurrence, the same rule).

A third of the traces conform (half of those never reach a guarded action,
conforming vacuously); the other two thirds break a constraint in one of four
ways (the checkpoint missing, the checkpoint after the action, the second
checkpoint missing, the checkpoint only between two guarded actions). The
script checks that both sides flag exactly the traces built to violate and
prints the agreement; it exits 1 when they disagree.

Timing is end to end, whole processes, the same for both sides: each is one
new Python process that starts, imports what it needs, reads the log from
disk, checks every trace and writes which traces violate (roadcheck: ``roadcheck
replay --format json -o FILE``; pm4py: ``pandas.read_csv``,
``pm4py.format_dataframe``, ``pm4py.conformance_declare``, the violating case
ids written as JSON). Medians of ``--runs`` interleaved runs, wall and CPU
(user + system); a process that only imports what the pm4py side imports is
timed with them and printed beside the baseline. The same work in one
process, imports left out, is printed for reference. Target: roadcheck >= 3x
faster (wall) than pm4py; exit 1 on a miss. pm4py is not a dependency of
roadcheck: install it with ``pip install 'roadcheck[bench]'``; without it the script
exits 2 and measures nothing.

Run: ``python benchmarks/pm4py_declare.py [--traces 10000] [--runs 3]
[--pm4py-input csv|xes]``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
ROADCHECK = shutil.which("roadcheck", path=os.path.dirname(sys.executable)) or "roadcheck"
TARGET = 3.0
EVENTS = 20

#: The two constraints, as (checkpoint, guarded action): roadcheck's precedence rules and
#: pm4py's Declare precedence constraints are both written from this list.
CONSTRAINTS = (("confirm_with_user", "send_report"), ("approve_archive", "archive"))

#: How pm4py reads the log: the CSV through pandas, or the XES file through pm4py.
PM4PY_READ = """
def read_log(kind, path):
    if kind == "xes":
        return pm4py.read_xes(path)
    return pm4py.format_dataframe(pandas.read_csv(path, dtype=str), case_id="case",
                                  activity_key="activity", timestamp_key="ts")
"""

#: The pm4py side as a process: read the log, check every case, write the violators.
PM4PY_SIDE = """
import sys, orjson, pandas, pm4py
""" + PM4PY_READ + """
kind, log, out = sys.argv[1], sys.argv[2], sys.argv[4]
model = {template: {tuple(pair): {"support": 1.0, "confidence": 1.0} for pair in pairs}
         for template, pairs in orjson.loads(open(sys.argv[3], "rb").read()).items()}
df = read_log(kind, log)
cases = df["case:concept:name"].unique()
result = pm4py.conformance_declare(df, model)
assert len(result) == len(cases)
with open(out, "wb") as fh:
    fh.write(orjson.dumps([str(c) for c, r in zip(cases, result) if not r["is_fit"]]))
"""


def trace(i: int) -> list[dict[str, Any]]:
    """Trace ``i``: 20 events; ``i % 6`` picks how (and whether) it breaks a constraint."""
    kind = i % 6
    ev: list[dict[str, Any]] = []

    def add(agent: str, **rec: Any) -> None:
        seq = len(ev) + 1
        ev.append({"seq": seq, "ts": f"2026-07-11T{seq // 60:02d}:{seq % 60:02d}:00Z",
                   "agent": agent, **rec})

    def confirm() -> None:
        add("reporter", event="checkpoint", checkpoint_id="confirm_with_user",
            confirmed_by="owner")

    for k in range(5):
        add("scanner", event="action", action_type="pull_rows", args={"page": k})
    add("scanner", event="handoff", from_agent="scanner", to_agent="aggregator",
        payload={"row_count": {"value": 17491 + i, "verified": True}, "source": "billing_db"})
    for k in range(5):
        add("aggregator", event="action", action_type="summarize_rows", args={"chunk": k})
    add("aggregator", event="handoff", from_agent="aggregator", to_agent="reporter",
        payload={"row_count": {"value": 17491 + i, "verified": True},
                 "summary": {"value": f"run {i}", "verified": True}})
    add("reporter", event="action", action_type="format_report")
    if kind == 5:  # never reaches a guarded action: conforms vacuously
        for _ in range(6):
            add("reporter", event="action", action_type="format_report")
    else:
        if kind in (0, 3):
            confirm()
        else:
            add("reporter", event="action", action_type="draft_email")
        add("reporter", event="action", action_type="send_report", irreversible=True)
        if kind == 2:  # the checkpoint comes, but after the action it guards
            confirm()
        elif kind == 4:  # only between two guarded actions: the first ran unconfirmed
            confirm()
            add("reporter", event="action", action_type="send_report", irreversible=True)
        else:
            add("reporter", event="action", action_type="format_report")
        if kind == 4:
            add("reporter", event="checkpoint", checkpoint_id="approve_archive",
                confirmed_by="owner")
        elif kind != 3:  # 3: the archive is never approved
            add("reporter", event="checkpoint", checkpoint_id="approve_archive",
                confirmed_by="owner")
            add("reporter", event="action", action_type="format_report")
        add("reporter", event="action", action_type="archive")
    while len(ev) < EVENTS - 1:
        add("reporter", event="action", action_type="notify")
    add("reporter", event="final", task_success=True)
    assert len(ev) == EVENTS, (i, len(ev))
    return ev


def activity(event: dict[str, Any]) -> str:
    """An event's activity for the Declare side."""
    name = event.get("action_type") or event.get("checkpoint_id") or event["event"]
    return str(name)


def expected(i: int) -> bool:
    """Whether trace ``i`` breaks a constraint, by construction."""
    return i % 6 in (1, 2, 3, 4)


def write_log(root: Path, traces: int) -> tuple[Path, Path]:
    """The native files (one directory) and the CSV of the same events."""
    native = root / "native"
    native.mkdir(parents=True)
    csv = root / "log.csv"
    with open(csv, "w", encoding="utf-8") as out:
        out.write("case,activity,ts\n")
        for i in range(traces):
            events = trace(i)
            case = f"t{i:06d}"
            (native / f"{case}.jsonl").write_bytes(
                b"".join(orjson.dumps(e) + b"\n" for e in events))
            out.writelines(f"{case},{activity(e)},{e['ts']}\n" for e in events)
    return native, csv


def write_specs(root: Path) -> tuple[Path, Path]:
    """The roadcheck spec and the Declare model (JSON), both from :data:`CONSTRAINTS`."""
    spec = root / "spec.json"
    spec.write_bytes(orjson.dumps({"mandatory_checkpoints": [
        {"checkpoint_id": cp, "must_precede": action} for cp, action in CONSTRAINTS]}))
    model = root / "declare.json"
    model.write_bytes(orjson.dumps({"precedence": [list(pair) for pair in CONSTRAINTS]}))
    return spec, model


def run(cmd: list[str]) -> tuple[float, float, int]:
    """Run ``cmd`` to completion: (wall seconds, CPU seconds, exit code)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return (time.perf_counter() - t0, usage.ru_utime + usage.ru_stime,
            os.waitstatus_to_exitcode(status))


def roadcheck_violators(report: Path) -> set[str]:
    """The traces roadcheck blocked, by case id (the file's stem)."""
    doc = orjson.loads(report.read_bytes())
    errors = [r["path"] for r in doc["results"] if r["verdict"] == "ERROR"]
    if errors:
        raise SystemExit(f"roadcheck could not read {len(errors)} trace(s), e.g. {errors[0]}")
    return {Path(r["path"]).stem for r in doc["results"] if r["verdict"] == "BLOCK"}


def pm4py_installed() -> bool:
    """Whether pm4py can be imported (it is not a dependency of roadcheck)."""
    return importlib.util.find_spec("pm4py") is not None


def verdict(agree: bool, ratio: float, target: float = TARGET) -> list[str]:
    """What was missed: the two sides disagreeing on a trace, or roadcheck under ``target`` x."""
    missed = []
    if not agree:
        missed.append("agreement")
    if not ratio >= target:
        missed.append(f"roadcheck {ratio:.2f}x faster than pm4py, target >= {target:g}x")
    return missed


def write_xes(csv: Path) -> Path:
    """The CSV's events as an XES file, written by pm4py (not timed)."""
    import pandas

    # pm4py greets on stderr when imported, and draws a progress bar while it writes
    with contextlib.redirect_stderr(io.StringIO()):
        import pm4py

        xes = csv.with_suffix(".xes")
        df = pm4py.format_dataframe(pandas.read_csv(csv, dtype=str), case_id="case",
                                    activity_key="activity", timestamp_key="ts")
        pm4py.write_xes(df[["case:concept:name", "concept:name", "time:timestamp"]], str(xes))
    return xes


def in_process(native: Path, log: Path, kind: str, spec_path: Path) -> tuple[float, float]:
    """Seconds of each side in this process, imports and spec loading left out (reference)."""
    import pandas

    with contextlib.redirect_stderr(io.StringIO()):  # pm4py greets on stderr when imported
        import pm4py

    from roadcheck.conformance import iter_replay, load_spec

    spec = load_spec(spec_path)
    model = {"precedence": {pair: {"support": 1.0, "confidence": 1.0} for pair in CONSTRAINTS}}
    paths = sorted(str(p) for p in native.iterdir())
    t0 = time.perf_counter()
    for _ in iter_replay(spec, paths):
        pass
    ours = time.perf_counter() - t0
    names: dict[str, Any] = {"pm4py": pm4py, "pandas": pandas}
    exec(PM4PY_READ, names)  # the same reading the pm4py process does
    with contextlib.redirect_stderr(io.StringIO()):  # the XES reader's progress bar
        t0 = time.perf_counter()
        pm4py.conformance_declare(names["read_log"](kind, str(log)), model)
        theirs = time.perf_counter() - t0
    return ours, theirs


def main(argv: list[str] | None = None) -> int:
    """Measure both sides, print the agreement and the ratio; 1 on a miss, 2 without pm4py."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3, help="interleaved runs of each side")
    ap.add_argument("--pm4py-input", choices=("csv", "xes"), default="csv",
                    help="the log pm4py reads: the CSV (default, its cheapest) or XES")
    args = ap.parse_args(argv)
    if not pm4py_installed():
        print("pm4py_declare: pm4py is not installed (pip install 'roadcheck[bench]'); "
              "nothing was measured", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="roadcheck-pm4py-") as name:
        tmp = Path(name)
        native, csv = write_log(tmp, args.traces)
        spec, model = write_specs(tmp)
        log = write_xes(csv) if args.pm4py_input == "xes" else csv
        ours_out, theirs_out = tmp / "roadcheck.json", tmp / "pm4py.json"
        sides = {
            "roadcheck": [ROADCHECK, "replay", "--format", "json", "-o", str(ours_out), str(spec),
                      str(native)],
            "pm4py": [PYTHON, "-c", PM4PY_SIDE, args.pm4py_input, str(log), str(model),
                      str(theirs_out)],
            # reference, not a side: what the pm4py process spends before it reads the log
            "pm4py import": [PYTHON, "-c", "import orjson, pandas, pm4py"],
        }
        want = {"roadcheck": 1 if any(expected(i) for i in range(args.traces)) else 0, "pm4py": 0,
                "pm4py import": 0}
        wall: dict[str, list[float]] = {k: [] for k in sides}
        cpu: dict[str, list[float]] = {k: [] for k in sides}
        for _ in range(args.runs):
            for side, cmd in sides.items():
                took, used, code = run(cmd)
                if code != want[side]:
                    raise SystemExit(f"{side}: exit {code}, expected {want[side]}")
                wall[side].append(took)
                cpu[side].append(used)
        ours = roadcheck_violators(ours_out)
        theirs = set(orjson.loads(theirs_out.read_bytes()))
        built = {f"t{i:06d}" for i in range(args.traces) if expected(i)}
        ref_ours, ref_theirs = in_process(native, log, args.pm4py_input, spec)
    pm4py = sys.modules["pm4py"]

    agree = ours == theirs == built
    w = {k: statistics.median(v) for k, v in wall.items()}
    c = {k: statistics.median(v) for k, v in cpu.items()}
    ratio = w["pm4py"] / w["roadcheck"]
    print(f"log: {args.traces} traces x {EVENTS} events = {args.traces * EVENTS} events; "
          f"pm4py {pm4py.__version__}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    print(f"agreement : roadcheck blocks {len(ours)}, pm4py finds {len(theirs)} not fit, "
          f"{len(built)} built to violate; {len(ours ^ theirs)} traces differ  "
          f"{'ok' if agree else 'DISAGREE'}")
    print(f"whole processes, median of {args.runs} interleaved runs (start, import, read, "
          "check, write):")
    print(f"  roadcheck replay             : {w['roadcheck']:.3f} s wall, "
          f"{c['roadcheck']:.3f} s CPU")
    print(f"  pm4py from {args.pm4py_input} (baseline): {w['pm4py']:.3f} s wall, "
          f"{c['pm4py']:.3f} s CPU "
          f"(starting and importing pm4py alone: {w['pm4py import']:.3f} s wall, "
          f"{c['pm4py import']:.3f} s CPU)")
    print(f"  roadcheck is {ratio:.2f}x faster (wall), {c['pm4py'] / c['roadcheck']:.2f}x (CPU); "
          f"target >= {TARGET:g}x  {'ok' if ratio >= TARGET else 'MISSED'}")
    print(f"in process, imports left out (reference): roadcheck {ref_ours:.3f} s, pm4py "
          f"{ref_theirs:.3f} s -> {ref_theirs / ref_ours:.2f}x")
    missed = verdict(agree, ratio)
    print("missed: " + ", ".join(missed) if missed else "all targets met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
