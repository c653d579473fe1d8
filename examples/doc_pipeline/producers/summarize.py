"""Summarize a normalized document: its first sentence, with title and tags carried over."""

import json
import sys

with open(sys.argv[1], encoding="utf-8") as fh:
    doc = json.load(fh)
first = doc["body"].split(". ")[0].rstrip(".") + "."
summary = {"title": doc["title"], "tags": doc["tags"], "summary": first,
           "words": len(first.split())}
with open(sys.argv[2], "w", encoding="utf-8") as fh:
    json.dump(summary, fh, indent=2)
