"""The guard in memory: observe, check, ask or deny, bound approvals, the decorator."""

from __future__ import annotations

from typing import Any

import pytest

import roadcheck
from roadcheck.conformance import parse_spec
from roadcheck.errors import SpecError, TraceError
from roadcheck.events import Event, args_digest
from roadcheck.guard import Decision, Guard, GuardDenied

SEND = {"mandatory_checkpoints": [
    {"checkpoint_id": "confirm_with_user", "must_precede": "send_report", "scope": "each",
     "consume": True, "confirmed_by": ["owner", "cfo"], "binds": {"tool": True, "args": True}}]}


def _send(to: str) -> dict[str, Any]:
    return {"event": "action", "action_type": "send_report", "args": {"to": to}}


def _yes(to: str, who: str = "cfo") -> dict[str, Any]:
    return {"event": "checkpoint", "checkpoint_id": "confirm_with_user", "confirmed_by": who,
            "tool": "send_report", "args_sha256": args_digest({"to": to})}


class TestCheck:
    def test_missing_checkpoint_asks_and_names_what_would_satisfy_it(self) -> None:
        """No approval yet: ask, with replay's reason and who may give the checkpoint."""
        d = Guard(SEND).check(_send("cfo"))
        assert d.verdict == "ask" and not d.allowed
        assert [r.code for r in d.reasons] == ["checkpoint-skipped"]
        assert d.reasons[0].seq == 1
        assert d.satisfy[0].startswith("confirm_with_user by one of cfo, owner, naming tool "
                                       "send_report, args_sha256 sha256:")
        assert d.missing == ("confirm_with_user",)

    def test_check_changes_nothing(self) -> None:
        """Asking twice gives the same answer; only observe moves the session."""
        g = Guard(SEND)
        g.observe(_yes("cfo"))
        assert g.check(_send("cfo")).allowed and g.check(_send("cfo")).allowed
        assert g.last_seq == 1

    def test_bound_approval_licenses_its_call_only_and_is_consumed(self) -> None:
        """A yes for send_report(to=cfo) does not license to=everyone; consume spends it."""
        g = Guard(SEND)
        g.observe(_yes("cfo"))
        other = g.check(_send("everyone"))
        assert other.verdict == "ask"
        assert "approves another call" in other.reasons[0].message
        ok = g.check(_send("cfo"))
        assert ok.allowed and ok.approvers == ("cfo",)
        g.observe(_send("cfo"))
        again = g.check(_send("cfo"))
        assert again.verdict == "ask" and "already used" in again.reasons[0].message

    def test_approve_binds_the_yes_to_the_asked_call(self) -> None:
        """approve(decision, by) records checkpoints naming that call, and only that call."""
        g = Guard(SEND)
        asked = g.check(_send("cfo"))
        (cp,) = g.approve(asked, "owner")
        assert cp.data["tool"] == "send_report" and cp.data["args_sha256"] == asked.args_sha256
        assert g.check(_send("cfo")).approvers == ("owner",)
        assert g.check(_send("everyone")).verdict == "ask"

    def test_approval_by_someone_the_rule_does_not_accept_licenses_nothing(self) -> None:
        """approve records what happened; confirmed_by still decides whether it counts."""
        g = Guard(SEND)
        g.approve(g.check(_send("cfo")), "intern")
        assert g.check(_send("cfo")).verdict == "ask"

    def test_approver_who_cannot_confirm_is_denied(self) -> None:
        """When the person at hand is not among confirmed_by, asking them cannot help: deny."""
        assert Guard(SEND, approver="user").check(_send("cfo")).verdict == "deny"
        assert Guard(SEND, approver="cfo").check(_send("cfo")).verdict == "ask"

    def test_wrong_confirmer_is_not_a_licence(self) -> None:
        """A checkpoint by someone outside confirmed_by leaves the call unlicensed."""
        g = Guard(SEND)
        g.observe(_yes("cfo", who="intern"))
        d = g.check(_send("cfo"))
        assert d.verdict == "ask" and "not one of ['cfo', 'owner']" in d.reasons[0].message

    def test_broken_handoff_contract_is_denied(self) -> None:
        """A handoff missing a required field is denied: no approval mends the payload."""
        g = Guard({"handoff_contracts": [{"from_agent": "a", "to_agent": "b",
                                          "required_fields": ["rows"]}]})
        d = g.check({"event": "handoff", "from_agent": "a", "to_agent": "b", "payload": {}})
        assert d.verdict == "deny" and d.reasons[0].code == "handoff-contract-violation"

    def test_malformed_event_is_denied_never_raised(self) -> None:
        """check on an event replay would refuse answers deny bad-input."""
        d = Guard(SEND).check({"event": "action"})
        assert d.verdict == "deny" and d.reasons[0].code == "bad-input"

    def test_unguarded_and_non_action_events_are_allowed(self) -> None:
        """A tool no rule guards, and a message, are allowed."""
        g = Guard(SEND)
        assert g.check({"event": "action", "action_type": "read"}).allowed
        assert g.check({"event": "message", "role": "user", "text": "hi"}).allowed

    def test_log_receives_every_decision(self) -> None:
        """The log callback sees each decision check makes."""
        seen: list[Decision] = []
        g = Guard(SEND, log=seen.append)
        g.check(_send("cfo"))
        assert [d.verdict for d in seen] == ["ask"]


