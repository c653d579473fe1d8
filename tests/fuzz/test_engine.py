"""The fuzz instrument itself: mutations are deterministic, the reference check is fair.

"Made invalid" must be exact in both directions: a document that is still
valid by its documented format may legitimately pass, so the reference check
must accept it; a structurally broken one must be refused.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from .mutate import Unparseable, mutate, parse, typo
from .reference import check_doc
from .surfaces import EXAMPLES, SURFACES, Workspace, all_seeds

AIRLINE = (EXAMPLES / "tau" / "airline.yaml").read_bytes()
SPEC = json.loads((EXAMPLES / "spec.json").read_text())


class TestMutations:
    """Mutations of a seed document."""

    def test_same_random_same_mutation(self) -> None:
        """A mutation is a pure function of the random generator's seed."""
        first = [mutate(random.Random(k), AIRLINE, "yaml") for k in range(50)]
        again = [mutate(random.Random(k), AIRLINE, "yaml") for k in range(50)]
        assert first == again

    def test_never_a_no_op(self) -> None:
        """Every mutation changes the bytes."""
        assert all(mutate(random.Random(k), AIRLINE, "yaml").data != AIRLINE
                   for k in range(200))

    def test_every_operator_is_drawn(self) -> None:
        """Over a few hundred draws every mutation operator occurs."""
        ops = Counter(mutate(random.Random(k), AIRLINE, "yaml").op for k in range(600))
        assert set(ops) == {"delete_key", "rename_key", "retype", "duplicate_key", "other_value",
                            "truncate_line", "truncate_byte", "control", "bidi", "swap_lines",
                            "duplicate_line", "delete_line", "not_utf8"}

    @pytest.mark.parametrize("key", ["voided_by", "yields_turn", "must_precede"])
    def test_typo_is_a_different_key(self, key: str) -> None:
        """A typo drops, swaps or doubles one letter, and never returns the key itself."""
        rng = random.Random(1)
        for _ in range(20):
            new = typo(rng, key)
            assert new != key and abs(len(new) - len(key)) <= 1


class TestStrictParse:
    """The reference reader refuses what a format does not allow."""

    @pytest.mark.parametrize(("data", "fmt"), [
        (b'{"a": 1, "a": 2}', "json"),
        (b'{"a": 1', "json"),
        (b'{"a": "\xff"}', "json"),
        (b'{"a": "x\x01"}', "json"),
        (b'{"a": NaN}', "json"),
        (b"a: 1\na: 2\n", "yaml"),
        (b"a: \x00\n", "yaml"),
        (b'{"seq": 1}\n{"seq": 2', "jsonl"),
    ])
    def test_refused(self, data: bytes, fmt: str) -> None:
        """Duplicate keys, torn documents, non-UTF-8 and raw control characters are refused."""
        with pytest.raises(Unparseable):
            parse(data, fmt)


