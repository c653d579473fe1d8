"""Agent producers: a model writes the phase's artifact inside the bounded revision loop.

A phase whose producer is ``{agent: {...}}`` asks a model (the Anthropic
Messages API, or any OpenAI-compatible Chat Completions endpoint) for its
artifact. The reply becomes the artifact, or, when the agent may call
``write_artifact``, what it wrote last; the gate then judges it like any other.

On a failed gate the next attempt's prompt carries the gate's feedback (the
same document as ``ROADCHECK_FEEDBACK_FILE``) and the previous artifact, so the
engine's ``max_attempts`` and hard-stop bound a real revision. A refusal, an
empty reply, a reply cut by ``max_tokens``, tool turns used up or a request
that failed after the SDK's own retries is a failed attempt with that reason.

Each attempt's evidence record carries the agent's evidence as
``artifact.producer`` (provider, model, request ids, token usage, cost where
known, the prompt's sha256; never the API key): where the artifact came from,
inside the hash chain, in every store. The tokens and cost of those records
count against the phase's and the run's ``budget``; once a limit is reached the
loop stops before the next attempt with the reason ``budget-exhausted``
(``budget-unknown`` when a cost limit meets an attempt whose cost nobody
reported).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import orjson

from roadcheck._files import FileRefused, read_regular
from roadcheck.documents.workflow import AgentProducer, AgentSpec, Budget, Phase, WorkflowSpec
from roadcheck.errors import InputError
from roadcheck.harness._prompts import PROMPT_ONLY, prompt_names, render_prompt
from roadcheck.harness._providers import (
    ProviderFailed,
    ToolCall,
    Turn,
    conversation_class,
    require_sdk,
)
from roadcheck.harness.gates import GateOutcome
from roadcheck.reasons import Reason

__all__ = ["DEFAULT_KEY_ENV", "AgentRunner", "Spend", "agent_of", "preflight"]

#: The environment variable each provider's API key is read from by default.
DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
#: How much of a file a prompt or a tool result carries.
TEXT_LIMIT = 256 * 1024


def _text(path: Path, roots: Iterable[Path] | None, limit: int = TEXT_LIMIT) -> str:
    """A file's text, cut at ``limit`` bytes; ``OSError`` when it cannot be read."""
    data = read_regular(path, None if roots is None else list(roots))
    cut = len(data) > limit
    text = data[:limit].decode("utf-8", errors="replace")
    return text + (f"\n[... cut at {limit} bytes]" if cut else "")


@dataclass(slots=True)
class Spend:
    """Tokens and cost spent by agent attempts; ``unknown`` counts attempts without a cost."""

    tokens: int = 0
    cost: float = 0.0
    unknown: int = 0

    def add(self, producer: Mapping[str, Any]) -> None:
        """Count one attempt's ``producer`` evidence."""
        usage = producer.get("usage") or {}
        self.tokens += int(usage.get("total_tokens") or 0)
        cost = producer.get("cost")
        if isinstance(cost, int | float):
            self.cost += float(cost)
        else:
            self.unknown += 1

    def plus(self, other: Spend) -> Spend:
        """What both spent together."""
        return Spend(self.tokens + other.tokens, self.cost + other.cost,
                     self.unknown + other.unknown)

    def over(self, budget: Budget | None, what: str) -> tuple[str, str] | None:
        """``(reason, message)`` when ``budget`` is spent (or cannot be judged), else None."""
        if budget is None:
            return None
        if budget.tokens is not None and self.tokens >= budget.tokens:
            return (Reason.BUDGET_EXHAUSTED, f"{what} token budget is exhausted: {self.tokens} "
                    f"of {budget.tokens} tokens spent")
        if budget.cost is not None:
            if self.unknown:
                return (Reason.BUDGET_UNKNOWN, f"{what} cost budget cannot be judged: "
                        f"{self.unknown} attempt(s) have no known cost (the provider reported "
                        "none and the agent has no price)")
            if self.cost >= budget.cost:
                return (Reason.BUDGET_EXHAUSTED, f"{what} cost budget is exhausted: "
                        f"{self.cost:.6g} of {budget.cost:.6g} spent")
        return None


def _key_name(agent: AgentSpec) -> str:
    return agent.api_key_env or DEFAULT_KEY_ENV[agent.provider]


