"""Accepting files: a result file judged against a contract file and a trace file."""

from __future__ import annotations

from collections.abc import Callable
from os import PathLike
from typing import Any

from roadcheck.acceptance.contract import load_contract
from roadcheck.acceptance.gate import verify
from roadcheck.acceptance.result import AcceptRun
from roadcheck.acceptance.trace import load_trace
from roadcheck.errors import InputError

__all__ = ["accept_files", "make_probe", "read_result"]


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
    loaded = load_contract(contract, expect_sha256=expect_contract_sha256)
    probe = make_probe(probe_cmd, probe_url, probe_timeout)
    calls = load_trace(trace, trace_format) if trace is not None else None
    text = read_result(result)
    return AcceptRun(str(result), loaded, verify(text, loaded, trace=calls, probe=probe,
                                                 claims_unchecked=claims_unchecked))
