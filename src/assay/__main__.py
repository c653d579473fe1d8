"""``python -m assay`` and the ``assay`` console script.

``assay guard claude-code`` runs once per Claude Code hook event, a new process
each time, so its start-up is paid on every tool call. Its arguments are read
here without importing click (:func:`assay.guard.claude_code.parse_args`);
anything that parser does not take as a plain, valid command line (``--help``,
an unknown or repeated option, a missing value, a directory given as the spec)
goes to the click CLI, which answers exactly as it always does.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """Console entry point: the hook's lean path, else the click CLI."""
    args = sys.argv[1:] if argv is None else argv
    if args[:2] == ["guard", "claude-code"]:
        import gc

        # One short-lived process per hook event: the cyclic collector would only spend
        # time walking the session it just read.
        gc.disable()
        from assay.guard.claude_code import parse_args

        options = parse_args(args[2:])
        if options is not None:
            _hook(options, leave=argv is None)
    from assay.cli import main as cli_main

    cli_main(argv)


def _hook(options: dict[str, str | bool], *, leave: bool) -> None:
    """Run the hook as ``assay.cli`` would, with its exit codes for an interrupt or a bug.

    With ``leave`` (the process's own command line), the process ends with
    :func:`os._exit` once the answer is flushed: everything the call wrote is
    closed by then, and tearing down the interpreter's modules would cost a hook
    call about as much as its own work. Called with arguments, it raises
    ``SystemExit`` as usual.
    """
    try:
        from assay.guard.claude_code import main as hook_main

        code = hook_main(options)
    except KeyboardInterrupt:
        from assay.cli import _interrupted

        _interrupted()
    except BaseException as exc:  # fail closed on any bug, as the click CLI does
        from assay.errors import EXIT_INTERNAL
        from assay.report._text import escape_controls

        sys.stderr.write(escape_controls(f"error[internal]: {type(exc).__name__}: {exc}") + "\n")
        sys.exit(EXIT_INTERNAL)
    if not leave:
        sys.exit(code)
    import os

    try:
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    main()
