"""``roadcheck replay``: recorded runs judged against a spec, the report written as judged."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from roadcheck.cli._base import FILE, cli, emit, interrupted, report_options, sha256_option
from roadcheck.ingest import FORMATS

__all__ = ["replay"]


class _TrajectoryPath(click.ParamType[str]):
    """A TRAJECTORY argument, taken as written: the input expansion stats each once and a
    file that cannot be read is that file's ERROR. ``click.Path`` would stat it and ask
    whether it can be read first, two system calls an argument, which a shell glob of
    10,000 files pays 10,000 times."""

    name = "path"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        return os.fsdecode(value) if isinstance(value, (bytes, os.PathLike)) else str(value)

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        return [CompletionItem(incomplete, type="file")]


def _show_verdicts(ctx: click.Context, param: click.Parameter,
                   value: str | None) -> tuple[str, ...] | None:
    """``--show block,error``: verdict names, each known, none twice over."""
    if value is None:
        return None
    names = tuple(v.strip().lower() for v in value.split(","))
    known = ("pass", "block", "error")
    bad = [v for v in names if v not in known]
    if bad or not names:
        raise click.BadParameter(f"{', '.join(map(repr, bad)) or repr(value)} is not a verdict; "
                                 f"give a comma-separated list of {', '.join(known)}")
    return tuple(dict.fromkeys(names))


@cli.command(short_help="Check recorded runs against a spec.")
@click.argument("spec", type=FILE)
@click.argument("trajectories", nargs=-1, required=True, type=_TrajectoryPath())
@click.option("-r", "--recursive", is_flag=True,
              help="Also read the trajectory files in subdirectories of a directory given.")
@report_options("html")
@click.option("--input-format", type=click.Choice(list(FORMATS)),
              default=None, help="Format of the trajectory files (default: detected per file).")
@click.option("--summary-only", is_flag=True,
              help="Print the totals (verdicts, and how often each reason and warning code "
                   "fired), no per-trajectory blocks.")
@click.option("--per-file", is_flag=True,
              help="With --summary-only: a line of verdict counts per file instead of the "
                   "reason totals.")
@click.option("--by", "by_field", metavar="FIELD", default=None,
              help="Break verdicts down by a field of each trajectory's final event.")
@sha256_option("--expect-spec-sha256", "spec")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="Judge the files in up to N processes (one for each 2,000 files: a "
                   "smaller batch gains nothing from more); the report is the same, byte "
                   "for byte.")
@click.option("--ray", "ray_address", is_flag=False, flag_value="", default=None,
              metavar="[ADDRESS]",
              help="Judge the files on Ray: a local instance, or the cluster at ADDRESS "
                   "(--ray=ADDRESS); the report is the local one, byte for byte. Needs "
                   "roadcheck[ray].")
@click.option("--show", "show", metavar="VERDICTS", default=None, callback=_show_verdicts,
              help="Failures-first text view showing the blocks of these verdicts "
                   "(comma-separated: pass, block, error; a terminal's default: block,error).")
@click.option("-q", "--quiet", is_flag=True,
              help="Failures-first text view: the summary line alone (and the --by lines).")
@click.option("-v", "--verbose", is_flag=True,
              help="Failures-first text view with every block, PASS included.")
@click.option("--strict", is_flag=True,
              help="Fail (exit 1) when a rule is reached by no trajectory of the batch, or an "
                   "irreversible action runs that no rule guards; the summary names them "
                   "either way.")
def replay(spec: str, trajectories: tuple[str, ...], recursive: bool, fmt: str,
           output: str | None, input_format: str | None, summary_only: bool, per_file: bool,
           by_field: str | None,
           expect_spec_sha256: str | None, jobs: int, ray_address: str | None,
           show: tuple[str, ...] | None, quiet: bool, verbose: bool, strict: bool) -> None:
    """Replay recorded TRAJECTORIES against SPEC and block when the road was wrong.

    A TRAJECTORY is a file, a directory (its *.jsonl, *.ndjson and *.json
    files, also compressed, and *.eval and *.traj files), a quoted glob, or -
    for standard input; a file
    named twice is judged once. The verdict comes from the road alone:
    task_success is printed for contrast and never consulted. Exit 0 PASS,
    1 BLOCK, 2 ERROR; across many files the worst verdict wins (BLOCK over
    ERROR over PASS). At a terminal the text report puts the failures first,
    in colour (--show, -q, -v ask for that view anywhere); piped or written
    with --output it is the plain report, byte for byte.
    """
    import dataclasses

    from roadcheck._inputs import expand_inputs, load_replay_spec
    from roadcheck.conformance import ReplayInterrupted, replay_files

    if per_file and not summary_only:
        raise click.UsageError("--per-file shapes the --summary-only report; give both")
    if fmt == "html" and output is None:
        raise click.UsageError("--format html needs --output FILE")
    if ray_address is not None and jobs != 1:
        raise click.UsageError("give --jobs or --ray, not both: Ray spreads the files itself")
    if (show is not None) + quiet + verbose > 1:
        raise click.UsageError("give one of --show, -q and -v")
    if fmt != "text" and (show is not None or quiet or verbose):
        raise click.UsageError(f"--show, -q and -v shape the text report, not --format {fmt}")
    loaded = load_replay_spec(spec, expect_sha256=expect_spec_sha256)
    inputs = expand_inputs(trajectories, recursive=recursive, spec=spec)
    for note in inputs.notes:
        click.echo(f"note: {note}", err=True)
    if fmt in ("text", "json"):
        from roadcheck._replay_command import stream

        code, carries, stopped = stream(
            loaded, inputs.paths, fmt=fmt, output=output, jobs=jobs, ray_address=ray_address,
            input_format=input_format, show=show, quiet=quiet, verbose=verbose,
            summary_only=summary_only, by_field=by_field, per_file=per_file, strict=strict)
        if stopped is not None:  # the report is whole (and the file renamed): now say so
            interrupted(f" after {stopped.done} of {stopped.total} files; the report covers "
                         "those only")
    else:
        # a format that needs every result before it starts
        from roadcheck.report.ci import replay_document

        try:
            if ray_address is not None:
                from roadcheck.integrations.ray import replay_paths

                run = replay_paths(loaded, inputs.paths, input_format=input_format,
                                   address=ray_address or None)
            elif len(inputs.paths) > 1 and sys.stderr.isatty():
                run = _replay_with_progress(loaded, inputs.paths, input_format, jobs)
            else:
                run = replay_files(loaded, inputs.paths, input_format=input_format, jobs=jobs)
        except ReplayInterrupted as stop:
            emit(replay_document(dataclasses.replace(stop.run, strict=strict), loaded, fmt=fmt,
                                 summary_only=summary_only, by_field=by_field), output)
            interrupted(f" after {stop.done} of {stop.total} files; the report covers those "
                         "only")
        run = dataclasses.replace(run, strict=strict)
        located = None
        if fmt in ("sarif", "github", "html"):  # the formats that point at lines and draw events
            from roadcheck.ingest.locate import locate
            from roadcheck.report.ci import located_paths

            located = locate(located_paths(run, fmt, inputs.paths), input_format)
        emit(replay_document(run, loaded, fmt=fmt, summary_only=summary_only,
                              by_field=by_field, located=located), output)
        if fmt == "html" and sys.stderr.isatty():
            from roadcheck.report._text import plural

            count = plural(len(run.results), "trajectory", "trajectories")
            click.echo(f"wrote {output} ({count})", err=True)
        code = run.exit
        carries = by_field is None or run.carries(by_field)
    if by_field is not None and not carries:
        click.echo(f"warning: no trajectory carries {by_field!r} in its final event; "
                   "every result is grouped under (absent)", err=True)
    sys.exit(code)


def _replay_with_progress(spec: Any, paths: Any, input_format: str | None,
                          jobs: int) -> Any:
    """:func:`replay_files` for a report written whole, with the progress line on stderr
    (a terminal) while it judges; Ctrl-C still carries what was judged."""
    from roadcheck.conformance import ReplayInterrupted, replay_files
    from roadcheck.report.terminal import Progress, ProgressCollector

    collector = ProgressCollector(Progress(sys.stderr, len(paths)))
    try:
        replay_files(spec, paths, input_format=input_format, jobs=jobs, sink=collector)
    except ReplayInterrupted as stop:
        raise ReplayInterrupted(collector.run(spec, interrupted=True), stop.done,
                                stop.total) from None
    return collector.run(spec)
