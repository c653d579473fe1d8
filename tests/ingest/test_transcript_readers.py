"""The transcript readers: OpenAI chat messages, tau-bench and tau2-bench results."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadcheck.events import Trajectory
from roadcheck.ingest import ReadFailure, detect_format, load
from roadcheck.ingest.native import read_bytes
from roadcheck.ingest.transcripts import detect_json_document, transcript_events

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "transcripts"
RUNS = ROOT / "tests" / "data" / "tau"
TAU_BENCH = RUNS / "taubench" / "gpt-4o-airline.json.gz"
TAU2 = RUNS / "tau2" / "gpt-4o-airline-50.json.gz"


def read(name: str, input_format: str | None = None) -> tuple[str, list[Trajectory | ReadFailure]]:
    fmt, entries = load(str(DATA / name), input_format)
    return fmt, list(entries)


def one(name: str) -> Trajectory:
    _, entries = read(name)
    assert len(entries) == 1
    entry = entries[0]
    assert isinstance(entry, Trajectory)
    return entry


def kinds(traj: Trajectory) -> list[str]:
    return [e.kind for e in traj.events]


class TestDetectJsonDocument:
    """Naming a document's format from its top-level keys."""

    @pytest.mark.parametrize(("name", "expected"), [
        ("confirmed_call.json", "openai-chat"),
        ("content_parts.json", "openai-chat"),
        ("text_and_call.json", "openai-chat"),
        ("malformed_record.json", "tau-bench"),
        ("user_side_call.json", "tau2"),
    ])
    def test_data_files(self, name: str, expected: str) -> None:
        """Each hand-made transcript is detected as the format it was written in."""
        assert detect_json_document((DATA / name).read_bytes()) == expected
        assert detect_format((DATA / name).read_bytes()) == expected

    def test_native_is_not_a_transcript(self) -> None:
        """A native JSONL file is left to the native reader."""
        data = (ROOT / "examples" / "fixture_conforms.jsonl").read_bytes()
        assert detect_json_document(data) is None
        assert detect_format(data) == "native"

    def test_nested_keys_do_not_count(self) -> None:
        """Only keys of the top-level object decide, not the same names deeper down."""
        assert detect_json_document(b'{"info": {"messages": []}, "simulations": []}') == "tau2"
        assert detect_json_document(b'{"info": {"simulations": 1}, "messages": []}') \
            == "openai-chat"
        assert detect_json_document(b'{"info": {"simulations": 1, "messages": []}}') is None

    def test_string_values_do_not_count(self) -> None:
        """A key name inside a string value, escaped quotes included, is not a key."""
        doc = rb'{"note": "\"simulations\": [", "messages": []}'
        assert detect_json_document(doc) == "openai-chat"

    def test_looks_at_the_start_only(self) -> None:
        """Detection stops once it knows, so a broken tail does not change the answer."""
        assert detect_json_document(b'{"simulations": [{"id": ') == "tau2"
        assert detect_json_document(b'[{"task_id": 1, "traj": [') == "tau-bench"
        assert detect_json_document(b'[{"role": "user", "content": "hi"}, {') == "openai-chat"

    @pytest.mark.parametrize("doc", [b"[]", b"[1, 2]", b"{}", b'{"a": 1}', b"[[]]", b"{"])
    def test_other_documents(self, doc: bytes) -> None:
        """Documents of no transcript shape give None."""
        assert detect_json_document(doc) is None

    @pytest.mark.parametrize(("path", "expected"), [(TAU_BENCH, "tau-bench"), (TAU2, "tau2")])
    def test_recorded_runs(self, path: Path, expected: str) -> None:
        """The real recorded runs are detected (inside their compression)."""
        assert detect_json_document(read_bytes(str(path))) == expected


