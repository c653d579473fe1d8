"""Guard latency: check and observe in process, and the Claude Code hook as a process.

Three figures, each printed beside a baseline measured the same way in the same run:

* ``check``: a 100-rule spec, a session of 1,000 prior events, one guarded call
  asked repeatedly (p50 and p99), beside a bare dict lookup timed with the same
  clock calls; targets p50 <= 20 us, p99 <= 50 us;
* ``observe``: per event, over a 1,000-event session (p50), beside the same lookup;
  target <= 10 us;
* the hook: ``roadcheck guard claude-code`` run as a new process per PreToolUse event
  against a stored 1,000-event session (wall p50), beside ``python -c pass`` and
  ``roadcheck --version``, the three run in turn so that they share the machine's
  load; target <= 80 ms. All run with a warm bytecode cache, as an installed package does (a
  private cache directory, so the measurement holds under
  ``PYTHONDONTWRITEBYTECODE``).

Resident mode (``roadcheck guard daemon``), each beside its baseline too:

* the round trip of a PreToolUse event through the daemon's socket, against a stored
  1,000-event session, from the hook's own client (:func:`roadcheck._hook_client.ask`),
  each decision on disk before its answer (p50 and p99); targets p50 <= 5 ms,
  p99 <= 20 ms; beside the same client's round trip to a socket that answers at once
  without deciding anything;
* the hook process through the daemon (``roadcheck guard claude-code`` with the
  daemon running), beside ``python -c pass`` and a minimal stdin-to-stdout Python
  script, the floor of any hook written in Python (wall p50, run in turn);
* the plain process path (``ROADCHECK_GUARD_DAEMON=0``) beside the same path of the
  baseline revision's source (``--baseline main``, exported with ``git archive``),
  both run as ``python -m roadcheck`` in turn: no slower than the baseline (10% and
  2 ms of slack for noise). Without git or the revision, that comparison is skipped
  and says so.

Exits 1 when a figure misses its target. Usage:
``python benchmarks/guard_latency.py [--calls 20000] [--hooks 21] [--resident 500]
[--baseline main]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from roadcheck.events import args_digest
from roadcheck.guard import Guard, GuardStore

RULES = 100
PRIOR = 1000
#: The session before a check under the spec that mixes every kind of rule.
MIXED_PRIOR = 10_000
TARGETS_US = {"check p50": 20.0, "check p99": 50.0, "observe p50": 10.0,
              "mixed check p99": 50.0}
HOOK_TARGET_MS = 80.0
RESIDENT_TARGETS_MS = {"resident p50": 5.0, "resident p99": 20.0}
#: The process path may be this much slower than the baseline's, for noise: ratio, ms.
SLACK = (1.10, 2.0)
PAYLOAD = {"hook_event_name": "PreToolUse", "session_id": "bench", "transcript_path": "",
           "tool_name": "Bash", "tool_input": {"command": "git push origin main"},
           "tool_use_id": "toolu_1"}


def spec() -> dict[str, Any]:
    """100 rules over 100 tools, every option in use."""
    rules = []
    for i in range(RULES):
        rule: dict[str, Any] = {"checkpoint_id": f"ok_{i}", "must_precede": f"tool_{i}",
                                "scope": "each" if i % 2 else "first", "consume": i % 3 == 0}
        if i % 4 == 0:
            rule["confirmed_by"] = ["owner", "cfo"]
        if i % 5 == 0:
            rule["binds"] = {"tool": True, "args": True}
        if i % 7 == 0:
            rule["voided_by"] = [{"event": "message", "role": "assistant", "yields_turn": True}]
        rules.append(rule)
    rules.append({"checkpoint_id": "push_ok", "scope": "each",
                  "must_precede": {"action_type": "Bash", "command": {"words": ["git", "push"]}}})
    return {"mandatory_checkpoints": rules,
            "derive": [{"checkpoint_id": "ok_1", "when": {"event": "message", "role": "user",
                                                         "text": {"regex": "(?i)\\byes\\b"}}}]}


def mixed_spec() -> dict[str, Any]:
    """100 rules mixing every construct: mandatory checkpoints with argument conditions,
    forbidden (with and without unless), limits, obligations, flows by session and by
    value, severity warn, and all/any/not."""
    def tool(i: int) -> str:
        return f"tool_{i % RULES}"

    checkpoints = [{"checkpoint_id": f"ok_{i}", "scope": "each", "consume": i % 2 == 0,
                    "must_precede": {"action_type": tool(i), "args": {"n": {"gt": 5}}},
                    "voided_by": [{"event": "action", "action_type": tool(i + 1),
                                   "ok": False}]} for i in range(20)]
    forbidden = [{"id": f"forbid_{i}", "when": {"action_type": tool(20 + i), "any": [
        {"args": {"to": {"regex": "@outside\\.example$"}}},
        {"args": {"items.*.sku": {"in": ["X1", "X2"]}}}]},
        **({"unless": f"ok_{i}"} if i % 2 else {})} for i in range(20)]
    limits = [{"id": f"limit_{i}", "when": {"action_type": tool(40 + i),
                                            "not": {"args": {"n": {"lt": 0}}}},
               "at_most": 1_000_000, **({"severity": "warn"} if i % 4 == 0 else {})}
              for i in range(20)]
    obligations = [{"id": f"oblige_{i}", "after": {"action_type": tool(60 + i)},
                    "require": {"action_type": tool(61 + i), "ok": True}} for i in range(20)]
    flows = [{"id": f"flow_{i}", "source": {"action_type": tool(80 + i)},
              "sink": {"action_type": tool(81 + i), "args": {"to": {"glob": "*@*"}}},
              "unless": f"ok_{i}", "match": "value" if i % 2 else "session"}
             for i in range(20)]
    return {"mandatory_checkpoints": checkpoints, "forbidden": forbidden, "limits": limits,
            "obligations": obligations, "flows": flows,
            "derive": [{"checkpoint_id": "ok_1", "when": {"event": "message", "role": "user",
                                                         "text": {"regex": "(?i)\\byes\\b"}}}]}


def mixed_session(n: int = MIXED_PRIOR) -> list[dict[str, Any]]:
    """A session of ``n`` events over the mixed spec's tools: calls with arguments and
    results (some failed), approvals and messages."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        kind = i % 5
        if kind == 0:
            out.append({"event": "message", "role": "user", "text": f"yes, go on {i}"})
        elif kind == 1:
            out.append({"event": "checkpoint", "checkpoint_id": f"ok_{i % 20}",
                        "confirmed_by": "owner"})
        else:
            call: dict[str, Any] = {"event": "action", "action_type": f"tool_{i % RULES}",
                                    "args": {"to": f"user{i % 50}@corp.example", "n": i,
                                             "items": [{"sku": f"S{i % 7}"}]},
                                    "result": {"id": f"R{i:06d}", "total": i * 3}}
            if i % 11 == 0:
                call["error"] = "failed"
            out.append(call)
    return [{"seq": i + 1, **e} for i, e in enumerate(out)]


