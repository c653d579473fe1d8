"""Properties: for arbitrary results, contracts and traces the gate never raises, and
accepts exactly the results an independent reading of the contract allows."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roadcheck.acceptance import Claim, Contract, parse_contract, verify
from roadcheck.errors import SpecError

from ..conftest import examples

FIELDS = ["status", "summary", "target_id", "amount", "id"]
VERBS = ["sent", "created", "updated", "re-sent"]
TOOLS = ["send_invoice", "create_record", "read_record"]
WORDS = [*VERBS, "SENT", "Created", "resent", "sentinel", "invoice", "sent.", "cust_1", ""]
TYPES = ["string", "integer", "number", "boolean", "array", "object", "null"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                    st.floats(allow_nan=False, allow_infinity=False, width=16),
                    st.sampled_from(WORDS), st.text(max_size=4))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=8)
phrases = st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join)
field_values = st.one_of(scalars, phrases, json_values)
objects = st.dictionaries(st.sampled_from(FIELDS), field_values, max_size=5)
results = st.one_of(objects, objects.map(json.dumps), json_values, st.text(max_size=20),
                    objects.map(lambda o: json.dumps(o)[:-1]))

type_specs = st.one_of(st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1,
                                                        max_size=3, unique=True))
claims = st.one_of(st.sampled_from(TOOLS), st.builds(
    Claim, st.sampled_from(TOOLS),
    st.dictionaries(st.sampled_from(["id", "to"]), st.sampled_from(FIELDS), max_size=2)))
contracts = st.builds(
    Contract,
    required=st.dictionaries(st.sampled_from(FIELDS), type_specs, max_size=3),
    enums=st.dictionaries(st.sampled_from(FIELDS), st.lists(scalars, max_size=4), max_size=2),
    claims=st.dictionaries(st.sampled_from(VERBS), claims, max_size=3),
)
call_results = st.one_of(
    st.none(), scalars,
    st.fixed_dictionaries({"ok": st.booleans()}),
    st.fixed_dictionaries({"error": st.one_of(st.none(), st.text(max_size=3))}),
    st.fixed_dictionaries({"is_error": st.booleans()}))
calls = st.fixed_dictionaries(
    {"tool": st.sampled_from(TOOLS)},
    optional={"args": st.dictionaries(st.sampled_from(["id", "to"]), scalars, max_size=2),
              "result": call_results})
traces = st.one_of(st.none(), st.lists(calls, max_size=4))

# Claim-heavy inputs: results that talk, contracts that only bind claims, traces that exist.
claim_results = st.fixed_dictionaries(
    {"status": phrases},
    optional={"summary": phrases, "target_id": st.sampled_from(["c1", "c2", 1, True]),
              "id": st.sampled_from(["c1", "c2", 1, True])})
claim_contracts = st.builds(Contract, claims=st.dictionaries(st.sampled_from(VERBS), claims,
                                                             min_size=1, max_size=3))
claim_calls = st.fixed_dictionaries(
    {"tool": st.sampled_from(TOOLS)},
    optional={"args": st.dictionaries(st.sampled_from(["id", "to"]),
                                      st.sampled_from(["c1", "c2", 1, True, 1.0]), max_size=2),
              "result": call_results})


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__


def same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1 is 1.0."""
    return _kind(a) == _kind(b) and a == b


def has_type(v: Any, name: str) -> bool:
    """The seven JSON types, spelled out independently of the gate."""
    return {
        "string": type(v) is str,
        "integer": type(v) is int,
        "number": type(v) in (int, float),
        "boolean": type(v) is bool,
        "array": type(v) in (list, tuple),
        "object": type(v) is dict,
        "null": v is None,
    }[name]


def errored(call: dict[str, Any]) -> bool:
    r = call.get("result")
    return isinstance(r, dict) and (r.get("error") not in (None, False) or r.get("ok") is False
                                    or r.get("is_error") is True)


def allowed(result: Any, contract: Contract, trace: list[dict[str, Any]] | None) -> bool:
    """Whether the contract allows the result, read straight from the contract's fields."""
    obj = result
    if isinstance(result, str):
        try:
            obj = json.loads(result)
        except ValueError:
            return False
    if not isinstance(obj, dict):
        return False
    for name, spec in contract.required.items():
        names = [spec] if isinstance(spec, str) else spec
        if name not in obj or not any(has_type(obj[name], n) for n in names):
            return False
    for name, values in contract.enums.items():
        if name in obj and not any(same(obj[name], v) for v in values):
            return False
    if trace is None:
        return True
    text = " ".join(v for v in (obj.get("status"), obj.get("summary")) if isinstance(v, str))
    for verb, rule in contract.claims.items():
        assert isinstance(rule, Claim)
        if not re.search(rf"(?<!\w){re.escape(verb)}(?!\w)", text, re.IGNORECASE):
            continue
        if not any(c["tool"] == rule.tool and not errored(c)
                   and all(f in obj and a in c.get("args", {}) and same(c["args"][a], obj[f])
                           for a, f in rule.args.items())
                   for c in trace):
            return False
    return True


@pytest.mark.fuzz
class TestGateProperties:
    """The gate on arbitrary input."""

    @settings(max_examples=examples(400), deadline=None)
    @given(results, contracts, traces)
    def test_accepts_exactly_what_the_contract_allows(self, result: Any, contract: Contract,
                                                      trace: list[dict[str, Any]] | None) -> None:
        """verify never raises, and ACCEPTED holds exactly when the contract allows the result."""
        gate = verify(result, contract, trace=trace, claims_unchecked=True)
        assert gate.accepted == allowed(result, contract, trace)
        assert gate.verdict in ("ACCEPTED", "REJECTED")
        assert all(r.check in ("contract", "claim") for r in gate.reasons)

    @settings(max_examples=examples(400), deadline=None)
    @given(claim_results, claim_contracts, st.lists(claim_calls, max_size=4))
    def test_claims_need_successful_bound_calls(self, result: dict[str, Any], contract: Contract,
                                                trace: list[dict[str, Any]]) -> None:
        """A claimed verb is accepted only with a successful call whose bound arguments match."""
        gate = verify(result, contract, trace=trace)
        assert gate.accepted == allowed(result, contract, trace)

    @settings(max_examples=examples(100), deadline=None)
    @given(results, contracts, traces, st.sampled_from([True, False, None, 0, "x"]))
    def test_a_falsy_probe_always_rejects(self, result: Any, contract: Contract,
                                          trace: list[dict[str, Any]] | None, answer: Any) -> None:
        """A probe's answer can only take an acceptance away, never give one."""
        gate = verify(result, contract, trace=trace, probe=lambda: answer, claims_unchecked=True)
        assert gate.accepted == (bool(answer) and allowed(result, contract, trace))

    @settings(max_examples=examples(300), deadline=None)
    @given(st.dictionaries(st.sampled_from(["required", "enums", "claims", "json_schema",
                                            "claim_requires_action", "other"]),
                           json_values, max_size=4))
    def test_arbitrary_contract_documents_raise_only_spec_error(self, doc: dict[str, Any]) -> None:
        """A contract document is either usable or refused with SpecError, never another error."""
        where = None
        try:
            contract = parse_contract(doc, "contract.yaml")
        except SpecError as exc:
            where = exc.path
        else:
            verify({"status": "sent"}, contract, trace=[])
            where = "contract.yaml"
        assert where == "contract.yaml"
