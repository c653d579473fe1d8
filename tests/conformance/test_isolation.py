"""One file that breaks a reader or the engine is that file's ERROR; the batch goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roadcheck.conformance import batch as conformance
from roadcheck.conformance import load_spec, replay
from roadcheck.events import Event, Trajectory

ROOT = Path(__file__).resolve().parent.parent.parent
SPEC = ROOT / "examples" / "spec.json"
SKIPPED = ROOT / "examples" / "fixture_skipped.jsonl"
CONFORMS = ROOT / "examples" / "fixture_conforms.jsonl"


def test_unexpected_reader_exception_is_that_files_error(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    """A reader bug on one file gives one ERROR naming the file and exception; others judged."""
    import roadcheck.ingest.transcripts as transcripts

    def broken(path: str, data: bytes) -> Any:
        raise KeyError("boom\nsecond line")

    monkeypatch.setattr(transcripts, "read_openai_chat", broken)
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    run = replay(load_spec(SPEC), [SKIPPED, chat, CONFORMS])
    assert [r.verdict for r in run.results] == ["BLOCK", "ERROR", "PASS"]
    error = run.results[1]
    assert (error.id, error.headline) == (str(chat), "bad-input")
    message = error.reasons[0].message
    assert str(chat) in message and "KeyError" in message
    assert "\n" not in message
    assert run.exit == 1


def test_unexpected_engine_exception_is_that_trajectorys_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine bug while judging one trajectory is its ERROR, and the next one is judged."""
    from roadcheck.conformance import engine

    original = engine.Replayer._handoff

    def broken(self: engine.Replayer, event: Event) -> None:
        if event.data.get("from_agent") == "boom":
            raise TypeError("unhashable type: 'list'")
        original(self, event)

    monkeypatch.setattr(engine.Replayer, "_handoff", broken)
    bad = Trajectory("mem#1", (
        Event.make(1, "handoff", "boom", from_agent="boom", to_agent="x", payload={}),
        Event.make(2, "final", "x", task_success=True)), path="mem")
    run = replay(load_spec(SPEC), [bad, CONFORMS])
    assert [r.verdict for r in run.results] == ["ERROR", "PASS"]
    assert "TypeError" in run.results[0].reasons[0].message
    assert "mem#1" in run.results[0].reasons[0].message


def test_cli_exits_with_the_verdicts_not_70(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    """The command line reports the broken file and exits 2, never 70."""
    from click.testing import CliRunner

    import roadcheck.ingest.native as native
    from roadcheck.cli import cli

    original = native.read_events

    def broken(data: bytes, path: str | None = None) -> Any:
        if path is not None and path.endswith("conforms.jsonl"):
            raise RecursionError("maximum recursion depth exceeded")
        return original(data, path)

    monkeypatch.setattr(native, "read_events", broken)
    res = CliRunner().invoke(cli, ["replay", str(SPEC), str(CONFORMS)])
    assert res.exit_code == 2, res.output
    assert "RecursionError" in res.output


def test_a_judge_failure_is_that_files_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same when what breaks is the judge itself: ERROR and exit 2, never 70, in
    the streamed reports and with two worker processes."""
    from click.testing import CliRunner

    from roadcheck.cli import cli
    from roadcheck.conformance import Replayer

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError("out of memory")

    monkeypatch.setattr(Replayer, "finish", broken)
    monkeypatch.setattr(conformance, "_FILES_PER_WORKER", 1)
    for fmt in ("text", "json"):
        for jobs in ("1", "2"):
            res = CliRunner().invoke(cli, ["replay", str(SPEC), str(SKIPPED), str(CONFORMS),
                                           "--format", fmt, "--jobs", jobs])
            assert res.exit_code == 2, res.output
            assert res.output.count("MemoryError") == 2, (fmt, jobs)
