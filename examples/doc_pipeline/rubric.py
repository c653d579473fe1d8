"""Score gate: print the share of rubric checks a review found satisfied (0.0 to 1.0)."""

import json
import sys

with open(sys.argv[1], encoding="utf-8") as fh:
    review = json.load(fh)
checks = review["checks"]
for finding in review["findings"]:
    print(f"finding: {finding}", file=sys.stderr)
print(f"{sum(bool(v) for v in checks.values()) / len(checks):.3f}")
