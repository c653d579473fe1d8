"""Every input surface of roadcheck, its valid seed documents, and the oracle of one case.

A *case* is one mutation of one seed document, run in-process through the CLI
(click's ``CliRunner``) the way a user would run it. Its outcome is judged by
two oracles:

(a) **no internal error**: the command ends with an exit code from the
    contract, or with an :class:`~roadcheck.errors.RoadcheckError`; any other
    exception, exit 70 or a hang is an internal error, recorded by its
    signature (exception type and the innermost frame inside ``src/roadcheck``);
(b) **no false pass**: when the seed's own verdict is not lenient (BLOCK,
    REJECTED, hard-stop, escalate or reconcile first: exit 1) and the mutated
    document is *invalid* by the reference check of its format
    (``reference.py``: strict parse, then the documented shape), the exit must
    not be 0. For evidence-store files, "invalid" means the stored content is
    no longer what was written (every record is hash-chained) or the file no
    longer has its documented shape.

A mutation that leaves a valid document (an optional key deleted, a list cut
after a complete entry) may legitimately pass and is never counted.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import sqlite3
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .mutate import Mutation, Unparseable, mutate, parse, text_mutation
from .reference import EXTERNAL, check_doc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DATA = ROOT / "tests" / "data"
SEEDS = DATA / "fuzz" / "seeds"
REGRESSIONS = DATA / "fuzz_regressions"
NOW = "2026-08-10T15:00:00Z"
#: Seconds one case may take before it counts as a hang.
CASE_TIMEOUT = 20

__all__ = ["SURFACES", "Case", "Outcome", "Seed", "Workspace", "all_seeds", "seeds"]


@dataclass(frozen=True)
class Seed:
    """One valid document of a surface and what it is run with."""

    surface: str
    name: str
    path: Path
    fmt: str                      # json | jsonl | yaml | bytes
    kind: str                     # the reference check (reference.check_doc) or a store kind
    argv: tuple[str, ...] = ()    # the CLI call; "{doc}" is the mutated file
    partner: str = ""             # for checkpoints: the directory the document lives in


@dataclass(frozen=True)
class Case:
    """A seed and the mutation made to it."""

    seed: Seed
    mutation: Mutation


@dataclass
class Outcome:
    """What one case did, and what the oracles say about it."""

    surface: str
    seed: str
    op: str
    detail: str
    invalid: str | None           # why the mutated document is invalid; None when valid
    exits: dict[str, int | None] = field(default_factory=dict)
    internal: str | None = None   # the signature of an internal error
    false_pass: str | None = None  # the command that passed on an invalid document


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def _replay(surface: str, spec: Path, docs: list[Path], fmt: str, kind: str) -> list[Seed]:
    return [Seed(surface, f"{d.name}", d, fmt if fmt else _fmt(d), kind,
                 ("replay", str(spec), "{doc}")) for d in docs]


def _fmt(p: Path) -> str:
    return {".json": "json", ".jsonl": "jsonl"}.get(p.suffix, "yaml")


def _seeds() -> dict[str, list[Seed]]:
    fw = DATA / "frameworks"
    fspec = fw / "spec.yaml"
    spec = EXAMPLES / "spec.json"
    airline = EXAMPLES / "tau" / "airline.yaml"
    out: dict[str, list[Seed]] = {}
    out["spec"] = [
        Seed("spec", "spec.json+fixture_skipped", spec, "json", "spec",
             ("replay", "{doc}", str(EXAMPLES / "fixture_skipped.jsonl"))),
        Seed("spec", "spec.json+fixture_broken_contract", spec, "json", "spec",
             ("replay", "{doc}", str(EXAMPLES / "fixture_broken_contract.jsonl"))),
        Seed("spec", "airline.yaml+unconfirmed_call", airline, "yaml", "spec",
             ("replay", "{doc}", str(DATA / "transcripts" / "unconfirmed_call.json"))),
        Seed("spec", "airline.yaml+voided_confirmation", airline, "yaml", "spec",
             ("replay", "{doc}", str(DATA / "transcripts" / "voided_confirmation.json"))),
        Seed("spec", "retail.yaml+user_side_call", EXAMPLES / "tau" / "retail.yaml", "yaml",
             "spec", ("replay", "{doc}", str(DATA / "transcripts" / "user_side_call.json"))),
        Seed("spec", "frameworks-spec.yaml+atif_no_approval", fspec, "yaml", "spec",
             ("replay", "{doc}", str(fw / "atif_no_approval.json"))),
        Seed("spec", "frameworks-spec.yaml+otel_intern_approval", fspec, "yaml", "spec",
             ("replay", "{doc}", str(SEEDS / "otel_intern_approval.json"))),
    ]
    out["native"] = _replay("native", spec, sorted(EXAMPLES.glob("fixture_*.jsonl")),
                            "jsonl", "native")
    out["transcript"] = _replay("transcript", airline,
                                sorted((DATA / "transcripts").glob("*.json")), "json",
                                "transcript")
    out["otel"] = _replay("otel", fspec, [*sorted(fw.glob("otel_*")),
                                          *sorted(SEEDS.glob("otel_*"))], "", "otel")
    out["atif"] = _replay("atif", fspec, sorted(fw.glob("atif_*")), "json", "atif")
    out["openai-agents"] = _replay("openai-agents", fspec,
                                   [*sorted(fw.glob("openai_agents_*")),
                                    *sorted(SEEDS.glob("openai_agents_*"))], "jsonl",
                                   "openai-agents")
    acc = EXAMPLES / "accept"
    tacc = DATA / "accept"
    triples = [  # contract, result, trace: each judged REJECTED except the last
        (acc / "contract.yaml", acc / "result.json", acc / "trace_failed_send.json"),
        (acc / "contract.yaml", acc / "result.json", acc / "trace_wrong_customer.json"),
        (tacc / "contract.json", tacc / "result_sent.json", tacc / "trace_other_customer.json"),
        (tacc / "contract.yaml", tacc / "result_sent.json", tacc / "trace_errored.json"),
        (acc / "contract.yaml", acc / "result.json", acc / "trace.jsonl"),
    ]
    for surface, idx in (("contract", 0), ("result", 1), ("trace", 2)):
        out[surface] = []
        for triple in triples:
            parts = [str(p) for p in triple]
            parts[idx] = "{doc}"
            out[surface].append(Seed(
                surface, "+".join(p.name for p in triple), triple[idx], _fmt(triple[idx]),
                surface, ("accept", "-c", parts[0], "-r", parts[1], "-t", parts[2])))
    out["workflow"] = [
        Seed("workflow", "workflow_hardstop.yaml", SEEDS / "workflow_hardstop.yaml", "yaml",
             "workflow", ("run", "{doc}", "--as", "writer", "--identity", "fuzz",
                          "--runs-dir", "{work}/runs", "--run-id", "r")),
        Seed("workflow", "doc_pipeline/workflow.yaml (load)",
             EXAMPLES / "doc_pipeline" / "workflow.yaml", "yaml", "workflow", ("load",)),
    ]
    out["checkpoint"] = [
        Seed("checkpoint", "chain/checkpoint.yaml", EXAMPLES / "resume" / "chain" /
             "checkpoint.yaml", "yaml", "checkpoint", ("revalidate", "{doc}", "--now", NOW),
             "chain"),
        Seed("checkpoint", "video/checkpoint.yaml", EXAMPLES / "resume" / "video" /
             "checkpoint.yaml", "yaml", "checkpoint", ("revalidate", "{doc}", "--now", NOW),
             "video"),
        Seed("checkpoint", "video_over_budget.yaml", SEEDS / "video_over_budget.yaml", "yaml",
             "checkpoint", ("revalidate", "{doc}", "--now", NOW), "video"),
    ]
    store = [("jsonl", "evidence.jsonl", "jsonl", "records"),
             ("jsonl", "run.json", "json", "run"),
             ("jsonl", "attempts.jsonl", "jsonl", "records"),
             ("sqlite", "evidence.sqlite", "bytes", "sqlite"),
             ("sqlite", "run.json", "json", "run")]
    out["store"] = [Seed("store", f"{kind} {name}", Path(name), fmt, ref, (kind,))
                    for kind, name, fmt, ref in store]
    return out


SURFACES: dict[str, list[Seed]] = _seeds()


def seeds(surface: str) -> list[Seed]:
    """The seeds of one surface."""
    return SURFACES[surface]


# ---------------------------------------------------------------- the workspace


class _Hang(BaseException):
    """A case ran longer than :data:`CASE_TIMEOUT` (a BaseException: nothing swallows it)."""


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def alarm(signum: int, frame: Any) -> None:
        raise _Hang()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def _fixed_clock() -> Iterator[None]:
    """The engine's clock ticks one second per reading from a fixed instant."""
    from unittest import mock

    from roadcheck.harness import engine

    ticks = iter(range(1_000_000))

    def clock() -> str:
        n = next(ticks)
        return f"2026-08-10T14:{n // 60 % 60:02d}:{n % 60:02d}.000Z"

    with mock.patch.object(engine, "now", clock):
        yield


