"""Agent producers end to end: the real SDK clients against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.evidence_layout import records

import roadcheck
from roadcheck.errors import InputError, SpecError
from roadcheck.evidence.store import verify_run
from roadcheck.harness import Workflow, parse_workflow_spec
from roadcheck.harness._prompts import prompt_names, render_prompt

from ..conftest import EXAMPLES, ROOT, load_script
from .conftest import CHECK_GOOD

Serve = Callable[[list[dict[str, Any]]], AbstractContextManager[Any]]
KEY = "sk-test-never-recorded-0123456789"
PROVIDERS = [("anthropic", False), ("anthropic", True), ("openai", False), ("openai", True)]


FAKE = load_script(EXAMPLES / "agent_producer" / "fake_llm.py")


@pytest.fixture
def serve() -> Serve:
    """Start the scripted server for one block."""
    return FAKE.serve  # type: ignore[no-any-return]


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def _workflow(tmp_path: Path, url: str, provider: str = "anthropic", stream: bool = False,
              max_attempts: int = 3, run_budget: dict[str, Any] | None = None,
              **agent: Any) -> Path:
    check = tmp_path / "check_good.py"
    check.write_text(CHECK_GOOD, encoding="utf-8")
    spec_agent = {"provider": provider, "model": "test-model", "stream": stream,
                  "base_url": url + ("/v1" if provider == "openai" else ""),
                  "system": "You write artifacts.", "task": "Write the word good.",
                  "max_retries": 2, **agent}
    spec_agent = {k: v for k, v in spec_agent.items() if v is not None}
    doc: dict[str, Any] = {"workflow": "wf", "phases": [{
        "name": "write", "role": "writer", "producer": {"agent": spec_agent},
        "artifact": "out.txt", "max_attempts": max_attempts,
        "gate": {"command": ["{python}", str(check), "{artifact}"]}}]}
    if run_budget is not None:
        doc["budget"] = run_budget
    path = tmp_path / "wf.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _run(path: Path, tmp_path: Path, **kw: Any) -> roadcheck.RunResult:
    return Workflow.load(path).run(runs_dir=tmp_path / "runs", role="writer", identity="alice",
                                   run_id="r", **kw)


def _records(tmp_path: Path) -> list[dict[str, Any]]:
    return records(tmp_path / "runs" / "r" / "evidence.jsonl")


def _prompt(request: dict[str, Any]) -> str:
    """The text of a request's last user message."""
    user = [m for m in request["body"]["messages"] if m["role"] == "user"][-1]
    content = user["content"]
    return content if isinstance(content, str) else json.dumps(content)


