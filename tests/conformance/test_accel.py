"""The C extension (roadcheck._accel) judges native files exactly as the Python path does.

Three ways judge a native file for a spec whose rules read only each event type's
own fields: the C judge (``judge_native``), the C scan feeding the Python engine
(``scan_native``), and the Python readers (the typed decode, then the strict reader,
which is the reference). Whatever the C code vouches for must get the reference's
result, to the byte of every report; whatever it does not understand it gives way on.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import roadcheck._accel as accel  # a missing extension fails these tests; it never skips them
from roadcheck import conformance
from roadcheck.conformance import CompiledSpec, parse_spec, replay_events
from roadcheck.conformance.engine import final_event
from roadcheck.errors import SpecError
from roadcheck.ingest.native import iter_events
from roadcheck.report.replay import ResultRenderer, render_result

from ..conftest import EXAMPLES, ROOT
from ..strategies import json_values
from .test_typed_path import EACH_CONSUME, SPECS

NATIVE_FILES = sorted({*EXAMPLES.glob("*.jsonl"), *(ROOT / "tests" / "data").rglob("*.jsonl")})


def _reference(compiled: CompiledSpec, data: bytes, path: str) -> Any:
    return replay_events(compiled, iter_events(data, path), path, path)


def _ways(compiled: CompiledSpec, data: bytes, path: str = "t.jsonl") -> dict[str, Any]:
    """The result each way gives (None: that way gave way)."""
    out: dict[str, Any] = {"reference": _reference(compiled, data, path)}
    plan = compiled.plan(accel)
    judged = accel.judge_native(data, plan) if plan is not None else None
    out["judge"] = (None if judged is None
                    else conformance.native_result(compiled, data, judged, path))
    scanned = accel.scan_native(data, *compiled.scan_names)
    if scanned is None:
        out["scan"] = None
    else:
        final = final_event(data, scanned)
        r = conformance.Replayer(compiled)
        r.feed_scanned(data, scanned, final)
        out["scan"] = r.finish(path, path)
    out["default"] = conformance._replay_native(compiled, data, path)
    return out


def _agree(compiled: CompiledSpec, data: bytes, path: str = "t.jsonl") -> dict[str, Any]:
    ways = _ways(compiled, data, path)
    ref = ways["reference"]
    for name, result in ways.items():
        if result is None:
            continue
        assert result == ref, (name, data)
        assert render_result(result, fmt="json").body == render_result(ref, fmt="json").body
        assert render_result(result).body == render_result(ref).body
    plan = compiled.plan(accel)
    judged = accel.judge_native(data, plan) if plan is not None else None
    if judged is not None and ways["judge"] is not None:
        # the report's rendering straight from the C judge's tuples, no result objects
        for options in _RENDERINGS:
            renderer = ResultRenderer(**options)
            assert renderer.from_native(compiled, data, judged, path) == renderer(ref), options
    if plan is not None:
        _agree_in_runs(compiled, plan, data, ref, vouched=ways["judge"] is not None)
    return ways


def _agree_in_runs(compiled: CompiledSpec, plan: Any, data: bytes, ref: Any, *,
                   vouched: bool) -> None:
    """``judge_files`` on the file (written to disk) renders what the report writer writes
    of the reference's result, in every mode it takes, or gives way; it vouches for a
    file exactly where ``judge_native`` does (a text report may give way on more)."""
    import tempfile

    from roadcheck._inputs import PathList
    from roadcheck.report._text import escape_controls
    from roadcheck.report.replay import file_entry

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t \"q\" \\ \u00e9.jsonl")
        with open(path, "wb") as fh:
            fh.write(data)
        paths = PathList([path])
        ref = conformance._replay_native(compiled, data, path)
        for options in _RENDERINGS[:4]:
            renderer = ResultRenderer(**options)
            style = renderer.native_style(compiled)
            assert style is not None
            done, entries, bodies, passed, blocked, warned = accel.judge_files(
                *paths.buffers(), 0, 1, plan, style, 7, 0)
            if not done:
                assert not vouched or (options["fmt"] == "text"
                                       and not options.get("summary_only")), options
                continue
            assert vouched and done == 1
            rendered = renderer(ref)
            json_ = options["fmt"] == "json"
            assert entries == file_entry(json_, path, "native", {ref.verdict: 1}), options
            if options.get("summary_only"):
                assert bodies == b""
            elif json_:
                assert bodies == b",\n" + rendered.body
            else:
                assert bodies == (escape_controls(f"[7] {path}") + "\n").encode() + rendered.body
            assert (passed, blocked, warned) == (ref.verdict == "PASS", ref.verdict == "BLOCK",
                                                 rendered.warned)


_RENDERINGS: list[dict[str, Any]] = [
    {"fmt": "json"}, {"fmt": "text"}, {"fmt": "json", "summary_only": True},
    {"fmt": "text", "summary_only": True}, {"fmt": "json", "by_field": "task_success"},
    {"fmt": "json", "by_field": "no_such_field"}, {"fmt": "text", "by_field": "agent"}]


def test_the_extension_is_built() -> None:
    """The install built the extension, and replay uses it (ROADCHECK_PURE_PYTHON unset)."""
    assert conformance._accel() is accel


def test_a_spec_that_binds_calls_gets_no_plan() -> None:
    spec = parse_spec({"mandatory_checkpoints": [
        {"checkpoint_id": "ok", "must_precede": "send", "binds": {"tool": True}}]})
    compiled = CompiledSpec(spec)
    assert compiled.typed and compiled.plan(accel) is None


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_every_native_file_in_the_repository(spec: str) -> None:
    compiled = CompiledSpec(SPECS[spec])
    judged = 0
    for path in NATIVE_FILES:
        ways = _agree(compiled, path.read_bytes(), str(path))
        judged += ways["judge"] is not None
    assert judged >= 10  # the valid native files among them are judged in C


# -- generated specs and trajectories ----------------------------------------------------

_ACTIONS = ["send", "pay", "read", "send_report"]
_CIDS = ["ok", "cp2", "confirm"]
_AGENTS = ["a", "b", "c", "reporter"]
_NAMES = st.sampled_from(["x", "row_count", "summary", "source", "y"])

_RULE = st.fixed_dictionaries(
    {"checkpoint_id": st.sampled_from(_CIDS),
     "must_precede": st.one_of(st.sampled_from(_ACTIONS),
                               st.lists(st.sampled_from(_ACTIONS), min_size=1, max_size=3))},
    optional={"scope": st.sampled_from(["first", "each"]), "consume": st.booleans(),
              "confirmed_by": st.lists(st.sampled_from(["owner", "lead", "bot"]), min_size=1,
                                       max_size=2, unique=True)})
_CONTRACT = st.fixed_dictionaries(
    {"from_agent": st.sampled_from(_AGENTS), "to_agent": st.sampled_from(_AGENTS),
     "required_fields": st.lists(_NAMES, max_size=3)},
    optional={"require_verified": st.booleans()})
_SPEC = st.fixed_dictionaries(
    {"mandatory_checkpoints": st.lists(_RULE, max_size=3)},
    optional={"handoff_contracts": st.lists(_CONTRACT, max_size=3)},
).filter(lambda s: s["mandatory_checkpoints"] or s.get("handoff_contracts"))

_CLAIM = st.one_of(
    st.integers(-5, 5), st.sampled_from(["v", "w", "", "é", "a\"b", "\u2028"]),
    st.booleans(), st.none(), st.floats(-2, 2, allow_nan=False), json_values,
    st.fixed_dictionaries({"value": st.one_of(st.integers(0, 3), st.sampled_from(["v", "w"]),
                                              json_values)},
                          optional={"verified": st.one_of(st.booleans(), st.none(),
                                                          st.just(1))}))
_EVENT = st.one_of(
    st.fixed_dictionaries({"event": st.just("action"), "action_type": st.sampled_from(_ACTIONS)},
                          optional={"agent": st.sampled_from([*_AGENTS, None]),
                                    "irreversible": st.one_of(st.booleans(), st.just(1)),
                                    "args": json_values, "result": json_values,
                                    "ts": st.just("2026-01-01T00:00:00Z")}),
    st.fixed_dictionaries({"event": st.just("checkpoint"), "checkpoint_id": st.sampled_from(_CIDS)},
                          optional={"agent": st.sampled_from(_AGENTS),
                                    "confirmed_by": st.one_of(
                                        st.sampled_from(["owner", "lead", "nobody", "é"]),
                                        st.none(), st.integers(-1, 1), st.booleans(),
                                        json_values)}),
    st.fixed_dictionaries({"event": st.just("handoff"), "from_agent": st.sampled_from(_AGENTS),
                           "to_agent": st.sampled_from(_AGENTS),
                           "payload": st.dictionaries(_NAMES, _CLAIM, max_size=4)},
                          optional={"agent": st.sampled_from(_AGENTS)}),
    st.fixed_dictionaries({"event": st.just("message"),
                           "role": st.sampled_from(["user", "assistant", "system", "tool"])},
                          optional={"text": st.one_of(st.text(max_size=5), st.none()),
                                    "yields_turn": st.one_of(st.booleans(), st.none()),
                                    "agent": st.sampled_from(_AGENTS)}),
)


def _file(events: list[dict[str, Any]], success: bool, seed: int) -> bytes:
    """A native file of ``events``, written in one of several styles (spacing, key order,
    escapes), as different writers write JSON."""
    rnd = random.Random(seed)
    lines = []
    records = [{"seq": i * 2 + 1, **e} for i, e in enumerate(events)]
    records.append({"seq": len(events) * 2 + 1, "event": "final", "task_success": success,
                    "agent": rnd.choice(_AGENTS)})
    for rec in records:
        items = list(rec.items())
        if rnd.random() < 0.3:
            rnd.shuffle(items)
        style = rnd.random()
        if style < 0.4:
            lines.append(json.dumps(dict(items)))
        elif style < 0.7:
            lines.append(json.dumps(dict(items), separators=(",", ":"), ensure_ascii=False))
        else:
            lines.append(json.dumps(dict(items), indent=None, separators=(" , ", " : ")))
    return ("\n".join(lines) + rnd.choice(["\n", "", "\n\n", "\r\n"])).encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SPEC, st.lists(_EVENT, max_size=14), st.booleans(), st.integers(0, 1000))
def test_generated_specs_and_trajectories(spec: dict[str, Any], events: list[dict[str, Any]],
                                          success: bool, seed: int) -> None:
    try:
        parsed = parse_spec(spec)
    except SpecError:
        assume(False)  # the loader refuses it (a contract given twice): not a spec
    _agree(CompiledSpec(parsed), _file(events, success, seed))


def test_generated_files_are_mostly_judged_in_c() -> None:
    """The property above exercises the C judge, not only its giving way."""
    rnd = random.Random(7)
    compiled = CompiledSpec(SPECS["each-consume"])
    judged = 0
    for n in range(200):
        events = []
        for _ in range(rnd.randrange(12)):
            kind = rnd.random()
            if kind < 0.4:
                events.append({"event": "action", "agent": rnd.choice(_AGENTS),
                               "action_type": rnd.choice(_ACTIONS)})
            elif kind < 0.7:
                events.append({"event": "checkpoint", "agent": rnd.choice(_AGENTS),
                               "checkpoint_id": rnd.choice(_CIDS),
                               "confirmed_by": rnd.choice(["owner", "lead"])})
            else:
                events.append({"event": "handoff", "from_agent": rnd.choice(_AGENTS),
                               "to_agent": rnd.choice(_AGENTS),
                               "payload": {"x": {"value": rnd.randrange(3),
                                                 "verified": rnd.random() < 0.5},
                                           "y": rnd.choice(["v", "w"])}})
        ways = _agree(compiled, _file(events, True, n))
        judged += ways["judge"] is not None
    assert judged >= 150


# -- what the C code gives way on ----------------------------------------------------------

GOOD = [
    '{"seq": 1, "event": "action", "agent": "a", "action_type": "send"}',
    '{"seq": 2, "event": "handoff", "from_agent": "a", "to_agent": "b", '
    '"payload": {"x": {"value": 1, "verified": false}}}',
    '{"seq": 3, "event": "final", "task_success": true}',
]


def _doc(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("lines", [
    pytest.param([GOOD[0].replace('"agent"', '"ag\\u0065nt"'), *GOOD[1:]], id="escaped key"),
    pytest.param([GOOD[0].replace('"a",', '"a", "agent": "b",'), *GOOD[1:]], id="repeated key"),
    pytest.param([GOOD[0], GOOD[1].replace('"verified": false', '"verified": false, '
                                           '"verified": true'), GOOD[2]],
                 id="repeated nested key"),
    pytest.param([GOOD[0].replace('"send"', '"send", "args": 1234567890123456789'), *GOOD[1:]],
                 id="19 digits"),
    pytest.param([GOOD[0], "", *GOOD[1:]], id="blank line"),
    pytest.param([GOOD[0].replace('"a"', '"\\ud800"'), *GOOD[1:]], id="lone surrogate"),
    pytest.param([GOOD[0].replace('"send"', '"send", "args": ' + "[" * 300 + "]" * 300),
                  *GOOD[1:]], id="deep nesting"),
    pytest.param([GOOD[0].replace('"send"', '"send", "call_id": "c1"'), *GOOD[1:]],
                 id="undeclared key"),
    pytest.param([GOOD[0].replace('"seq": 1', '"seq": 1.0'), *GOOD[1:]], id="float seq"),
    pytest.param([GOOD[0], GOOD[1].replace('"seq": 2', '"seq": 1'), GOOD[2]],
                 id="seq repeated"),
    pytest.param([GOOD[0], GOOD[1], GOOD[2].replace('"seq": 3', '"seq": 2')],
                 id="final seq repeated"),
    pytest.param([GOOD[0], GOOD[1].replace('"value": 1', '"value": 1.5'), GOOD[2]],
                 id="float claim"),
    pytest.param([GOOD[0], GOOD[1].replace('{"value": 1, "verified": false}', '{"k": 1}'),
                  GOOD[2]], id="object claim"),
    pytest.param([GOOD[0], GOOD[1].replace('"value": 1', '"value": -0'), GOOD[2]],
                 id="negative zero claim"),
    pytest.param([GOOD[0], GOOD[2], GOOD[1]], id="event after final"),
    pytest.param([GOOD[0].replace('"action"', '"final"'), *GOOD[1:]], id="two finals"),
    pytest.param([GOOD[0].replace('"a"', '"a\\"b"'), *GOOD[1:]], id="escaped agent"),
    pytest.param([GOOD[0].replace("}", "} x"), *GOOD[1:]], id="trailing text"),
])
def test_gives_way(lines: list[str]) -> None:
    compiled = CompiledSpec(parse_spec(EACH_CONSUME))
    data = _doc(*lines)
    assert accel.judge_native(data, compiled.plan(accel)) is None
    _agree(compiled, data)


def test_judges_the_good_file() -> None:
    compiled = CompiledSpec(parse_spec(EACH_CONSUME))
    data = _doc(*GOOD)
    ways = _agree(compiled, data)
    assert ways["judge"] is not None and ways["judge"].verdict == "BLOCK"


def test_invalid_utf8_inside_a_string_gives_way() -> None:
    compiled = CompiledSpec(parse_spec(EACH_CONSUME))
    data = _doc(*GOOD).replace(b'"a"', b'"\xc3\x28"', 1)
    assert accel.judge_native(data, compiled.plan(accel)) is None
    assert accel.scan_native(data, *compiled.scan_names) is None


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_files_agree(data: st.DataObject) -> None:
    """Bytes changed, inserted or removed anywhere: the ways agree, ERROR included."""
    raw = bytearray(_doc(*GOOD))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw)))
        op = data.draw(st.sampled_from(["set", "insert", "delete"]))
        byte = data.draw(st.sampled_from(list(b'{}[]",:\\ 0129e.-tfnu\n\r\x00\xc3\xff')))
        if op == "set" and at < len(raw):
            raw[at] = byte
        elif op == "insert":
            raw.insert(at, byte)
        elif at < len(raw):
            del raw[at]
    _agree(CompiledSpec(parse_spec(EACH_CONSUME)), bytes(raw))


def test_a_plan_is_reused_file_after_file() -> None:
    """The plan's state is left clean after each file, a given-way one included."""
    compiled = CompiledSpec(parse_spec(EACH_CONSUME))
    plan = compiled.plan(accel)
    good = _doc(*GOOD)
    first = accel.judge_native(good, plan)
    assert accel.judge_native(_doc(GOOD[0], "", *GOOD[1:]), plan) is None
    assert accel.judge_native(good, plan) == first