def _signature(exc: BaseException, tb: Any) -> str:
    frames = traceback.extract_tb(tb)
    mine = [f for f in frames if f"{os.sep}roadcheck{os.sep}" in f.filename
            and f"{os.sep}tests{os.sep}" not in f.filename]
    where = "?"
    if mine:
        f = mine[-1]
        name = f.filename
        cut = name.rfind(f"src{os.sep}roadcheck{os.sep}")
        where = f"{name[cut:] if cut >= 0 else name}:{f.lineno}"
    return f"{type(exc).__name__} at {where}"


class Workspace:
    """A scratch directory for one process: copies of the resume examples and seed runs.

    Evidence-store seeds are real runs of ``workflow_hardstop.yaml``, made once
    here (one per store): phase ``draft`` passed, ``check`` failed, a hard-stop.
    They are made on a fixed clock with paths relative to the workspace, so their
    files are the same bytes in every session and every case is the same case.
    """

    def __init__(self, root: Path) -> None:
        from click.testing import CliRunner

        self.root = root
        self.cwd = root / "cwd"
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.runner = CliRunner()
        for name in ("chain", "video"):
            shutil.copytree(EXAMPLES / "resume" / name, root / name, dirs_exist_ok=True)
        self.workflow = root / "workflow_hardstop.yaml"
        shutil.copyfile(SEEDS / "workflow_hardstop.yaml", self.workflow)
        self.runs = root / "seed-runs"
        for store in ("jsonl", "sqlite"):
            if not (self.runs / store).exists():
                with _fixed_clock():
                    # relative to self.cwd: run.json names the workflow the same way everywhere
                    code, _ = self.cli(("run", "../workflow_hardstop.yaml", "--as", "writer",
                                        "--identity", "fuzz", "--runs-dir", "../seed-runs",
                                        "--run-id", store, "--store", store))
                assert code == 1, f"the {store} seed run should end in a hard-stop, got {code}"
        self.counter = 0
        self._seed_data: dict[tuple[str, str], bytes] = {}
        self._parsed: dict[tuple[str, str], Any] = {}
        self.baseline: dict[tuple[str, str], tuple[int | None, str | None]] = {}

    def cli(self, args: tuple[str, ...]) -> tuple[int | None, str | None]:
        """Run one roadcheck command in-process: (exit code, internal-error signature)."""
        from roadcheck.cli import cli

        try:
            # a mutated producer may write relative paths: keep them in the scratch directory
            with _deadline(CASE_TIMEOUT), contextlib.chdir(self.cwd):
                result = self.runner.invoke(cli, list(args), catch_exceptions=True)
        except _Hang:
            return None, f"hang over {CASE_TIMEOUT}s in {args[0]}"
        exc = result.exception
        if exc is not None and not isinstance(exc, SystemExit):
            assert result.exc_info is not None
            return 70, _signature(exc, result.exc_info[2])
        if result.exit_code == 70 or result.exit_code not in (0, 1, 2, 3):
            return result.exit_code, f"exit {result.exit_code}: {result.output.strip()[:80]}"
        return result.exit_code, None

    def load_workflow(self, path: Path) -> tuple[int | None, str | None]:
        """The library call behind every ``roadcheck run``: load the workflow document."""
        from roadcheck.errors import RoadcheckError
        from roadcheck.harness import Workflow

        try:
            with _deadline(CASE_TIMEOUT):
                Workflow.load(str(path))
        except _Hang:
            return None, f"hang over {CASE_TIMEOUT}s in Workflow.load"
        except RoadcheckError:
            return 2, None
        except Exception as exc:  # the oracle: anything else is an internal error
            return 70, _signature(exc, exc.__traceback__)
        return 0, None

    def seed_bytes(self, seed: Seed) -> bytes:
        """The seed document's bytes (for a store seed, the file of the seed run)."""
        key = (seed.surface, seed.name)
        if key not in self._seed_data:
            path = self.runs / seed.argv[0] / seed.path if seed.surface == "store" else seed.path
            self._seed_data[key] = path.read_bytes()
        return self._seed_data[key]

    def seed_tree(self, seed: Seed) -> Any:
        """The parsed seed document."""
        key = (seed.surface, seed.name)
        if key not in self._parsed:
            self._parsed[key] = parse(self.seed_bytes(seed), seed.fmt)
        return self._parsed[key]

    # ------------------------------------------------------------ judging

    def invalid(self, seed: Seed, data: bytes) -> str | None:
        """Why ``data`` is not a valid document of the seed's kind (``None``: it is valid)."""
        if seed.kind == "sqlite":
            return _sqlite_changed(self.seed_bytes(seed), data)
        try:
            doc = parse(data, seed.fmt)
        except Unparseable as exc:
            return f"unparseable: {exc}"[:200]
        if seed.kind == "records":
            return None if doc == self.seed_tree(seed) else "a hash-chained record changed"
        if seed.kind == "run":
            # the head holds the digest of run.json: any change of its content is tampering
            return _check_run_json(doc) or (None if doc == self.seed_tree(seed)
                                             else "run.json changed")
        return check_doc(seed.kind, doc, self.seed_tree(seed) if seed.kind in EXTERNAL
                         else None)

    def strict(self, seed: Seed) -> bool:
        """True when the unmutated seed is valid and its verdict is not lenient (exit 1)."""
        exits, internal = self._baseline(seed)
        return internal is None and exits == 1 and self.invalid(seed, self.seed_bytes(seed)) \
            is None

    def _baseline(self, seed: Seed) -> tuple[int | None, str | None]:
        key = (seed.surface, seed.name)
        if key not in self.baseline:
            out = self.run(seed, self.seed_bytes(seed))
            primary = out.exits.get("resume", next(iter(out.exits.values())))
            self.baseline[key] = (primary, out.internal)
        return self.baseline[key]

    def run(self, seed: Seed, data: bytes) -> Outcome:
        """Run the seed's command(s) on ``data`` in place of the seed document."""
        self.counter += 1
        n = self.counter
        out = Outcome(seed.surface, seed.name, "", "", None)
        if seed.surface == "store":
            return self._run_store(seed, data, n, out)
        if seed.surface == "checkpoint":
            target = self.root / seed.partner / f"mutated-{os.getpid()}-{n}.yaml"
        else:
            target = self.root / "cases" / f"{n}{seed.path.suffix or '.doc'}"
            target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        work = self.root / "work" / str(n)
        try:
            if seed.argv == ("load",):
                code, internal = self.load_workflow(target)
            else:
                args = tuple(a.replace("{doc}", str(target)).replace("{work}", str(work))
                             for a in seed.argv)
                code, internal = self.cli(args)
            out.exits[seed.argv[0]] = code
            out.internal = internal
        finally:
            target.unlink(missing_ok=True)
            shutil.rmtree(work, ignore_errors=True)
        return out

    def _run_store(self, seed: Seed, data: bytes, n: int, out: Outcome) -> Outcome:
        store = seed.argv[0]
        runs = self.root / "store-cases" / str(n)
        shutil.copytree(self.runs / store, runs / store)
        try:
            (runs / store / seed.path).write_bytes(data)
            base = ("--runs-dir", str(runs))
            for name, args in (("verify", ("evidence", "verify", store, *base)),
                               ("audit", ("audit", store, *base)),
                               ("resume", ("run", str(self.workflow), "--as", "writer",
                                           "--identity", "fuzz", "--resume", store, *base))):
                code, internal = self.cli(args)
                out.exits[name] = code
                if internal and not out.internal:
                    out.internal = f"{name}: {internal}"
        finally:
            shutil.rmtree(runs, ignore_errors=True)
        return out

    def judge(self, case: Case) -> Outcome:
        """Run one case and apply both oracles."""
        seed, m = case.seed, case.mutation
        out = self.run(seed, m.data)
        out.op, out.detail = m.op, m.detail
        out.invalid = self.invalid(seed, m.data)
        if out.invalid is None or not self.strict(seed):
            return out
        if seed.surface == "store":
            # verify and audit vouch for the evidence files only; resume acts on them all
            judged = ["resume"] + (["verify", "audit"] if seed.kind in ("records", "sqlite")
                                   and seed.path.name != "run.json" else [])
            for name in judged:
                if out.exits.get(name) == 0:
                    out.false_pass = name
                    break
        elif next(iter(out.exits.values())) == 0:
            out.false_pass = seed.argv[0]
        return out

    def case(self, seed: Seed, rng: random.Random) -> Case:
        """A mutation of ``seed`` drawn from ``rng``."""
        data = self.seed_bytes(seed)
        if seed.fmt == "bytes":
            for _ in range(20):
                done = text_mutation(rng, data)
                if done is not None and done[0] != data:
                    return Case(seed, Mutation(*done))
            return Case(seed, Mutation(data[:100], "truncate_byte", "kept 100 bytes"))
        return Case(seed, mutate(rng, data, seed.fmt, lambda: self.seed_tree(seed)))


