"""One registry of readers: every format is asked, the surest wins, doubt is an error."""

from __future__ import annotations

import random
from pathlib import Path

from click.testing import CliRunner

from roadcheck import replay
from roadcheck.cli import cli
from roadcheck.ingest import (
    FORMATS,
    REGISTRY,
    UNKNOWN,
    ReadFailure,
    detect_format,
    detection_scores,
    load,
    reader,
)

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "frameworks"
AGENTS = DATA / "openai_agents_approved.jsonl"
SPEC = DATA / "spec.yaml"


def test_formats_are_the_registry_names() -> None:
    assert tuple(f.name for f in REGISTRY) == FORMATS
    assert FORMATS[:7] == ("native", "openai-chat", "tau-bench", "tau2", "otel", "atif",
                           "openai-agents")
    for name in FORMATS:
        assert callable(reader(name))


def test_every_registered_reader_is_asked_until_one_is_certain() -> None:
    scores = detection_scores((ROOT / "examples" / "fixture_conforms.jsonl").read_bytes())
    assert scores == {"native": 1.0}
    scores = detection_scores(b'{"kind": "step"}\n')
    assert set(scores) == set(FORMATS) and max(scores.values()) == 0.0


def _reordered(tmp_path: Path, seed: int) -> Path:
    lines = AGENTS.read_bytes().splitlines(keepends=True)
    rng = random.Random(seed)
    while lines[0].startswith(b'{"object": "trace",'):
        rng.shuffle(lines)
    out = tmp_path / f"reordered{seed}.jsonl"
    out.write_bytes(b"".join(lines))
    return out


def test_reordered_agents_records_are_detected_and_judged_the_same(tmp_path: Path) -> None:
    want = replay(str(SPEC), [str(AGENTS)]).results[0]
    for seed in range(5):
        path = _reordered(tmp_path, seed)
        assert detect_format(path.read_bytes()) == "openai-agents"
        got = replay(str(SPEC), [str(path)]).results[0]
        assert (got.verdict, got.reasons) == (want.verdict, want.reasons)


def test_an_approval_record_first_is_still_agents(tmp_path: Path) -> None:
    lines = AGENTS.read_bytes().splitlines(keepends=True)
    approval = next(line for line in lines if line.startswith(b'{"object": "approval"'))
    path = tmp_path / "approval_first.jsonl"
    path.write_bytes(approval + b"".join(x for x in lines if x is not approval))
    assert detect_format(path.read_bytes()) == "openai-agents"


def test_unrecognised_json_asks_for_the_format(tmp_path: Path) -> None:
    path = tmp_path / "mystery.jsonl"
    path.write_bytes(b'{"kind": "step", "n": 1}\n{"kind": "step", "n": 2}\n')
    assert detect_format(path.read_bytes()) == UNKNOWN
    fmt, entries = load(str(path))
    (failure,) = list(entries)
    assert fmt == UNKNOWN and isinstance(failure, ReadFailure)
    msg = failure.error.message
    assert msg.startswith(f"could not tell the format of {path} (no reader recognises")
    assert "pass --input-format (one of native, openai-chat," in msg
    assert msg.endswith("codex, inspect, swe-agent, jaeger, zipkin, openhands, claude-code-otel, "
                        "agentdojo, openai-agents-state, guard-state)")
    assert "seq" not in msg


def test_two_equally_sure_readers_are_ambiguous(tmp_path: Path) -> None:
    # a chat document's shape, and a recorder record on a later line
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b'{"messages": [{"role": "user", "content": "hi"}]}\n'
                     b'{"object": "approval", "trace_id": "t", "decision": "approved"}\n')
    fmt, entries = load(str(path))
    (failure,) = list(entries)
    assert fmt == UNKNOWN and isinstance(failure, ReadFailure)
    assert "(it reads as openai-chat and as openai-agents)" in failure.error.message


def test_cli_says_it_in_one_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "mystery.jsonl"
    path.write_bytes(b'{"kind": "step"}\n')
    result = CliRunner().invoke(cli, ["replay", str(SPEC), str(path)])
    assert result.exit_code == 2, result.output
    assert "could not tell the format of" in result.output
    assert "missing required key" not in result.output
    forced = CliRunner().invoke(cli, ["replay", str(SPEC), str(path),
                                       "--input-format", "native"])
    assert forced.exit_code == 2
    assert "missing required key 'seq'" in forced.output


def test_malformed_native_still_gets_the_native_message(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b'{"seq": 1, "event": "action", "agent": "a"\n')
    assert detect_format(path.read_bytes()) == "native"
    no_seq = tmp_path / "noseq.jsonl"
    no_seq.write_bytes(b'{"event": "final", "agent": "a", "ts": "2026-01-01T00:00:00Z"}\n')
    assert detect_format(no_seq.read_bytes()) == "native"
    assert detect_format(b"") == "native"
    assert detect_format(b"not json at all") == "native"


def test_a_codex_rollout_is_told_by_any_of_its_first_lines(tmp_path: Path) -> None:
    """A rollout whose first line is cut off is still Codex: the Codex reader names line 1,
    instead of the native reader asking for a 'seq' no rollout has."""
    rollout = ROOT / "examples" / "frameworks" / "codex" / "approved.jsonl"
    lines = rollout.read_bytes().splitlines(keepends=True)
    assert detect_format(rollout.read_bytes()) == "codex"
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(lines[0][:40] + b"\n" + b"".join(lines[1:]))
    assert detect_format(cut.read_bytes()) == "codex"
    fmt, entries = load(str(cut))
    (failure,) = list(entries)
    assert fmt == "codex" and isinstance(failure, ReadFailure)
    assert f"{cut}:1: unparseable JSON" in str(failure.error) and "seq" not in str(failure.error)
    # the same words inside a string of another document are not a rollout line
    other = tmp_path / "other.jsonl"
    other.write_bytes(b'{"kind": "note", "text": "{\\"type\\":\\"session_meta\\",'
                      b'\\"payload\\":{}}"}\n')
    assert detect_format(other.read_bytes()) == UNKNOWN
