"""``roadcheck replay`` on a plain command line, read without click.

A replay is one process, and a CI job may start one per check: click and the
command modules cost its start some 20 ms. :func:`parse_args` takes only a
plain, valid command line for a streamed report (``text`` or ``json``): a spec
and at least one trajectory, each option at most once, every value present and
not option-like, the paths as click's ``Path`` checks would pass them. Anything
else (``--help``, an unknown or repeated option, a missing value, ``--show``,
``-q``, ``-v``, ``--ray``, a CI or HTML format, a shell completion request)
returns None, and so does :func:`run` for a ``[tool.roadcheck] format`` it
does not stream; the click CLI then answers, with its usual messages. What
:func:`run` does is what the click command does: the same library calls
(:func:`stream` is the click command's own streamed branch), the same report,
the same one-line errors and exit codes. Everything it says on standard error
goes through ``click.echo``, imported only when there is something to say.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["parse_args", "run", "stream"]

#: option -> (key, takes a value)
_OPTIONS: dict[str, tuple[str, bool]] = {
    "--format": ("fmt", True), "--output": ("output", True), "-o": ("output", True),
    "--input-format": ("input_format", True), "--by": ("by_field", True),
    "--expect-spec-sha256": ("expect_spec_sha256", True), "--jobs": ("jobs", True),
    "-r": ("recursive", False), "--recursive": ("recursive", False),
    "--summary-only": ("summary_only", False), "--per-file": ("per_file", False),
    "--strict": ("strict", False)}
_DEFAULTS: dict[str, Any] = {
    "fmt": None, "output": None, "input_format": None, "by_field": None,
    "expect_spec_sha256": None, "jobs": "1", "recursive": False, "summary_only": False,
    "per_file": False, "strict": False}
#: The formats :func:`stream` writes as judged.
_STREAMED = ("text", "json")


def _path_ok(path: str) -> bool:
    """What click's ``Path(dir_okay=False)`` lets through."""
    try:
        st = os.stat(path)
    except OSError:
        return True
    return not stat.S_ISDIR(st.st_mode) and os.access(path, os.R_OK)


def _read(args: list[str]) -> tuple[dict[str, Any], list[str]] | None:
    """The options given and the positional arguments; None for anything but a plain line."""
    options: dict[str, Any] = {}
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        key, takes_value = _OPTIONS.get(name, ("", False))
        if not key or key in options:
            return None
        if not takes_value:
            if eq:
                return None
            options[key] = True
            continue
        if not eq:
            if i == len(args):
                return None
            value = args[i]
            i += 1
        if value.startswith("-"):
            return None
        options[key] = value
    return options, positional


