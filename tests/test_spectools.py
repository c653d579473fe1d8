"""``roadcheck spec check``, ``diff`` and ``explain``: the tools that test a spec."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.conformance import iter_replay, parse_spec
from roadcheck.conformance.coverage import RULE_KINDS
from roadcheck.conformance.diff import diff_specs
from roadcheck.conformance.explain import explain
from roadcheck.conformance.spec import load_spec
from roadcheck.conformance.speccheck import check_spec, lint_spec

from .conftest import EXAMPLES

HERE = EXAMPLES / "spec_testing"
RUNS = HERE / "runs"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _write(path: Path, lines: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return str(path)


def _spec(tmp_path: Path, doc: dict[str, Any], name: str = "spec.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return str(path)


BASH = [{"seq": 1, "event": "action", "action_type": "Bash", "command": "ls"},
        {"seq": 2, "event": "action", "action_type": "Bash", "command": "ls -l"},
        {"seq": 3, "event": "final", "task_success": True}]


class TestSpecAlone:
    def test_a_clean_spec_passes(self) -> None:
        code, out, _ = _run("spec", "check", str(HERE / "spec.yaml"))
        assert code == 0
        assert "result: OK (0 errors, 0 warnings, 0 failed examples)" in out

    def test_a_selector_that_can_never_match(self) -> None:
        spec = parse_spec({"mandatory_checkpoints": [{
            "checkpoint_id": "c", "must_precede": "x",
            "voided_by": [{"event": "message", "action_type": "Bash"}]}]})
        [p] = lint_spec(spec)
        assert (p.level, p.code, p.loc) == ("error", "never-matches",
                                            ("mandatory_checkpoints", 0, "voided_by", 0))
        assert "'action_type' is a field of action events" in p.message

    def test_fields_of_two_event_types(self) -> None:
        spec = parse_spec({"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "x"}],
                           "derive": [{"checkpoint_id": "c", "when": {
                               "checkpoint_id": "a", "action_type": "b"}}]})
        assert [p.code for p in lint_spec(spec)] == ["never-matches"]

    def test_a_derive_no_rule_needs_is_unreachable(self, tmp_path: Path) -> None:
        path = _spec(tmp_path, {
            "mandatory_checkpoints": [{"checkpoint_id": "tests_passed", "must_precede": "x"}],
            "derive": [{"checkpoint_id": "test_passed", "when": {"event": "message"}}]})
        code, out, _ = _run("spec", "check", path)
        assert code == 1
        line = next(x for x in out.splitlines() if "error[unreachable]" in x)
        assert line.startswith(f"  error[unreachable]: {path}:")
        assert ("derive.0.checkpoint_id: derives checkpoint "
                "'test_passed', which no mandatory checkpoint requires; it changes nothing "
                "(did you mean tests_passed?)") in line

    def test_an_empty_confirmed_by_is_unreachable(self) -> None:
        spec = parse_spec({"mandatory_checkpoints": [{"checkpoint_id": "c", "must_precede": "x",
                                                      "confirmed_by": []}]})
        assert [(p.level, p.code) for p in lint_spec(spec)] == [("error", "unreachable")]

    def test_close_names_warn(self) -> None:
        spec = parse_spec({"mandatory_checkpoints": [
            {"checkpoint_id": "manager_approval", "must_precede": "refund"},
            {"checkpoint_id": "manager_aproval", "must_precede": "Refund"}]})
        found = lint_spec(spec)
        assert {p.code for p in found} == {"close-names"}
        assert {p.level for p in found} == {"warning"}
        assert any("action type 'refund' is close to 'Refund'" in p.message for p in found)
        assert any("checkpoint id 'manager_aproval' is close to 'manager_approval'" in p.message
                   for p in found)


class TestCoverage:
    def test_the_typo_names_the_name_that_occurs(self) -> None:
        code, out, _ = _run("spec", "check", str(HERE / "typo.yaml"), str(RUNS))
        assert code == 1
        assert ("action_type 'bash' never occurs; did you mean Bash? 4 occurrences"
                in out)
        assert "irreversible action 'delete_repo' ran once and no rule guards it" in out

    def test_counts_per_rule(self) -> None:
        check = check_spec(load_spec(HERE / "spec.yaml"), sorted(str(p) for p in RUNS.iterdir()))
        assert check.coverage is not None
        rows = {".".join(map(str, r.probe.loc)): (r.reached, r.runs, r.matched, r.failed)
                for r in check.coverage.rules}
        assert rows == {
            "mandatory_checkpoints.0": (2, 2, 2, 1),
            "mandatory_checkpoints.0.voided_by.0": (6, 3, 1, 0),
            "mandatory_checkpoints.1": (1, 1, 1, 0),
            "derive.0": (6, 3, 2, 0),
        }
        assert check.exit == 0

    def test_every_section_of_the_spec_has_a_rule_kind(self) -> None:
        """A spec section no kind covers would be a rule spec check cannot see."""
        from roadcheck.documents.spec import SpecDoc

        sections = set(SpecDoc.__struct_fields__) - {"examples"}
        assert {k.section for k in RULE_KINDS} == sections

    def test_destructive_hint_counts_as_irreversible(self, tmp_path: Path) -> None:
        run = _write(tmp_path / "r.jsonl", [
            {"seq": 1, "event": "action", "action_type": "mcp__db__drop",
             "annotations": {"destructiveHint": True}},
            {"seq": 2, "event": "action", "action_type": "x"},
            {"seq": 3, "event": "final", "task_success": True}])
        spec = _spec(tmp_path, {"mandatory_checkpoints": [{"checkpoint_id": "c",
                                                           "must_precede": "x"}]})
        code, out, _ = _run("spec", "check", spec, run, "--format", "json")
        doc = json.loads(out)
        assert code == 1
        assert doc["unguarded_irreversible"] == {"mcp__db__drop": 1}

    def test_a_guarded_irreversible_action_is_fine(self, tmp_path: Path) -> None:
        run = _write(tmp_path / "r.jsonl", [
            {"seq": 1, "event": "action", "action_type": "x", "irreversible": True},
            {"seq": 2, "event": "final", "task_success": True}])
        spec = _spec(tmp_path, {"mandatory_checkpoints": [{"checkpoint_id": "c",
                                                           "must_precede": "x"}]})
        code, out, _ = _run("spec", "check", spec, run)
        assert code == 0, out

    def test_a_contract_never_crossed(self, tmp_path: Path) -> None:
        run = _write(tmp_path / "r.jsonl", BASH)
        spec = _spec(tmp_path, {"handoff_contracts": [{"from_agent": "a", "to_agent": "b"}]})
        code, out, _ = _run("spec", "check", spec, run)
        assert code == 1
        assert "handoff_contracts.0: handoff a->b: never reached in 1 trajectory" in out

    def test_json_is_deterministic(self) -> None:
        args = ("spec", "check", str(HERE / "typo.yaml"), str(RUNS), "--format", "json")
        first, second = _run(*args), _run(*args)
        assert first == second
        doc = json.loads(first[1])
        assert doc["exit"] == 1
        assert [p["code"] for p in doc["problems"]] == [
            "close-names", "unreachable", "unguarded-irreversible"]

    def test_a_trajectory_that_does_not_read_is_exit_2(self) -> None:
        code, out, err = _run("spec", "check", str(HERE / "spec.yaml"),
                              str(EXAMPLES / "fixture_bad_input.jsonl"))
        assert code == 2
        assert out == ""
        assert err.startswith("error[bad-input]: ")
        assert "fixture_bad_input.jsonl: line 2: unparseable JSON" in err
        assert err.count("\n") == 1

    def test_a_bad_spec_is_exit_2(self, tmp_path: Path) -> None:
        path = _spec(tmp_path, {"mandatory_checkpoints": [{"checkpoint_id": "c",
                                                           "must_precede": "x", "scop": "each"}]})
        code, _, err = _run("spec", "check", path)
        assert code == 2
        assert err.startswith(f"error[bad-input]: {path}:6: unusable spec: ")
        assert "scop" in err


class TestExamples:
    def _copy(self, tmp_path: Path, examples: list[dict[str, Any]]) -> str:
        shutil.copytree(RUNS, tmp_path / "runs")
        doc = {"mandatory_checkpoints": [{
            "checkpoint_id": "tests_passed", "scope": "each",
            "must_precede": {"action_type": "Bash", "command": {"words": ["git", "push"]}},
            "voided_by": [{"event": "action", "action_type": "Edit"}]}],
            "derive": [{"checkpoint_id": "tests_passed", "when": {
                "event": "action", "action_type": "Bash", "command": {"words": ["pytest"]}}}],
            "examples": examples}
        return _spec(tmp_path, doc)

    def test_examples_that_hold(self) -> None:
        check = check_spec(load_spec(HERE / "spec.yaml"))
        assert [(e.verdict, e.got_verdict, e.ok) for e in check.examples] == [
            ("PASS", "PASS", True), ("BLOCK", "BLOCK", True)]

    def test_an_example_that_fails_is_exit_1(self, tmp_path: Path) -> None:
        path = self._copy(tmp_path, [{"trajectory": "runs/push_after_edit.jsonl",
                                      "verdict": "PASS"}])
        code, out, _ = _run("spec", "check", path)
        assert code == 1
        assert ("FAIL  examples.0 runs/push_after_edit.jsonl: expected PASS, got BLOCK "
                "['checkpoint-skipped']") in out

    def test_reasons_are_compared(self, tmp_path: Path) -> None:
        path = self._copy(tmp_path, [{"trajectory": "runs/push_after_edit.jsonl",
                                      "verdict": "BLOCK",
                                      "reasons": ["checkpoint-after-action"]}])
        assert _run("spec", "check", path)[0] == 1

    def test_a_missing_example_file_is_exit_2(self, tmp_path: Path) -> None:
        path = self._copy(tmp_path, [{"trajectory": "runs/nope.jsonl", "verdict": "PASS"}])
        code, out, err = _run("spec", "check", path)
        assert code == 2
        assert out == ""
        assert err.startswith(f"error[bad-input]: {path}:")
        assert "examples.0.trajectory: no file" in err

    def test_a_bad_verdict_is_a_spec_error(self, tmp_path: Path) -> None:
        path = self._copy(tmp_path, [{"trajectory": "runs/nope.jsonl", "verdict": "OK"}])
        code, _, err = _run("spec", "check", path)
        assert code == 2
        assert "examples.0.verdict" in err

    def test_replay_ignores_examples(self) -> None:
        with_examples = load_spec(HERE / "spec.yaml")
        doc = with_examples.to_dict()
        doc.pop("examples")
        without = parse_spec(doc)
        for path in sorted(RUNS.iterdir()):
            a, b = next(iter_replay(with_examples, [str(path)])), next(
                iter_replay(without, [str(path)]))
            assert (a.verdict, a.reasons, a.warnings) == (b.verdict, b.reasons, b.warnings)


class TestDiff:
    def test_a_widening_is_exit_1(self) -> None:
        code, out, _ = _run("diff", str(HERE / "spec.yaml"), str(HERE / "loose.yaml"), str(RUNS))
        assert code == 1
        assert "newly allowed (widening): 1" in out
        assert "push_after_edit.jsonl: BLOCK -> PASS" in out

    def test_allow_widening(self) -> None:
        code, _, _ = _run("diff", str(HERE / "spec.yaml"), str(HERE / "loose.yaml"), str(RUNS),
                          "--allow-widening")
        assert code == 0

    def test_newly_blocked_is_not_a_widening(self) -> None:
        code, out, _ = _run("diff", str(HERE / "loose.yaml"), str(HERE / "spec.yaml"), str(RUNS),
                            "--format", "json")
        doc = json.loads(out)
        assert code == 0
        assert doc["counts"] == {"blocked": 1, "allowed": 0, "reasons": 0, "same": 2}
        [change] = doc["changes"]
        assert (change["group"], change["old_verdict"], change["new_verdict"]) == (
            "blocked", "PASS", "BLOCK")
        assert [g["code"] for g in change["added"]] == ["checkpoint-skipped"]

    def test_changed_reasons(self, tmp_path: Path) -> None:
        run = _write(tmp_path / "r.jsonl", BASH)
        old = parse_spec({"mandatory_checkpoints": [{"checkpoint_id": "a",
                                                     "must_precede": "Bash"}]})
        new = parse_spec({"mandatory_checkpoints": [{"checkpoint_id": "b",
                                                     "must_precede": "Bash"}]})
        diff = diff_specs(old, new, [run])
        [change] = diff.changes
        assert change.group == "reasons"
        assert diff.exit == 0

    def test_the_same_spec_changes_nothing(self) -> None:
        spec = load_spec(HERE / "spec.yaml")
        diff = diff_specs(spec, spec, sorted(str(p) for p in RUNS.iterdir()))
        assert (diff.trajectories, diff.changes) == (3, [])

    def test_a_trajectory_that_does_not_read_is_exit_2(self) -> None:
        code, out, err = _run("diff", str(HERE / "spec.yaml"), str(HERE / "loose.yaml"),
                              str(EXAMPLES / "fixture_bad_input.jsonl"))
        assert (code, out) == (2, "")
        assert "fixture_bad_input.jsonl: line 2:" in err

    def test_a_bad_new_spec_is_exit_2(self, tmp_path: Path) -> None:
        bad = _spec(tmp_path, {"mandatory_checkpoints": []})
        code, _, err = _run("diff", str(HERE / "spec.yaml"), bad, str(RUNS))
        assert code == 2
        assert err.startswith(f"error[bad-input]: {bad}")


class TestExplain:
    def test_the_condition_that_failed(self) -> None:
        code, out, _ = _run("explain", str(HERE / "spec.yaml"),
                            str(RUNS / "push_after_edit.jsonl"), "--seq", "3")
        assert code == 0
        assert ("mandatory_checkpoints.0 (checkpoint 'tests_passed' before "
                "'{\"action_type\":\"Bash\",\"command\":{\"words\":[\"git\",\"push\"]}}'): "
                "guarded action without a valid checkpoint: checkpoint 'tests_passed' at seq 1 "
                "was voided by seq 2") in out
        assert '    FAIL command: {"words":["pytest"]}, the event has "git push origin main"' in out
        assert '    FAIL action_type: "Edit", the event has "Bash"' in out

    def test_a_licensed_action(self) -> None:
        ex = explain(load_spec(HERE / "spec.yaml"), str(RUNS / "push_after_tests.jsonl"), 2)
        [rule] = [r for r in ex.rules if r.loc == ("mandatory_checkpoints", 0)]
        assert rule.outcome == "guarded action, licensed by checkpoint 'tests_passed' at seq 1"

    def test_a_voiding_event(self) -> None:
        ex = explain(load_spec(HERE / "spec.yaml"), str(RUNS / "push_after_edit.jsonl"), 2)
        [rule] = [r for r in ex.rules if r.loc == ("mandatory_checkpoints", 0)]
        assert rule.outcome == "voids checkpoint 'tests_passed'"

    def test_a_checkpoint_and_who_confirmed_it(self) -> None:
        ex = explain(load_spec(HERE / "spec.yaml"), str(RUNS / "delete_repo.jsonl"), 1)
        [rule] = [r for r in ex.rules if r.loc == ("mandatory_checkpoints", 1)]
        assert rule.outcome == "records checkpoint 'owner_ok'"
        assert rule.details == ['confirmed_by "owner" is one of ["owner"]']

    def test_a_handoff_contract(self) -> None:
        code, out, _ = _run("explain", str(EXAMPLES / "spec.json"),
                            str(EXAMPLES / "fixture_broken_contract.jsonl"), "--seq", "2",
                            "--format", "json")
        assert code == 0
        doc = json.loads(out)
        outcomes = {r["field"]: r["outcome"] for r in doc["rules"]}
        assert outcomes["handoff_contracts.0"].startswith("contract")

    def test_no_such_seq_is_exit_2(self) -> None:
        code, out, err = _run("explain", str(HERE / "spec.yaml"),
                              str(RUNS / "push_after_edit.jsonl"), "--seq", "9")
        assert (code, out) == (2, "")
        assert err == ("error[bad-input]: --seq: no event has seq 9 in "
                       f"{RUNS / 'push_after_edit.jsonl'} (its seqs run 1..4)\n")

    def test_a_trajectory_that_does_not_read_is_exit_2(self) -> None:
        code, _, err = _run("explain", str(HERE / "spec.yaml"),
                            str(EXAMPLES / "fixture_bad_input.jsonl"), "--seq", "1")
        assert code == 2
        assert "fixture_bad_input.jsonl: line 2:" in err

    @pytest.mark.parametrize("args", [["--seq", "x"], []])
    def test_a_bad_seq_is_a_usage_error(self, args: list[str]) -> None:
        code, _, err = _run("explain", str(HERE / "spec.yaml"),
                            str(RUNS / "push_after_edit.jsonl"), *args)
        assert code == 2
        assert err.startswith("error[usage]: explain: ")


class TestReplayStrict:
    def test_the_summary_names_them_without_strict(self) -> None:
        code, out, _ = _run("replay", str(HERE / "typo.yaml"), str(RUNS))
        assert code == 0
        lines = out.splitlines()
        assert lines[-4].startswith("unreached: mandatory_checkpoints.0 (checkpoint "
                                    "'tests_passed' before ")
        assert lines[-4].endswith(") was reached by no trajectory")
        assert lines[-3] == ("unguarded: irreversible action 'delete_repo' ran once and no "
                             "rule guards it")
        assert lines[-2] == "summary: 3 PASS, 0 BLOCK, 0 ERROR -> overall exit 0"

    def test_strict_fails(self) -> None:
        code, out, _ = _run("replay", "--strict", str(HERE / "typo.yaml"), str(RUNS))
        assert code == 1
        assert "summary: 3 PASS, 0 BLOCK, 0 ERROR -> overall exit 1" in out

    @pytest.mark.parametrize("fmt", ["json", "junit"])
    def test_strict_in_other_formats(self, fmt: str) -> None:
        code, out, _ = _run("replay", "--strict", "--format", fmt, str(HERE / "typo.yaml"),
                            str(RUNS))
        assert code == 1
        if fmt == "json":
            summary = json.loads(out)["summary"]
            assert summary["unreached"] == ["mandatory_checkpoints.0"]
            assert summary["unguarded_irreversible"] == {"delete_repo": 1}
            assert summary["exit"] == 1

    def test_a_rule_one_trajectory_reached_is_not_named(self) -> None:
        code, out, _ = _run("replay", "--strict", str(HERE / "spec.yaml"), str(RUNS))
        assert "unreached:" not in out and "unguarded:" not in out
        assert code == 1  # push_after_edit blocks

    def test_nothing_to_name_leaves_the_summary_as_it_was(self) -> None:
        code, out, _ = _run("replay", "--strict", "--format", "json", str(HERE / "spec.yaml"),
                            str(RUNS / "push_after_tests.jsonl"), str(RUNS / "delete_repo.jsonl"))
        assert code == 0
        assert set(json.loads(out)["summary"]) == {"pass", "block", "error", "warn", "exit"}

    def test_an_unreadable_trajectory_reaches_nothing_and_hides_nothing(self) -> None:
        code, out, _ = _run("replay", str(HERE / "spec.yaml"),
                            str(EXAMPLES / "fixture_bad_input.jsonl"),
                            str(RUNS / "delete_repo.jsonl"))
        assert code == 2
        assert ("unreached: mandatory_checkpoints.0 (checkpoint 'tests_passed' before "
                in out)

    def test_the_chunks_of_jobs_fold_the_same(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """``--jobs 2`` folds each chunk's reach in its worker: the report is the same."""
        import roadcheck.conformance.batch as batch

        monkeypatch.setattr(batch, "_FILES_PER_WORKER", 1)
        args = ["replay", "--format", "json", str(HERE / "typo.yaml"), str(RUNS)]
        one, two = _run(*args), _run(*args, "--jobs", "2")
        assert one == two
        assert "unguarded_irreversible" in one[1]


