"""The typed decode of native files judges exactly as the strict reader does, or steps aside."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roadcheck.conformance import CompiledSpec, parse_spec, replay_events
from roadcheck.conformance import _replay_records as replay_records
from roadcheck.ingest.native import iter_events, typed_records

from ..conftest import EXAMPLES, ROOT
from ..strategies import json_values

#: A spec using the rule options the typed path reads most of (each, consume, verified).
EACH_CONSUME = {
    "mandatory_checkpoints": [
        {"checkpoint_id": "ok", "must_precede": ["send", "pay"], "scope": "each",
         "consume": True, "confirmed_by": ["owner"]},
        {"checkpoint_id": "cp2", "must_precede": "send"}],
    "handoff_contracts": [
        {"from_agent": "a", "to_agent": "b", "required_fields": ["x"],
         "require_verified": True}]}
SPECS = {
    "example": parse_spec(json.loads((EXAMPLES / "spec.json").read_text()), "spec.json"),
    "each-consume": parse_spec(EACH_CONSUME),
}

NATIVE_FILES = sorted({*EXAMPLES.glob("*.jsonl"), *(ROOT / "tests" / "data").rglob("*.jsonl")})


def _both(spec: Any, data: bytes, path: str = "t.jsonl") -> tuple[Any, Any]:
    """(the strict reader's result, the typed path's result or None when it steps aside)."""
    compiled = CompiledSpec(spec)
    strict = replay_events(compiled, iter_events(data, path), path, path)
    typed = typed_records(data)
    fast = None if typed is None else replay_records(compiled, typed[0], typed[1], path)
    return strict, fast


class TestSameVerdicts:
    @pytest.mark.parametrize("spec", sorted(SPECS))
    @pytest.mark.parametrize("path", NATIVE_FILES, ids=lambda p: p.name)
    def test_every_native_file_in_the_repository(self, path: Path, spec: str) -> None:
        """Each native file that the typed path takes gets the strict reader's result."""
        strict, fast = _both(SPECS[spec], path.read_bytes(), str(path))
        if fast is not None:
            assert fast == strict
            assert fast.to_dict() == strict.to_dict()

    def test_the_examples_take_the_typed_path(self) -> None:
        """The example fixtures that are valid are decoded by the typed path."""
        taken = [p.name for p in EXAMPLES.glob("fixture_*.jsonl")
                 if typed_records(p.read_bytes()) is not None]
        assert len(taken) == 7 and "fixture_bad_input.jsonl" not in taken

    @settings(max_examples=300, deadline=None)
    @given(st.data())
    def test_generated_trajectories(self, data: st.DataObject) -> None:
        """Random trajectories: both paths give the same result, to the last message."""
        agents = st.sampled_from(["a", "b", "c", "scanner", "aggregator", "reporter"])
        # a key written as null is the strict reader's (see TestStepsAside)
        present = json_values.filter(lambda v: v is not None)
        field = st.one_of(json_values, st.fixed_dictionaries(
            {"value": json_values, "verified": st.booleans()}))
        event = st.one_of(
            st.fixed_dictionaries({"event": st.just("action"), "agent": agents,
                                   "action_type": st.sampled_from(["send", "pay", "x",
                                                                   "send_report"])},
                                  optional={"irreversible": st.booleans(), "args": present}),
            st.fixed_dictionaries({"event": st.just("checkpoint"), "agent": agents,
                                   "checkpoint_id": st.sampled_from(["ok", "cp2",
                                                                     "confirm_with_user"])},
                                  optional={"confirmed_by": st.one_of(st.just("owner"),
                                                                      present)}),
            st.fixed_dictionaries({"event": st.just("handoff"), "agent": agents,
                                   "from_agent": agents, "to_agent": agents,
                                   "payload": st.dictionaries(st.sampled_from(
                                       ["x", "y", "row_count", "summary", "source"]), field,
                                       max_size=3)}),
            st.fixed_dictionaries({"event": st.just("message"),
                                   "role": st.sampled_from(["user", "assistant"])},
                                  optional={"text": st.text(max_size=5)}),
        )
        records = data.draw(st.lists(event, max_size=12))
        records.append({"event": "final", "agent": "a", "task_success": data.draw(st.booleans()),
                        **data.draw(st.dictionaries(st.sampled_from(["reward", "note"]),
                                                    json_values, max_size=2))})
        lines = [json.dumps({"seq": i * 2 + 1, **r}) for i, r in enumerate(records)]
        doc = ("\n".join(lines) + "\n").encode()
        for spec in SPECS.values():
            strict, fast = _both(spec, doc)
            if b"\\u003a" in doc.lower():  # an escaped colon: the typed path steps aside
                assert fast is None
                continue
            assert fast is not None
            assert fast == strict
            assert fast.to_dict() == strict.to_dict()


GOOD = [
    '{"seq": 1, "agent": "a", "event": "action", "action_type": "send", "args": {"k": 1}}',
    '{"seq": 2, "event": "final", "task_success": true}',
]


def _doc(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


class TestStepsAside:
    def test_a_plain_file_is_taken(self) -> None:
        """The common file decodes into typed records and its final event's whole record."""
        typed = typed_records(_doc(*GOOD))
        assert typed is not None
        assert [r.kind for r in typed[0]] == ["action"]
        assert typed[1].data == {"seq": 2, "event": "final", "task_success": True}

    @pytest.mark.parametrize("lines", [
        pytest.param([GOOD[0].replace('"seq": 1,', '"seq": 1, "seq": 3,'), GOOD[1]], id="dup-seq"),
        pytest.param([GOOD[0].replace('{"k": 1}', '{"k": 1, "k": 2}'), GOOD[1]], id="dup-args"),
        pytest.param(['{"seq": 1, "event": "handoff", "from_agent": "a", "to_agent": "b", '
                      '"payload": {"x": 1, "x": 2}}', GOOD[1]], id="dup-payload"),
        pytest.param([GOOD[0].replace('{"k": 1}', '{"k": 18446744073709551616}'), GOOD[1]],
                     id="long-int"),
        pytest.param([GOOD[0], "", GOOD[1]], id="blank-line"),
        pytest.param([GOOD[0].replace('"agent": "a"', '"agent": null'), GOOD[1]],
                     id="null-agent"),
        pytest.param([GOOD[0].replace('"args"', '"other"'), GOOD[1]], id="undeclared-key"),
        pytest.param([GOOD[0].replace('{"k": 1}', '{"k\\u003a": 1}'), GOOD[1]],
                     id="escaped-colon"),
        pytest.param([GOOD[0].replace('"seq": 1', '"seq": 2'), GOOD[1]], id="seq-repeats"),
        pytest.param([GOOD[1], GOOD[0].replace('"seq": 1', '"seq": 3')], id="final-not-last"),
        pytest.param([GOOD[0]], id="no-final"),
        pytest.param([GOOD[0].replace('"send"', '""'), GOOD[1]], id="empty-name"),
        pytest.param([GOOD[0].replace('"seq": 1', '"seq": 1.0'), GOOD[1]], id="float-seq"),
        pytest.param([GOOD[0].replace('"seq": 1', '"seq": true'), GOOD[1]], id="bool-seq"),
        pytest.param(["[" + GOOD[0] + "]", GOOD[1]], id="array"),
    ])
    def test_what_only_the_strict_reader_may_judge(self, lines: list[str]) -> None:
        """Anything the typed structs cannot vouch for goes to the strict reader."""
        assert typed_records(_doc(*lines)) is None
