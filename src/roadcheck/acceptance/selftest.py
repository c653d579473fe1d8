"""The built-in self-test: four fixtures, one per way a claimed success can lie.

No agent, no network: the probe of the last fixture is a stand-in for a
read-only lookup that finds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roadcheck.acceptance.contract import Contract
from roadcheck.acceptance.gate import GateResult, verify

__all__ = ["SELF_TEST_CONTRACT", "Fixture", "SelfTestCase", "fixtures", "run_self_test"]

#: The contract every fixture is judged against: a tiny CRM with a customer allow-list.
SELF_TEST_CONTRACT = Contract(
    required={"status": "string", "target_id": "string"},
    enums={"status": ["created", "updated", "sent"],
           "target_id": ["cust_1001", "cust_1002", "cust_1003"]},
    claims={"created": "create_record", "updated": "update_record", "sent": "send_invoice"},
)


def _nothing_there() -> bool:
    """Stands in for a read-only GET of the invoice that finds no such invoice."""
    return False


@dataclass(frozen=True)
class Fixture:
    """One self-test case: what the agent returned, the calls it made, the verdict expected."""

    title: str
    label: str
    result: Any
    trace: list[dict[str, Any]]
    expected: str
    probe: Any = None


@dataclass(frozen=True)
class SelfTestCase:
    """A fixture and the verdict the gate gave it."""

    fixture: Fixture
    result: GateResult

    @property
    def as_expected(self) -> bool:
        """True when the gate gave the verdict the fixture expects."""
        return self.result.verdict == self.fixture.expected


def fixtures() -> list[Fixture]:
    """The four fixtures, in order."""
    return [
        Fixture("valid: created, and create_record was really called",
                "agent created cust_1001",
                {"status": "created", "target_id": "cust_1001",
                 "summary": "created the customer record"},
                [{"tool": "create_record", "args": {"id": "cust_1001"}}],
                "ACCEPTED"),
        Fixture("malformed: the JSON text lacks its closing brace",
                "agent output is malformed JSON",
                '{"status": "created", "target_id": "cust_1001"',
                [{"tool": "create_record"}],
                "REJECTED"),
        Fixture("claim without action: says updated, only read_record in the trace",
                "agent claims updated, trace has only read_record",
                {"status": "updated", "target_id": "cust_1002",
                 "summary": "updated the record as requested"},
                [{"tool": "read_record", "args": {"id": "cust_1002"}}],
                "REJECTED"),
        Fixture("wrong effect: sent to a customer off the allow-list, probe finds nothing",
                "agent claims sent to cust_9999 (not allow-listed)",
                {"status": "sent", "target_id": "cust_9999",
                 "summary": "invoice sent successfully"},
                [{"tool": "send_invoice", "args": {"id": "cust_9999"}}],
                "REJECTED", probe=_nothing_there),
    ]


def run_self_test() -> list[SelfTestCase]:
    """Judge every fixture against :data:`SELF_TEST_CONTRACT`."""
    return [SelfTestCase(f, verify(f.result, SELF_TEST_CONTRACT, trace=f.trace, probe=f.probe))
            for f in fixtures()]
