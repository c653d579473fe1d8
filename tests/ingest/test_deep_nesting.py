"""JSON nested deeper than the documented limit is one clear ERROR for every reader.

orjson decodes up to 1,024 levels but encodes at most 254, and the standard
library's parser recurses, so a payload nested 256 deep once crashed the judge
(``TypeError: Recursion limit reached``) after it had been read. Every reader
now refuses more than :data:`roadcheck.ingest._json.MAX_DEPTH` (250) levels of
arrays and objects, counted from the outermost of a line (JSON lines) or of the
document, naming the line; 250 levels are read, judged and reported as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from roadcheck.conformance import load_spec, replay
from roadcheck.errors import TraceError
from roadcheck.ingest._json import MAX_DEPTH

ROOT = Path(__file__).resolve().parent.parent.parent
FW = ROOT / "tests" / "data" / "frameworks"
FW_SPEC = FW / "spec.yaml"
TAU_SPEC = ROOT / "examples" / "tau" / "airline.yaml"
CODEX = ROOT / "tests" / "data" / "coding" / "codex" / "codex_golden.jsonl"
CODEX_SPEC = ROOT / "examples" / "frameworks" / "codex" / "spec.yaml"
TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"


#: Where :func:`dumps` puts the deep value (built as text: the standard library's
#: encoder recurses, and would fail on the deepest ones itself).
DEEP = "@deep@"


def text(levels: int) -> str:
    """A JSON value exactly ``levels`` arrays and objects deep, an object outermost."""
    opens = "".join("[" if i % 2 else '{"k":' for i in range(levels))
    closes = "".join("]" if i % 2 else "}" for i in reversed(range(levels)))
    return opens + "1" + closes


def dumps(doc: Any, levels: int, **options: Any) -> str:
    """``doc`` as JSON text with the string :data:`DEEP` replaced by a value ``levels`` deep."""
    return json.dumps(doc, **options).replace(json.dumps(DEEP), text(levels), 1)


def judged(spec: Path, path: Path) -> list[tuple[str, str, str]]:
    results = replay(load_spec(spec), [path]).results
    return [(r.verdict, r.headline, r.reasons[0].message if r.reasons else "") for r in results]


FINAL = '{"seq": 3, "event": "final", "task_success": true}'


def _native_action(levels: int) -> str:
    """A native action line nested ``levels`` deep (the line's object is level 1)."""
    return ('{"seq": 2, "event": "action", "action_type": "send_report", "args": '
            + text(levels - 1) + "}")


class TestNative:
    """The native reader, line by line and as a pretty-printed document."""

    FIRST = '{"seq": 1, "event": "action", "action_type": "read"}'

    def _jsonl(self, tmp_path: Path, levels: int) -> Path:
        path = tmp_path / "run.jsonl"
        path.write_text("\n".join([self.FIRST, _native_action(levels), FINAL]) + "\n")
        return path

    @pytest.mark.parametrize("levels", [256, 257, 300, 1000, 1025, 5000])
    def test_the_reproduction(self, tmp_path: Path, levels: int) -> None:
        """A payload nested 256 deep (and deeper, past orjson's own limits) is one
        ERROR naming the line, never a crash of the judge."""
        path = tmp_path / "run.jsonl"
        path.write_text("\n".join([
            self.FIRST,
            '{"seq": 2, "event": "handoff", "from_agent": "a", "to_agent": "b", "payload": '
            + text(levels) + "}", FINAL]) + "\n")
        [(verdict, code, message)] = judged(FW_SPEC, path)
        assert (verdict, code) == ("ERROR", "bad-input"), message
        assert message.startswith(f"line 2: {TOO_DEEP}"), message

    def test_the_limit_is_read(self, tmp_path: Path) -> None:
        """A line nested exactly as deep as the limit is read and judged as before."""
        [(verdict, code, _)] = judged(FW_SPEC, self._jsonl(tmp_path, MAX_DEPTH))
        assert (verdict, code) == ("BLOCK", "checkpoint-skipped")

    def test_one_past_the_limit_is_refused(self, tmp_path: Path) -> None:
        """One level more is one ERROR naming the line."""
        [(verdict, code, message)] = judged(FW_SPEC, self._jsonl(tmp_path, MAX_DEPTH + 1))
        assert (verdict, code) == ("ERROR", "bad-input")
        assert message.startswith(f"line 2: {TOO_DEEP}"), message

    @pytest.mark.parametrize(("levels", "ok"), [(MAX_DEPTH, True), (MAX_DEPTH + 1, False),
                                                (256, False), (990, False), (5000, False)])
    def test_pretty_printed_array(self, tmp_path: Path, levels: int, ok: bool) -> None:
        """A JSON array of events (the array is level 1), read by the standard library."""
        path = tmp_path / "run.json"
        path.write_text("[\n  " + ",\n  ".join([
            self.FIRST, _native_action(levels - 1), FINAL]) + "\n]\n")
        [(verdict, code, message)] = judged(FW_SPEC, path)
        if ok:
            assert (verdict, code) == ("BLOCK", "checkpoint-skipped"), message
        else:
            assert (verdict, code) == ("ERROR", "bad-input")
            assert message.startswith(f"line 3: {TOO_DEEP}"), message

    @pytest.mark.parametrize(("levels", "ok"), [(MAX_DEPTH, True), (MAX_DEPTH + 1, False),
                                                (256, False), (5000, False)])
    def test_objects_one_after_another(self, tmp_path: Path, levels: int, ok: bool) -> None:
        """Events pretty-printed one after another (as jq writes them): each counts from
        its own outermost object, as a line does."""
        path = tmp_path / "run.json"
        first = json.dumps(json.loads(self.FIRST), indent=2)
        path.write_text("\n".join([first, _native_action(levels), FINAL]) + "\n")
        [(verdict, code, message)] = judged(FW_SPEC, path)
        line = first.count("\n") + 2
        if ok:
            assert (verdict, code) == ("BLOCK", "checkpoint-skipped"), message
        else:
            assert (verdict, code) == ("ERROR", "bad-input")
            assert message.startswith(f"line {line}: {TOO_DEEP}"), message

    def test_a_repeated_key_in_a_pretty_printed_array(self, tmp_path: Path) -> None:
        """The document path refuses a key given twice, as the line path does."""
        path = tmp_path / "run.json"
        path.write_text("[\n" + ",\n".join([
            self.FIRST, '{"seq": 2, "event": "action", "action_type": "read", '
            '"action_type": "send_report"}', FINAL]) + "\n]\n")
        [(verdict, code, message)] = judged(FW_SPEC, path)
        assert (verdict, code) == ("ERROR", "bad-input")
        assert message.startswith("line 3: duplicate key 'action_type'"), message


class TestOtherReaders:
    """Every other reader this package holds refuses the same depth, naming the line."""

    def _agents(self, tmp_path: Path, levels: int) -> Path:
        lines = (FW / "openai_agents_rejected_then_approved.jsonl").read_text().splitlines()
        trace = json.loads(lines[0])
        trace["metadata"] = DEEP
        lines[0] = dumps(trace, levels - 1)
        path = tmp_path / "agents.jsonl"
        path.write_text("\n".join(lines) + "\n")
        return path

    def _codex(self, tmp_path: Path, levels: int) -> Path:
        lines = CODEX.read_text().splitlines()
        first = json.loads(lines[1])
        first["payload"]["extra"] = DEEP
        lines[1] = dumps(first, levels - 2)
        path = tmp_path / "rollout.jsonl"
        path.write_text("\n".join(lines) + "\n")
        return path

    def _document(self, tmp_path: Path, source: Path, levels: int) -> Path:
        doc = json.loads(source.read_text())
        doc["roadcheck_test"] = DEEP
        path = tmp_path / source.name
        path.write_text(dumps(doc, levels - 1, separators=(",", ":")))
        return path

    def _chat(self, tmp_path: Path, levels: int) -> Path:
        doc = {"messages": [{"role": "user", "content": "Add a bag.", "extra": DEEP},
                            {"role": "assistant", "content": "Done."}]}
        path = tmp_path / "chat.json"
        path.write_text(dumps(doc, levels - 3, separators=(",", ":")))
        return path

    CASES: ClassVar[dict[str, tuple[Any, Path, int]]] = {
        "openai-agents": (_agents, FW_SPEC, 1),
        "codex": (_codex, CODEX_SPEC, 2),
        "inspect": (lambda self, tmp, n: self._document(
            tmp, ROOT / "tests" / "data" / "inspect" / "approved.json", n), FW_SPEC, 1),
        "atif": (lambda self, tmp, n: self._document(tmp, FW / "atif_no_approval.json", n),
                 FW_SPEC, 1),
        "openai-chat": (_chat, TAU_SPEC, 1),
    }

    @pytest.mark.parametrize("fmt", sorted(CASES))
    def test_reader(self, tmp_path: Path, fmt: str) -> None:
        """The limit is read as before; one level more, 256 and 2,000 are one ERROR naming
        the line."""
        make, spec, line = self.CASES[fmt]
        ok = judged(spec, make(self, tmp_path, MAX_DEPTH))
        assert all(v != "ERROR" for v, _, _ in ok), ok
        for levels in (MAX_DEPTH + 1, 256, 2000):
            results = judged(spec, make(self, tmp_path, levels))
            assert [(v, c) for v, c, _ in results] == [("ERROR", "bad-input")], results
            assert f"line {line}: {TOO_DEEP}" in results[0][2], results

    @pytest.mark.parametrize(("levels", "ok"), [(MAX_DEPTH, True), (MAX_DEPTH + 1, False),
                                                (1000, False)])
    def test_arguments_as_json_text(self, tmp_path: Path, levels: int, ok: bool) -> None:
        """A tool call's arguments written as JSON text count from their own outermost
        value: the text is decoded into the event, past any check of the line."""
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "Add a checked bag to ABC123."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_2", "type": "function", "function": {
                    "name": "update_reservation_baggages",
                    "arguments": dumps({"reservation_id": "ABC123", "deep": DEEP},
                                       levels - 1)}}]},
            {"role": "tool", "tool_call_id": "call_2", "content": "{}"},
        ]
        path = tmp_path / "chat.json"
        path.write_text(json.dumps({"messages": messages}))
        [(verdict, code, message)] = judged(TAU_SPEC, path)
        if ok:
            assert (verdict, code) == ("BLOCK", "checkpoint-skipped"), message
        else:
            assert (verdict, code) == ("ERROR", "bad-input")
            assert TOO_DEEP in message and "'arguments'" in message, message


