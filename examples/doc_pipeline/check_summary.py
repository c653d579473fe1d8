"""Gate: a summary is one non-empty sentence of at most 40 words. Exit 0 pass, 1 fail."""

import json
import sys

LIMIT = 40
with open(sys.argv[1], encoding="utf-8") as fh:
    summary = json.load(fh)
words = len(summary["summary"].split())
if words == 0:
    print("summary is empty")
    sys.exit(1)
if words > LIMIT:
    print(f"summary has {words} words; the limit is {LIMIT}")
    sys.exit(1)
print(f"summary has {words} words")
