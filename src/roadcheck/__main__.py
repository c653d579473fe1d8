"""``python -m roadcheck`` and the ``roadcheck`` console script.

``roadcheck guard claude-code`` runs once per Claude Code hook event, a new process
each time, so its start-up is paid on every tool call. It first asks the resident daemon
(:mod:`roadcheck._hook_client`, which imports almost nothing; so does every other hook
command, ``roadcheck guard codex`` and the rest); when no daemon takes the call, its
arguments are read here without importing click (:func:`roadcheck.guard.claude_code.parse_args`);
anything that parser does not take as a plain, valid command line (``--help``,
an unknown or repeated option, a missing value, a directory given as the spec)
goes to the click CLI, which answers exactly as it always does. So do a plain
``roadcheck run`` (:mod:`roadcheck._run_command`), a plain ``roadcheck replay`` for a
text or JSON report (:mod:`roadcheck._replay_command`) and ``roadcheck --version``
alone: each is read here first, and click answers any other command line.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's flag, without importing typing (see roadcheck/__init__.py)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]

#: The hook commands, ``roadcheck guard CLI``, read here without click.
_HOOKS = frozenset({"claude-code", "codex", "gemini", "opencode", "copilot", "cursor", "cline"})


def main(argv: list[str] | None = None, *, quick_exit: bool = True) -> None:
    """Console entry point: the hook's lean path, else the click CLI.

    ``quick_exit`` lets a ``replay`` or ``run`` process end without the interpreter's
    teardown (:func:`_leave`); ``python -m roadcheck`` keeps the usual exit, so that a
    profiler running the module gets its turn.
    """
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["guard"] and len(args) > 1 and args[1] in _HOOKS:
        if argv is None:
            import os

            from roadcheck._hook_client import enabled, run

            if enabled(os.environ):
                run(args[1], args[2:])  # returns only for a call answered in process
        import gc

        # One short-lived process per hook event: the cyclic collector would only spend
        # time walking the session it just read.
        gc.disable()
        from roadcheck.guard.claude_code import parse_args

        if args[1] == "claude-code":
            options = parse_args(args[2:])
            if options is not None:
                _hook(options, leave=argv is None)
        else:
            from roadcheck.guard.hooks import load

            adapter = load(args[1])
            options = parse_args(args[2:], adapter.options)
            if options is not None:
                _hook(options, leave=argv is None, adapter=adapter)
    if argv is None and args[:1] == ["run"]:
        _run(args[1:], quick_exit)
    if argv is None and args[:1] == ["replay"]:
        _replay(args[1:], quick_exit)
    if argv is None and args == ["--version"]:
        _version()
    from roadcheck.cli import main as cli_main

    if quick_exit and argv is None and (
            (args[:1] == ["replay"] and not any(a.startswith("--ray") for a in args))
            or args[:1] == ["run"]):
        try:
            cli_main(argv)
        except SystemExit as done:
            _leave(done)
        return
    cli_main(argv)


def _run(args: list[str], quick_exit: bool) -> None:
    """``roadcheck run`` on a plain command line for a file store, without click
    (:mod:`roadcheck._run_command`); returns, for click to answer, on any other.

    What start-up builds (modules, classes, functions) lives as long as the process:
    the collector is off while it is built (it would find no garbage), and what was
    built is frozen, so no later collection walks it; the run itself is collected as
    usual.
    """
    import gc
    import os

    from roadcheck._run_command import parse_args, run

    options = parse_args(args, os.environ)
    if options is None:
        return
    gc.disable()
    import roadcheck.harness.workflow
    import roadcheck.report.harness  # noqa: F401 - what every run loads

    gc.freeze()
    gc.enable()
    done = SystemExit(run(options))
    if quick_exit:
        _leave(done)
    raise done


def _replay(args: list[str], quick_exit: bool) -> None:
    """``roadcheck replay`` on a plain command line for a streamed report, without click
    (:mod:`roadcheck._replay_command`); returns, for click to answer, on any other.

    The collector is off while start-up builds the modules, the spec and the list of
    files (it would find no garbage) and what was built is frozen, so no later
    collection walks it; the files are judged with the collector on, as usual.
    """
    import gc
    import os

    from roadcheck._replay_command import parse_args, run

    options = parse_args(args, os.environ)
    if options is None:
        return
    gc.disable()
    try:
        code = run(options, started=_started)
    finally:
        gc.enable()
    if code is None:
        return
    done = SystemExit(code)
    if quick_exit:
        _leave(done)
    raise done


def _started() -> None:
    """Start-up is over: what it built is kept out of every later collection."""
    import gc

    gc.freeze()
    gc.enable()


def _version() -> None:
    """``roadcheck --version`` alone, without click: the line click prints."""
    from roadcheck._version import __version__

    try:
        sys.stdout.write(f"roadcheck, version {__version__}\n")
        sys.stdout.flush()
    except BrokenPipeError:  # as click: the reader went away; exit 1 without a word
        import os

        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        sys.exit(1)
    sys.exit(0)


def _leave(done: SystemExit) -> None:
    """End a ``replay`` or ``run`` process once its output is flushed and the exit
    functions have run, without tearing down the interpreter: after a batch of 50,000
    files that teardown costs some 30 ms, and some 8 ms on any run (for ``run``, about
    0.1 ms a phase of a 100-phase workflow). Whatever is not a plain exit code, an
    interrupt (its pool may still be stopping), a thread still running (the usual exit
    waits for it), or a flush that fails takes the usual way out."""
    code = done.code
    if not isinstance(code, int) or code == 130:
        raise done
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        raise done
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        raise done from None
    import atexit
    import os

    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is not None:  # what was registered still runs (coverage, say)
        run_exit_functions()
    os._exit(code)


def _hook(options: dict[str, str | bool], *, leave: bool, adapter: Any = None) -> None:
    """Run the hook; an interrupt or a bug blocks the call (exit 2), as any failure does.

    With ``leave`` (the process's own command line), the process ends with
    :func:`os._exit` once the answer is flushed: everything the call wrote is
    closed by then, and tearing down the interpreter's modules would cost a hook
    call about as much as its own work. Called with arguments, it raises
    ``SystemExit`` as usual.
    """
    try:
        if adapter is None:
            from roadcheck.guard.claude_code import main as hook_main

            code = hook_main(options)
        else:
            from roadcheck.guard import claude_code, hooks

            code = hooks.main(adapter, options, deadline=claude_code.DEADLINE)
    except BaseException as exc:  # an interrupt or a bug blocks the call
        # Claude Code runs the call on any exit code but 2, so 2 is the only fail-closed exit;
        # another CLI's adapter answers in the one form that CLI takes as a block.
        from roadcheck.guard import hooks

        sys.exit(hooks.blocked(exc, adapter))
    if not leave:
        sys.exit(code)
    import os

    try:
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    main(quick_exit=False)