class TestAcceptTrace:
    """``accept --trace`` reads through the same readers."""

    @pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 256, 3000])
    def test_call_list(self, tmp_path: Path, levels: int) -> None:
        from roadcheck.acceptance import load_trace

        path = tmp_path / "trace.json"
        path.write_text('[\n{"tool": "send_invoice"},\n{"tool": "send_invoice", "args": '
                        + text(levels - 2) + "}\n]\n")
        with pytest.raises(TraceError, match=TOO_DEEP) as info:
            load_trace(path)
        assert info.value.line == 3

    def test_call_list_at_the_limit(self, tmp_path: Path) -> None:
        from roadcheck.acceptance import load_trace

        path = tmp_path / "trace.json"
        path.write_text('[{"tool": "send_invoice", "args": {"k": ' + text(MAX_DEPTH - 3)
                        + "}}]")
        assert [c.tool for c in load_trace(path)] == ["send_invoice"]


class TestOutputsAsJsonText:
    """A tool's output written as JSON text is decoded into the action: past the limit it
    is refused as the arguments are."""

    @pytest.mark.parametrize(("levels", "ok"), [(MAX_DEPTH, True), (MAX_DEPTH + 1, False),
                                                (2000, False)])
    def test_agents_span_output(self, tmp_path: Path, levels: int, ok: bool) -> None:
        lines = (FW / "openai_agents_rejected_then_approved.jsonl").read_text().splitlines()
        for i, raw in enumerate(lines):
            rec = json.loads(raw)
            data = rec.get("span_data") or {}
            if data.get("name") == "send_report" and data.get("output"):
                data["output"] = dumps({"sent": DEEP}, levels - 1)
                lines[i] = json.dumps(rec)
        path = tmp_path / "agents.jsonl"
        path.write_text("\n".join(lines) + "\n")
        [(verdict, code, message)] = judged(FW_SPEC, path)
        if ok:
            assert (verdict, code) == ("BLOCK", "checkpoint-skipped"), message
        else:
            assert (verdict, code) == ("ERROR", "bad-input")
            assert f"'output' holds JSON {TOO_DEEP}" in message and "line 9" in message

    @pytest.mark.parametrize(("levels", "ok"), [(MAX_DEPTH, True), (MAX_DEPTH + 1, False)])
    def test_codex_call_output(self, tmp_path: Path, levels: int, ok: bool) -> None:
        from roadcheck.ingest import ReadFailure, load

        lines = [json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "c"}}),
                 json.dumps({"timestamp": "t", "type": "response_item", "payload": {
                     "type": "function_call", "name": "shell", "call_id": "c1",
                     "arguments": json.dumps({"command": ["ls"]})}}),
                 json.dumps({"timestamp": "t", "type": "response_item", "payload": {
                     "type": "function_call_output", "call_id": "c1",
                     "output": dumps({"output": DEEP}, levels - 1)}})]
        path = tmp_path / "rollout.jsonl"
        path.write_text("\n".join(lines) + "\n")
        _, entries = load(str(path), "codex")
        (entry,) = list(entries)
        if ok:
            assert not isinstance(entry, ReadFailure), entry
        else:
            assert isinstance(entry, ReadFailure)
            assert entry.error.line == 3 and TOO_DEEP in entry.error.message


