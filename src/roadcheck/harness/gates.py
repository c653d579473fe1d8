"""Gates: the definition-of-done of a phase, evaluated as code.

Each kind turns an artifact into a :class:`GateOutcome`. A gate that cannot run
(a missing command, a crashing callable, unreadable output) is a failed gate with
the reason in its summary, never a pass. Gates that read the artifact themselves
read it as a regular file inside ``GateContext.roots`` (see :mod:`roadcheck._files`);
command and score gates run through :func:`roadcheck._commands.run_command` with no
standard input (`/dev/null`): a gate that reads it reads end of file, never waits.
"""

from __future__ import annotations

import importlib
import math
import subprocess
import sys
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roadcheck._commands import OUTPUT_LIMIT, run_command, tail_output
from roadcheck._files import read_regular
from roadcheck.harness.model import (
    AcceptGate,
    CallableGate,
    CommandGate,
    Gate,
    SchemaGate,
    ScoreGate,
)

__all__ = ["OUTPUT_LIMIT", "GateContext", "GateOutcome", "evaluate", "run_command"]



@dataclass(frozen=True, slots=True)
class GateOutcome:
    """What a gate said: a pass flag, one-line summary, detail, exit code and output."""

    passed: bool
    kind: str
    summary: str
    detail: str = ""
    exit_code: int | None = None
    output: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The ``gate`` object of an evidence record."""
        return {"kind": self.kind, "summary": self.summary, "detail": self.detail,
                "exit_code": self.exit_code, "output": self.output}


@dataclass(frozen=True, slots=True)
class GateContext:
    """What a gate is evaluated against; ``roots`` are where the artifact may be read from."""

    artifact: Path
    run_dir: Path
    spec_dir: Path
    values: Mapping[str, str]
    env: Mapping[str, str]
    phase: str = ""
    roots: tuple[Path, ...] = ()

    def read_artifact(self) -> bytes:
        """The artifact's bytes; an ``OSError`` when it is not a regular file inside the roots."""
        return read_regular(self.artifact, self.roots or None)


def _last_line(text: str, default: str) -> str:
    for line in reversed(text.strip().splitlines()):
        if line.strip():
            return line.strip()[:300]
    return default


def _render(args: Sequence[str], values: Mapping[str, str]) -> list[str]:
    return [a.format_map(values) for a in args]


def _command(gate: CommandGate, ctx: GateContext) -> GateOutcome:
    run = run_command(_render(gate.command, ctx.values), cwd=None, env=ctx.env,
                      timeout=gate.timeout, stdin=subprocess.DEVNULL)
    if run.error is not None:
        return GateOutcome(False, "command", f"gate command {run.error}", "", run.exit_code,
                           run.output)
    if run.exit_code == 0:
        return GateOutcome(True, "command", "gate command exited 0", "", 0, run.output)
    return GateOutcome(False, "command", f"gate command exited {run.exit_code}",
                       _last_line(run.output, "(no output)"), run.exit_code, run.output)


