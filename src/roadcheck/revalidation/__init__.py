"""Resume-time revalidation: may a resumed task touch the world again?

>>> from roadcheck.revalidation import revalidate
>>> result = revalidate(examples / "resume/video/checkpoint.yaml", now="2026-08-10T15:00:00Z")
>>> result.decision, result.exit
('continue', 0)

(``examples`` is the repository's ``examples/`` directory.)
"""

from __future__ import annotations

from roadcheck.findings import Finding
from roadcheck.revalidation.checkpoint import (
    EFFECT_STATES,
    RETRY_CLASSES,
    Checkpoint,
    load_checkpoint,
    parse_checkpoint,
)
from roadcheck.revalidation.core import revalidate
from roadcheck.revalidation.result import QUESTIONS, Revalidation, StepClass

__all__ = [
    "EFFECT_STATES",
    "QUESTIONS",
    "RETRY_CLASSES",
    "Checkpoint",
    "Finding",
    "Revalidation",
    "StepClass",
    "load_checkpoint",
    "parse_checkpoint",
    "revalidate",
]
