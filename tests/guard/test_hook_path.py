"""The hook's lean path: what it imports, its argument parser, and its snapshots."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

import roadcheck
from roadcheck.guard import snapshot
from roadcheck.guard.claude_code import parse_args
from roadcheck.guard.store import STATE

from ..conftest import ROOT
from . import stored

SPEC = """\
mandatory_checkpoints:
  - checkpoint_id: push_ok
    scope: each
    consume: true
    binds: {tool: true, args: true}
    must_precede: {action_type: Bash, command: {words: [git, push]}}
  - checkpoint_id: ok
    must_precede: deploy
    voided_by: [{event: message, role: user, text: {regex: "(?i)stop"}}]
derive:
  - {checkpoint_id: ok, when: {event: message, role: user, text: {regex: "(?i)^yes"}}}
"""
#: Modules a hook call on a known session must not import: the CLI framework, the
#: document loader and its typed conversion (the spec's structs come from the cache), and
#: every optional extra.
NOT_ON_THE_HOOK_PATH = ("click", "yaml", "rich", "pydantic", "jsonschema",
                        "roadcheck.cli", "roadcheck.documents.loader",
                        "roadcheck.documents._read", "roadcheck.report",
                        "roadcheck.harness",
                        "roadcheck.acceptance", "roadcheck.revalidation", "roadcheck.integrations",
                        "shutil", "tempfile", "cryptography", "rfc8785", "roadcheck.guard.signed")

PROBE = """\
import json, os, sys
leave = os._exit
def _exit(code):
    sys.__stderr__.write("\\nMODULES " + json.dumps(sorted(sys.modules)))
    sys.__stderr__.flush()
    leave(code)
os._exit = _exit
sys.argv[0] = "roadcheck"
from roadcheck.__main__ import main
try:
    main()
except SystemExit:
    _exit(0)
"""


def _hook(tmp: Path, payload: dict[str, Any], *extra: str,
          ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run one hook call as the console script does; its result and the modules it loaded."""
    doc = {"session_id": "s-1", "transcript_path": "none.jsonl", **payload}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "guard", "claude-code", "--spec", str(tmp / "spec.yaml"),
         "--state-dir", str(tmp / "state"), *extra],
        input=json.dumps(doc), capture_output=True, text=True, cwd=ROOT, timeout=60)
    err, _, modules = out.stderr.rpartition("\nMODULES ")
    out.stderr = err
    return out, json.loads(modules)


def _bash(command: str, call: str, event: str = "PreToolUse") -> dict[str, Any]:
    return {"hook_event_name": event, "tool_name": "Bash", "tool_input": {"command": command},
            "tool_use_id": call}


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    return path


class TestImports:
    def test_a_call_on_a_known_session_imports_only_what_it_needs(self, tmp_path: Path,
                                                                  spec: Path) -> None:
        """After the first call, a call loads no CLI framework, document layer or extra."""
        first, loaded = _hook(tmp_path, _bash("ls", "t0"))
        assert first.returncode == 0, first.stderr
        assert "click" not in loaded and "roadcheck.cli" not in loaded
        out, loaded = _hook(tmp_path, _bash("git push", "t1"))
        assert json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
        assert "roadcheck.guard.snapshot" in loaded and "sqlite3" in loaded  # it did the work
        assert [m for m in NOT_ON_THE_HOOK_PATH
                if m in loaded or any(n.startswith(m + ".") for n in loaded)] == []

    def test_a_contract_costs_a_call_nothing(self, tmp_path: Path, spec: Path) -> None:
        """--contract is read at a stop only: a call's hook imports no contract, no YAML."""
        contract = ("--contract", "builtin:coding-agent")
        first, _ = _hook(tmp_path, _bash("ls", "t0"), *contract)
        assert first.returncode == 0, first.stderr
        out, loaded = _hook(tmp_path, _bash("git push", "t1"), *contract)
        assert json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
        assert [m for m in NOT_ON_THE_HOOK_PATH
                if m in loaded or any(n.startswith(m + ".") for n in loaded)] == []
        stop, loaded = _hook(tmp_path, {"hook_event_name": "Stop",
                                        "last_assistant_message": "All tests pass."}, *contract)
        assert json.loads(stop.stdout)["decision"] == "block"
        assert "roadcheck.acceptance.said" in loaded

    def test_help_still_goes_through_click(self, tmp_path: Path, spec: Path) -> None:
        """--help is click's, word for word."""
        out, loaded = _hook(tmp_path, {}, "--help")
        assert out.returncode == 0 and "Usage: roadcheck guard claude-code [OPTIONS]" in out.stdout
        assert "click" in loaded