def test_bad_arguments_raise() -> None:
    with pytest.raises(TypeError):
        accel.judge_native(b"", object())
    with pytest.raises(TypeError):
        accel.make_plan(((b"ok", ("send",), False, False, None, b"[]"),), ())
    with pytest.raises(TypeError):
        accel.scan_native(b"", ("send",), ())


def test_pure_python_is_chosen_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from roadcheck import _ext, _inputs

    monkeypatch.setattr(conformance, "_ACCEL", conformance._UNSET)
    monkeypatch.setattr(_ext, "_NATIVE", _ext._UNSET)
    monkeypatch.setattr(_inputs, "_LIST", None)
    monkeypatch.setenv("ROADCHECK_PURE_PYTHON", "1")
    assert conformance._accel() is None
    assert _inputs._native_list(str(EXAMPLES)) is None  # the Python listing
    monkeypatch.delenv("ROADCHECK_PURE_PYTHON")
    monkeypatch.setattr(conformance, "_ACCEL", conformance._UNSET)
    monkeypatch.setattr(_ext, "_NATIVE", _ext._UNSET)
    monkeypatch.setattr(_inputs, "_LIST", None)
    assert conformance._accel() is accel
    assert _inputs._native_list(str(EXAMPLES)) is not None


def test_the_cli_report_is_the_same_without_the_extension(tmp_path: Path) -> None:
    paths = [str(p) for p in sorted(EXAMPLES.glob("fixture_*.jsonl"))]
    cmd = [sys.executable, "-m", "roadcheck", "replay", str(EXAMPLES / "spec.json"), *paths,
           "--format", "json"]
    fast = subprocess.run(cmd, capture_output=True, check=False)
    pure = subprocess.run(cmd, capture_output=True, check=False,
                          env={**os.environ, "ROADCHECK_PURE_PYTHON": "1"})
    assert fast.returncode == pure.returncode == 1
    assert fast.stdout == pure.stdout and b"BLOCK" in fast.stdout