def _schema(gate: SchemaGate, ctx: GateContext) -> GateOutcome:
    import jsonschema
    import orjson

    schema_path = Path(gate.schema_.format_map(ctx.values))
    if not schema_path.is_absolute():
        schema_path = ctx.spec_dir / schema_path
    try:
        schema = orjson.loads(read_regular(schema_path))
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
    except (OSError, orjson.JSONDecodeError, jsonschema.SchemaError) as exc:
        return GateOutcome(False, "schema", f"schema {schema_path} is unusable",
                           str(exc).splitlines()[0])
    try:
        doc = orjson.loads(ctx.read_artifact())
    except OSError as exc:
        return GateOutcome(False, "schema", "artifact is unreadable", str(exc))
    except orjson.JSONDecodeError as exc:
        return GateOutcome(False, "schema", "artifact is not JSON", str(exc))
    errors = sorted(cls(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if not errors:
        return GateOutcome(True, "schema", f"artifact satisfies {schema_path.name}")
    lines = [f"/{'/'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in errors]
    return GateOutcome(False, "schema",
                       f"artifact violates {schema_path.name}: {len(errors)} error(s)",
                       lines[0], None, tail_output("\n".join(lines)))


@contextmanager
def _on_path(directory: Path) -> Any:
    added = str(directory) not in sys.path
    if added:
        sys.path.insert(0, str(directory))
    try:
        yield
    finally:
        if added:
            sys.path.remove(str(directory))


def _callable(gate: CallableGate, ctx: GateContext) -> GateOutcome:
    module_name, _, func_name = gate.callable.partition(":")
    try:
        with _on_path(ctx.spec_dir):
            func = getattr(importlib.import_module(module_name), func_name)
        result = func(ctx.artifact, ctx)
    except Exception as exc:  # a crashing gate is a failed gate
        return GateOutcome(False, "callable", f"gate {gate.callable} raised "
                           f"{type(exc).__name__}", str(exc))
    return _from_callable(gate.callable, result)


def _from_callable(name: str, result: Any) -> GateOutcome:
    """Accept ``bool``, ``(bool, summary[, detail])``, a mapping or a :class:`GateOutcome`."""
    if isinstance(result, GateOutcome):
        return result
    if isinstance(result, Mapping):
        passed, summary, detail = result.get("passed"), result.get("summary"), result.get("detail")
    elif isinstance(result, tuple) and 1 <= len(result) <= 3:
        passed, summary, detail = (*result, None, None)[:3]
    else:
        passed, summary, detail = result, None, None
    if not isinstance(passed, bool):
        return GateOutcome(False, "callable", f"gate {name} returned no pass flag",
                           f"got {type(passed).__name__}; return True/False first")
    default = f"gate {name} {'passed' if passed else 'failed'}"
    return GateOutcome(passed, "callable", str(summary) if summary else default,
                       "" if detail is None else str(detail))


def _score(gate: ScoreGate, ctx: GateContext) -> GateOutcome:
    run = run_command(_render(gate.score, ctx.values), cwd=None, env=ctx.env,
                      timeout=gate.timeout, stdin=subprocess.DEVNULL)
    if run.error is not None or run.exit_code != 0:
        why = run.error or f"exited {run.exit_code}"
        return GateOutcome(False, "score", f"score command {why}",
                           _last_line(run.output, "(no output)"), run.exit_code, run.output)
    text = _last_line(run.stdout, "")
    try:
        value = float(text.split()[-1]) if text else math.nan
    except ValueError:
        value = math.nan
    if math.isnan(value):
        return GateOutcome(False, "score", "score command printed no number",
                           f"last line: {text!r}", 0, run.output)
    passed = value >= gate.threshold
    cmp = ">=" if passed else "<"
    return GateOutcome(passed, "score", f"score {value:g} {cmp} threshold {gate.threshold:g}",
                       "" if passed else _last_line(run.stderr, ""), 0, run.output)


def _accept(gate: AcceptGate, ctx: GateContext) -> GateOutcome:
    """Apply an accept contract to the artifact: the artifact is the claimed result."""
    from roadcheck.acceptance import load_contract, verify
    from roadcheck.errors import RoadcheckError

    contract = Path(gate.accept.format_map(ctx.values))
    if not contract.is_absolute():
        contract = ctx.spec_dir / contract
    try:
        text = ctx.read_artifact().decode("utf-8")
        result = verify(text, load_contract(contract))
    except (OSError, UnicodeDecodeError, RoadcheckError) as exc:  # cannot judge: fail closed
        return GateOutcome(False, "accept", "accept gate could not judge the artifact", str(exc))
    failed = [f"{r.check}: {r.message}" for r in result.reasons if not r.ok]
    output = "\n".join(f"{'ok' if r.ok else 'FAIL'} - {r.check}: {r.message}"
                       for r in result.reasons)
    return GateOutcome(result.accepted, "accept", f"accept contract says {result.verdict}",
                       "; ".join(failed), 0 if result.accepted else 1, output)


def evaluate(gate: Gate, ctx: GateContext) -> GateOutcome:
    """Evaluate one gate against the artifact in ``ctx``."""
    if isinstance(gate, CommandGate):
        return _command(gate, ctx)
    if isinstance(gate, SchemaGate):
        return _schema(gate, ctx)
    if isinstance(gate, CallableGate):
        return _callable(gate, ctx)
    if isinstance(gate, ScoreGate):
        return _score(gate, ctx)
    return _accept(gate, ctx)
