"""The two model APIs an agent producer speaks, through their official SDKs.

Each provider keeps one conversation (system prompt, messages, tool results)
and turns every model response into a :class:`Turn`, the same shape for both.
The SDKs are imported here, lazily, and only when an agent phase runs: they are
the optional extras ``roadcheck[anthropic]`` and ``roadcheck[openai]``. Their own
timeout and retries (429 and 5xx, with backoff) apply to every request, so a
transport retry never reaches the harness; what is left after the retries is a
:class:`ProviderFailed`.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from roadcheck.documents.workflow import AgentSpec
from roadcheck.errors import InputError

__all__ = ["TOOL_SCHEMAS", "Conversation", "ProviderFailed", "ToolCall", "Turn",
           "conversation_class", "require_sdk"]

#: What each tool takes; the harness runs the tool itself.
TOOL_SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "read_file": ("Read a UTF-8 text file inside the run's allowed directories; a relative path "
                  "is taken from the run directory.",
                  {"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"], "additionalProperties": False}),
    "write_artifact": ("Write the phase's artifact (the whole content; a later call replaces "
                       "it). The gate judges what was written last.",
                       {"type": "object", "properties": {"content": {"type": "string"}},
                        "required": ["content"], "additionalProperties": False}),
}
_EXTRA = {"anthropic": "anthropic", "openai": "openai"}
#: A reply the SDK cannot read (broken JSON, a missing field) fails the attempt too.
_READ_ERRORS: tuple[type[Exception], ...] = (ValueError, TypeError, KeyError, AttributeError)


class ProviderFailed(Exception):
    """A request that failed after the SDK's own retries, or a reply that cannot be read."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a model turn; ``arguments`` is None when they were not a JSON object."""

    id: str
    name: str
    arguments: dict[str, Any] | None


@dataclass(slots=True)
class Turn:
    """One model response: text, tool calls, why it stopped and what it cost."""

    text: str
    #: ``end``, ``tool_use``, ``max_tokens``, ``refusal`` or the provider's own word.
    stop: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    request_id: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    #: The cost the provider reported for this response, when it reports one.
    cost: float | None = None


def require_sdk(provider: str) -> None:
    """Refuse (``InputError``) a provider whose SDK is not installed, without importing it."""
    if importlib.util.find_spec(provider) is None:
        _sdk(provider)


def _sdk(provider: str) -> Any:
    try:
        return importlib.import_module(provider)
    except ImportError:
        raise InputError(f"agent producer: provider {provider!r} needs the {provider!r} SDK: "
                         f"pip install 'roadcheck[{_EXTRA[provider]}]'") from None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _cost(usage: Any) -> float | None:
    # OpenAI-compatible gateways that bill per request (OpenRouter, LiteLLM) put it in usage
    value = getattr(usage, "cost", None)
    if value is None and getattr(usage, "model_extra", None):
        value = usage.model_extra.get("cost")
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def _why(exc: BaseException) -> str:
    """The SDK's error, and the transport error under it (a refused connection, a bad URL)."""
    text = f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({type(cause).__name__}: {cause})"
    return text


class Conversation:
    """The messages of one attempt, sent to one provider."""

    provider = ""

    def __init__(self, agent: AgentSpec, client: Any, system: str | None, task: str) -> None:
        self.agent = agent
        self.system = system
        self.messages: list[dict[str, Any]] = []
        self.client = client
        self.errors = (_sdk(self.provider).APIError, *_READ_ERRORS)
        self._start(task)

    @staticmethod
    def make_client(agent: AgentSpec, api_key: str, base_url: str | None) -> Any:
        """The SDK client, with the agent's timeout and retries; one serves many attempts."""
        raise NotImplementedError

    def _start(self, task: str) -> None:
        self.messages.append({"role": "user", "content": task})

    def send(self) -> Turn:
        """One request; the turn it returns is already part of the conversation."""
        raise NotImplementedError

    def tool_results(self, results: Sequence[tuple[ToolCall, str]]) -> None:
        """Hand the results of the last turn's tool calls back to the model."""
        raise NotImplementedError


