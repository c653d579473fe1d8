"""The result of accepting a result file: the gate's verdict and what it was judged on."""

from __future__ import annotations

from roadcheck.acceptance.contract import Contract
from roadcheck.acceptance.gate import GateResult

__all__ = ["AcceptRun"]


class AcceptRun:
    """The outcome of :func:`accept_files`: the gate's result and what it was judged on."""

    __slots__ = ("contract", "label", "result")

    def __init__(self, label: str, contract: Contract, result: GateResult) -> None:
        self.label = label
        self.contract = contract
        self.result = result

    @property
    def exit(self) -> int:
        """0 ACCEPTED, 1 REJECTED."""
        return self.result.exit