def parse_args(args: list[str], environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The options of ``roadcheck replay ARGS``; None to leave the command line to click.

    ``fmt`` is None where no ``--format`` is given: :func:`run` takes the configured one.
    """
    if environ.get("_ROADCHECK_COMPLETE"):
        return None  # click answers a shell's completion request
    read = _read(args)
    if read is None or len(read[1]) < 2:
        return None
    given, (spec, *trajectories) = read
    options = {**_DEFAULTS, **given, "spec": spec, "trajectories": tuple(trajectories)}
    jobs = options["jobs"]
    if not (jobs.isascii() and jobs.isdigit() and int(jobs) >= 1):
        return None
    options["jobs"] = int(jobs)
    if options["fmt"] is not None and options["fmt"] not in _STREAMED:
        return None
    if options["per_file"] and not options["summary_only"]:
        return None
    if options["input_format"] is not None:
        from roadcheck.ingest import FORMATS

        if options["input_format"] not in FORMATS:
            return None
    if options["expect_spec_sha256"] is not None:
        from roadcheck.documents._read import normalize_sha256

        try:
            options["expect_spec_sha256"] = normalize_sha256(options["expect_spec_sha256"])
        except ValueError:
            return None
    if not (_path_ok(spec) and (options["output"] is None or _path_ok(options["output"]))):
        return None
    return options


def run(options: Mapping[str, Any], *,
        started: Callable[[], None] | None = None) -> int | None:
    """Replay as the click command would, write the report, and return the exit code;
    None (before anything is read or written) for a configured format it does not stream.

    A :class:`~roadcheck.errors.RoadcheckError` is its one ``error[...]`` line and
    exit code, an interrupt exit 130, a closed standard output exit 1 without a word
    (as click), anything else ``error[internal]`` and 70. ``started`` is called once the
    spec is read and the files listed, before the first file is judged.
    """
    import errno

    from roadcheck.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, RoadcheckError
    from roadcheck.report._text import escape_controls

    try:
        return _run(options, started)
    except RoadcheckError as exc:
        _echo(escape_controls(f"error[{exc.reason}]: {exc.location_message()}"))
        return exc.exit_code
    except KeyboardInterrupt:
        _echo("error[interrupted]: interrupted")
        return EXIT_INTERRUPTED
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            _echo(escape_controls(f"error[internal]: {type(exc).__name__}: {exc}"))
            return EXIT_INTERNAL
        null = os.open(os.devnull, os.O_WRONLY)  # the reader went away; as click, exit 1
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return 1
    except Exception as exc:  # fail closed on any bug
        _echo(escape_controls(f"error[internal]: {type(exc).__name__}: {exc}"))
        return EXIT_INTERNAL


def _echo(line: str) -> None:
    """A line on standard error, written as the click command writes it."""
    import click

    click.echo(line, err=True)


def _run(options: Mapping[str, Any], started: Callable[[], None] | None) -> int | None:
    from roadcheck.config import find_config

    configured = find_config().format  # read, and a broken one refused, as click does
    fmt = options["fmt"] or configured or "text"
    if fmt not in _STREAMED:
        return None
    from roadcheck._inputs import expand_inputs, load_replay_spec

    spec = options["spec"]
    loaded = load_replay_spec(spec, expect_sha256=options["expect_spec_sha256"])
    inputs = expand_inputs(options["trajectories"], recursive=options["recursive"], spec=spec)
    for note in inputs.notes:
        _echo(f"note: {note}")
    if started is not None:
        started()
    by_field = options["by_field"]
    code, carries, stopped = stream(
        loaded, inputs.paths, fmt=fmt, output=options["output"], jobs=options["jobs"],
        ray_address=None, input_format=options["input_format"], show=None, quiet=False,
        verbose=False, summary_only=options["summary_only"], by_field=by_field,
        per_file=options["per_file"], strict=options["strict"])
    if stopped is not None:
        from roadcheck.errors import EXIT_INTERRUPTED

        _echo(f"error[interrupted]: interrupted after {stopped.done} of {stopped.total} files; "
              "the report covers those only")
        return EXIT_INTERRUPTED
    if by_field is not None and not carries:
        _echo(f"warning: no trajectory carries {by_field!r} in its final event; "
              "every result is grouped under (absent)")
    return code


def stream(loaded: Any, paths: Any, *, fmt: str, output: str | None, jobs: int,
           ray_address: str | None, input_format: str | None,
           show: tuple[str, ...] | None, quiet: bool, verbose: bool, summary_only: bool,
           by_field: str | None, per_file: bool, strict: bool) -> tuple[int, bool, Any]:
    """Judge ``paths`` and write the report as judged (``text`` or ``json``): the process
    holds one file's state, not every result. Returns the exit code, whether a
    trajectory carried ``by_field``, and the :class:`ReplayInterrupted` that stopped the
    batch (None: it ran to its end); the report is whole either way."""
    from contextlib import ExitStack
    from functools import partial

    from roadcheck.conformance import ReplayInterrupted, replay_files

    judge: Callable[..., Any] = partial(replay_files, jobs=jobs)
    if ray_address is not None:
        from roadcheck.integrations.ray import replay_paths

        judge = partial(replay_paths, address=ray_address or None)
    stopped = None
    with ExitStack() as stack:
        report, render = _replay_writer(stack, loaded, fmt, output, len(paths),
                                        show=show, quiet=quiet, verbose=verbose,
                                        summary_only=summary_only, by_field=by_field,
                                        per_file=per_file, strict=strict)
        try:
            judge(loaded, paths, input_format=input_format, render=render, sink=report)
        except ReplayInterrupted as stop:
            code = report.finish(interrupted=True)
            stopped = stop
        else:
            code = report.finish()
    return code, report.carries, stopped


def _replay_writer(stack: Any, spec: Any, fmt: str, output: str | None, files: int, *,
                   show: tuple[str, ...] | None, quiet: bool, verbose: bool,
                   summary_only: bool, by_field: str | None,
                   per_file: bool = False, strict: bool = False) -> tuple[Any, Callable[..., Any]]:
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
                                      by_field=by_field, progress=progress,
                                      per_file=per_file)
    else:
        render = ResultRenderer(fmt=fmt, summary_only=summary_only, by_field=by_field)
        report = ReplayReportWriter(out, spec, spec_source=spec.source, spec_sha256=spec.sha256,
                                    fmt=fmt, summary_only=summary_only, by_field=by_field,
                                    per_file=per_file)
    report.strict = strict
    stack.enter_context(report)
    if progress is None:
        return report, render
    from roadcheck.report.terminal import ProgressSink

    stack.callback(progress.clear)  # also on an error: the cursor goes back where it was
    return ProgressSink(report, progress), render
