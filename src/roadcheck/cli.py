"""The ``roadcheck`` command line: parse, make one library call, render, exit.

No judgement lives here. Each command turns its arguments into one library
call, hands the result to a renderer in :mod:`roadcheck.report`, and exits with the
code the result carries. Library imports sit inside the commands so that
``roadcheck replay`` only pays for what it uses.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from roadcheck._version import __version__
from roadcheck.errors import EXIT_ERROR, EXIT_INTERNAL, EXIT_INTERRUPTED, RoadcheckError
from roadcheck.ingest import FORMATS

__all__ = ["cli", "main"]

# One instance of each path type for every option that takes one: click's types are
# stateless, and each new one looks up its translated name (a few file system calls).
_FILE = click.Path(dir_okay=False)
_DIRECTORY = click.Path(file_okay=False)


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

KEY_FILE_OPTION = click.option(
    "--key-file", type=_FILE, default=None, metavar="FILE",
    help="Evidence key (HMAC-SHA256 secret) kept outside the runs directory "
         "(default: $ROADCHECK_EVIDENCE_KEY_FILE, else $ROADCHECK_EVIDENCE_KEY).",
)

FORMAT_OPTION = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="Report format: a human-readable report or one JSON document.",
)


CI_FORMATS = ("junit", "sarif", "github")


def _report_options(*extra: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--format`` with the CI formats (and ``extra``), and ``--output FILE``."""
    fmt = click.option(
        "--format", "fmt", type=click.Choice(["text", "json", *CI_FORMATS, *extra]),
        default="text", show_default=True,
        help="Report format: a human-readable report, one JSON document, JUnit XML, "
             "SARIF 2.1.0, or GitHub Actions annotations"
             + (" (html: one self-contained page, needs --output)" if "html" in extra else "")
             + ".")
    output = click.option(
        "--output", "-o", "output", type=_FILE, default=None,
        metavar="FILE", help="Write the report to FILE (atomically) instead of standard output.")

    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        return fmt(output(f))

    return wrap


class _UsageLine(click.ClickException):
    """A click usage error, shown as one ``error[usage]`` line (never click's three lines)."""

    exit_code = EXIT_ERROR

    def __init__(self, exc: click.UsageError) -> None:
        ctx = exc.ctx or click.get_current_context(silent=True)
        text = _usage_text(exc.format_message())
        if ctx is not None:
            root = ctx.find_root().info_name or "roadcheck"
            where = ctx.command_path.removeprefix(root).strip()
            text = f"{where + ': ' if where else ''}{text}; see '{ctx.command_path} --help'"
        super().__init__(text)

    def show(self, file: Any = None) -> None:
        click.echo(f"error[usage]: {self.message}", err=True)


def _usage_text(message: str) -> str:
    """click's sentence as a clause: ``missing argument 'RUN'``, hints in parentheses."""
    text = " ".join(message.split()).rstrip(".")
    text = re.sub(r"\. (Did you mean .+\?)$", lambda m: f" ({m.group(1).lower()})", text)
    text = re.sub(r"^(Invalid value for .+?: )([A-Z])(?=[a-z])",
                  lambda m: m.group(1) + m.group(2).lower(), text)
    return text[:1].lower() + text[1:]


class _Located:
    """Gives a usage error raised while parsing a command's arguments that command's context.

    Some of click's parser errors (an option missing its value) carry no
    context, and the line would otherwise name the wrong command.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)  # type: ignore[misc, no-any-return]
        except click.UsageError as exc:
            if exc.ctx is None:
                exc.ctx = ctx
            if isinstance(exc, click.NoSuchOption) and exc.possibilities:
                raise click.NoSuchOption(
                    exc.option_name, exc.message, ctx=exc.ctx,
                    possibilities=[p for p in exc.possibilities
                                   if _near_miss(exc.option_name, p)]) from None
            raise


def _near_miss(given: str, option: str) -> bool:
    """Suggest an option for a near miss only: difflib's 0.6 would offer --jobs for --bogus."""
    from difflib import SequenceMatcher

    return SequenceMatcher(None, given, option).ratio() >= 0.65


