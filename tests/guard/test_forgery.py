"""Forged guard state is refused: the hook denies, naming the file, and audit says BROKEN.

The attacker is the agent the guard watches: it can write the state directory
(not the key's). ``benchmarks/guard_forgery.py`` holds the whole matrix; the
tests below check its outcome and, for the cases the issue names, the hook's
exact answer.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roadcheck.guard import GuardStore
from roadcheck.guard.claude_code import HookAnswer, run_hook
from roadcheck.guard.seal import Sealer, scope_of

from ..conftest import ROOT, load_script
from . import stored

bench = load_script(ROOT / "benchmarks" / "guard_forgery.py")

#: Without a key, what a forger who knows the formats gets past the guard: every
#: resealed file, a whole rollback, a whole deletion (the session starts afresh, so
#: it asks again), and a decision record edited in place (its chain still holds).
UNDETECTED_WITHOUT_A_KEY = {
    ("edit", "events: the spent push made a message, resealed without a key"),
    ("edit", "spec cache: a spec without rules, resealed without a key"),
    ("edit", "snapshot: the earlier engine state relabelled, resealed without a key"),
    ("edit", "asked calls: the next push added, resealed without a key"),
    ("append", "events: a checkpoint appended, resealed without a key"),
    ("copy", "events: the donor's state renamed to the victim, resealed without a key"),
    ("rollback", "the whole session directory put back"),
    ("rollback", "the state file and its snapshot put back"),
    ("delete", "the state file and the decision log"),
    ("delete", "the whole session directory"),
}


class Session:
    """A Claude Code session driven through ``run_hook`` (the hook's own function)."""

    def __init__(self, tmp: Path, *flags: str) -> None:
        self.tmp = tmp
        self.spec = tmp / "spec.yaml"
        self.spec.write_text(bench.SPEC)
        self.state = tmp / "state"
        self.no_key = "--no-key" in flags

    def __call__(self, event: str, session: str = "victim", **doc: Any) -> HookAnswer:
        data = json.dumps({"hook_event_name": event, "session_id": session, **doc}).encode()
        return run_hook(data, str(self.spec), str(self.state), no_key=self.no_key)

    def push(self, call: str, event: str = "PreToolUse", session: str = "victim",
             ) -> HookAnswer:
        return self(event, session, tool_name="Bash", tool_input={"command": "git push"},
                    tool_use_id=call)

    def spent(self) -> Session:
        """The victim approved a push, which ran and spent it; then a push was asked."""
        assert self("UserPromptSubmit", prompt="yes, push it").exit == 0
        assert self.push("t1").exit == 0
        assert self.push("t1", "PostToolUse").exit == 0
        assert self._verdict(self.push("t2")) == "ask"
        return self

    @staticmethod
    def _verdict(answer: HookAnswer) -> str:
        assert answer.exit == 0, answer.stderr
        verdict: str = json.loads(answer.stdout)["hookSpecificOutput"]["permissionDecision"] \
            if answer.stdout else "allow"
        return verdict

    def cli(self, *args: str, env: dict[str, str] | None = None, stdin: str = "",
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "roadcheck", *args], input=stdin,
                              capture_output=True, text=True, cwd=ROOT, timeout=60,
                              env={**os.environ, **(env or {})})


def _denied(answer: HookAnswer, *words: str) -> str:
    """The answer blocks the call (exit 2, no JSON), in one line naming what is wrong."""
    assert answer.exit == 2 and answer.stdout == "", answer
    (line,) = answer.stderr.splitlines()
    assert line.startswith("roadcheck guard: denied: evidence-broken: "), line
    for word in words:
        assert word in line, line
    return line


