"""forbidden, limits, obligations, flows and severity: judged by replay, answered by the
guard from the same engine, over native trajectories and real Claude Code and tau2 runs."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest

from roadcheck.conformance import CompiledSpec, parse_spec, replay_trajectory
from roadcheck.errors import SpecError
from roadcheck.events import Trajectory
from roadcheck.guard import Guard
from roadcheck.ingest import load

from ..conftest import DATA

SPEC_BASE = {"mandatory_checkpoints": [], "handoff_contracts": []}


def _run(doc: dict[str, Any], events: list[dict[str, Any]]) -> Any:
    return replay_trajectory(parse_spec(doc), Trajectory(
        [{"seq": i, **e} for i, e in enumerate(events, 1)]))


def _codes(result: Any) -> list[tuple[int | None, str]]:
    return [(f.seq, str(f.code)) for f in result.reasons if f.code != "trajectory-conforms"]


def _guarded(doc: dict[str, Any], traj: Trajectory) -> Counter[tuple[int | None, str]]:
    guard = Guard(parse_spec(doc))
    found: Counter[tuple[int | None, str]] = Counter()
    for event in traj.events:
        decision = guard.check(event)
        found.update((r.seq, str(r.code)) for r in decision.reasons)
        guard.observe(event)
    return found


def _agree(doc: dict[str, Any], traj: Trajectory) -> list[tuple[int | None, str]]:
    """Replay's blocking findings, checked equal to the guard's, event for event."""
    result = replay_trajectory(parse_spec(doc), traj)
    want = _codes(result)
    assert _guarded(doc, traj) == Counter(want)
    return want


def _native(events: list[dict[str, Any]]) -> Trajectory:
    return Trajectory([{"seq": i, **e} for i, e in enumerate(events, 1)])


def _act(tool: str, **data: Any) -> dict[str, Any]:
    return {"event": "action", "action_type": tool, **data}


FINAL = {"event": "final", "task_success": True}
PUSH_FORCE = {"id": "no-force-push", "when": {
    "action_type": "Bash", "command": {"words": ["git", "push", "--force"]}}}
REFUND = {"id": "big-refund", "unless": "manager",
          "when": {"action_type": "refund", "args": {"amount": {"gt": 1000}}}}


class TestForbidden:
    def test_forbidden_action_blocks(self) -> None:
        traj = _native([_act("Bash", command="git push origin main"),
                        _act("Bash", command="git push --force origin main"), FINAL])
        assert _agree({"forbidden": [PUSH_FORCE]}, traj) == [(2, "forbidden-action")]

    def test_unless_checkpoint_licenses_one_action(self) -> None:
        big = _act("refund", args={"amount": 2000})
        traj = _native([_act("refund", args={"amount": 50}),
                        _act("refund", args={"amount": "5000"}),
                        {"event": "checkpoint", "checkpoint_id": "manager"}, big, big, FINAL])
        assert _agree({"forbidden": [REFUND]}, traj) == [(2, "forbidden-action"),
                                                         (5, "forbidden-action")]

    def test_guard_asks_for_the_unless_checkpoint_and_approval_licenses(self) -> None:
        guard = Guard({"forbidden": [REFUND, PUSH_FORCE]})
        call = _act("refund", args={"amount": "5000"})
        asked = guard.check(call)
        assert (asked.verdict, asked.missing) == ("ask", ("manager",))
        guard.approve(asked, "boss")
        assert guard.check(call).allowed
        denied = guard.check(_act("Bash", command="git push -f --force"))
        assert denied.verdict == "deny" and denied.reasons[0].location.rule_id == "no-force-push"

    def test_derived_unless(self) -> None:
        """A derive rule can give the checkpoint: a user's yes."""
        doc = {"forbidden": [REFUND], "derive": [
            {"checkpoint_id": "manager",
             "when": {"event": "message", "role": "user", "text": {"regex": "(?i)approved"}}}]}
        traj = _native([{"event": "message", "role": "user", "text": "approved"},
                        _act("refund", args={"amount": 5000}),
                        _act("refund", args={"amount": 5000}), FINAL])
        assert _agree(doc, traj) == [(3, "forbidden-action")]