class TestReadRegular:
    def test_reads_a_file_whole(self, tmp_path: Path) -> None:
        path = tmp_path / "t.jsonl"
        for size in (0, 1, 65535, 65536, 200_001):
            data = random.Random(size).randbytes(size)
            path.write_bytes(data)
            assert accel.read_regular(str(path)) == data
            assert accel.read_regular(path) == data  # a path object too

    def test_reads_a_large_file_whole(self, tmp_path: Path) -> None:
        """A file large enough to be read into huge pages reads byte for byte."""
        path = tmp_path / "t.jsonl"
        for size in (8 << 20, (12 << 20) + 12345):
            data = random.Random(size).randbytes(size)
            path.write_bytes(data)
            assert accel.read_regular(str(path)) == data

    def test_what_it_does_not_read(self, tmp_path: Path) -> None:
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        assert accel.read_regular(str(fifo)) is None  # never opened: no writer is woken
        assert accel.read_regular(str(tmp_path)) is None
        assert accel.read_regular(str(tmp_path / "missing")) is None
        locked = tmp_path / "locked"
        locked.write_text("{}")
        locked.chmod(0)
        if os.geteuid() != 0:  # root reads it anyway
            assert accel.read_regular(str(locked)) is None
        with pytest.raises(TypeError):
            accel.read_regular(3)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="null"):
            accel.read_regular("a\0b")

    def test_a_replayed_fifo_still_reads(self, tmp_path: Path) -> None:
        """A FIFO named on the command line goes the general way, and is judged."""
        import threading

        fifo = tmp_path / "t.jsonl"
        os.mkfifo(fifo)

        def write() -> None:
            with open(fifo, "wb") as fh:
                fh.write(_doc(*GOOD))

        writer = threading.Thread(target=write)
        writer.start()
        run = conformance.replay(parse_spec(EACH_CONSUME), [str(fifo)])
        writer.join()
        assert [r.verdict for r in run.results] == ["BLOCK"]


