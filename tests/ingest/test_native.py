"""The strict native JSONL reader."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roadcheck.conformance import load_spec, replay
from roadcheck.errors import TraceError
from roadcheck.events import Event
from roadcheck.ingest.native import iter_events, parse_record, read_native

from ..conftest import EXAMPLES

GOOD = [
    {"seq": 1, "agent": "a", "event": "action", "action_type": "pull"},
    {"seq": 2, "agent": "a", "event": "final", "task_success": True},
]


def _doc(records: list[object]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


class TestReadNative:
    def test_reads_every_event_with_its_line(self) -> None:
        """Each line becomes one Event carrying the line it came from."""
        traj = read_native(str(EXAMPLES / "fixture_conforms.jsonl"))
        assert [e.seq for e in traj.events] == [1, 2, 3, 4, 5, 6, 7]
        assert [e.line for e in traj.events] == [1, 2, 3, 4, 5, 6, 7]
        assert traj.events[4].kind == "checkpoint"
        assert traj.task_success is True

    def test_blank_lines_are_skipped_and_counted(self) -> None:
        """Blank lines do not break the file, and later line numbers stay physical."""
        data = b"\n" + _doc(GOOD[:1]) + b"\n" + _doc(GOOD[1:])
        events = list(iter_events(data))
        assert [e.line for e in events] == [2, 4]

    def test_round_trip(self) -> None:
        """Serialising a trajectory and reading it back gives the same records."""
        traj = read_native(str(EXAMPLES / "fixture_propagated.jsonl"))
        again = list(iter_events(traj.to_jsonl().encode()))
        assert [e.to_dict() for e in again] == [e.to_dict() for e in traj.events]

    def test_missing_file_is_a_trace_error(self, tmp_path) -> None:  # type: ignore[no-untyped-def]
        """A file that cannot be opened is bad input naming the file."""
        with pytest.raises(TraceError, match="cannot read"):
            read_native(str(tmp_path / "nope.jsonl"))


BAD_INPUTS = [
    ("broken-json", b'{"seq": 1, "event": "action", "action_type": "x"}\n{"seq": 2,\n',
     2, "unparseable JSON"),
    ("empty-file", b"", None, "empty trajectory"),
    ("only-whitespace", b"\n  \n", None, "empty trajectory"),
    ("missing-final", _doc(GOOD[:1]), None, "no final event"),
    ("event-after-final", _doc([*GOOD, {"seq": 3, "event": "action", "action_type": "x"}]),
     3, "event after final"),
    ("two-finals", _doc([*GOOD, {"seq": 3, "event": "final", "task_success": True}]),
     3, "event after final"),
    ("seq-repeats", _doc([GOOD[0], dict(GOOD[1], seq=1)]), 2, "does not increase"),
    ("seq-decreases", _doc([dict(GOOD[0], seq=5), dict(GOOD[1], seq=4)]), 2, "does not increase"),
    ("seq-missing", _doc([{"event": "final", "task_success": True}]), 1, "'seq'"),
    ("seq-string", _doc([{"seq": "1", "event": "final", "task_success": True}]), 1, "integer"),
    ("seq-bool", _doc([{"seq": True, "event": "final", "task_success": True}]), 1, "integer"),
    ("unknown-type", _doc([{"seq": 1, "event": "thought"}, GOOD[1]]), 1, "unknown event type"),
    ("event-missing", _doc([{"seq": 1}, GOOD[1]]), 1, "'event'"),
    ("not-an-object", b"[1, 2]\n", 1, "does not hold native events"),
    ("not-an-object-later", _doc([GOOD[0]]) + b"[1, 2]\n", 2, "expected a JSON object"),
    ("action-no-type", _doc([{"seq": 1, "event": "action"}, GOOD[1]]), 1, "'action_type'"),
    ("checkpoint-no-id", _doc([{"seq": 1, "event": "checkpoint"}, GOOD[1]]), 1,
     "'checkpoint_id'"),
    ("handoff-no-payload", _doc([{"seq": 1, "event": "handoff", "from_agent": "a",
                                  "to_agent": "b"}, GOOD[1]]), 1, "'payload'"),
    ("handoff-payload-list", _doc([{"seq": 1, "event": "handoff", "from_agent": "a",
                                    "to_agent": "b", "payload": []}, GOOD[1]]), 1, "object"),
    ("handoff-no-to", _doc([{"seq": 1, "event": "handoff", "from_agent": "a", "payload": {}},
                            GOOD[1]]), 1, "'to_agent'"),
    ("final-no-success", _doc([GOOD[0], {"seq": 2, "event": "final"}]), 2, "'task_success'"),
    ("final-success-string", _doc([GOOD[0], {"seq": 2, "event": "final",
                                             "task_success": "true"}]), 2, "true or false"),
    ("message-bad-role", _doc([{"seq": 1, "event": "message", "role": "robot"}, GOOD[1]]), 1,
     "unknown message role"),
    ("agent-not-string", _doc([dict(GOOD[0], agent=7), GOOD[1]]), 1, "'agent'"),
    ("action-type-empty", _doc([dict(GOOD[0], action_type=""), GOOD[1]]), 1,
     "'action_type' must be a non-empty string"),
    ("checkpoint-id-empty", _doc([{"seq": 1, "event": "checkpoint", "checkpoint_id": ""},
                                  GOOD[1]]), 1, "'checkpoint_id' must be a non-empty string"),
    ("handoff-from-empty", _doc([{"seq": 1, "event": "handoff", "from_agent": "",
                                  "to_agent": "b", "payload": {}}, GOOD[1]]), 1,
     "'from_agent' must be a non-empty string"),
    ("handoff-to-empty", _doc([{"seq": 1, "event": "handoff", "from_agent": "a",
                                "to_agent": "", "payload": {}}, GOOD[1]]), 1,
     "'to_agent' must be a non-empty string"),
    ("not-utf8", b'{"seq": 1, "event": "action", "action_type": "\xff"}\n', 1,
     "not UTF-8 text (byte 0xff at column 47)"),
]


class TestBadInput:
    @pytest.mark.parametrize(("name", "data", "line", "needle"), BAD_INPUTS,
                             ids=[b[0] for b in BAD_INPUTS])
    def test_reader_names_the_line_and_problem(self, name: str, data: bytes, line: int | None,
                                                needle: str) -> None:
        """Each malformed document raises TraceError with the line and the problem."""
        with pytest.raises(TraceError) as info:
            list(iter_events(data, "t.jsonl"))
        assert info.value.line == line
        assert needle in info.value.message
        assert "\n" not in str(info.value)

    @pytest.mark.parametrize(("name", "data", "line", "needle"), BAD_INPUTS,
                             ids=[b[0] for b in BAD_INPUTS])
    def test_replay_turns_it_into_error_exit_2(self, tmp_path, name: str, data: bytes,  # type: ignore[no-untyped-def]
                                               line: int | None, needle: str) -> None:
        """Replay reports ERROR bad-input with exit 2, never a pass."""
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(data)
        run = replay(load_spec(EXAMPLES / "spec.json"), [path])
        (result,) = run.results
        assert (result.verdict, result.headline, result.exit, run.exit) == (
            "ERROR", "bad-input", 2, 2)
        assert needle in result.reasons[0].message
        if line is not None:
            assert result.reasons[0].message.startswith(f"line {line}: ")


class TestParseRecord:
    def test_builds_event_fields(self) -> None:
        """A valid record keeps its whole data and its typed header."""
        rec = {"seq": 3, "ts": "t", "agent": "bot", "event": "checkpoint", "checkpoint_id": "c"}
        event = parse_record(rec, 9)
        assert event == Event(3, "checkpoint", "bot", "t", rec, 9)

    def test_event_make_round_trips(self) -> None:
        """Event.make builds the same record a reader would produce."""
        event = Event.make(2, "action", "bot", action_type="send", irreversible=True)
        assert parse_record(event.to_dict(), 1).data == event.data
        assert event.irreversible and event.action_type == "send"


class TestArbitraryBytes:
    @settings(max_examples=300, deadline=None)
    @given(st.binary(max_size=400))
    def test_arbitrary_bytes_never_pass(self, data: bytes) -> None:
        """Random bytes give TraceError (bad-input) or nothing at all, never another exception."""
        try:
            events = list(iter_events(data, "fuzz.jsonl"))
        except TraceError:
            return
        # Only a structurally valid trajectory may get through, and then it has a final.
        assert events and events[-1].kind == "final"

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.text(max_size=60), min_size=1, max_size=6))
    def test_arbitrary_lines_through_replay_are_error(self, lines: list[str]) -> None:
        """Replay of random text lines is ERROR bad-input, exit 2, never PASS or a traceback."""
        from roadcheck.conformance import replay_events
        from roadcheck.ingest.native import iter_events as it

        spec = load_spec(EXAMPLES / "spec.json")
        data = "\n".join(lines).encode()
        result = replay_events(spec, it(data, "fuzz.jsonl"), "fuzz")
        assert (result.verdict, result.headline, result.exit) == ("ERROR", "bad-input", 2)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.dictionaries(st.sampled_from(
        ["seq", "event", "action_type", "checkpoint_id", "task_success", "payload", "from_agent",
         "to_agent", "agent", "role", "text"]),
        st.one_of(st.integers(0, 5), st.booleans(), st.none(), st.text(max_size=4),
                  st.sampled_from(["action", "final", "handoff", "checkpoint", "message"]),
                  st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))),
        max_size=6))
    def test_near_miss_records_only_raise_trace_error(
            self, records: list[dict[str, object]]) -> None:
        """Plausible-looking but wrong records raise TraceError and nothing else."""
        try:
            events = list(iter_events(_doc(list(records))))
        except TraceError:
            return
        assert events[-1].kind == "final"
        assert all(b.seq > a.seq for a, b in itertools.pairwise(events))


class TestArbitraryFiles:
    @settings(max_examples=300, deadline=None)
    @given(st.one_of(st.binary(max_size=300),
                     st.binary(max_size=300).map(lambda b: b"[" + b),
                     st.binary(max_size=300).map(lambda b: b"{" + b),
                     st.text(max_size=200).map(lambda t: ("{" + t).encode())))
    def test_any_file_through_detection_is_error_never_pass(self, data: bytes) -> None:
        """Arbitrary bytes in a file, detected like any input, replay to ERROR bad-input."""
        import tempfile
        from pathlib import Path

        spec = load_spec(EXAMPLES / "spec.json")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "fuzz.json"
            path.write_bytes(data)
            run = replay(spec, [path])
        assert run.results, "every file yields at least one result"
        for result in run.results:
            assert (result.verdict, result.headline, result.exit) == ("ERROR", "bad-input", 2)