def _check_run_json(doc: Any) -> str | None:
    from . import reference as r

    try:
        r.obj({"run_id": r.text, "workflow": r.text, "spec": r.either(r.text, r.null),
               "store": r.one_of("jsonl", "sqlite"), "params": r.mapof(r.anytext),
               "gated": r.flag, "created_at": r.timestamp,
               "auth": r.one_of("none", "hmac-sha256"),
               "key_id": r.either(r.text, r.null)})(doc, "run.json")
        if (doc["auth"] == "none") != (doc["key_id"] is None):
            return "run.json.key_id: a key id exactly when the run is keyed"
    except r._Bad as exc:
        return str(exc)
    return None


def _sqlite_rows(data: bytes, scratch: Path) -> list[Any]:
    scratch.write_bytes(data)
    con = sqlite3.connect(scratch)
    try:
        if con.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            raise sqlite3.DatabaseError("integrity_check failed")
        tables = [t for (t,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return [(t, con.execute(f'SELECT * FROM "{t}" ORDER BY rowid').fetchall())
                for t in tables]
    finally:
        con.close()


_SQLITE_SEEN: dict[bytes, list[Any]] = {}


def _sqlite_changed(seed: bytes, data: bytes) -> str | None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        if seed not in _SQLITE_SEEN:
            _SQLITE_SEEN[seed] = _sqlite_rows(seed, Path(tmp) / "seed.sqlite")
        try:
            rows = _sqlite_rows(data, Path(tmp) / "case.sqlite")
        except (sqlite3.Error, UnicodeDecodeError, ValueError) as exc:
            return f"sqlite: {type(exc).__name__}"
    return None if rows == _SQLITE_SEEN[seed] else "a stored record changed"


def all_seeds() -> list[Seed]:
    """Every seed of every surface, in a fixed order."""
    return [s for surface in SURFACES.values() for s in surface]


Factory = Callable[[Seed, random.Random], Case]
