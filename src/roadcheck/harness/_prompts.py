"""Prompt templates of agent producers: ``{name}`` placeholders in text full of other braces.

A prompt often holds JSON or code, so only ``{name}`` (a bare identifier in
braces) is a placeholder; ``{{name}}`` writes the text ``{name}``, and every
other brace is plain text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["PROMPT_ONLY", "prompt_names", "render_prompt"]

#: Placeholders only prompts know: ``{input_text}`` is the content of the phase's input.
PROMPT_ONLY = frozenset({"input_text"})
_PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def prompt_names(text: str) -> set[str]:
    """The placeholders a prompt uses."""
    return {m.group(2) for m in _PLACEHOLDER.finditer(text) if m.group(2) is not None}


def render_prompt(text: str, values: Mapping[str, str]) -> str:
    """The prompt with every ``{name}`` replaced by its value (each name must be known)."""

    def one(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return "{" + match.group(1) + "}"
        return values[match.group(2)]

    return _PLACEHOLDER.sub(one, text)
