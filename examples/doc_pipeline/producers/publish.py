"""Publish a summary as a short Markdown page."""

import json
import sys

with open(sys.argv[1], encoding="utf-8") as fh:
    summary = json.load(fh)
page = f"# {summary['title']}\n\n{summary['summary']}\n\nTags: {', '.join(summary['tags'])}\n"
with open(sys.argv[2], "w", encoding="utf-8") as fh:
    fh.write(page)
