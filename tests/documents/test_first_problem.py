"""A document with several problems is reported by its first problem by line."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadcheck.conformance import load_spec
from roadcheck.errors import SpecError
from roadcheck.harness import Workflow


def _first(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    load = Workflow.load if name.startswith("wf") else load_spec
    with pytest.raises(SpecError) as info:
        load(str(path))
    return str(info.value).removeprefix(f"{path}:")


class TestFirstProblemByLine:
    @pytest.mark.parametrize(("text", "expected"), [
        # a wrong type (line 2) before a null (line 7)
        ("mandatory_checkpoints:\n  - checkpoint_id: 5\n    must_precede: send\n"
         "handoff_contracts:\n  - from_agent: a\n    to_agent: b\n    require_verified: null\n",
         "2: unusable spec: mandatory_checkpoints.0.checkpoint_id: must be a string, "
         "got an integer"),
        # a null (line 2) before a wrong type (line 7)
        ("handoff_contracts:\n  - require_verified: null\n    from_agent: a\n    to_agent: b\n"
         "mandatory_checkpoints:\n  - checkpoint_id: c\n    must_precede: 5\n",
         "2: unusable spec: handoff_contracts.0.require_verified: is null: write a value, or "
         "leave the key out for its default"),
        # a missing key (the item at line 2) before a bad value (line 3)
        ("mandatory_checkpoints:\n  - must_precede: send\n    scope: allx\n",
         "2: unusable spec: mandatory_checkpoints.0.checkpoint_id: required"),
        # a bad value (line 3) before an item missing a key (line 5)
        ("mandatory_checkpoints:\n  - checkpoint_id: c\n    scope: allx\n    must_precede: s\n"
         "  - must_precede: send\n",
         "3: unusable spec: mandatory_checkpoints.0.scope: must be 'first' or 'each', "
         "got 'allx'"),
        # an unknown key (line 3) before a null (line 4)
        ("mandatory_checkpoints:\n  - checkpoint_id: c\n    must_preced: s\n    scope: null\n",
         "3: unusable spec: mandatory_checkpoints.0: unknown key 'must_preced'; did you mean "
         "'must_precede'?"),
    ])
    def test_spec(self, tmp_path: Path, text: str, expected: str) -> None:
        """Type, null, missing and unknown-key problems are ordered by their line."""
        assert _first(tmp_path, "spec.yaml", text) == expected

    _PHASE = ("  - name: {name}\n    role: w\n    producer: [x]\n    artifact: a\n"
              "    gate: {gate}\n")

    def test_workflow_type_error_before_a_text_gate(self, tmp_path: Path) -> None:
        """A bad max_attempts in the first phase comes before a text gate in the second."""
        text = ("workflow: wf\nphases:\n"
                + self._PHASE.format(name="a", gate="{command: [x]}") + "    max_attempts: 0\n"
                + self._PHASE.format(name="b", gate="please check it"))
        assert _first(tmp_path, "wf.yaml", text) == (
            "8: unusable workflow: phases.0.max_attempts: must be an integer >= 1")

    def test_workflow_text_gate_before_a_type_error(self, tmp_path: Path) -> None:
        """A text gate in the first phase comes before a bad max_attempts in the second."""
        text = ("workflow: wf\nphases:\n"
                + self._PHASE.format(name="a", gate="please check it")
                + self._PHASE.format(name="b", gate="{command: [x]}") + "    max_attempts: 0\n")
        assert _first(tmp_path, "wf.yaml", text).startswith(
            "7: unusable workflow: phases.0.gate: a gate is an object")

    def test_one_problem_is_unchanged(self, tmp_path: Path) -> None:
        """A single problem reads as before."""
        assert _first(tmp_path, "spec.yaml", "mandatory_checkpoints:\n  - checkpoint_id: c\n") \
            == "2: unusable spec: mandatory_checkpoints.0.must_precede: required"
