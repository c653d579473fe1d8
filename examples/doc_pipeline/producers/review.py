"""Review a summary against the house rubric and write the findings as JSON."""

import json
import sys
from pathlib import Path

with open(sys.argv[1], encoding="utf-8") as fh:
    summary = json.load(fh)
vocabulary = set(json.loads((Path(__file__).parent.parent / "vocabulary.json").read_text()))
off = [t for t in summary["tags"] if t not in vocabulary]
checks = {
    "title present": bool(summary["title"]),
    "tags in the controlled vocabulary": not off,
    "no placeholder text": "TODO" not in summary["summary"] and "TBD" not in summary["summary"],
}
findings = [name for name, ok in checks.items() if not ok]
if off:
    findings.append(f"off-vocabulary tags: {', '.join(off)}")
with open(sys.argv[2], "w", encoding="utf-8") as fh:
    json.dump({"checks": checks, "findings": findings}, fh, indent=2)
