"""Shell command lines read the way bash reads them, and held when they cannot be read.

Every construct the guard must see through has a case here; a property test wraps a
guarded command in random constructs and checks it is always held, and that the same
constructs around a harmless command are not (so "hold everything" cannot pass).
Each generated line is first checked to be valid bash (``bash -n``), so that what is
held is a line bash would really run.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roadcheck.conformance.judge import replay_events
from roadcheck.conformance.spec import parse_spec
from roadcheck.events import Event
from roadcheck.guard import Guard
from roadcheck.selectors import compile_selector
from roadcheck.shellcmd import (
    command_text,
    matches_words,
    read_commands,
    runs_command,
    simple_commands,
)

PUSH = ["git", "push"]
BASH = shutil.which("bash")

#: every spelling bash runs as a push: each must be held
HELD = [
    "git push",
    "# push the fix\ngit push origin main",
    "echo a#b; git push",
    "if true; then git push origin main; fi",
    "for r in origin; do git push $r main; done",
    "while true; do git push; done",
    "until false; do git push; done",
    "case x in x) git push;; esac",
    "f() { git push; }; f",
    "(git push)",
    "{ git push; }",
    "git status && git push",
    "git status || git push",
    "git log | git push",
    "git push &",
    ">/dev/null git push origin main",
    "git push origin main 2>&1 >/tmp/log",
    "git \\\n  push origin main",
    "git pu\"sh\" origin",
    "git 'push' origin",
    "git $'push' origin",
    "git $'\\x70ush' origin",
    "/usr/bin/git push",
    "FOO=1 BAR=2 git push",
    "bash -c 'git push'",
    "bash -e -c 'git push'",
    "bash -lc 'git push'",
    "sh -ec \"git push\"",
    "zsh -c 'git push'",
    "bash -c \"bash -c 'bash -c \\\"git push\\\"'\"",
    "bash <<'EOF'\ngit push\nEOF\n",
    "bash <<< 'git push'",
    "echo $(git push)",
    "echo \"$(git push)\"",
    "echo `git push`",
    "x=$(git push)",
    "cat <(git push)",
    "env git push",
    "env -i PATH=/usr/bin git push",
    "env -S 'git push'",
    "sudo git push",
    "sudo -u root -- git push",
    "doas git push",
    "nohup git push &",
    "timeout 10 git push",
    "setsid -w git push",
    "nice -n 5 git push",
    "ionice -c3 git push",
    "stdbuf -o0 git push",
    "time git push",
    "command git push",
    "builtin git push",
    "exec git push",
    "flock /tmp/lock git push",
    "flock /tmp/lock -c 'git push'",
    "su -c 'git push' someone",
    "xargs -n1 git push",
    "find . -name x -exec git push \\;",
    "find . -execdir git push {} +",
    "watch -n 5 'git push'",
    "git -C sub push --force",
    # more programs that run a command given to them as words or as a script
    "pkexec git push",
    "unshare -r git push",
    "nsenter -t 1 -m git push",
    "ip netns exec x git push",
    "firejail git push",
    "chronic git push",
    "coproc git push",
    "screen -dm git push",
    "docker exec c git push",
    "kubectl exec pod -- git push",
    "uv run git push",
    "poetry run git push",
    "npx git push",
    "direnv exec . git push",
    "ssh host git push origin main",
    "ssh host 'cd app && git push'",
    "tmux new -d 'git push'",
    "script -qc 'git push' /tmp/typescript",
    "script -c 'git push'",
    "sg staff -c 'git push'",
    "nix-shell --run 'git push'",
    "trap 'git push' EXIT",
    "at now <<< 'git push'",
    "/usr/lib/git-core/git-push origin main",
    # the words cannot be known before the line runs: held
    "python3 -c \"import os; os.system('git push')\"",
    "python -c 'import subprocess'",
    "python3 -W ignore -c 'import os'",
    "perl -e 'system(\"git push\")'",
    "ruby -e 'system(\"git push\")'",
    "node -e 'require(\"child_process\").execSync(\"git push\")'",
    "alias p='git push'; p",
    "shopt -s expand_aliases\nalias p='git push'\np",
    "echo 'git push' | at now",
    "eval \"git push origin main\"",
    "eval git status",
    "echo 'git push' | bash",
    "cat script | sh",
    "bash deploy.sh",
    "source ./x.sh",
    ". ./x.sh",
    "$CMD push",
    "$(echo git) push",
    "git $SUB origin",
    "git -c alias.x=push x",
    "git -calias.x=push x",
    "git -c \"$CFG\" x",
    "git {push,pull}",
    "echo 'unclosed",
    "git push 'unclosed",
    "if true; then",
]

#: lines that run no push: each must not be held
FREE = [
    "git status",
    "echo 'git push'",
    "echo \"git push\"",
    "# git push\ngit status",
    "git log | head",
    "cd repo && git status",
    "git commit -m \"$(cat <<'EOF'\nfix: push the button\nEOF\n)\"",
    "git commit -m \"$MSG\"",
    "bash -c 'git status'",
    "bash <<'EOF'\ngit status\nEOF\n",
    "sudo git status",
    "find . -name push",
    "grep -r 'git push' .",
    "printf '%s\\n' push",
    "pushd /tmp",
    "x=push; echo $x",
    "python3 -m pytest -q",
    "python3 manage.py test",
    "node server.js",
    "ssh host uptime",
    "docker exec c ls",
    "uv run pytest",
    "trap - EXIT",
    "git-lfs push origin main",
]


class TestConstructs:
    @pytest.mark.parametrize("line", HELD)
    def test_held(self, line: str) -> None:
        """Each spelling is held by a guard on [git, push]."""
        assert matches_words(line, PUSH)

    @pytest.mark.parametrize("line", FREE)
    def test_free(self, line: str) -> None:
        """A line that runs no push is not held."""
        assert not matches_words(line, PUSH)

    @pytest.mark.parametrize("line", [h for h in HELD if "unclosed" not in h
                                      and h != "if true; then"])
    def test_each_held_line_is_bash(self, line: str) -> None:
        """The held spellings are lines bash itself would run (syntax checked by bash)."""
        assert _is_bash(line)

    def test_unknown_lines_say_why(self) -> None:
        """An unknown line names what cannot be known."""
        assert "eval" in str(read_commands("eval x").unknown)
        assert read_commands("git push").unknown is None
        with pytest.raises(ValueError, match="cannot be known"):
            simple_commands("echo x | bash")

    def test_the_commands_of_a_compound_line(self) -> None:
        """Every simple command bash runs, with its words as it receives them."""
        assert simple_commands("if a; then b 'c d'; fi | e $'\\tf' && g $X") == [
            ["a"], ["b", "c d"], ["e", "\tf"], ["g", None]]

    def test_other_patterns(self) -> None:
        """The same reading serves every pattern: rm -rf, terraform apply."""
        assert matches_words("cd x && sudo rm -rf /tmp/build", ["rm", "-rf"])
        assert not matches_words("rm -r build", ["rm", "-rf"])
        assert matches_words("bash -lc 'terraform apply -auto-approve'", ["terraform", "apply"])
        assert not matches_words("terraform plan", ["terraform", "apply"])

    @pytest.mark.parametrize(("line", "verdict"), [
        ("# c\ngit push", "BLOCK"), ("if true; then git push; fi", "BLOCK"),
        ("eval x", "BLOCK"), ("git status", "PASS")])
    def test_replay_uses_the_same_reading(self, line: str, verdict: str) -> None:
        """A recorded call is judged by replay with the reading the guard uses."""
        import roadcheck

        spec = {"mandatory_checkpoints": [{"checkpoint_id": "ok", "must_precede": {
            "action_type": "Bash", "command": {"words": PUSH}}}]}
        events = [{"seq": 1, "event": "action", "action_type": "Bash", "command": line},
                  {"seq": 2, "event": "final", "task_success": True}]
        assert roadcheck.replay(spec, events).results[0].verdict == verdict

    def test_argv_commands(self) -> None:
        """An argv list is the script it runs."""
        assert command_text(["bash", "-lc", "git push"]) == "git push"
        assert command_text(["git", "commit", "-m", "a b"]) == "git commit -m 'a b'"

    def test_deep_nesting_is_held(self) -> None:
        """Scripts nested past the reading depth are unknown, so held."""
        line = "git status"
        for n in range(20):  # heredocs nest without the quoting that doubles at each level
            line = f"bash <<'E{n}'\n{line}\nE{n}"
        assert _is_bash(line)
        assert read_commands(line).unknown is not None and matches_words(line, PUSH)
        line = "git status"
        for n in range(10):
            line = f"bash <<'E{n}'\n{line}\nE{n}"
        assert read_commands(line).unknown is None and not matches_words(line, PUSH)

    def test_a_huge_word_is_read(self) -> None:
        """A command with a 400,000-character word is read (its time is linear, see
        benchmarks/shell_matching.py)."""
        assert not matches_words("git " + "a" * 400_000, PUSH)
        assert not matches_words("git " + "a" * 400_000 + " push", PUSH)  # an argument
        assert matches_words("git -C " + "a" * 400_000 + " push", PUSH)


# -- the property: a guarded command wrapped in random constructs is always held ----------

Wrap = Callable[[str, int], str]

#: wrappers around one simple command (the result is a simple command, or a line)
COMMAND_WRAPS: list[Wrap] = [
    lambda c, n: f"env {c}",
    lambda c, n: f"sudo -u root {c}",
    lambda c, n: f"nohup {c}",
    lambda c, n: f"timeout 5 {c}",
    lambda c, n: f"setsid -w {c}",
    lambda c, n: f"nice -n 1 {c}",
    lambda c, n: f"command {c}",
    lambda c, n: f"stdbuf -o0 {c}",
    lambda c, n: f"flock /tmp/l {c}",
    lambda c, n: f">/dev/null {c}",
    lambda c, n: f"{c} 2>&1",
]
#: wrappers around a whole line (the result is a line)
LINE_WRAPS: list[Wrap] = [
    lambda s, n: f"# step {n}\n{s}",
    lambda s, n: f"echo a#b; {s}",
    lambda s, n: f"if true; then {s}; fi",
    lambda s, n: f"for r{n} in o; do {s}; done",
    lambda s, n: f"while true; do {s}; break; done",
    lambda s, n: f"case a in a) {s};; esac",
    lambda s, n: f"f{n}() {{ {s}; }}; f{n}",
    lambda s, n: f"( {s} )",
    lambda s, n: f"{{ {s}; }}",
    lambda s, n: f"{s} | cat",
    lambda s, n: f"true && {s}",
    lambda s, n: f"false || {s}",
    lambda s, n: f"bash -c {shlex.quote(s)}",
    lambda s, n: f"sh -e -c {shlex.quote(s)}",
    lambda s, n: f"{{ bash <<'EOF{n}'\n{s}\nEOF{n}\n}}",
    lambda s, n: f"cat <( {s} )",
    lambda s, n: f"echo \"$( {s} )\"",
    lambda s, n: f"x{n}=$( {s} )",
]
#: wrappers whose script cannot be known: the line is held whatever it runs
UNKNOWN_WRAPS: list[Wrap] = [
    lambda s, n: f"eval {shlex.quote(s)}",
    lambda s, n: f"echo {shlex.quote(s)} | bash",
]
SPELLINGS = ["git push origin main", "git pu\"sh\" origin main", "git $'push' origin main",
             "/usr/bin/git push", "git \\\n  push origin main", "git -C repo push"]


@st.composite
def _wrapped(draw: st.DrawFn, command: str, unknown: bool) -> str:
    line = f"A=1 {command}" if draw(st.booleans()) else command
    for n in range(draw(st.integers(0, 3))):
        line = draw(st.sampled_from(COMMAND_WRAPS))(line, n)
    pool = LINE_WRAPS + (UNKNOWN_WRAPS if unknown else [])
    for n in range(draw(st.integers(0, 5))):
        line = draw(st.sampled_from(pool))(line, n + 10)
    return line


def _is_bash(line: str) -> bool:
    """Whether bash reads the line without a syntax error (bash is needed: never skipped)."""
    assert BASH is not None, "the shell tests need bash on the PATH"
    return subprocess.run([BASH, "-n", "-c", line], capture_output=True).returncode == 0


class TestProperty:
    @settings(max_examples=150)
    @given(st.sampled_from(SPELLINGS).flatmap(lambda c: _wrapped(c, unknown=True)))
    def test_a_wrapped_push_is_always_held(self, line: str) -> None:
        """However a push is wrapped, the line (valid bash) is held."""
        assert _is_bash(line), line
        assert matches_words(line, PUSH), line

    @settings(max_examples=100)
    @given(_wrapped("git status", unknown=False))
    def test_a_wrapped_harmless_command_is_not_held(self, line: str) -> None:
        """The same known constructs around git status are not held."""
        assert _is_bash(line), line
        assert not matches_words(line, PUSH), line


class TestWords:
    """How a ``words`` pattern meets a command: the subcommand where it stands, flags as
    sets, long and short spellings as one."""

    @pytest.mark.parametrize("line", [
        "git stash push",
        "git stash push -m wip",
        "git log --grep push",
        "git log --grep=push",
        "git log --oneline -- push",
        "git commit -m push",
        "git show push",
    ])
    def test_push_elsewhere_in_the_line_is_not_the_subcommand(self, line: str) -> None:
        assert not matches_words(line, PUSH)

    @pytest.mark.parametrize("line", [
        "git push",
        "git --no-pager push origin main",
        "git -C repo push",
        "git --git-dir=.git push",
        "git --git-dir .git --work-tree . push",
        "git -c core.pager=cat push",
        "git -P push --force",
    ])
    def test_the_subcommand_after_the_programs_own_options(self, line: str) -> None:
        assert matches_words(line, PUSH)

    @pytest.mark.parametrize("line", [
        "rm -rf build", "rm -fr build", "rm -r -f build", "rm -f -r build", "rm -Rf build",
        "rm -r --force build", "rm --recursive --force build", "rm --force --recursive build",
        "rm -rfv build", "rm -v -rf build", "rm build -rf", "rm -d -r -f build",
    ])
    def test_flags_are_a_set_in_any_spelling(self, line: str) -> None:
        assert matches_words(line, ["rm", "-rf"])
        assert matches_words(line, ["rm", "--recursive", "--force"])

    @pytest.mark.parametrize("line", ["rm -r build", "rm -f build", "rm build",
                                      "rm -- -rf", "rmdir -rf x"])
    def test_a_missing_flag_does_not_match(self, line: str) -> None:
        assert not matches_words(line, ["rm", "-rf"])

    @pytest.mark.parametrize(("line", "pattern", "held"), [
        ("git push -f", ["git", "push", "--force"], True),
        ("git push --force origin", ["git", "push", "-f"], True),
        ("git push origin main --force", ["git", "push", "--force"], True),
        ("git push origin main", ["git", "push", "--force"], False),
        ("git push --force-with-lease", ["git", "push", "--force"], False),
        ("git push origin main", ["git", "push", "origin", "main"], True),
        ("git push origin", ["git", "push", "origin", "main"], False),
        ("git push --tags origin main", ["git", "push", "origin"], True),
        ("git clean -fdx", ["git", "clean", "-f"], True),
        ("git clean -n", ["git", "clean", "-f"], False),
        ("git reset --hard HEAD~1", ["git", "reset", "--hard"], True),
        ("git reset HEAD~1", ["git", "reset", "--hard"], False),
        ("chmod -R 777 /srv", ["chmod", "--recursive"], True),
        ("kubectl -n prod delete pod x", ["kubectl", "delete"], True),
        ("kubectl get pod delete", ["kubectl", "delete"], False),
        ("curl -X POST https://prod.example/api", ["curl", "https://prod.example/api"], True),
    ])
    def test_patterns(self, line: str, pattern: list[str], held: bool) -> None:
        assert matches_words(line, pattern) is held

    def test_a_word_known_only_at_run_time_may_be_any_flag(self) -> None:
        """``rm $FLAGS build`` may be ``rm -rf build``: asked about, never let through."""
        assert matches_words("rm $FLAGS build", ["rm", "-rf"])
        assert matches_words("git push \"$OPTS\"", ["git", "push", "--force"])


class TestUnknownIsNoEvidence:
    """An unknown line matches a selector that guards (it is asked about), never one that
    picks evidence: ``eval true`` is no test run, so it derives no checkpoint, meets no
    obligation and backs no claim."""

    SPEC: ClassVar[dict[str, Any]] = {
        "derive": [{"checkpoint_id": "tests_passed",
                    "when": {"event": "action", "command": {"words": ["pytest"]}, "ok": True}}],
        "mandatory_checkpoints": [{
            "checkpoint_id": "tests_passed", "scope": "each",
            "must_precede": {"action_type": "Bash", "command": {"words": ["git", "push"]}}}],
    }

    @staticmethod
    def _run(*commands: str) -> list[Event]:
        events = [Event.make(i, "action", None, action_type="Bash", command=c, exit_code=0)
                  for i, c in enumerate(commands, 1)]
        return [*events, Event.make(len(events) + 1, "final", None, task_success=True)]

    @pytest.mark.parametrize("line", ["eval true", "echo true | bash", "$RUNNER",
                                      "git -c alias.t=status t", "bash ./t.sh"])
    def test_an_unknown_line_derives_no_checkpoint(self, line: str) -> None:
        spec = parse_spec(self.SPEC)
        result = replay_events(spec, self._run(line, "git push origin main"))
        assert result.verdict == "BLOCK", line
        guard = Guard(spec)
        guard.observe({"event": "action", "action_type": "Bash", "command": line,
                       "exit_code": 0})
        push = {"event": "action", "action_type": "Bash", "command": "git push origin main"}
        assert guard.check(push).verdict == "ask", line

    def test_a_readable_test_run_still_derives_it(self) -> None:
        spec = parse_spec(self.SPEC)
        assert replay_events(
            spec, self._run("cd app && pytest -q", "git push origin main")).verdict == "PASS"

    def test_an_unknown_line_meets_no_obligation(self) -> None:
        spec = parse_spec({"obligations": [{
            "id": "test-after-edit", "after": {"action_type": "Edit"},
            "require": {"command": {"words": ["pytest"]}, "ok": True}}]})
        run = [Event.make(1, "action", None, action_type="Edit"),
               Event.make(2, "action", None, action_type="Bash", command="eval pytest",
                          exit_code=0),
               Event.make(3, "final", None, task_success=True)]
        assert replay_events(spec, run).verdict == "BLOCK"

    def test_a_not_of_an_unknown_line_is_held_too(self) -> None:
        """Under ``not`` the sense turns: a guarded ``not`` of a harmless command holds an
        unknown line, since it may be anything else."""
        sel = compile_selector({"not": {"command": {"words": ["ls"]}}}, guarding=True)
        assert sel(Event.make(1, "action", None, action_type="Bash", command="eval ls"))
        evidence = compile_selector({"not": {"command": {"words": ["ls"]}}})
        assert not evidence(Event.make(1, "action", None, action_type="Bash",
                                       command="eval ls"))


def test_rtk_runs_the_rest_of_its_words():
    """rtk, a wrapper that shortens a command's output, runs the command it is given."""
    from roadcheck.shellcmd import matches_words

    assert matches_words("rtk git push origin main", ["git", "push"])
    assert matches_words("rtk git add a.py && rtk git commit -m x", ["git", "commit"])
    assert not matches_words("rtk git status", ["git", "push"])


