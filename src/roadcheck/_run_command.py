"""``roadcheck run`` on a plain command line, read without click.

A run is one process, its start-up paid once per invocation: click and the
modules of the other commands cost it some 15-25 ms, about 0.2 ms a phase of a
100-phase workflow. :func:`parse_args` takes only a plain, valid command line
for a file store (``jsonl`` or ``sqlite``): each option at most once, every
value present and not option-like, one workflow, params as ``KEY=VALUE`` and
the paths as click's ``Path`` checks would pass them. Anything else (``--help``,
an unknown or repeated option, a missing value, a PostgreSQL URL, ``--lease``)
returns None and the click CLI answers it, with its usual messages. What
:func:`run` does then is what the click command does: the same library calls,
the same report, the same one-line errors and exit codes.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["parse_args", "run"]

#: option -> (key, repeatable)
_OPTIONS: dict[str, tuple[str, bool]] = {
    "--as": ("role", False), "--identity": ("identity", False), "--run-id": ("run_id", False),
    "--resume": ("resume", False), "--runs-dir": ("runs_dir", False),
    "--store": ("store", False), "--param": ("params", True), "--key-file": ("key_file", False),
    "--format": ("fmt", False)}


def _path_ok(path: str, *, dir_okay: bool) -> bool:
    """What click's ``Path(dir_okay=..., file_okay=not dir_okay)`` lets through."""
    try:
        st = os.stat(path)
    except OSError:
        return True
    if stat.S_ISDIR(st.st_mode) if not dir_okay else not stat.S_ISDIR(st.st_mode):
        return False  # a directory as the workflow or key file, a file as the runs directory
    return os.access(path, os.R_OK)


def _read(args: list[str]) -> tuple[dict[str, Any], list[str]] | None:
    """The options given and the positional arguments; None for anything but a plain line."""
    options: dict[str, Any] = {"params": []}
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name, eq, value = arg.partition("=")
        key, repeatable = _OPTIONS.get(name, ("", False))
        if not key or (key in options and not repeatable):
            return None
        if not eq:
            if i == len(args):
                return None
            value = args[i]
            i += 1
        if value.startswith("-"):
            return None
        if repeatable:
            options[key].append(value)
        else:
            options[key] = value
    return options, positional


def _params(pairs: list[str]) -> dict[str, str] | None:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            return None
        out[key] = value
    return out


def parse_args(args: list[str], environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The options of ``roadcheck run ARGS``; None to leave the command line to click."""
    read = _read(args)
    if read is None or len(read[1]) != 1:
        return None
    given, (workflow,) = read
    options: dict[str, Any] = {"identity": None, "run_id": None, "resume": None,
                               "runs_dir": None, "store": "jsonl", "key_file": None,
                               "fmt": "text", **given, "workflow": workflow,
                               "params": _params(given["params"])}
    options.setdefault("role", environ.get("ROADCHECK_ROLE") or None)
    if (options["role"] is None or options["params"] is None
            or options["store"] not in ("jsonl", "sqlite")
            or options["fmt"] not in ("text", "json")):
        return None
    if not (_path_ok(workflow, dir_okay=False)
            and (options["key_file"] is None or _path_ok(options["key_file"], dir_okay=False))
            and (options["runs_dir"] is None or _path_ok(options["runs_dir"], dir_okay=True))):
        return None
    return options


def run(options: Mapping[str, Any]) -> int:
    """Run the workflow as the click command would, report it, and return the exit code.

    A :class:`~roadcheck.errors.RoadcheckError` is its one ``error[...]`` line and
    exit code, an interrupt exit 130, anything else ``error[internal]`` and 70.
    """
    from roadcheck.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, RoadcheckError
    from roadcheck.report._text import escape_controls

    try:
        return _run(options)
    except RoadcheckError as exc:
        _error(escape_controls(f"error[{exc.reason}]: {exc.location_message()}"))
        return exc.exit_code
    except KeyboardInterrupt:
        _error("error[interrupted]: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # as click: the reader went away; exit 1 without a word
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return 1
    except Exception as exc:  # fail closed on any bug
        _error(escape_controls(f"error[internal]: {type(exc).__name__}: {exc}"))
        return EXIT_INTERNAL


def _error(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _run(options: Mapping[str, Any]) -> int:
    from roadcheck._files import check_writable_dir
    from roadcheck.config import find_config
    from roadcheck.harness import Workflow
    from roadcheck.report.harness import run_report

    configured = find_config().runs_dir  # read (and a broken one refused) as click does
    runs_dir = options["runs_dir"]
    if runs_dir is None:
        runs_dir = "runs" if configured is None else str(configured)
    check_writable_dir(runs_dir)
    result = Workflow.load(options["workflow"]).run(
        role=options["role"], identity=options["identity"], run_id=options["run_id"],
        resume=options["resume"], runs_dir=runs_dir, store=options["store"],
        params=options["params"], key_file=options["key_file"])
    sys.stdout.write(run_report(result, fmt=options["fmt"]))
    sys.stdout.flush()
    return result.exit
