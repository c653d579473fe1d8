"""Tool-call traces: reading files and normalising in-memory traces."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

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


class TestMisspeltKeys:
    """A misspelt key on a trace record is refused naming the line and the closest name:
    a failed call whose ``result`` key is misspelt would otherwise back the claim."""

    FAILED: ClassVar[dict[str, object]] = {
        "tool": "send_invoice", "args": {"customer_id": "cust_1002"},
        "result": {"error": "mail relay refused the message"}}

    def _list(self, tmp_path: Path, calls: list[dict[str, object]]) -> Path:
        import json

        path = tmp_path / "trace.json"
        path.write_text("[\n" + ",\n".join(json.dumps(c) for c in calls) + "\n]\n",
                        encoding="utf-8")
        return path

    @pytest.mark.parametrize(("old", "new"), [("result", "reslt"), ("args", "arg"),
                                              ("tool", "tools")])
    def test_call_list_key_misspelt(self, tmp_path: Path, old: str, new: str) -> None:
        """A call list holds only tool, args, result, error, ok and is_error."""
        call = dict(self.FAILED)
        call[new] = call.pop(old)
        path = self._list(tmp_path, [{"tool": "read_record"}, call])
        with pytest.raises(TraceError) as info:
            load_trace(path)
        assert info.value.line == 3
        assert f"call 2: unknown key '{new}'; did you mean '{old}'?" in info.value.message

    def test_call_list_unknown_key(self, tmp_path: Path) -> None:
        """A key like no known one is refused too, listing the known ones."""
        path = self._list(tmp_path, [{"tool": "send_invoice", "when": "now"}])
        with pytest.raises(TraceError, match="call 1: unknown key 'when' "
                                             r"\(known: args, error, is_error, ok, result, "
                                             r"tool\)") as info:
            load_trace(path)
        assert info.value.line == 2

    @pytest.mark.parametrize(("old", "new"), [("result", "reslut"), ("args", "arg"),
                                              ("result", "results")])
    def test_native_action_key_misspelt(self, tmp_path: Path, old: str, new: str) -> None:
        """In a native trajectory, an action key that reads as a misspelt args, result,
        error, ok or is_error is refused; other keys are kept, as the native format says."""
        path = tmp_path / "trace.jsonl"
        path.write_text(
            '{"seq": 1, "event": "action", "action_type": "read_record", "call_id": "c1"}\n'
            '{"seq": 2, "event": "action", "action_type": "send_invoice", '
            '"args": {"customer_id": "cust_1002"}, "result": {"error": "refused"}}\n'
            '{"seq": 3, "event": "final", "task_success": true}\n'.replace(
                f'"{old}": ', f'"{new}": '), encoding="utf-8")
        with pytest.raises(TraceError) as info:
            load_trace(path)
        assert info.value.line == 2
        assert f"unknown key '{new}'; did you mean '{old}'?" in info.value.message

    def test_native_extra_keys_are_kept(self) -> None:
        """Keys of other meaning (ids, flags) are still read and ignored."""
        calls = load_trace(DATA / "trace_sent.jsonl")
        assert [c.tool for c in calls] == ["read_record", "send_invoice"]


RECORDED = Path(__file__).resolve().parent.parent / "data" / "recorded"


class TestTracesOfEveryFormat:
    """A session of any format replay reads is a trace, read by the same reader."""

    def test_claude_code_session(self) -> None:
        calls = load_trace(RECORDED / "claude-code" / "push-after-failed-tests.jsonl")
        assert [(c.tool, c.args.get("command"), c.errored) for c in calls] == [
            ("Bash", "python3 -m pytest -q", True),  # exit 1: no pytest
            ("Bash", "git push origin main", False)]

    def test_codex_rollout(self) -> None:
        calls = load_trace(RECORDED / "codex" / "rollout-0.34.0-approved-push.jsonl")
        assert [c.tool for c in calls] == ["shell", "shell"]
        assert [c.where for c in calls] == ["seq 3", "seq 5"]

    def test_a_file_of_several_runs_needs_one_named(self) -> None:
        path = RECORDED / "claude-code-otel" / "push-after-failed-tests.jsonl"
        with pytest.raises(TraceError) as exc:
            load_trace(path)
        assert exc.value.path == str(path)
        assert "holds 2 (ccb40d4b-45c0-4d0f-9514-3f235dd5e5af, " in str(exc.value)
        assert "name one as PATH#RUN" in str(exc.value)
        calls = load_trace(f"{path}#bb32d29b-1a22-414f-a675-f55f1dd2a6d7")
        assert [c.tool for c in calls] == ["Bash", "Bash"]
        with pytest.raises(TraceError, match="no run 'nope' in this claude-code-otel file"):
            load_trace(f"{path}#nope")

    def test_a_named_format_that_does_not_fit_names_the_line(self) -> None:
        path = RECORDED / "claude-code" / "push-after-failed-tests.jsonl"
        with pytest.raises(TraceError) as exc:
            load_trace(path, "codex")
        assert exc.value.path == str(path) and exc.value.line == 1

    def test_a_call_list_is_still_a_call_list(self, tmp_path: Path) -> None:
        path = tmp_path / "calls.json"
        path.write_text('[{"tool": "send", "args": {"to": "a"}}]')
        assert [(c.tool, c.where) for c in load_trace(path)] == [("send", "call 1")]