class TestLimits:
    def test_the_one_beyond_is_blocked_each_time(self) -> None:
        doc = {"limits": [{"id": "mail", "when": {"action_type": "send_email"}, "at_most": 2}]}
        traj = _native([_act("send_email")] * 4 + [FINAL])
        assert _agree(doc, traj) == [(3, "limit-exceeded"), (4, "limit-exceeded")]

    def test_at_most_zero_and_message(self) -> None:
        result = _run({"limits": [{"id": "none", "when": {"action_type": "x"}, "at_most": 0}]},
                      [_act("x"), FINAL])
        assert result.reasons[0].message == ("rule 'none': 'x' at seq 1 is match 1 of a rule "
                                             "that allows at most 0")


class TestObligations:
    DOC: ClassVar[dict[str, Any]] = {"obligations": [
        {"id": "smoke", "after": {"action_type": "deploy"},
         "require": {"action_type": "smoke_test", "ok": True}}]}

    def test_unmet_at_final(self) -> None:
        traj = _native([_act("deploy"), _act("smoke_test", error="timeout"), FINAL])
        assert _agree(self.DOC, traj) == [(3, "obligation-unmet")]

    def test_met_and_reopened(self) -> None:
        met = _native([_act("deploy"), _act("smoke_test", exit_code=0), FINAL])
        assert _agree(self.DOC, met) == []
        again = _native([_act("deploy"), _act("smoke_test"), _act("deploy"), FINAL])
        assert _agree(self.DOC, again) == [(4, "obligation-unmet")]

    def test_guard_lists_open_obligations_and_denies_the_end(self) -> None:
        guard = Guard(self.DOC)
        guard.observe(_act("deploy"))
        owed = guard.open_obligations()
        assert [(o.rule_id, o.seq) for o in owed] == [("smoke", 1)]
        assert str(owed[0]) == ("obligation-unmet: rule 'smoke': the event at seq 1 obliges an "
                                'event matching {"action_type":"smoke_test","ok":true} before '
                                "the run ends")
        assert guard.check(FINAL).verdict == "deny"
        guard.observe(_act("smoke_test"))
        assert guard.open_obligations() == [] and guard.check(FINAL).allowed


class TestFlows:
    SESSION: ClassVar[dict[str, Any]] = {"flows": [
        {"id": "mail-out", "source": {"action_type": "read_inbox"},
         "sink": {"action_type": "send_email",
                  "args": {"to": {"not": {"regex": "@corp\\.example$"}}}},
         "unless": "yes"}]}

    def test_session_sink_after_source(self) -> None:
        traj = _native([_act("send_email", args={"to": "a@b.org"}), _act("read_inbox"),
                        _act("send_email", args={"to": "me@corp.example"}),
                        _act("send_email", args={"to": "a@b.org"}),
                        {"event": "checkpoint", "checkpoint_id": "yes"},
                        _act("send_email", args={"to": "a@b.org"}), _act("read_inbox"),
                        _act("send_email", args={"to": "a@b.org"}), FINAL])
        assert _agree(self.SESSION, traj) == [(4, "tainted-flow"), (8, "tainted-flow")]

    def test_value_flow_follows_returned_values(self) -> None:
        doc = {"flows": [{"id": "secret", "match": "value", "source": {"action_type": "vault"},
                          "sink": {"action_type": "http"}}]}
        traj = _native([_act("vault", result={"key": "s3cr3t-key", "n": 42, "short": "ab"}),
                        _act("http", args={"body": "ab"}), _act("http", args={"q": 41}),
                        _act("http", args={"body": "token=s3cr3t-key"}),
                        _act("http", args={"n": 42}), FINAL])
        assert _agree(doc, traj) == [(4, "tainted-flow"), (5, "tainted-flow")]


