"""Reader throughput and memory on large span exports and coding-agent transcripts.

Two files are generated deterministically (same flags, same bytes) in a
temporary folder:

- an OpenTelemetry span export in OTLP/JSON, one ``resourceSpans`` document per
  line as the OTLP file exporter writes it (default ~100 MB). Each line is one
  trace shaped like the recorded framework traces in tests/data/frameworks/: an
  ``invoke_agent`` root, model ``chat`` spans, ``execute_tool`` spans with
  arguments and results, and an approval span before the guarded send;
- a Claude Code session transcript (default ~50 MB) shaped like the recorded
  transcripts in tests/data/coding/claude-code/: prompts, assistant text,
  ``tool_use`` blocks (Bash, Read, Edit) and their ``tool_result`` entries, one
  ``parentUuid`` chain.

For each file, in one process, the script times (best of ``--rounds``, default 7,
interleaved; CPU time of the process, so other work on a shared machine does not
count against either side):

- parse-only: read the file and ``orjson.loads`` every line (the floor any
  reader pays);
- the reader: ``roadcheck.replay`` of the file against a small spec, which reads
  it through ``roadcheck.ingest.load`` (detection, decoding, the mapping to events)
  and judges every trajectory.

It then measures the reader's peak traced memory (``tracemalloc``, in the same
process, the file's own bytes included) and prints both as ratios: time against
parse-only (target <= 4.0 x) and peak memory against the file's size, what a
parse-only pass holding the file it read pays (target <= 1.5 x). The exit status
is 1 when a target is missed.

    python benchmarks/reader_throughput.py [--otel-mb 100] [--claude-mb 50] [--rounds 7]
        [--only otel|claude]
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

TIME_TARGET = 4.0
MEMORY_TARGET = 1.5
_T0 = 1_780_000_000_000_000_000  # nanoseconds; the recorded traces' epoch

OTEL_SPEC = """\
mandatory_checkpoints:
  - {checkpoint_id: approve_send_report, confirmed_by: [owner], must_precede: send_report}
"""
CLAUDE_SPEC = """\
mandatory_checkpoints:
  - {checkpoint_id: AskUserQuestion, confirmed_by: [user], must_precede: Edit}