def _timed_checks(guard: Guard, calls_to: list[dict[str, Any]], calls: int) -> tuple[float,
                                                                                   float]:
    """p50, p99 (us) of ``guard.check`` over ``calls`` calls, taken from ``calls_to`` in
    turn."""
    clock = time.perf_counter_ns
    out = []
    for i in range(calls):
        call = calls_to[i % len(calls_to)]
        t0 = clock()
        guard.check(call)
        out.append(clock() - t0)
    return _percentiles(out)


def mixed_check_latency(calls: int) -> tuple[float, float]:
    """p50, p99 (us) of check under the mixed spec after 10,000 prior events, over calls
    of every tool (some forbidden, some sinks carrying a value a source returned)."""
    guard = Guard(mixed_spec())
    for event in mixed_session():
        guard.observe(event)
    calls_to = [{"event": "action", "action_type": f"tool_{i}",
                 "args": {"to": "a@outside.example" if i % 3 == 0 else "b@corp.example",
                          "n": i * 97, "items": [{"sku": "X1" if i % 5 == 0 else "S1"}],
                          "ref": f"R{(i * 97) % MIXED_PRIOR:06d}"}} for i in range(RULES)]
    return _timed_checks(guard, calls_to, calls)


def session(n: int = PRIOR) -> list[dict[str, Any]]:
    """A session of ``n`` events: prompts, answers, approvals and calls of the guarded tools."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        tool = f"tool_{i % RULES}"
        args = {"to": "cfo", "n": i}
        kind = i % 4
        if kind == 0:
            out.append({"event": "message", "role": "user", "text": f"yes, go on {i}"})
        elif kind == 1:
            out.append({"event": "checkpoint", "checkpoint_id": f"ok_{(i + 1) % RULES}",
                        "confirmed_by": "owner", "tool": f"tool_{(i + 1) % RULES}",
                        "args_sha256": args_digest({"to": "cfo", "n": i + 1})})
        elif kind == 2:
            out.append({"event": "action", "action_type": tool, "args": args})
        else:
            out.append({"event": "message", "role": "assistant", "text": "done",
                        "yields_turn": i % 8 == 3})
    return [{"seq": i + 1, **e} for i, e in enumerate(out)]


def _percentiles(samples: list[int]) -> tuple[float, float]:
    samples.sort()
    return (samples[len(samples) // 2] / 1000, samples[int(len(samples) * 0.99)] / 1000)


def bare_lookup(calls: int) -> tuple[float, float]:
    """p50, p99 (us) of a dict lookup timed with the same two clock calls."""
    table = {f"tool_{i}": i for i in range(RULES)}
    clock = time.perf_counter_ns
    out = []
    for i in range(calls):
        key = f"tool_{i % RULES}"
        t0 = clock()
        table.get(key)
        out.append(clock() - t0)
    return _percentiles(out)


def check_latency(calls: int) -> tuple[float, float]:
    """p50, p99 (us) of check on a guarded call after 1,000 prior events."""
    guard = Guard(spec())
    for event in session():
        guard.observe(event)
    calls_to = [{"event": "action", "action_type": f"tool_{i % RULES}",
                 "args": {"to": "cfo", "n": i}} for i in range(RULES)]
    return _timed_checks(guard, calls_to, calls)


def observe_latency(rounds: int) -> float:
    """p50 (us) of observe per event, over fresh 1,000-event sessions."""
    events = session()
    clock = time.perf_counter_ns
    out = []
    for _ in range(rounds):
        guard = Guard(spec())
        for event in events:
            t0 = clock()
            guard.observe(event)
            out.append(clock() - t0)
    return _percentiles(out)[0]


def _walls(commands: dict[str, tuple[list[str], bytes]], runs: int,
           env: dict[str, str]) -> dict[str, float]:
    """Median wall milliseconds of each command, ``runs`` times, interleaved.

    One run of each command in turn, so a burst of load on a shared machine
    falls on the figure and its baselines alike. Each runs once first unmeasured
    (the warm-up compiles the bytecode cache).
    """
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(runs + 1):
        for name, (argv, stdin) in commands.items():
            t0 = time.perf_counter()
            done = subprocess.run(argv, input=stdin, capture_output=True, env=env)
            if round_:
                times[name].append((time.perf_counter() - t0) * 1000)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed: {done.stderr.decode(errors='replace')}")
    return {name: statistics.median(t) for name, t in times.items()}


def hook_latency(runs: int) -> tuple[float, float, float]:
    """Wall ms p50 of the hook process on a stored 1,000-event session, of python -c pass,
    and of ``roadcheck --version`` (the CLI's own start-up)."""
    with tempfile.TemporaryDirectory() as tmp:
        # As installed: bytecode compiled once (here into a private cache), not per process.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        # A key and a state directory of its own: the user's are never created or read.
        key_file = Path(tmp) / "key" / "guard.key"
        env["ROADCHECK_GUARD_KEY_FILE"] = str(key_file)
        env["ROADCHECK_GUARD_STATE_DIR"] = str(Path(tmp) / "state")
        env.pop("ROADCHECK_GUARD_NO_KEY", None)
        env["ROADCHECK_GUARD_DAEMON"] = "0"  # the process path
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec()))
        store = GuardStore(Path(tmp) / "state", spec_path, key_file=key_file)
        with store.session("bench", create=True) as live:
            for event in session():
                live.observe(event)
        script = Path(sys.executable).with_name("roadcheck")
        cmd = [str(script)] if script.exists() else [sys.executable, "-m", "roadcheck"]
        argv = [*cmd, "guard", "claude-code", "--spec", str(spec_path), "--state-dir",
                str(Path(tmp) / "state"), "--key-file", str(key_file)]
        payload = json.dumps(PAYLOAD).encode()
        walls = _walls({"hook": (argv, payload), "bare": ([sys.executable, "-c", "pass"], b""),
                        "cli": ([*cmd, "--version"], b"")}, runs, env)
    return walls["hook"], walls["bare"], walls["cli"]