class TestOpenAIChat:
    """Mapping OpenAI chat-completions messages to events."""

    def test_mapping(self) -> None:
        """Messages, tool calls with their results, and the final, in order."""
        traj = one("confirmed_call.json")
        assert traj.source == "openai-chat"
        assert traj.id == str(DATA / "confirmed_call.json")
        assert kinds(traj) == ["message", "message", "message", "message", "action",
                               "message", "final"]
        assert [e.seq for e in traj.events] == list(range(1, 8))
        # Event.line is the message index; the tool result message becomes no event.
        assert [e.line for e in traj.events] == [0, 1, 2, 3, 4, 6, None]
        action = traj.events[4]
        assert action.agent == "assistant"
        assert action.action_type == "cancel_reservation"
        assert action.get("args") == {"reservation_id": "ABC123"}
        assert action.get("result") == '{"status": "cancelled"}'
        assert action.get("call_id") == "call_1"

    def test_yields_turn(self) -> None:
        """An assistant text without a tool call yields the turn; user messages carry no flag."""
        traj = one("confirmed_call.json")
        assistant = [e for e in traj.events if e.get("role") == "assistant"]
        assert [e.get("yields_turn") for e in assistant] == [True, True]
        assert all("yields_turn" not in e.data for e in traj.events if e.get("role") == "user")

    def test_text_and_tool_call_in_one_message(self) -> None:
        """Text with a tool call is a message that keeps the turn, then the action."""
        traj = one("text_and_call.json")
        msg, action = traj.events[3], traj.events[4]
        assert (msg.kind, msg.get("text"), msg.get("yields_turn"), msg.line) \
            == ("message", "Booking it now.", False, 3)
        assert (action.kind, action.action_type, action.line) == ("action", "book_reservation", 3)

    def test_content_parts(self) -> None:
        """Text parts are joined, other parts ignored; developer messages count as system."""
        traj = one("content_parts.json")
        assert traj.events[0].get("role") == "system"
        assert traj.events[2].get("text") \
            == "Cancel order #W100 (reason: no longer needed).\nShall I?"
        assert traj.events[3].get("text") == "Yes"
        action = traj.events[4]
        assert action.action_type == "cancel_pending_order"
        assert action.get("result") == '{"status": "cancelled"}'

    @pytest.mark.parametrize(("name", "success", "meta"), [
        ("confirmed_call.json", True, {"reward": 1.0}),
        ("unconfirmed_call.json", True, {}),
        ("text_and_call.json", False, {}),
        ("content_parts.json", False, {}),
    ])
    def test_task_success(self, name: str, success: bool, meta: dict[str, float]) -> None:
        """task_success comes from a top-level task_success or reward; silence is false."""
        traj = one(name)
        assert traj.task_success is success
        assert dict(traj.meta) == meta

    @pytest.mark.parametrize("name", ["confirmed_call.json", "text_and_call.json",
                                      "content_parts.json"])
    def test_events_are_valid_native_records(self, name: str) -> None:
        """The mapped events pass the strict native reader unchanged."""
        from roadcheck.ingest.native import iter_events

        traj = one(name)
        native = list(iter_events(traj.to_jsonl().encode()))
        assert [e.data for e in native] == [e.data for e in traj.events]

    def test_arguments_that_are_not_json(self) -> None:
        """A call whose arguments are not JSON is kept with the raw text."""
        events = transcript_events([{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "function": {"name": "send_certificate", "arguments": "{oops"}}]}],
            {"task_success": False})
        assert events[0].action_type == "send_certificate"
        assert events[0].get("args") == "{oops"

    def test_orphan_tool_result(self) -> None:
        """A tool result that answers no recorded call is malformed: its call was lost."""
        from roadcheck.errors import TraceError

        with pytest.raises(TraceError, match=r"^message 0: tool result answers call id 'x'"):
            transcript_events([{"role": "tool", "tool_call_id": "x", "content": "ok"}],
                              {"task_success": False})

    def test_legacy_function_call(self) -> None:
        """The older function_call shape and its function-role result are read too."""
        events = transcript_events([
            {"role": "assistant", "content": None,
             "function_call": {"name": "cancel_reservation", "arguments": "{}"}},
            {"role": "function", "name": "cancel_reservation", "content": "done"},
        ], {"task_success": False})
        assert [e.kind for e in events] == ["action", "final"]
        assert events[0].get("result") == "done"

    @pytest.mark.parametrize(("messages", "error"), [
        ([{"role": "user", "content": "hi"}, "oops"], "message 1: is str, not an object"),
        ([{"content": "hi"}], "message 0: missing required key 'role'"),
        ([{"role": "robot", "content": "hi"}], "message 0: unknown role 'robot'"),
        ([{"role": "user", "content": 3}], "message 0: 'content' must be a string"),
        ([{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}],
         "message 0: tool call 0 has no tool name"),
        ([{"role": "assistant", "tool_calls": ["x"]}], "message 0: tool call 0 is str"),
        ([{"role": "user", "content": [{"type": "text"}]}], "message 0: content part 0"),
    ])
    def test_malformed(self, messages: list[object], error: str) -> None:
        """A malformed message is a TraceError naming its index."""
        from roadcheck.errors import TraceError

        with pytest.raises(TraceError, match="^" + error.replace("(", r"\(")):
            transcript_events(messages, {"task_success": False})

    @pytest.mark.parametrize(("doc", "error"), [
        (b"[1, 2", "unparseable JSON"),
        (b"{}", "expected a 'messages' list"),
        (b'{"messages": []}', "empty transcript"),
        (b'{"messages": [{"role": "user", "content": "x"}], "reward": "high"}', "'reward' must"),
    ])
    def test_unreadable_documents(self, tmp_path: Path, doc: bytes, error: str) -> None:
        """A document that cannot be read is one ReadFailure for the file."""
        path = tmp_path / "chat.json"
        path.write_bytes(doc)
        _, entries = load(str(path), "openai-chat")
        (entry,) = list(entries)
        assert isinstance(entry, ReadFailure)
        assert error in entry.error.message
        assert entry.id == str(path)


