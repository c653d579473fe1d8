"""How long one ``verify()`` call takes on the self-test contract, beside two baselines.

Run: ``python benchmarks/accept_verify.py [--budget-us 20]``. Prints microseconds
per call for the gate and, in the same run, for

- a bare baseline: the same required/allow-list/claim checks written inline
  on a dict (the least any gate could do), and
- ``jsonschema`` validating the same result against an equivalent schema.

Exits 1 when ``verify()`` is slower than the budget.
"""

from __future__ import annotations

import argparse
import re
import sys
import timeit
from typing import Any

from roadcheck import verify
from roadcheck.acceptance.selftest import SELF_TEST_CONTRACT

RESULT = {"status": "created", "target_id": "cust_1001", "summary": "created the customer record"}
RESULT_TEXT = ('{"status": "created", "target_id": "cust_1001", '
               '"summary": "created the customer record"}')
TRACE = [{"tool": "create_record", "args": {"id": "cust_1001"}}]

_STATUS = {"created", "updated", "sent"}
_TARGETS = {"cust_1001", "cust_1002", "cust_1003"}
_CLAIMS = [(re.compile(rf"\b{v}\b", re.I).search, t) for v, t in
           (("created", "create_record"), ("updated", "update_record"), ("sent", "send_invoice"))]


def bare_checks(result: dict[str, Any], trace: list[dict[str, Any]]) -> bool:
    """The same three contract facts and the claim check, inline, with no reasons kept."""
    ok = isinstance(result.get("status"), str) and isinstance(result.get("target_id"), str)
    ok = ok and result["status"] in _STATUS and result["target_id"] in _TARGETS
    called = {c.get("tool") for c in trace}
    text = f"{result.get('status', '')} {result.get('summary', '')}"
    for search, tool in _CLAIMS:
        if search(text) and tool not in called:
            ok = False
    return ok


SCHEMA = {
    "type": "object",
    "required": ["status", "target_id"],
    "properties": {"status": {"type": "string", "enum": sorted(_STATUS)},
                   "target_id": {"type": "string", "enum": sorted(_TARGETS)}},
}


def per_call_us(fn: Any, number: int) -> float:
    """Best of five runs, in microseconds per call."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--budget-us", type=float, default=20.0)
    args = parser.parse_args(argv)

    assert verify(RESULT, SELF_TEST_CONTRACT, trace=TRACE).accepted
    assert bare_checks(RESULT, TRACE)
    import json

    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA)
    assert validator.is_valid(RESULT)

    n = args.number
    rows = [
        ("verify(dict, trace)", per_call_us(lambda: verify(RESULT, SELF_TEST_CONTRACT,
                                                           trace=TRACE), n)),
        ("verify(json text, trace)", per_call_us(lambda: verify(RESULT_TEXT, SELF_TEST_CONTRACT,
                                                                trace=TRACE), n)),
        ("baseline: bare dict checks", per_call_us(lambda: bare_checks(RESULT, TRACE), n)),
        ("baseline: json.loads + bare checks",
         per_call_us(lambda: bare_checks(json.loads(RESULT_TEXT), TRACE), n)),
        ("baseline: jsonschema iter_errors", per_call_us(
            lambda: list(validator.iter_errors(RESULT)), max(n // 10, 100))),
    ]
    gate = rows[0][1]
    print(f"python {sys.version.split()[0]}, {n} calls per run, best of 5")
    for name, us in rows:
        ratio = us / gate
        print(f"{name:<36} {us:8.2f} us/call   {ratio:6.2f}x verify(dict)")
    print(f"budget: verify(dict, trace) <= {args.budget_us:g} us/call -> "
          f"{'met' if gate <= args.budget_us else 'MISSED'}")
    return 0 if gate <= args.budget_us else 1


if __name__ == "__main__":
    sys.exit(main())
