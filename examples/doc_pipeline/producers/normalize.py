"""Normalize a raw document (header lines, '---', body) into JSON: title, tags, body."""

import json
import sys

raw, out = sys.argv[1], sys.argv[2]
with open(raw, encoding="utf-8") as fh:
    header, _, body = fh.read().partition("\n---\n")
fields = dict(line.split(":", 1) for line in header.splitlines() if ":" in line)
doc = {
    "title": fields.get("title", "").strip(),
    "tags": [t.strip() for t in fields.get("tags", "").split(",") if t.strip()],
    "body": " ".join(body.split()),
}
with open(out, "w", encoding="utf-8") as fh:
    json.dump(doc, fh, indent=2)