"""

_LOREM = ("the quarterly ledger shows three open tickets for the account, two of them about "
          "invoices sent twice and one about a refund that has not arrived yet; ")


def _text(i: int, size: int) -> str:
    """Deterministic filler text of about ``size`` characters, varied by ``i``."""
    base = f"[{i}] " + _LOREM * (size // len(_LOREM) + 1)
    return base[:size]


# -- the span export ------------------------------------------------------------------------

def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _span(trace: str, n: int, parent: int | None, name: str, start: int, end: int,
          attrs: dict[str, Any], error: bool = False) -> dict[str, Any]:
    return {"traceId": trace, "spanId": f"{n:016x}",
            "parentSpanId": f"{parent:016x}" if parent else "", "name": name, "kind": 1,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
            "attributes": [_attr(k, v) for k, v in attrs.items()],
            "status": {"code": 2, "message": "tool failed"} if error else {}}


def otel_trace(i: int) -> bytes:
    """One OTLP/JSON line: a small agent run with tool spans and an approval."""
    trace = f"{i + 1:032x}"
    t = _T0 + i * 10_000_000_000
    ids = iter(range(i * 64 + 1, i * 64 + 64))
    root = next(ids)
    spans = [_span(trace, root, None, "invoke_agent triage", t, t + 9_000_000_000,
                   {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage",
                    "gen_ai.conversation.id": f"conv-{i}"})]
    clock = t + 1_000_000
    tools = [("lookup_account", {"name": f"acct-{i}"}),
             ("search_tickets", {"account": f"acct-{i}", "status": "open"}),
             ("read_ticket", {"ticket": i * 3 + 1}),
             ("read_ticket", {"ticket": i * 3 + 2})]
    for k, (tool, args) in enumerate(tools):
        chat = next(ids)
        spans.append(_span(trace, chat, root, "chat scripted", clock, clock + 400_000_000,
                           {"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted",
                            "gen_ai.usage.input_tokens": 900 + k,
                            "gen_ai.usage.output_tokens": 40 + k,
                            "gen_ai.output.messages": orjson.dumps(
                                [{"role": "assistant", "parts": [
                                    {"type": "tool_call", "name": tool, "arguments": args}]}]
                            ).decode()}))
        clock += 500_000_000
        spans.append(_span(trace, next(ids), root, f"execute_tool {tool}", clock,
                           clock + 200_000_000,
                           {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                            "gen_ai.tool.call.id": f"call_{i}_{k}",
                            "gen_ai.tool.call.arguments": orjson.dumps(args).decode(),
                            "gen_ai.tool.call.result": orjson.dumps(
                                {"text": _text(i + k, 600)}).decode()},
                           error=(i % 50 == 0 and k == 3)))
        clock += 300_000_000
    approved = i % 10 != 0
    if approved:
        spans.append(_span(trace, next(ids), root, "approval", clock, clock + 1_000,
                           {"roadcheck.checkpoint.id": "approve_send_report",
                            "roadcheck.checkpoint.confirmed_by": "owner",
                            "roadcheck.checkpoint.decision": "approved"}))
    clock += 100_000_000
    spans.append(_span(trace, next(ids), root, "execute_tool send_report", clock,
                       clock + 200_000_000,
                       {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "send_report",
                        "gen_ai.tool.call.id": f"call_{i}_send",
                        "gen_ai.tool.call.arguments": orjson.dumps(
                            {"account": f"acct-{i}", "summary": _text(i, 300)}).decode(),
                        "gen_ai.tool.call.result": '"sent"'}))
    doc = {"resourceSpans": [{
        "resource": {"attributes": [_attr("service.name", "reports")]},
        "scopeSpans": [{"scope": {"name": "pydantic-ai", "version": "1.0"}, "spans": spans}]}]}
    return orjson.dumps(doc) + b"\n"


# -- the Claude Code transcript -------------------------------------------------------------

def _entry(n: int, parent: str | None, kind: str, message: dict[str, Any],
           **extra: Any) -> dict[str, Any]:
    secs = n * 3
    return {"parentUuid": parent, "isSidechain": False, "userType": "external",
            "cwd": "/home/dev/projects/ledger", "sessionId": "5f0c2a4e-0000-4000-8000-000000000001",
            "version": "2.1.38", "gitBranch": "main", "type": kind, "message": message,
            "uuid": f"00000000-0000-4000-8000-{n:012d}",
            "timestamp": f"2026-02-{10 + secs // 86400:02d}T{secs // 3600 % 24:02d}:"
                         f"{secs // 60 % 60:02d}:{secs % 60:02d}.000Z", **extra}


def claude_turn(i: int, n: int, parent: str | None) -> tuple[list[bytes], int, str]:
    """One user turn: a prompt, three tool calls with results, a closing text."""
    lines = []

    def add(entry: dict[str, Any]) -> None:
        nonlocal parent
        lines.append(orjson.dumps(entry) + b"\n")
        parent = entry["uuid"]

    add(_entry(n, parent, "user", {"role": "user", "content": f"task {i}: " + _text(i, 120)}))
    n += 1
    calls = [("Bash", {"command": f"git log --oneline -n {i % 20 + 1} && pytest -q tests/t{i}.py",
                       "description": "Run the tests"}),
             ("Read", {"file_path": f"/home/dev/projects/ledger/src/mod{i}.py"}),
             ("Edit", {"file_path": f"/home/dev/projects/ledger/src/mod{i}.py",
                       "old_string": _text(i, 120), "new_string": _text(i + 1, 140)})]
    if i % 7 == 0:
        calls.insert(2, ("AskUserQuestion", {"questions": [{"question": "Apply the edit?"}]}))
    for k, (tool, args) in enumerate(calls):
        call_id = f"toolu_{i:08d}{k:02d}"
        add(_entry(n, parent, "assistant", {
            "model": "claude-opus-4-6", "id": f"msg_{i:08d}{k:02d}", "type": "message",
            "role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": tool,
                                              "input": args}],
            "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 120}}))
        n += 1
        output = "Yes, apply it" if tool == "AskUserQuestion" else _text(i + k, 1500)
        add(_entry(n, parent, "user", {"role": "user", "content": [
            {"tool_use_id": call_id, "type": "tool_result", "content": output,
             "is_error": False}]}, toolUseResult={"stdout": output[:400], "stderr": "",
                                                  "interrupted": False}))
        n += 1
    add(_entry(n, parent, "assistant", {
        "model": "claude-opus-4-6", "id": f"msg_{i:08d}zz", "type": "message",
        "role": "assistant", "content": [{"type": "text", "text": _text(i, 300)}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 80}}))
    n += 1
    assert parent is not None
    return lines, n, parent


# -- writing and measuring -------------------------------------------------------------------

def write_otel(path: Path, size: int) -> int:
    """Write traces until ``size`` bytes; return the number of traces."""
    written, i = 0, 0
    with path.open("wb") as fh:
        while written < size:
            line = otel_trace(i)
            fh.write(line)
            written += len(line)
            i += 1
    return i


def write_claude(path: Path, size: int) -> int:
    """Write turns until ``size`` bytes; return the number of turns."""
    written, i, n = 0, 0, 1
    parent: str | None = None
    with path.open("wb") as fh:
        while written < size:
            lines, n, parent = claude_turn(i, n, parent)
            for line in lines:
                fh.write(line)
                written += len(line)
            i += 1
    return i


def parse_only(path: Path) -> int:
    """The floor: read the file and decode every line with orjson."""
    loads = orjson.loads
    count = 0
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                loads(line)
                count += 1
    return count


def read_and_judge(spec: Any, path: Path) -> dict[str, int]:
    """``roadcheck.replay`` of one file: read through ``roadcheck.ingest.load``, judge every run."""
    from roadcheck.conformance import iter_replay

    counts = {"PASS": 0, "BLOCK": 0, "ERROR": 0}
    for result in iter_replay(spec, [str(path)]):
        counts[result.verdict] = counts.get(result.verdict, 0) + 1
    return counts


def _best(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(rounds):
        gc.collect()
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def _peak(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure(kind: str, path: Path, spec_text: str, rounds: int) -> dict[str, Any]:
    """Time parse-only and the reader on ``path``; measure the reader's peak memory."""
    from roadcheck.conformance import CompiledSpec, load_spec

    spec_path = path.with_suffix(".spec.yaml")
    spec_path.write_text(spec_text, encoding="utf-8")
    spec = CompiledSpec(load_spec(spec_path))
    parse_only(path)  # warm the page cache for both sides
    t_parse, t_reader = float("inf"), float("inf")
    counts: dict[str, int] = {}
    lines = 0
    for _ in range(rounds):  # interleaved, so drift on a shared machine hits both alike
        t, lines = _best(lambda: parse_only(path), 1)
        t_parse = min(t_parse, t)
        t, counts = _best(lambda: read_and_judge(spec, path), 1)
        t_reader = min(t_reader, t)
    peak = _peak(lambda: read_and_judge(spec, path))
    size = path.stat().st_size
    return {"kind": kind, "bytes": size, "lines": lines, "parse": t_parse,
            "reader": t_reader, "ratio": t_reader / t_parse, "peak": peak,
            "memory_ratio": peak / size, "counts": counts}


