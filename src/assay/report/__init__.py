"""Renderers: pure functions from results to text. They never decide a verdict.

Each capability's renderer loads on first use, so that one command never pays
for another's models (``assay accept`` imports no replay spec, hence no pydantic).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_dir, lazy_getattr
from assay.report._text import plural, sha256_footer

if TYPE_CHECKING:
    from assay.report.accept import accept_report, self_test_report
    from assay.report.replay import replay_report
    from assay.report.revalidate import revalidate_report

__all__ = [
    "accept_report",
    "plural",
    "replay_report",
    "revalidate_report",
    "self_test_report",
    "sha256_footer",
]

_LAZY = {
    "accept_report": "assay.report.accept",
    "replay_report": "assay.report.replay",
    "revalidate_report": "assay.report.revalidate",
    "self_test_report": "assay.report.accept",
}


__getattr__ = lazy_getattr("assay.report", globals(), _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)