class TestParseArgs:
    """The lean parser takes what click takes, and defers everything else to click."""

    @pytest.mark.parametrize("args", [
        ["--spec", "s.yaml"],
        ["--spec=s.yaml", "--state-dir", "d", "--approver", "ann", "--grant", "--catch-up"],
        ["--catch-up", "--approver=bob", "--spec", "s.yaml", "--state-dir=d"],
        ["--spec", "s.yaml", "--key-file", "k", "--no-key"],
        ["--key-file=k", "--spec=s.yaml"],
        ["--spec", "s.yaml", "--contract", "builtin:coding-agent", "--max-reprompts", "3"],
        ["--contract=c.yaml", "--max-reprompts=0", "--spec=s.yaml"],
    ])
    def test_agrees_with_click(self, args: list[str]) -> None:
        """A plain command line parses to the values click gives the command."""
        from roadcheck.cli import cli

        group = cli.commands["guard"]
        assert isinstance(group, click.Group)
        # contexts chained as the CLI chains them (the help option names come from the root)
        root = click.Context(cli, info_name="roadcheck", **cli.context_settings)
        parent = click.Context(group, info_name="guard", parent=root)
        ctx = group.commands["claude-code"].make_context("claude-code", list(args),
                                                         parent=parent)
        assert parse_args(args) == ctx.params

    @pytest.mark.parametrize("args", [
        [], ["--help"], ["-h"], ["--spec"], ["--spec", "--grant"], ["--grant"],
        ["--spec", "a", "--spec", "b"], ["--spec", "a", "extra"], ["--spec", "a", "--grant=1"],
        ["--spec", "a", "--no-key=1"], ["--spec", "a", "--key-file"],
        ["--spec", "a", "--unknown"], ["--spec", "a", "--"], ["--spe", "a"],
    ])
    def test_anything_else_is_left_to_click(self, args: list[str]) -> None:
        """Help, a missing or repeated option, a stray argument: click answers those."""
        assert parse_args(args) is None

    def test_paths_click_would_refuse_are_left_to_click(self, tmp_path: Path) -> None:
        """A directory as the spec, or a file as the state directory, gets click's error."""
        afile = tmp_path / "f"
        afile.write_text("x")
        assert parse_args(["--spec", str(tmp_path)]) is None
        assert parse_args(["--spec", str(afile), "--state-dir", str(afile)]) is None
        assert parse_args(["--spec", str(afile), "--state-dir", str(tmp_path)]) is not None

    def test_a_refused_path_prints_clicks_error(self, tmp_path: Path, spec: Path) -> None:
        """The same one-line usage error as before, exit 2."""
        out = subprocess.run([sys.executable, "-m", "roadcheck", "guard", "claude-code", "--spec",
                              str(tmp_path)], capture_output=True, text=True, cwd=ROOT,
                             timeout=60)
        assert out.returncode == 2
        assert out.stderr.startswith("error[usage]: guard claude-code: invalid value for "
                                     "'--spec'")


EVENTS: list[dict[str, Any]] = [
    {"event": "message", "role": "user", "text": "yes, go"},
    {"event": "action", "action_type": "deploy"},
    {"event": "handoff", "from_agent": "a", "to_agent": "b", "payload": {"x": 1}},
    {"event": "handoff", "from_agent": "b", "to_agent": "c", "payload": {"x": 1}},
    {"event": "checkpoint", "checkpoint_id": "push_ok", "confirmed_by": "ann", "tool": "Bash",
     "args_sha256": roadcheck.events.args_digest({"command": "git push"})},
    {"event": "message", "role": "user", "text": "stop"},
]
CALLS = [{"event": "action", "action_type": "deploy"},
         {"event": "action", "action_type": "Bash", "args": {"command": "git push"},
          "command": "git push"},
         {"event": "action", "action_type": "Bash", "args": {"command": "git push -f"},
          "command": "git push -f"}]


def _session(tmp: Path, spec: Path, *, create: bool = False) -> Any:
    return roadcheck.GuardStore(tmp / "state", spec).session("s", create=create)


