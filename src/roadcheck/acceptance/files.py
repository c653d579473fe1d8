"""Accepting files: a result file judged against a contract file and a trace file."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any

from roadcheck.acceptance.contract import load_contract
from roadcheck.acceptance.gate import verify, verify_session
from roadcheck.acceptance.result import AcceptRun
from roadcheck.acceptance.trace import load_session, load_trace
from roadcheck.errors import InputError

__all__ = ["BUILTIN_CONTRACTS", "accept_files", "accept_sessions", "contract_file",
           "make_probe", "read_result"]

#: The contracts shipped with roadcheck, named ``builtin:NAME`` where a file is expected.
BUILTIN_CONTRACTS = ("coding-agent",)


def contract_file(name: str | PathLike[str]) -> str:
    """The file a contract name stands for: ``builtin:NAME`` is a shipped contract."""
    source = str(name)
    if not source.startswith("builtin:"):
        return source
    builtin = source.removeprefix("builtin:")
    if builtin not in BUILTIN_CONTRACTS:
        raise InputError(f"no built-in contract {builtin!r}; the built-in contracts are "
                         + ", ".join(f"builtin:{n}" for n in BUILTIN_CONTRACTS))
    from pathlib import Path

    return str(Path(__file__).with_name("contracts") / f"{builtin}.yaml")


def read_result(path: str | PathLike[str]) -> str:
    """Read a result file as text (``-`` is standard input); it is parsed by the gate."""
    import sys

    from roadcheck._limits import max_input_size, too_large

    source = str(path)
    limit = max_input_size()
    try:
        if source == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(source, "rb") as fh:
                data = fh.read(limit + 1)  # /dev/zero never ends: reading stops past the limit
    except OSError as exc:
        raise InputError(f"cannot read result: {exc.strerror or exc}", path=source) from None
    if len(data) > limit:
        raise InputError(too_large(limit, "the result"), path=source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"result is not UTF-8 text (byte {exc.start})", path=source) from None


def make_probe(command: str | None = None, url: str | None = None,
               timeout: float = 10.0) -> Callable[[], Any] | None:
    """Build the read-only probe the command line asked for, if any.

    ``command`` is split into words like a POSIX shell would, and then run as an
    argument list: no shell ever sees it (no pipes, globs or variables).
    """
    from roadcheck.acceptance.probes import CommandProbe, UrlProbe

    if command is not None and url is not None:
        raise InputError("give one probe: --probe-cmd or --probe-url, not both")
    if not timeout > 0:
        raise InputError(f"--probe-timeout must be positive, got {timeout:g}")
    if command is not None:
        import shlex

        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise InputError(f"--probe-cmd: {exc}") from None
        if not argv:
            raise InputError("--probe-cmd: the command is empty")
        return CommandProbe(argv, timeout)
    if url is not None:
        try:
            return UrlProbe(url, timeout)
        except ValueError as exc:
            raise InputError(f"--probe-url: {exc}") from None
    return None


def accept_files(contract: str | PathLike[str], result: str | PathLike[str],
                 trace: str | PathLike[str] | None = None, *, probe_cmd: str | None = None,
                 probe_url: str | None = None, probe_timeout: float = 10.0,
                 claims_unchecked: bool = False,
                 expect_contract_sha256: str | None = None,
                 trace_format: str | None = None) -> AcceptRun:
    """Judge a result file against a contract file and a trace file: the CLI's one call.

    Unusable inputs raise :class:`~roadcheck.errors.InputError` (exit 2), and so
    does a contract that checks claims with no trace, unless
    ``claims_unchecked``; a result that does not parse is judged (REJECTED),
    not an input error. ``expect_contract_sha256`` pins the contract's bytes, as
    :func:`load_contract` does. ``trace_format`` names the trace's format where
    telling it by content is not wanted (any of replay's ``--input-format`` names).
    """
    loaded = load_contract(contract_file(contract), expect_sha256=expect_contract_sha256)
    probe = make_probe(probe_cmd, probe_url, probe_timeout)
    calls: Any = None
    if trace is not None:
        # claims in the agent's words are read in the session's messages, not its calls
        calls = (load_session(trace, trace_format) if loaded.said
                 else load_trace(trace, trace_format))
    text = read_result(result)
    return AcceptRun(str(result), loaded, verify(text, loaded, trace=calls, probe=probe,
                                                 claims_unchecked=claims_unchecked))


def accept_sessions(contract: str | PathLike[str], sessions: Sequence[str | PathLike[str]], *,
                    expect_contract_sha256: str | None = None,
                    trace_format: str | None = None,
                    every_turn: bool = False) -> list[AcceptRun]:
    """Judge each session on its own words: the claims its final message makes, against
    the calls it holds (the contract's ``said``). The batch form of the CLI's one call.

    With ``every_turn``, every turn end of each session is judged, not only its
    final message (:func:`~roadcheck.acceptance.said_at_turn_ends`).

    Every session is read before any is judged, so an unreadable one is an
    :class:`~roadcheck.errors.InputError` (exit 2) and no partial batch is reported.
    """
    loaded = load_contract(contract_file(contract), expect_sha256=expect_contract_sha256)
    read = [(str(path), load_session(path, trace_format)) for path in sessions]
    return [AcceptRun(label, loaded, verify_session(loaded, session, every_turn=every_turn))
            for label, session in read]