class TestTheIssue:
    def test_a_checkpoint_appended_by_hand_is_refused(self, tmp_path: Path) -> None:
        """The reported bypass: a checkpoint appended to the stored events was honoured."""
        s = Session(tmp_path).spent()
        path = s.state / "victim" / "guard.json"
        doc = stored.state(path)
        doc["events"].append({"seq": len(doc["events"]) + 1, "event": "checkpoint",
                              "checkpoint_id": "push_ok", "confirmed_by": "user"})
        line = path.read_bytes().partition(b"\n")[0]
        path.write_bytes(line + b"\n" + json.dumps(doc).encode())
        _denied(s.push("t3"), str(path), "its seal counts")

    def test_a_checkpoint_appended_and_resealed_without_the_key_is_refused(
            self, tmp_path: Path) -> None:
        """The forger who also rewrites the seal line cannot make its MAC."""
        s = Session(tmp_path).spent()
        path = s.state / "victim" / "guard.json"
        doc = stored.state(path)
        doc["events"].append({"seq": len(doc["events"]) + 1, "event": "checkpoint",
                              "checkpoint_id": "push_ok", "confirmed_by": "user"})
        path.write_bytes(Sealer(None, scope_of(s.state)).seal(
            "state", "victim", 99, json.dumps(doc).encode()))
        _denied(s.push("t3"), str(path), "carries no MAC, but the guard has a key")
        _denied(s.push("t3", "PostToolUse"), str(path))  # every hook event fails closed

    def test_a_rewritten_spec_cache_is_refused(self, tmp_path: Path) -> None:
        s = Session(tmp_path).spent()
        (entry,) = (s.state / ".specs").iterdir()
        entry.write_bytes(entry.read_bytes().replace(b"push_ok", b"push_no"))
        _denied(s.push("t3"), str(entry), "MAC does not verify")

    def test_a_deleted_decision_log_is_broken_not_fresh(self, tmp_path: Path) -> None:
        """Deleted, a log that had records is broken: the hook denies, audit says BROKEN."""
        s = Session(tmp_path).spent()
        log = s.state / "victim" / "evidence.sqlite"
        log.unlink()
        _denied(s.push("t3"), str(log), "the decision log is gone")
        assert not log.exists()  # never recreated
        audit = s.cli("audit", "victim", "--runs-dir", str(s.state))
        assert audit.returncode == 1, audit.stdout + audit.stderr
        assert "chain: BROKEN (cut): " in audit.stdout and "decision log is gone" in audit.stdout
        verify = s.cli("evidence", "verify", "victim", "--runs-dir", str(s.state))
        assert verify.returncode == 1 and "BROKEN" in verify.stdout, verify.stdout

    def test_a_truncated_decision_log_is_broken(self, tmp_path: Path) -> None:
        """Its last records cut and its head row rewritten to match (without the key)."""
        s = Session(tmp_path).spent()
        world = bench.World(tmp_path, keyed=True)
        bench.cut_log(world, None)
        _denied(s.push("t3"), "evidence.sqlite", "the decision log carries no MAC")
        bench.cut_log(world, bench.ATTACKER)  # and with a key of the forger's own
        _denied(s.push("t3"), "evidence.sqlite", "head does not verify")
        audit = s.cli("audit", "victim", "--runs-dir", str(s.state))
        assert audit.returncode == 1 and "BROKEN" in audit.stdout, audit.stdout

    def test_a_rolled_back_session_is_refused(self, tmp_path: Path) -> None:
        """The session directory put back as it was before the approval was spent."""
        import shutil

        s = Session(tmp_path)
        assert s("UserPromptSubmit", prompt="yes, push it").exit == 0
        shutil.copytree(s.state / "victim", tmp_path / "copy")
        assert s.push("t1").exit == 0 and s.push("t1", "PostToolUse").exit == 0
        shutil.rmtree(s.state / "victim")
        shutil.copytree(tmp_path / "copy", s.state / "victim")
        _denied(s.push("t2"), "guard.json", "rolled back")

    def test_state_copied_from_another_session_is_refused(self, tmp_path: Path) -> None:
        s = Session(tmp_path).spent()
        assert s("UserPromptSubmit", "donor", prompt="yes, push it").exit == 0
        target = s.state / "victim" / "guard.json"
        target.write_bytes((s.state / "donor" / "guard.json").read_bytes())
        _denied(s.push("t3"), str(target), "belongs to session 'donor'")

    def test_a_healthy_session_audits_with_the_guards_own_key(self, tmp_path: Path) -> None:
        """No --key-file: audit verifies a guard session with the guard key, not the
        environment's evidence key."""
        s = Session(tmp_path).spent()
        audit = s.cli("audit", "victim", "--runs-dir", str(s.state),
                      env={"ROADCHECK_EVIDENCE_KEY": "another key, for harness runs"})
        assert audit.returncode == 0, audit.stdout + audit.stderr
        assert "chain: OK: 2 records" in audit.stdout