# -- resident mode: the daemon's round trip, the thin client, the process path vs baseline --

def _bench_env(tmp: Path) -> dict[str, str]:
    """An environment of its own under ``tmp``: key, state directory, socket, bytecode."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    env["ROADCHECK_GUARD_KEY_FILE"] = str(tmp / "key" / "guard.key")
    env["ROADCHECK_GUARD_STATE_DIR"] = str(tmp / "state")
    env["ROADCHECK_GUARD_SOCKET"] = str(tmp / "run" / "guard.sock")
    env.pop("ROADCHECK_GUARD_NO_KEY", None)
    return env


def _stored_session(tmp: Path, env: dict[str, str]) -> Path:
    """The spec file, and the 1,000-event session ``bench`` stored under ``env``'s paths."""
    spec_path = tmp / "spec.json"
    spec_path.write_text(json.dumps(spec()))
    store = GuardStore(env["ROADCHECK_GUARD_STATE_DIR"], spec_path,
                       key_file=env["ROADCHECK_GUARD_KEY_FILE"])
    with store.session("bench", create=True) as live:
        for event in session():
            live.observe(event)
    return spec_path


def _start_daemon(env: dict[str, str]) -> subprocess.Popen[bytes]:
    from roadcheck._hook_client import socket_problem

    path = env["ROADCHECK_GUARD_SOCKET"]
    proc = subprocess.Popen([sys.executable, "-m", "roadcheck", "guard", "daemon", "--socket",
                             path, "--idle-exit", "600"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while socket_problem(path) is not None:  # "" while absent
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("the guard daemon did not start")
        time.sleep(0.02)
    return proc


def _stop_daemon(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _echo_server(path: str) -> Any:
    """A Unix socket that answers every request at once with an empty allow: the cost of
    the client and the socket alone."""
    import socket
    import threading

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    os.chmod(path, 0o600)
    sock.listen(16)

    def serve() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                head = b""
                while not head.endswith(b"\n"):
                    head += conn.recv(1)
                _, a, b = head.split(b" ")
                need = int(a) + int(b)
                while need > 0:
                    need -= len(conn.recv(need))
                conn.sendall(b"RCG1 0 0 0\n")

    threading.Thread(target=serve, daemon=True).start()
    return sock


def resident_latency(calls: int) -> tuple[float, float, float]:
    """p50, p99 (ms) of a PreToolUse round trip through the daemon on a stored 1,000-event
    session, and p50 (ms) of the same client against a socket that answers at once."""
    from roadcheck._hook_client import ask

    with tempfile.TemporaryDirectory(dir="/tmp") as raw:
        tmp = Path(raw)
        env = _bench_env(tmp)
        spec_path = _stored_session(tmp, env)
        args = ["--spec", str(spec_path)]
        payload = json.dumps(PAYLOAD).encode()
        proc = _start_daemon(env)
        clock = time.perf_counter_ns
        out = []
        try:
            for i in range(calls + 5):
                t0 = clock()
                got = ask("claude-code", args, payload, env, start=False)
                took = clock() - t0
                if got is None or got[2] != 0 or b'"ask"' not in got[0]:
                    raise SystemExit(f"the daemon did not answer the call: {got!r}")
                if i >= 5:  # the first calls read the session from disk
                    out.append(took)
        finally:
            _stop_daemon(proc)
        echo_env = {**env, "ROADCHECK_GUARD_SOCKET": str(tmp / "run" / "echo.sock")}
        server = _echo_server(echo_env["ROADCHECK_GUARD_SOCKET"])
        echo = []
        try:
            for _ in range(calls):
                t0 = clock()
                ask("claude-code", args, payload, echo_env, start=False)
                echo.append(clock() - t0)
        finally:
            server.close()
    p50, p99 = _percentiles(out)
    return p50 / 1000, p99 / 1000, _percentiles(echo)[0] / 1000


MINIMAL_HOOK = "import sys\nsys.stdout.buffer.write(sys.stdin.buffer.read())\n"


def client_latency(runs: int) -> tuple[float, float, float]:
    """Wall ms p50 of the hook process through a running daemon, of ``python -c pass``,
    and of a minimal stdin-to-stdout Python script (the floor of any Python hook)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as raw:
        tmp = Path(raw)
        env = _bench_env(tmp)
        spec_path = _stored_session(tmp, env)
        minimal = tmp / "minimal_hook.py"
        minimal.write_text(MINIMAL_HOOK)
        script = Path(sys.executable).with_name("roadcheck")
        cmd = [str(script)] if script.exists() else [sys.executable, "-m", "roadcheck"]
        payload = json.dumps(PAYLOAD).encode()
        proc = _start_daemon(env)
        try:
            walls = _walls({"hook": ([*cmd, "guard", "claude-code", "--spec", str(spec_path)],
                                     payload),
                            "bare": ([sys.executable, "-c", "pass"], b""),
                            "minimal": ([sys.executable, str(minimal)], payload)}, runs, env)
        finally:
            _stop_daemon(proc)
    return walls["hook"], walls["bare"], walls["minimal"]


def _export(ref: str, into: Path) -> Path | None:
    """The ``src`` directory of revision ``ref`` of this repository, exported under ``into``;
    None without git or the revision."""
    repo = Path(__file__).resolve().parent.parent
    try:
        archive = subprocess.run(["git", "-C", str(repo), "archive", ref, "src/roadcheck"],
                                 capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if archive.returncode != 0:
        return None
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def process_path_latency(runs: int, ref: str) -> tuple[float, float] | None:
    """Wall ms p50 of the plain process path (the daemon off) of this source and of the
    revision ``ref``'s, run in turn as ``python -m roadcheck``; None without ``ref``."""
    with tempfile.TemporaryDirectory(dir="/tmp") as raw:
        tmp = Path(raw)
        baseline = _export(ref, tmp / "baseline")
        if baseline is None:
            return None
        commands: dict[str, tuple[list[str], bytes]] = {}
        envs: dict[str, dict[str, str]] = {}
        payload = json.dumps(PAYLOAD).encode()
        for name in ("new", "old"):
            (tmp / name).mkdir()
            env = _bench_env(tmp / name)
            env["ROADCHECK_GUARD_DAEMON"] = "0"
            if name == "old":
                env["PYTHONPATH"] = os.pathsep.join(
                    [str(baseline), *filter(None, [env.get("PYTHONPATH")])])
            spec_path = _stored_session(tmp / name, env)
            commands[name] = ([sys.executable, "-m", "roadcheck", "guard", "claude-code",
                               "--spec", str(spec_path)], payload)
            envs[name] = env
        walls = _walls_each(commands, runs, envs)
    return walls["new"], walls["old"]


def _walls_each(commands: dict[str, tuple[list[str], bytes]], runs: int,
                envs: dict[str, dict[str, str]]) -> dict[str, float]:
    """:func:`_walls` with an environment per command."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(runs + 1):
        for name, (argv, stdin) in commands.items():
            t0 = time.perf_counter()
            done = subprocess.run(argv, input=stdin, capture_output=True, env=envs[name])
            if round_:
                times[name].append((time.perf_counter() - t0) * 1000)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed: {done.stderr.decode(errors='replace')}")
    return {name: statistics.median(t) for name, t in times.items()}


def resident_report(args: argparse.Namespace) -> list[str]:
    """Measure and print the resident mode's figures; the names of those missed."""
    missed = []
    p50, p99, echo = resident_latency(args.resident)
    print(f"resident round trip p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  (targets "
          f"{RESIDENT_TARGETS_MS['resident p50']:.0f} / {RESIDENT_TARGETS_MS['resident p99']:.0f}"
          f" ms, {args.resident} calls)  | the same client to a socket that decides nothing "
          f"p50 {echo:.2f} ms")
    for name, value in (("resident p50", p50), ("resident p99", p99)):
        if value > RESIDENT_TARGETS_MS[name]:
            missed.append(name)
    thin, bare, minimal = client_latency(args.hooks)
    print(f"hook process through the daemon wall p50 {thin:7.1f} ms  | python -c pass p50 "
          f"{bare:.1f} ms, minimal stdin-to-stdout script p50 {minimal:.1f} ms")
    found = process_path_latency(args.hooks, args.baseline)
    if found is None:
        print(f"process path: no baseline (git archive {args.baseline} failed): not compared")
    else:
        new, old = found
        print(f"process path (daemon off) wall p50 {new:7.1f} ms  | {args.baseline}'s p50 "
              f"{old:.1f} ms  (ratio {new / old:.2f}, at most {SLACK[0]:.2f})")
        if new > old * SLACK[0] + SLACK[1]:
            missed.append("process path")
    return missed


def main(argv: list[str] | None = None) -> int:
    """Measure, print each figure beside its baseline, exit 1 on a miss."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--hooks", type=int, default=21)
    parser.add_argument("--resident", type=int, default=500,
                        help="round trips through the daemon")
    parser.add_argument("--baseline", default="main",
                        help="the revision whose process path is the baseline")
    args = parser.parse_args(argv)
    lookup50, lookup99 = bare_lookup(args.calls)
    check50, check99 = check_latency(args.calls)
    mixed50, mixed99 = mixed_check_latency(args.calls)
    observe50 = observe_latency(max(1, args.calls // PRIOR))
    hook, bare, cli = hook_latency(args.hooks)
    figures = {"check p50": check50, "check p99": check99, "observe p50": observe50,
               "mixed check p99": mixed99}
    print(f"guard latency: {RULES}-rule spec, session of {PRIOR} prior events")
    print(f"check   p50 {check50:8.2f} us  p99 {check99:8.2f} us  (targets "
          f"{TARGETS_US['check p50']:.0f} / {TARGETS_US['check p99']:.0f} us)  | bare dict "
          f"lookup p50 {lookup50:.2f} us  p99 {lookup99:.2f} us")
    print(f"mixed rules: {RULES} rules of every kind, session of {MIXED_PRIOR} prior events")
    print(f"check   p50 {mixed50:8.2f} us  p99 {mixed99:8.2f} us  (target "
          f"{TARGETS_US['mixed check p99']:.0f} us p99)  | bare dict lookup p50 "
          f"{lookup50:.2f} us  p99 {lookup99:.2f} us")
    print(f"observe p50 {observe50:8.2f} us per event  (target {TARGETS_US['observe p50']:.0f} "
          f"us)  | bare dict lookup p50 {lookup50:.2f} us")
    print(f"hook process wall p50 {hook:7.1f} ms  (target {HOOK_TARGET_MS:.0f} ms, "
          f"{args.hooks} runs)  | python -c pass p50 {bare:.1f} ms, roadcheck --version p50 "
          f"{cli:.1f} ms")
    missed = [k for k, v in figures.items() if v > TARGETS_US[k]]
    if hook > HOOK_TARGET_MS:
        missed.append("hook")
    missed += resident_report(args)
    if missed:
        print(f"MISSED: {', '.join(missed)}")
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
