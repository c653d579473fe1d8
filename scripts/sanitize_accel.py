"""Run the C extension under AddressSanitizer and UndefinedBehaviorSanitizer.

Builds ``src/roadcheck/_accel.c`` with ``-fsanitize=address,undefined`` into a copy of
``src/`` in a temporary folder, then, with that copy first on ``sys.path``:

1. runs ``tests/conformance/test_accel.py``, ``tests/conformance/test_otel_accel.py``,
   ``tests/conformance/test_native_runs.py`` and the tests of ``claude_lines`` in
   ``tests/ingest/test_fast_paths.py`` (the agreement tests, generated and mutated
   files included) and the directory listing's tests in ``tests/test_inputs.py``;
2. feeds the extension's entry points ``--cases`` mutated files (bytes set,
   inserted, removed, files cut short) built from the native files in
   ``examples/`` and ``tests/data/`` (every eighth run of four of them also read,
   judged and rendered by ``judge_files`` in each report mode), and as many mutated
   OTLP/JSON span lines (the
   span files there, one document a line, and lines of the reader benchmark's
   export), each in a buffer of exactly its size (``PYTHONMALLOC=malloc``, an
   ``array``), so that a read one byte past the end is reported. Every run of an
   OTel file ``otel_index`` takes is mapped (``otel_map``, with and without results)
   and its lines listed (``otel_lines``).

Any report of either sanitizer aborts the process: the script exits non-zero.
Needs gcc with libasan and libubsan (Debian's gcc has both).

Run: ``python scripts/sanitize_accel.py [--cases 40000] [--seed 1]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FUZZ = r"""
import array, random, sys
from pathlib import Path
import roadcheck._accel as accel
from roadcheck.conformance import CompiledSpec, parse_spec

assert accel.__file__.startswith(sys.argv[3]), accel.__file__  # the sanitized build
spec = parse_spec({
    "mandatory_checkpoints": [
        {"checkpoint_id": "ok", "must_precede": ["send", "send_report"],
         "confirmed_by": ["owner"], "consume": True, "scope": "each"},
        {"checkpoint_id": "confirm_with_user", "must_precede": "send_report"}],
    "handoff_contracts": [
        {"from_agent": "a", "to_agent": "b", "required_fields": ["x"],
         "require_verified": True},
        {"from_agent": "scanner", "to_agent": "aggregator",
         "required_fields": ["row_count"]}]})
compiled = CompiledSpec(spec)
plan = compiled.plan(accel)
root = Path(sys.argv[4])
import os, tempfile
from roadcheck._inputs import PathList
from roadcheck.report.replay import ResultRenderer
styles = [ResultRenderer(fmt=f, summary_only=s).native_style(compiled)
          for f in ("json", "text") for s in (False, True)]
files_dir = tempfile.mkdtemp(prefix="roadcheck-asan-files-")
batch = [os.path.join(files_dir, f"t{k}.jsonl") for k in range(4)]
blob, ends = PathList(batch).buffers()
seeds = [p.read_bytes() for p in sorted({*root.glob("examples/*.jsonl"),
                                         *root.glob("tests/data/**/*.jsonl")})]
rnd = random.Random(int(sys.argv[2]))


def mutated(data, alphabet, edits):
    # data after that many random edits: a byte set, inserted or removed, or the end cut
    for _ in range(edits):
        op, at = rnd.random(), rnd.randrange(len(data) + 1)
        if op < 0.4:
            data[at:at] = bytes([rnd.choice(alphabet)])
        elif op < 0.7 and at < len(data):
            data[at] = rnd.choice(alphabet)
        elif op < 0.9:
            del data[at:at + rnd.randrange(1, 8)]
        else:
            del data[at:]
    return data


