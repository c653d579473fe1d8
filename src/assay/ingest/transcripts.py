"""Readers for chat transcripts: OpenAI-style messages, tau-bench and tau2-bench runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["detect_json_document", "read_openai_chat", "read_tau2", "read_tau_bench"]


def detect_json_document(data: bytes) -> str | None:
    """Name the transcript format of a JSON document, or None."""
    return None


def read_openai_chat(path: str, data: bytes) -> Iterator[Any]:
    raise NotImplementedError


read_tau_bench = read_openai_chat
read_tau2 = read_openai_chat
