"""Every CLI's hook adapter answers its CLI's documented payloads exactly as that CLI needs.

For each CLI, ``tests/data/hooks/<cli>/`` holds payloads in the CLI's own schema (see
its README for the version followed) and ``expected.json`` the exact answer for each:
exit code, standard output, standard error. The cases run in order in one session,
under ``tests/data/hooks/spec.yaml``: a prompt, an allowed call and its result, a
failed call, a call the guard asks about, one it denies, the assistant handing the
turn back, input that is malformed or of the wrong shape, a spec that cannot be read,
and a hook that runs out of time. ``python -m tests.guard.test_hook_conformance``
rewrites the expected answers (review the diff).

The no-fail-open property is proved beside it: whatever bytes a hook is given, an
answer that lets the call run comes only from a guard that allowed it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roadcheck.guard import hooks
from roadcheck.guard.hooks import HookAnswer

from ..conftest import DATA, ROOT

HOOKS = DATA / "hooks"
SPEC = "tests/data/hooks/spec.yaml"
BROKEN = "tests/data/hooks/broken_spec.yaml"
CLIS = sorted(hooks.ADAPTERS)
#: The cases, in the order they run in one session (a CLI without a payload skips one).
ORDER = ("prompt", "pre_allow", "post", "failure", "pre_ask", "permission", "pre_deny", "stop",
         "subagent_stop", "unread", "missing_session", "camel_case")


def lets_run(cli: str, answer: HookAnswer) -> bool:
    """Would ``cli`` run the call on this answer of a pre-tool hook, without asking anyone?

    Read from each CLI's documentation: what its hook runner does with the exit code
    and the output. An ``ask`` puts the call to the person: it does not run unasked.
    """
    out: dict[str, Any] = {}
    if answer.stdout.strip():
        try:
            out = json.loads(answer.stdout)
        except ValueError:
            return True  # unreadable output: the CLI ignores it
    specific = out.get("hookSpecificOutput") or {}
    if cli in ("claude-code", "codex"):
        if answer.exit == 2:
            return cli == "codex" and not answer.stderr.strip()  # Codex needs a reason
        if answer.exit != 0:
            return True
        if cli == "codex":
            reason = str(specific.get("permissionDecisionReason") or "").strip()
            behavior = (specific.get("decision") or {}).get("behavior")
            return not ((specific.get("permissionDecision") == "deny" and reason)
                        or behavior == "deny")
        return specific.get("permissionDecision") not in ("deny", "ask") and (
            (specific.get("decision") or {}).get("behavior") != "deny")
    if cli == "gemini":
        return answer.exit != 2 and not (answer.exit == 0 and out.get("decision") in
                                         ("deny", "block"))
    if cli == "opencode":  # the plugin throws unless it reads an allow with exit 0
        return answer.exit == 0 and out.get("decision") == "allow"
    if cli == "copilot":
        return not (answer.exit == 0 and out.get("permissionDecision") in ("deny", "ask"))
    if cli == "cursor":
        return not (answer.exit == 0 and out.get("permission") in ("deny", "ask"))
    assert cli == "cline"
    return not (answer.exit == 0 and out.get("cancel") is True)


def _payloads(cli: str) -> list[tuple[str, bytes]]:
    found = [(name, (HOOKS / cli / f"{name}.json").read_bytes()) for name in ORDER
             if (HOOKS / cli / f"{name}.json").is_file()]
    pre = (HOOKS / cli / "pre_ask.json").read_bytes()
    doc = json.loads(pre)
    key = next(iter(doc))
    twice = pre.replace(b"{", b"{" + json.dumps(key).encode() + b": " +
                        json.dumps(doc[key]).encode() + b", ", 1)
    return [*found, ("not_json", b'{"hook_event_name": "PreToolUse", '),
            ("not_object", b"[]"), ("repeated_key", twice), ("empty", b"")]


def _show(answer: HookAnswer, state: Path) -> dict[str, Any]:
    def clean(text: str) -> str:
        return text.replace(str(state), "$STATE")

    return {"exit": answer.exit, "stdout": clean(answer.stdout), "stderr": clean(answer.stderr)}


def answers(cli: str, state: Path) -> dict[str, dict[str, Any]]:
    """Every case's answer, run in order in one session under ``state``."""
    adapter = hooks.load(cli)
    out = {}
    for name, data in _payloads(cli):
        out[name] = _show(hooks.run(adapter, data, SPEC, str(state), no_key=True), state)
    pre = (HOOKS / cli / "pre_ask.json").read_bytes()
    out["bad_spec"] = _show(hooks.run(adapter, pre, BROKEN, str(state), no_key=True), state)
    return out


