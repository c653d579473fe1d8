"""Selectors name known event fields with the right types; anything else is a spec error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.conformance import load_spec
from roadcheck.errors import SpecError
from roadcheck.selectors import SELECTOR_FIELDS, compile_selector

from ..conftest import EXAMPLES

AIRLINE = EXAMPLES / "tau" / "airline.yaml"
WHEN = "when: {event: message, role: user, text: {regex:"
VOID = "[{event: message, role: assistant, yields_turn: true}]"


def _typos(word: str) -> list[str]:
    """A dropped letter, a doubled letter, two letters swapped, a wrong case."""
    return sorted({word[1:], word[:-1], word[0] + word[0] + word[1:],
                   word[1] + word[0] + word[2:], word.capitalize()} - {word})


def _mutants() -> list[tuple[str, str, str]]:
    """(label, document text, the key the error must suggest) for every selector key."""
    text = AIRLINE.read_text()
    assert WHEN in text and VOID in text
    out = []
    for line, keys in ((WHEN, ("event", "role", "text", "regex")),
                       (VOID, ("event", "role", "yields_turn"))):
        for key in keys:
            for typo in _typos(key):
                bad = re.sub(rf"\b{key}:", f"{typo}:", line, count=1)
                out.append((f"{key}->{typo}", text.replace(line, bad), key))
    return out


MUTANTS = _mutants()
WRONG_TYPES = [
    ("yields_turn: true", "yields_turn: 'true'"),
    ("yields_turn: true", "yields_turn: 1"),
    ("yields_turn: true", "yields_turn: {regex: 'true'}"),
    ("role: assistant", "role: [assistant]"),
    ("role: assistant", "role: assistent"),
    ("event: message, role: assistant", "event: mesage, role: assistant"),
    ("role: assistant", "role: {in: []}"),
    ("role: assistant", "role: {in: [assistant], regex: a}"),
    ("role: assistant", "role: null"),
]


class TestMisspeltSelectors:
    """Every misspelt selector key in the airline spec is refused, naming the right one."""

    def test_there_are_many(self) -> None:
        """The sweep covers every key of both selectors."""
        assert len(MUTANTS) >= 25

    @pytest.mark.parametrize(("label", "text", "key"), MUTANTS, ids=[m[0] for m in MUTANTS])
    def test_refused_with_a_suggestion(self, label: str, text: str, key: str,
                                       tmp_path: Path) -> None:
        """The spec does not load; the one-line error names the line and the right key."""
        path = tmp_path / "airline.yaml"
        path.write_text(text)
        with pytest.raises(SpecError) as info:
            load_spec(path)
        assert info.value.line is not None
        assert f"did you mean '{key}'?" in info.value.message

    @pytest.mark.parametrize(("good", "bad"), WRONG_TYPES, ids=[w[1] for w in WRONG_TYPES])
    def test_wrong_value_types_are_refused(self, good: str, bad: str, tmp_path: Path) -> None:
        """A value of the wrong type is an error, never a selector that never matches."""
        path = tmp_path / "airline.yaml"
        path.write_text(AIRLINE.read_text().replace(good, bad))
        result = CliRunner().invoke(cli, ["replay", str(path),
                                          str(EXAMPLES / "fixture_conforms.jsonl")])
        assert result.exit_code == 2, result.output
        assert result.output.startswith(f"error[bad-input]: {path}:")
        assert result.output.count("\n") == 1


class TestSelectorFields:
    """The closed list of selectable fields."""

    def test_known_fields(self) -> None:
        """The documented event fields are selectable; objects only through dotted paths."""
        for name in ("event", "seq", "agent", "ts", "action_type", "irreversible",
                     "checkpoint_id", "confirmed_by", "from_agent", "to_agent", "role", "text",
                     "yields_turn", "task_success", "call_id", "ok", "args", "result",
                     "payload", "all", "any", "not"):
            assert name in SELECTOR_FIELDS
        for whole in ({"payload": "x"}, {"args": {}}, {"args": [1]}):
            with pytest.raises(ValueError, match="selector"):
                compile_selector(whole)

    def test_regex_only_on_text_fields(self) -> None:
        """A regex on a boolean or integer field is refused."""
        with pytest.raises(ValueError, match="regex"):
            compile_selector({"seq": {"regex": "1"}})
        compile_selector({"agent": {"regex": "^a"}})

    def test_unknown_field_suggests(self) -> None:
        """compile_selector refuses an unknown field and suggests the closest."""
        with pytest.raises(ValueError, match="did you mean 'action_type'"):
            compile_selector({"action_typ": "x"})
