"""``roadcheck schema``: the JSON Schema of each document kind."""

from __future__ import annotations

import click

from roadcheck.cli._base import cli, emit

__all__ = ["schema"]


@cli.command(short_help="Print the JSON Schema of a document kind.")
@click.argument("kind", type=click.Choice(["spec", "contract", "workflow", "checkpoint", "event",
                                           "evidence"]))
def schema(kind: str) -> None:
    """Print the JSON Schema of a document KIND, generated from the structs roadcheck reads.

    Give it to an editor to complete and check specs, contracts, workflows and
    checkpoints as they are written. The output is deterministic (sorted keys,
    2-space indent).
    """
    from roadcheck.documents.schema import render_schema

    emit(render_schema(kind))
