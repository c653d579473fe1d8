"""The library with data in memory: specs as dicts, trajectories as event dicts,
results as plain dicts, and an API that `dir()` and `help()` show."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import roadcheck
from roadcheck import Event, Trajectory
from roadcheck.errors import SpecError, TraceError

from .conftest import EXAMPLES, ROOT

SPEC = EXAMPLES / "spec.json"
SPEC_DICT = json.loads(SPEC.read_text())


def _events(name: str) -> list[dict[str, object]]:
    text = (EXAMPLES / name).read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class TestInMemoryTrajectories:
    def test_a_list_of_event_dicts_is_one_trajectory(self) -> None:
        """replay(spec, [dict, ...]) judges the dicts as the events of one run."""
        run = roadcheck.replay(roadcheck.load_spec(SPEC), _events("fixture_skipped.jsonl"))
        assert [(r.id, r.verdict, r.headline) for r in run.results] == [
            ("<events>", "BLOCK", "checkpoint-skipped")]
        assert run.exit == 1

    def test_many_lists_paths_and_trajectories_mix(self) -> None:
        """Each item is a path, a Trajectory or a list of events; ids say which is which."""
        traj = Trajectory.from_events(_events("fixture_conforms.jsonl"), id="mine")
        run = roadcheck.replay(SPEC, [_events("fixture_conforms.jsonl"),
                                  EXAMPLES / "fixture_skipped.jsonl", traj,
                                  _events("fixture_skipped.jsonl")])
        assert [(r.id, r.verdict) for r in run.results] == [
            ("<events 1>", "PASS"), (str(EXAMPLES / "fixture_skipped.jsonl"), "BLOCK"),
            ("mine", "PASS"), ("<events 4>", "BLOCK")]

    def test_same_verdict_as_the_file(self) -> None:
        """In memory and on disk, the same events get the same result."""
        for name in sorted(p.name for p in EXAMPLES.glob("fixture_*.jsonl")):
            if name == "fixture_bad_input.jsonl":
                continue
            mem = roadcheck.replay(SPEC, _events(name)).results[0].to_dict()
            disk = roadcheck.replay(SPEC, EXAMPLES / name).results[0].to_dict()
            # events in memory have no file line; the file's reasons name theirs
            for found in (*disk["reasons"], *disk["warnings"]):
                assert isinstance(found.pop("line", 0), int)
            assert {k: v for k, v in mem.items() if k not in ("id", "path")} == \
                   {k: v for k, v in disk.items() if k not in ("id", "path")}, name

    def test_bad_event_dict_is_an_error_verdict(self) -> None:
        """A malformed event dict is ERROR bad-input naming the event, never an exception."""
        events = _events("fixture_conforms.jsonl")
        del events[2]["action_type"]
        run = roadcheck.replay(SPEC, [events])
        r = run.results[0]
        assert (r.verdict, r.headline) == ("ERROR", "bad-input")
        assert r.reasons[0].message == "event 3: action event is missing required key " \
                                       "'action_type'"
        assert run.exit == 2

    def test_unordered_events_are_an_error_verdict(self) -> None:
        """Whole-run rules (final last, seq increasing) hold for dicts too."""
        events = _events("fixture_conforms.jsonl")
        events.append(events.pop(0))
        r = roadcheck.replay(SPEC, events).results[0]
        assert r.verdict == "ERROR"

    def test_an_item_of_another_type_is_refused(self) -> None:
        """Something that is not a path, a Trajectory or events is a TypeError, not a path."""
        with pytest.raises(TypeError, match="a path, a Trajectory or a list of events"):
            roadcheck.replay(SPEC, [42])  # type: ignore[list-item]


class TestSpecs:
    def test_spec_as_a_dict(self) -> None:
        """A spec may be a dict, validated by the same parser as a file."""
        run = roadcheck.replay(SPEC_DICT, EXAMPLES / "fixture_skipped.jsonl")
        assert run.exit == 1 and run.spec_source is None

    def test_bad_dict_spec_names_the_field(self) -> None:
        """A dict spec with a typo raises SpecError naming the field."""
        bad = {"handoff_contracts": [{"from_agent": "a", "to_agent": "b",
                                      "require_verifed": True}]}
        with pytest.raises(SpecError, match=r"handoff_contracts\.0: unknown key 'require_verifed'"):
            roadcheck.replay(bad, [])

    def test_spec_as_a_path(self) -> None:
        """A spec may be a str or a PathLike."""
        assert roadcheck.replay(str(SPEC), EXAMPLES / "fixture_conforms.jsonl").exit == 0
        assert roadcheck.replay(SPEC, EXAMPLES / "fixture_conforms.jsonl").exit == 0

    def test_trajectory_as_spec_path_says_so(self) -> None:
        """A trajectory file given as the spec is recognised in the library too."""
        with pytest.raises(SpecError, match="this looks like a trajectory, not a spec"):
            roadcheck.replay(EXAMPLES / "fixture_conforms.jsonl", SPEC)

    def test_spec_of_another_type_is_refused(self) -> None:
        """A spec that is neither a Spec, a dict nor a path is a TypeError."""
        with pytest.raises(TypeError, match="a Spec, a dict or a path"):
            roadcheck.replay(42, [])  # type: ignore[arg-type]


class TestTrajectory:
    def test_events_first_with_a_default_id(self) -> None:
        """Trajectory(events) works; its id defaults to <events>."""
        traj = Trajectory(_events("fixture_conforms.jsonl"))
        assert traj.id == "<events>" and len(traj) == 7
        assert all(isinstance(e, Event) for e in traj.events)
        assert traj.task_success is True

    def test_events_first_with_keywords(self) -> None:
        """Trajectory(events, id=..., source=...) names the other fields by keyword."""
        traj = Trajectory(_events("fixture_conforms.jsonl"), id="run-7", meta={"k": 1})
        assert (traj.id, traj.path, traj.source, dict(traj.meta)) == ("run-7", None, "native",
                                                                       {"k": 1})

    def test_from_events(self) -> None:
        """Trajectory.from_events(events, id=...) is the same thing, spelled out."""
        traj = Trajectory.from_events(_events("fixture_conforms.jsonl"), id="x", path="p")
        assert (traj.id, traj.path, len(traj)) == ("x", "p", 7)

    def test_existing_spellings_still_work(self) -> None:
        """Trajectory(id, events, ...) and Trajectory(id=..., events=...) are unchanged."""
        events = tuple(Event.from_dict(e) for e in _events("fixture_conforms.jsonl"))
        a = Trajectory("t", events, "p.jsonl", "native", {"m": 1})
        b = Trajectory(id="t", events=events, path="p.jsonl", source="native", meta={"m": 1})
        assert a == b and a.events is events
        assert Trajectory(events=events).id == "<events>"

    def test_dicts_and_events_mix(self) -> None:
        """Event objects and native dicts may be mixed; dicts are validated."""
        raw = _events("fixture_conforms.jsonl")
        traj = Trajectory([Event.from_dict(raw[0]), *raw[1:]])
        assert [e.seq for e in traj] == [1, 2, 3, 4, 5, 6, 7]

    @pytest.mark.parametrize(("event", "message"), [
        ({"seq": 1, "event": "action"}, "event 1: action event is missing required key "
                                        "'action_type'"),
        ({"seq": "1", "event": "final", "task_success": True},
         "event 1: 'seq' must be an integer"),
        ("not an event", "event 1: expected a JSON object, got str"),
    ])
    def test_bad_dict_raises(self, event: object, message: str) -> None:
        """A malformed dict raises TraceError naming the event's position."""
        with pytest.raises(TraceError) as info:
            Trajectory([event])  # type: ignore[list-item]
        assert str(info.value) == message

    def test_misuse_is_a_type_error(self) -> None:
        """Events first and an id second, positionally, is refused with the keyword to use."""
        with pytest.raises(TypeError, match="id="):
            Trajectory(_events("fixture_conforms.jsonl"), "x")  # type: ignore[call-overload]
        with pytest.raises(TypeError, match="'id' must be a string"):
            Trajectory(7, ())  # type: ignore[call-overload]