class TestSnapshot:
    def test_a_restored_session_decides_as_a_rebuilt_one(self, tmp_path: Path,
                                                          spec: Path) -> None:
        """The engine restored from the snapshot answers every call as re-feeding would."""
        with _session(tmp_path, spec, create=True) as live:
            for event in EVENTS:
                live.observe(event)
            fresh = [live.guard.check(c) for c in CALLS]
        with _session(tmp_path, spec) as live:
            assert live.restored
            assert [live.guard.check(c) for c in CALLS] == fresh
            assert [e["event"] for e in live.guard.records] == [e["event"] for e in EVENTS]
            assert live.guard.last_seq == 6
        (tmp_path / "state" / "s" / snapshot.SNAPSHOT).unlink()
        with _session(tmp_path, spec) as live:
            assert not live.restored
            assert [live.guard.check(c) for c in CALLS] == fresh

    def test_an_empty_snapshot_is_ignored_and_rebuilt(self, tmp_path: Path,
                                                      spec: Path) -> None:
        """An empty snapshot (what a crash can leave of a file renamed into place without
        fsync) is not read: the events are re-fed, and the snapshot is written again."""
        with _session(tmp_path, spec, create=True) as live:
            for event in EVENTS:
                live.observe(event)
            fresh = [live.guard.check(c) for c in CALLS]
        (tmp_path / "state" / "s" / snapshot.SNAPSHOT).write_bytes(b"")
        with _session(tmp_path, spec) as live:
            assert not live.restored
            assert [live.guard.check(c) for c in CALLS] == fresh
        with _session(tmp_path, spec) as live:  # rewritten after the rebuild
            assert live.restored

    @pytest.mark.parametrize("damage", ["flip", "garbage", "extended", "truncate", "header"])
    def test_an_edited_snapshot_is_refused(self, tmp_path: Path, spec: Path,
                                           damage: str) -> None:
        """A snapshot whose seal does not verify was written by someone else: refused."""
        with _session(tmp_path, spec, create=True) as live:
            for event in EVENTS:
                live.observe(event)
        path = tmp_path / "state" / "s" / snapshot.SNAPSHOT
        raw = path.read_bytes()
        path.write_bytes({"flip": raw[:-5] + bytes([raw[-5] ^ 1]) + raw[-4:],
                          "garbage": b"0" * 64 + b"\n" + b"\x00" * 40,
                          "extended": raw + b"\x00", "truncate": raw[:len(raw) // 2],
                          "header": raw[:10]}[damage])
        with pytest.raises(roadcheck.StoreError, match=r"guard\.snapshot"), \
                _session(tmp_path, spec):
            pass

    def test_a_snapshot_of_other_events_or_another_spec_is_not_used(self, tmp_path: Path,
                                                                    spec: Path) -> None:
        """Keys: the state file's sha256 and the spec's sha256 must both match."""
        with _session(tmp_path, spec, create=True) as live:
            live.observe(EVENTS[0])
        where = tmp_path / "state" / "s"
        old = (where / snapshot.SNAPSHOT).read_bytes()
        with _session(tmp_path, spec) as live:
            live.observe(EVENTS[1])
        (where / snapshot.SNAPSHOT).write_bytes(old)  # a snapshot the state file moved past
        with _session(tmp_path, spec) as live:
            assert not live.restored and live.guard.last_seq == 2
        spec.write_text(SPEC.replace("scope: each", "scope: first"))
        with _session(tmp_path, spec) as live:
            assert not live.restored and live.guard.last_seq == 2

    def test_a_corrupt_state_file_still_fails_closed(self, tmp_path: Path, spec: Path) -> None:
        """The snapshot never stands in for the state file: an edited event is an error."""
        with _session(tmp_path, spec, create=True) as live:
            live.observe(EVENTS[0])
        path = tmp_path / "state" / "s" / STATE
        state = stored.state(path)
        state["events"][0]["seq"] = "one"
        store = roadcheck.GuardStore(tmp_path / "state", spec)
        path.write_bytes(store.sealer.seal("state", "s", 9, json.dumps(state).encode()))
        with pytest.raises(roadcheck.StoreError, match="corrupt guard state"), \
                _session(tmp_path, spec):
            pass

    def test_a_check_leaves_the_state_file_alone(self, tmp_path: Path, spec: Path) -> None:
        """Only the decision log is written durably by a call that observes nothing (once
        the state file counts the log's first decision)."""
        with _session(tmp_path, spec, create=True) as live:
            live.observe(EVENTS[0])
            live.check(CALLS[0])
        path = tmp_path / "state" / "s" / STATE
        before = path.stat().st_mtime_ns, path.read_bytes()
        with _session(tmp_path, spec) as live:
            live.check(CALLS[1])
        assert (path.stat().st_mtime_ns, path.read_bytes()) == before

    def test_the_spec_cache_is_keyed_by_the_specs_bytes(self, tmp_path: Path,
                                                        spec: Path) -> None:
        """An edited spec is read and checked afresh; a bad edit is refused as before."""
        store = roadcheck.GuardStore(tmp_path / "state", spec)
        cached = roadcheck.GuardStore(tmp_path / "state", spec).spec
        assert cached == store.spec and cached.sha256 == store.spec.sha256
        assert len(list((tmp_path / "state" / ".specs").iterdir())) == 1
        spec.write_text("mandatory_checkpoints: [{checkpoint_id: x}]\n")
        with pytest.raises(roadcheck.SpecError, match="must_precede"):
            roadcheck.GuardStore(tmp_path / "state", spec)

    def test_an_empty_spec_cache_is_ignored(self, tmp_path: Path, spec: Path) -> None:
        """An empty cache entry (a crash) is not read; the spec file is."""
        want = roadcheck.GuardStore(tmp_path / "state", spec).spec
        (entry,) = (tmp_path / "state" / ".specs").iterdir()
        entry.write_bytes(b"")
        assert roadcheck.GuardStore(tmp_path / "state", spec).spec == want

    def test_an_edited_spec_cache_is_refused(self, tmp_path: Path, spec: Path) -> None:
        """A whole cache entry that fails its seal was written by someone else: refused."""
        roadcheck.GuardStore(tmp_path / "state", spec)
        (entry,) = (tmp_path / "state" / ".specs").iterdir()
        entry.write_bytes(entry.read_bytes()[:-3] + b"xyz")
        with pytest.raises(roadcheck.StoreError, match="MAC does not verify"):
            roadcheck.GuardStore(tmp_path / "state", spec)


class TestAsked:
    def test_the_asked_calls_are_committed_with_the_decisions(self, tmp_path: Path,
                                                              spec: Path) -> None:
        """Asked calls are kept in the decision log's database, sealed with its head."""
        with _session(tmp_path, spec, create=True) as live:
            live.check(CALLS[1])
            live.asked["t1"] = ["push_ok"]
        with _session(tmp_path, spec) as live:
            assert live.asked == {"t1": ["push_ok"]}
        assert not (tmp_path / "state" / "s" / "guard.asked.json").exists()


class TestAnswer:
    def test_an_answer_that_cannot_be_written_blocks(self, tmp_path: Path, spec: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
        """Standard output closed under the hook: exit 2 with the reason, not 'no decision'."""
        import io

        from roadcheck.guard import claude_code

        class Closed(io.StringIO):
            def flush(self) -> None:
                raise BrokenPipeError(32, "Broken pipe")

        err = io.StringIO()
        stdin = io.TextIOWrapper(io.BytesIO(json.dumps(
            {"session_id": "s-1", **_bash("git push", "t1")}).encode()))
        monkeypatch.setattr("sys.stdin", stdin)
        monkeypatch.setattr("sys.stdout", Closed())
        monkeypatch.setattr("sys.stderr", err)
        options = parse_args(["--spec", str(spec), "--state-dir", str(tmp_path / "state")])
        assert options is not None
        assert claude_code.main(options) == 2
        assert err.getvalue().startswith("roadcheck guard: denied: cannot write the answer: ")


class TestSnapshotShape:
    def test_a_snapshot_of_another_shape_is_rebuilt_from_a_fresh_guard(
            self, tmp_path: Path, spec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A restore that fails half-way leaves nothing behind: the events are re-fed."""
        with _session(tmp_path, spec, create=True) as live:
            for event in EVENTS:
                live.observe(event)
            fresh = [live.guard.check(c) for c in CALLS]

        def half_way(guard: Any, *args: Any) -> bool:
            guard._last = 50  # re-fed from seq 1 on top of this, the events would not follow
            raise ValueError("a row of another length")

        monkeypatch.setattr(snapshot, "restore_state", half_way)
        with _session(tmp_path, spec) as live:
            assert not live.restored
            assert [live.guard.check(c) for c in CALLS] == fresh


class TestABugBlocks:
    """Claude Code lets a call run on any exit code but 2: a hook that fails must exit 2."""

    BOOM = """\
import sys
import roadcheck.guard.claude_code as hook
def boom(*args, **kwargs):
    raise RuntimeError("boom")
hook.{name} = boom
sys.argv[0] = "roadcheck"
from roadcheck.__main__ import main
main(sys.argv[1:])
"""

    @pytest.mark.parametrize("name", ["main", "run_hook"])
    @pytest.mark.parametrize("lean", [True, False], ids=["lean-path", "click-path"])
    def test_an_error_escaping_the_hook_exits_2(self, tmp_path: Path, name: str,
                                                lean: bool) -> None:
        spec = tmp_path / "spec.yaml"
        spec.write_text(SPEC)
        # --help-free but unusual spacing of options sends the call through click instead
        args = (["guard", "claude-code", "--spec", str(spec), "--state-dir", str(tmp_path / "s")]
                if lean else ["guard", "claude-code", f"--spec={spec}",
                              f"--state-dir={tmp_path / 's'}", "--approver", "user",
                              "--approver", "user"])
        event = {"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash",
                 "tool_input": {"command": "git push"}, "tool_use_id": "t1"}
        proc = subprocess.run([sys.executable, "-c", self.BOOM.format(name=name), *args],
                              input=json.dumps(event), capture_output=True, text=True,
                              timeout=60, cwd=ROOT)
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        assert "boom" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert proc.stdout == ""
