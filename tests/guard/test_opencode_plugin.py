"""The OpenCode plugin (``examples/guard/opencode/roadcheck-guard.js``) run under Node.

OpenCode runs plugins under Bun; here ``Bun.spawn`` is given by a small shim over
Node's ``child_process``, and the plugin's hooks are called as OpenCode calls them.
A call goes ahead only when the hook returns; a stopped call is a thrown error.
Node is needed (as OpenCode itself needs Bun).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import DATA, EXAMPLES, ROOT

PLUGIN = EXAMPLES / "guard" / "opencode" / "roadcheck-guard.js"
DRIVER = """\
import { spawn } from "node:child_process"
import { Readable } from "node:stream"
globalThis.Bun = { spawn(argv, opts) {
  const child = spawn(argv[0], argv.slice(1), { cwd: opts.cwd, stdio: "pipe" })
  child.stdin.on("error", () => {})  // a guard that exits unread: its answer says so
  const exited = new Promise((ok, no) => { child.on("close", ok); child.on("error", no) })
  return { stdin: child.stdin, stdout: Readable.toWeb(child.stdout),
           stderr: Readable.toWeb(child.stderr), exited }
} }
const { RoadcheckGuard } = await import(process.argv[2])
const hooks = await RoadcheckGuard({ directory: process.cwd() })
const out = []
for (const [name, input, output] of JSON.parse(process.argv[3])) {
  try { await hooks[name](input, output); out.push("ran") }
  catch (e) { out.push("stopped: " + e.message) }
}
console.log(JSON.stringify(out))
"""

def _drive(tmp: Path, calls: list[list[object]], command: str) -> list[str]:
    plugin = tmp / "roadcheck-guard.mjs"
    plugin.write_text(PLUGIN.read_text())
    driver = tmp / "driver.mjs"
    driver.write_text(DRIVER)
    wrapper = tmp / "roadcheck"
    wrapper.write_text(f"#!/bin/sh\nexec {command} \"$@\" --state-dir {tmp / 'state'} --no-key\n")
    wrapper.chmod(0o755)
    # ROADCHECK_GUARD_DAEMON=0: the hook answers in process, no daemon outlives the test
    env = {"PATH": "/usr/bin:/bin", "ROADCHECK_GUARD_DAEMON": "0",
           "ROADCHECK_GUARD_SPEC": str(DATA / "hooks" / "spec.yaml"),
           "ROADCHECK_GUARD_COMMAND": command if command.startswith("/nonexistent")
           else str(wrapper)}
    proc = subprocess.run(["node", str(driver), str(plugin), json.dumps(calls)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out: list[str] = json.loads(proc.stdout)
    return out


def _before(call: str, command: str) -> list[object]:
    return ["tool.execute.before", {"tool": "bash", "sessionID": "ses_1", "callID": call},
            {"args": {"command": command}}]


def test_the_plugin_lets_through_only_what_the_guard_allows(tmp_path: Path) -> None:
    out = _drive(tmp_path, [
        ["chat.message", {"sessionID": "ses_1"}, {"parts": [{"type": "text", "text": "hi"}]}],
        _before("c1", "ls"),
        ["tool.execute.after", {"tool": "bash", "sessionID": "ses_1", "callID": "c1",
                                "args": {"command": "ls"}}, {"output": ""}],
        _before("c2", "git push origin main"),
    ], f"{sys.executable} -m roadcheck")
    assert out[:3] == ["ran", "ran", "ran"]
    assert out[3].startswith("stopped: roadcheck guard held bash `git push origin main`: ")
    assert out[3].endswith("[rule push_ok, checkpoint-skipped at seq 3]")


@pytest.mark.parametrize(("command", "why"), [
    ("/nonexistent/roadcheck", "roadcheck guard: denied: cannot run /nonexistent/roadcheck"),
    ("false", "roadcheck guard: denied: exit code 1, no answer"),  # it fails with no answer
    ("echo", "roadcheck guard: denied: exit code 0, no answer"),  # output that is no answer
])
def test_a_guard_that_fails_stops_the_call(tmp_path: Path, command: str, why: str) -> None:
    [out] = _drive(tmp_path, [_before("c1", "ls")], command)
    assert out.startswith("stopped: " + why), out