class TestTheKey:
    def test_created_on_first_use_only_for_its_owner(self, tmp_path: Path) -> None:
        """In the user's config directory, mode 0600 in a directory of mode 0700."""
        Session(tmp_path).spent()
        key = Path(os.environ["XDG_CONFIG_HOME"]) / "roadcheck" / "guard.key"
        if os.name == "posix":
            assert stat.S_IMODE(key.stat().st_mode) == 0o600
            assert stat.S_IMODE(key.parent.stat().st_mode) & 0o077 == 0
        assert len(key.read_bytes().strip()) == 64
        assert (key.parent / "guard.heads").is_dir()
        assert not list((tmp_path / "state").rglob("*.key"))

    def test_guards_starting_at_once_agree_on_one_key(self, tmp_path: Path) -> None:
        key = tmp_path / "config" / "guard.key"
        code = ("import sys\nfrom roadcheck.guard.seal import guard_key\n"
                "print(guard_key(sys.argv[1]).key.key_id)\n")
        procs = [subprocess.Popen([sys.executable, "-c", code, str(key)], cwd=ROOT,
                                  stdout=subprocess.PIPE, text=True) for _ in range(6)]
        ids = {p.communicate(timeout=60)[0].strip() for p in procs}
        assert len(ids) == 1 and [p.returncode for p in procs] == [0] * 6
        assert not [p for p in key.parent.iterdir() if p.name != "guard.key"]

    @pytest.mark.skipif(os.name != "posix", reason="file modes")
    def test_a_key_others_can_read_is_refused(self, tmp_path: Path) -> None:
        s = Session(tmp_path).spent()
        key = Path(os.environ["XDG_CONFIG_HOME"]) / "roadcheck" / "guard.key"
        key.chmod(0o644)
        try:
            answer = s.push("t3")
        finally:
            key.chmod(0o600)
        assert answer.exit == 2 and "the guard key is readable by others" in answer.stderr

    def test_a_key_inside_the_state_directory_is_refused(self, tmp_path: Path) -> None:
        spec = tmp_path / "spec.yaml"
        spec.write_text(bench.SPEC)
        data = json.dumps({"hook_event_name": "PreToolUse", "session_id": "s",
                           "tool_name": "Bash", "tool_input": {"command": "ls"}}).encode()
        answer = run_hook(data, str(spec), str(tmp_path / "state"),
                          key_file=str(tmp_path / "state" / "guard.key"))
        assert answer.exit == 2 and "the guard key is inside the state directory" in \
            answer.stderr

    def test_a_keyed_session_is_refused_without_the_key(self, tmp_path: Path) -> None:
        """Run without a key, the guard cannot vouch for a keyed session: deny."""
        Session(tmp_path).spent()
        answer = Session(tmp_path, "--no-key").push("t3")
        assert answer.exit == 2
        assert "is authenticated (key id" in answer.stderr and "has no key" in answer.stderr

    def test_an_unkeyed_session_is_refused_with_a_key(self, tmp_path: Path) -> None:
        """A session without MACs under a guard with a key: written without it, refused."""
        Session(tmp_path, "--no-key").spent()
        answer = Session(tmp_path).push("t3")
        assert answer.exit == 2 and "carries no MAC, but the guard has a key" in answer.stderr


