"""Write src/roadcheck/_reason_docs.py from the tables of docs/reasons.md.

The reason codes are described once, in docs/reasons.md; SARIF reports carry the
same words as their rules (``tool.driver.rules``), read from the generated module.
Run ``python scripts/gen_reason_docs.py`` after changing a table;
``tests/test_docs.py`` fails while the module is out of date.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "docs" / "reasons.md"
TARGET = ROOT / "src" / "roadcheck" / "_reason_docs.py"

_ROW = re.compile(r"^\| `([A-Za-z0-9-]+)` \|(.*)\|\s*$")

HEAD = '''"""What each reason code means, as docs/reasons.md describes it (generated).

Written by ``scripts/gen_reason_docs.py`` from the tables of docs/reasons.md; do
not edit. ``SECTIONS`` maps each section's heading anchor to its codes, each with
the text of its "fires when" column, in the order of the page.
"""

from __future__ import annotations

__all__ = ["SECTIONS"]

'''


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def sections(text: str) -> dict[str, dict[str, str]]:
    """Each section's anchor -> its codes -> what fires them, in order."""
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = out.setdefault(anchor(line[3:]), {})
            continue
        match = _ROW.match(line)
        if match and current is not None:
            current[match.group(1)] = match.group(2).split("|")[-1].strip()
    return {name: codes for name, codes in out.items() if codes}


def render(text: str) -> str:
    """The module's source for the page ``text``."""
    lines = [HEAD, "#: section anchor -> reason code -> when it fires\n",
             "SECTIONS: dict[str, dict[str, str]] = {\n"]
    for name, codes in sections(text).items():
        lines.append(f"    {name!r}: {{\n")
        for code, when in codes.items():
            lines.append(f"        {code!r}: (\n")
            words = when.split(" ")
            chunk = ""
            for word in words:
                if chunk and len(chunk) + len(word) + 1 > 72:
                    lines.append(f"            {chunk + ' '!r}\n")
                    chunk = word
                else:
                    chunk = f"{chunk} {word}" if chunk else word
            lines.append(f"            {chunk!r}\n")
            lines.append("        ),\n")
        lines.append("    },\n")
    lines.append("}\n")
    return "".join(lines)


def main() -> int:
    TARGET.write_text(render(SOURCE.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
