"""A scripted model server on 127.0.0.1 that speaks the Messages and Chat Completions APIs.

It answers ``POST .../messages`` (Anthropic) and ``POST .../chat/completions``
(OpenAI-compatible), whole or streamed (server-sent events), with the next reply
of a script, so the official SDKs can be pointed at it with ``base_url`` and a
workflow with agent producers runs offline. A script is a JSON list; each entry is
one response::

    {"text": "...", "stop": "end", "usage": [12, 5]}        a reply (stop: end,
                                                            max_tokens or refusal)
    {"tool": "write_artifact", "input": {"content": "..."}}  a tool call
    {"status": 429}                                         an error (429, 500...)

``usage`` is ``[input_tokens, output_tokens]`` (default ``[10, 10]``); ``cost``
adds a reported cost to a Chat Completions reply; ``expect`` is text the
request must hold (a reply that fixes what a gate said is only given to a prompt
that carries what the gate said), else the answer is a 400 error naming it.
Past the end of the script every request gets a 400 error, so a run can never
loop on it.

Run a command against it (``{url}`` in the command becomes the server's URL)::

    python fake_llm.py replies.json -- roadcheck run workflow.yaml --param llm_url={url}
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeLLM", "serve"]

_ANTHROPIC_STOP = {"end": "end_turn", "max_tokens": "max_tokens", "refusal": "refusal",
                   "tool": "tool_use"}
_OPENAI_STOP = {"end": "stop", "max_tokens": "length", "refusal": "stop", "tool": "tool_calls"}


class FakeLLM:
    """The script, the requests received so far and the replies' numbering."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.url = ""

    def next(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        with self.lock:
            self.requests.append({"path": path, "body": body})
            n = len(self.requests)
            step = self.script.pop(0) if self.script else None
        return n, step


def _anthropic(step: dict[str, Any], n: int, body: dict[str, Any]) -> dict[str, Any]:
    usage_in, usage_out = step.get("usage", [10, 10])
    if "tool" in step:
        content = [{"type": "tool_use", "id": f"toolu_{n}", "name": step["tool"],
                    "input": step.get("input", {})}]
        stop = "tool"
    else:
        content = [{"type": "text", "text": step.get("text", "")}] if step.get("text") else []
        stop = step.get("stop", "end")
    return {"id": f"msg_{n}", "type": "message", "role": "assistant",
            "model": body.get("model", "fake"), "content": content,
            "stop_reason": _ANTHROPIC_STOP[stop], "stop_sequence": None,
            "usage": {"input_tokens": usage_in, "output_tokens": usage_out}}


def _anthropic_events(msg: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    start = {**msg, "content": [], "stop_reason": None,
             "usage": {"input_tokens": msg["usage"]["input_tokens"], "output_tokens": 0}}
    yield "message_start", {"type": "message_start", "message": start}
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            text = block["text"]
            for part in (text[:len(text) // 2], text[len(text) // 2:]):
                yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "text_delta", "text": part}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {**block, "input": {}}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": msg["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


def _openai(step: dict[str, Any], n: int, body: dict[str, Any]) -> dict[str, Any]:
    usage_in, usage_out = step.get("usage", [10, 10])
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    if "tool" in step:
        message["tool_calls"] = [{"id": f"call_{n}", "type": "function", "function": {
            "name": step["tool"], "arguments": json.dumps(step.get("input", {}))}}]
        stop = "tool"
    else:
        stop = step.get("stop", "end")
        if stop == "refusal":
            message["refusal"] = step.get("text", "I can't help with that.")
        else:
            message["content"] = step.get("text", "")
    usage: dict[str, Any] = {"prompt_tokens": usage_in, "completion_tokens": usage_out,
                             "total_tokens": usage_in + usage_out}
    if "cost" in step:
        usage["cost"] = step["cost"]
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": _OPENAI_STOP[stop],
                         "logprobs": None}], "usage": usage}


def _openai_chunks(done: dict[str, Any]) -> Iterator[dict[str, Any]]:
    head = {k: done[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    choice = done["choices"][0]
    message = choice["message"]
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    if message.get("content"):
        text = message["content"]
        deltas += [{"content": text[:len(text) // 2]}, {"content": text[len(text) // 2:]}]
    if message.get("refusal"):
        deltas.append({"refusal": message["refusal"]})
    for i, call in enumerate(message.get("tool_calls") or ()):
        deltas.append({"tool_calls": [{"index": i, **call}]})
    for delta in deltas:
        yield {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    yield {**head, "choices": [], "usage": done["usage"]}


def _handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall per reply

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: bytes, kind: str, headers: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            body = json.loads(raw or b"{}")
            anthropic = self.path.rstrip("/").endswith("/messages")
            n, step = fake.next(self.path, body)
            rid = {"request-id" if anthropic else "x-request-id": f"req_fake_{n}"}
            missing = None
            if step is not None and "expect" in step:
                said = json.dumps(body.get("messages", []), ensure_ascii=False)
                if step["expect"] not in said:
                    missing = f"the request does not hold {step['expect']!r}"
            if step is None or "status" in step or missing:
                status = 400 if step is None or missing else int(step["status"])
                message = (missing or ("the fake server's script is used up" if step is None
                                       else "scripted"))
                err = ({"type": "error", "error": {"type": "api_error", "message": message}}
                       if anthropic else {"error": {"message": message, "type": "api_error"}})
                # retry-after-ms keeps the SDKs' backoff short in tests
                self._send(status, json.dumps(err).encode(), "application/json",
                           {**rid, "retry-after-ms": "1", "x-should-retry":
                            "true" if status in (408, 429) or status >= 500 else "false"})
                return
            reply = (_anthropic if anthropic else _openai)(step, n, body)
            if not body.get("stream"):
                self._send(200, json.dumps(reply).encode(), "application/json", rid)
                return
            if anthropic:
                events = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n"
                                 for name, data in _anthropic_events(reply))
            else:
                events = "".join(f"data: {json.dumps(c)}\n\n" for c in _openai_chunks(reply))
                events += "data: [DONE]\n\n"
            self._send(200, events.encode(), "text/event-stream", rid)

    return Handler


@contextmanager
def serve(script: list[dict[str, Any]]) -> Iterator[FakeLLM]:
    """Serve ``script`` on a free port of 127.0.0.1 while the block runs."""
    fake = FakeLLM(script)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    # a short poll interval: shutdown() waits for the loop to look again
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: fake_llm.py SCRIPT.json -- COMMAND... ({url} is the server's URL)",
              file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        script = json.load(fh)
    with serve(script) as fake:
        # the SDKs want a key; the fake server never looks at it
        env = {"ANTHROPIC_API_KEY": "fake-key", "OPENAI_API_KEY": "fake-key", **os.environ}
        command = [a.replace("{url}", fake.url) for a in argv[2:]]
        return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