class TestWithoutAKey:
    def test_no_key_says_so_once_and_keeps_working(self, tmp_path: Path) -> None:
        """--no-key: a notice on stderr when the session starts, then the usual answers."""
        s = Session(tmp_path)
        doc = json.dumps({"hook_event_name": "PreToolUse", "session_id": "v",
                          "tool_name": "Bash", "tool_input": {"command": "git push"}})
        args = ("guard", "claude-code", "--spec", str(s.spec), "--state-dir", str(s.state),
                "--no-key")
        first = s.cli(*args, stdin=doc)
        assert first.returncode == 0, first.stderr
        assert json.loads(first.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
        assert first.stderr.startswith("roadcheck guard: running without a key"), first.stderr
        again = s.cli(*args, stdin=doc)
        assert (again.returncode, again.stderr) == (0, "")

    def test_an_unwritable_key_directory_leaves_the_guard_without_a_key(
            self, tmp_path: Path) -> None:
        """The user's config directory cannot be written: a notice, and the guard works."""
        blocker = tmp_path / "not-a-directory"
        blocker.write_text("")
        s = Session(tmp_path)
        doc = json.dumps({"hook_event_name": "PreToolUse", "session_id": "v",
                          "tool_name": "Bash", "tool_input": {"command": "git push"}})
        args = ("guard", "claude-code", "--spec", str(s.spec), "--state-dir", str(s.state))
        env = {"XDG_CONFIG_HOME": str(blocker)}
        first = s.cli(*args, stdin=doc, env=env)
        assert first.returncode == 0, first.stderr
        assert json.loads(first.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
        assert "roadcheck guard: no key: cannot create" in first.stderr
        again = s.cli(*args, stdin=doc, env=env)
        assert again.returncode == 0 and again.stderr == ""  # said when the session started

    def test_a_careless_edit_is_still_refused(self, tmp_path: Path) -> None:
        s = Session(tmp_path, "--no-key").spent()
        path = s.state / "victim" / "guard.json"
        path.write_bytes(path.read_bytes().replace(b'"git push"', b'"git pull"'))
        line = _denied(s.push("t3"), str(path))
        assert "digest does not verify" in line


class TestServe:
    def test_forged_state_is_a_deny_status(self, tmp_path: Path) -> None:
        """guard serve answers a forged session with a non-2xx deny."""
        from roadcheck.guard.serve import GuardServer

        store = GuardStore(tmp_path / "state", {"mandatory_checkpoints": [
            {"checkpoint_id": "ok", "must_precede": "deploy"}]})
        server = GuardServer(store, "127.0.0.1", 0)
        try:
            assert server.answer("/v1/sessions/s1", b"")[0] == 201
            path = tmp_path / "state" / "s1" / "guard.json"
            path.write_bytes(path.read_bytes() + b" ")
            status, doc = server.answer("/v1/sessions/s1/check",
                                        b'{"event": "action", "action_type": "deploy"}')
        finally:
            server.server_close()
        assert status == 400 and doc["verdict"] == "deny" and "guard.json" in doc["error"]


def _check(results: dict[tuple[str, bool], list[tuple[Any, str]]]) -> None:
    """With a key every case is detected; without one, exactly the documented ones are not."""
    missed = [(c.cls, c.name, outcome) for (cls, keyed), got in results.items() if keyed
              for c, outcome in got if outcome != "detected"]
    assert missed == []
    ran = {(c.cls, c.name) for (cls, keyed), got in results.items() if not keyed
           for c, _ in got}
    undetected = {(c.cls, c.name) for (cls, keyed), got in results.items() if not keyed
                  for c, outcome in got if outcome != "detected"}
    assert undetected == UNDETECTED_WITHOUT_A_KEY & ran
    assert {cls for cls, keyed in results if keyed} == set(bench.CLASSES)
    for (cls, keyed), got in sorted(results.items()):
        hits = sum(outcome == "detected" for _, outcome in got)
        print(f"{cls:9} {'key' if keyed else 'no key':7} {hits}/{len(got)}")


@pytest.mark.benchmark
@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, links and flock")
def test_half_of_every_class() -> None:
    """The default run: half of each class's cases in each mode (every class with a key,
    every class of two or more cases without), judged as the whole matrix is."""
    results = bench.matrix(half=True)
    assert {cls for cls, keyed in results if not keyed} == set(bench.CLASSES) - {"lock"}
    _check(results)
    # some of what a keyless guard cannot see is among the half, and is seen not to be
    assert len({(c.cls, c.name) for (_, keyed), got in results.items() if not keyed
                for c, outcome in got if outcome != "detected"}) >= 3


@pytest.mark.stress
@pytest.mark.benchmark
@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, links and flock")
def test_the_forgery_matrix() -> None:
    """With a key every class is detected; without one, exactly what the docs say is not
    (``pytest -s`` prints the table). The whole matrix: ``pytest -m stress``."""
    results = bench.matrix()
    _check(results)
    assert {(c.cls, c.name) for (_, keyed), got in results.items() if not keyed
            for c, outcome in got if outcome != "detected"} == UNDETECTED_WITHOUT_A_KEY
