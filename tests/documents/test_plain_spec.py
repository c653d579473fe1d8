"""The replay spec read without msgspec is the spec the typed conversion reads, or it
steps aside: every document gives the same spec or the same error either way."""

from __future__ import annotations

import copy
import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roadcheck.conformance import parse_spec
from roadcheck.conformance import spec as spec_mod
from roadcheck.documents._read import decode
from roadcheck.errors import SpecError

from ..conftest import EXAMPLES, ROOT
from ..strategies import json_values

SPEC_FILES = sorted(
    p for p in {*EXAMPLES.rglob("*"), *(ROOT / "tests" / "data").rglob("*")}
    if p.suffix in (".json", ".yaml", ".yml") and p.is_file() and p.name != "manifest.json"
    and (b"mandatory_checkpoints" in p.read_bytes() or b"handoff_contracts" in p.read_bytes()))

#: Every option the plain reading takes, and a few it leaves to the conversion.
PLAIN = {
    "mandatory_checkpoints": [
        {"checkpoint_id": "ok", "must_precede": ["send", "pay"], "scope": "each",
         "consume": True, "confirmed_by": ["owner"], "voided_by": [],
         "binds": {"tool": True, "args": True}},
        {"checkpoint_id": "cp2", "must_precede": "send", "confirmed_by": []},
        {"checkpoint_id": "cp3", "must_precede": "send", "binds": {"call": True}}],
    "handoff_contracts": [
        {"from_agent": "a", "to_agent": "b", "required_fields": ["x"],
         "require_verified": True},
        {"from_agent": "b", "to_agent": "c"}],
    "derive": [],
}
SELECTORS = {
    "mandatory_checkpoints": [
        {"checkpoint_id": "ok", "must_precede": {"action_type": "Bash"},
         "voided_by": [{"event": "message", "role": "user"}]}],
    "derive": [{"checkpoint_id": "ok", "when": {"event": "message", "role": "user"}}],
}


def _outcome(doc: Any, *, typed: bool) -> tuple[Any, ...]:
    """What :func:`parse_spec` makes of ``doc``: the spec (and what its repr and dict
    show), or the error's message; ``typed`` reads it through the conversion alone."""
    doc = copy.deepcopy(doc)  # neither reading may lean on what the other left behind
    with mock.patch.object(spec_mod, "_plain", return_value=None) if typed else nullcontext():
        try:
            spec = parse_spec(doc, "spec.json", "0" * 64)
        except SpecError as exc:
            return ("error", str(exc))
    checked = [r.checked for r in spec.mandatory_checkpoints]
    return ("spec", spec, repr(spec), spec.to_dict(), checked, spec.source, spec.sha256)


def _same(doc: Any) -> None:
    assert _outcome(doc, typed=False) == _outcome(doc, typed=True)


def test_the_repository_specs_read_alike() -> None:
    """Every spec document in the examples and test data: the same spec either way."""
    compared = 0
    for path in SPEC_FILES:
        try:
            doc = decode(path.read_bytes(), str(path), "spec", SpecError)
        except SpecError:  # a regression fixture that is no document at all
            continue
        _same(doc)
        compared += 1
    assert compared > 20


def test_the_plain_reading_is_taken() -> None:
    """The example spec and a spec of every plain option are read without the conversion;
    a spec with action selectors is left to it."""
    example = json.loads((EXAMPLES / "spec.json").read_text())
    assert spec_mod._plain(example) is not None
    assert spec_mod._plain(PLAIN) is not None
    assert spec_mod._plain(SELECTORS) is None
    _same(PLAIN)
    _same(SELECTORS)


@pytest.mark.parametrize("doc", [
    {}, [], None, {"mandatory_checkpoints": None}, {"handoff_contracts": {}},
    {"mandatory_checkpoints": []}, {"derive": [], "handoff_contracts": []},
    {"mandatory_checkpoints": [{"checkpoint_id": "", "must_precede": "x"}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": []}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": [""]}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "x", "scope": "all"}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "x", "consume": 1}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "x", "binds": {}}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "x", "binds": None}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "x",
                                "binds": {"args": True}}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "x",
                                "confirmed_by": None}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "c\ud800", "must_precede": "x"}]},
    {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "x", "scop": "each"}]},
    {"mandatory_checkpoints": [{"must_precede": "x"}]},
    {"handoff_contracts": [{"from_agent": "a", "to_agent": "b"},
                           {"from_agent": "a", "to_agent": "b"}]},
    {"handoff_contracts": [{"from_agent": "a", "to_agent": "b", "required_fields": "x"}]},
    {"handoff_contracts": [{"from_agent": "a", "to_agent": "b",
                            "require_verified": "true"}]},
    {"handoff_contracts": [{"from_agent": "a"}]},
    {"handoff_contracts": [{"from_agent": "a", "to_agent": "é"}], "extra": 1},
])
def test_edge_documents_read_alike(doc: Any) -> None:
    """Empty, null, misspelt, mistyped and repeated: the same spec or the same error."""
    _same(doc)


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a document a value sits (its keys and indexes from the root)."""
    out = [at]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*at, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*at, i))
    return out


BASES = [PLAIN, SELECTORS, json.loads((EXAMPLES / "spec.json").read_text())]


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_mutated_documents_read_alike(data: st.DataObject) -> None:
    """A plain spec with one value replaced, one key dropped or one key added: both
    readings give the same spec or the same error, to the last character."""
    doc = copy.deepcopy(data.draw(st.sampled_from(BASES)))
    at = data.draw(st.sampled_from(_paths(doc)))
    op = data.draw(st.sampled_from(["replace", "drop", "add"]))
    value = data.draw(st.one_of(json_values, st.sampled_from(
        ["", "each", "first", True, False, [], {}, ["x"], ["x", ""], "\ud800", "send"])))
    if not at:
        doc = value if op == "replace" else doc
    else:
        parent = doc
        for part in at[:-1]:
            parent = parent[part]
        last = at[-1]
        if op == "replace":
            parent[last] = value
        elif op == "drop":
            del parent[last]
        elif isinstance(parent[last], dict):
            key = data.draw(st.sampled_from(
                ["scope", "consume", "binds", "tool", "call", "confirmed_by", "derive",
                 "required_fields", "require_verified", "voided_by", "bogus"]))
            parent[last][key] = value
    _same(doc)


def test_a_spec_file_reads_without_msgspec(tmp_path: Path) -> None:
    """Loading the example spec imports neither msgspec nor the typed conversion."""
    import subprocess
    import sys

    code = ("import sys; from roadcheck.conformance.spec import load_spec; "
            f"load_spec({str(EXAMPLES / 'spec.json')!r}); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'msgspec' "
            "or m in ('roadcheck.documents.loader', 'roadcheck.documents.spec', 'hashlib')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    assert out.stdout.strip() == "[]"
