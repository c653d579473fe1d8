"""The ``roadcheck`` command line: parse, make one library call, render, exit.

One module per command group: :mod:`.replay`, :mod:`.accept`, :mod:`.harness` (run,
submit, worker, evidence, audit), :mod:`.revalidate`, :mod:`.guard`, :mod:`.schema` and
:mod:`.spectools` (spec check, diff, explain), each registering its commands on the
group in :mod:`._base`.
"""

from __future__ import annotations

import sys

import click

from roadcheck.cli._base import cli, interrupted
from roadcheck.errors import EXIT_INTERNAL

__all__ = ["cli", "main"]

# the command modules register their commands when imported, each when its command is
# first asked for (roadcheck.cli._base._Root)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: any error that escapes as a bug exits 70, never 0."""
    try:
        cli.main(args=argv, prog_name="roadcheck", standalone_mode=True)
    except SystemExit:
        raise
    except BaseException as exc:  # fail closed on any bug
        if isinstance(exc, KeyboardInterrupt):
            interrupted()
        from roadcheck.report._text import escape_controls

        click.echo(escape_controls(f"error[internal]: {type(exc).__name__}: {exc}"), err=True)
        sys.exit(EXIT_INTERNAL)
