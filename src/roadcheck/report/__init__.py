"""Renderers: pure functions from results to text. They never decide a verdict.

Each capability's renderer loads on first use, so that one command never pays
for another's models (``roadcheck accept`` imports no replay spec, hence no pydantic).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roadcheck._lazy import lazy_dir, lazy_getattr
from roadcheck.report._text import plural, sha256_footer

if TYPE_CHECKING:
    from roadcheck.report.accept import accept_batch_report, accept_report, self_test_report
    from roadcheck.report.replay import replay_report
    from roadcheck.report.revalidate import revalidate_report

__all__ = [
    "accept_batch_report",
    "accept_report",
    "plural",
    "replay_report",
    "revalidate_report",
    "self_test_report",
    "sha256_footer",
]

_LAZY = {
    "accept_batch_report": "roadcheck.report.accept",
    "accept_report": "roadcheck.report.accept",
    "replay_report": "roadcheck.report.replay",
    "revalidate_report": "roadcheck.report.revalidate",
    "self_test_report": "roadcheck.report.accept",
}


__getattr__ = lazy_getattr("roadcheck.report", globals(), _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)
