"""The gate: each check, argument binding, errored calls and the result object."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from roadcheck import verify
from roadcheck.acceptance import Claim, Contract, GateReason, GateResult, load_contract, load_trace
from roadcheck.acceptance.selftest import SELF_TEST_CONTRACT, run_self_test
from roadcheck.errors import SpecError

DATA = Path(__file__).resolve().parent.parent / "data" / "accept"

GOOD = {"status": "created", "target_id": "cust_1001", "summary": "created the record"}
CREATED = [{"tool": "create_record", "args": {"id": "cust_1001"}}]


def fails(result: GateResult) -> list[tuple[str, str]]:
    """The failing reasons as (check, message) pairs."""
    return [(r.check, r.message) for r in result.reasons if not r.ok]


class TestContractCheck:
    """Check 1: parse, object shape, required fields and allow-lists."""

    def test_valid_result_is_accepted(self) -> None:
        """A well-formed, allow-listed, backed result is ACCEPTED with an ok contract reason."""
        r = verify(GOOD, SELF_TEST_CONTRACT, trace=CREATED)
        assert r.verdict == "ACCEPTED"
        assert r.accepted
        assert r.reasons[0] == GateReason(
            True, "contract",
            "result has the contract's shape: 2 required fields typed, 2 allow-lists held")

    def test_json_text_is_parsed(self) -> None:
        """A JSON string (or bytes) is parsed before it is checked."""
        assert verify('{"status": "created", "target_id": "cust_1001"}', SELF_TEST_CONTRACT,
                      trace=CREATED).accepted
        assert verify(b'{"status": "sent", "target_id": "cust_1003"}', SELF_TEST_CONTRACT,
                      claims_unchecked=True).accepted

    def test_invalid_json_gives_the_parser_message_and_skips_the_rest(self) -> None:
        """Broken JSON is REJECTED with the parser's message; claims and probe are not run."""
        called = []
        r = verify('{"status": "created", "target_id": "cust_1001"', SELF_TEST_CONTRACT,
                   trace=[], probe=lambda: called.append(1))
        assert fails(r) == [("contract", "result is not valid JSON: Expecting ',' delimiter: "
                                         "line 1 column 47 (char 46)")]
        assert len(r.reasons) == 1
        assert called == []

    @pytest.mark.parametrize(("value", "kind"), [
        ([1], "an array"), ("[1]", "an array"), (3, "an integer"), (None, "a null"),
        ("true", "a boolean"),
    ])
    def test_non_object_is_rejected(self, value: Any, kind: str) -> None:
        """A result that is not an object is REJECTED naming what it is."""
        assert fails(verify(value, SELF_TEST_CONTRACT, claims_unchecked=True)) == [
            ("contract", f"result is {kind}, expected a JSON object")]

    def test_missing_and_mistyped_fields(self) -> None:
        """Each missing field and each wrong type is its own FAIL."""
        r = verify({"status": 3}, SELF_TEST_CONTRACT, claims_unchecked=True)
        assert fails(r) == [
            ("contract", "field 'status' is integer, expected string"),
            ("contract", "required field 'target_id' is missing"),
            ("contract", "field 'status' = 3 is not on its allow-list "
                         "['created', 'sent', 'updated']"),
        ]

    def test_bool_is_not_an_integer(self) -> None:
        """true does not satisfy integer or number, and 1.5 does not satisfy integer."""
        c = Contract(required={"n": "integer", "x": "number"})
        assert fails(verify({"n": True, "x": False}, c, claims_unchecked=True)) == [
            ("contract", "field 'n' is boolean, expected integer"),
            ("contract", "field 'x' is boolean, expected number")]
        assert not verify({"n": 1.5, "x": 1}, c, claims_unchecked=True).accepted
        assert verify({"n": 1, "x": 1.5}, c, claims_unchecked=True).accepted

    def test_union_type(self) -> None:
        """A union accepts any of its types and names them all when it fails."""
        c = Contract(required={"amount": ["integer", "null"]})
        assert verify({"amount": None}, c, claims_unchecked=True).accepted
        assert fails(verify({"amount": "7"}, c, claims_unchecked=True)) == [
            ("contract", "field 'amount' is string, expected integer or null")]

    def test_allow_list_off_list(self) -> None:
        """A value off the allow-list is REJECTED, naming the value and the list."""
        r = verify({"status": "sent", "target_id": "cust_9999"}, SELF_TEST_CONTRACT,
                   claims_unchecked=True)
        assert fails(r) == [("contract", "field 'target_id' = 'cust_9999' is not on its "
                                         "allow-list ['cust_1001', 'cust_1002', 'cust_1003']")]

    def test_allow_list_compares_like_json(self) -> None:
        """true is not 1, 1 is 1.0, and an array is never on an allow-list."""
        c = Contract(enums={"n": [1]})
        assert not verify({"n": True}, c, claims_unchecked=True).accepted
        assert verify({"n": 1.0}, c, claims_unchecked=True).accepted
        assert not verify({"n": [1]}, c, claims_unchecked=True).accepted

    def test_allow_list_ignores_absent_fields(self) -> None:
        """An allow-list only judges a field that is there; presence is required's job."""
        assert verify({}, Contract(enums={"status": ["sent"]}), claims_unchecked=True).accepted


