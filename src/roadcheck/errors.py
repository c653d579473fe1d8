"""The one exception tree of roadcheck, and the exit code each class carries.

A judged failure (a BLOCK, a REJECTED claim) is data, never an exception.
An exception means roadcheck could not judge at all::

    RoadcheckError                  exit 2  could not judge
    +-- InputError              exit 2  bad-input: a file, spec or argument is unusable
    |   +-- SpecError                   the spec / contract / workflow document
    |   +-- TraceError                  a trajectory or trace
    +-- StoreError              exit 2  an evidence store cannot be read or written
        +-- EvidenceError               evidence-broken: the stored evidence fails verification

Every message is one line and names the file and, where there is one, the line.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "EXIT_BLOCK",
    "EXIT_ERROR",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_PASS",
    "EXIT_PAUSED",
    "EvidenceError",
    "InputError",
    "RoadcheckError",
    "SpecError",
    "StoreError",
    "TraceError",
    "worst_exit",
]

EXIT_PASS = 0
EXIT_BLOCK = 1
EXIT_ERROR = 2
EXIT_PAUSED = 3
#: An internal bug: never 0, and distinct from every verdict.
EXIT_INTERNAL = 70
#: Stopped by Ctrl-C (SIGINT), as shells report it: nothing was decided.
EXIT_INTERRUPTED = 130

# BLOCK outranks ERROR outranks PAUSED outranks PASS when many verdicts fold into one exit.
_RANK = {EXIT_PASS: 0, EXIT_PAUSED: 1, EXIT_ERROR: 2, EXIT_BLOCK: 3}


def worst_exit(codes: Iterable[int]) -> int:
    """Fold exit codes into the worst one (1 > 2 > 3 > 0); an empty fold is 0.

    A code outside the contract is an internal bug and folds to ``EXIT_INTERNAL``.
    """
    worst = EXIT_PASS
    for code in codes:
        if code not in _RANK:
            return EXIT_INTERNAL
        if _RANK[code] > _RANK[worst]:
            worst = code
    return worst


class RoadcheckError(Exception):
    """roadcheck could not judge; carries the reason code and the process exit code."""

    exit_code: int = EXIT_ERROR
    reason: str = "bad-input"

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        super().__init__(self.location_message())

    def location_message(self) -> str:
        """Return ``path:line: message`` with whichever location parts are known."""
        where = ""
        if self.path is not None:
            where = f"{self.path}:"
            if self.line is not None:
                where += f"{self.line}:"
            where += " "
        elif self.line is not None:
            where = f"line {self.line}: "
        return f"{where}{self.message}"


class InputError(RoadcheckError):
    """A file, document or argument is unusable (reason ``bad-input``, exit 2)."""


class SpecError(InputError):
    """A replay spec, accept contract, workflow or checkpoint document is unusable."""


class TraceError(InputError):
    """A trajectory or tool-call trace is malformed."""


class StoreError(RoadcheckError):
    """An evidence store cannot be read or written."""


class EvidenceError(StoreError):
    """Stored evidence fails verification, so nothing may act on it (``evidence-broken``)."""

    reason = "evidence-broken"
