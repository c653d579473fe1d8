"""Small helpers shared by the text renderers."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

__all__ = ["dump_json", "plural", "sha256_footer"]


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 checkpoint``, ``2 checkpoints``."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def sha256_footer(body: str) -> str:
    """The body followed by a ``report-sha256:`` line hashing exactly that body."""
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return f"{body}report-sha256: {digest}\n"


def dump_json(doc: Any) -> str:
    """One JSON document, indented, keys in the order built, newline-terminated."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"
