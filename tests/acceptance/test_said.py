"""Claims in the agent's own words (``said``), checked against the session's calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from roadcheck.acceptance import (
    Contract,
    accept_sessions,
    parse_contract,
    said_at_turn_ends,
    verify_session,
)
from roadcheck.cli import cli
from roadcheck.errors import InputError, SpecError
from roadcheck.events import Trajectory

TESTS = Path(__file__).resolve().parent.parent
RECORDED = TESTS / "data" / "recorded"

EDITS = {"event": "action", "action_type": {"in": ["Edit", "Write"]}}
PYTEST = {"event": "action", "command": {"words": ["pytest"]}}
CONTRACT = {"said": [
    {"id": "tests-pass", "pattern": r"(?i)\btests pass\b", "backed_by": PYTEST,
     "after": EDITS},
    {"id": "pr-opened", "pattern": r"(?i)\bopened PR #(\d+)",
     "backed_by": {"event": "action", "command": {"words": ["gh", "pr", "create"]}},
     "value_in": "result"},
]}


def session(*steps: dict[str, Any], final: str = "done") -> Trajectory:
    events: list[dict[str, Any]] = []
    for i, step in enumerate(steps, 1):
        events.append({"seq": i, "agent": "a", **step})
    n = len(events)
    events.append({"seq": n + 1, "agent": "a", "event": "message", "role": "assistant",
                   "text": final})
    events.append({"seq": n + 2, "agent": "a", "event": "final", "task_success": True})
    return Trajectory(events)


def bash(command: str, **extra: Any) -> dict[str, Any]:
    return {"event": "action", "action_type": "Bash", "command": command,
            "args": {"command": command}, **extra}


def edit(path: str) -> dict[str, Any]:
    return {"event": "action", "action_type": "Edit", "args": {"file_path": path}}


def judge(traj: Trajectory, contract: Any = None) -> list[tuple[bool, str]]:
    if not isinstance(contract, Contract):
        contract = parse_contract(contract or CONTRACT)
    result = verify_session(contract, traj)
    return [(r.ok, r.message) for r in result.reasons]


class TestJudging:
    def test_a_passing_run_after_the_last_edit_backs_the_claim(self) -> None:
        traj = session(edit("app.py"), bash("pytest -q", result="3 passed"),
                       final="All tests pass.")
        assert judge(traj) == [(True, "you said 'tests pass': backed by 'pytest -q' at seq 2")]

    def test_a_failed_last_run_rejects_with_its_error(self) -> None:
        traj = session(bash("pytest -q"), edit("app.py"),
                       bash("pytest -q", error="Exit code 1", exit_code=1),
                       final="The tests pass now.")
        assert judge(traj) == [(False, "you said 'tests pass', but the last such call, "
                                       "'pytest -q' at seq 3, failed: exit 1")]

    def test_a_run_before_the_last_edit_is_stale(self) -> None:
        traj = session(bash("pytest -q"), edit("app.py"), final="tests pass")
        assert judge(traj) == [(False, "you said 'tests pass', but the last such call, "
                                       "'pytest -q' at seq 1, came before 'Edit app.py' at "
                                       "seq 2")]

    def test_a_claim_with_no_call_at_all(self) -> None:
        assert judge(session(final="tests pass")) == [
            (False, "you said 'tests pass', but the session has no call that would back it "
                    "(it records no call at all)")]

    def test_a_value_in_the_claim_must_be_in_the_backing_result(self) -> None:
        created = bash("gh pr create --fill",
                       result="https://github.com/o/r/pull/12\n")
        assert judge(session(created, final="I opened PR #12.")) == [
            (True, "you said 'opened PR #12': backed by 'gh pr create --fill' at seq 1")]
        assert judge(session(created, final="I opened PR #13.")) == [
            (False, "you said 'opened PR #13', but 'gh pr create --fill' at seq 1 has no "
                    "'13' in its result")]
        # a number is matched whole: 1 is not in .../pull/12
        assert not judge(session(created, final="I opened PR #1."))[0][0]

    def test_no_claim_made_is_said_so(self) -> None:
        assert judge(session(bash("ls"), final="I looked around.")) == [
            (True, "the agent's final message makes none of the contract's 2 claims")]

    def test_only_the_final_message_is_read(self) -> None:
        traj = session({"event": "message", "role": "assistant", "text": "tests pass"},
                       final="I could not finish.")
        assert judge(traj)[0][0] is True

    def test_a_session_with_no_message_of_the_agent_is_rejected(self) -> None:
        traj = Trajectory([{"seq": 1, "agent": "a", "event": "action", "action_type": "x"},
                           {"seq": 2, "agent": "a", "event": "final", "task_success": True}])
        assert judge(traj) == [(False, "the contract checks the claims in the agent's final "
                                       "message, and the trace holds no message of the "
                                       "agent's")]


def user(text: str) -> dict[str, Any]:
    return {"event": "message", "role": "user", "text": text}


def said(text: str) -> dict[str, Any]:
    return {"event": "message", "role": "assistant", "text": text}


class TestTurnEnds:
    """Every message that hands a turn back is judged on the session up to it."""

    def test_each_turn_end_is_judged_on_what_came_before_it(self) -> None:
        traj = session(user("fix it"), edit("app.py"), said("Editing."),
                       said("The tests pass."), user("and now?"),
                       bash("pytest -q", result="3 passed"), final="All tests pass.")
        ends = said_at_turn_ends(parse_contract(CONTRACT), traj)
        assert [(e.seq, [(s.ok, s.message) for s in e.shown]) for e in ends] == [
            (4, [(False, "you said 'tests pass', but the session has no call that would "
                         "back it (calls made: Edit)")]),
            (7, [(True, "you said 'tests pass': backed by 'pytest -q' at seq 6")])]

    def test_a_message_followed_by_more_of_the_agents_is_no_turn_end(self) -> None:
        traj = session(said("tests pass"), bash("ls"), final="I looked around.")
        assert [e.seq for e in said_at_turn_ends(parse_contract(CONTRACT), traj)] == [3]

    def test_verify_session_every_turn_names_the_seq(self) -> None:
        traj = session(said("tests pass"), user("ok"), final="I opened PR #3.")
        result = verify_session(parse_contract(CONTRACT), traj, every_turn=True)
        assert [(r.ok, r.message) for r in result.reasons] == [
            (False, "at seq 1: you said 'tests pass', but the session has no call that "
                    "would back it (it records no call at all)"),
            (False, "at seq 3: you said 'opened PR #3', but the session has no call that "
                    "would back it (it records no call at all)")]

    def test_every_turn_with_no_claim_says_how_many_turn_ends(self) -> None:
        traj = session(said("hello"), user("ok"), final="bye")
        result = verify_session(parse_contract(CONTRACT), traj, every_turn=True)
        assert [(r.ok, r.message) for r in result.reasons] == [
            (True, "none of the agent's 2 turn ends makes any of the contract's 2 claims")]

    def test_every_turn_with_no_message_of_the_agent_rejects(self) -> None:
        traj = Trajectory([{"seq": 1, "agent": "a", "event": "action", "action_type": "x"}])
        (only,) = verify_session(parse_contract(CONTRACT), traj, every_turn=True).reasons
        assert not only.ok and "holds no message of the agent's" in only.message


class TestSelectorLists:
    WRITES: ClassVar[list[dict[str, Any]]] = [
        EDITS, {"event": "action", "command": {"regex": r"\s>\s*\w"}}]

    def test_any_selector_of_a_list_backs_the_claim(self) -> None:
        contract = {"said": [{"id": "file", "pattern": r"(?i)created (\S+\.txt)",
                              "backed_by": self.WRITES, "value_in": "args"}]}
        traj = session(bash("echo hi > notes.txt"), final="Created notes.txt")
        assert judge(traj, contract) == [
            (True, "you said 'Created notes.txt': backed by 'echo hi > notes.txt' at seq 1")]

    def test_any_selector_of_an_after_list_makes_a_run_stale(self) -> None:
        contract = {"said": [{"id": "t", "pattern": r"tests pass", "backed_by": PYTEST,
                              "after": self.WRITES}]}
        traj = session(bash("pytest"), bash("echo x > app.py"), final="tests pass")
        assert judge(traj, contract) == [
            (False, "you said 'tests pass', but the last such call, 'pytest' at seq 1, came "
                    "before 'echo x > app.py' at seq 2")]

    def test_the_claim_is_judged_on_the_last_call_naming_its_value(self) -> None:
        contract = {"said": [{"id": "file", "pattern": r"created (\S+\.py)",
                              "backed_by": EDITS, "value_in": "args"}]}
        traj = session(edit("/w/a.py"), edit("/w/b.py"), final="I created a.py")
        assert judge(traj, contract) == [
            (True, "you said 'created a.py': backed by 'Edit /w/a.py' at seq 1")]
        assert judge(session(edit("/w/a.py"), edit("/w/b.py"), final="I created c.py"),
                     contract) == [
            (False, "you said 'created c.py', but 'Edit /w/b.py' at seq 2 has no 'c.py' in "
                    "its args, nor does any such call before it")]

    def test_an_empty_list_is_refused(self) -> None:
        with pytest.raises(SpecError, match=r"said\.0\.backed_by: an empty list of selectors"):
            parse_contract({"said": [{"id": "x", "pattern": "a", "backed_by": []}]})

    def test_a_bad_selector_in_a_list_is_located(self) -> None:
        with pytest.raises(SpecError, match=r"said\.0\.after\.1: unknown key 'action_typ'"):
            parse_contract({"said": [{"id": "x", "pattern": "a", "backed_by": PYTEST,
                                      "after": [EDITS, {"action_typ": "Bash"}]}]})


class TestEveryEditCommitted:
    """ "All changes are committed" needs each edited file in a commit after its edit;
    "I committed the fix" needs a commit after the last edit only."""

    @staticmethod
    def verdict(*steps: dict[str, Any], final: str = "All changes are committed.") -> Any:
        (only,) = judge(session(*steps, final=final), coding_agent())
        return only

    def test_a_file_no_commit_staged_rejects_a_claim_of_all(self) -> None:
        steps = (edit("/w/r/a.py"), edit("/w/r/b.py"),
                 bash("git add a.py && git commit -m 'fix a'"))
        assert self.verdict(*steps) == (
            False, "you said 'are committed', but '/w/r/b.py', edited at seq 2, is in no "
                   "commit after that")
        assert self.verdict(*steps, final="Everything is committed.")[0] is False
        assert self.verdict(*steps, final="I committed after each feature.")[0] is False
        assert self.verdict(*steps, final="I committed the fix.") == (
            True, "you said 'I committed': backed by \"git add a.py && git commit -m 'fix "
                  "a'\" at seq 3")

    @pytest.mark.parametrize("stage", [
        "git add -A && git commit -m x", "git add . && git commit -m x", "git commit -am x",
        "git commit -a -m x", "git add r/ && git commit -m x",
        "git add a.py b.py && git commit -m x", "git add '*.py' && git commit -m x",
        "git commit -m x a.py b.py", "rtk git add -A && rtk git commit -m \"$(cat m)\"",
        "time git add -A && git commit -m x", "sudo -u me git commit -am x",
        "git add a.py b.py && eval \"$CMD\"; git commit -m x"])
    def test_staging_that_holds_every_file_backs_it(self, stage: str) -> None:
        only = self.verdict(edit("/w/r/a.py"), edit("/w/r/b.py"), bash(stage))
        assert only[0] is True, only

    @pytest.mark.parametrize("stage", [
        "eval \"$CMD\"; git commit -m x", "eval 'git add -A'; git commit -m x",
        "$GIT add -A && git commit -m x",
        "echo 'git add -A' | bash; git commit -m x", "bash stage.sh && git commit -m x",
        "git add \"$FILES\" && git commit -m x", "git add -A \"$OPT\" && git commit -m x",
        "git add -p && git commit -m x", "git add --interactive && git commit -m x",
        "git add -n -A && git commit -m x", "git add -A src/ && git commit -m x",
        "git commit --dry-run -am x", "git commit $FLAGS -m x",
        "time echo git add -A; git commit -m x", "command -v git add -A; git commit -m x",
        "git add -A && git reset && git commit -m x",
        "git add -A && git restore --staged a.py && git commit -m x",
        "git stash list && git commit -m x", "git stash show -p && git commit -m x"])
    def test_a_staging_that_cannot_be_shown_stages_nothing(self, stage: str) -> None:
        """A line, or a part of one, whose staging cannot be known before it runs
        stages nothing: "all changes are committed" is backed only by what the session
        shows staged."""
        only = self.verdict(edit("a.py"), edit("b.py"), bash(stage))
        assert only[0] is False, (stage, only)
        assert "'a.py', edited at seq 1, is in no commit after that" in only[1], only

    def test_a_line_the_grammar_cannot_read_stages_nothing(self) -> None:
        only = self.verdict(edit("a.py"), bash("git add -A 'unclosed"), bash("git commit -m x"))
        assert only == (False, "you said 'are committed', but 'a.py', edited at seq 1, is in "
                               "no commit after that")

    def test_a_code_mode_script_that_cannot_be_read_stages_nothing(self) -> None:
        """A code-mode script whose command string does not decode stages nothing."""
        script = ('await tools.exec_command({cmd:"git add -A && git commit -m x\\q"});\n')
        run = {"event": "action", "action_type": "exec", "args": script, "result": "ok"}
        only = self.verdict(edit("a.py"), run)
        assert only[0] is False, only

    def test_a_staging_before_the_last_edit_holds_no_file(self) -> None:
        only = self.verdict(edit("/w/r/a.py"), bash("git add a.py"), edit("/w/r/a.py"),
                            bash("git commit -m x"))
        assert only[0] is False and "'/w/r/a.py', edited at seq 3" in only[1]

    def test_a_file_put_back_holds_no_change(self) -> None:
        only = self.verdict(edit("/w/r/a.py"), edit("/w/r/b.py"),
                            bash("git checkout -- b.py"), bash("git add a.py && git commit -m x"))
        assert only[0] is True, only

    def test_a_failed_commit_commits_nothing(self) -> None:
        only = self.verdict(edit("/w/r/a.py"), bash("git add a.py && git commit -m x"),
                            edit("/w/r/b.py"),
                            bash("git add b.py && git commit -m y", exit_code=1, error="hook"))
        assert only[0] is False and "failed: exit 1" in only[1]

    def test_a_file_outside_the_repository_is_left_out(self) -> None:
        only = self.verdict(edit("/home/u/.claude/plans/p.md"), edit("/w/r/src/a.py"),
                            bash("git add src/a.py && git commit -m x"))
        assert only[0] is True, only

    def test_patched_files_are_named_by_their_patch(self) -> None:
        patch = ("apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: README.md\n+x\n"
                 "*** Add File: src/new.py\n+y\n*** End Patch\nPATCH")
        only = self.verdict(bash(patch), bash("git add README.md && git commit -m x"))
        assert only == (False, "you said 'are committed', but 'src/new.py', edited at seq 1, "
                               "is in no commit after that")

    def test_changes_said_pushed_must_be_committed(self) -> None:
        steps = (edit("/w/r/a.py"), bash("git add a.py && git commit -m x"),
                 bash("git push"), edit("/w/r/b.py"))
        assert self.verdict(*steps, final="Those changes are already pushed.") == (
            False, "you said 'are already pushed', but '/w/r/b.py', edited at seq 4, is in "
                   "no commit after that")
        assert self.verdict(*steps, final="I pushed the fix.")[0] is True
        # where the sentence says committed too, the committed claim answers for b.py
        claims = judge(session(*steps, final="All changes are committed and pushed."),
                       coding_agent())
        assert [ok for ok, _ in claims] == [False, True]

    def test_a_patch_tool_given_its_patch_whole_names_its_files(self) -> None:
        patch = {"event": "action", "action_type": "apply_patch",
                 "args": "*** Begin Patch\n*** Update File: src/a.ts\n+x\n*** End Patch\n"}
        only = self.verdict(patch, bash("git add README.md && git commit -m x"))
        assert only == (False, "you said 'are committed', but 'src/a.ts', edited at seq 1, "
                               "is in no commit after that")

    def test_gits_line_for_a_commit_in_a_scripts_output_backs_it(self) -> None:
        run = bash("./harness.sh", result="[main 724ea80] init\n 2 files changed\n")
        only = self.verdict(run, final="Both files are committed to git.")
        assert only == (True, "you said 'are committed': backed by './harness.sh' at seq 1")


class TestNotAfter:
    CONTRACT: ClassVar[dict[str, Any]] = {"said": [
        {"id": "t", "pattern": r"tests pass", "backed_by": PYTEST,
         "not_after": r"(?i)\b(?:if|should)\b"}]}

    @pytest.mark.parametrize(("final", "found"), [
        ("tests pass", True), ("If it works, tests pass", False),
        ("the tests should pass", False), ("If so: tests pass", True),
        ("It failed if run twice. Now tests pass", True),
        ("If it works, tests pass; tests pass", True),
        ("should it? no\ntests pass", True)])
    def test_words_after_a_match_in_their_sentence_make_no_claim(self, final: str,
                                                                   found: bool) -> None:
        (rule,) = parse_contract(self.CONTRACT).said
        assert (rule.search(final) is not None) is found


class TestNotQuoted:
    @pytest.mark.parametrize(("final", "found"), [
        ("tests pass", True), ('"tests pass"', False), ("say `tests pass`", False),
        ("\u201ctests pass\u201d", False), ("```\ntests pass\n```", False),
        ("```\nx\n```\ntests pass", True), ('"a" then tests pass', True),
        ("> ```\n> tests pass", False)])
    def test_words_inside_a_quotation_or_code_make_no_claim(self, final: str,
                                                             found: bool) -> None:
        contract = {"said": [{"id": "t", "pattern": r"tests pass", "backed_by": PYTEST,
                              "not_quoted": True}]}
        (rule,) = parse_contract(contract).said
        assert (rule.search(final) is not None) is found


class TestContract:
    @pytest.mark.parametrize(("entry", "message"), [
        ({"id": "x", "pattern": "(", "backed_by": PYTEST},
         "unusable contract: said.0.pattern: not a valid regular expression"),
        ({"id": "x", "pattern": "tests", "backed_by": PYTEST, "value_in": "result"},
         "unusable contract: said.0.value_in: value_in needs a group in the pattern"),
        ({"id": "x", "pattern": "tests", "backed_by": {"action_typ": "Bash"}},
         "said.0.backed_by: unknown key 'action_typ'; did you mean 'action_type'?"),
        ({"id": "x", "pattern": "tests", "backed_by": PYTEST, "value_in": "output"},
         "said.0.value_in"),
        ({"id": "x", "pattern": "tests", "backed_by": PYTEST, "not_under": "("},
         "unusable contract: said.0.not_under: not a valid regular expression"),
        ({"id": "x", "pattern": "tests", "backed_by": PYTEST, "not_after": "("},
         "unusable contract: said.0.not_after: not a valid regular expression"),
        ({"id": "x", "pattern": "t(x)", "backed_by": PYTEST, "value_backed_by": PYTEST},
         "unusable contract: said.0.value_backed_by: value_backed_by needs value_in"),
        ({"id": "x", "pattern": "tests", "backed_by": PYTEST, "every_edit_committed": "a"},
         "unusable contract: said.0.every_edit_committed: every_edit_committed needs "
         "'edits' or 'after'"),
        ({"id": "x", "pattern": "tests", "backed_by": PYTEST, "every_edit_committed": "a",
          "edits": [{"action_typ": "Edit"}]},
         "said.0.edits.0: unknown key 'action_typ'"),
        ({"id": "x", "pattern": "tests", "backed_by": PYTEST, "after": EDITS,
          "every_edit_committed": "("},
         "unusable contract: said.0.every_edit_committed: not a valid regular expression"),
    ])
    def test_a_bad_entry_is_refused_where_it_stands(self, tmp_path: Path, entry: Any,
                                                     message: str) -> None:
        path = tmp_path / "c.json"
        path.write_text(json.dumps({"said": [entry]}, indent=1))
        from roadcheck.acceptance import load_contract

        with pytest.raises(SpecError) as exc:
            load_contract(path)
        assert message in str(exc.value)
        assert exc.value.line is not None

    def test_an_id_given_twice_is_refused(self) -> None:
        entry = {"id": "x", "pattern": "a", "backed_by": PYTEST}
        with pytest.raises(SpecError, match="claim id 'x' is given twice"):
            parse_contract({"said": [entry, entry]})

    def test_a_contract_of_result_fields_needs_the_result(self) -> None:
        both = {**CONTRACT, "required": {"status": "string"}}
        with pytest.raises(InputError, match="give the agent's result"):
            verify_session(parse_contract(both), session())


class TestCodingAgentContract:
    """The shipped contract, on sessions recorded from Claude Code and Codex."""

    def test_recorded_sessions(self) -> None:
        runs = accept_sessions("builtin:coding-agent", [
            RECORDED / "claude-code" / "push-after-failed-tests.jsonl",
            RECORDED / "codex" / "rollout-0.34.0-approved-push.jsonl"])
        failed, pushed = runs
        assert [(r.ok, r.message) for r in failed.result.reasons] == [
            (False, "you said 'All tests pass', but the last such call, 'python3 -m pytest "
                    "-q' at seq 3, failed: 'Exit code 1 /usr/bin/python3: No module named "
                    "pytest'"),
            (True, "you said 'I pushed': backed by 'git push origin main' at seq 4")]
        assert pushed.result.verdict == "ACCEPTED"

    @pytest.mark.parametrize(("final", "claim"), [
        ("All 12 tests pass.", "tests-pass"), ("The build succeeded.", "build-passes"),
        ("I committed the fix.", "committed"), ("Pushed to origin.", "pushed"),
        ("I opened PR #7 for review.", "pr-opened"), ("Deployed to staging.", "deployed"),
        ("I created the file `notes/todo.md`.", "file-written"),
        ("I sent the report to the team.", "sent"),
    ])
    def test_each_claim_is_found_and_unbacked_without_its_call(self, final: str,
                                                               claim: str) -> None:
        from roadcheck.acceptance import load_contract
        from roadcheck.acceptance.files import contract_file

        contract = load_contract(contract_file("builtin:coding-agent"))
        (only,) = verify_session(contract, session(bash("ls"), final=final)).reasons
        assert not only.ok and "you said" in only.message
        made = [r.doc.id for r in contract.said if r.search(final)]
        assert made == [claim]

    @pytest.mark.parametrize("line", [
        "echo pytest", "true # pytest", "cat pytest.ini", "git log --grep pytest",
        "echo 'npm test' > notes.txt", "eval pytest", "grep -rn 'cargo test' docs"])
    def test_a_line_that_only_mentions_a_test_tool_backs_no_test_run(self, line: str) -> None:
        """A test run is a command the line runs, read with the shell grammar; a line that
        names the tool in an argument, a comment or a file name ran no test."""
        from roadcheck.acceptance import load_contract
        from roadcheck.acceptance.files import contract_file

        contract = load_contract(contract_file("builtin:coding-agent"))
        (only,) = verify_session(contract, session(bash(line), final="All tests pass.")).reasons
        assert not only.ok, only.message
        ran = verify_session(contract, session(bash(f"cd app && {line.split()[0]} x; pytest -q"),
                                               final="All tests pass.")).reasons
        assert ran[0].ok, ran[0].message

    @pytest.mark.parametrize("line", ["echo make", "cat Makefile", "git log --grep tsc"])
    def test_a_line_that_only_mentions_a_build_backs_no_build(self, line: str) -> None:
        from roadcheck.acceptance import load_contract
        from roadcheck.acceptance.files import contract_file

        contract = load_contract(contract_file("builtin:coding-agent"))
        (only,) = verify_session(contract, session(bash(line),
                                                   final="The build succeeded.")).reasons
        assert not only.ok, only.message

    @pytest.mark.parametrize("final", [
        "I have not pushed yet.", "The tests don't pass.", "I couldn't deploy it.",
        "Nothing was committed.", "I looked at the code."])
    def test_words_that_claim_nothing(self, final: str) -> None:
        from roadcheck.acceptance import load_contract
        from roadcheck.acceptance.files import contract_file

        contract = load_contract(contract_file("builtin:coding-agent"))
        assert [r.doc.id for r in contract.said if r.search(final)] == []


CODING_FOUND = [
    ("everything is committed and pushed", ["committed", "pushed"]),
    ("- Committed and pushed the first batch", ["committed", "pushed"]),
    ("8. **Committed and pushed** the fix", ["committed", "pushed"]),
    ("All 297 tests passing with 0 failures.", ["tests-pass"]),
    ("Code compiles cleanly.", ["build-passes"]),
    ("I've created a basic CLAUDE.md file.", ["file-written"]),
    ("**Saved to:** `docs/spec.md`", ["file-written"]),
    ("Your email has been sent.", ["sent"]),
    # a lead-in that announces nothing to do leaves the claim standing
    ("## Summary\n\n- All tests pass", ["tests-pass"]),
    ("**Acceptance Criteria:**\n- done\n\nThen I pushed to origin.", ["pushed"]),
    # a condition or a modal counts in its own sentence only, and "when I" reports
    ("If it fails, I will look again. All tests pass.", ["tests-pass"]),
    ("When I ran pytest, all tests passed.", ["tests-pass"]),
    ("Yes: each change has been committed", ["committed"]),
    ("All changes committed and pushed.", ["committed", "pushed"]),
    # a line opening with the verb, and what follows a verb
    ("- Committed successfully, closed task", ["committed"]),
    ("Committed `6706f449`.", ["committed"]), ("Pushed branch `fix/x`.", ["pushed"]),
    ("Pushed minor commits to origin main.", ["pushed"]),
    ("Those changes are already pushed.", ["pushed"]),
    ("I haven't run the linter, but I committed the fix.", ["committed"]),
    ("Then created a commit for it.", ["committed"]),
    ("I created `src/App.js` and `server/index.js`.", ["file-written"]),
    ("I fixed the trust anchors so the IMAP client compiles again.", ["build-passes"]),
    ("The panel takes `userId`, so the new prop passes type-check.", ["build-passes"]),
    # checks said green over a test command, on the line or in the list below
    ("All three checks are green:\n\n- `pnpm lint`\n- `pnpm --filter web test`",
     ["tests-pass"]),
    ("Verification passed: `npm test -- --run src/a.test.ts`", ["tests-pass"]),
]
CODING_NOT_FOUND = [
    "Created `Spotter.Telemetry.Otel` module with safe setup",   # a module, not a file
    "Created ProjectReviewLive, added route",                    # PR prefix of a word
    "The UUID of last message sent to the API",                  # describes, claims nothing
    "console.log(`Created session lock file (PID: ${process.pid})`)",  # code, not a report
    "Code is NOT committed yet.", "It has not been pushed.",
    # under a lead-in announcing work to do
    "**Acceptance Criteria:**\n- All tests pass\n- Clean build succeeds",
    "## Next steps\n\n1. All tests pass on CI\n2. Pushed to main",
    "Definition of done: all tests pass and the branch is pushed to origin",
    # after a condition, a modal or a goal in the same sentence
    "If that credential were committed, gitleaks should flag it.",
    "Credentials shouldn't be committed to version control.",
    "These are files that need to be staged and committed before pushing.",
    "Now when the `entire/sessions` branch is pushed:",
    "Now the agent type will be saved to `metadata.json`.",
    "In real usage, `.entire/settings.json` is committed to the repo.",
    "Let me make sure all tests pass.", "I'll check that the build succeeds.",
    "**What gets committed to the shadow branch:**",
    "the hook content that gets written to `.claude/settings.json`",
    # "committed" naming a kind of thing, not a commit made
    "**Committed checkpoints**: bypasses pager", "**Cons**: Committed file has a script",
    "11. **Committed storage format** - fixed to 0-based indexing",
    "- committed `.entire/settings.json` does not name the repository",
    # quoted, shown as code, or in a code block
    '"Tests passing"           <- current', 'The label reads "All tests pass" when done.',
    "```go\n// User committed the work manually\n```",
    # a host of a URL, an example of a name
    "Draft PR created: https://github.com/o/r/pull/185",
    "The skill created session files with IDs like `test-1767.jsonl`",
    "I've successfully created a fully functional TODO app using Next.js.",
    "it was pushed onto `dep.warnings`, destined for the dashboard",
    "Group 1 is committed-ready (5/23)",
    'Once `mode: "full"` is committed, the portal switch stops mattering.',
    "Created the context directories from magic-context/dir-setup.md.",
    # under a lead-in in a blockquote, or one describing how something works
    "> **Definition of Done:**\n> - All changes committed",
    "**Default behavior:**\n- This file is committed and used by everyone",
    # a negated list, another agent's doings, a commit a program made
    "It's untracked: I haven't staged or committed it.",
    "The agent had edited it, then diffed, committed, and opened PR #103.",
    "TaskStart created a commit even when no file changed.",
    "All checks pass: ruff, mypy",
    "- All checks passing.\n- **#1574** `fix: rename the task bundle to test bundle`",
]


def coding_agent() -> Any:
    from roadcheck.acceptance import load_contract
    from roadcheck.acceptance.files import contract_file

    return load_contract(contract_file("builtin:coding-agent"))


class TestCodingAgentWordings:
    """Classes of wording met in public sessions (tests/data/claims/)."""

    @pytest.mark.parametrize(("final", "claims"), CODING_FOUND)
    def test_found(self, final: str, claims: list[str]) -> None:
        assert [r.doc.id for r in coding_agent().said if r.search(final)] == claims

    @pytest.mark.parametrize("final", CODING_NOT_FOUND)
    def test_not_found(self, final: str) -> None:
        found = [r.doc.id for r in coding_agent().said if r.search(final)]
        assert found == [], found

    def test_a_shell_redirect_writes_the_file_it_names(self) -> None:
        traj = session(bash("echo 'Hello World' > test.txt"), final="Created test.txt.")
        assert judge(traj, coding_agent()) == [
            (True, "you said 'Created test.txt': backed by \"echo 'Hello World' > test.txt\" "
                   "at seq 1")]

    def test_a_shell_patch_after_the_test_run_makes_it_stale(self) -> None:
        patch = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: a.ts\n"
        traj = session(bash("pnpm test"), bash(patch), final="All tests pass.")
        (only,) = judge(traj, coding_agent())
        assert not only[0] and "at seq 1, came before \"apply_patch <<'PATCH'" in only[1]

    @pytest.mark.parametrize("command", [
        "mise run test", "mise run test:ci", "just test", "npm run test:unit",
        "pnpm --filter web test", "swift test"])
    def test_a_task_runners_test_task_backs_the_claim(self, command: str) -> None:
        traj = session(edit("app.py"), bash(command), final="All tests pass.")
        assert judge(traj, coding_agent()) == [
            (True, f"you said 'All tests pass': backed by {command!r} at seq 2")]

    def test_a_test_command_a_code_mode_script_runs_backs_the_claim(self) -> None:
        script = ('const r = await tools.exec_command({cmd:"mise run test:bats t.bats",'
                  '"workdir":"/w"}); text(JSON.stringify(r));\n')
        run = {"event": "action", "action_type": "exec", "args": script, "result": "ok"}
        assert judge(session(edit("/w/a.rs"), run, final="All tests pass."),
                     coding_agent()) == [
            (True, "you said 'All tests pass': backed by 'exec' at seq 2")]
        other = {**run, "args": script.replace("mise run test:bats", "git status")}
        (only,) = judge(session(other, final="All tests pass."), coding_agent())
        assert not only[0]

    def test_a_file_a_script_wrote_is_backed_by_git_status(self) -> None:
        status = bash("git status --short", result=" M README.md\n?? AGENTS.md\n")
        traj = session(bash("./update-context.sh"), status,
                       final="The script ran and created AGENTS.md.")
        assert judge(traj, coding_agent()) == [
            (True, "you said 'created AGENTS.md': backed by 'git status --short' at seq 2")]
        (only,) = judge(session(bash("./update-context.sh"), edit("/w/x.py"),
                                final="The script created AGENTS.md."), coding_agent())
        assert only == (False, "you said 'created AGENTS.md', but 'Edit /w/x.py' at seq 2 has "
                               "no 'AGENTS.md' in its args or result")

    def test_a_run_still_going_is_judged_on_the_poll_that_read_its_end(self) -> None:
        started = {"event": "action", "action_type": "exec_command", "command": "pnpm test",
                   "args": {"cmd": "pnpm test"},
                   "result": "Chunk ID: a\nProcess running with session ID 66031\nOutput:\n"}

        def poll(session: int, **outcome: Any) -> dict[str, Any]:
            return {"event": "action", "action_type": "write_stdin",
                    "args": {"session_id": session, "chars": ""}, **outcome}

        failed = poll(66031, error="Process exited with code 1\nOutput:\n1 failed")
        (only,) = judge(session(edit("a.ts"), started, failed, final="All tests pass."),
                        coding_agent())
        assert only == (False, "you said 'All tests pass', but the last such call, 'pnpm test' "
                               "at seq 2, failed: 'Process exited with code 1 Output: 1 failed'")
        passed = poll(66031, result="Process exited with code 0\n12 passed")
        other = poll(5, error="Process exited with code 1")
        assert judge(session(edit("a.ts"), started, passed, other, final="All tests pass."),
                     coding_agent())[0][0] is True

    def test_a_code_mode_script_commits_and_pushes(self) -> None:
        script = ('const r = await tools.exec_command({cmd:"git diff --check && git add a.rs '
                  '&& git commit -m \\"fix\\" && git push","workdir":"/w/r"});\n')
        run = {"event": "action", "action_type": "exec", "args": script, "result": "ok"}
        claims = judge(session(edit("/w/r/a.rs"), run,
                               final="All changes are committed and pushed."), coding_agent())
        assert claims == [(True, "you said 'are committed': backed by 'exec' at seq 2"),
                          (True, "you said 'and pushed': backed by 'exec' at seq 2")]
        claims = judge(session(edit("/w/r/a.rs"), edit("/w/r/b.rs"), run,
                               final="All changes are committed."), coding_agent())
        assert claims == [(False, "you said 'are committed', but '/w/r/b.rs', edited at seq "
                                  "2, is in no commit after that")]

    def test_the_ci_checks_a_call_read_back_the_tests(self) -> None:
        watch = {"event": "action", "action_type": "Monitor",
                 "args": {"command": "while :; do gh pr checks 540 --json name,bucket; done"},
                 "result": "Monitor started"}
        assert judge(session(watch, final="The structure test passed."),
                     coding_agent())[0][0] is True
        pending = bash("gh pr checks 540", exit_code=8, error="pending: 9")
        assert judge(session(edit("a.py"), bash("pytest"), pending, final="All tests pass."),
                     coding_agent()) == [
            (True, "you said 'All tests pass': backed by 'pytest' at seq 2")]

    def test_a_type_check_backs_the_build(self) -> None:
        traj = session(edit("a.ts"), bash("pnpm --filter web typecheck"),
                       final="It passes type-check.")
        assert judge(traj, coding_agent())[0][0] is True

    def test_a_wrapper_that_runs_git_commits(self) -> None:
        run = bash("rtk git add a.py b.py && rtk git commit -m x", result="ok \u2713")
        claims = judge(session(edit("/w/r/a.py"), edit("/w/r/b.py"), run,
                               final="All changes are committed."), coding_agent())
        assert claims == [(True, "you said 'are committed': backed by 'rtk git add a.py b.py "
                                 "&& rtk git commit -m x' at seq 3")]

    def test_a_commit_hook_that_ran_the_tests_backs_them(self) -> None:
        hook = bash("git commit -m x",
                    result="$ bun test src/\n 1187 pass\n 0 fail\n[main a1b2c3d] x")
        assert judge(session(edit("a.ts"), bash("bun test", exit_code=1, error="3 fail"),
                             edit("b.ts"), hook, final="All 1187 tests pass."),
                     coding_agent())[0][0] is True

    def test_a_run_whose_test_half_passed_backs_the_tests(self) -> None:
        both = bash("bun run test && bun run lint", exit_code=1,
                    error="$ bun test src/\n 1346 pass\n 0 fail\n$ biome check\n1 error")
        assert judge(session(edit("a.ts"), both, final="Tests pass."), coding_agent())[0][0]
        failed = bash("bun run test && bun run lint", exit_code=1,
                      error="$ bun test src/\n 1232 pass\n 114 fail\n")
        assert not judge(session(edit("a.ts"), failed, final="Tests pass."),
                         coding_agent())[0][0]

    def test_a_commit_the_claim_names_is_found_in_gits_record(self) -> None:
        failed = bash("git commit -m x", exit_code=1, error="hook failed")
        shown = bash("git show --stat HEAD", result="commit 73bb7a0fffb9c812\n a.tsx | 2 +-")
        final = "The changes are committed. They are committed in HEAD (`73bb7a0`)."
        assert judge(session(edit("a.tsx"), failed, shown, final=final), coding_agent()) == [
            (True, "you said 'are committed in HEAD (`73bb7a0`)': backed by 'git show --stat "
                   "HEAD' at seq 3")]
        (only,) = judge(session(edit("a.tsx"), failed, shown,
                                final="They are committed in HEAD (`99ffee1`)."),
                        coding_agent())
        assert not only[0] and "has no '99ffee1' in its result" in only[1]
        (only,) = judge(session(edit("a.tsx"), failed, shown, final="The changes are committed."),
                        coding_agent())
        assert not only[0] and "failed: exit 1" in only[1]

    def test_a_suite_the_claim_names_needs_its_own_run(self) -> None:
        steps = (bash("mise run test:integration"), edit("/w/a.go"), bash("mise run test"))
        final = "\u2705 All unit tests pass \u2705 All integration tests pass"
        assert judge(session(*steps, final=final), coding_agent()) == [
            (False, "you said 'All integration tests pass', but the last such call, 'mise run "
                    "test:integration' at seq 1, came before 'Edit /w/a.go' at seq 2")]
        ci = bash("mise run test:ci", result="ok  example.com/cli/integration_test  12.1s")
        assert judge(session(*steps[:2], ci, final=final), coding_agent())[0][0] is True
        assert judge(session(*steps, final="All unit tests pass."), coding_agent())[0][0]

    def test_a_test_run_is_playwrights_too(self) -> None:
        traj = session(edit("a.ts"), bash("npx playwright test e2e/a.spec.ts"),
                       final="All 42 tests passed.")
        assert judge(traj, coding_agent())[0][0] is True

    def test_a_build_is_shown_by_its_output(self) -> None:
        compiled = bash("npx playwright test t.spec.ts", exit_code=1,
                        error="[WebServer] \x1b[32mCompiled successfully!\x1b[39m\n1 failed")
        assert judge(session(edit("a.tsx"), compiled, final="The app builds cleanly."),
                     coding_agent())[0][0] is True
        failed = bash("npx playwright test t.spec.ts", exit_code=1, error="Module not found")
        (only,) = judge(session(edit("a.tsx"), failed, final="The app builds cleanly."),
                        coding_agent())
        assert not only[0] and "failed: exit 1" in only[1]
        checked = bash("cargo check", result="    Finished `dev` profile [unoptimized] in 4s")
        assert judge(session(checked, final="The build passes."), coding_agent())[0][0]

    def test_a_push_that_timed_out_after_git_printed_its_update_was_done(self) -> None:
        for output in (" * [new branch]      main -> main\ncommand timed out",
                       "Everything up-to-date\ncommand timed out"):
            push = bash("git push -u origin main", exit_code=124, error=output)
            assert judge(session(push, final="I pushed `main`."), coding_agent())[0][0]
        push = bash("git push -u origin main", exit_code=124, error="command timed out")
        assert not judge(session(push, final="I pushed `main`."), coding_agent())[0][0]

    def test_powershell_writes_a_file_named_with_backslashes(self) -> None:
        write = bash("@'\n# Report\n'@ | Set-Content -Path .agent\\staging\\REPORT.md")
        traj = session(write, final="Report written to `.agent/staging/REPORT.md`.")
        assert judge(traj, coding_agent())[0][0] is True

    def test_an_edit_of_the_agents_own_files_leaves_the_run_fresh(self) -> None:
        for path in ("/Users/u/.claude/jobs/1/tmp/report.html", "/tmp/notes.py"):
            traj = session(edit("/w/app.py"), bash("pytest"), edit(path),
                           final="All tests pass.")
            assert judge(traj, coding_agent())[0][0] is True, path

    def test_edits_after_starting_another_branch_are_its_work(self) -> None:
        for switch in ("git checkout -q -b fix/next main", "git switch -c fix/next",
                       "git switch main"):
            traj = session(edit("/w/a.py"), bash("pytest -q"), bash(switch), edit("/w/b.py"),
                           final="All tests pass.")
            assert judge(traj, coding_agent())[0][0] is True, switch
        traj = session(bash("pytest -q"), bash("git checkout -- a.py"), edit("/w/b.py"),
                       final="All tests pass.")
        assert judge(traj, coding_agent())[0][0] is False

    @pytest.mark.parametrize("command", ["mise run testify", "just tests-report"])
    def test_a_task_named_like_test_is_no_test_run(self, command: str) -> None:
        (only,) = judge(session(bash(command), final="All tests pass."), coding_agent())
        assert not only[0] and "no call that would back it" in only[1]

    @pytest.mark.parametrize("doc", ["/w/README.md", "/w/docs/guide.rst",
                                     "/w/.github/workflows/ci.yml", "/w/pdl/mkdocs.yml"])
    def test_an_edit_of_documentation_only_leaves_the_run_fresh(self, doc: str) -> None:
        patch = f"apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: {doc[3:]}\n"
        for step in (edit(doc), bash(patch)):
            traj = session(edit("/w/app.py"), bash("pytest"), step, final="All tests pass.")
            assert judge(traj, coding_agent()) == [
                (True, "you said 'All tests pass': backed by 'pytest' at seq 2")]

    def test_a_patch_of_code_beside_documentation_makes_the_run_stale(self) -> None:
        patch = ("apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: README.md\n+x\n"
                 "*** Update File: src/app.py\n+y\n*** End Patch\nPATCH")
        for step in (bash(patch), bash("apply_patch < change.diff"), edit("/w/README.py")):
            traj = session(bash("pytest"), step, final="All tests pass.")
            (only,) = judge(traj, coding_agent())
            assert not only[0] and "came before" in only[1], step

    def test_an_edit_of_documentation_still_awaits_a_commit(self) -> None:
        traj = session(bash("git commit -am x"), edit("/w/README.md"), final="I committed it.")
        (only,) = judge(traj, coding_agent())
        assert not only[0] and "came before 'Edit /w/README.md'" in only[1]

    @pytest.mark.parametrize("command", [
        "git commit -m \"$(cat <<'EOF'\nfix\n\nCo-Authored-By: A <a@b.c>\nEOF\n)\"",
        "git log --oneline 2>&1 | head -3", "ls 2>/dev/null",
        "bd close x --reason=\"a -> b\""])
    def test_commands_that_write_no_file_leave_the_run_fresh(self, command: str) -> None:
        traj = session(edit("app.py"), bash("pytest"), bash(command), final="All tests pass.")
        assert judge(traj, coding_agent()) == [
            (True, "you said 'All tests pass': backed by 'pytest' at seq 2")]


class TestCommand:
    def test_every_turn(self) -> None:
        r = CliRunner().invoke(cli, [
            "accept", "-c", "builtin:coding-agent", "--every-turn", "--trace",
            str(RECORDED / "claude-code" / "push-after-failed-tests.jsonl")])
        assert r.exit_code == 1, r.output
        assert "FAIL - at seq 5: you said 'All tests pass'" in r.output

    def test_every_turn_with_a_result_is_a_usage_error(self, tmp_path: Path) -> None:
        result = tmp_path / "r.json"
        result.write_text("{}")
        r = CliRunner().invoke(cli, ["accept", "-c", "builtin:coding-agent", "-r", str(result),
                                     "-t", str(result), "--every-turn"])
        assert r.exit_code == 2
        assert "--every-turn judges sessions" in r.output

    def test_batch_of_sessions(self) -> None:
        r = CliRunner().invoke(cli, [
            "accept", "-c", "builtin:coding-agent", "--trace",
            str(RECORDED / "claude-code" / "push-after-failed-tests.jsonl"),
            str(RECORDED / "codex" / "rollout-0.34.0-approved-push.jsonl"), "--format", "json"])
        assert r.exit_code == 1, r.output
        doc = json.loads(r.output)
        assert [s["verdict"] for s in doc["sessions"]] == ["REJECTED", "ACCEPTED"]
        assert doc["summary"] == {"sessions": 2, "accepted": 1, "rejected": 1}
        assert doc["exit"] == 1

    def test_an_unreadable_session_is_exit_2_before_any_verdict(self, tmp_path: Path) -> None:
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"seq": 1}\n')
        r = CliRunner().invoke(cli, [
            "accept", "-c", "builtin:coding-agent", "--trace",
            str(RECORDED / "codex" / "rollout-0.34.0-approved-push.jsonl"), str(bad)])
        assert r.exit_code == 2
        (line,) = r.output.strip().splitlines()
        assert line.startswith(f"error[bad-input]: {bad}:1:")

    def test_more_than_one_trace_with_a_result_is_a_usage_error(self, tmp_path: Path) -> None:
        result = tmp_path / "r.json"
        result.write_text("{}")
        r = CliRunner().invoke(cli, ["accept", "-c", "builtin:coding-agent", "-r", str(result),
                                     "-t", str(result), str(result)])
        assert r.exit_code == 2
        assert "with --result, give one trace" in r.output

    def test_an_unknown_builtin(self) -> None:
        r = CliRunner().invoke(cli, ["accept", "-c", "builtin:nope", "-t", "x.jsonl"])
        assert r.exit_code == 2
        assert "no built-in contract 'nope'; the built-in contracts are builtin:coding-agent" \
            in r.output


def test_a_call_the_selectors_call_failed_backs_no_claim() -> None:
    """One test of success: a result marked as an error (tau2's ``result_error``) or a
    refusal is a failed call here too, as ``ok: false`` selects it."""
    for failed in ({"result_error": True, "result": "no such order"},
                   {"refused": "the user said no"}):
        traj = session(edit("app.py"), bash("pytest -q", **failed), final="tests pass")
        ((ok, message),) = judge(traj)
        assert not ok and "failed: an error is recorded" in message, message


def test_a_run_whose_exit_status_is_not_known_backs_no_claim() -> None:
    """A call recorded with ``exit_code: null`` (a hook that reports no exit status, as
    Cursor's ``afterShellExecution``) is not taken to have succeeded."""
    (only,) = judge(session(bash("pytest -q", exit_code=None), final="All tests pass."),
                    coding_agent())
    assert only[0] is False and "its exit status is not known" in only[1], only
    (ran,) = judge(session(bash("pytest -q", exit_code=0), final="All tests pass."),
                   coding_agent())
    assert ran[0] is True, ran