class TestSeverity:
    def test_warn_makes_a_warning_on_every_kind(self) -> None:
        warn = {"severity": "warn"}
        doc = {"forbidden": [{**PUSH_FORCE, **warn}],
               "mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "deploy", **warn}],
               "handoff_contracts": [{"from_agent": "a", "to_agent": "b",
                                      "required_fields": ["x"], **warn}]}
        events = [_act("Bash", command="git push --force"), _act("deploy"),
                  {"event": "handoff", "from_agent": "a", "to_agent": "b", "payload": {}}, FINAL]
        result = _run(doc, events)
        assert result.verdict == "PASS" and result.exit == 0
        assert sorted(str(w.code) for w in result.warnings) == [
            "checkpoint-skipped", "forbidden-action", "handoff-contract-violation"]
        assert all(w.severity == "warn" for w in result.warnings)
        assert _guarded(doc, _native(events)) == Counter()

    def test_old_specs_round_trip_with_severity(self) -> None:
        doc = {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "x",
                                          "severity": "warn"}],
               "limits": [{"id": "l", "when": {"action_type": "x"}, "at_most": 1}]}
        spec = parse_spec(doc)
        assert parse_spec(spec.to_dict()) == spec


class TestRuleTable:
    def test_every_rule_is_listed_with_id_kind_and_selectors(self) -> None:
        doc = {"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "x"}],
               "forbidden": [PUSH_FORCE],
               "obligations": [{"id": "o", "after": {"action_type": "a"},
                                "require": {"action_type": "b"}}]}
        table = CompiledSpec(parse_spec(doc)).rule_table
        assert [(r.id, r.kind, r.at) for r in table] == [
            ("c", "mandatory_checkpoint", "mandatory_checkpoints.0"),
            ("no-force-push", "forbidden", "forbidden.0"), ("o", "obligation", "obligations.0")]
        assert dict(table[2].selectors)["require"] == ({"action_type": "b"},)

    def test_counts_say_which_rules_matched(self) -> None:
        from roadcheck.conformance import Replayer

        compiled = CompiledSpec(parse_spec({"forbidden": [PUSH_FORCE, REFUND]}))
        r = Replayer(compiled)
        r.feed_all(_native([_act("Bash", command="git push --force"), FINAL]).events)
        assert r.gate_count == [1, 0]


class TestRefused:
    @pytest.mark.parametrize(("doc", "message"), [
        ({"forbidden": [{"id": "a", "when": {"event": "message"}}]},
         "forbidden.0.when.event: a guarded action selector selects actions"),
        ({"limits": [{"id": "a", "when": {"action_type": "x"}, "at_most": -1}]},
         "limits.0.at_most: must be an integer >= 0"),
        ({"limits": [{"id": "a", "when": {"action_type": "x"}}]},
         "limits.0.at_most: required"),
        ({"forbidden": [{"id": "a", "when": {"action_type": "x"}}],
          "limits": [{"id": "a", "when": {"action_type": "x"}, "at_most": 1}]},
         "limits.0.id: rule id 'a' is already used by forbidden.0"),
        ({"flows": [{"id": "f", "source": {"action_type": "x"}, "sink": {"action_type": "y"},
                     "match": "values"}]}, "flows.0.match"),
        ({"obligations": [{"id": "o", "after": {"action_type": "x"}, "requires": {}}]},
         "unknown key 'requires'; did you mean 'require'?"),
        ({"forbidden": [{"id": "a", "when": {"action_type": "x"}, "severity": "warning"}]},
         "forbidden.0.severity"),
    ])
    def test_problem_named_with_its_field(self, doc: dict[str, Any], message: str) -> None:
        with pytest.raises(SpecError, match=re.escape(message)):
            parse_spec(doc)