class TestRevisionLoop:
    """On a failed gate the model gets the feedback and its previous artifact."""

    @pytest.mark.parametrize(("provider", "stream"), PROVIDERS)
    def test_fixed_on_attempt_two(self, tmp_path: Path, serve: Serve, provider: str,
                                  stream: bool) -> None:
        """A wrong artifact, then the fix after reading the gate's feedback: 2 attempts."""
        fix = {"text": "good", "usage": [40, 1], "expect": "expected good, found 'bad'"}
        with serve([{"text": "bad", "usage": [11, 2]}, fix]) as f:
            result = _run(_workflow(tmp_path, f.url, provider, stream), tmp_path)
        assert (result.status, result.exit, result.phases[0].attempts) == ("completed", 0, 2)
        first, second = _records(tmp_path)
        assert (first["verdict"], second["verdict"]) == ("fail", "pass")
        assert (tmp_path / "runs" / "r" / "out.txt").read_text() == "good"
        for rec, rid, usage in ((first, "req_fake_1", [11, 2]), (second, "req_fake_2", [40, 1])):
            producer = rec["artifact"]["producer"]
            assert producer["provider"] == provider and producer["model"] == "test-model"
            assert producer["request_ids"] == [rid]
            assert producer["usage"] == {"input_tokens": usage[0], "output_tokens": usage[1],
                                         "total_tokens": sum(usage)}
            assert producer["outcome"] == "ok"
            assert len(producer["prompt_sha256"]) == 64
        digests = {r["artifact"]["producer"]["prompt_sha256"] for r in (first, second)}
        assert len(digests) == 2
        assert "did not pass" not in _prompt(f.requests[0])
        revised = _prompt(f.requests[1])
        feedback = (tmp_path / "runs" / "r" / "feedback" / "write.attempt2.json").read_text()
        assert feedback.rstrip() in revised
        assert "expected good, found 'bad'" in revised
        assert "<<<\nbad\n>>>" in revised
        assert f.requests[1]["body"].get("stream", False) is stream

    @pytest.mark.parametrize("provider", ["anthropic", "openai"])
    def test_never_fixed_hard_stops(self, tmp_path: Path, serve: Serve, provider: str) -> None:
        """A model that never fixes its artifact hard-stops after max_attempts."""
        with serve([{"text": "bad"}] * 3 + [{"text": "good"}]) as f:
            result = _run(_workflow(tmp_path, f.url, provider, max_attempts=3), tmp_path)
        assert (result.status, result.exit, result.reason) == ("hard-stop", 1, "gate-failed")
        assert "failed 3 of 3 attempts" in result.message
        assert [r["verdict"] for r in _records(tmp_path)] == ["fail"] * 3
        assert len(f.requests) == 3

    def test_evidence_verifies_and_never_holds_the_key(self, tmp_path: Path,
                                                       serve: Serve) -> None:
        """The chain with producer evidence verifies; the API key is written nowhere."""
        with serve([{"text": "bad"}, {"text": "good"}]) as f:
            _run(_workflow(tmp_path, f.url), tmp_path)
        assert verify_run(tmp_path / "runs", "r").ok
        for path in (tmp_path / "runs").rglob("*"):
            if path.is_file():
                assert KEY.encode() not in path.read_bytes(), path

    def test_sqlite_store_keeps_producer(self, tmp_path: Path, serve: Serve) -> None:
        """The SQLite store round-trips the producer evidence and its chain verifies."""
        from roadcheck.evidence.store import SqliteStore

        with serve([{"text": "good", "usage": [3, 4]}]) as f:
            result = _run(_workflow(tmp_path, f.url), tmp_path, store="sqlite")
        assert result.status == "completed"
        store = SqliteStore(tmp_path / "runs" / "r", "r")
        try:
            (rec,) = store.records()
        finally:
            store.close()
        assert rec["artifact"]["producer"]["usage"]["total_tokens"] == 7
        assert verify_run(tmp_path / "runs", "r").ok


class TestResume:
    """A resumed run hands the last failure of the earlier invocation to the model."""

    def test_feedback_crosses_a_resume(self, tmp_path: Path, serve: Serve) -> None:
        """max_attempts 1 hard-stops; the resume's first prompt carries that failure."""
        fix = {"text": "good", "expect": "expected good, found 'bad'"}
        with serve([{"text": "bad"}, fix]) as f:
            path = _workflow(tmp_path, f.url, max_attempts=1)
            assert _run(path, tmp_path).status == "hard-stop"
            again = Workflow.load(path).run(runs_dir=tmp_path / "runs", role="writer",
                                            identity="alice", resume="r")
        assert (again.status, again.phases[0].attempts) == ("completed", 2)
        assert "<<<\nbad\n>>>" in _prompt(f.requests[1])
        assert verify_run(tmp_path / "runs", "r").ok


