"""The success gate: is this claimed success real?

>>> from roadcheck.acceptance import Contract, verify
>>> contract = Contract(required={"status": "string"}, claims={"created": "create_record"})
>>> verify({"status": "created"}, contract, trace=[{"tool": "read_record"}]).verdict
'REJECTED'

Importing this package loads neither pydantic, nor YAML, nor jsonschema: YAML
loads with a YAML contract, jsonschema with a ``json_schema:`` section.
"""

from __future__ import annotations

from roadcheck.acceptance.contract import (
    TYPE_NAMES,
    Claim,
    Contract,
    load_contract,
    parse_contract,
)
from roadcheck.acceptance.files import accept_files, accept_sessions
from roadcheck.acceptance.files import make_probe as make_probe
from roadcheck.acceptance.files import read_result as read_result
from roadcheck.acceptance.gate import (
    CHECKS,
    GateReason,
    GateResult,
    said_at_turn_ends,
    verify,
    verify_session,
)
from roadcheck.acceptance.result import AcceptRun
from roadcheck.acceptance.trace import Call, call_errored, calls_of, load_session, load_trace

__all__ = [
    "CHECKS",
    "TYPE_NAMES",
    "AcceptRun",
    "Call",
    "Claim",
    "Contract",
    "GateReason",
    "GateResult",
    "accept_files",
    "accept_sessions",
    "call_errored",
    "calls_of",
    "load_contract",
    "load_session",
    "load_trace",
    "parse_contract",
    "said_at_turn_ends",
    "verify",
    "verify_session",
]