class TestSchemaCheck:
    """The optional json_schema section."""

    def test_schema_pass_and_fail(self) -> None:
        """Each schema violation is a 'schema' FAIL located by path; a pass is one ok."""
        c = load_contract(DATA / "contract_schema.yaml")
        ok = verify({"status": "sent", "target_id": "cust_1002", "amount": 3}, c,
                    claims_unchecked=True)
        assert [(r.ok, r.check) for r in ok.reasons] == [(True, "contract"), (True, "schema")]
        bad = verify({"status": "sent", "target_id": "c-2", "amount": -1}, c, claims_unchecked=True)
        assert fails(bad) == [
            ("schema", "at $.amount: -1 is less than the minimum of 0"),
            ("schema", "at $.target_id: 'c-2' does not match '^cust_[0-9]{4}$'"),
        ]

    def test_schema_runs_beside_the_contract(self) -> None:
        """Contract and schema reasons are all kept."""
        c = Contract(required={"a": "string"}, json_schema={"required": ["b"]})
        assert fails(verify({}, c, claims_unchecked=True)) == [
            ("contract", "required field 'a' is missing"),
                                        ("schema", "at $: 'b' is a required property")]


class TestClaimCheck:
    """Check 2: each claimed verb must be backed by a call of its tool."""

    def test_claim_without_action(self) -> None:
        """A claimed verb with no call of its tool FAILs and names the tools called."""
        r = verify({"status": "updated", "target_id": "cust_1002"}, SELF_TEST_CONTRACT,
                   trace=[{"tool": "read_record"}])
        assert fails(r) == [("claim", "claims 'updated' but the trace has no 'update_record' "
                                      "call (tools called: ['read_record'])")]

    def test_empty_trace_names_none(self) -> None:
        """With an empty trace the FAIL says no tools were called."""
        r = verify({"status": "sent", "target_id": "cust_1001"}, SELF_TEST_CONTRACT, trace=[])
        assert fails(r)[0][1].endswith("(tools called: none)")

    def test_verbs_match_whole_words_in_any_case(self) -> None:
        """'SENT' in the summary is a claim; 'resent' and 'sentinel' are not."""
        c = Contract(claims={"sent": "send_invoice"})
        assert not verify({"summary": "Invoice SENT."}, c, trace=[]).accepted
        assert verify({"summary": "resent the sentinel"}, c, trace=[]).accepted

    def test_only_status_and_summary_are_read(self) -> None:
        """A verb in another field is not a claim."""
        c = Contract(claims={"sent": "send_invoice"})
        assert verify({"note": "sent"}, c, trace=[]).accepted

    def test_every_claimed_verb_is_checked(self) -> None:
        """Two claimed verbs give two reasons, in the contract's order."""
        r = verify({"status": "created", "summary": "and updated"}, SELF_TEST_CONTRACT,
                   trace=[{"tool": "create_record"}])
        assert [(x.ok, x.check) for x in r.reasons[1:]] == [(True, "claim"), (False, "claim")]

    def test_no_trace_cannot_judge_claims(self) -> None:
        """A contract that checks claims, given no trace, cannot judge: never an ACCEPTED."""
        from roadcheck.errors import InputError

        with pytest.raises(InputError, match="no trace was given") as info:
            verify({"status": "sent", "target_id": "cust_1001"}, SELF_TEST_CONTRACT)
        assert info.value.exit_code == 2

    def test_claims_unchecked_says_so(self) -> None:
        """With claims_unchecked the claim check does not run, and the result says so."""
        r = verify({"status": "sent", "target_id": "cust_1001"}, SELF_TEST_CONTRACT,
                   claims_unchecked=True)
        assert [x.check for x in r.reasons] == ["contract"]
        assert r.accepted
        assert (r.claims_checked, r.unchecked_claims) == (False, ("sent",))
        d = r.to_dict()
        assert (d["claims_checked"], d["unchecked_claims"]) == (False, ["sent"])

    def test_contract_without_claims_needs_no_trace(self) -> None:
        """A contract that checks no claim is judged without a trace, claims_checked true."""
        r = verify({"status": "sent"}, Contract(enums={"status": ["sent"]}))
        assert r.accepted and r.claims_checked

    def test_native_trajectory_as_evidence(self) -> None:
        """A native trajectory's action events are evidence, located by seq."""
        r = verify({"status": "sent", "target_id": "cust_1002"}, SELF_TEST_CONTRACT,
                   trace=load_trace(DATA / "trace_sent.jsonl"))
        assert r.reasons[-1].message == "claim 'sent' is backed by a 'send_invoice' call (seq 2)"


