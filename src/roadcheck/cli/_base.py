"""What every command of the ``roadcheck`` command line shares: the group, its error
handling, the common options and the way a report is written out.

No judgement lives in the CLI. Each command turns its arguments into one library
call, hands the result to a renderer in :mod:`roadcheck.report`, and exits with the
code the result carries. Library imports sit inside the commands so that
``roadcheck replay`` only pays for what it uses.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NoReturn

import click

from roadcheck._version import __version__
from roadcheck.errors import EXIT_ERROR, EXIT_INTERRUPTED, RoadcheckError

__all__ = ["CI_FORMATS", "DIRECTORY", "FILE", "FORMAT_OPTION", "KEY_FILE_OPTION", "cli",
           "database_url", "emit", "interrupted", "parse_params", "report_options", "sha256_option",
           "store_choice"]

# One instance of each path type for every option that takes one: click's types are
# stateless, and each new one looks up its translated name (a few file system calls).
FILE = click.Path(dir_okay=False)
DIRECTORY = click.Path(file_okay=False)

KEY_FILE_OPTION = click.option(
    "--key-file", type=FILE, default=None, metavar="FILE",
    help="Evidence key kept outside the runs directory: an HMAC-SHA256 secret, or an "
         "Ed25519 PEM key from 'roadcheck keys new' (the private key signs; its public key "
         "verifies) (default: $ROADCHECK_EVIDENCE_KEY_FILE, else $ROADCHECK_EVIDENCE_KEY).",
)

FORMAT_OPTION = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="Report format: a human-readable report or one JSON document.",
)


CI_FORMATS = ("junit", "sarif", "github")


def report_options(*extra: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--format`` with the CI formats (and ``extra``), and ``--output FILE``."""
    fmt = click.option(
        "--format", "fmt", type=click.Choice(["text", "json", *CI_FORMATS, *extra]),
        default="text", show_default=True,
        help="Report format: a human-readable report, one JSON document, JUnit XML, "
             "SARIF 2.1.0, or GitHub Actions annotations"
             + (" (html: one self-contained page, needs --output)" if "html" in extra else "")
             + ".")
    output = click.option(
        "--output", "-o", "output", type=FILE, default=None,
        metavar="FILE", help="Write the report to FILE instead of standard output: a file is "
                             "replaced atomically, a FIFO or device written through.")

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
    #: subgroups (``roadcheck evidence``) are _Group too
    group_class: type[click.Group] | type[type] = type

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
            interrupted()


class _Root(_Group):
    """The ``roadcheck`` group. A command's module is imported when that command is asked
    for, so ``roadcheck replay`` builds no other command's options (some 15 M
    instructions, 4 ms, of its start); :attr:`commands` imports them all (the help, the
    reference, an unknown command's suggestions)."""

    group_class = _Group  # its subgroups hold their own commands

    #: Each command and the module of :mod:`roadcheck.cli` that declares it.
    modules: ClassVar[dict[str, str]] = {
        "accept": "accept", "audit": "harness", "diff": "spectools", "evidence": "harness",
        "explain": "spectools", "guard": "guard", "keys": "keys", "replay": "replay",
        "revalidate": "revalidate", "run": "harness", "schema": "schema", "spec": "spectools",
        "submit": "harness", "worker": "harness",
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._declared: dict[str, click.Command] = {}
        self._adding = False
        super().__init__(*args, **kwargs)

    @property
    def commands(self) -> dict[str, click.Command]:
        """Every command, each module imported (while one registers, those so far)."""
        if not self._adding:
            for module in dict.fromkeys(self.modules.values()):
                self._import(module)
        return self._declared

    @commands.setter
    def commands(self, value: Mapping[str, click.Command]) -> None:
        self._declared = dict(value)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        self._adding = True
        try:
            super().add_command(cmd, name)
        finally:
            self._adding = False

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = self.modules.get(cmd_name)
        if module is not None and cmd_name not in self._declared:
            self._import(module)
        return self._declared.get(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.commands)

    @staticmethod
    def _import(module: str) -> None:
        import importlib

        importlib.import_module(f"roadcheck.cli.{module}")


def interrupted(detail: str = "") -> NoReturn:
    """Say the command was interrupted (one line on stderr) and exit 130."""
    click.echo(f"error[interrupted]: interrupted{detail}", err=True)
    sys.exit(EXIT_INTERRUPTED)


def sha256_option(name: str, what: str, shown: str | None = None
                  ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--expect-WHAT-sha256 HEX``: the pin, checked to be a sha256 before anything is read.
    ``shown`` says where the user finds the value (the report's ``WHAT-sha256`` line by
    default)."""

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None:
            return None
        from roadcheck.documents.loader import normalize_sha256

        try:
            return normalize_sha256(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    where = shown or f"as printed in the report's {what}-sha256 line"
    return click.option(name, metavar="HEX", default=None, callback=check,
                        help=f"Refuse (exit 2) a {what} whose bytes do not have this sha256, "
                             f"{where}.")



def emit(text: str, output: str | None = None, *, paint: bool = False) -> None:
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


@click.group("roadcheck", cls=_Root, context_settings={"help_option_names": ["-h", "--help"]})
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


def store_choice(value: str) -> str:
    """``jsonl``, ``sqlite`` or a ``postgresql://`` URL; anything else is a usage error."""
    from roadcheck.evidence.store import is_url

    if value in ("jsonl", "sqlite") or is_url(value):
        return value
    raise click.BadParameter(f"{value!r} is not jsonl, sqlite or a postgresql:// URL")


def database_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from roadcheck.evidence.store import is_url

    if value is not None and not is_url(value):
        raise click.BadParameter(f"{value!r} is not a postgresql:// URL")
    return value


def parse_params(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--param")
        out[key] = value
    return out