class TestCheckLines:
    """check_lines: True only for lines that are JSON values with no key given twice."""

    @staticmethod
    def _reference(data: bytes) -> bool:
        """Every non-blank line one JSON value, no object repeating a key (Python's json,
        strict: no NaN, no lone surrogate, valid UTF-8)."""
        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            keys = [k for k, _ in items]
            if len(set(keys)) != len(keys):
                raise ValueError("repeated key")
            return dict(items)

        def constant(name: str) -> Any:
            raise ValueError(name)

        for line in data.split(b"\n"):
            if not line.strip(b" \t\r"):
                continue
            try:
                text = line.decode("utf-8")
                json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
                text.encode("utf-8")  # a lone surrogate escape fails here ...
                json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8")  # ... or here
            except (ValueError, UnicodeError):
                return False
        return True

    @settings(max_examples=300, deadline=None)
    @given(st.lists(json_values, max_size=5), st.sampled_from(["\n", "\r\n", "\n\n"]))
    def test_valid_lines(self, values: list[Any], sep: str) -> None:
        data = sep.join(json.dumps(v, ensure_ascii=False) for v in values).encode()
        ok, ref = accel.check_lines(data), self._reference(data)
        assert ref or not ok  # never True for what is not valid
        assert ok or not ref or b"\\" in data  # False for valid lines only with an escape

    @settings(max_examples=500, deadline=None)
    @given(st.lists(json_values, min_size=1, max_size=3), st.data())
    def test_mutated_lines_never_pass_wrongly(self, values: list[Any], data: st.DataObject) -> None:
        raw = bytearray("\n".join(json.dumps(v) for v in values).encode())
        for _ in range(data.draw(st.integers(1, 3))):
            at = data.draw(st.integers(0, len(raw)))
            byte = data.draw(st.sampled_from(list(b'{}[]",:\\ 0129e.-tfnu\n\x00\xc3\xff')))
            raw.insert(at, byte)
        if accel.check_lines(bytes(raw)):
            assert self._reference(bytes(raw))

    @pytest.mark.parametrize(("line", "ok"), [
        (b'{"a": 1, "a": 2}', False),
        (b'[{"a": {"b": 1, "c": {"b": 2}}}]', True),
        (b'[{"a": {"b": 1, "c": 2, "b": 3}}]', False),
        (b'{"a": 1, "\\u0061": 2}', False),  # an escaped key: look closer
        (b'{"k": 123456789012345678901234567890}', False),  # the readers disagree on it
        (b'{"f": 1e400}', False),
        (b'{"f": 1.5e-10, "g": -0.000001, "h": 123456789012345678}', True),
        (b'{"a": 1} {"b": 2}', False),
        (b'{"a": "\\ud800"}', False),
        (b'{"a": "\xed\xa0\x80"}', False),
        (b"[" * 201 + b"]" * 201, False),
        (b"  \t", True),
        (b'"text"', True),
        (b"NaN", False),
        (b"01", False),
    ])
    def test_cases(self, line: bytes, ok: bool) -> None:
        assert accel.check_lines(line + b"\n") is ok

    def test_any_number(self) -> None:
        """any_number vouches for lines whatever the length of their numbers."""
        line = b'{"k": 123456789012345678901234567890, "f": 1e400, "g": 0.1234567890123456789}\n'
        assert not accel.check_lines(line)
        assert accel.check_lines(line, any_number=True)
        assert not accel.check_lines(b'{"a": 1, "a": 1e400}\n', any_number=True)

    def test_a_range(self) -> None:
        data = b'{"a": 1, "a": 2}\n{"b": 1}\n'
        assert not accel.check_lines(data)
        assert accel.check_lines(data, 17)
        assert accel.check_lines(data, 17, 25)
        assert accel.check_lines(data, 0, 0)
