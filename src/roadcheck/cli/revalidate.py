"""``roadcheck revalidate``: a checkpoint re-checked before a task resumes."""

from __future__ import annotations

import sys

import click

from roadcheck.cli._base import CI_FORMATS, FILE, cli, emit, report_options, sha256_option

__all__ = ["revalidate"]


@cli.command(short_help="Re-check a checkpoint before a task resumes.")
@click.argument("checkpoint", type=FILE)
@click.option("--now", "now", metavar="TS", default=None,
              help="Judge as of this ISO 8601 time (default: the clock); same inputs and "
                   "--now give the same report.")
@click.option("--write-next", "write_next", type=FILE, default=None,
              help="Write the next checkpoint (what was just observed) to this file.")
@sha256_option("--expect-checkpoint-sha256", "checkpoint")
@report_options()
def revalidate(checkpoint: str, now: str | None, write_next: str | None,
               expect_checkpoint_sha256: str | None, fmt: str, output: str | None) -> None:
    """Revalidate CHECKPOINT before a resumed task may touch the world again.

    Re-reads the task, checks every artifact's size, digest and format,
    reconciles external effects with their owners, re-checks capabilities,
    budgets, blockers and cadence, and classifies each remaining step. Reads
    only; writes nothing but --write-next. Exit 0 continue, 1 reconcile_first
    or escalate, 2 bad checkpoint.
    """
    from roadcheck.report.revalidate import revalidate_report
    from roadcheck.revalidation import revalidate as run_revalidation
    from roadcheck.revalidation.checkpoint import load_checkpoint, parse_ts

    at = None
    if now is not None:
        try:
            at = parse_ts(now)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--now") from None
    cp = load_checkpoint(checkpoint, expect_sha256=expect_checkpoint_sha256)
    result = run_revalidation(cp, now=at, write_next=write_next)
    if fmt in CI_FORMATS:
        from roadcheck.report.cases import revalidate_cases
        from roadcheck.report.ci import ci_report

        emit(ci_report(fmt, "revalidate", revalidate_cases(result), result.exit), output)
    else:
        emit(revalidate_report(result, fmt=fmt), output, paint=fmt == "text")
    sys.exit(result.exit)
