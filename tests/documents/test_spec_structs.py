"""The replay spec is its document's structs: read once by the loader, held by the engine.

No class repeats the fields of :mod:`roadcheck.documents.spec`: :class:`Spec` holds the
:class:`SpecDoc` the loader read (with where it was read from and its sha256), the rule
names the engine exports are the structs themselves, and the compiled spec keeps each
rule's struct beside its lookup tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import roadcheck
from roadcheck import conformance
from roadcheck.conformance import CompiledSpec, Spec, load_spec, parse_spec
from roadcheck.documents._read import decode
from roadcheck.documents.selector import SelectorDoc
from roadcheck.documents.spec import (
    CheckpointRuleDoc,
    DeriveDoc,
    HandoffContractDoc,
    SpecDoc,
)
from roadcheck.errors import SpecError
from roadcheck.guard import snapshot

from ..conftest import EXAMPLES, ROOT

SPEC_FILES = sorted(
    p for p in {*EXAMPLES.rglob("*"), *(ROOT / "tests" / "data").rglob("*")}
    if p.suffix in (".json", ".yaml", ".yml") and p.is_file() and p.name != "manifest.json"
    and (b"mandatory_checkpoints" in p.read_bytes() or b"handoff_contracts" in p.read_bytes()))

#: Every option of a rule and a contract, and selectors in each place they go.
FULL = {
    "mandatory_checkpoints": [
        {"checkpoint_id": "ok", "must_precede": ["send", {"command": {"words": ["git", "push"]}}],
         "scope": "each", "consume": True, "confirmed_by": ["owner"],
         "voided_by": [{"event": "message", "role": "user"}],
         "binds": {"tool": True, "args": True}},
        {"checkpoint_id": "cp2", "must_precede": "send", "confirmed_by": []},
        {"checkpoint_id": "cp3", "must_precede": ["pay"], "binds": {"call": True}}],
    "handoff_contracts": [
        {"from_agent": "a", "to_agent": "b", "required_fields": ["x"], "require_verified": True},
        {"from_agent": "b", "to_agent": "c"}],
    "derive": [{"checkpoint_id": "ok", "when": {"event": "message", "text": {"regex": "yes"}}}],
}


def _repository_specs() -> list[tuple[Path, Any]]:
    out = []
    for path in SPEC_FILES:
        try:
            out.append((path, decode(path.read_bytes(), str(path), "spec", SpecError)))
        except SpecError:  # a regression fixture that is no document at all
            continue
    return out


def test_the_rule_names_are_the_document_structs() -> None:
    """The names the engine exports are the document's own structs, not copies of them."""
    assert conformance.MandatoryCheckpoint is CheckpointRuleDoc
    assert conformance.HandoffContract is HandoffContractDoc
    assert conformance.DeriveRule is DeriveDoc
    assert roadcheck.Spec is Spec


def test_a_read_spec_holds_the_structs_the_loader_read() -> None:
    """What a spec lists is the document's structs; the engine compiles those very objects."""
    spec = parse_spec(FULL, "spec.json", "0" * 64)
    assert type(spec.doc) is SpecDoc and spec.checked
    assert (spec.source, spec.sha256) == ("spec.json", "0" * 64)
    assert spec.mandatory_checkpoints is spec.doc.mandatory_checkpoints
    assert all(type(r) is CheckpointRuleDoc for r in spec.mandatory_checkpoints)
    assert type(spec.mandatory_checkpoints[0].voided_by[0]) is SelectorDoc
    compiled = CompiledSpec(spec)
    assert [r.doc for r in compiled.rules] == spec.mandatory_checkpoints
    assert all(r.doc is d for r, d in zip(compiled.rules, spec.mandatory_checkpoints,
                                          strict=True))
    first = compiled.rules[0]
    assert first.guarded == ("send", {"command": {"words": ["git", "push"]}})
    assert first.binds == ("tool", "args")
    assert compiled.rules[2].binds == ("call",)
    assert compiled.contracts[("a", "b")] is spec.handoff_contracts[0]


def test_the_repository_specs_read_back_from_their_dict() -> None:
    """Every spec document in the examples and test data: to_dict reads back to an equal spec."""
    specs = _repository_specs()
    assert len(specs) > 20
    for path, doc in specs:
        try:
            spec = parse_spec(doc, str(path))
        except SpecError:
            continue
        again = parse_spec(spec.to_dict())
        assert again == spec, path
        assert again.to_dict() == spec.to_dict(), path
    # a list of one guarded action is written as the action: the same rule, the same dict
    full = parse_spec(FULL)
    assert parse_spec(full.to_dict()).to_dict() == full.to_dict()


def test_to_dict_leaves_defaults_out() -> None:
    """The dict form: defaults left out, one guarded action unlisted, contracts in full."""
    out = parse_spec(FULL).to_dict()
    assert out["mandatory_checkpoints"][1] == {"checkpoint_id": "cp2", "must_precede": "send",
                                               "confirmed_by": []}
    assert out["mandatory_checkpoints"][2] == {"checkpoint_id": "cp3", "must_precede": "pay",
                                               "binds": {"call": True}}
    assert out["handoff_contracts"][1] == {"from_agent": "b", "to_agent": "c",
                                           "required_fields": [], "require_verified": False}
    assert out["derive"] == FULL["derive"]


def test_the_guard_cache_holds_the_same_structs() -> None:
    """The guard's spec cache gives back the structs it was given, for that sha256 only."""
    spec = parse_spec(FULL, "spec.json", "1" * 64)
    dumped = snapshot.dump_spec(spec)
    assert dumped is not None
    back = snapshot.load_spec(dumped, "spec.json", "1" * 64)
    assert back is not None and back.doc == spec.doc and back.checked
    assert type(back.mandatory_checkpoints[0].voided_by[0]) is SelectorDoc
    assert snapshot.load_spec(dumped, "spec.json", "2" * 64) is None
    assert snapshot.dump_spec(Spec(spec.doc, "spec.json", "1" * 64)) is None  # unchecked


def test_a_spec_built_in_memory_has_its_selectors_checked() -> None:
    """Structs built by hand skip the loader; the engine checks their selectors itself."""
    rule = CheckpointRuleDoc("cp", "send", voided_by=[SelectorDoc()])
    with pytest.raises(ValueError, match="non-empty mapping"):
        CompiledSpec(Spec(SpecDoc([rule])))
    good = CompiledSpec(Spec(SpecDoc([CheckpointRuleDoc("cp", "send")], derive=[
        DeriveDoc("cp", SelectorDoc(event="message"))])))
    assert good.by_action["send"][0].cid == "cp" and good.selects


def test_a_spec_file_is_read_once(tmp_path: Path) -> None:
    """load_spec: the loader's structs, with the file as source and its bytes' sha256."""
    spec = load_spec(EXAMPLES / "spec.json")
    assert type(spec.doc) is SpecDoc and spec.checked
    assert spec.source == str(EXAMPLES / "spec.json") and len(spec.sha256 or "") == 64


def test_selector_fields_are_the_names_the_struct_decodes() -> None:
    """SELECTOR_FIELDS, read off the struct's encoded names, is every field as written."""
    import msgspec

    from roadcheck.documents.selector import SELECTOR_FIELDS

    assert tuple(f.encode_name for f in msgspec.structs.fields(SelectorDoc)) == SELECTOR_FIELDS
    assert {"all", "any", "not", "action_type", "args"} <= set(SELECTOR_FIELDS)
    assert "all_" not in SELECTOR_FIELDS
