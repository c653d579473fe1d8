"""Tool-call traces: reading files and normalising in-memory traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadcheck.acceptance import Call, call_errored, calls_of, load_trace
from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory

DATA = Path(__file__).resolve().parent.parent / "data" / "accept"


class TestLoadTrace:
    """Trace files: native JSONL trajectories and JSON call lists."""

    def test_native_trajectory(self) -> None:
        """Action events become calls located by seq; other events are not calls."""
        calls = load_trace(DATA / "trace_sent.jsonl")
        assert [(c.tool, c.where) for c in calls] == [("read_record", "seq 1"),
                                                      ("send_invoice", "seq 2")]
        assert calls[1].args == {"id": "cust_1002"}

    def test_call_list(self) -> None:
        """A JSON list of tool/args/result objects becomes calls located by position."""
        calls = load_trace(DATA / "trace_other_customer.json")
        assert [(c.tool, c.args["id"], c.where) for c in calls] == [
            ("send_invoice", "cust_1003", "call 1"), ("send_invoice", "cust_1001", "call 2")]

    @pytest.mark.parametrize(("name", "line", "fragment"), [
        ("trace_broken.jsonl", 2, "unparseable JSON"),
        ("trace_no_final.jsonl", None, "no final event"),
        ("trace_no_tool.json", None, "call 2: 'tool' must be a non-empty string"),
        ("trace_args_not_object.jsonl", 1, "'args' must be an object"),
    ])
    def test_bad_traces(self, name: str, line: int | None, fragment: str) -> None:
        """A malformed trace raises TraceError with the file and, where known, the line."""
        path = DATA / "bad" / name
        with pytest.raises(TraceError) as info:
            load_trace(path)
        assert info.value.path == str(path)
        assert info.value.line == line
        assert fragment in info.value.message

    def test_unreadable(self, tmp_path: Path) -> None:
        """A missing trace file is a TraceError."""
        with pytest.raises(TraceError, match="cannot read"):
            load_trace(tmp_path / "missing.jsonl")


class TestCallsOf:
    """In-memory traces."""

    def test_dicts_events_and_trajectories(self) -> None:
        """Dicts, native records, events and a Trajectory all give the same calls."""
        event = Event.make(4, "action", "bot", action_type="send_invoice", args={"id": "c"})
        final = Event.make(5, "final", "bot", task_success=True)
        assert calls_of(Trajectory("t", (event, final)))[0].where == "seq 4"
        assert calls_of([event.to_dict()])[0].tool == "send_invoice"
        assert calls_of([{"tool": "x"}]) == [Call("x", {}, None, "call 1", False)]

    def test_non_calls_are_skipped(self) -> None:
        """Entries that are not tool calls are ignored, never an error."""
        assert calls_of([1, "x", None, {"no": "tool"}, {"tool": 3}]) == []
        assert calls_of("not a list") == []
        assert calls_of(42) == []


class TestCallErrored:
    """Which recorded calls are failures, hence no evidence."""

    @pytest.mark.parametrize("record", [
        {"result": {"error": "boom"}},
        {"result": {"ok": False}},
        {"result": {"is_error": True}},
        {"error": {"code": 500}},
        {"is_error": True},
    ])
    def test_errors(self, record: dict[str, object]) -> None:
        """An error key, ok: false or is_error: true marks the call as failed."""
        assert call_errored(record)

    @pytest.mark.parametrize("record", [
        {}, {"result": {"error": None}}, {"result": {"ok": True}}, {"result": "error"},
        {"result": {"is_error": False}}, {"error": False},
    ])
    def test_not_errors(self, record: dict[str, object]) -> None:
        """A null error, ok: true or a plain result is not a failure."""
        assert not call_errored(record)
