"""Argument and outcome conditions in selectors: dotted paths, value conditions, ``ok``,
and whole selectors combined."""

from __future__ import annotations

import re
from typing import Any

import pytest

from roadcheck.conformance import parse_spec
from roadcheck.errors import SpecError
from roadcheck.events import Event
from roadcheck.selectors import as_number, compile_selector, glob_regex, reach


def _action(**data: Any) -> Event:
    return Event(1, "action", None, None, {"event": "action", "action_type": "t", **data})


def _picks(selector: dict[str, Any], *events: Event) -> list[bool]:
    match = compile_selector(selector)
    return [match(e) for e in events]


class TestPaths:
    def test_dotted_paths_reach_keys_indexes_and_every_element(self) -> None:
        """``items.0.sku`` is one element, ``items.*.sku`` every one, ``.`` the whole."""
        args = {"items": [{"sku": "A"}, {"sku": "B"}], "to": "x"}
        assert reach(args, ("items", "0", "sku")) == ["A"]
        assert reach(args, ("items", "*", "sku")) == ["A", "B"]
        assert reach(args, ("items", "5", "sku")) == []
        assert reach(args, ()) == [args]
        assert reach("text", ("to",)) == []

    def test_any_element_meets_the_condition(self) -> None:
        sel = {"args": {"items.*.sku": "B"}}
        assert _picks(sel, _action(args={"items": [{"sku": "A"}, {"sku": "B"}]}),
                      _action(args={"items": [{"sku": "A"}]}), _action()) == [True, False, False]

    def test_whole_value(self) -> None:
        sel = {"result": {".": {"regex": "(?i)error"}}}
        assert _picks(sel, _action(result="Error: no"), _action(result={"a": 1})) == [True, False]


class TestValueConditions:
    @pytest.mark.parametrize(("cond", "value", "want"), [
        ({"gt": 1000}, 5000, True), ({"gt": 1000}, "5000", True), ({"gt": 1000}, "1000", False),
        ({"ge": 1000}, "1000", True), ({"lt": 10}, 9.5, True), ({"le": 10}, "10.0", True),
        ({"gt": 1000}, "5,000", False), ({"gt": 1000}, "lots", False), ({"gt": 0}, True, False),
        ({"gt": 1000}, [5000], False), ({"in": ["a", 1]}, 1, True), ({"in": [1]}, True, False),
        ({"in": [1]}, 1.0, False), ({"not_in": ["a"]}, "b", True), ({"not_in": ["a"]}, "a", False),
        ({"not_in": ["a"]}, {"x": 1}, True), ({"regex": "^ma"}, "main", True),
        ({"regex": "^ma"}, 5, False), ({"glob": "src/**/*.py"}, "src/a/b.py", True),
        ({"glob": "src/**/*.py"}, "src/b.py", True), ({"glob": "src/*.py"}, "src/a/b.py", False),
        ({"glob": "*.[!c]"}, "x.h", True), ({"glob": "*.[!c]"}, "x.c", False),
        ({"any": [{"regex": "^a"}, {"gt": 5}]}, 7, True),
        ({"all": [{"gt": 1}, {"lt": 3}]}, 4, False),
        ({"not": {"in": ["main"]}}, "dev", True), ({"gt": 1, "lt": 3}, 2, True),
        ({"gt": 1, "lt": 3}, 3, False), ("5000", 5000, False), (5000, 5000, True),
    ])
    def test_condition(self, cond: Any, value: Any, want: bool) -> None:
        assert _picks({"args": {"v": cond}}, _action(args={"v": value})) == [want]

    def test_exists(self) -> None:
        events = (_action(args={"to": "x"}), _action(args={}), _action())
        assert _picks({"args": {"to": {"exists": True}}}, *events) == [True, False, False]
        assert _picks({"args": {"to": {"exists": False}}}, *events) == [False, True, True]

    def test_decimal_text(self) -> None:
        """Only text that is wholly a decimal number counts as a number."""
        assert [as_number(v) for v in ("5000", "-2.5", "+3", " 5", "1e3", "0x10", "")] == [
            5000, -2.5, 3, None, None, None, None]

    def test_glob_is_anchored(self) -> None:
        assert glob_regex("*.py").match("a.pyc") is None


