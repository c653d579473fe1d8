"""``roadcheck run``, ``submit``, ``worker``, ``evidence verify`` and ``audit``: gated workflows
and the evidence they leave."""

from __future__ import annotations

import sys
from typing import Any

import click

from roadcheck.cli._base import (
    DIRECTORY,
    FILE,
    FORMAT_OPTION,
    KEY_FILE_OPTION,
    cli,
    database_url,
    emit,
    parse_params,
    store_choice,
)

__all__ = ["audit", "evidence", "run", "submit", "worker"]


@cli.command(short_help="Run a workflow; advance only on passing gates.")
@click.argument("workflow", type=FILE)
@click.option("--as", "role", envvar="ROADCHECK_ROLE", required=True, metavar="ROLE",
              help="The role this invocation acts as; it runs that role's phases only.")
@click.option("--identity", metavar="ID", default=None,
              help="Who is acting (default: $ROADCHECK_IDENTITY, else the OS user).")
@click.option("--run-id", default=None, help="Id of a new run (default: generated).")
@click.option("--resume", "resume", metavar="RUN_ID", default=None,
              help="Continue a stored run after its last passed phase.")
@click.option("--runs-dir", default="runs", show_default=True, type=DIRECTORY,
              help="Directory holding one directory per run.")
@click.option("--store", default="jsonl", show_default=True, metavar="jsonl|sqlite|URL",
              callback=lambda ctx, param, value: store_choice(value),
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
                                 params=parse_params(params), run_id=run_id, resume=resume,
                                 key_file=key_file)
        emit(run_report(result, fmt=fmt))
        sys.exit(result.exit)
    result = Workflow.load(workflow).run(
        role=role, identity=identity, run_id=run_id, resume=resume, runs_dir=runs_dir,
        store=store, params=parse_params(params), key_file=key_file)  # type: ignore[arg-type]
    emit(run_report(result, fmt=fmt))
    sys.exit(result.exit)



@cli.command(short_help="Create a run on a shared PostgreSQL store for workers to take.")
@click.argument("workflow", type=FILE)
@click.option("--store", required=True, metavar="URL", envvar="ROADCHECK_STORE",
              callback=database_url,
              help="The postgresql:// URL of the shared store (default: $ROADCHECK_STORE).")