def preflight(spec: WorkflowSpec, role: str | None, env: Mapping[str, str],
              source: str | None = None) -> None:
    """Refuse (``InputError``) agent phases of ``role`` (None: every one) without SDK or key."""
    for index, phase in enumerate(spec.phases):
        agent = agent_of(phase)
        if agent is None or role not in (None, phase.role):
            continue
        try:
            require_sdk(agent.provider)
        except InputError as exc:
            raise InputError(f"phases[{index}].producer.agent: {exc.message}",
                             path=source) from None
        if not env.get(_key_name(agent)):
            raise InputError(f"phases[{index}].producer.agent: phase {phase.name!r} reads its "
                             f"API key from the environment variable {_key_name(agent)}, "
                             "which is not set", path=source)


def agent_of(phase: Phase) -> AgentSpec | None:
    """The phase's agent, or None when its producer is a command."""
    producer = phase.producer
    return producer.agent if isinstance(producer, AgentProducer) else None


class _Attempt:
    """What one attempt spent and saw, turned into its evidence at the end."""

    def __init__(self, agent: AgentSpec, prompt_sha256: str) -> None:
        self.agent = agent
        self.prompt_sha256 = prompt_sha256
        self.turns: list[Turn] = []
        self.tool_calls = 0

    def spend(self) -> Spend:
        spend = Spend()
        spend.add(self.evidence("ok"))
        return spend

    def evidence(self, outcome: str) -> dict[str, Any]:
        agent = self.agent
        tin = sum(t.input_tokens for t in self.turns)
        tout = sum(t.output_tokens for t in self.turns)
        reported = [t.cost for t in self.turns]
        cost: float | None = None
        source = None
        if self.turns and all(c is not None for c in reported):
            cost, source = sum(c for c in reported if c is not None), "provider"
        elif agent.price is not None:
            cost = (tin * agent.price.input + tout * agent.price.output) / 1_000_000
            source = "price"
        elif not self.turns:
            cost, source = 0.0, None
        served = next((t.model for t in self.turns if t.model), None)
        return {"kind": "agent", "provider": agent.provider, "model": agent.model,
                "served_model": served,
                "request_ids": [t.request_id for t in self.turns if t.request_id],
                "turns": len(self.turns), "tool_calls": self.tool_calls,
                "stop": self.turns[-1].stop if self.turns else None, "outcome": outcome,
                "usage": {"input_tokens": tin, "output_tokens": tout,
                          "total_tokens": tin + tout},
                "cost": None if cost is None else round(cost, 10), "cost_source": source,
                "prompt_sha256": self.prompt_sha256}