class TestConformance:
    @pytest.mark.parametrize("cli", CLIS)
    def test_each_payload_gets_the_exact_answer_its_cli_needs(self, cli: str,
                                                               tmp_path: Path) -> None:
        want = json.loads((HOOKS / cli / "expected.json").read_text())
        assert answers(cli, tmp_path / "state") == want

    @pytest.mark.parametrize("cli", CLIS)
    def test_only_the_allowed_call_runs(self, cli: str, tmp_path: Path) -> None:
        """Of the cases, exactly the allowed call would run; every other one is stopped."""
        got = answers(cli, tmp_path / "state")
        run = {name for name, a in got.items() if name.startswith(("pre_", "permission"))
               or name in ("not_json", "not_object", "repeated_key", "empty", "bad_spec",
                           "missing_session", "camel_case")
               if lets_run(cli, HookAnswer(a["exit"], a["stdout"], a["stderr"]))}
        assert run == {"pre_allow"}

    @pytest.mark.parametrize("cli", CLIS)
    def test_a_deny_always_says_why(self, cli: str, tmp_path: Path) -> None:
        for name, a in answers(cli, tmp_path / "state").items():
            if not lets_run(cli, HookAnswer(a["exit"], a["stdout"], a["stderr"])):
                assert "roadcheck guard" in a["stdout"] + a["stderr"], name

    @pytest.mark.parametrize("cli", CLIS)
    def test_a_hook_that_runs_out_of_time_stops_the_call(self, cli: str,
                                                         tmp_path: Path) -> None:
        """Whatever hangs, the process answers its CLI's block before its deadline."""
        script = ("import sys, time\n"
                  "import roadcheck.guard.claude_code as cc, roadcheck.guard.hooks as h\n"
                  "cc.DEADLINE = 0.5\n"
                  "def hang(*args, **kwargs):\n    time.sleep(300)\n"
                  "h.run = hang\ncc.run_hook = hang\n"
                  "sys.argv[0] = 'roadcheck'\n"
                  "from roadcheck.__main__ import main\nmain(sys.argv[1:])\n")
        proc = subprocess.run([sys.executable, "-c", script, "guard", cli, "--spec", SPEC,
                               "--state-dir", str(tmp_path / "s"), "--no-key"],
                              input=(HOOKS / cli / "pre_ask.json").read_text(),
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
        answer = HookAnswer(proc.returncode, proc.stdout, proc.stderr)
        assert not lets_run(cli, answer), proc
        assert "did not answer within 0.5 s" in proc.stdout + proc.stderr

    @pytest.mark.parametrize("cli", CLIS)
    def test_the_command_line_answers_as_the_library(self, cli: str, tmp_path: Path) -> None:
        """``roadcheck guard CLI`` (the hook process) prints the adapter's answer."""
        data = (HOOKS / cli / "pre_ask.json").read_bytes()
        proc = subprocess.run([sys.executable, "-m", "roadcheck", "guard", cli, "--spec", SPEC,
                               "--state-dir", str(tmp_path / "p"), "--no-key"],
                              input=data, capture_output=True, cwd=ROOT, timeout=60)
        lib = hooks.run(hooks.load(cli), data, SPEC, str(tmp_path / "l"), no_key=True)
        assert (proc.returncode, proc.stdout.decode().replace(str(tmp_path / "p"), "S")) == (
            lib.exit, lib.stdout.replace(str(tmp_path / "l"), "S"))


#: Odd values put in place of a payload's fields.
_ODD = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                 st.text(max_size=20), st.lists(st.integers(), max_size=3),
                 st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))


@st.composite
def _odd_payload(draw: st.DrawFn, cli: str) -> bytes:
    """A pre-tool payload of ``cli`` with fields dropped, retyped or added, or cut short."""
    name = draw(st.sampled_from(["pre_ask", "pre_allow", "pre_deny"]))
    raw = (HOOKS / cli / f"{name}.json").read_bytes()
    doc: Any = json.loads(raw)
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["drop", "retype", "nest", "add", "cut", "whole"]))
        keys = sorted(doc) if isinstance(doc, dict) else []
        if how == "drop" and keys:
            doc.pop(draw(st.sampled_from(keys)))
        elif how == "retype" and keys:
            doc[draw(st.sampled_from(keys))] = draw(_ODD)
        elif how == "nest" and keys:
            key = draw(st.sampled_from(keys))
            if isinstance(doc[key], dict) and doc[key]:
                doc[key][draw(st.sampled_from(sorted(doc[key])))] = draw(_ODD)
        elif how == "add" and isinstance(doc, dict):
            doc[draw(st.text(max_size=8))] = draw(_ODD)
        elif how == "whole":
            doc = draw(_ODD)
        elif how == "cut":
            data = json.dumps(doc).encode()
            return data[:draw(st.integers(0, max(len(data) - 1, 0)))]
    return json.dumps(doc).encode()


class TestNoFailOpen:
    @pytest.mark.parametrize("cli", CLIS)
    def test_an_odd_payload_never_runs_a_call_the_guard_did_not_allow(
            self, cli: str, tmp_path_factory: pytest.TempPathFactory) -> None:
        adapter = hooks.load(cli)
        state = tmp_path_factory.mktemp("odd")

        @settings(max_examples=60, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(_odd_payload(cli))
        def check(data: bytes) -> None:
            answer = hooks.run(adapter, data, SPEC, str(state), no_key=True)
            if lets_run(cli, answer):
                assert answer.decision is not None and answer.decision.allowed, (data, answer)

        check()


def _write() -> None:
    import tempfile

    for cli in CLIS:
        with tempfile.TemporaryDirectory() as tmp:
            got = answers(cli, Path(tmp) / "state")
        (HOOKS / cli / "expected.json").write_text(json.dumps(got, indent=2) + "\n")


if __name__ == "__main__":
    _write()