class TestRealFormat:
    """The tools read a Claude Code session as replay does."""

    CC = EXAMPLES / "frameworks" / "claude-code"

    def test_spec_check_over_sessions(self) -> None:
        check = check_spec(load_spec(self.CC / "spec.yaml"),
                           [str(self.CC / "approved.jsonl"), str(self.CC / "missing.jsonl")])
        assert check.coverage is not None
        [rule] = [r for r in check.coverage.rules if r.probe.loc == ("mandatory_checkpoints", 0)]
        assert (rule.reached, rule.runs, rule.matched, rule.failed) == (2, 2, 1, 1)
        assert check.coverage.names["action_type"]["Bash"] == 4
        assert check.exit == 0

    def test_explain_a_push_without_approval(self) -> None:
        ex = explain(load_spec(self.CC / "spec.yaml"), str(self.CC / "missing.jsonl"), 5)
        [rule] = [r for r in ex.rules if r.loc == ("mandatory_checkpoints", 0)]
        assert rule.outcome.startswith("guarded action without a valid checkpoint")
        [derive] = [r for r in ex.rules if r.loc == ("derive", 0)]
        assert derive.selectors[0].conditions[0] == (
            False, 'event: "message", the event has "action"')


class TestRuleLanguage:
    """The rules on what actions may do are covered and explained like the others."""

    RECIPES = EXAMPLES / "recipes"

    def test_coverage_counts_a_forbidden_rule(self) -> None:
        check = check_spec(load_spec(self.RECIPES / "no_force_push.yaml"),
                           [str(self.RECIPES / "coding.jsonl")])
        rows = {".".join(map(str, r.probe.loc)): (r.reached, r.matched, r.failed)
                for r in check.coverage.rules}
        assert rows == {"forbidden.0": (1, 1, 1)}

    def test_explain_says_what_a_forbidden_rule_found(self) -> None:
        code, out, _ = _run("explain", str(self.RECIPES / "no_force_push.yaml"),
                            str(self.RECIPES / "coding.jsonl"), "--seq", "7")
        assert code == 0, out
        assert "forbidden.0 (forbidden 'no-force-push'): forbidden-action: rule " in out
        assert ('ok   command: {"words":["git","push","--force"]}, the event has '
                '"git commit --amend --no-edit && git push -f origin main"') in out

    def test_explain_asks_an_args_condition_as_a_whole(self) -> None:
        from roadcheck.conformance.explain import explain_selector
        from roadcheck.events import Event

        event = Event.from_dict({"seq": 1, "agent": "a", "event": "action",
                                 "action_type": "refund", "args": {"amount": "1500"}})
        look = explain_selector("when", {"action_type": "refund",
                                         "args": {"amount": {"gt": 1000}}}, event)
        assert look.matched
        assert look.conditions[-1] == (
            True, 'args: {"amount":{"gt":1000}}, the event has {"amount":"1500"}')