def report(m: dict[str, Any]) -> list[str]:
    c = m["counts"]
    return [
        f"{m['kind']}: {m['bytes'] / 1e6:.1f} MB, {m['lines']} lines, "
        f"{sum(c.values())} trajectories ({c.get('PASS', 0)} PASS, {c.get('BLOCK', 0)} BLOCK, "
        f"{c.get('ERROR', 0)} ERROR)",
        f"  parse-only : {m['parse']:.3f} s CPU  (orjson, line by line)",
        f"  reader     : {m['reader']:.3f} s CPU  (roadcheck.replay in-process: load + judge)",
        f"  time ratio : {m['ratio']:.2f} x parse-only   (target <= {TIME_TARGET:.2f})",
        f"  peak memory: {m['peak'] / 1e6:.1f} MB traced = {m['memory_ratio']:.2f} x the file   "
        f"(target <= {MEMORY_TARGET:.2f})",
    ]


def run(otel_bytes: int, claude_bytes: int, rounds: int, folder: Path,
        only: str | None = None) -> list[dict[str, Any]]:
    """Measure both files, or only the one ``only`` names (``otel`` or ``claude``)."""
    results = []
    if only in (None, "otel"):
        otel = folder / "spans.otlp.jsonl"
        write_otel(otel, otel_bytes)
        results.append(measure("otel span export", otel, OTEL_SPEC, rounds))
    if only in (None, "claude"):
        claude = folder / "session.jsonl"
        write_claude(claude, claude_bytes)
        results.append(measure("claude code transcript", claude, CLAUDE_SPEC, rounds))
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--otel-mb", type=float, default=100.0)
    ap.add_argument("--claude-mb", type=float, default=50.0)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", choices=("otel", "claude"), default=None,
                    help="measure one of the two files only")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="roadcheck-readers-") as tmp:
        results = run(int(args.otel_mb * 1e6), int(args.claude_mb * 1e6), args.rounds,
                      Path(tmp), args.only)
    missed = []
    for m in results:
        print("\n".join(report(m)))
        if m["ratio"] > TIME_TARGET:
            missed.append(f"{m['kind']} time")
        if m["memory_ratio"] > MEMORY_TARGET:
            missed.append(f"{m['kind']} memory")
        if m["counts"].get("ERROR"):
            missed.append(f"{m['kind']} read with ERROR")
    print("missed: " + ", ".join(missed) if missed else "all targets met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