class TestRobustness:
    """Transport retries are not attempts; bad replies are failed attempts, not crashes."""

    @pytest.mark.parametrize("provider", ["anthropic", "openai"])
    def test_429_then_success_is_one_attempt(self, tmp_path: Path, serve: Serve,
                                             provider: str) -> None:
        """The SDK retries a 429 itself: one attempt, one record, two requests served."""
        with serve([{"status": 429}, {"text": "good"}]) as f:
            result = _run(_workflow(tmp_path, f.url, provider), tmp_path)
        assert (result.status, result.phases[0].attempts) == ("completed", 1)
        (rec,) = _records(tmp_path)
        assert rec["artifact"]["producer"]["request_ids"] == ["req_fake_2"]
        assert len(f.requests) == 2

    @pytest.mark.parametrize(("provider", "stream"), PROVIDERS)
    @pytest.mark.parametrize(("step", "outcome", "summary"), [
        ({"text": "I will not.", "stop": "refusal"}, "refusal", "agent refused the task"),
        ({"text": ""}, "empty", "agent reply is empty"),
        ({"text": "goo", "stop": "max_tokens"}, "max-tokens",
         "agent reply cut by max_tokens (4096)"),
    ])
    def test_bad_reply_is_a_failed_attempt(self, tmp_path: Path, serve: Serve, provider: str,
                                           stream: bool, step: dict[str, Any], outcome: str,
                                           summary: str) -> None:
        """A refusal, an empty reply or a cut reply fails the attempt with that reason."""
        with serve([step, {"text": "good"}]) as f:
            result = _run(_workflow(tmp_path, f.url, provider, stream), tmp_path)
        assert (result.status, result.phases[0].attempts) == ("completed", 2)
        first = _records(tmp_path)[0]
        assert first["gate"]["kind"] == "producer"
        assert first["gate"]["summary"] == summary
        assert first["artifact"]["producer"]["outcome"] == outcome
        assert first["artifact"]["sha256"] is None
        if outcome == "refusal":
            assert first["gate"]["detail"] == "I will not."

    def test_server_errors_after_retries_fail_the_attempt(self, tmp_path: Path,
                                                          serve: Serve) -> None:
        """5xx beyond the SDK's retries is a failed attempt, recorded, then the hard-stop."""
        with serve([{"status": 500}] * 3) as f:
            result = _run(_workflow(tmp_path, f.url, max_attempts=1), tmp_path)
        assert (result.status, result.exit) == ("hard-stop", 1)
        (rec,) = _records(tmp_path)
        assert rec["artifact"]["producer"]["outcome"] == "provider-error"
        assert rec["gate"]["summary"] == "agent request failed after the SDK's retries"
        assert len(f.requests) == 3

    def test_missing_key_is_an_input_error(self, tmp_path: Path, serve: Serve,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
        """No key in the environment: exit 2 before any request or record."""
        monkeypatch.delenv("ANTHROPIC_API_KEY")
        with (serve([{"text": "good"}]) as f,
              pytest.raises(InputError, match="ANTHROPIC_API_KEY, which is not set")):
            _run(_workflow(tmp_path, f.url), tmp_path)
        assert f.requests == []
        assert not (tmp_path / "runs" / "r").exists()

    def test_ungated_run_checks_every_agent(self, tmp_path: Path, serve: Serve,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
        """An ungated baseline runs every phase, so every agent's key is checked first."""
        monkeypatch.delenv("OPENAI_API_KEY")
        with serve([{"text": "good"}]) as f:
            path = _workflow(tmp_path, f.url)
            doc = json.loads(path.read_text())
            other = json.loads(json.dumps(doc["phases"][0]))
            other.update(name="other", role="someone", artifact="o.txt")
            other["producer"]["agent"]["provider"] = "openai"
            doc["phases"].append(other)
            path.write_text(json.dumps(doc))
            with pytest.raises(InputError, match="OPENAI_API_KEY, which is not set"):
                _run(path, tmp_path, gated=False)
        assert f.requests == []

    def test_missing_sdk_names_the_extra(self, tmp_path: Path, serve: Serve,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the provider's SDK the run is refused before it exists, naming the extra."""
        monkeypatch.setitem(sys.modules, "anthropic", None)
        with (serve([{"text": "good"}]) as f,
              pytest.raises(InputError, match=r"pip install 'roadcheck\[anthropic\]'")):
            _run(_workflow(tmp_path, f.url), tmp_path)
        assert f.requests == []
        assert not (tmp_path / "runs" / "r").exists()

    def test_sdks_are_imported_only_when_an_agent_runs(self) -> None:
        """Loading the harness and a workflow with agents imports neither SDK."""
        code = ("import sys, roadcheck.harness.engine, roadcheck.cli; "
                "from roadcheck.harness import parse_workflow_spec; "
                "parse_workflow_spec({'workflow': 'w', 'phases': [{'name': 'a', 'role': 'r', "
                "'producer': {'agent': {'provider': 'openai', 'model': 'm', 'task': 't'}}, "
                "'artifact': 'a', 'gate': {'command': ['true']}}]}); "
                "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        assert out.stdout.strip() == "[]"

    def test_another_roles_agent_needs_no_key(self, tmp_path: Path, serve: Serve,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
        """Only the acting role's agent phases need their key: a writer pauses for review."""
        monkeypatch.delenv("OPENAI_API_KEY")
        with serve([{"text": "good"}]) as f:
            path = _workflow(tmp_path, f.url)
            doc = json.loads(path.read_text())
            review = json.loads(json.dumps(doc["phases"][0]))
            review.update(name="review", role="reviewer", reviews="write", artifact="r.txt")
            review["producer"]["agent"]["provider"] = "openai"
            doc["phases"].append(review)
            path.write_text(json.dumps(doc))
            result = _run(path, tmp_path)
        assert (result.status, result.waiting_for) == ("paused", "reviewer")

    def test_key_from_named_variable(self, tmp_path: Path, serve: Serve,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
        """api_key_env names the variable the key is read from; it is sent, never recorded."""
        monkeypatch.setenv("MY_GATEWAY_KEY", "gw-key-42")
        with serve([{"text": "good"}]) as f:
            _run(_workflow(tmp_path, f.url, "openai", api_key_env="MY_GATEWAY_KEY"), tmp_path)
        assert _records(tmp_path)[0]["verdict"] == "pass"
        assert "gw-key-42" not in (tmp_path / "runs" / "r" / "evidence.jsonl").read_text()


class TestBudget:
    """A token or cost budget stops the loop with a recorded reason."""

    def test_phase_token_budget_stops_mid_run(self, tmp_path: Path, serve: Serve) -> None:
        """30 tokens: two 20-token attempts spend it; the third never starts."""
        with serve([{"text": "bad"}, {"text": "bad"}, {"text": "good"}]) as f:
            path = _workflow(tmp_path, f.url, max_attempts=5, budget={"tokens": 30})
            result = _run(path, tmp_path)
        assert (result.status, result.exit, result.reason) == ("hard-stop", 1,
                                                               "budget-exhausted")
        assert "token budget is exhausted: 40 of 30 tokens spent" in result.message
        assert len(_records(tmp_path)) == 2 and len(f.requests) == 2
        traj = (tmp_path / "runs" / "r" / "trajectory.jsonl").read_text()
        assert '"action_type":"budget"' in traj.replace(" ", "")
        assert "budget-exhausted" in traj

    def test_budget_runs_out_between_turns(self, tmp_path: Path, serve: Serve) -> None:
        """A tool loop stops at the turn that would start past the budget: a failed attempt."""
        step = {"tool": "read_file", "input": {"path": "run.json"}}
        with serve([step, step, step, {"text": "good"}]) as f:
            result = _run(_workflow(tmp_path, f.url, tools=["read_file"],
                                    budget={"tokens": 30}), tmp_path)
        assert (result.status, result.reason) == ("hard-stop", "budget-exhausted")
        (rec,) = _records(tmp_path)
        assert rec["artifact"]["producer"]["outcome"] == "budget-exhausted"
        assert rec["gate"]["summary"] == ("agent stopped mid-attempt: phase 'write' token "
                                          "budget is exhausted: 40 of 30 tokens spent")
        assert len(f.requests) == 2

    def test_run_cost_budget_with_reported_cost(self, tmp_path: Path, serve: Serve) -> None:
        """A cost the endpoint reports counts against the run's cost budget."""
        with serve([{"text": "bad", "cost": 0.02}, {"text": "bad", "cost": 0.02},
                    {"text": "good"}]) as f:
            path = _workflow(tmp_path, f.url, "openai", max_attempts=5,
                             run_budget={"cost": 0.03})
            result = _run(path, tmp_path)
        assert result.reason == "budget-exhausted"
        assert "the run's cost budget is exhausted: 0.04 of 0.03 spent" in result.message
        rec = _records(tmp_path)[0]["artifact"]["producer"]
        assert (rec["cost"], rec["cost_source"]) == (0.02, "provider")

    def test_cost_from_price(self, tmp_path: Path, serve: Serve) -> None:
        """Without a reported cost the agent's price per million tokens gives it."""
        with serve([{"text": "good", "usage": [1000, 500]}]) as f:
            _run(_workflow(tmp_path, f.url, price={"input": 3.0, "output": 15.0}), tmp_path)
        rec = _records(tmp_path)[0]["artifact"]["producer"]
        assert (rec["cost"], rec["cost_source"]) == (0.0105, "price")

    def test_unknown_cost_cannot_be_judged(self, tmp_path: Path, serve: Serve) -> None:
        """A cost budget meeting an attempt without a known cost stops: budget-unknown."""
        with serve([{"text": "bad"}, {"text": "good"}]) as f:
            result = _run(_workflow(tmp_path, f.url, run_budget={"cost": 1.0}), tmp_path)
        assert (result.status, result.reason) == ("hard-stop", "budget-unknown")
        assert len(_records(tmp_path)) == 1

    def test_budget_holds_across_resume(self, tmp_path: Path, serve: Serve) -> None:
        """What earlier invocations spent still counts after a resume."""
        with serve([{"text": "bad"}, {"text": "bad"}]) as f:
            path = _workflow(tmp_path, f.url, max_attempts=1, run_budget={"tokens": 30})
            assert _run(path, tmp_path).reason == "gate-failed"
            again = Workflow.load(path).run(runs_dir=tmp_path / "runs", role="writer",
                                            identity="alice", resume="r")
            assert again.reason == "gate-failed"
            third = Workflow.load(path).run(runs_dir=tmp_path / "runs", role="writer",
                                            identity="alice", resume="r")
        assert third.reason == "budget-exhausted"
        assert len(f.requests) == 2


class TestTools:
    """read_file and write_artifact run in the harness, inside the run's roots."""

    @pytest.mark.parametrize(("provider", "stream"), PROVIDERS)
    def test_write_artifact_tool(self, tmp_path: Path, serve: Serve, provider: str,
                                 stream: bool) -> None:
        """The tool's content is the artifact; the closing text is not."""
        script = [{"tool": "write_artifact", "input": {"content": "good"}},
                  {"text": "I wrote it."}]
        with serve(script) as f:
            result = _run(_workflow(tmp_path, f.url, provider, stream,
                                    tools=["write_artifact"]), tmp_path)
        assert result.status == "completed"
        assert (tmp_path / "runs" / "r" / "out.txt").read_text() == "good"
        producer = _records(tmp_path)[0]["artifact"]["producer"]
        assert (producer["turns"], producer["tool_calls"]) == (2, 1)
        assert len(producer["request_ids"]) == 2

    def test_bad_tool_calls_are_told_not_run(self, tmp_path: Path, serve: Serve) -> None:
        """An unknown tool or bad arguments go back to the model as errors; nothing runs."""
        script = [{"tool": "shell", "input": {"cmd": "rm -rf /"}},
                  {"tool": "write_artifact", "input": {"text": "good"}},
                  {"tool": "write_artifact", "input": {"content": "good"}},
                  {"text": "done"}]
        with serve(script) as f:
            result = _run(_workflow(tmp_path, f.url, tools=["write_artifact"]), tmp_path)
        assert result.status == "completed"
        said = [json.dumps(r["body"]["messages"][-1]) for r in f.requests[1:]]
        assert "no tool 'shell'" in said[0]
        assert "write_artifact takes" in said[1]
        assert "wrote the artifact (4 bytes)" in said[2]
        assert _records(tmp_path)[0]["artifact"]["producer"]["tool_calls"] == 3

    @pytest.mark.parametrize("provider", ["anthropic", "openai"])
    def test_read_file_is_confined(self, tmp_path: Path, serve: Serve, provider: str) -> None:
        """A file inside the run is read; one outside the roots is refused to the model."""
        outside = tmp_path / "secret.txt"
        outside.write_text("secret")
        script = [{"tool": "read_file", "input": {"path": "feedback/none.txt"}},
                  {"tool": "read_file", "input": {"path": str(outside)}},
                  {"tool": "read_file", "input": {"path": "run.json"}},
                  {"text": "good"}]
        with serve(script) as f:
            result = _run(_workflow(tmp_path, f.url, provider, tools=["read_file"]), tmp_path)
        assert result.status == "completed"
        said = [json.dumps(r["body"]["messages"][-1]) for r in f.requests[1:]]
        assert "No such file" in said[0]
        assert "refused" in said[1] and "secret\"" not in said[1]
        assert '\\"workflow\\": \\"wf\\"' in said[2] or "workflow" in said[2]

    def test_turns_exhausted(self, tmp_path: Path, serve: Serve) -> None:
        """A model that only calls tools fails the attempt after max_turns."""
        step = {"tool": "read_file", "input": {"path": "run.json"}}
        with serve([step] * 2) as f:
            result = _run(_workflow(tmp_path, f.url, tools=["read_file"], max_turns=2,
                                    max_attempts=1), tmp_path)
        assert result.status == "hard-stop"
        assert _records(tmp_path)[0]["artifact"]["producer"]["outcome"] == "turns-exhausted"
        assert len(f.requests) == 2


class TestPrompts:
    """Params and the input are interpolated; JSON braces stay text."""

    def test_interpolation(self, tmp_path: Path, serve: Serve) -> None:
        """{param}, {input_text} and {{literal}} in a prompt file; JSON braces untouched."""
        source = tmp_path / "source.txt"
        source.write_text("the source text")
        (tmp_path / "task.md").write_text(
            'Tone: {tone}. Source: {input_text}. Keep {{tone}} and {"a": 1}.')
        with serve([{"text": "good"}]) as f:
            path = _workflow(tmp_path, f.url, task=None, task_file="task.md")
            doc = json.loads(path.read_text())
            doc["params"] = {"tone": "dry"}
            doc["phases"][0]["input"] = str(source)
            path.write_text(json.dumps(doc))
            _run(path, tmp_path)
        assert _prompt(f.requests[0]) == ('Tone: dry. Source: the source text. Keep {tone} '
                                          'and {"a": 1}.')
        assert f.requests[0]["body"]["system"] == "You write artifacts."

    @pytest.mark.parametrize("provider", ["anthropic", "openai"])
    def test_request_settings(self, tmp_path: Path, serve: Serve, provider: str) -> None:
        """model, max_tokens, temperature and the system prompt reach the request as set."""
        with serve([{"text": "good"}]) as f:
            result = _run(_workflow(tmp_path, f.url, provider, max_tokens=321,
                                    temperature=0.3), tmp_path)
        assert result.status == "completed", result.message
        body = f.requests[0]["body"]
        assert (body["model"], body["max_tokens"], body["temperature"]) == (
            "test-model", 321, 0.3)
        system = (body["system"] if provider == "anthropic"
                  else body["messages"][0]["content"])
        assert system == "You write artifacts."
        assert "tools" not in body

    @given(st.text(alphabet=st.sampled_from(list("{}ab_1 :\"")), max_size=40))
    def test_rendering_never_fails_and_only_touches_names(self, text: str) -> None:
        """Any text renders once its names are given; text without a {name} is kept as is."""
        names = prompt_names(text)
        out = render_prompt(text, dict.fromkeys(names, "X"))
        if not names and "{{" not in text:
            assert out == text

    def test_model_from_a_param(self, tmp_path: Path, serve: Serve) -> None:
        """A {param} in the model names the model asked for and recorded."""
        with serve([{"text": "good"}]) as f:
            path = _workflow(tmp_path, f.url, "openai", model="{llm}")
            doc = json.loads(path.read_text())
            doc["params"] = {"llm": "small-model"}
            path.write_text(json.dumps(doc))
            _run(path, tmp_path)
        assert f.requests[0]["body"]["model"] == "small-model"
        assert _records(tmp_path)[0]["artifact"]["producer"]["model"] == "small-model"

    @pytest.mark.parametrize(("setup", "message"), [
        ("missing", "agent.task_file: cannot read"),
        ("binary", "is not UTF-8 text"),
        ("fifo", "not a regular file"),
        ("no-input", "the prompt uses {input_text}, but the input"),
    ])
    def test_unusable_prompt_is_input_error(self, tmp_path: Path, serve: Serve, setup: str,
                                            message: str) -> None:
        """A prompt file or input that cannot be read stops the run (exit 2) before a request."""
        task = tmp_path / "task.md"
        if setup == "binary":
            task.write_bytes(b"\xff\xfe")
        elif setup == "fifo":
            os.mkfifo(task)
        elif setup == "no-input":
            task.write_text("Use {input_text}.")
        with serve([{"text": "good"}]) as f:
            path = _workflow(tmp_path, f.url, task=None, task_file="task.md")
            if setup == "no-input":
                doc = json.loads(path.read_text())
                doc["phases"][0]["input"] = str(tmp_path / "absent.txt")
                path.write_text(json.dumps(doc))
            with pytest.raises(InputError, match=re.escape(message)):
                _run(path, tmp_path)
        assert f.requests == []

    def test_unknown_placeholder_in_file_is_input_error(self, tmp_path: Path,
                                                        serve: Serve) -> None:
        """A prompt file naming an unknown placeholder stops before any request."""
        (tmp_path / "task.md").write_text("Use {nope}.")
        with (serve([]) as f,
              pytest.raises(InputError, match=r"agent.task_file: unknown placeholder")):
            _run(_workflow(tmp_path, f.url, task=None, task_file="task.md"), tmp_path)
        assert f.requests == []


def _doc(**agent: Any) -> dict[str, Any]:
    base = {"provider": "anthropic", "model": "m", "task": "t"}
    base.update(agent)
    return {"workflow": "w", "phases": [{"name": "a", "role": "r", "producer": {
        "agent": {k: v for k, v in base.items() if v is not None}},
        "artifact": "a.txt", "gate": {"command": ["true"]}}]}


class TestAgentSpec:
    """The agent block is strict: every problem is one located line."""

    @pytest.mark.parametrize(("agent", "message"), [
        ({"provider": "gemini"}, "producer.agent.provider: must be 'anthropic' or 'openai'"),
        ({"task": None}, "an agent has one task prompt"),
        ({"task_file": "t.md"}, "an agent has one task prompt"),
        ({"system": "s", "system_file": "s.md"}, "at most one system prompt"),
        ({"task": "hi {who}"}, "producer.agent.task: unknown placeholder(s) {who}"),
        ({"tools": ["read_file", "read_file"]}, "a tool is listed twice"),
        ({"tools": ["shell"]}, "producer.agent.tools.0"),
        ({"budget": {}}, "a budget sets tokens, cost or both"),
        ({"max_tokens": 0}, "producer.agent.max_tokens"),
        ({"temperature": 3}, "producer.agent.temperature"),
        ({"api_key": "sk-1"}, "unknown key 'api_key'"),
        ({"api_key_env": "not a name"}, "must name an environment variable"),
    ])
    def test_refused(self, agent: dict[str, Any], message: str) -> None:
        """Each bad agent block is refused with the field named."""
        with pytest.raises(SpecError) as info:
            parse_workflow_spec(_doc(**agent), "wf.yaml")
        assert message in str(info.value)

    def test_accepted(self) -> None:
        """A full agent block parses, with its placeholders checked against the params."""
        doc = _doc(task="Write about {topic} from {input_text}; {{braces}}", tools=[
            "read_file", "write_artifact"], budget={"tokens": 100}, temperature=0.2,
            base_url="{endpoint}")
        doc["params"] = {"topic": "x", "endpoint": "http://127.0.0.1:1"}
        doc["budget"] = {"cost": 1.5}
        spec = parse_workflow_spec(doc)
        assert spec.budget is not None and spec.budget.cost == 1.5

    def test_run_budget_must_set_something(self) -> None:
        """A workflow budget with neither tokens nor cost is refused."""
        doc = _doc()
        doc["budget"] = {}
        with pytest.raises(SpecError, match="budget: a budget sets tokens, cost or both"):
            parse_workflow_spec(doc)


class TestAudit:
    """The audit names the agent and its tokens on each record it made."""

    def test_audit_line(self, tmp_path: Path, serve: Serve) -> None:
        """Each agent record's line ends with the provider, model and tokens."""
        from click.testing import CliRunner

        from roadcheck.cli import cli

        with serve([{"text": "good", "usage": [30, 12], "cost": 0.5}]) as f:
            _run(_workflow(tmp_path, f.url, "openai"), tmp_path)
        out = CliRunner().invoke(cli, ["audit", "r", "--runs-dir", str(tmp_path / "runs")])
        assert out.exit_code == 0
        assert out.stdout.splitlines()[-1].endswith(
            "| agent openai/test-model, 42 tokens, cost 0.5")
        page = tmp_path / "audit.html"
        out = CliRunner().invoke(cli, ["audit", "r", "--runs-dir", str(tmp_path / "runs"),
                                       "--html", str(page)])
        assert out.exit_code == 0
        assert "<br>agent openai/test-model, 42 tokens, cost 0.5</td>" in page.read_text()


FAKE_CLAUDE = """#!/bin/sh
# answers like `claude -p PROMPT --output-format text`: good once the prompt holds feedback
echo "$@" > "$0.args"
case "$2" in *"failed its gate"*"expected good"*) printf good ;; *) printf bad ;; esac
"""
FAKE_CODEX = """#!/bin/sh
# answers like `codex exec ... -o FILE PROMPT`: the final message goes to FILE
echo "$@" > "$0.args"
case "$7" in *"failed its gate"*"expected good"*) printf good > "$6" ;; *) printf bad > "$6" ;; esac
"""


class TestCommandAgents:
    """claude -p and codex exec as command producers get the feedback in their prompt."""

    @pytest.mark.parametrize(("name", "body"), [("claude", FAKE_CLAUDE), ("codex", FAKE_CODEX)])
    def test_feedback_reaches_the_cli_agent(self, tmp_path: Path, name: str, body: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
        """The first answer fails the gate; the retry's prompt holds the feedback and passes."""
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        fake = bin_dir / name
        fake.write_text(body)
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        check = tmp_path / "check_good.py"
        check.write_text(CHECK_GOOD)
        (tmp_path / "task.txt").write_text("Write the word good about {input_text}.")
        (tmp_path / "in.txt").write_text("the input")
        path = tmp_path / "wf.json"
        path.write_text(json.dumps({"workflow": "wf", "phases": [{
            "name": "write", "role": "writer", "input": str(tmp_path / "in.txt"),
            "producer": ["{python}", str(EXAMPLES / "agent_producer" / "cli_agent.py"), name,
                         str(tmp_path / "task.txt"), "{input}", "{artifact}"],
            "artifact": "out.txt", "gate": {"command": ["{python}", str(check), "{artifact}"]}}]}))
        result = _run(path, tmp_path)
        assert (result.status, result.phases[0].attempts) == ("completed", 2)
        args = (bin_dir / f"{name}.args").read_text()
        assert "Write the word good about the input." in args
        assert "Your previous answer:" in args and "bad" in args


class TestOverheadScript:
    """``benchmarks/agent_overhead.py`` keeps working (its figures are its own business)."""

    def test_measures_every_figure(self) -> None:  # the autouse fixture sets the key
        """A tiny measurement reports the round trip, the agent and the command producer."""
        figures = load_script(ROOT / "benchmarks" / "agent_overhead.py").measure(3, 1, phases=2)
        for key in ("round_trip_ms", "agent_attempt_ms", "command_attempt_ms"):
            assert figures[key] > 0, key
        assert figures["workflow_phase_ms"]["agent"] > 0
