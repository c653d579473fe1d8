"""Renderers: pure functions from results to text. They never decide a verdict."""

from __future__ import annotations

from assay.report._text import plural, sha256_footer
from assay.report.replay import replay_report

__all__ = ["plural", "replay_report", "sha256_footer"]