class TestTauBench:
    """One trajectory per tau-bench run record."""

    def test_ids_and_reward(self) -> None:
        """Ids are path#task<id>/trial<n>; the reward is kept for contrast."""
        fmt, entries = read("malformed_record.json")
        assert fmt == "tau-bench"
        path = str(DATA / "malformed_record.json")
        assert [e.id for e in entries] == [f"{path}#task0/trial0", f"{path}#task1/trial0",
                                           f"{path}#task2/trial1"]
        first = entries[0]
        assert isinstance(first, Trajectory)
        assert first.source == "tau-bench"
        assert dict(first.meta) == {"reward": 1.0}
        assert first.task_success is True
        assert first.final is not None
        assert (first.final.get("task_id"), first.final.get("trial")) == (0, 0)

    def test_malformed_record_among_good_ones(self) -> None:
        """A bad record is one ReadFailure naming record and message; the rest are read."""
        _, entries = read("malformed_record.json")
        assert [type(e).__name__ for e in entries] == ["Trajectory", "ReadFailure", "Trajectory"]
        bad = entries[1]
        assert isinstance(bad, ReadFailure)
        assert bad.error.message == "record 1: message 1: 'tool_calls' must be a list, got dict"

    @pytest.mark.parametrize(("doc", "error"), [
        (b'{"traj": []}', "expected a JSON list of run records"),
        (b"[", "unparseable JSON"),
    ])
    def test_unreadable_file(self, tmp_path: Path, doc: bytes, error: str) -> None:
        """A file that is not a list of records is one ReadFailure."""
        path = tmp_path / "runs.json"
        path.write_bytes(doc)
        (entry,) = list(load(str(path), "tau-bench")[1])
        assert isinstance(entry, ReadFailure)
        assert error in entry.error.message

    @pytest.mark.parametrize(("record", "error"), [
        (b'"x"', "record 0: is str, not an object"),
        (b'{"task_id": 3, "traj": []}', "record 0: 'traj' must be a non-empty list"),
        (b'{"task_id": 3, "reward": true, "traj": [{"role": "user", "content": "x"}]}',
         "record 0: 'reward' must be a number"),
    ])
    def test_bad_records(self, tmp_path: Path, record: bytes, error: str) -> None:
        """Record-level problems name the record."""
        path = tmp_path / "runs.json"
        path.write_bytes(b"[" + record + b"]")
        (entry,) = list(load(str(path), "tau-bench")[1])
        assert isinstance(entry, ReadFailure)
        assert entry.error.message.startswith(error)


class TestTau2:
    """One trajectory per tau2-bench simulation."""

    def test_user_side_tool_call(self) -> None:
        """A tool call the user side requested is an action of agent user."""
        fmt, entries = read("user_side_call.json")
        assert fmt == "tau2"
        traj = entries[0]
        assert isinstance(traj, Trajectory)
        assert traj.id == f"{DATA / 'user_side_call.json'}#sim-user-call"
        user_call = traj.events[2]
        assert (user_call.kind, user_call.agent, user_call.action_type, user_call.line) \
            == ("action", "user", "reboot_device", 1)
        assert user_call.get("result") == "Device rebooted."
        assert user_call.get("requestor") is None  # the agent field says it
        agent_call = traj.events[4]
        assert (agent_call.agent, agent_call.get("args")) \
            == ("assistant", {"reservation_id": "ABC123"})
        assert agent_call.get("result_error") is True

    def test_timestamps_and_meta(self) -> None:
        """Message timestamps become ts; reward, task and trial are reader facts."""
        _, entries = read("user_side_call.json")
        traj = entries[1]
        assert isinstance(traj, Trajectory)
        assert traj.events[0].ts == "2025-01-01T00:01:00"
        assert dict(traj.meta) == {"reward": 0.0, "task_id": "1", "trial": 0}
        assert traj.task_success is False

    def test_bad_simulation(self, tmp_path: Path) -> None:
        """A bad simulation is one ReadFailure; the others are read."""
        path = tmp_path / "results.json"
        path.write_bytes(b'{"simulations": [{"id": "a", "messages": 3}, {"id": "b", "messages":'
                         b' [{"role": "user", "content": "hi"}]}]}')
        entries = list(load(str(path))[1])
        assert isinstance(entries[0], ReadFailure)
        assert entries[0].id == f"{path}#a"
        assert entries[0].error.message == "simulation 0: 'messages' must be a non-empty list"
        assert isinstance(entries[1], Trajectory)

    def test_not_a_results_file(self, tmp_path: Path) -> None:
        """A document without simulations cannot be read as tau2."""
        path = tmp_path / "results.json"
        path.write_bytes(b'{"tasks": []}')
        (entry,) = list(load(str(path), "tau2")[1])
        assert isinstance(entry, ReadFailure)
        assert "'simulations' list" in entry.error.message


class TestRecordedRuns:
    """The real recorded runs read without a failure."""

    @pytest.mark.parametrize(("path", "fmt", "runs", "rewarded"), [
        (TAU_BENCH, "tau-bench", 200, 84),
        (TAU2, "tau2", 50, 23),
    ])
    def test_every_run_reads(self, path: Path, fmt: str, runs: int, rewarded: int) -> None:
        """Every run becomes a trajectory, and reward 1 maps to task_success true."""
        got, entries = load(str(path))
        trajs = list(entries)
        assert got == fmt
        assert all(isinstance(t, Trajectory) for t in trajs)
        assert len(trajs) == runs
        assert sum(1 for t in trajs if isinstance(t, Trajectory) and t.task_success) == rewarded
