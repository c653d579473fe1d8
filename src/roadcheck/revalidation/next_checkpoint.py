"""The next checkpoint: what revalidation found, written as a checkpoint document that
the next resume reads. Paths are written relative to the new document's folder when
they lie inside it, absolute otherwise. This is the only thing revalidation writes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from roadcheck._files import inside
from roadcheck.documents.checkpoint import ArtifactDoc
from roadcheck.revalidation._world import rel
from roadcheck.revalidation.checkpoint import Checkpoint, format_ts
from roadcheck.revalidation.questions import Answers
from roadcheck.revalidation.result import Revalidation

__all__ = ["next_document", "write"]

#: a path as the next document writes it
Rel = Callable[[Path], str]


def _expect(a: ArtifactDoc, cp: Checkpoint, rel_to: Rel) -> dict[str, Any]:
    ex = cp.expect(a)
    expect: dict[str, Any] = {}
    if ex.min_bytes is not None:
        expect["min_bytes"] = ex.min_bytes
    if ex.format is not None:
        expect["format"] = ex.format
    if ex.members is not None:
        expect["members"] = {"glob": ex.members.glob, "count": ex.members.count}
    if ex.newer_than:
        expect["newer_than"] = [rel_to(p) for p in cp.paths(ex.newer_than)]
    return expect


def _artifact(name: str, a: ArtifactDoc, cp: Checkpoint, answers: Answers,
              rel_to: Rel) -> dict[str, Any]:
    seen = answers.artifacts.artifacts[name]
    entry: dict[str, Any] = {"path": rel_to(cp.path(a.path)),
                             "state": "validated" if seen.valid else "invalid"}
    if seen.valid and seen.digest:
        entry["digest"] = seen.digest
    expect = _expect(a, cp, rel_to)
    if expect:
        entry["expect"] = expect
    return entry


def _effects(cp: Checkpoint, answers: Answers, rel_to: Rel) -> dict[str, Any]:
    effects: dict[str, Any] = {}
    for name, e in cp.doc.external_effects.items():
        seen = answers.effects.effects[name]
        entry: dict[str, Any] = {"state": seen.state}
        if seen.remote_id:
            entry["remote_id"] = seen.remote_id
        if e.idempotency_key:
            entry["idempotency_key"] = e.idempotency_key
        if e.ledger is not None:
            entry["ledger"] = rel_to(cp.path(e.ledger))
        if e.reconcile is not None:
            entry["reconcile"] = list(e.reconcile)
        effects[name] = entry
    return effects


def _capabilities(cp: Checkpoint, answers: Answers) -> dict[str, Any]:
    caps: dict[str, Any] = {}
    for name, c in cp.doc.capabilities.items():
        seen = answers.allowed.capabilities[name]
        entry: dict[str, Any] = {}
        if seen.state is not None:
            entry["state"] = seen.state
        if seen.checked_at is not None:
            entry["checked_at"] = format_ts(seen.checked_at)
        max_age = cp.duration(c.max_age)
        if max_age is not None:
            entry["max_age"] = f"{int(max_age.total_seconds())}s"
        if c.check is not None:
            entry["check"] = list(c.check)
        if not entry:
            entry["state"] = "denied"
        caps[name] = entry
    return caps


def _budgets(cp: Checkpoint, rel_to: Rel) -> dict[str, Any]:
    budgets: dict[str, Any] = {}
    for name, b in cp.doc.budgets.items():
        entry: dict[str, Any] = {"limit": b.limit}
        if b.spent_file is not None:
            entry["spent_file"] = rel_to(cp.path(b.spent_file))
        elif b.spent_command is not None:
            entry["spent_command"] = list(b.spent_command)
        else:
            entry["spent"] = b.spent
        budgets[name] = entry
    return budgets


def _gates(cp: Checkpoint, answers: Answers, rel_to: Rel) -> dict[str, Any]:
    """The blockers and date gates, as the next resume must read them."""
    doc: dict[str, Any] = {}
    if cp.doc.blockers:
        doc["blockers"] = [
            {"name": b.name, **({"file": rel_to(cp.path(b.file))} if b.file is not None else
                                {"active": b.name in answers.allowed.blockers})}
            for b in cp.doc.blockers]
    if cp.doc.date_gates:
        gates = []
        for g in cp.doc.date_gates:
            not_before, not_after = cp.time(g.not_before), cp.time(g.not_after)
            gates.append({"name": g.name,
                          **({"not_before": format_ts(not_before)} if not_before else {}),
                          **({"not_after": format_ts(not_after)} if not_after else {})})
        doc["date_gates"] = gates
    return doc


def _cadence(cp: Checkpoint, answers: Answers) -> dict[str, Any]:
    c = cp.doc.cadence
    assert c is not None
    every = cp.duration(c.every)
    assert every is not None  # a required field
    cadence: dict[str, Any] = {"every": f"{int(every.total_seconds())}s"}
    if c.command is not None:
        cadence["command"] = list(c.command)
    elif answers.recency.last_output_at is not None:
        cadence["last_output_at"] = format_ts(answers.recency.last_output_at)
    return cadence


def _remaining(cp: Checkpoint, rv: Revalidation) -> list[dict[str, Any]]:
    steps = {s.step: s for s in cp.doc.remaining}
    out = []
    for sc in rv.remaining:
        src = steps[sc.step]
        item: dict[str, Any] = {"step": sc.step, "retry_class": sc.retry_class}
        if src.effect:
            item["effect"] = src.effect
        if src.idempotency_key:
            item["idempotency_key"] = src.idempotency_key
        out.append(item)
    return out


def _world(cp: Checkpoint, answers: Answers, rel_to: Rel) -> dict[str, Any]:
    """The sections of the document that record the world as it was found now."""
    doc: dict[str, Any] = {}
    if cp.doc.task is not None:
        doc["task"] = {"path": rel_to(cp.path(cp.doc.task.path)),
                       "state": answers.task.state if answers.task.state is not None
                       else "unknown"}
    if cp.inputs:
        doc["inputs"] = [rel_to(p) for p in cp.inputs]
        if answers.artifacts.inputs_digest:
            doc["inputs_digest"] = answers.artifacts.inputs_digest
    if cp.doc.artifacts:
        doc["artifacts"] = {name: _artifact(name, a, cp, answers, rel_to)
                            for name, a in cp.doc.artifacts.items()}
    if cp.doc.external_effects:
        doc["external_effects"] = _effects(cp, answers, rel_to)
    if cp.doc.capabilities:
        doc["capabilities"] = _capabilities(cp, answers)
    if cp.doc.budgets:
        doc["budgets"] = _budgets(cp, rel_to)
    doc.update(_gates(cp, answers, rel_to))
    if cp.doc.cadence is not None:
        doc["cadence"] = _cadence(cp, answers)
    return doc


def next_document(cp: Checkpoint, now: datetime, target: Path, answers: Answers,
                  rv: Revalidation) -> dict[str, Any]:
    """The next checkpoint's document, for the file at ``target``."""
    base = target.resolve().parent

    def rel_to(p: Path) -> str:
        # a relative path never leaves the checkpoint's folder; outside it, name it absolute
        real = p.resolve()
        return rel(real, base) if inside(real, [base]) else str(real)

    return {"observed_at": format_ts(now), **_world(cp, answers, rel_to),
            "remaining": _remaining(cp, rv), "next_action": rv.next_action,
            "decision": rv.decision, "findings": [f.to_dict() for f in rv.findings]}


def write(doc: dict[str, Any], target: Path) -> None:
    """Write the document as JSON (a ``.json`` target) or YAML, atomically."""
    if target.suffix == ".json":
        data = orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
    else:
        import yaml

        data = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100).encode()
    from roadcheck._files import write_output

    write_output(target, data, what="the next checkpoint")