class AnthropicConversation(Conversation):
    """The Messages API."""

    provider = "anthropic"

    @staticmethod
    def make_client(agent: AgentSpec, api_key: str, base_url: str | None) -> Any:
        """An ``anthropic.Anthropic`` client."""
        return _sdk("anthropic").Anthropic(api_key=api_key, base_url=base_url,
                                           timeout=agent.timeout, max_retries=agent.max_retries)

    def _request(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"model": self.agent.model, "max_tokens": self.agent.max_tokens,
                              "messages": self.messages}
        if self.system is not None:
            kw["system"] = self.system
        if self.agent.temperature is not None:
            # in the body as the API takes it: not every SDK release lists it as an argument
            kw["extra_body"] = {"temperature": self.agent.temperature}
        if self.agent.tools:
            kw["tools"] = [{"name": n, "description": TOOL_SCHEMAS[n][0],
                            "input_schema": TOOL_SCHEMAS[n][1]} for n in self.agent.tools]
        return kw

    def send(self) -> Turn:
        """Send the conversation; streamed or whole, the reply is one message."""
        try:
            if self.agent.stream:
                with self.client.messages.stream(**self._request()) as stream:
                    message = stream.get_final_message()
                    request_id = stream.request_id
            else:
                message = self.client.messages.create(**self._request())
                request_id = getattr(message, "_request_id", None)
        except self.errors as exc:
            raise ProviderFailed(_why(exc)) from None
        texts, calls, blocks = [], [], []
        for block in message.content or ():
            if block.type == "text":
                texts.append(block.text)
                blocks.append({"type": "text", "text": block.text})
            elif block.type == "tool_use":
                args = block.input if isinstance(block.input, dict) else None
                calls.append(ToolCall(block.id, block.name, args))
                blocks.append({"type": "tool_use", "id": block.id, "name": block.name,
                               "input": block.input})
        self.messages.append({"role": "assistant", "content": blocks})
        stop = {"end_turn": "end", "stop_sequence": "end", "tool_use": "tool_use",
                "max_tokens": "max_tokens", "refusal": "refusal"}.get(
                    str(message.stop_reason), str(message.stop_reason))
        usage = message.usage
        return Turn("".join(texts), stop, calls, request_id, message.model,
                    _int(getattr(usage, "input_tokens", 0))
                    + _int(getattr(usage, "cache_read_input_tokens", 0))
                    + _int(getattr(usage, "cache_creation_input_tokens", 0)),
                    _int(getattr(usage, "output_tokens", 0)), _cost(usage))

    def tool_results(self, results: Sequence[tuple[ToolCall, str]]) -> None:
        """One user message holding a ``tool_result`` block per call."""
        self.messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call.id, "content": text}
            for call, text in results]})


class OpenAIConversation(Conversation):
    """The Chat Completions API, as OpenAI and every compatible server speak it."""

    provider = "openai"

    @staticmethod
    def make_client(agent: AgentSpec, api_key: str, base_url: str | None) -> Any:
        """An ``openai.OpenAI`` client."""
        return _sdk("openai").OpenAI(api_key=api_key, base_url=base_url, timeout=agent.timeout,
                                     max_retries=agent.max_retries)

    def _start(self, task: str) -> None:
        if self.system is not None:
            self.messages.append({"role": "system", "content": self.system})
        self.messages.append({"role": "user", "content": task})

    def _request(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"model": self.agent.model, "max_tokens": self.agent.max_tokens,
                              "messages": self.messages}
        if self.agent.temperature is not None:
            kw["temperature"] = self.agent.temperature
        if self.agent.tools:
            kw["tools"] = [{"type": "function", "function": {
                "name": n, "description": TOOL_SCHEMAS[n][0], "parameters": TOOL_SCHEMAS[n][1]}}
                for n in self.agent.tools]
        return kw

    def send(self) -> Turn:
        """Send the conversation; a stream is gathered into one completion."""
        try:
            if self.agent.stream:
                from openai.lib.streaming.chat import ChatCompletionStreamState

                kw = self._request()
                stream = self.client.chat.completions.create(
                    **kw, stream=True, stream_options={"include_usage": True})
                state: Any = ChatCompletionStreamState(input_tools=kw.get("tools", []))
                with stream:
                    for chunk in stream:
                        state.handle_chunk(chunk)
                # the snapshot, not get_final_completion(): that raises on a cut or filtered
                # reply, which is a failed attempt with its reason here
                completion = state.current_completion_snapshot
                request_id = stream.response.headers.get("x-request-id")
            else:
                completion = self.client.chat.completions.create(**self._request())
                request_id = getattr(completion, "_request_id", None)
        except self.errors as exc:
            raise ProviderFailed(_why(exc)) from None
        if not completion.choices:
            raise ProviderFailed("the reply has no choices")
        choice = completion.choices[0]
        message = choice.message
        calls = []
        for call in message.tool_calls or ():
            function = getattr(call, "function", None)
            if function is None:
                continue
            try:
                args = orjson.loads(function.arguments or "{}")
            except orjson.JSONDecodeError:
                args = None
            calls.append(ToolCall(call.id, function.name, args if isinstance(args, dict)
                                  else None))
        said: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
        if calls:
            said["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": orjson.dumps(c.arguments or {}).decode()}}
                for c in calls]
        self.messages.append(said)
        finish = str(choice.finish_reason)
        if getattr(message, "refusal", None):
            stop = "refusal"
        else:
            stop = {"stop": "end", "tool_calls": "tool_use", "function_call": "tool_use",
                    "length": "max_tokens", "content_filter": "refusal"}.get(finish, finish)
        usage = completion.usage
        # a refusal's words are the detail of the failed attempt
        text = message.content or (getattr(message, "refusal", None) or "")
        return Turn(text if stop == "refusal" else message.content or "", stop, calls,
                    request_id, completion.model,
                    _int(getattr(usage, "prompt_tokens", 0)),
                    _int(getattr(usage, "completion_tokens", 0)), _cost(usage))

    def tool_results(self, results: Sequence[tuple[ToolCall, str]]) -> None:
        """One ``tool`` message per call."""
        for call, text in results:
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


def conversation_class(agent: AgentSpec) -> type[Conversation]:
    """The conversation of the agent's provider."""
    return AnthropicConversation if agent.provider == "anthropic" else OpenAIConversation