class TestReference:
    """The reference check of each document kind, on hand-made documents."""

    def test_every_seed_is_valid(self, workspace: Workspace) -> None:
        """Every seed of every surface passes its own reference check (or is a known bad one)."""
        bad = {s.name for s in all_seeds() if workspace.invalid(s, workspace.seed_bytes(s))}
        assert bad == {"fixture_bad_input.jsonl"}

    def test_deleting_an_optional_key_stays_valid(self) -> None:
        """``require_verified`` has a default: a spec without it is still valid."""
        doc = json.loads(json.dumps(SPEC))
        del doc["handoff_contracts"][0]["require_verified"]
        assert check_doc("spec", doc) is None

    def test_a_list_cut_after_a_complete_entry_stays_valid(self) -> None:
        """A YAML spec cut after a complete list item is a valid, smaller spec."""
        two_rules = (b"mandatory_checkpoints:\n"
                     b"  - checkpoint_id: a\n"
                     b"    must_precede: x\n"
                     b"  - checkpoint_id: b\n"
                     b"    must_precede: y\n")
        lines = two_rules.splitlines(keepends=True)
        assert check_doc("spec", parse(b"".join(lines), "yaml")) is None
        assert check_doc("spec", parse(b"".join(lines[:3]), "yaml")) is None

    def test_a_rule_cut_in_half_is_invalid(self) -> None:
        """A spec cut before a rule's ``must_precede`` misses a required key."""
        lines = AIRLINE.decode().splitlines(keepends=True)
        cut = next(i for i, line in enumerate(lines) if line.lstrip().startswith("must_precede"))
        assert "required" in str(check_doc("spec", parse("".join(lines[:cut]).encode(), "yaml")))

    def test_a_bracketed_list_cut_in_half_does_not_parse(self) -> None:
        """The airline spec's guarded actions are one bracketed value: a cut inside is refused."""
        lines = AIRLINE.decode().splitlines(keepends=True)
        cut = next(i for i, line in enumerate(lines) if "update_reservation_baggages" in line)
        with pytest.raises(Unparseable):
            parse("".join(lines[:cut]).encode(), "yaml")

    @pytest.mark.parametrize(("selector", "why"), [
        ({"event": "message", "rol": "assistant"}, "not an event field"),
        ({"event": "message", "yields_turn": "true"}, "true or false"),
        ({"event": "mesage"}, "must be one of"),
    ])
    def test_a_mistyped_selector_is_invalid(self, selector: dict[str, object], why: str) -> None:
        """A selector names known event fields with the right types."""
        doc = {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "a",
                                          "voided_by": [selector]}]}
        assert why in str(check_doc("spec", doc))

    def test_null_never_means_the_default(self) -> None:
        """``scope: null`` is not ``scope: first``."""
        doc = {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "a",
                                          "scope": None}]}
        assert check_doc("spec", doc) is not None

    def test_a_tool_answer_without_its_call_is_invalid(self) -> None:
        """A tool message answering a call id that no message made is malformed."""
        seed = {"messages": [{"role": "assistant", "tool_calls": [
            {"id": "c1", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
        doc = {"messages": [{"role": "assistant", "tool_cals": [
            {"id": "c1", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
        assert check_doc("transcript", seed, seed) is None
        assert "no message made" in str(check_doc("transcript", doc, seed))

    def test_extra_keys_in_a_native_event_are_valid(self) -> None:
        """Native events keep and ignore unknown keys: adding one is not an error."""
        lines = [{"seq": 1, "event": "action", "action_type": "a", "note": "x"},
                 {"seq": 2, "event": "final", "task_success": True}]
        assert check_doc("native", lines) is None



class TestDeterminism:
    """The same case is the same bytes in every session, so a run judges the same cases."""

    def test_store_seeds_are_the_same_bytes_in_every_session(
            self, workspace: Workspace, tmp_path: Path) -> None:
        """Seed runs made elsewhere, later, hold byte-identical evidence files."""
        other = Workspace(tmp_path / "a-workspace-whose-path-is-longer-than-the-first")
        for seed in SURFACES["store"]:
            assert other.seed_bytes(seed) == workspace.seed_bytes(seed), seed.name
            case = [other.case(seed, random.Random(k)).mutation for k in range(20)]
            assert case == [workspace.case(seed, random.Random(k)).mutation for k in range(20)]


class TestCoverage:
    """Every surface is fuzzed, and can be judged by oracle (b)."""

    def test_every_surface_has_a_property(self) -> None:
        """Adding a surface without a property test fails here."""
        from . import test_fuzz_surfaces

        tested = {name.removeprefix("test_").replace("_", "-") for name in dir(test_fuzz_surfaces)
                  if name.startswith("test_")}
        assert set(SURFACES) <= tested

    def test_every_surface_has_a_strict_seed(self, workspace: Workspace) -> None:
        """Each surface has a valid seed with a non-lenient verdict, so false passes count."""
        assert all(any(workspace.strict(s) for s in seeds) for seeds in SURFACES.values())