class _Command(_Located, click.Command):
    """A command whose usage errors name it."""


class _Group(_Located, click.Group):
    """Turns an :class:`RoadcheckError` into ``error[<reason>]: message`` and its exit code.

    A usage error (a missing argument, a bad option value, an unknown option or
    command) is one ``error[usage]: COMMAND: message; see '... --help'`` line,
    exit 2. Ctrl-C exits 130 with one ``error[interrupted]`` line (click alone
    would print "Aborted!" and exit 1, the BLOCK code).
    """

    command_class = _Command
    group_class = type  # subgroups (``roadcheck evidence``) are _Group too

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as exc:
            raise _UsageLine(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RoadcheckError as exc:
            from roadcheck.report._text import escape_controls

            click.echo(escape_controls(f"error[{exc.reason}]: {exc.location_message()}"),
                       err=True)
            ctx.exit(exc.exit_code)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as exc:
            raise _UsageLine(exc) from None
        except KeyboardInterrupt:
            _interrupted()


def _interrupted(detail: str = "") -> NoReturn:
    """Say the command was interrupted (one line on stderr) and exit 130."""
    click.echo(f"error[interrupted]: interrupted{detail}", err=True)
    sys.exit(EXIT_INTERRUPTED)


def _sha256_option(name: str, what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None:
            return None
        from roadcheck.documents.loader import normalize_sha256

        try:
            return normalize_sha256(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    return click.option(name, metavar="HEX", default=None, callback=check,
                        help=f"Refuse (exit 2) a {what} whose bytes do not have this sha256, "
                             f"as printed in the report's {what}-sha256 line.")


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


def _emit(text: str, output: str | None = None, *, paint: bool = False) -> None:
    """Write a rendered report to stdout exactly as rendered, or atomically to ``output``.

    ``paint``: a text report, coloured when stdout is a terminal (or FORCE_COLOR is set)
    and NO_COLOR is not set.
    """
    if output is not None:
        from roadcheck._files import write_output

        write_output(output, text, what="the report")
        return
    if paint and (sys.stdout.isatty() or os.environ.get("FORCE_COLOR")):
        from roadcheck.report.terminal import paint_report, wants_colour

        if wants_colour(sys.stdout, os.environ):
            paint_report(text, sys.stdout)
            return
    sys.stdout.write(text)
    sys.stdout.flush()


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: the version."""
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"roadcheck, version {__version__}")
    ctx.exit()


@click.group("roadcheck", cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and exit.")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Gate AI-agent work on evidence instead of the agent's word.

    Exit codes: 0 pass, 1 the evidence says no, 2 could not judge, 3 paused.
    Defaults for --format and --runs-dir come from [tool.roadcheck] in the nearest
    pyproject.toml; a flag given wins.
    """
    if ctx.invoked_subcommand in _CONFIGURED:
        from roadcheck.config import find_config

        ctx.default_map = find_config().default_map()


#: The commands that read ``[tool.roadcheck]`` (the guard hook never does: it answers fast).
_CONFIGURED = frozenset({"replay", "accept", "revalidate", "run", "submit", "worker",
                         "audit", "evidence"})


@cli.command(short_help="Check recorded runs against a spec.")
@click.argument("spec", type=_FILE)
@click.argument("trajectories", nargs=-1, required=True, type=_TrajectoryPath())
@click.option("-r", "--recursive", is_flag=True,
              help="Also read the trajectory files in subdirectories of a directory given.")
@_report_options("html")
@click.option("--input-format", type=click.Choice(list(FORMATS)),
              default=None, help="Format of the trajectory files (default: detected per file).")
@click.option("--summary-only", is_flag=True,
              help="Print the per-file summary and totals, no per-trajectory blocks.")
@click.option("--by", "by_field", metavar="FIELD", default=None,
              help="Break verdicts down by a field of each trajectory's final event.")
@_sha256_option("--expect-spec-sha256", "spec")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="Judge N files at a time: in N threads where they are judged in C, else "
                   "in N processes; the report is the same, byte for byte.")
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
def replay(spec: str, trajectories: tuple[str, ...], recursive: bool, fmt: str,
           output: str | None, input_format: str | None, summary_only: bool, by_field: str | None,
           expect_spec_sha256: str | None, jobs: int, ray_address: str | None,
           show: tuple[str, ...] | None, quiet: bool, verbose: bool) -> None:
    """Replay recorded TRAJECTORIES against SPEC and block when the road was wrong.

    A TRAJECTORY is a file, a directory (its *.jsonl, *.ndjson and *.json
    files, also compressed), a quoted glob, or - for standard input; a file
    named twice is judged once. The verdict comes from the road alone:
    task_success is printed for contrast and never consulted. Exit 0 PASS,
    1 BLOCK, 2 ERROR; across many files the worst verdict wins (BLOCK over
    ERROR over PASS). At a terminal the text report puts the failures first,
    in colour (--show, -q, -v ask for that view anywhere); piped or written
    with --output it is the plain report, byte for byte.
    """
    from functools import partial

    from roadcheck._inputs import expand_inputs, load_replay_spec
    from roadcheck.conformance import ReplayInterrupted, replay_files

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
        # written as judged: the process holds one file's state, not every result
        from contextlib import ExitStack

        judge = partial(replay_files, jobs=jobs)
        if ray_address is not None:
            from roadcheck.integrations.ray import replay_paths

            judge = partial(replay_paths, address=ray_address or None)
        stopped = None
        with ExitStack() as stack:
            report, render = _replay_writer(stack, loaded, fmt, output, len(inputs.paths),
                                            show=show, quiet=quiet, verbose=verbose,
                                            summary_only=summary_only, by_field=by_field)
            try:
                judge(loaded, inputs.paths, input_format=input_format, render=render,
                      sink=report)
            except ReplayInterrupted as stop:
                code = report.finish(interrupted=True)
                stopped = stop
            else:
                code = report.finish()
        if stopped is not None:  # the report is whole (and the file renamed): now say so
            _interrupted(f" after {stopped.done} of {stopped.total} files; the report covers "
                         "those only")
        carries = report.carries
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
            _emit(replay_document(stop.run, loaded, fmt=fmt, summary_only=summary_only,
                                  by_field=by_field), output)
            _interrupted(f" after {stop.done} of {stop.total} files; the report covers those "
                         "only")
        located = None
        if fmt in ("sarif", "github", "html"):  # the formats that point at lines and draw events
            from roadcheck.ingest.locate import locate
            from roadcheck.report.ci import located_paths

            located = locate(located_paths(run, fmt, inputs.paths), input_format)
        _emit(replay_document(run, loaded, fmt=fmt, summary_only=summary_only,
                              by_field=by_field, located=located), output)
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


def _replay_writer(stack: Any, spec: Any, fmt: str, output: str | None, files: int, *,
                   show: tuple[str, ...] | None, quiet: bool, verbose: bool,
                   summary_only: bool, by_field: str | None) -> tuple[Any, Callable[..., Any]]:
    """The sink a streamed replay report is written through, and its render function.

    The plain writer, or the failures-first view (see roadcheck.report.terminal for the
    rule); into ``output`` atomically, else stdout; with a progress line on stderr when
    it is a terminal and the batch has more than one file. ``stack`` closes them all.
    """
    from functools import partial

    from roadcheck.report.replay import ReplayReportWriter, ResultRenderer

    out: Any = sys.stdout
    if output is not None:
        from roadcheck._files import atomic_output

        out = stack.enter_context(atomic_output(output, what="the report"))
    progress = view = None
    if files > 1 and sys.stderr.isatty():
        from roadcheck.report.terminal import Progress

        progress = Progress(sys.stderr, files)
    if fmt == "text" and (show is not None or quiet or verbose or (
            output is None and (sys.stdout.isatty() or os.environ.get("FORCE_COLOR")))):
        from roadcheck.report.terminal import TerminalView

        view = TerminalView.choose(show=show, quiet=quiet, verbose=verbose,
                                   to_file=output is not None, stdout=sys.stdout,
                                   environ=os.environ)
    report: Any
    if view is not None:
        from roadcheck.report.terminal import TerminalReportWriter, render_terminal

        render: Callable[..., Any] = partial(render_terminal, summary_only=summary_only,
                                             by_field=by_field)
        report = TerminalReportWriter(out, spec, view, spec_source=spec.source,
                                      spec_sha256=spec.sha256, summary_only=summary_only,
                                      by_field=by_field, progress=progress)
    else:
        render = ResultRenderer(fmt=fmt, summary_only=summary_only, by_field=by_field)
        report = ReplayReportWriter(out, spec, spec_source=spec.source, spec_sha256=spec.sha256,
                                    fmt=fmt, summary_only=summary_only, by_field=by_field)
    stack.enter_context(report)
    if progress is None:
        return report, render
    from roadcheck.report.terminal import ProgressSink

    stack.callback(progress.clear)  # also on an error: the cursor goes back where it was
    return ProgressSink(report, progress), render


@cli.command(short_help="Accept a claimed result only on evidence.")
@click.option("--contract", "-c", "contract", type=_FILE, default=None,
              help="The contract file (JSON or YAML).")
@click.option("--result", "-r", "result", type=click.Path(dir_okay=False, allow_dash=True),
              default=None, help="The agent's result as JSON text ('-' reads standard input).")
@click.option("--trace", "-t", "trace", type=_FILE, default=None,
              help="The calls the agent made: a native JSONL trajectory or a JSON list.")
@click.option("--probe-cmd", metavar="CMD", default=None,
              help="Read-only command run without a shell; exit 0 confirms the effect.")
@click.option("--probe-url", metavar="URL", default=None,
              help="Read-only GET; a 2xx answer confirms the effect.")
@click.option("--probe-timeout", type=float, default=10.0, show_default=True, metavar="SECONDS",
              help="How long a probe may take before it counts as failed.")
@click.option("--claims-unchecked", is_flag=True,
              help="Judge a contract that checks claims without a trace: the claims are "
                   "not checked, and the report says so (without this, no trace is exit 2).")
@_report_options()
@click.option("--self-test", is_flag=True, help="Judge the four built-in fixtures and exit.")
def accept(contract: str | None, result: str | None, trace: str | None, probe_cmd: str | None,
           probe_url: str | None, probe_timeout: float, claims_unchecked: bool, fmt: str,
           output: str | None, self_test: bool) -> None:
    """Accept an agent's claimed result only when the evidence backs it.

    Checks the result against the contract, each claimed verb against the
    trace, and the effect with an optional read-only probe. Exit 0 ACCEPTED,
    1 REJECTED, 2 could not judge.
    """
    from roadcheck.report import accept_report, self_test_report

    if self_test:
        from roadcheck.acceptance.selftest import run_self_test

        if fmt in CI_FORMATS:
            raise click.UsageError(f"--self-test prints text or json, not {fmt}")
        cases = run_self_test()
        _emit(self_test_report(cases, fmt=fmt), output, paint=fmt == "text")
        sys.exit(0 if all(c.as_expected for c in cases) else 1)
    if contract is None or result is None:
        raise click.UsageError("--contract and --result are required (or use --self-test)")
    from roadcheck.acceptance import accept_files

    run = accept_files(contract, result, trace, probe_cmd=probe_cmd, probe_url=probe_url,
                       probe_timeout=probe_timeout, claims_unchecked=claims_unchecked)
    if fmt in CI_FORMATS:
        from roadcheck.report.cases import accept_cases
        from roadcheck.report.ci import ci_report

        _emit(ci_report(fmt, "accept", accept_cases(run), run.exit), output)
    else:
        _emit(accept_report(run.label, run.result, fmt=fmt), output, paint=fmt == "text")
    sys.exit(run.exit)


@cli.command(short_help="Run a workflow; advance only on passing gates.")
@click.argument("workflow", type=_FILE)
@click.option("--as", "role", envvar="ROADCHECK_ROLE", required=True, metavar="ROLE",
              help="The role this invocation acts as; it runs that role's phases only.")
@click.option("--identity", metavar="ID", default=None,
              help="Who is acting (default: $ROADCHECK_IDENTITY, else the OS user).")
@click.option("--run-id", default=None, help="Id of a new run (default: generated).")
@click.option("--resume", "resume", metavar="RUN_ID", default=None,
              help="Continue a stored run after its last passed phase.")
@click.option("--runs-dir", default="runs", show_default=True, type=_DIRECTORY,
              help="Directory holding one directory per run.")
@click.option("--store", default="jsonl", show_default=True, metavar="jsonl|sqlite|URL",
              callback=lambda ctx, param, value: _store_choice(value),
              help="Evidence store of a new run, or a postgresql:// URL: the shared store "
                   "that workers on many machines take the run's phases from.")
@click.option("--lease", type=click.FloatRange(min=1.0), default=30.0, show_default=True,
              metavar="SECONDS", help="With a postgresql:// store: how long the claim on the "
                                     "run lives without a heartbeat.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Set a param the workflow declares, when the run is created (repeatable).")
@KEY_FILE_OPTION
@FORMAT_OPTION
def run(workflow: str, role: str, identity: str | None, run_id: str | None, resume: str | None,
        runs_dir: str, store: str, lease: float, params: tuple[str, ...],
        key_file: str | None, fmt: str) -> None:
    """Run WORKFLOW, advancing each phase only on a passing, durable gate.

    Exit 0 completed, 1 hard-stop or refused by the role guard, 2 bad input
    (a required param missing: nothing runs), 3 paused waiting for another
    role. Paused or refused, the report's `next` line is the whole command
    that continues the run.
    """
    from roadcheck._files import check_writable_dir
    from roadcheck.harness import Workflow
    from roadcheck.report.harness import run_report

    check_writable_dir(runs_dir)
    if store not in ("jsonl", "sqlite"):
        from pathlib import Path

        from roadcheck.harness.roles import default_identity
        from roadcheck.harness.worker import WorkerOptions, run_on_database

        wf = Workflow.load(workflow)
        opts = WorkerOptions(role, identity or default_identity(), Path(runs_dir), lease=lease)
        result = run_on_database(wf.spec, wf.spec_dir, wf.source, store, opts=opts,
                                 params=_params(params), run_id=run_id, resume=resume,
                                 key_file=key_file)
        _emit(run_report(result, fmt=fmt))
        sys.exit(result.exit)
    result = Workflow.load(workflow).run(
        role=role, identity=identity, run_id=run_id, resume=resume, runs_dir=runs_dir,
        store=store, params=_params(params), key_file=key_file)  # type: ignore[arg-type]
    _emit(run_report(result, fmt=fmt))
    sys.exit(result.exit)


def _store_choice(value: str) -> str:
    """``jsonl``, ``sqlite`` or a ``postgresql://`` URL; anything else is a usage error."""
    from roadcheck.evidence.postgres import is_url

    if value in ("jsonl", "sqlite") or is_url(value):
        return value
    raise click.BadParameter(f"{value!r} is not jsonl, sqlite or a postgresql:// URL")


def _database_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from roadcheck.evidence.postgres import is_url

    if value is not None and not is_url(value):
        raise click.BadParameter(f"{value!r} is not a postgresql:// URL")
    return value


@cli.command(short_help="Create a run on a shared PostgreSQL store for workers to take.")
@click.argument("workflow", type=_FILE)
@click.option("--store", required=True, metavar="URL", envvar="ROADCHECK_STORE",
              callback=_database_url,
              help="The postgresql:// URL of the shared store (default: $ROADCHECK_STORE).")
@click.option("--run-id", default=None, help="Id of the new run (default: generated).")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Set a param the workflow declares (repeatable).")
@click.option("--runs-dir", default="runs", show_default=True, type=_DIRECTORY,
              help="Where the workers write the run's artifacts (its artifact paths are "
                   "checked against it).")
@KEY_FILE_OPTION
@FORMAT_OPTION
def submit(workflow: str, store: str, run_id: str | None, params: tuple[str, ...],
           runs_dir: str, key_file: str | None, fmt: str) -> None:
    """Create a run of WORKFLOW on the store and work none of its phases.

    The run waits for the workers of its first phase's role; the report's
    `next` line is the worker command that takes it. Exit 3 (paused: the run
    waits for a worker), 2 bad input (nothing is created).
    """
    from pathlib import Path

    from roadcheck.harness import Workflow
    from roadcheck.harness.worker import submit_run
    from roadcheck.report.harness import run_report

    wf = Workflow.load(workflow)
    result = submit_run(wf.spec, wf.spec_dir, wf.source, store, params=_params(params),
                        run_id=run_id, runs_dir=Path(runs_dir), key_file=key_file)
    _emit(run_report(result, fmt=fmt))
    sys.exit(result.exit)


@cli.command(short_help="Take phases of one role from a shared PostgreSQL store.")
@click.argument("workflow", type=_FILE)
@click.option("--store", required=True, metavar="URL", envvar="ROADCHECK_STORE",
              callback=_database_url,
              help="The postgresql:// URL of the shared store (default: $ROADCHECK_STORE).")
@click.option("--as", "role", envvar="ROADCHECK_ROLE", required=True, metavar="ROLE",
              help="The role this worker acts as; it takes that role's phases only.")
@click.option("--identity", metavar="ID", default=None,
              help="Who is acting (default: $ROADCHECK_IDENTITY, else the OS user); the role "
                   "guard compares this identity, never one stored in the run.")
@click.option("--runs-dir", default="runs", show_default=True, type=_DIRECTORY,
              help="Where this worker writes the artifacts of the runs it works.")
@click.option("--once", is_flag=True,
              help="Work at most one run, then exit with its exit code (0 when none is ready).")
@click.option("--lease", type=click.FloatRange(min=1.0), default=30.0, show_default=True,
              metavar="SECONDS",
              help="How long a claim lives without a heartbeat; a killed worker's run is "
                   "taken over after this.")
@click.option("--poll", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              metavar="SECONDS", help="How long to wait before asking again when no run is "
                                      "ready.")
@KEY_FILE_OPTION
@FORMAT_OPTION
def worker(workflow: str, store: str, role: str, identity: str | None, runs_dir: str,
           once: bool, lease: float, poll: float, key_file: str | None, fmt: str) -> None:
    """Claim the next phase of WORKFLOW ready for ROLE in any open run, run it, repeat.

    Each claim is a lease renewed by a heartbeat: a worker killed at any point
    leaves a claim that expires, and another worker takes the run over. SIGTERM
    stops the worker once the run it holds is given back (exit 0). With
    --once: exit with the worked run's code (0 completed, 1 hard-stop or
    refused, 3 paused for another role), 0 when no run was ready.
    """
    import signal
    import threading
    from pathlib import Path

    from roadcheck._files import check_writable_dir
    from roadcheck.harness import Workflow
    from roadcheck.harness.roles import default_identity
    from roadcheck.harness.worker import WorkerOptions, serve
    from roadcheck.report.harness import run_report

    check_writable_dir(runs_dir)
    wf = Workflow.load(workflow)
    stop = threading.Event()
    opts = WorkerOptions(role, identity or default_identity(), Path(runs_dir), lease=lease)
    before = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    try:
        code = serve(wf.spec, wf.spec_dir, wf.source, store, opts=opts, stop=stop, once=once,
                     poll=poll, key_file=key_file,
                     report=lambda r: _emit(run_report(r, fmt=fmt)),
                     lost=lambda exc: click.echo(f"note: {exc.message}", err=True))
    finally:
        signal.signal(signal.SIGTERM, before)
    sys.exit(code)


@cli.command(short_help="Re-check a checkpoint before a task resumes.")
@click.argument("checkpoint", type=_FILE)
@click.option("--now", "now", metavar="TS", default=None,
              help="Judge as of this ISO 8601 time (default: the clock); same inputs and "
                   "--now give the same report.")
@click.option("--write-next", "write_next", type=_FILE, default=None,
              help="Write the next checkpoint (what was just observed) to this file.")
@_sha256_option("--expect-checkpoint-sha256", "checkpoint")
@_report_options()
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

        _emit(ci_report(fmt, "revalidate", revalidate_cases(result), result.exit), output)
    else:
        _emit(revalidate_report(result, fmt=fmt), output, paint=fmt == "text")
    sys.exit(result.exit)


def _params(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--param")
        out[key] = value
    return out


@cli.group()
def evidence() -> None:
    """Inspect stored evidence records."""


@evidence.command("verify", short_help="Verify a run's evidence chain and head.")
@click.argument("run_id", metavar="RUN")
@click.option("--runs-dir", default="runs", show_default=True, type=_DIRECTORY,
              help="Directory holding one directory per run.")
@click.option("--store", "store_url", metavar="URL", default=None, callback=_database_url,
              help="Read the run from this postgresql:// store instead of --runs-dir.")
@KEY_FILE_OPTION
@FORMAT_OPTION
def evidence_verify(run_id: str, runs_dir: str, store_url: str | None, key_file: str | None,
                    fmt: str) -> None:
    """Verify RUN's evidence: exit 0 OK, 1 broken, 2 unreadable or its key is missing.

    Recomputes the hash chain, compares it with the store's anchored head and
    checks the head's MAC when the run has a key. Without a key it says what
    it cannot detect.
    """
    from roadcheck.evidence import load_key, verify_run
    from roadcheck.report.harness import verify_report

    if store_url is not None:
        from roadcheck.evidence.postgres import verify_pg_run

        check = verify_pg_run(store_url, run_id, load_key(key_file))
    else:
        check = verify_run(runs_dir, run_id, load_key(key_file))
    _emit(verify_report(check, fmt=fmt))
    sys.exit(check.exit)


@cli.command(short_help="Print a run's evidence trail.")
@click.argument("run_id", metavar="RUN")
@click.option("--runs-dir", default="runs", show_default=True, type=_DIRECTORY,
              help="Directory holding one directory per run.")
@click.option("--html", "html_out", type=_FILE, default=None,
              help="Also write a self-contained HTML page of the trail to this file.")
@click.option("--store", "store_url", metavar="URL", default=None, callback=_database_url,
              help="Read the run from this postgresql:// store instead of --runs-dir.")
@KEY_FILE_OPTION
def audit(run_id: str, runs_dir: str, html_out: str | None, store_url: str | None,
          key_file: str | None) -> None:
    """Print RUN's evidence trail; exit 1 when its evidence is broken."""
    from roadcheck.evidence import load_key
    from roadcheck.harness.audit import load_trail
    from roadcheck.report.harness import audit_html, audit_text

    if store_url is not None:
        from roadcheck.harness.audit import load_pg_trail

        trail = load_pg_trail(store_url, run_id, load_key(key_file))
    else:
        trail = load_trail(runs_dir, run_id, load_key(key_file))
    if html_out is not None:
        from roadcheck._files import write_output

        write_output(html_out, audit_html(trail), what="the HTML page")
    _emit(audit_text(trail))
    sys.exit(trail.exit)


def _guard_store_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--spec`` and ``--state-dir``: what every guard command enforces, and where."""
    command = click.option(
        "--state-dir", default=".roadcheck/guard", show_default=True,
        type=_DIRECTORY,
        help="Directory holding one directory per session: its state and decision log.")(command)
    return click.option("--spec", "spec", required=True, type=_FILE,
                        help="The replay spec to enforce (JSON or YAML).")(command)


@cli.group()
def guard() -> None:
    """Enforce a replay spec live: check each call before it runs."""


@guard.command("claude-code", short_help="Answer a Claude Code hook event from a spec.")
@_guard_store_options
@click.option("--approver", default="user", show_default=True, metavar="NAME",
              help="Who answers at Claude Code's permission prompt: the confirmed_by of the "
                   "checkpoint recorded when an asked call is approved there.")
@click.option("--grant", is_flag=True,
              help="Answer allow for an allowed call (skipping Claude Code's prompt); without "
                   "it an allowed call gets no decision and Claude Code's own rules apply.")
@click.option("--catch-up", is_flag=True,
              help="Start a session the guard has not seen from its transcript "
                   "(transcript_path), so what happened before the hook counts.")
def guard_claude_code(spec: str, state_dir: str, approver: str, grant: bool,
                      catch_up: bool) -> None:
    """Read one hook event (JSON) on standard input and answer in the hook protocol.

    PreToolUse and PermissionRequest are checked against SPEC; UserPromptSubmit
    and PostToolUse are observed. A deny or ask is printed as
    hookSpecificOutput JSON (exit 0). Any error (bad spec, bad input, unreadable
    state) denies: exit 2 with the reason on standard error.
    """
    from roadcheck.guard.claude_code import blocked, main

    try:
        code = main({"spec": spec, "state_dir": state_dir, "approver": approver, "grant": grant,
                     "catch_up": catch_up})
    except BaseException as exc:  # an interrupt or a bug blocks the call
        code = blocked(exc)
    sys.exit(code)


@guard.command("serve", short_help="Answer guard checks over HTTP on a loopback address.")
@_guard_store_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Loopback address to listen on (127.0.0.1, ::1 or localhost); any other "
                   "address is refused.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port, printed at start).")
@click.option("--approver", default=None, metavar="NAME",
              help="Who answers the guard's questions: a rule that does not accept NAME "
                   "answers deny instead of ask.")
def guard_serve(spec: str, state_dir: str, host: str, port: int,
                approver: str | None) -> None:
    """Answer check, observe and approve for the sessions in --state-dir, over HTTP.

    POST /v1/sessions/ID creates a session; POST /v1/sessions/ID/check,
    /observe and /approve take a JSON event. Anything unusable (an unknown
    session, a bad event, an internal error) is a non-2xx status with verdict
    deny. Runs until interrupted.
    """
    from roadcheck.guard.serve import serve
    from roadcheck.guard.store import GuardStore

    serve(GuardStore(state_dir, spec, approver=approver), host, port)


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

    _emit(render_schema(kind))


def main(argv: list[str] | None = None) -> None:
    """Console entry point: any error that escapes as a bug exits 70, never 0."""
    try:
        cli.main(args=argv, prog_name="roadcheck", standalone_mode=True)
    except SystemExit:
        raise
    except BaseException as exc:  # fail closed on any bug
        if isinstance(exc, KeyboardInterrupt):
            _interrupted()
        from roadcheck.report._text import escape_controls

        click.echo(escape_controls(f"error[internal]: {type(exc).__name__}: {exc}"), err=True)
        sys.exit(EXIT_INTERNAL)
