"""What the transcript, ATIF, OpenAI Agents, Codex, Inspect, OpenTelemetry, SWE-agent,
Jaeger, Zipkin, OpenHands and AgentDojo readers make of every recorded file of the
repository, held against tests/golden/readers/.

One line per event (its place, kind, agent, line and a digest of its whole
record) and one per failure (its message in full), so a change to any field of
any event, or to any error message, shows as a diff of the event or message it
touched. A long run, and each run of a file of many (a benchmark's results), is one
line: its event count and a digest of all its records. ``pytest --update-golden``
rewrites the files, on purpose only.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from roadcheck.events import Event, Trajectory
from roadcheck.ingest import load

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ("openai-chat", "tau-bench", "tau2", "atif", "openai-agents", "codex", "inspect",
           "otel", "swe-agent", "jaeger", "zipkin", "openhands", "agentdojo",
           "openai-agents-state")
SUFFIXES = (".json", ".jsonl", ".eval", ".gz", ".zst", ".traj")
LONG = 60  # events; a longer run is one line
MANY = 10  # runs; each run of a file with more is one line


def _recorded() -> dict[str, list[Path]]:
    """The files under tests/data and examples, by the format they are detected as."""
    found: dict[str, list[Path]] = {fmt: [] for fmt in FORMATS}
    for base in ("tests/data", "examples"):
        for path in sorted((ROOT / base).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES:
                fmt, _ = load(str(path))
                if fmt in found:
                    found[fmt].append(path)
    return found


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _event(ev: Event) -> str:
    name = ev.data.get("action_type") or ev.data.get("checkpoint_id") or ev.data.get("role")
    return (f"  {ev.seq} {ev.kind} agent={ev.agent!r} line={ev.line} ts={ev.ts!r} "
            f"{name!r} {_digest(repr(ev.data))}")


def _render(path: Path) -> list[str]:
    fmt, read = load(str(path))
    entries = list(read)
    out = [f"## {path.relative_to(ROOT)} ({fmt})"]
    for entry in entries:
        if isinstance(entry, Trajectory):
            out.append(f"T {entry.id} {entry.source} {dict(entry.meta)!r}")
            if len(entry.events) > LONG or len(entries) > MANY:
                whole = "\n".join(repr(ev) for ev in entry.events)
                out.append(f"  {len(entry.events)} events {_digest(whole)}")
            else:
                out.extend(_event(ev) for ev in entry.events)
        else:
            err = entry.error
            out.append(f"F {entry.id} line={err.line} {err.message}")
    return [line.replace(f"{ROOT}/", "") for line in out]


RECORDED = _recorded()


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_recorded_file_reads_as_before(fmt: str, golden) -> None:  # type: ignore[no-untyped-def]
    assert RECORDED[fmt], f"no file of tests/data or examples reads as {fmt}"
    lines = [line for path in RECORDED[fmt] for line in _render(path)]
    golden(f"readers/{fmt}.txt", "\n".join(lines) + "\n")