class TestWrappersRunOneCommand:
    """Where a selector picks evidence, a wrapper runs the one command its words start
    after its own options and operands: ``time echo pytest`` runs ``echo``, not
    ``pytest``. Where a selector guards, every later word still may start the command."""

    TESTS = re.compile(r"(?:pytest|jest|python -m pytest)\b").match

    @pytest.mark.parametrize("line", [
        "time pytest -q", "time -p pytest", "env FOO=1 pytest", "env -u X FOO=1 pytest",
        "env -i PATH=/bin pytest", "timeout 5 pytest", "timeout -s KILL 5 pytest",
        "timeout --signal=KILL -k 2 5 pytest", "timeout --foreground 600 pytest",
        "nice -n 5 pytest", "nice -n5 pytest", "nice -10 pytest", "nice pytest",
        "sudo pytest", "sudo -u root pytest", "sudo -E -u root -- pytest",
        "sudo FOO=1 pytest", "nohup pytest", "command pytest", "exec pytest",
        "stdbuf -o0 pytest", "setsid -w pytest", "ionice -c3 pytest",
        "flock /tmp/l pytest", "flock -w 5 /tmp/l pytest", "xargs pytest",
        "xargs -n1 pytest", "xargs -0 -I % pytest %", "chronic pytest",
        "uv run pytest -q", "uv run --project /w pytest", "uv run -m pytest",
        "uvx pytest", "uvx --from x pytest", "npx jest", "npx --yes jest",
        "poetry run pytest", "direnv exec . pytest", "docker exec c pytest",
        "docker exec -it -w /app c pytest", "kubectl exec pod -- pytest",
        "ip netns exec x pytest", "rtk pytest", "rtk proxy pytest", "rtk test pytest",
        "time timeout 5 env A=1 pytest", "timeout 400 uv run pytest -q",
        "ssh host pytest", "ssh -p 22 host 'cd app && pytest'", "caffeinate -i pytest",
        "strace -f -o /tmp/t pytest", "find . -name x -exec pytest {} +",
        "flock /tmp/l -c pytest", "flock -w 5 /tmp/l -c 'pytest -q'", "env -S 'pytest -q'",
        "env -iS 'pytest -q'", "su -c pytest root", "su root -c pytest",
    ])
    def test_the_wrapped_command_runs(self, line: str) -> None:
        assert _is_bash(line), line
        assert runs_command(line, self.TESTS, unknown=False), line
        assert runs_command(line, self.TESTS), line

    @pytest.mark.parametrize("line", [
        "time echo pytest", "time -p echo pytest", "env echo pytest", "env FOO=pytest true",
        "env -u pytest true", "timeout 5 echo pytest", "timeout pytest echo",
        "timeout -s pytest 5 true", "nice echo pytest", "nice -n 5 echo pytest",
        "sudo echo pytest", "sudo -u pytest true", "sudo -u root echo pytest",
        "nohup echo pytest", "command -v pytest", "command -V pytest", "exec echo pytest",
        "exec -a pytest true", "stdbuf -o0 echo pytest", "setsid echo pytest",
        "ionice -c3 echo pytest", "flock pytest true", "flock /tmp/l echo pytest",
        "xargs echo pytest", "xargs -I pytest echo x", "xargs -n1 echo pytest",
        "chronic echo pytest", "uv run echo pytest", "uv run --with pytest python x.py",
        "uvx --from pytest black", "npx echo jest", "npx -p jest echo x",
        "poetry run echo pytest", "direnv exec pytest true", "docker exec pytest ls",
        "docker exec c echo pytest", "docker exec -w pytest c ls",
        "kubectl exec pytest -- ls", "ip netns exec pytest ls", "rtk echo pytest",
        "rtk proxy echo pytest", "ssh pytest ls", "ssh -l pytest host ls",
        "ssh host echo pytest", "sudo -l pytest", "doas -C x pytest",
        "time timeout 5 env A=1 echo pytest", "timeout 5 nice echo pytest",
        "su -c 'echo pytest' root", "bash -c 'echo pytest'", "watch echo pytest",
        "screen -dm pytest", "tmux new -d pytest", "coproc pytest",
        "setsid -f pytest", "docker exec -d c pytest", "ssh -f host pytest",
        "caffeinate -t pytest true", "strace -o pytest true",
        "flock /tmp/l grep -c pytest x", "env grep -S pytest x", "env -u X grep -S pytest x",
    ])
    def test_a_word_of_the_wrapper_or_an_argument_is_no_run(self, line: str) -> None:
        assert _is_bash(line), line
        assert not runs_command(line, self.TESTS, unknown=False), line

    @pytest.mark.parametrize("line", [
        "time echo pytest", "sudo -g wheel pytest", "timeout --unknown 5 pytest",
        "nice -x 5 pytest", "watch pytest"])
    def test_the_guard_still_holds_every_later_word(self, line: str) -> None:
        """The guard does not rely on knowing each wrapper's options: a word that may
        start the command still matches where a selector guards."""
        assert matches_words(line, ["pytest"])
        assert runs_command(line, self.TESTS)

    def test_an_option_the_reading_does_not_know_backs_nothing(self) -> None:
        """A wrapper option not known to take a value or not leaves the command unknown
        where a selector picks evidence (it may be that option's value)."""
        assert not runs_command("sudo --frobnicate pytest true", self.TESTS, unknown=False)
        assert not matches_words("timeout --weird 5 pytest", ["pytest"], unknown=False)

    def test_the_claim_of_a_wrapped_echo_is_not_backed(self) -> None:
        from roadcheck.acceptance import load_contract, verify_session
        from roadcheck.acceptance.files import contract_file
        from roadcheck.events import Trajectory

        contract = load_contract(contract_file("builtin:coding-agent"))

        def run(line: str) -> bool:
            events = [{"seq": 1, "event": "action", "action_type": "Bash", "command": line,
                       "exit_code": 0},
                      {"seq": 2, "event": "message", "role": "assistant",
                       "text": "All tests pass."},
                      {"seq": 3, "event": "final", "task_success": True}]
            (only,) = verify_session(contract, Trajectory(events)).reasons
            return only.ok

        assert not run("time echo pytest")
        assert not run("timeout 5 echo pytest -q")
        assert run("time pytest -q")
        assert run("timeout 5 pytest")
