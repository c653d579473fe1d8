"""Whether the output Codex gives a shell call says the command failed.

Codex writes a call's exit status into the output text the model reads (and its
hooks' ``PostToolUse`` carries as ``tool_response``): the JSON form of its shell
tool (``{"output": ..., "metadata": {"exit_code": N}}``), or the plain form with a
header before ``Output:`` (``Exit code: N``, ``Process exited with code N``), or the
sentence it writes when its sandbox stopped the command. The session reader and
the hook adapter read it here, the same way.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["decoded_failed", "plain_failed", "response_failed"]

_SANDBOX_FAILED = "failed in sandbox "
_HEADER_CODE = re.compile(r"(?:Process exited with code|Exit code:) (-?\d+)")


def plain_failed(text: str) -> bool:
    """True when a plain-text output says its command failed."""
    if text.startswith(_SANDBOX_FAILED):
        return True
    lines = text.split("\n")
    if "Output:" not in lines:
        return False
    for line in lines[:lines.index("Output:")]:
        found = _HEADER_CODE.fullmatch(line)
        if found:
            return int(found.group(1)) != 0
    return False


def decoded_failed(doc: dict[str, Any]) -> bool:
    """True when an output given as an object says its command failed."""
    meta = doc.get("metadata")
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    return doc.get("success") is False or (isinstance(code, int) and code != 0)


def response_failed(value: Any) -> bool:
    """True when a hook's ``tool_response`` (text, or the object it may be) says the
    command failed."""
    if isinstance(value, dict):
        return decoded_failed(value)
    if not isinstance(value, str):
        return False
    if value.startswith("{"):
        import orjson

        try:
            doc = orjson.loads(value)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict) and "output" in doc:
            return decoded_failed(doc)
    return plain_failed(value)