class TestArgumentBinding:
    """Claims whose evidence must be a call with arguments equal to the result's fields."""

    contract = Contract(required={"target_id": "string"},
                        claims={"sent": Claim("send_invoice", args={"id": "target_id"})})
    result: ClassVar[dict[str, str]] = {"status": "sent", "target_id": "cust_1002"}

    def test_matching_call_is_evidence(self) -> None:
        """A call with id equal to target_id backs the claim."""
        r = verify(self.result, self.contract, trace=load_trace(DATA / "trace_sent.jsonl"))
        assert r.accepted
        assert r.reasons[-1].message == ("claim 'sent' is backed by a 'send_invoice' call with "
                                         "id='cust_1002' (seq 2)")

    def test_call_to_another_customer_is_not_evidence(self) -> None:
        """Calls for other customers do not back the claim; the FAIL shows what they had."""
        r = verify(self.result, self.contract,
                   trace=load_trace(DATA / "trace_other_customer.json"))
        assert fails(r) == [("claim", "claims 'sent' but no 'send_invoice' call has "
                                      "id='cust_1002'; the calls had id='cust_1003'; "
                                      "id='cust_1001' (tools called: ['send_invoice'])")]

    def test_call_without_the_argument_is_not_evidence(self) -> None:
        """A call that lacks the bound argument does not back the claim."""
        r = verify(self.result, self.contract, trace=[{"tool": "send_invoice"}])
        assert "; the calls had no id " in fails(r)[0][1]

    def test_types_must_match(self) -> None:
        """An argument 1 does not match a field "1"."""
        c = Contract(claims={"sent": Claim("send_invoice", args={"id": "target_id"})})
        r = verify({"status": "sent", "target_id": "1"}, c,
                   trace=[{"tool": "send_invoice", "args": {"id": 1}}])
        assert not r.accepted

    def test_result_without_the_field(self) -> None:
        """When the result lacks the bound field, no call can be evidence."""
        c = Contract(claims={"sent": Claim("send_invoice", args={"id": "target_id"})})
        r = verify({"status": "sent"}, c, trace=[{"tool": "send_invoice", "args": {"id": "x"}}])
        assert fails(r) == [("claim", "claims 'sent' but the result has no 'target_id' to match "
                                      "a 'send_invoice' call against "
                                      "(tools called: ['send_invoice'])")]

    def test_contract_file_binding(self) -> None:
        """The binding declared in a contract file works the same way."""
        c = load_contract(DATA / "contract.json")
        other = load_trace(DATA / "trace_other_customer.json")
        assert not verify(DATA.joinpath("result_sent.json").read_text(), c, trace=other).accepted


class TestErroredCalls:
    """A call whose recorded result is an error is no evidence of the effect."""

    def test_errored_calls_do_not_back_a_claim(self) -> None:
        """ok: false and is_error calls FAIL the claim, naming where they are."""
        r = verify({"status": "sent", "target_id": "cust_1002"}, SELF_TEST_CONTRACT,
                   trace=load_trace(DATA / "trace_errored.json"))
        assert fails(r) == [("claim", "claims 'sent' but every matching 'send_invoice' call "
                                      "returned an error, at call 1, call 2 "
                                      "(tools called: ['send_invoice'])")]

    @pytest.mark.parametrize("call", [
        {"tool": "send_invoice", "result": {"error": "relay refused"}},
        {"tool": "send_invoice", "result": {"ok": False}},
        {"tool": "send_invoice", "result": {"is_error": True}},
    ])
    def test_each_error_form(self, call: dict[str, Any]) -> None:
        """Each error form on its own rejects the claim."""
        r = verify({"status": "sent", "target_id": "cust_1001"}, SELF_TEST_CONTRACT,
                   trace=[call])
        assert not r.accepted

    def test_a_later_success_is_evidence(self) -> None:
        """A failed attempt followed by a successful one backs the claim."""
        trace = [{"tool": "send_invoice", "result": {"error": "busy"}},
                 {"tool": "send_invoice", "result": {"ok": True}}]
        r = verify({"status": "sent", "target_id": "cust_1001"}, SELF_TEST_CONTRACT, trace=trace)
        assert r.accepted
        assert r.reasons[-1].message.endswith("(call 2)")


