"""``roadcheck accept``: a claimed result accepted only on evidence."""

from __future__ import annotations

import sys

import click

from roadcheck.cli._base import CI_FORMATS, FILE, cli, emit, report_options, sha256_option

__all__ = ["accept"]


@cli.command(short_help="Accept a claimed result only on evidence.")
@click.option("--contract", "-c", "contract", type=FILE, default=None,
              help="The contract file (JSON or YAML).")
@click.option("--result", "-r", "result", type=click.Path(dir_okay=False, allow_dash=True),
              default=None, help="The agent's result as JSON text ('-' reads standard input).")
@click.option("--trace", "-t", "trace", type=FILE, default=None,
              help="The calls the agent made: a JSON list of calls, or a run of any format "
                   "replay reads (PATH#RUN names one run of a file of several).")
@click.option("--trace-format", metavar="FORMAT", default=None,
              help="The trace's format, as replay's --input-format (default: told by "
                   "content).")
@click.option("--probe-cmd", metavar="CMD", default=None,
              help="Read-only command run without a shell; exit 0 confirms the effect.")
@click.option("--probe-url", metavar="URL", default=None,
              help="Read-only GET; a 2xx answer confirms the effect.")
@click.option("--probe-timeout", type=float, default=10.0, show_default=True, metavar="SECONDS",
              help="How long a probe may take before it counts as failed.")
@click.option("--claims-unchecked", is_flag=True,
              help="Judge a contract that checks claims without a trace: the claims are "
                   "not checked, and the report says so (without this, no trace is exit 2).")
@click.option("--every-turn", is_flag=True,
              help="With sessions and no --result: judge the claims of every turn end (the "
                   "agent's last message before each of the user's), not only the final "
                   "message.")
@sha256_option("--expect-contract-sha256", "contract", "as sha256sum prints it")
@report_options()
@click.option("--self-test", is_flag=True, help="Judge the four built-in fixtures and exit.")
@click.argument("sessions", nargs=-1, type=FILE)
def accept(contract: str | None, result: str | None, trace: str | None,
           trace_format: str | None, probe_cmd: str | None,
           probe_url: str | None, probe_timeout: float, claims_unchecked: bool,
           every_turn: bool, expect_contract_sha256: str | None, fmt: str, output: str | None,
           self_test: bool, sessions: tuple[str, ...]) -> None:
    """Accept an agent's claimed result only when the evidence backs it.

    Checks the result against the contract, each claimed verb against the
    trace, and the effect with an optional read-only probe. Without --result,
    judges each session given (--trace SESSION [SESSION...]) on the claims its
    final message makes (the contract's `said`). Exit 0 ACCEPTED, 1 REJECTED,
    2 could not judge.
    """
    from roadcheck.report import accept_report, self_test_report

    if self_test:
        from roadcheck.acceptance.selftest import run_self_test

        if fmt in CI_FORMATS:
            raise click.UsageError(f"--self-test prints text or json, not {fmt}")
        cases = run_self_test()
        emit(self_test_report(cases, fmt=fmt), output, paint=fmt == "text")
        sys.exit(0 if all(c.as_expected for c in cases) else 1)
    if contract is not None and result is None and (trace is not None or sessions):
        _accept_sessions(contract, [*([trace] if trace else []), *sessions], trace_format,
                         expect_contract_sha256, fmt, output, every_turn)
    if every_turn:
        raise click.UsageError("--every-turn judges sessions: give --contract and --trace, "
                               "without --result")
    if sessions:
        raise click.UsageError("with --result, give one trace (--trace FILE)")
    if contract is None or result is None:
        raise click.UsageError("--contract and --result are required (or use --self-test)")
    from roadcheck.acceptance import accept_files

    run = accept_files(contract, result, trace, probe_cmd=probe_cmd, probe_url=probe_url,
                       probe_timeout=probe_timeout, claims_unchecked=claims_unchecked,
                       expect_contract_sha256=expect_contract_sha256,
                       trace_format=trace_format)
    if fmt in CI_FORMATS:
        from roadcheck.report.cases import accept_cases
        from roadcheck.report.ci import ci_report

        emit(ci_report(fmt, "accept", accept_cases(run), run.exit), output)
    else:
        emit(accept_report(run.label, run.result, fmt=fmt), output, paint=fmt == "text")
    sys.exit(run.exit)


def _accept_sessions(contract: str, sessions: list[str], trace_format: str | None,
                     expect_contract_sha256: str | None, fmt: str, output: str | None,
                     every_turn: bool) -> None:
    from roadcheck.acceptance import accept_sessions
    from roadcheck.report import accept_batch_report

    runs = accept_sessions(contract, sessions, expect_contract_sha256=expect_contract_sha256,
                           trace_format=trace_format, every_turn=every_turn)
    exit_code = max((r.exit for r in runs), default=0)
    if fmt in CI_FORMATS:
        from itertools import chain

        from roadcheck.report.cases import accept_cases
        from roadcheck.report.ci import ci_report

        emit(ci_report(fmt, "accept", chain.from_iterable(accept_cases(r) for r in runs),
                       exit_code), output)
    else:
        emit(accept_batch_report(runs, fmt=fmt), output, paint=fmt == "text")
    sys.exit(exit_code)