@click.option("--run-id", default=None, help="Id of the new run (default: generated).")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Set a param the workflow declares (repeatable).")
@click.option("--runs-dir", default="runs", show_default=True, type=DIRECTORY,
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
    result = submit_run(wf.spec, wf.spec_dir, wf.source, store, params=parse_params(params),
                        run_id=run_id, runs_dir=Path(runs_dir), key_file=key_file)
    emit(run_report(result, fmt=fmt))
    sys.exit(result.exit)


@cli.command(short_help="Take phases of one role from a shared PostgreSQL store.")
@click.argument("workflow", type=FILE)
@click.option("--store", required=True, metavar="URL", envvar="ROADCHECK_STORE",
              callback=database_url,
              help="The postgresql:// URL of the shared store (default: $ROADCHECK_STORE).")
@click.option("--as", "role", envvar="ROADCHECK_ROLE", required=True, metavar="ROLE",
              help="The role this worker acts as; it takes that role's phases only.")
@click.option("--identity", metavar="ID", default=None,
              help="Who is acting (default: $ROADCHECK_IDENTITY, else the OS user); the role "
                   "guard compares this identity, never one stored in the run.")
@click.option("--runs-dir", default="runs", show_default=True, type=DIRECTORY,
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
                     report=lambda r: emit(run_report(r, fmt=fmt)),
                     lost=lambda exc: click.echo(f"note: {exc.message}", err=True))
    finally:
        signal.signal(signal.SIGTERM, before)
    sys.exit(code)


@cli.group()
def evidence() -> None:
    """Inspect stored evidence records."""


@evidence.command("verify", short_help="Verify a run's evidence chain and head.")
@click.argument("run_id", metavar="RUN")
@click.option("--runs-dir", default="runs", show_default=True, type=DIRECTORY,
              help="Directory holding one directory per run.")
@click.option("--store", "store_url", metavar="URL", default=None, callback=database_url,
              help="Read the run from this postgresql:// store instead of --runs-dir.")
@KEY_FILE_OPTION
@click.option("--witness", "witness_file", type=FILE, default=None, metavar="FILE",
              help="A head witness: a statement (roadcheck evidence witness), with "
                   "--witness-key, or a DER RFC 3161 time-stamp response to its --tsq "
                   "request, with --tsa-cert. The chain must extend the head it saw, else "
                   "'rollback'.")
@click.option("--witness-key", "witness_key_file", type=FILE, default=None, metavar="PEM",
              help="The witness's Ed25519 public key, pinning who may have signed --witness.")
@click.option("--tsa-cert", "tsa_cert_file", type=FILE, default=None, metavar="PEM",
              help="The time-stamping authority's certificate, pinning who may have signed "
                   "a --witness time-stamp response.")
@click.option("--tsa-chain", "tsa_chain_file", type=FILE, default=None, metavar="PEM",
              help="The certificates --tsa-cert chains to, up to a root (not needed when "
                   "it is self-signed).")
@FORMAT_OPTION
def evidence_verify(run_id: str, runs_dir: str, store_url: str | None, key_file: str | None,
                    witness_file: str | None, witness_key_file: str | None,
                    tsa_cert_file: str | None, tsa_chain_file: str | None,
                    fmt: str) -> None:
    """Verify RUN's evidence: exit 0 OK, 1 broken, 2 unreadable or its key is missing.

    Recomputes the hash chain, compares it with the store's anchored head and
    checks the head's MAC or signature when the run has one (a signed run verifies
    with its public key alone). Without a key it says what
    it cannot detect. With --witness, a head a witness saw (or a time-stamping
    authority stamped) must be a prefix of the chain (a store rolled back to
    before it is 'rollback', exit 1); a witness that does not verify is exit 2.
    """
    from roadcheck.evidence import load_key, verify_run
    from roadcheck.report.harness import verify_report

    if any(f is not None for f in (witness_file, witness_key_file, tsa_cert_file,
                                   tsa_chain_file)):
        witness, witness_key = _read_any_witness(witness_file, witness_key_file,
                                                 tsa_cert_file, tsa_chain_file, store_url)
        check = verify_run(runs_dir, run_id, load_key(key_file), witness=witness,
                           witness_key=witness_key)
        emit(verify_report(check, fmt=fmt))
        sys.exit(check.exit)
    if store_url is not None:
        from roadcheck.evidence.postgres import verify_pg_run

        check = verify_pg_run(store_url, run_id, load_key(key_file))
    else:
        from roadcheck.evidence.keys import EvidenceKey
        from roadcheck.guard.store import is_session, verify_session

        key = load_key(key_file) if key_file is not None else None
        if key is not None and not isinstance(key, EvidenceKey) \
                and is_session(runs_dir, run_id):  # a guard's signed log, by the public key
            from roadcheck.evidence.signing import SigningKey
            from roadcheck.guard.signed import check_signed_log

            public = key.public if isinstance(key, SigningKey) else key
            check = check_signed_log(runs_dir, run_id, [public]).check
        else:
            check = (verify_session(runs_dir, run_id, key) if is_session(runs_dir, run_id, key)
                     else verify_run(runs_dir, run_id, key if key is not None else load_key()))
    emit(verify_report(check, fmt=fmt))
    sys.exit(check.exit)


def _read_any_witness(witness_file: str | None, witness_key_file: str | None,
                      tsa_cert_file: str | None, tsa_chain_file: str | None,
                      store_url: str | None) -> tuple[Any, Any]:
    """``(witness, its pinned key)``: a verified time-stamp token (and None) or a head
    witness statement and its public key. Misused options are one line, exit 2."""
    from roadcheck.errors import InputError

    if witness_file is None or store_url is not None:
        raise InputError("--witness-key, --tsa-cert and --tsa-chain go together with a "
                         "--witness file, for a run in --runs-dir")
    from roadcheck.evidence.timestamp import is_timestamp, read_timestamp

    if is_timestamp(witness_file):
        if tsa_cert_file is None or witness_key_file is not None:
            raise InputError("--witness and --tsa-cert go together for a time-stamp "
                             "response (--witness-key is for a witness statement)",
                             path=witness_file)
        return read_timestamp(witness_file, tsa_cert_file, tsa_chain_file), None
    if witness_key_file is None or tsa_cert_file is not None or tsa_chain_file is not None:
        raise InputError("--witness and --witness-key go together for a witness statement "
                         "(--tsa-cert and --tsa-chain are for a time-stamp response)",
                         path=witness_file)
    from roadcheck.evidence.signing import load_verify_key
    from roadcheck.evidence.witness import read_witness

    return read_witness(witness_file), load_verify_key(witness_key_file)


@evidence.command("witness", short_help="Sign a statement of a run's head, as its witness.")
@click.argument("run_id", metavar="RUN")
@click.option("--runs-dir", default="runs", show_default=True, type=DIRECTORY,
              help="Directory holding one directory per run.")
@KEY_FILE_OPTION
@click.option("--key", "witness_key_file", type=FILE, default=None, metavar="PEM",
              help="The witness's Ed25519 private key (roadcheck keys new).")
@click.option("--tsq", "tsq", is_flag=True, default=False,
              help="Write an RFC 3161 time-stamp request (DER TimeStampReq) for the head "
                   "instead, for a time-stamping authority to answer.")
@click.option("-o", "--output", "output", required=True, type=FILE,
              help="Where to write the statement or request (keep the statement, or the "
                   "TSA's response, where the store's writers cannot reach).")
def evidence_witness(run_id: str, runs_dir: str, key_file: str | None,
                     witness_key_file: str | None, tsq: bool, output: str) -> None:
    """Verify RUN, then write the witness's signed statement of its head: run id, record
    count, last hash and time. 'roadcheck evidence verify RUN --witness FILE
    --witness-key PUB' later refuses a store rolled back to before that head.

    With --tsq, write instead the time-stamp request for the SHA-256 of the head
    statement (docs/security.md); a TSA's response to it is given back as
    'roadcheck evidence verify RUN --witness FILE.tsr --tsa-cert PEM'.
    """
    import msgspec

    from roadcheck._files import write_output
    from roadcheck.errors import InputError
    from roadcheck.evidence import load_key
    from roadcheck.evidence.witness import verified_head, witness_run

    if tsq == (witness_key_file is not None):
        raise InputError("give the witness's --key PEM, or --tsq for a time-stamp request")
    if tsq:
        import hashlib

        from roadcheck.evidence.timestamp import head_statement, timestamp_request

        records, last_hash = verified_head(runs_dir, run_id, load_key(key_file))
        request = timestamp_request(run_id, records, last_hash)
        write_output(output, request, what="the time-stamp request")
        digest = hashlib.sha256(head_statement(run_id, records, last_hash)).hexdigest()
        click.echo(f"time-stamp request for run {run_id}: {records} records, last "
                   f"{last_hash[:12]}, head statement sha256 {digest} -> {output}")
        return
    assert witness_key_file is not None
    statement = witness_run(runs_dir, run_id, load_key(key_file), witness_key_file)
    write_output(output, msgspec.json.encode(statement) + b"\n", what="the witness statement")
    click.echo(f"witnessed run {run_id}: {statement.records} records, last "
               f"{statement.last_hash[:12]} -> {output}")


@cli.command(short_help="Print a run's evidence trail.")
@click.argument("run_id", metavar="RUN")
@click.option("--runs-dir", default="runs", show_default=True, type=DIRECTORY,
              help="Directory holding one directory per run.")
@click.option("--html", "html_out", type=FILE, default=None,
              help="Also write a self-contained HTML page of the trail to this file.")
@click.option("--store", "store_url", metavar="URL", default=None, callback=database_url,
              help="Read the run from this postgresql:// store instead of --runs-dir.")
@KEY_FILE_OPTION
@click.option("--public-key", "public_keys", type=FILE, multiple=True, metavar="PUB",
              help="An Ed25519 public key (PEM, repeatable): every signed approval in the "
                   "trail must verify under one; a guard session given no --key-file is "
                   "checked by its signed decision log alone.")
def audit(run_id: str, runs_dir: str, html_out: str | None, store_url: str | None,
          key_file: str | None, public_keys: tuple[str, ...]) -> None:
    """Print RUN's evidence trail; exit 1 when its evidence is broken."""
    from roadcheck.evidence import load_key
    from roadcheck.harness.audit import load_trail
    from roadcheck.report.harness import audit_html, audit_text

    keys = []
    if public_keys:
        from roadcheck.evidence.signing import load_verify_key

        keys = [load_verify_key(path) for path in public_keys]
    if store_url is not None:
        from roadcheck.harness.audit import load_pg_trail

        trail = load_pg_trail(store_url, run_id, load_key(key_file), keys)
    else:
        # no --key-file: a run takes the environment's evidence key, a guard session its own
        trail = load_trail(runs_dir, run_id, load_key(key_file) if key_file is not None
                           else None, keys)
    if html_out is not None:
        from roadcheck._files import write_output

        write_output(html_out, audit_html(trail), what="the HTML page")
    emit(audit_text(trail))
    sys.exit(trail.exit)