class TestProbeCheck:
    """Check 3: the optional read-only probe."""

    def test_truthy_probe_confirms(self) -> None:
        """A truthy probe adds an ok 'probe' reason."""
        r = verify(GOOD, SELF_TEST_CONTRACT, probe=lambda: {"id": 1}, claims_unchecked=True)
        assert r.reasons[-1] == GateReason(True, "probe", "probe confirmed the effect on read-back")

    def test_falsy_probe_is_wrong_effect(self) -> None:
        """A falsy probe REJECTS with wrong-effect."""
        r = verify(GOOD, SELF_TEST_CONTRACT, probe=lambda: None, claims_unchecked=True)
        assert fails(r) == [("probe", "probe found no effect on read-back (wrong-effect)")]

    def test_raising_probe_is_named(self) -> None:
        """A probe that raises REJECTS naming the exception."""
        def probe() -> bool:
            raise ConnectionError("crm is down")
        assert fails(verify(GOOD, SELF_TEST_CONTRACT, probe=probe, claims_unchecked=True)) == [
            ("probe", "probe could not complete: ConnectionError: crm is down")]

    def test_probe_label_is_used(self) -> None:
        """A probe's label attribute names it in the reason."""
        class Probe:
            label = "invoice lookup"

            def __call__(self) -> bool:
                return True
        assert verify(GOOD, SELF_TEST_CONTRACT, probe=Probe(),
                      claims_unchecked=True).reasons[-1].message.startswith(
            "invoice lookup confirmed")

    def test_probe_runs_after_contract_failures(self) -> None:
        """Every applicable check runs: a contract FAIL does not skip the probe."""
        r = verify({"status": "sent", "target_id": "cust_9999"}, SELF_TEST_CONTRACT,
                   probe=lambda: False, claims_unchecked=True)
        assert [x.check for x in r.failures] == ["contract", "probe"]


class TestGateResult:
    """The result object and its public JSON shape."""

    def test_to_dict_shape(self) -> None:
        """to_dict gives verdict, exit and reasons with ok, check and message."""
        d = verify({"status": "x"}, Contract(enums={"status": ["y"]}),
                   claims_unchecked=True).to_dict()
        assert list(d) == ["verdict", "exit", "reasons", "claims_checked"]
        assert d["verdict"] == "REJECTED"
        assert d["exit"] == 1
        assert list(d["reasons"][0]) == ["ok", "check", "message"]

    def test_contract_as_dict_or_path(self) -> None:
        """verify also takes a contract document or a contract path."""
        doc = {"required": {"status": "string"}}
        assert verify({"status": "a"}, doc, claims_unchecked=True).accepted
        assert verify({"status": "sent", "target_id": "cust_1002"},
                      str(DATA / "contract.yaml"),
      claims_unchecked=True).accepted is False  # summary is required

    def test_bad_contract_document_raises(self) -> None:
        """An unusable contract is a SpecError, not a verdict."""
        with pytest.raises(SpecError):
            verify({}, {"required": {"a": "strng"}})

    def test_reason_str(self) -> None:
        """A reason prints as 'ok: ...' or 'FAIL: ...'."""
        assert str(GateReason(False, "claim", "x")) == "FAIL: x"
        assert str(GateReason(True, "claim", "x")) == "ok: x"


class TestSelfTestFixtures:
    """The four built-in fixtures give the verdicts the reference write-up shows."""

    def test_verdicts(self) -> None:
        """Fixture 1 is ACCEPTED; 2, 3 and 4 are REJECTED for their own reasons."""
        cases = run_self_test()
        assert [c.result.verdict for c in cases] == ["ACCEPTED", "REJECTED", "REJECTED",
                                                     "REJECTED"]
        assert all(c.as_expected for c in cases)
        assert [[(r.ok, r.check) for r in c.result.reasons] for c in cases] == [
            [(True, "contract"), (True, "claim")],
            [(False, "contract")],
            [(True, "contract"), (False, "claim")],
            [(False, "contract"), (True, "claim"), (False, "probe")],
        ]