class AgentRunner:
    """The agent producers of one invocation: their prompts, tools, evidence and budgets."""

    def __init__(self, spec: WorkflowSpec, spec_dir: Path, run_dir: Path,
                 roots: tuple[Path, ...], env: Mapping[str, str]) -> None:
        self.spec = spec
        self.spec_dir = spec_dir
        self.run_dir = run_dir
        self.roots = roots
        self.env = env
        self.run_spend = Spend()
        self.phase_spend: dict[str, Spend] = {}
        self._clients: dict[tuple[Any, ...], Any] = {}

    def close(self) -> None:
        """Close the SDK clients (and their connections) the attempts opened."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()

    def count(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Count what earlier records of the run spent (a resume keeps its budget)."""
        for rec in records:
            artifact = rec.get("artifact")
            producer = artifact.get("producer") if isinstance(artifact, Mapping) else None
            if isinstance(producer, Mapping) and producer.get("kind") == "agent":
                self.run_spend.add(producer)
                self.phase_spend.setdefault(str(rec.get("phase")), Spend()).add(producer)

    def stop(self, phase: Phase) -> tuple[str, str] | None:
        """``(reason, message)`` when a budget forbids another attempt of ``phase``, else None.

        Also refuses (``InputError``) an agent whose API key is not in the environment.
        """
        agent = agent_of(phase)
        if agent is None:
            return None
        self.api_key(phase, agent)
        return self._over(phase, agent, Spend())

    def _over(self, phase: Phase, agent: AgentSpec, more: Spend) -> tuple[str, str] | None:
        """The phase's or the run's budget, spent once ``more`` is added to what is counted."""
        spent = self.phase_spend.get(phase.name, Spend())
        return (spent.plus(more).over(agent.budget, f"phase {phase.name!r}")
                or self.run_spend.plus(more).over(self.spec.budget, "the run's"))

    def api_key(self, phase: Phase, agent: AgentSpec) -> str:
        """The API key, only ever from the environment."""
        name = _key_name(agent)
        key = self.env.get(name, "")
        if not key:
            raise InputError(f"phase {phase.name!r}: the agent's API key is read from the "
                             f"environment variable {name}, which is not set")
        return key

    def prompts(self, phase: Phase, agent: AgentSpec,
                values: Mapping[str, str]) -> tuple[str | None, str]:
        """``(system, task)`` with the phase's params and input interpolated."""
        texts = []
        for inline, file, what in ((agent.system, agent.system_file, "system_file"),
                                   (agent.task, agent.task_file, "task_file")):
            if file is None:
                texts.append(inline)
                continue
            path = Path(file.format_map(values))
            path = path if path.is_absolute() else self.spec_dir / path
            try:
                text = read_regular(path).decode("utf-8")
            except FileRefused as exc:
                raise InputError(f"phase {phase.name!r}: agent.{what}: {path} {exc.why}") \
                    from None
            except OSError as exc:
                raise InputError(f"phase {phase.name!r}: agent.{what}: cannot read "
                                 f"{path}: {exc.strerror or exc}") from None
            except UnicodeDecodeError as exc:
                raise InputError(f"phase {phase.name!r}: agent.{what}: {path} is not UTF-8 "
                                 f"text (byte {exc.start})") from None
            unknown = prompt_names(text) - set(values) - PROMPT_ONLY
            if unknown:
                raise InputError(f"phase {phase.name!r}: agent.{what}: unknown placeholder(s) "
                                 f"{', '.join('{' + u + '}' for u in sorted(unknown))}",
                                 path=str(path))
            texts.append(text)
        system, task = texts
        assert task is not None
        names = prompt_names(task) | (prompt_names(system) if system else set())
        full = dict(values)
        if "input_text" in names:
            try:
                full["input_text"] = _text(Path(values["input"]), None)
            except OSError as exc:
                raise InputError(f"phase {phase.name!r}: the prompt uses {{input_text}}, but "
                                 f"the input {values['input'] or '(none)'} cannot be read: "
                                 f"{getattr(exc, 'why', None) or exc.strerror or exc}") \
                    from None
        return (None if system is None else render_prompt(system, full),
                render_prompt(task, full))

    def revision(self, artifact: Path, feedback: Path | None) -> str:
        """The part of the prompt that hands the failed attempt back to the model."""
        try:
            said = feedback.read_text(encoding="utf-8") if feedback is not None else ""
        except OSError as exc:
            said = f"[the feedback file cannot be read: {exc.strerror or exc}]"
        try:
            previous = _text(artifact, self.roots)
        except FileNotFoundError:
            previous = "[no artifact was written]"
        except OSError as exc:
            previous = f"[the artifact cannot be read: {exc.strerror or exc}]"
        return ("\n\n---\nYour previous attempt did not pass the gate. The gate's feedback "
                "(the document the harness also writes to ROADCHECK_FEEDBACK_FILE):\n\n"
                f"{said.rstrip()}\n\nYour previous artifact:\n\n<<<\n{previous}\n>>>\n\n"
                "Write the whole artifact again, fixed.")

    def produce(self, phase: Phase, values: Mapping[str, str], feedback: Path | None,
                last: Mapping[str, Any] | None) -> tuple[GateOutcome | None, dict[str, Any]]:
        """Run one attempt; ``(failure or None, the record's producer evidence)``."""
        written = agent_of(phase)
        assert written is not None
        # the model may be a placeholder too ({model} from a param)
        agent = msgspec.structs.replace(written, model=written.model.format_map(values))
        artifact = Path(values["artifact"])
        system, task = self.prompts(phase, agent, values)
        if last is not None:
            task += self.revision(artifact, feedback)
        with contextlib.suppress(FileNotFoundError):
            # a failed attempt never leaves the previous attempt's artifact to be judged
            if artifact.is_file() and not artifact.is_symlink():
                artifact.unlink()
        digest = hashlib.sha256(orjson.dumps(
            {"provider": agent.provider, "model": agent.model, "system": system, "task": task,
             "tools": list(agent.tools), "max_tokens": agent.max_tokens,
             "temperature": agent.temperature}, option=orjson.OPT_SORT_KEYS)).hexdigest()
        attempt = _Attempt(agent, digest)
        failure = self._converse(phase, agent, values, system, task, attempt)
        outcome = "ok" if failure is None else failure[0]
        evidence = attempt.evidence(outcome)
        self.run_spend.add(evidence)
        self.phase_spend.setdefault(phase.name, Spend()).add(evidence)
        if failure is not None:
            return GateOutcome(False, "producer", failure[1], failure[2]), evidence
        return None, evidence

    def _converse(self, phase: Phase, agent: AgentSpec, values: Mapping[str, str],
                  system: str | None, task: str,
                  attempt: _Attempt) -> tuple[str, str, str] | None:
        """Talk until the model is done; ``(outcome, summary, detail)`` when it failed."""
        base_url = None if agent.base_url is None else agent.base_url.format_map(values)
        kind = conversation_class(agent)
        key = self.api_key(phase, agent)
        slot = (agent.provider, base_url, key, agent.timeout, agent.max_retries)
        client = self._clients.get(slot)
        if client is None:
            client = self._clients[slot] = kind.make_client(agent, key, base_url)
        chat = kind(agent, client, system, task)
        artifact = Path(values["artifact"])
        wrote = False
        for turn_no in range(agent.max_turns):
            over = self._over(phase, agent, attempt.spend()) if turn_no else None
            if over is not None:
                return ("budget-exhausted", f"agent stopped mid-attempt: {over[1]}", "")
            try:
                turn = chat.send()
            except ProviderFailed as exc:
                return ("provider-error", "agent request failed after the SDK's retries",
                        str(exc)[:300])
            attempt.turns.append(turn)
            if turn.stop == "refusal":
                return ("refusal", "agent refused the task", turn.text.strip()[:300])
            if turn.stop == "max_tokens":
                return ("max-tokens", f"agent reply cut by max_tokens ({agent.max_tokens})",
                        "raise max_tokens or ask for a shorter artifact")
            if turn.tool_calls and agent.tools:
                results = []
                for call in turn.tool_calls:
                    attempt.tool_calls += 1
                    text, written = self._tool(call, agent, artifact)
                    wrote = wrote or written
                    results.append((call, text))
                chat.tool_results(results)
                continue
            if turn.stop not in ("end", "tool_use"):
                return ("stopped", f"agent stopped for an unknown reason {turn.stop!r}", "")
            if wrote:
                return None
            if not turn.text.strip():
                return ("empty", "agent reply is empty", "")
            _write(artifact, turn.text)
            return None
        return ("turns-exhausted", f"agent used all {agent.max_turns} turns without finishing",
                "each tool result is one more turn (max_turns)")

    def _tool(self, call: ToolCall, agent: AgentSpec, artifact: Path) -> tuple[str, bool]:
        """Run one tool call inside the run's roots: ``(result text, artifact written)``."""
        if call.name not in agent.tools:
            return f"error: no tool {call.name!r} (tools: {', '.join(agent.tools)})", False
        args = call.arguments
        if call.name == "write_artifact":
            content = None if args is None else args.get("content")
            if not isinstance(content, str):
                return "error: write_artifact takes {\"content\": text}", False
            _write(artifact, content)
            return f"wrote the artifact ({len(content.encode())} bytes)", True
        path = None if args is None else args.get("path")
        if not isinstance(path, str) or not path:
            return "error: read_file takes {\"path\": text}", False
        target = Path(os.path.normpath(self.run_dir / path))
        try:
            return _text(target, self.roots), False
        except FileRefused as exc:
            return f"error: {path}: refused: it {exc.why}", False
        except OSError as exc:
            return f"error: {path}: {exc.strerror or exc}", False


def _write(artifact: Path, text: str) -> None:
    """Write the artifact in one step, so a gate never reads half of it."""
    artifact.parent.mkdir(parents=True, exist_ok=True)
    tmp = artifact.with_name(f".{artifact.name}.agent.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, artifact)