class TestOk:
    def test_ok_is_no_error_and_exit_status_zero(self) -> None:
        events = (_action(), _action(error="boom"), _action(exit_code=0), _action(exit_code=2),
                  _action(result_error=True), _action(refused=None),
                  Event(2, "message", None, None, {"event": "message", "role": "user"}))
        assert _picks({"ok": True}, *events) == [True, False, True, False, False, False, False]
        assert _picks({"ok": False}, *events) == [False, True, False, True, True, True, False]


class TestCombined:
    def test_all_any_not(self) -> None:
        push = _action(action_type="Bash", command="git push --force")
        ls = _action(action_type="Bash", command="ls")
        sel_any = {"any": [{"command": {"words": ["git", "push"]}}, {"action_type": "Edit"}]}
        assert _picks(sel_any, push, ls) == [True, False]
        assert _picks({"action_type": "Bash", "not": sel_any}, push, ls) == [False, True]
        assert _picks({"all": [{"action_type": "Bash"}, {"ok": True}]}, push, ls) == [True, True]


class TestRefused:
    @pytest.mark.parametrize(("when", "message"), [
        ({"args": {"amount": {"gtt": 1}}}, "unknown key 'gtt'; did you mean 'gt'?"),
        ({"args": {"amount": {}}}, "a value condition names at least one of"),
        ({"args": {"a..b": 1}}, "bad path 'a..b'"),
        ({"args": {"a": {"regex": "("}}}, "bad regex"),
        ({"args": {"a": {"gt": "5"}}}, "derive.0.when.args.a.gt"),
        ({"any": [{"ok": "yes"}]}, "derive.0.when.any.0.ok"),
        ({"not": {}}, "derive.0.when.0.not"),
        ({"args": {"a": {"in": [[1]]}}}, "derive.0.when.args.a"),
    ])
    def test_problem_named_with_its_field(self, when: Any, message: str) -> None:
        doc = {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "t"}],
               "derive": [{"checkpoint_id": "c", "when": when}]}
        with pytest.raises(SpecError, match=re.escape(message)):
            parse_spec(doc)

    def test_every_selector_position_takes_conditions(self) -> None:
        """must_precede, voided_by and derive.when read the same language."""
        sel = {"args": {"amount": {"gt": 1000}}, "ok": True, "not": {"agent": "bot"}}
        spec = parse_spec({"mandatory_checkpoints": [
            {"checkpoint_id": "c", "must_precede": {"action_type": "refund", **sel},
             "voided_by": [sel]}], "derive": [{"checkpoint_id": "c", "when": sel}]})
        assert spec.mandatory_checkpoints[0].voided_by[0].ok is True


RUNS: dict[str, Any] = {"command": {"runs": r"(?:pytest|npm (?:run )?test(?::[\w:-]+)?)\b"}}


class TestCommandRuns:
    """``command: {runs: REGEX}``: a simple command of the line, its words joined by single
    spaces, matches REGEX from its start; wrappers and ``bash -c`` are looked through."""

    @pytest.mark.parametrize("line", [
        "pytest -q", "cd app && pytest", "timeout 60 pytest tests", "npm run test:unit",
        "bash -lc 'npm test'", "FOO=1 pytest", "env CI=1 npm test"])
    def test_a_simple_command_that_runs_it(self, line: str) -> None:
        assert _picks(RUNS, _action(command=line)) == [True]

    @pytest.mark.parametrize("line", [
        "echo pytest", "true # pytest", "cat pytest.ini", "git log --grep pytest",
        "grep -r 'npm test' .", "ls tests/ # npm test later", "pytestify"])
    def test_words_that_only_mention_it(self, line: str) -> None:
        assert _picks(RUNS, _action(command=line)) == [False]

    @pytest.mark.parametrize("line", ["eval pytest", "$RUNNER pytest", "echo pytest | bash"])
    def test_a_line_that_cannot_be_read(self, line: str) -> None:
        """Evidence it shows nothing; where it guards, it is held."""
        assert _picks(RUNS, _action(command=line)) == [False]
        assert compile_selector(RUNS, guarding=True)(_action(command=line)) is True

    def test_refused_when_misshapen(self) -> None:
        doc = {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "t"}],
               "derive": [{"checkpoint_id": "c", "when": {"command": {"runs": "("}}}]}
        with pytest.raises(SpecError, match=re.escape("derive.0.when.0.command.runs: bad regex")):
            parse_spec(doc)
        doc["derive"][0]["when"] = {"command": {"runs": "x", "words": ["x"]}}
        with pytest.raises(SpecError, match="one at a time"):
            parse_spec(doc)