class TestGuarding:
    def test_names_the_rules_that_guard_an_action(self) -> None:
        """send_report is guarded by confirm_with_user; another tool and a message by nothing."""
        g = Guard(SEND)
        assert g.guarding(_send("cfo")) == ("confirm_with_user",)
        assert g.guarding({"event": "action", "action_type": "lookup"}) == ()
        assert g.guarding({"event": "message", "role": "user", "content": "hi"}) == ()

    def test_selector_rules_count(self) -> None:
        """A rule guarding by selector names the actions its selector matches."""
        g = Guard({"mandatory_checkpoints": [
            {"checkpoint_id": "push_ok",
             "must_precede": {"action_type": "Bash", "command": {"words": ["git", "push"]}}}]})
        assert g.guarding({"event": "action", "action_type": "Bash",
                           "command": "git push"}) == ("push_ok",)
        assert g.guarding({"event": "action", "action_type": "Bash", "command": "ls"}) == ()


class TestObserve:
    def test_seq_defaults_to_next_and_must_increase(self) -> None:
        """A dict without seq takes the next one; an Event going back in seq is refused."""
        g = Guard(SEND)
        assert g.observe(_yes("cfo")).seq == 1
        with pytest.raises(TraceError, match="seq 1 does not follow seq 1"):
            g.observe(Event.make(1, "message", role="user", text="x"))

    def test_nothing_follows_final(self) -> None:
        """After the final event the session is over."""
        g = Guard(SEND)
        g.observe({"event": "final", "task_success": True})
        with pytest.raises(TraceError, match="final"):
            g.observe(_yes("cfo"))

    def test_bad_spec_fails_closed(self) -> None:
        """A spec that binds nothing, or binds args without the tool, is refused."""
        rule = {"checkpoint_id": "c", "must_precede": "x"}
        with pytest.raises(SpecError, match="binds names nothing"):
            Guard({"mandatory_checkpoints": [{**rule, "binds": {}}]})
        with pytest.raises(SpecError, match=r"binds\.args.*tool: true"):
            Guard({"mandatory_checkpoints": [{**rule, "binds": {"args": True}}]})
        with pytest.raises(SpecError, match="bind"):
            Guard({"mandatory_checkpoints": [{**rule, "binds": {"tools": True}}]})

    def test_binds_round_trips_through_the_spec_document(self) -> None:
        """to_dict writes binds back so that parse_spec reads an equal spec."""
        spec = parse_spec(SEND)
        assert parse_spec(spec.to_dict()) == spec


class TestDigest:
    def test_digest_is_canonical(self) -> None:
        """Key order and spacing do not change the digest; a value does."""
        assert args_digest({"a": 1, "b": [1, 2]}) == args_digest({"b": [1, 2], "a": 1})
        assert args_digest({"to": "cfo"}) != args_digest({"to": "everyone"})
        assert args_digest({"to": "cfo"}) == ("sha256:bf0df7e8328fcae3406fa23c698078cd0ca3ff7d"
                                             "bfdd629ca90401205cf53a61")


    def test_arguments_json_cannot_hold_are_never_licensed(self) -> None:
        """An integer beyond 64 bits has no digest: replay blocks, check denies bad-input."""
        huge = {"event": "action", "action_type": "send_report", "args": {"n": 10**30}}
        run = roadcheck.replay(SEND, [{"seq": 1, **_yes("cfo")}, {"seq": 2, **huge},
                                  {"seq": 3, "event": "final", "task_success": True}])
        assert run.results[0].verdict == "BLOCK"
        d = Guard(SEND).check(huge)
        assert d.verdict == "deny" and d.reasons[0].code == "bad-input"
        with pytest.raises(ValueError, match="not JSON"):
            args_digest({"n": 10**30})


class TestDecorator:
    def test_denied_call_does_not_run_and_allowed_call_is_observed(self) -> None:
        """@guard.tool raises GuardDenied before the body runs, and observes a call that ran."""
        g = roadcheck.Guard(SEND)
        sent: list[str] = []

        @g.tool("send_report")
        def send_report(to: str, subject: str = "report") -> str:
            sent.append(to)
            return f"sent to {to}"

        with pytest.raises(roadcheck.GuardDenied) as info:
            send_report("cfo")
        assert sent == [] and info.value.decision.verdict == "ask"
        g.observe(_yes("cfo"))
        with pytest.raises(GuardDenied):  # the default argument is part of the call
            send_report(to="cfo", subject="other")
        g.observe({**_yes("cfo"), "args_sha256": args_digest({"to": "cfo",
                                                               "subject": "report"})})
        assert send_report(to="cfo") == "sent to cfo"
        assert sent == ["cfo"]
        last = g.records[-1]
        assert last["action_type"] == "send_report" and last["result"] == "sent to cfo"
        with pytest.raises(GuardDenied):  # consumed
            send_report(to="cfo")

    def test_a_call_that_raises_is_observed_with_its_error(self) -> None:
        """An exception in the tool is recorded as the action's error and re-raised."""
        g = Guard({"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "other"}]})

        @g.tool("boom")
        def boom() -> None:
            raise RuntimeError("no")

        with pytest.raises(RuntimeError):
            boom()
        assert g.records[-1]["error"] == "RuntimeError: no"