alphabet = b'{}[]",:\\ 0129e.-tfnuE+\n\r\t\x00\xc3\xa9\xf0\x9f\xed\xff'
judged = read = in_runs = 0
for n in range(int(sys.argv[1])):
    data = mutated(bytearray(rnd.choice(seeds)), alphabet, rnd.randrange(1, 6))
    view = memoryview(array.array("B", data))  # exactly its size: no byte to spare
    accel.check_lines(view)
    accel.check_lines(view, rnd.randrange(len(data) + 1))
    accel.scan_native(view, (b"send", b"send_report"), (b"ok", b"confirm_with_user"))
    judged += accel.judge_native(view, plan) is not None
    start = rnd.randrange(len(data) + 1)
    read += accel.claude_lines(view, 0, len(data), 1, None, False, True) is not None
    accel.claude_lines(view, start, start + rnd.randrange(len(data) + 1), 7, None, False, True,
                       False)
    # every 8th file: a run of four files read, judged and rendered by judge_files
    with open(batch[n % 4], "wb") as fh:
        fh.write(data)
    if n % 8 == 7:
        for style in styles:
            in_runs += accel.judge_files(blob, ends, 0, 4, plan, style, n, n % 16 // 8 * 4)[0]
import shutil
shutil.rmtree(files_dir)
print(f"{sys.argv[1]} mutated files, {judged} of them judged in C, {read} read as transcripts,"
      f" {in_runs} files judged and rendered in runs: no sanitizer report")

import importlib.util, orjson
from roadcheck.events import Event
spec_b = importlib.util.spec_from_file_location(
    "bench", root / "benchmarks" / "reader_throughput.py")
bench = importlib.util.module_from_spec(spec_b)
spec_b.loader.exec_module(bench)
spans = [bench.otel_trace(i) for i in range(0, 60, 7)]
for p in sorted({*root.glob("examples/**/*.json*"), *root.glob("tests/data/**/*.json*")}):
    raw = p.read_bytes()
    if b"resourceSpans" not in raw:
        continue
    spans.append(raw)
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        continue
    if isinstance(doc, dict):
        spans.append(orjson.dumps(doc) + b"\n")
alphabet = b'{}[]",:\\ 0129abfe.-tnu\n\x00\xc3\xa9\xed\xff'
indexed = mapped = 0
for _ in range(int(sys.argv[1])):
    data = mutated(bytearray(b"".join(rnd.choice(spans) for _ in range(rnd.randrange(1, 3)))),
                   alphabet, rnd.randrange(0, 5))
    view = memoryview(array.array("B", data))
    found = accel.otel_index(view, Event)
    if found is None:
        continue
    indexed += 1
    index, traces = found
    for k in range(len(traces)):
        mapped += accel.otel_map(index, (k,), True) is not None
        accel.otel_map(index, (k,), False)
        accel.otel_lines(index, (k,))
    if traces:
        everything = tuple(range(len(traces)))
        accel.otel_map(index, everything, True)
        accel.otel_lines(index, everything)
    del index, found
print(f"{sys.argv[1]} mutated span files, {indexed} indexed in C, {mapped} runs mapped: "
      "no sanitizer report")
"""


def runtime(name: str) -> str:
    out = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True,
                         text=True, check=True).stdout.strip()
    if not os.path.isabs(out):
        raise SystemExit(f"gcc has no {name}: install gcc's sanitizer runtimes")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=40_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    preload = f"{runtime('libasan.so')} {runtime('libubsan.so')}"
    with tempfile.TemporaryDirectory(prefix="roadcheck-asan-") as name:
        src = Path(name) / "src"
        shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns(
            "*.so", "__pycache__"))
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer",
                        "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                        f"-I{sysconfig.get_paths()['include']}",
                        str(src / "roadcheck" / "_accel.c"),
                        "-o", str(src / "roadcheck" / f"_accel{suffix}")], check=True)
        env = {**os.environ, "PYTHONPATH": str(src), "LD_PRELOAD": preload,
               "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
               "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
               "PYTHONMALLOC": "malloc"}
        env.pop("ROADCHECK_PURE_PYTHON", None)
        probe = "import roadcheck._accel as a; print(a.__file__)"
        where = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                               text=True, check=True).stdout
        if not where.startswith(str(src)):
            raise SystemExit(f"sanitize_accel: the sanitized build is not the one used: {where}")
        tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                str(ROOT / "tests" / "conformance" / "test_accel.py"),
                                str(ROOT / "tests" / "conformance" / "test_otel_accel.py"),
                                str(ROOT / "tests" / "conformance" / "test_native_runs.py"),
                                str(ROOT / "tests" / "ingest" / "test_fast_paths.py")
                                + "::TestClaudeLinesInC",
                                f"{ROOT / 'tests' / 'test_inputs.py'}::TestNativeListing"],
                               env=env, cwd=ROOT, check=False)
        if tests.returncode != 0:
            print("sanitize_accel: the extension's tests failed under the sanitizers")
            return 1
        fuzz = subprocess.run([sys.executable, "-c", FUZZ, str(args.cases), str(args.seed),
                               str(src), str(ROOT)], env=env, cwd=ROOT, check=False)
        if fuzz.returncode != 0:
            print("sanitize_accel: a sanitizer stopped the mutated files")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