class TestRealFormats:
    def test_claude_code_session(self) -> None:
        """A limit on web searches and a flow from fetched pages into files."""
        _, entries = load(str(DATA / "coding/claude-code/agent-aac57f5.jsonl"))
        traj = next(iter(entries))
        assert isinstance(traj, Trajectory)
        doc = {"limits": [{"id": "searches", "when": {"action_type": "WebSearch"}, "at_most": 5}],
               "obligations": [{"id": "fetch-after-search", "after": {"action_type": "WebSearch"},
                                "require": {"action_type": "WebFetch", "ok": True}}]}
        found = _agree(doc, traj)
        assert found == [(s, "limit-exceeded") for s in (8,)]

    def test_claude_code_paths_and_flows(self) -> None:
        _, entries = load(str(DATA / "coding/claude-code/tool_heavy.jsonl"))
        traj = next(iter(entries))
        assert isinstance(traj, Trajectory)
        js = {"file_path": {"glob": "/home/**/assets/**/*.js"}}
        doc = {"forbidden": [{"id": "no-js-read", "when": {"action_type": "Read", "args": js}}],
               "flows": [{"id": "web-then-shell", "source": {"action_type": "WebSearch"},
                          "sink": {"action_type": {"in": ["Bash", "WebFetch"]}}}]}
        assert _agree(doc, traj) == [(13, "forbidden-action"), (14, "tainted-flow")]

    def test_tau2_runs(self) -> None:
        """Over 50 airline runs: at most one booking, cancellations need the user's yes,
        and a reservation id looked up is a value that flows into a change."""
        _, entries = load(str(DATA / "tau/tau2/gpt-4o-airline-50.json.gz"))
        runs = [t for t in entries if isinstance(t, Trajectory)]
        doc = {"limits": [{"id": "one-booking", "when": {"action_type": "book_reservation"},
                           "at_most": 0}],
               "forbidden": [{"id": "cancel", "when": {"action_type": "cancel_reservation"},
                              "unless": "yes"}],
               "derive": [{"checkpoint_id": "yes", "when": {
                   "event": "message", "role": "user", "text": {"regex": "(?i)\\byes\\b"}}}],
               "flows": [{"id": "looked-up", "match": "value",
                          "source": {"action_type": "get_reservation_details", "ok": True},
                          "sink": {"action_type": {"regex": "^update_reservation"}}}]}
        total: Counter[str] = Counter()
        for traj in runs:
            total.update(code for _, code in _agree(doc, traj))
        assert total["limit-exceeded"] == 14
        assert total["tainted-flow"] >= 10
        assert 0 < total["forbidden-action"] < 18


class TestPropagationLive:
    def test_guard_denies_the_handoff_that_completes_the_second_hop(self) -> None:
        """Replay blocks a value relayed unverified over 2 handoffs; the guard denies that
        handoff before it happens, naming the chain as replay does."""
        doc = {"handoff_contracts": [{"from_agent": "a", "to_agent": "b"}]}
        hops = [("a", "b"), ("b", "c"), ("c", "d")]
        events = [{"event": "handoff", "from_agent": s, "to_agent": d,
                   "payload": {"total": 512, "ok": {"value": 1, "verified": True}}}
                  for s, d in hops] + [FINAL]
        traj = _native(events)
        result = replay_trajectory(parse_spec(doc), traj)
        assert _codes(result) == [(3, "unverified-claim-propagated-3-hops")]
        guard = Guard(doc)
        guard.observe(events[0])
        second = guard.check(events[1])
        assert second.verdict == "deny"
        assert [str(r.code) for r in second.reasons] == ["unverified-claim-propagated-2-hops"]
        assert second.reasons[0].message == (
            "field 'total'=512 entered unverified at a->b (seq 1) and crossed 2 handoffs "
            "without anyone verifying it, the last at b->c (seq 2)")
        guard.observe(events[1])
        last = guard.check(events[2])
        assert last.reasons[0].message == result.reasons[0].message


class TestSpecFile:
    def test_unknown_key_in_a_rule_names_file_line_and_field(self, tmp_path: Path) -> None:
        """A misspelt key of a new rule is refused, exit 2, on one line with its place."""
        from click.testing import CliRunner

        from roadcheck.cli import cli

        spec = tmp_path / "spec.yaml"
        spec.write_text("limits:\n  - id: mail\n    when: {action_type: send_email}\n"
                        "    at_most: 3\nforbidden:\n  - id: push\n"
                        "    when: {action_type: Bash, args: {force: {eq: true}}}\n")
        traj = tmp_path / "t.jsonl"
        traj.write_text('{"seq": 1, "event": "final", "task_success": true}\n')
        out = CliRunner().invoke(cli, ["replay", str(spec), str(traj)])
        assert out.exit_code == 2
        assert f"{spec}:7: unusable spec: forbidden.0.when.args.force: unknown key 'eq'" in (
            out.output)
