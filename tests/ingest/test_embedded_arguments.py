"""Tool arguments given as JSON text: a key repeated inside the text is refused by every reader.

The outer line's duplicate check cannot see into a string, so each reader that
decodes such a field (Codex ``arguments``, OTel ``gen_ai.tool.call.arguments``,
OpenInference ``input.value``, OpenLLMetry ``traceloop.entity.input``, the OpenAI
Agents recorder's span ``input`` and handoff ``arguments``, OpenAI-style
transcripts' ``function.arguments``) refuses it as the file's or run's ERROR,
naming the file, the line and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roadcheck.ingest import ReadFailure, load
from roadcheck.ingest._json import EmbeddedDuplicate, decode_embedded
from tests.ingest.test_duplicate_keys import _encode, _objects, documents

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "frameworks"


def _failure(tmp_path: Path, name: str, text: str, fmt: str) -> ReadFailure:
    path = tmp_path / name
    path.write_text(text)
    got, entries = load(str(path))
    assert got == fmt
    failures = [e for e in entries if isinstance(e, ReadFailure)]
    assert len(failures) == 1, failures
    return failures[0]


def _swap(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


CASES: list[tuple[str, str, str, str, str, int]] = [
    # (example file, format, text to replace, replacement, field named, line)
    ("otel/spans.jsonl", "otel", r'{\"name\": \"acme\"}',
     r'{\"name\": \"acme\", \"name\": \"evil\"}', "gen_ai.tool.call.arguments", 1),
    ("openinference/approved.json", "otel", r'{\"name\": \"acme\"}',
     r'{\"name\": \"acme\", \"name\": \"evil\"}', "input.value", 1),
    ("openllmetry/approved.json", "otel", r'{\"to\": \"board\"}',
     r'{\"to\": \"board\", \"to\": \"evil\"}', "traceloop.entity.input", 1),
    ("openai-agents/run.jsonl", "openai-agents", r'"input": "{\"account\":\"acme\",',
     r'"input": "{\"account\":\"acme\",\"account\":\"evil\",', "input", 7),
]


@pytest.mark.parametrize(("example", "fmt", "old", "new", "field", "line"), CASES)
def test_repeated_key_in_argument_text_is_refused(tmp_path, example, fmt, old, new, field,
                                                  line):
    source = EXAMPLES / example
    # unchanged, the file reads
    _, entries = load(str(source))
    assert not any(isinstance(e, ReadFailure) for e in entries)
    failure = _failure(tmp_path, source.name, _swap(source.read_text(), old, new), fmt)
    text = failure.error.location_message()
    assert text.startswith(str(tmp_path / source.name) + ":"), text
    assert f"{field!r} holds JSON with a duplicate key" in text, text
    # the OTel reader locates the span's line; the Agents reader names its record's line
    assert failure.error.line == line or f"line {line}: function span" in text, text


def test_codex_arguments_with_a_repeated_key_are_refused(tmp_path):
    lines = [json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "c1"}}),
             json.dumps({"timestamp": "t", "type": "response_item", "payload": {
                 "type": "function_call", "name": "shell", "call_id": "c1",
                 "arguments": '{"command": ["ls"], "command": ["git", "push"]}'}})]
    failure = _failure(tmp_path, "rollout.jsonl", "\n".join(lines) + "\n", "codex")
    assert failure.error.line == 2
    assert "'arguments' holds JSON with a duplicate key 'command'" in str(failure.error)


def test_transcript_arguments_with_a_repeated_key_are_refused(tmp_path):
    source = ROOT / "tests" / "data" / "transcripts" / "confirmed_call.json"
    text = _swap(source.read_text(), r'{\"reservation_id\": \"ABC123\"}',
                 r'{\"reservation_id\": \"ABC123\", \"reservation_id\": \"ZZZ999\"}')
    failure = _failure(tmp_path, "t.json", text, "openai-chat")
    # a JSON document: the reader names the message (its location for every error) and call
    where = failure.error.location_message()
    assert where.startswith(f"{tmp_path / 't.json'}: message 4: tool call 0: 'arguments' holds "
                            "JSON with a duplicate key 'reservation_id'"), where


def test_claude_code_tool_input_with_a_repeated_key_is_refused(tmp_path):
    """Claude Code writes a call's input as an object in the line: the line's check sees it."""
    source = EXAMPLES / "claude-code" / "approved.jsonl"
    text = source.read_text()
    old = '"input": {"command": '
    assert old in text or '"input":{"command":' in text
    text = (text.replace(old, '"input": {"command": "ls", "command": ', 1) if old in text
            else text.replace('"input":{"command":', '"input":{"command":"ls","command":', 1))
    failure = _failure(tmp_path, "s.jsonl", text, "claude-code")
    assert "duplicate key 'command'" in str(failure.error) and failure.error.line


def test_non_json_and_blank_arguments_are_kept():
    assert decode_embedded("rm -rf /", "input") == "rm -rf /"
    assert decode_embedded("  ", "input") == {}
    assert decode_embedded(None, "input") == {}
    assert decode_embedded({"a": 1}, "input") == {"a": 1}
    assert decode_embedded('{"a": "x:y", "b": {"a": 1}}', "input") == {"a": "x:y", "b": {"a": 1}}
    assert decode_embedded('{"a": 1}', "input") == {"a": 1}


@settings(max_examples=200, deadline=None)
@given(documents, st.data())
def test_decode_embedded_finds_every_repeat_and_nothing_else(doc: dict[str, Any],
                                                             data: st.DataObject) -> None:
    assert decode_embedded(_encode(doc, data), "arguments") == doc
    objects: list[dict[str, Any]] = []
    _objects(doc, objects)
    target = data.draw(st.sampled_from(objects), label="repeated object")
    if not target:
        return
    text = _encode(doc, data, repeat=target)
    with pytest.raises(EmbeddedDuplicate) as caught:
        decode_embedded(text, "arguments")
    assert caught.value.field == "arguments"
