"""Tests for the workflow spec: gate kinds, required fields and the spec-time role guard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.errors import SpecError
from roadcheck.harness import Workflow, parse_workflow_spec
from roadcheck.harness.model import PLACEHOLDERS


def _doc(**gate_or_phase: Any) -> dict[str, Any]:
    phase = {"name": "make", "role": "writer", "producer": ["true"], "artifact": "a.txt",
             "gate": {"command": ["true"]}}
    phase.update(gate_or_phase)
    return {"workflow": "w", "phases": [phase]}


class TestWorkflowSpec:
    """Loading workflow documents."""

    @pytest.mark.parametrize(("gate", "kind"), [
        ({"command": ["pytest", "-q"]}, "command"),
        ({"schema": "out.schema.json"}, "schema"),
        ({"callable": "gates:check"}, "callable"),
        ({"score": ["grader", "{artifact}"], "threshold": 0.8}, "score"),
    ])
    def test_each_gate_kind_loads(self, gate: dict[str, Any], kind: str) -> None:
        """Every available gate kind parses into its model."""
        spec = parse_workflow_spec(_doc(gate=gate))
        assert spec.phases[0].gate_kind == kind

    def test_defaults(self) -> None:
        """max_attempts defaults to 3 and a phase reviews nothing."""
        phase = parse_workflow_spec(_doc()).phases[0]
        assert phase.max_attempts == 3
        assert phase.reviews is None

    def test_yaml_file_loads(self, tmp_path: Path) -> None:
        """A YAML workflow file loads the same as JSON."""
        path = tmp_path / "wf.yaml"
        path.write_text("workflow: w\nphases:\n  - {name: a, role: r, producer: [x], "
                        "artifact: a.txt, gate: {command: [pytest]}}\n", encoding="utf-8")
        assert Workflow.load(path).name == "w"

    @pytest.mark.parametrize(("doc", "needle"), [
        (_doc(gate={"prompt": "please check the work"}), "unknown gate kind ('prompt')"),
        (_doc(gate="please confirm the work is done"), "a natural-language check is not a gate"),
        (_doc(gate={"command": ["x"], "schema": "s.json"}), "a gate has one kind"),
        (_doc(gate={"score": ["grader"]}), "phases.0.gate.threshold: required"),
        (_doc(producer=[]), "phases.0.producer: must be a non-empty list"),
        (_doc(role=None), "phases.0.role"),
        (_doc(producer=["{nope}"]), "unknown placeholder(s) {nope}"),
        (_doc(name="../evil"), "phases.0.name: a phase name is 1-64 letters"),
        ({"workflow": "w", "phases": []}, "phases: must not be empty"),
        ({"phases": _doc()["phases"]}, "workflow: required"),
    ])
    def test_bad_spec_is_one_line_naming_the_file(self, doc: dict[str, Any], needle: str) -> None:
        """A bad spec raises one SpecError line that names the file and the problem."""
        with pytest.raises(SpecError) as info:
            parse_workflow_spec(doc, "flows/wf.json")
        message = info.value.location_message()
        assert message.startswith("flows/wf.json: unusable workflow: ")
        assert needle in message
        assert "\n" not in message

    def test_reviews_naming_no_phase(self) -> None:
        """A review of a phase that does not exist is refused."""
        doc = _doc()
        doc["phases"].append({**doc["phases"][0], "name": "check", "role": "qa",
                              "reviews": "ghost"})
        with pytest.raises(SpecError, match="reviews 'ghost', which names no phase"):
            parse_workflow_spec(doc, "wf.json")

    def test_same_role_review_is_not_expressible(self) -> None:
        """A review phase under the reviewed phase's role is rejected at load."""
        doc = _doc()
        doc["phases"].append({**doc["phases"][0], "name": "check", "reviews": "make"})
        with pytest.raises(SpecError, match="role guard: phase 'check' reviews 'make' under "
                                            "the same role 'writer'"):
            parse_workflow_spec(doc, "wf.json")

    def test_duplicate_phase_names(self) -> None:
        """Two phases with one name are refused."""
        doc = _doc()
        doc["phases"].append(doc["phases"][0])
        with pytest.raises(SpecError, match="two phases are named 'make'"):
            parse_workflow_spec(doc)


class TestRunCommandBadSpec:
    """``roadcheck run`` on an unusable workflow."""

    @pytest.mark.parametrize("doc", [
        _doc(gate={"llm_judge": "is it done?"}),
        _doc(artifact=None),
        {"workflow": "w", "phases": [*_doc()["phases"],
                                     {**_doc()["phases"][0], "name": "r", "role": "qa",
                                      "reviews": "nothing"}]},
    ])
    def test_exit_2_with_one_line(self, tmp_path: Path, doc: dict[str, Any]) -> None:
        """Unknown gate kind, missing field or a dangling review exits 2 with one line."""
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        result = CliRunner().invoke(cli, ["run", str(path), "--as", "writer",
                                          "--runs-dir", str(tmp_path / "runs")])
        assert result.exit_code == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1
        assert lines[0].startswith(f"error[bad-input]: {path}:")
        assert "unusable workflow:" in lines[0]

    def test_unreadable_yaml_names_line(self, tmp_path: Path) -> None:
        """Broken YAML exits 2 naming the file and line."""
        path = tmp_path / "bad.yaml"
        path.write_text("workflow: w\nphases: [\n  - a: b\n", encoding="utf-8")
        result = CliRunner().invoke(cli, ["run", str(path), "--as", "writer"])
        assert result.exit_code == 2
        assert result.stderr.startswith(f"error[bad-input]: {path}:")


class TestParams:
    """Declared workflow params: defaults, required ones, and names that are not theirs."""

    def test_declarations(self) -> None:
        """A param is declared by its default text or an object; no default means required."""
        doc = {**_doc(producer=["x", "{a}", "{b}", "{c}"]),
               "params": {"a": "one", "b": {"default": "two", "description": "the b"},
                          "c": {"description": "set per run"}}}
        spec = parse_workflow_spec(doc)
        assert spec.params == {"a": "one", "b": "two"}
        assert spec.declared_params == frozenset({"a", "b", "c"})
        assert spec.required_params == frozenset({"c"})

    @pytest.mark.parametrize("name", sorted(PLACEHOLDERS))
    def test_a_placeholder_name_is_refused(self, name: str) -> None:
        """A param named like a built-in placeholder is refused at load time."""
        with pytest.raises(SpecError, match=f"params.{name}: '{name}' is a built-in "
                                            "placeholder"):
            parse_workflow_spec({**_doc(), "params": {name: "x"}}, "wf.json")

    @pytest.mark.parametrize(("params", "needle"), [
        ({"a": None}, "params.a: must be"),
        ({"a": 3}, "params.a: must be a string or an object, got an integer"),
        ({"a": {"defualt": "x"}}, "unknown key 'defualt'; did you mean 'default'?"),
        ({"a": {"default": None}}, "params.a.default: is null"),
    ])
    def test_bad_declarations(self, params: dict[str, Any], needle: str) -> None:
        """A param declaration is text or {default, description}; nothing else."""
        with pytest.raises(SpecError) as info:
            parse_workflow_spec({**_doc(), "params": params}, "wf.json")
        assert needle in info.value.message

    def test_undeclared_placeholder_is_refused(self) -> None:
        """A template naming a param nobody declared is refused."""
        with pytest.raises(SpecError, match=r"unknown placeholder\(s\) \{doc\}"):
            parse_workflow_spec(_doc(producer=["x", "{doc}"]))