class TestToDict:
    def test_run_to_dict_is_the_json_document(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """ReplayRun.to_dict() is exactly what --format json prints."""
        from roadcheck.cli import cli

        monkeypatch.chdir(ROOT)
        names = sorted(f"examples/{p.name}" for p in EXAMPLES.glob("fixture_*.jsonl"))
        for extra in ([], ["--by", "task_success"], ["--summary-only"]):
            out = CliRunner().invoke(cli, ["replay", "examples/spec.json", "--format", "json",
                                           *extra, *names])
            run = roadcheck.replay("examples/spec.json", names)
            kwargs = {"by_field": "task_success"} if extra[:1] == ["--by"] else {}
            if extra == ["--summary-only"]:
                kwargs = {"summary_only": True}
            assert run.to_dict(**kwargs) == orjson.loads(out.stdout)  # type: ignore[arg-type]

    def test_result_to_dict_is_plain_json(self) -> None:
        """ReplayResult.to_dict() survives a JSON round trip unchanged."""
        r = roadcheck.replay(SPEC, EXAMPLES / "fixture_skipped.jsonl").results[0]
        d = r.to_dict()
        assert json.loads(json.dumps(d)) == d
        assert d["verdict"] == "BLOCK" and d["reasons"][0]["code"] == "checkpoint-skipped"


class TestDiscoverability:
    def test_dir_shows_the_lazy_names(self) -> None:
        """dir(roadcheck) lists every public name, the lazily loaded ones included."""
        shown = set(dir(roadcheck))
        assert {"replay", "verify", "revalidate", "Workflow", "load_contract"} <= shown
        assert set(roadcheck.__all__) <= shown

    def test_help_shows_the_api(self) -> None:
        """help(roadcheck) documents replay, verify, revalidate and Workflow."""
        import pydoc

        text = pydoc.render_doc(roadcheck, renderer=pydoc.plaintext)
        for needle in ("replay(spec", "verify(", "revalidate(", "class Workflow"):
            assert needle in text, needle

    def test_docstring_names_every_public_name(self) -> None:
        """The package docstring lists the whole public API."""
        doc = roadcheck.__doc__ or ""
        missing = [n for n in roadcheck.__all__ if n != "__version__" and f"``{n}``" not in doc]
        assert not missing, missing

    def test_report_package_dir(self) -> None:
        """The renderers package lists its lazy names too."""
        import roadcheck.report

        assert set(roadcheck.report.__all__) <= set(dir(roadcheck.report))

    def test_py_typed_ships_in_the_package(self) -> None:
        """py.typed marks the package as typed; the wheel packs the whole package under
        src/, py.typed with it (tests/test_packaging.py checks the built wheel), and the
        package is Python alone (no native source or type stub of one)."""
        import tomllib

        package = ROOT / "src" / "roadcheck"
        assert (package / "py.typed").is_file()
        assert not [p for p in package.rglob("*") if p.suffix in (".c", ".pyi", ".so")]
        conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
        assert conf["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == [
            "src/roadcheck"]


class TestReadme:
    def test_in_memory_example_runs(self) -> None:
        """The README's in-memory example runs and prints what it shows."""
        import contextlib
        import io
        import re

        readme = (ROOT / "README.md").read_text()
        blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
        block = next(b for b in blocks if "in memory" in b)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, "README.md", "exec"), {})
        shown = re.findall(r"# (\S.*)$", block, flags=re.M)
        printed = out.getvalue().splitlines()
        assert printed and printed == shown[-len(printed):]


def test_path_objects_are_accepted(tmp_path: Path) -> None:
    """A pathlib.Path to a trajectory is read as a file, not as events."""
    assert roadcheck.replay(SPEC, tmp_path / "none.jsonl").results[0].verdict == "ERROR"