class TestReportsAtTheLimit:
    """What the readers let through, the judge and every report can encode: values as deep
    as the limit in an action's bound arguments, a handoff's payload and the final event
    (grouped by with ``--by``), in every report format."""

    SPEC: ClassVar[dict[str, Any]] = {
        "mandatory_checkpoints": [{"checkpoint_id": "ok", "must_precede": "send",
                                   "binds": {"tool": True, "args": True}}],
        "handoff_contracts": [{"from_agent": "a", "to_agent": "b",
                               "required_fields": ["k", "v"]}]}

    @pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif", "github", "html"])
    def test_every_format(self, tmp_path: Path, fmt: str) -> None:
        from click.testing import CliRunner

        from roadcheck.cli import cli

        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps(self.SPEC))
        run = tmp_path / "run.jsonl"
        d = MAX_DEPTH
        run.write_text("\n".join([
            '{"seq": 1, "event": "checkpoint", "checkpoint_id": "ok", "tool": "send", '
            '"args_sha256": "sha256:' + "0" * 64 + '"}',
            '{"seq": 2, "event": "action", "action_type": "send", "args": ' + text(d - 1) + "}",
            '{"seq": 3, "event": "handoff", "from_agent": "a", "to_agent": "b", "payload": '
            '{"v": ' + text(d - 2) + ', "k": {"value": ' + text(d - 3)
            + ', "verified": false}}}',
            '{"seq": 4, "event": "final", "task_success": true, "deep": ' + text(d - 1) + "}",
        ]) + "\n")
        out = tmp_path / f"report.{fmt}"
        for by in ([], ["--by", "deep"]):
            res = CliRunner().invoke(cli, ["replay", str(spec), str(run), "--format", fmt,
                                           "-o", str(out), *by])
            assert res.exit_code == 1, (res.output, res.exception)
            assert "unexpected" not in out.read_text(encoding="utf-8")
