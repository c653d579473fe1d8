"""``roadcheck spec check``, ``roadcheck diff`` and ``roadcheck explain``: the tools that
test a spec against the runs it will judge."""

from __future__ import annotations

import sys

import click

from roadcheck.cli._base import FILE, FORMAT_OPTION, cli, emit
from roadcheck.cli.replay import _TrajectoryPath
from roadcheck.ingest import FORMATS

__all__ = ["diff", "explain", "spec"]

_INPUT_FORMAT = click.option("--input-format", type=click.Choice(list(FORMATS)), default=None,
                             help="Format of the trajectory files (default: detected per file).")
_RECURSIVE = click.option("-r", "--recursive", is_flag=True,
                          help="Also read the trajectory files in subdirectories of a "
                               "directory given.")


def _paths(trajectories: tuple[str, ...], recursive: bool, spec: str) -> list[str]:
    from roadcheck._inputs import expand_inputs

    inputs = expand_inputs(trajectories, recursive=recursive, spec=spec)
    for note in inputs.notes:
        click.echo(f"note: {note}", err=True)
    return list(inputs.paths)


@cli.group(short_help="Test a spec: its rules, its coverage of runs, its examples.")
def spec() -> None:
    """Tools that test a spec before it judges anything."""


@spec.command("check", short_help="Check a spec alone, and its coverage of trajectories.")
@click.argument("spec_path", metavar="SPEC", type=FILE)
@click.argument("trajectories", nargs=-1, type=_TrajectoryPath())
@_RECURSIVE
@_INPUT_FORMAT
@FORMAT_OPTION
def spec_check(spec_path: str, trajectories: tuple[str, ...], recursive: bool,
               input_format: str | None, fmt: str) -> None:
    """Check SPEC on its own (every rule can take effect, no selector that can never
    match, no two names close without being equal), then against TRAJECTORIES: a
    coverage table per rule (reached, matched, failed), each guarded action type or
    checkpoint id that never occurs with the closest names that do, each irreversible
    action no rule guards; and run the spec's examples. Exit 1 when a rule is
    unreachable, an irreversible action unguarded or an example fails, 0 otherwise,
    2 on bad input.
    """
    from roadcheck._inputs import load_replay_spec
    from roadcheck.conformance.speccheck import check_spec
    from roadcheck.report.spectools import spec_check_report

    loaded = load_replay_spec(spec_path)
    paths = _paths(trajectories, recursive, spec_path) if trajectories else []
    result = check_spec(loaded, paths, input_format=input_format)
    emit(spec_check_report(result, fmt=fmt))
    sys.exit(result.exit)


@cli.command(short_help="Compare two specs' verdicts over the same runs.")
@click.argument("old_spec", metavar="OLD_SPEC", type=FILE)
@click.argument("new_spec", metavar="NEW_SPEC", type=FILE)
@click.argument("trajectories", nargs=-1, required=True, type=_TrajectoryPath())
@click.option("--allow-widening", is_flag=True,
              help="Exit 0 even when a run the old spec blocked passes under the new one.")
@_RECURSIVE
@_INPUT_FORMAT
@FORMAT_OPTION
def diff(old_spec: str, new_spec: str, trajectories: tuple[str, ...], allow_widening: bool,
         recursive: bool, input_format: str | None, fmt: str) -> None:
    """Judge TRAJECTORIES with OLD_SPEC and NEW_SPEC (each file read once) and list every
    verdict and reason that changes: newly blocked, newly allowed (a widening) and
    changed reasons. Exit 1 on a widening unless --allow-widening, 0 otherwise, 2 on
    bad input.
    """
    from roadcheck._inputs import load_replay_spec
    from roadcheck.conformance.diff import diff_specs
    from roadcheck.report.spectools import diff_report

    old, new = load_replay_spec(old_spec), load_replay_spec(new_spec)
    paths = _paths(trajectories, recursive, new_spec)
    result = diff_specs(old, new, paths, input_format=input_format,
                        allow_widening=allow_widening)
    emit(diff_report(result, fmt=fmt))
    sys.exit(result.exit)


@cli.command(short_help="Say what each rule made of one event of a run.")
@click.argument("spec_path", metavar="SPEC", type=FILE)
@click.argument("trajectory", type=_TrajectoryPath())
@click.option("--seq", type=int, required=True, metavar="N", help="The event's seq.")
@click.option("--run", "run_id", metavar="ID", default=None,
              help="The run to read, for a file that holds several.")
@_INPUT_FORMAT
@FORMAT_OPTION
def explain(spec_path: str, trajectory: str, seq: int, run_id: str | None,
            input_format: str | None, fmt: str) -> None:
    """Explain event N of TRAJECTORY under SPEC: which rules looked at it, which of
    their selectors matched or did not, and the condition that failed; then the
    trajectory's findings at that event. Exit 0, or 2 on bad input.
    """
    from roadcheck._inputs import load_replay_spec
    from roadcheck.conformance.explain import explain as explain_seq
    from roadcheck.report.spectools import explain_report

    loaded = load_replay_spec(spec_path)
    result = explain_seq(loaded, trajectory, seq, input_format=input_format, run=run_id)
    emit(explain_report(result, fmt=fmt))
