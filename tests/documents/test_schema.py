"""``roadcheck schema KIND``: JSON Schemas generated from the structs the loader reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.documents.loader import decode
from roadcheck.documents.schema import KINDS, render_schema
from roadcheck.evidence.manifest import params_digest
from roadcheck.evidence.record import FIELDS, GATE_FIELDS, GENESIS, seal

from ..conftest import DATA, EXAMPLES


def _doc(path: Path) -> Any:
    return decode(path.read_bytes(), str(path), "document")


def _record() -> dict[str, Any]:
    return seal({"run_id": "r1", "workflow": "w", "phase": "make", "attempt": 1, "iteration": 0,
                 "verdict": "pass",
                 "gate": {"kind": "command", "summary": "gate command exited 0", "detail": "",
                          "exit_code": 0, "output": ""},
                 "artifact": {"path": "a.txt", "sha256": "0" * 64, "bytes": 3},
                 "role": "writer", "identity": "alice", "started_at": "2026-08-10T00:00:00Z",
                 "finished_at": "2026-08-10T00:00:01Z",
                 "params_sha256": params_digest({"doc": "a.txt"})}, GENESIS)


EXAMPLE_DOCS: dict[str, list[Any]] = {
    "spec": [_doc(EXAMPLES / "spec.json"), _doc(EXAMPLES / "tau" / "airline.yaml"),
             _doc(EXAMPLES / "tau" / "retail.yaml"), _doc(DATA / "frameworks" / "spec.yaml"),
             *(_doc(p) for p in sorted((EXAMPLES / "recipes").glob("*.yaml")))],
    "contract": [_doc(EXAMPLES / "accept" / "contract.yaml"),
                 _doc(DATA / "accept" / "contract.json"),
                 _doc(DATA / "accept" / "contract_schema.yaml")],
    "workflow": [_doc(EXAMPLES / "doc_pipeline" / "workflow.yaml"),
                 _doc(EXAMPLES / "agent_producer" / "workflow.yaml"),
                 _doc(EXAMPLES / "agent_producer" / "cli_workflow.yaml")],
    "checkpoint": [_doc(EXAMPLES / "resume" / "video" / "checkpoint.yaml"),
                   _doc(EXAMPLES / "resume" / "chain" / "checkpoint.yaml")],
    "event": [json.loads(line) for p in sorted(EXAMPLES.glob("fixture_*.jsonl"))
              if p.name != "fixture_bad_input.jsonl"
              for line in p.read_text().splitlines() if line.strip()],
    "evidence": [_record()],
}


def _validator(kind: str) -> jsonschema.Draft202012Validator:
    doc = json.loads(render_schema(kind))
    jsonschema.Draft202012Validator.check_schema(doc)
    return jsonschema.Draft202012Validator(doc)


class TestSchemas:
    """Each kind's schema accepts the repository's documents and refuses what the loader does."""

    def test_every_kind_has_examples(self) -> None:
        """The examples cover every kind."""
        assert set(EXAMPLE_DOCS) == set(KINDS)
        assert all(EXAMPLE_DOCS.values())

    @pytest.mark.parametrize("kind", sorted(KINDS))
    def test_examples_validate(self, kind: str) -> None:
        """Every example document of the kind satisfies its schema."""
        validator = _validator(kind)
        for doc in EXAMPLE_DOCS[kind]:
            errors = [e.message for e in validator.iter_errors(doc)]
            assert errors == [], doc

    @pytest.mark.parametrize("kind", sorted(set(KINDS) - {"event"}))
    def test_unknown_key_is_refused(self, kind: str) -> None:
        """A top-level key the kind does not declare fails the schema."""
        assert not _validator(kind).is_valid({**EXAMPLE_DOCS[kind][0], "bogus": 1})

    @pytest.mark.parametrize(("kind", "doc"), [
        ("spec", {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "s",
                                             "scope": None}]}),
        ("spec", {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "s",
                                             "voided_by": [{"yields_trn": True}]}]}),
        ("spec", {"derive": [{"checkpoint_id": "c", "when": {"yields_turn": "true"}}]}),
        ("spec", {"forbidden": [{"id": "f", "when": {"action_type": "x"}, "unles": "c"}]}),
        ("spec", {"limits": [{"id": "l", "when": {"action_type": "x"}}]}),
        ("spec", {"flows": [{"id": "f", "source": {"action_type": "x"},
                             "sink": {"args": {"to": {"gtt": 1}}}}]}),
        ("spec", {"obligations": [{"id": "o", "after": {"ok": "yes"},
                                   "require": {"action_type": "x"}}]}),
        ("workflow", {"workflow": "w", "phases": [{
            "name": "a", "role": "r", "producer": ["x"], "artifact": "a",
            "gate": {"command": ["x"], "schema": "s.json"}}]}),
        ("workflow", {"workflow": "w", "phases": [{
            "name": "a", "role": "r", "artifact": "a", "gate": {"command": ["x"]},
            "producer": {"agent": {"provider": "openai", "model": "m", "api_key": "sk"}}}]}),
        ("checkpoint", {"observed_at": "2026-08-10T00:00:00Z"}),
        ("event", {"seq": 1, "event": "action"}),
        ("event", {"seq": 1, "event": "actoin", "action_type": "x"}),
        ("event", {"seq": 1, "event": "handoff", "from_agent": "a", "to_agent": "b",
                   "payload": {}, "agent": 3}),
    ])
    def test_refusals_match_the_loader(self, kind: str, doc: dict[str, Any]) -> None:
        """Nulls for defaults, misspelt selectors, two gate kinds, missing required keys."""
        assert not _validator(kind).is_valid(doc)

    def test_the_spec_schema_declares_the_rule_language(self) -> None:
        """The rules, severity, and the selector's objects, ok and combinators are declared."""
        doc = json.loads(render_schema("spec"))
        top = doc["$defs"]["SpecDoc"]["properties"]
        for key in ("forbidden", "limits", "obligations", "flows"):
            assert key in top
        text = render_schema("spec")
        for word in ('"severity"', '"at_most"', '"unless"', '"not_in"', '"glob"', '"exists"',
                     '"ok"', '"payload"', '"any"'):
            assert word in text, word

    def test_gate_kinds_by_key(self) -> None:
        """A workflow gate is chosen by the key that names it; no kind field is written."""
        phase = {"name": "a", "role": "r", "producer": ["x"], "artifact": "a"}
        v = _validator("workflow")
        for gate in ({"command": ["x"]}, {"schema": "s.json"}, {"callable": "m:f"},
                     {"score": ["x"], "threshold": 1}, {"accept": "c.yaml"}):
            assert v.is_valid({"workflow": "w", "phases": [{**phase, "gate": gate}]}), gate

    def test_evidence_fields_match_the_store(self) -> None:
        """The evidence schema declares exactly the fields the stores write."""
        doc = json.loads(render_schema("evidence"))
        assert list(doc["$defs"]["EvidenceRecord"]["properties"]) == sorted(FIELDS)
        assert list(doc["$defs"]["GateReport"]["properties"]) == sorted(GATE_FIELDS)


class TestCommand:
    """The CLI command."""

    @pytest.mark.parametrize("kind", sorted(KINDS))
    def test_prints_deterministic_schema(self, kind: str) -> None:
        """roadcheck schema KIND prints the schema, the same bytes each time, sorted keys."""
        first = CliRunner().invoke(cli, ["schema", kind])
        second = CliRunner().invoke(cli, ["schema", kind])
        assert first.exit_code == 0 and first.stdout == second.stdout
        assert first.stdout == json.dumps(json.loads(first.stdout), indent=2,
                                          sort_keys=True, ensure_ascii=False) + "\n"

    def test_unknown_kind_is_exit_2(self) -> None:
        """A kind that does not exist is a usage error."""
        assert CliRunner().invoke(cli, ["schema", "nope"]).exit_code == 2
