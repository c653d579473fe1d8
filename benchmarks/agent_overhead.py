"""Agent producer overhead per attempt, beside the HTTP round trip and a command producer.

Against the scripted server of ``examples/agent_producer/fake_llm.py`` (127.0.0.1),
in one run and side by side:

* ``round trip``: the same Chat Completions request made with the official SDK
  and one reused client: what no producer can go below;
* ``agent``: one attempt of an agent producer (prompt, request, artifact,
  evidence), the way the engine calls it;
* ``command``: a command producer that writes the same bytes (one subprocess).

The agent's overhead is ``agent - round trip`` per attempt; it must stay within
``BUDGET_MS``. A whole workflow run with each producer is printed too.
Usage: ``python benchmarks/agent_overhead.py [--attempts 200] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from roadcheck._commands import run_command
from roadcheck.harness import Workflow
from roadcheck.harness.agent import AgentRunner
from roadcheck.harness.model import parse_workflow_spec

BUDGET_MS = 5.0
ROOT = Path(__file__).resolve().parent.parent


def _fake() -> Any:
    spec = importlib.util.spec_from_file_location(
        "fake_llm", ROOT / "examples" / "agent_producer" / "fake_llm.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _doc(url: str, phases: int, agent: bool) -> dict[str, Any]:
    producer: Any = {"agent": {"provider": "openai", "model": "bench", "base_url": url + "/v1",
                               "task": "Write the word good.", "max_tokens": 16}}
    if not agent:
        producer = [sys.executable, "-c",
                    "import sys; open(sys.argv[1], 'w').write('good')", "{artifact}"]
    return {"workflow": "bench", "phases": [
        {"name": f"p{i:03d}", "role": "op", "producer": producer, "artifact": f"a{i:03d}.txt",
         "gate": {"command": [shutil.which("true") or "true"]}}
        for i in range(phases)]}


def round_trips(url: str, n: int) -> float:
    """Seconds for ``n`` SDK requests with one client."""
    import openai

    client = openai.OpenAI(api_key="bench", base_url=url + "/v1", max_retries=0)
    body = [{"role": "user", "content": "Write the word good."}]
    start = time.perf_counter()
    for _ in range(n):
        client.chat.completions.create(model="bench", messages=body,  # type: ignore[arg-type]
                                       max_tokens=16)
    took = time.perf_counter() - start
    client.close()
    return took


def agent_attempts(url: str, n: int, run_dir: Path) -> float:
    """Seconds for ``n`` agent attempts as the engine runs them."""
    spec = parse_workflow_spec(_doc(url, 1, agent=True))
    phase = spec.phases[0]
    runner = AgentRunner(spec, run_dir, run_dir, (run_dir,), {"OPENAI_API_KEY": "bench"})
    values = {"artifact": str(run_dir / "a.txt"), "input": "", "run_dir": str(run_dir),
              "run_id": "bench", "python": sys.executable, "spec_dir": str(run_dir),
              "phase": phase.name}
    start = time.perf_counter()
    for _ in range(n):
        failed, _ = runner.produce(phase, values, None, None)
        assert failed is None
    took = time.perf_counter() - start
    runner.close()
    return took


def command_attempts(n: int, run_dir: Path) -> float:
    """Seconds for ``n`` runs of a command producer writing the same bytes."""
    argv = [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write('good')",
            str(run_dir / "c.txt")]
    env = dict(os.environ)
    start = time.perf_counter()
    for _ in range(n):
        assert run_command(argv, cwd=None, env=env, timeout=60).exit_code == 0
    return time.perf_counter() - start


def workflow(url: str, phases: int, agent: bool, runs: Path) -> float:
    """Seconds for a whole gated run of ``phases`` phases (``OPENAI_API_KEY`` must be set)."""
    wf = Workflow.from_dict(_doc(url, phases, agent))
    start = time.perf_counter()
    result = wf.run(runs_dir=runs, role="op", identity="bench")
    assert result.status == "completed", result.message
    return time.perf_counter() - start


def measure(n: int, repeat: int, phases: int = 20) -> dict[str, Any]:
    """Milliseconds per attempt (medians of ``repeat`` rounds of ``n``) and per phase."""
    fake = _fake()
    script = [{"text": "good", "usage": [12, 1]}] * (n * repeat * 2 + 2 * phases + 40)
    rtt, agent, command = [], [], []
    few = min(n, 50)
    with fake.serve(script) as server, tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        round_trips(server.url, 10)  # warm up imports and the connection
        agent_attempts(server.url, 10, base)
        for _ in range(repeat):
            rtt.append(round_trips(server.url, n) / n * 1000)
            agent.append(agent_attempts(server.url, n, base) / n * 1000)
            command.append(command_attempts(few, base) / few * 1000)
        agent_run = workflow(server.url, phases, True, base / "runs-agent") / phases * 1000
        command_run = workflow(server.url, phases, False, base / "runs-cmd") / phases * 1000
    r, a, c = (statistics.median(x) for x in (rtt, agent, command))
    return {"attempts": n, "repeat": repeat, "round_trip_ms": round(r, 3),
            "agent_attempt_ms": round(a, 3), "command_attempt_ms": round(c, 3),
            "agent_overhead_ms": round(a - r, 3), "budget_ms": BUDGET_MS,
            "workflow_phase_ms": {"agent": round(agent_run, 2),
                                  "command": round(command_run, 2)}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "bench")  # the scripted server never reads it
    figures = measure(args.attempts, args.repeat)
    print(json.dumps(figures, indent=2))
    r, a, c = (figures[k] for k in ("round_trip_ms", "agent_attempt_ms", "command_attempt_ms"))
    overhead = figures["agent_overhead_ms"]
    print(f"agent overhead {overhead:.2f} ms per attempt beyond the round trip "
          f"({a:.2f} vs {r:.2f} ms); command producer {c:.2f} ms; "
          f"target <= {BUDGET_MS} ms: {'met' if overhead <= BUDGET_MS else 'MISSED'}")
    return 0 if overhead <= BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
