"""Resume-time revalidation: rebuild a current picture from evidence before acting.

Each question of the contract is one function that reads the world and returns
findings; none of them writes anything. The decision folds the findings:
``escalate`` when a person must decide, ``reconcile_first`` when an external
effect is unknown or unreconciled, ``continue`` otherwise. Only
``write_next`` writes, and only the next checkpoint.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from os import PathLike
from pathlib import Path
from typing import Any, Literal

import orjson

from roadcheck._commands import run_command
from roadcheck._files import (
    FileRefused,
    NotRegularFile,
    OutsideRoots,
    describe,
    digest_regular,
    inside,
    read_regular,
    regular_under,
)
from roadcheck.errors import EXIT_BLOCK, EXIT_PASS, InputError
from roadcheck.findings import Finding, Location, Severity
from roadcheck.reasons import Reason
from roadcheck.revalidation.checkpoint import (
    Artifact,
    Checkpoint,
    Effect,
    format_ts,
    load_checkpoint,
    parse_ts,
)

__all__ = ["QUESTIONS", "Finding", "Revalidation", "StepClass", "revalidate", "sha256_file"]

Decision = Literal["continue", "reconcile_first", "escalate"]
#: The questions, in the order they are asked and reported.
QUESTIONS = ("task", "artifacts", "effects", "allowed", "recency", "classification", "next")


def finding(question: str, code: str, message: str, severity: Severity = "ok") -> Finding:
    """One observation under one question, with its reason code (``ok`` unless graded)."""
    return Finding(code, message, Location(question=question), severity)


@dataclass(frozen=True, slots=True)
class StepClass:
    """A remaining step and the retry class it has now."""

    step: str
    retry_class: str

    def to_dict(self) -> dict[str, str]:
        """The public JSON shape of a classified step."""
        return {"step": self.step, "retry_class": self.retry_class}


@dataclass(slots=True)
class Revalidation:
    """The outcome of revalidating one checkpoint."""

    source: str
    now: datetime
    decision: Decision
    findings: list[Finding]
    remaining: list[StepClass]
    next_action: str
    next_checkpoint: str | None = None
    document: dict[str, Any] = field(default_factory=dict, repr=False)
    checkpoint_sha256: str | None = None

    @property
    def exit(self) -> int:
        """0 to continue, 1 to reconcile first or escalate."""
        return EXIT_PASS if self.decision == "continue" else EXIT_BLOCK

    def to_dict(self) -> dict[str, Any]:
        """The public JSON document of ``roadcheck revalidate --format json``."""
        return {"decision": self.decision, "exit": self.exit,
                "findings": [f.to_dict() for f in self.findings],
                "remaining": [s.to_dict() for s in self.remaining],
                "next_checkpoint": self.next_checkpoint,
                "checkpoint_sha256": self.checkpoint_sha256}


# ---------------------------------------------------------------- helpers

def sha256_file(path: Path) -> str:
    """``sha256:<hex>`` of a regular file, read in large chunks.

    A FIFO, a device or a socket raises :class:`roadcheck._files.NotRegularFile`
    (an ``OSError``) instead of blocking or reading forever.
    """
    return "sha256:" + digest_regular(path)[0]


def _tree_digest(root: Path) -> str:
    """The digest of every regular file under ``root``; anything else raises ``FileRefused``."""
    h = hashlib.sha256()
    real = os.path.realpath(root)
    for p in regular_under(root):
        digest = "sha256:" + digest_regular(p, (real,))[0]
        h.update(f"{p.relative_to(root).as_posix()}\0{digest}\n".encode())
    return "sha256:" + h.hexdigest()


def _written_relative(path: Path, base: Path) -> str | None:
    """The path as written relative to the checkpoint's folder, or None if written absolute.

    The parser joins a relative path onto ``base``; a path that does not start
    with ``base`` was written absolute and may name any file.
    """
    try:
        return os.path.normpath(path.relative_to(base))
    except ValueError:
        return None


def _leaves(path: Path, base: Path) -> bool:
    """Whether a relative path leaves the folder, through ``..`` or through a symlink."""
    rel = _written_relative(path, base)
    if rel is None:
        return False
    if rel.split(os.sep, 1)[0] == os.pardir:
        return True
    return not inside(os.path.realpath(path), [os.path.realpath(base)])


def _run(argv: Sequence[str], cwd: Path, timeout: float) -> tuple[int | None, str]:
    """Run a read-only command without a shell: (exit code or None, stdout or the failure)."""
    run = run_command(argv, cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)
    if run.error is not None:
        return None, run.error
    return run.exit_code, run.stdout


def _rel(path: Path, base: Path) -> str:
    return os.path.relpath(path, base)


def _rel_msg(exc: FileRefused, base: Path) -> str:
    """A refusal as ``<path relative to the checkpoint> <why>``."""
    return f"{_rel(Path(exc.path), base)} {exc.why}"


def _ago(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds >= 86400 and seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    if seconds >= 60:
        return f"{seconds // 60}m"
    return f"{seconds}s"


# ---------------------------------------------------------------- 1. task

_CANCELLED = {"cancelled", "canceled", "aborted"}
_FINISHED = {"done", "finished", "completed", "closed"}


def _check_task(cp: Checkpoint, now: datetime, seen: dict[str, Any]) -> Iterator[Finding]:
    if cp.task is None:
        return
    q = "task"
    path = cp.task.path
    from roadcheck._files import read_regular
    from roadcheck.documents.loader import decode

    try:
        try:
            data = read_regular(path)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None
        doc = decode(data, str(path), "task", InputError)
    except InputError as exc:
        yield finding(q, Reason.TASK_UNREADABLE,
                      f"the task file cannot be read ({exc.location_message()}); "
                      "the checkpoint cannot stand in for it", "escalate")
        return
    if not isinstance(doc, Mapping):
        yield finding(q, Reason.TASK_UNREADABLE, f"{path.name} is not an object", "escalate")
        return
    state = str(doc.get("state", "active"))
    seen["task_state"] = state
    found = False
    if state.lower() in _CANCELLED:
        found = True
        yield finding(q, Reason.TASK_CANCELLED, f"the task is {state} now", "escalate")
    elif state.lower() in _FINISHED:
        found = True
        yield finding(q, Reason.TASK_FINISHED,
                      f"the task is {state} now; nothing may be redone under it", "escalate")
    for key, label in (("deadline", "deadline"),):
        if doc.get(key) is not None:
            try:
                deadline = parse_ts(doc[key])
            except ValueError:
                found = True
                yield finding(q, Reason.TASK_UNREADABLE, f"{path.name}: {key} is not a "
                              "timestamp", "escalate")
                continue
            if deadline < now:
                found = True
                yield finding(q, Reason.TASK_DEADLINE_PASSED,
                              f"the {label} {format_ts(deadline)} has passed", "escalate")
    for key in ("instructions_updated_at", "updated_at"):
        if doc.get(key) is not None:
            try:
                changed = parse_ts(doc[key])
            except ValueError:
                continue
            if changed > cp.observed_at:
                found = True
                yield finding(q, Reason.TASK_INSTRUCTIONS_CHANGED,
                              f"{key} {format_ts(changed)} is newer than the checkpoint "
                              f"({format_ts(cp.observed_at)}); its plan may be obsolete",
                              "escalate")
            break
    attempts, limit = doc.get("attempts"), doc.get("max_attempts")
    if isinstance(attempts, int) and isinstance(limit, int) and attempts >= limit:
        found = True
        yield finding(q, Reason.TASK_ATTEMPTS_EXHAUSTED,
                      f"{attempts} of {limit} attempts used", "escalate")
    if not found:
        was = f" (checkpoint said {cp.task.state})" if cp.task.state not in (None, state) else ""
        yield finding(q, Reason.TASK_CURRENT, f"{path.name} is {state}{was}")


# ---------------------------------------------------------------- 2. artifacts

def _parses(path: Path, fmt: str) -> str | None:
    try:
        data = read_regular(path)
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if fmt == "json":
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            return f"not JSON: {exc.msg} at line {exc.lineno}"
    elif fmt == "jsonl":
        for n, line in enumerate(data.splitlines(), 1):
            if line.strip():
                try:
                    orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    return f"not JSON Lines: line {n}: {exc.msg}"
    else:
        import yaml

        try:
            yaml.safe_load(data)
        except yaml.YAMLError as exc:
            return f"not YAML: {str(exc).splitlines()[0]}"
    if not data.strip():
        return f"empty, not {fmt}"
    return None


def _artifact_problem(a: Artifact, base: Path,
                      seen: dict[str, Any]) -> tuple[str, str] | None:
    path = a.path
    outside = (Reason.ARTIFACT_OUTSIDE_ROOT,
               f"{a.name}: {_rel(path, base)} leaves the checkpoint's folder; write an "
               "absolute path if that file is meant")
    rel = _written_relative(path, base)
    if rel is not None and rel.split(os.sep, 1)[0] == os.pardir:
        return outside
    try:
        st = path.stat()
    except OSError:
        return Reason.ARTIFACT_MISSING, f"{a.name}: nothing at {path.name}"
    if not stat.S_ISDIR(st.st_mode) and not stat.S_ISREG(st.st_mode):
        return (Reason.ARTIFACT_NOT_REGULAR,
                f"{a.name}: {_rel(path, base)} is {describe(st.st_mode)}, not a regular file")
    if _leaves(path, base):  # a symlink out of the folder
        return outside
    is_dir = stat.S_ISDIR(st.st_mode)
    ex = a.expect
    if ex.min_bytes is not None and not is_dir and st.st_size < ex.min_bytes:
        return (Reason.ARTIFACT_TOO_SMALL,
                f"{a.name}: {st.st_size} bytes, expected at least {ex.min_bytes}")
    for inp in ex.newer_than:
        try:
            inp_mtime = inp.stat().st_mtime
        except OSError:
            return Reason.ARTIFACT_STALE, f"{a.name}: its input {inp.name} is missing"
        if st.st_mtime < inp_mtime:
            return (Reason.ARTIFACT_STALE,
                    f"{a.name}: older than its input {inp.name}; it was built from older inputs")
    if ex.members is not None:
        root = path if is_dir else path.parent
        try:
            n = sum(1 for _ in root.glob(ex.members.glob))
        except (OSError, ValueError, NotImplementedError) as exc:
            # a pattern the file system refuses (a name too long) counts nothing
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return (Reason.ARTIFACT_MEMBERS_MISMATCH,
                    f"{a.name}: cannot count members matching {ex.members.glob[:60]!r}: {why}")
        if n != ex.members.count:
            return (Reason.ARTIFACT_MEMBERS_MISMATCH,
                    f"{a.name}: {n} members match {ex.members.glob!r}, "
                    f"expected {ex.members.count}")
    try:
        digest = _tree_digest(path) if is_dir else sha256_file(path)
    except OutsideRoots as exc:
        return Reason.ARTIFACT_OUTSIDE_ROOT, f"{a.name}: {_rel_msg(exc, base)}"
    except NotRegularFile as exc:
        return Reason.ARTIFACT_NOT_REGULAR, f"{a.name}: {_rel_msg(exc, base)}"
    except OSError as exc:
        return Reason.ARTIFACT_MISSING, f"{a.name}: cannot read: {exc.strerror or exc}"
    seen["digest"] = digest
    seen["bytes"] = st.st_size
    if a.digest is not None and digest != a.digest:
        return (Reason.ARTIFACT_DIGEST_MISMATCH,
                f"{a.name}: sha256 on disk {digest[7:19]}... differs from the recorded "
                f"{a.digest[7:19]}...")
    if ex.format is not None and not is_dir:
        problem = _parses(path, ex.format)
        if problem is not None:
            return Reason.ARTIFACT_UNPARSEABLE, f"{a.name}: {problem}"
    return None


def _inputs_digest(paths: Sequence[Path], base: Path) -> tuple[str | None, str]:
    """The digest of the inputs, or ``None`` and why one cannot be read."""
    h = hashlib.sha256()
    for p in paths:
        try:
            h.update(f"{_rel(p, base)}\0{sha256_file(p)}\n".encode())
        except FileRefused as exc:
            return None, _rel_msg(exc, base)
        except OSError:
            return None, f"{_rel(p, base)} is missing"
    return "sha256:" + h.hexdigest(), ""


def _check_artifacts(cp: Checkpoint, seen: dict[str, Any]) -> Iterator[Finding]:
    q = "artifacts"
    if cp.inputs:
        digest, why = _inputs_digest(cp.inputs, cp.base)
        seen["inputs_digest"] = digest
        if digest is None:
            yield finding(q, Reason.INPUTS_CHANGED, f"an input listed in 'inputs' cannot be "
                          f"read: {why}", "invalid")
        elif cp.inputs_digest is not None and digest != cp.inputs_digest:
            yield finding(q, Reason.INPUTS_CHANGED,
                          "the inputs no longer match inputs_digest; outputs built from them "
                          "are stale", "invalid")
    by_name: dict[str, dict[str, Any]] = {}
    seen["artifacts"] = by_name
    for a in cp.artifacts:
        obs: dict[str, Any] = {}
        by_name[a.name] = obs
        problem = _artifact_problem(a, cp.base, obs)
        if problem is None:
            obs["valid"] = True
            checks = ["present"]
            if a.expect.min_bytes is not None:
                checks.append(f">= {a.expect.min_bytes} bytes")
            checks.append("sha256 matches" if a.digest else "sha256 recorded now")
            if a.expect.format:
                checks.append(f"parses as {a.expect.format}")
            if a.expect.members:
                checks.append(f"{a.expect.members.count} members")
            if a.expect.newer_than:
                checks.append("newer than its inputs")
            yield finding(q, Reason.ARTIFACT_VALID, f"{a.name}: {', '.join(checks)}")
        else:
            obs["valid"] = False
            obs["problem"] = problem[1]
            # a device, a FIFO or a path out of the folder is no artifact to rebuild: a person
            # must look at what is there before anything goes on
            refused = problem[0] in (Reason.ARTIFACT_NOT_REGULAR, Reason.ARTIFACT_OUTSIDE_ROOT)
            yield finding(q, problem[0], problem[1], "escalate" if refused else "invalid")


# ---------------------------------------------------------------- 3. effects

Answer = Literal["found", "not_found", "no_answer"]


def _ask_ledger(e: Effect, ledger: Path) -> tuple[Answer, str, dict[str, Any] | None]:
    keys = {k: v for k, v in (("remote_id", e.remote_id),
                              ("idempotency_key", e.idempotency_key)) if v}
    if not keys:
        return "no_answer", "no remote_id or idempotency_key to look up", None
    try:
        data = read_regular(ledger)
    except FileRefused as exc:
        return "no_answer", f"ledger {ledger.name} unreadable: it {exc.why}", None
    except OSError as exc:
        return "no_answer", f"ledger {ledger.name} unreadable: {exc.strerror or exc}", None
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            return "no_answer", f"ledger {ledger.name} line {n} is not JSON", None
        if not isinstance(rec, dict):
            continue
        if any(rec.get(k) == v for k, v in keys.items()):
            status = str(rec.get("status", "ok")).lower()
            if status in ("failed", "rejected", "error"):
                continue
            return "found", f"ledger {ledger.name} line {n}", rec
    return "not_found", f"no record in ledger {ledger.name}", None


def _ask_command(e: Effect, base: Path) -> tuple[Answer, str, dict[str, Any] | None]:
    assert e.reconcile is not None
    code, out = _run(e.reconcile, base, e.timeout)
    if code == 0:
        rec = None
        try:
            parsed = orjson.loads(out) if out.strip() else None
            rec = parsed if isinstance(parsed, dict) else None
        except orjson.JSONDecodeError:
            pass
        return "found", "the reconcile command found it", rec
    if code == 1:
        return "not_found", "the reconcile command did not find it", None
    why = out.strip() if code is None else f"exited {code}"
    return "no_answer", f"the reconcile command gave no answer ({why})", None


def _check_effects(cp: Checkpoint, seen: dict[str, Any]) -> Iterator[Finding]:
    q = "effects"
    states: dict[str, dict[str, Any]] = {}
    seen["effects"] = states
    for e in cp.effects:
        if e.ledger is not None:
            answer, how, rec = _ask_ledger(e, e.ledger)
        elif e.reconcile is not None:
            answer, how, rec = _ask_command(e, cp.base)
        else:
            states[e.name] = {"state": "unknown", "answer": "no_answer"}
            if e.state == "confirmed":
                yield finding(q, Reason.EFFECT_UNRECONCILED,
                              f"{e.name}: recorded as confirmed, but no ledger or reconcile "
                              "command lets its owner confirm it", "reconcile")
            else:
                yield finding(q, Reason.EFFECT_UNKNOWN,
                              f"{e.name}: recorded as {e.state} and no owner to ask; absence "
                              "in the local log is not proof that nothing happened", "reconcile")
            continue
        remote = e.remote_id
        if rec is not None and isinstance(rec.get("remote_id"), str):
            remote = rec["remote_id"]
        if answer == "found":
            states[e.name] = {"state": "confirmed", "answer": answer, "remote_id": remote}
            was = "" if e.state == "confirmed" else f" (local record said {e.state})"
            shown = f" as {remote}" if remote else ""
            yield finding(q, Reason.EFFECT_CONFIRMED,
                          f"{e.name}: the provider holds it{shown}: {how}{was}")
        elif answer == "not_found":
            states[e.name] = {"state": "attempted" if e.state == "attempted" else "unknown",
                              "answer": answer, "remote_id": None}
            warn = e.state == "confirmed"
            was = ("; the local 'confirmed' was wrong" if warn else "")
            yield finding(q, Reason.EFFECT_NOT_FOUND,
                          f"{e.name}: {how}; it did not happen{was}", "warn" if warn else "ok")
        else:
            states[e.name] = {"state": "unknown", "answer": answer, "remote_id": e.remote_id}
            yield finding(q, Reason.EFFECT_UNKNOWN, f"{e.name}: {how}; reconcile before any "
                          "retry", "reconcile")


# ---------------------------------------------------------------- 4. allowed

#: A recorded capability with no max_age is trusted this long.
DEFAULT_MAX_AGE = timedelta(hours=24)


def _read_number(text: str) -> float | None:
    text = text.strip()
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, dict):
        value = value.get("spent")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _check_allowed(cp: Checkpoint, now: datetime, seen: dict[str, Any]) -> Iterator[Finding]:
    q = "allowed"
    caps: dict[str, dict[str, Any]] = {}
    seen["capabilities"] = caps
    for c in cp.capabilities:
        if c.check is not None:
            code, out = _run(c.check, cp.base, c.timeout)
            if code == 0:
                caps[c.name] = {"state": "allowed", "checked_at": now}
                yield finding(q, Reason.CAPABILITY_ALLOWED, f"{c.name}: the check allows it now")
            elif code == 1:
                caps[c.name] = {"state": "denied", "checked_at": now}
                yield finding(q, Reason.CAPABILITY_LOST, f"{c.name}: the check denies it now",
                              "escalate")
            else:
                caps[c.name] = {"state": None, "checked_at": c.checked_at}
                why = out.strip() if code is None else f"exited {code}"
                yield finding(q, Reason.CAPABILITY_STALE,
                              f"{c.name}: the check gave no answer ({why})", "escalate")
            continue
        caps[c.name] = {"state": c.state, "checked_at": c.checked_at}
        if c.state == "denied":
            yield finding(q, Reason.CAPABILITY_LOST, f"{c.name}: recorded as denied", "escalate")
            continue
        max_age = c.max_age or DEFAULT_MAX_AGE
        if c.checked_at is None or now - c.checked_at > max_age:
            age = "never checked" if c.checked_at is None else \
                f"checked {_ago(now - c.checked_at)} ago"
            caps[c.name]["state"] = None
            yield finding(q, Reason.CAPABILITY_STALE,
                          f"{c.name}: {age}, older than its max_age {_ago(max_age)}; re-check "
                          "it before acting", "escalate")
        else:
            yield finding(q, Reason.CAPABILITY_ALLOWED,
                          f"{c.name}: allowed, checked {_ago(now - c.checked_at)} ago")
    budgets: dict[str, float | None] = {}
    seen["budgets"] = budgets
    for b in cp.budgets:
        spent: float | None = b.spent
        source = "recorded"
        if b.spent_file is not None:
            source = b.spent_file.name
            try:
                spent = _read_number(read_regular(b.spent_file).decode("utf-8"))
            except (OSError, UnicodeDecodeError):
                spent = None
        elif b.spent_command is not None:
            source = "spent_command"
            code, out = _run(b.spent_command, cp.base, b.timeout)
            spent = _read_number(out) if code == 0 else None
        budgets[b.name] = spent
        if spent is None:
            yield finding(q, Reason.BUDGET_UNKNOWN, f"{b.name}: cannot read what is spent "
                          f"({source})", "escalate")
        elif spent >= b.limit:
            yield finding(q, Reason.BUDGET_EXHAUSTED,
                          f"{b.name}: {spent:g} of {b.limit:g} spent", "escalate")
        else:
            yield finding(q, Reason.BUDGET_AVAILABLE,
                          f"{b.name}: {spent:g} of {b.limit:g} spent ({source})")
    active: list[str] = []
    seen["blockers"] = active
    for bl in cp.blockers:
        if bl.file is not None:
            try:
                on = bl.file.exists()
                why = f"{bl.file.name} exists"
            except OSError as exc:
                # what cannot be checked cannot clear the blocker
                on = True
                why = f"cannot tell whether {bl.file.name[:60]} exists: {exc.strerror or exc}"
        else:
            on = bl.active and (bl.until is None or now < bl.until)
            why = "recorded active" + (f" until {format_ts(bl.until)}" if bl.until else "")
        if on:
            active.append(bl.name)
            yield finding(q, Reason.BLOCKER_ACTIVE, f"{bl.name}: {why}", "escalate")
    for g in cp.date_gates:
        if g.not_before is not None and now < g.not_before:
            yield finding(q, Reason.DATE_GATE_CLOSED,
                          f"{g.name}: not before {format_ts(g.not_before)}", "escalate")
        elif g.not_after is not None and now > g.not_after:
            yield finding(q, Reason.DATE_GATE_CLOSED,
                          f"{g.name}: not after {format_ts(g.not_after)}", "escalate")


# ---------------------------------------------------------------- recency

def _check_recency(cp: Checkpoint, now: datetime, seen: dict[str, Any]) -> Iterator[Finding]:
    c = cp.cadence
    if c is None:
        return
    q = "recency"
    last = c.last_output_at
    if c.command is not None:
        code, out = _run(c.command, cp.base, c.timeout)
        last = None
        if code == 0:
            try:
                last = parse_ts(out.strip())
            except ValueError:
                last = None
        if last is None:
            yield finding(q, Reason.CADENCE_UNKNOWN, "the cadence command gave no timestamp "
                          f"({'exited ' + str(code) if code else out.strip()[:80]!s})",
                          "escalate")
            return
    assert last is not None
    seen["last_output_at"] = last
    age = now - last
    if age > c.every:
        yield finding(q, Reason.CADENCE_MISSED,
                      f"last output {format_ts(last)}, {_ago(age)} ago, exceeds the promised "
                      f"cadence of {_ago(c.every)}; scheduled work exists but is not delivering",
                      "escalate")
    else:
        yield finding(q, Reason.CADENCE_MET,
                      f"last output {_ago(age)} ago, within the cadence of {_ago(c.every)}")


# ---------------------------------------------------------------- 5. classification

def _classify(cp: Checkpoint, seen: dict[str, Any]) -> tuple[list[StepClass], list[Finding]]:
    q = "classification"
    effects = {e.name: e for e in cp.effects}
    states: dict[str, dict[str, Any]] = seen.get("effects", {})
    out: list[StepClass] = []
    findings: list[Finding] = []
    for s in cp.remaining:
        cls = s.retry_class
        why = "as recorded"
        key = s.idempotency_key
        # A step belongs to the effect it names; a step named like an effect is that
        # effect's step unless it names another one.
        link = s.effect if s.effect is not None else (s.step if s.step in effects else None)
        if link is not None:
            eff = effects[link]
            key = key or eff.idempotency_key  # the effect's own key counts for its step
            state = states.get(link, {}).get("state", "unknown")
            if state == "unknown":
                # Unknown means reconcile first: it outranks the retry class, so an
                # unsafe step waits for its owner's answer instead of an operator.
                cls, why = "reconcile_first", f"effect {link} is unknown"
            elif state == "confirmed":
                why = f"effect {link} is confirmed by its owner; do not repeat it"
        out.append(StepClass(s.step, cls))
        if cls == "unsafe_to_retry" and not key:
            findings.append(finding(q, Reason.STEP_NEEDS_OPERATOR,
                                    f"{s.step}: unsafe_to_retry with no idempotency key; it is "
                                    "never retried automatically", "escalate"))
        else:
            findings.append(finding(q, Reason.STEP_CLASSIFIED, f"{s.step}: {cls} ({why})"))
    return out, findings


# ---------------------------------------------------------------- decision

def _decide(findings: Sequence[Finding], remaining: Sequence[StepClass]) -> Decision:
    severities = {f.severity for f in findings}
    unsafe_left = any(s.retry_class == "unsafe_to_retry" for s in remaining)
    if "escalate" in severities or ("invalid" in severities and unsafe_left):
        return "escalate"
    if "reconcile" in severities:
        return "reconcile_first"
    return "continue"


def _next_action(cp: Checkpoint, decision: Decision, findings: Sequence[Finding],
                 remaining: Sequence[StepClass], seen: dict[str, Any]) -> str:
    if decision == "escalate":
        first = next((f for f in findings if f.severity in ("escalate", "invalid")), None)
        return "escalate to an operator: " + (first.message if first else "see findings")
    if decision == "reconcile_first":
        names = [n for n, s in seen.get("effects", {}).items() if s["state"] == "unknown"]
        return (f"reconcile {', '.join(names)} with the owning system before any step "
                "creates anything")
    invalid = [f.message.split(":", 1)[0] for f in findings
               if f.severity == "invalid" and f.question == "artifacts"]
    if invalid:
        then = cp.next_action or (f"run {remaining[0].step}" if remaining else "go on")
        return f"rebuild {', '.join(invalid)} with a safe step before anything else, then {then}"
    if cp.next_action:
        return cp.next_action
    if remaining:
        return f"run {remaining[0].step} ({remaining[0].retry_class})"
    return "nothing remains; close the task"


# ---------------------------------------------------------------- 6. next checkpoint

def _next_document(cp: Checkpoint, now: datetime, target: Path, seen: dict[str, Any],
                   rv: Revalidation) -> dict[str, Any]:
    base = target.resolve().parent

    def rel(p: Path) -> str:
        # a relative path never leaves the checkpoint's folder; outside it, name it absolute
        real = p.resolve()
        return _rel(real, base) if inside(real, [base]) else str(real)

    doc: dict[str, Any] = {"observed_at": format_ts(now)}
    if cp.task is not None:
        doc["task"] = {"path": rel(cp.task.path), "state": seen.get("task_state", "unknown")}
    if cp.inputs:
        doc["inputs"] = [rel(p) for p in cp.inputs]
        if seen.get("inputs_digest"):
            doc["inputs_digest"] = seen["inputs_digest"]
    if cp.artifacts:
        arts: dict[str, Any] = {}
        for a in cp.artifacts:
            obs = seen["artifacts"][a.name]
            entry: dict[str, Any] = {"path": rel(a.path),
                                     "state": "validated" if obs["valid"] else "invalid"}
            if obs["valid"] and obs.get("digest"):
                entry["digest"] = obs["digest"]
            expect: dict[str, Any] = {}
            ex = a.expect
            if ex.min_bytes is not None:
                expect["min_bytes"] = ex.min_bytes
            if ex.format is not None:
                expect["format"] = ex.format
            if ex.members is not None:
                expect["members"] = {"glob": ex.members.glob, "count": ex.members.count}
            if ex.newer_than:
                expect["newer_than"] = [rel(p) for p in ex.newer_than]
            if expect:
                entry["expect"] = expect
            arts[a.name] = entry
        doc["artifacts"] = arts
    if cp.effects:
        effs: dict[str, Any] = {}
        for e in cp.effects:
            obs = seen["effects"][e.name]
            entry = {"state": obs["state"]}
            if obs.get("remote_id"):
                entry["remote_id"] = obs["remote_id"]
            if e.idempotency_key:
                entry["idempotency_key"] = e.idempotency_key
            if e.ledger is not None:
                entry["ledger"] = rel(e.ledger)
            if e.reconcile is not None:
                entry["reconcile"] = list(e.reconcile)
            effs[e.name] = entry
        doc["external_effects"] = effs
    if cp.capabilities:
        caps: dict[str, Any] = {}
        for c in cp.capabilities:
            obs = seen["capabilities"][c.name]
            entry = {}
            if obs["state"] is not None:
                entry["state"] = obs["state"]
            if obs["checked_at"] is not None:
                entry["checked_at"] = format_ts(obs["checked_at"])
            if c.max_age is not None:
                entry["max_age"] = f"{int(c.max_age.total_seconds())}s"
            if c.check is not None:
                entry["check"] = list(c.check)
            if not entry:
                entry["state"] = "denied"
            caps[c.name] = entry
        doc["capabilities"] = caps
    if cp.budgets:
        buds: dict[str, Any] = {}
        for b in cp.budgets:
            entry = {"limit": b.limit}
            if b.spent_file is not None:
                entry["spent_file"] = rel(b.spent_file)
            elif b.spent_command is not None:
                entry["spent_command"] = list(b.spent_command)
            else:
                entry["spent"] = b.spent
            buds[b.name] = entry
        doc["budgets"] = buds
    if cp.blockers:
        doc["blockers"] = [
            {"name": b.name, **({"file": rel(b.file)} if b.file is not None else
                                {"active": b.name in seen.get("blockers", [])})}
            for b in cp.blockers]
    if cp.date_gates:
        doc["date_gates"] = [{"name": g.name,
                              **({"not_before": format_ts(g.not_before)} if g.not_before else {}),
                              **({"not_after": format_ts(g.not_after)} if g.not_after else {})}
                             for g in cp.date_gates]
    if cp.cadence is not None:
        cad: dict[str, Any] = {"every": f"{int(cp.cadence.every.total_seconds())}s"}
        if cp.cadence.command is not None:
            cad["command"] = list(cp.cadence.command)
        elif seen.get("last_output_at") is not None:
            cad["last_output_at"] = format_ts(seen["last_output_at"])
        doc["cadence"] = cad
    steps = {s.step: s for s in cp.remaining}
    doc["remaining"] = []
    for sc in rv.remaining:
        src = steps[sc.step]
        item: dict[str, Any] = {"step": sc.step, "retry_class": sc.retry_class}
        if src.effect:
            item["effect"] = src.effect
        if src.idempotency_key:
            item["idempotency_key"] = src.idempotency_key
        doc["remaining"].append(item)
    doc["next_action"] = rv.next_action
    doc["decision"] = rv.decision
    doc["findings"] = [f.to_dict() for f in rv.findings]
    return doc


def _write(doc: dict[str, Any], target: Path) -> None:
    if target.suffix == ".json":
        data = orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
    else:
        import yaml

        data = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100).encode()
    from roadcheck._files import write_output

    write_output(target, data, what="the next checkpoint")


# ---------------------------------------------------------------- entry point

def revalidate(checkpoint: str | PathLike[str] | Checkpoint, *,
               now: datetime | str | None = None,
               write_next: str | PathLike[str] | None = None) -> Revalidation:
    """Revalidate a checkpoint against the world as it is now.

    Reads the task, artifacts, effect owners, capabilities, budgets and cadence;
    writes nothing except, with ``write_next``, the next checkpoint. A bad
    document raises :class:`roadcheck.SpecError`.
    """
    cp = checkpoint if isinstance(checkpoint, Checkpoint) else load_checkpoint(checkpoint)
    at = datetime.now(UTC).replace(microsecond=0) if now is None else parse_ts(now)
    seen: dict[str, Any] = {}
    findings: list[Finding] = []
    findings.extend(_check_task(cp, at, seen))
    findings.extend(_check_artifacts(cp, seen))
    findings.extend(_check_effects(cp, seen))
    findings.extend(_check_allowed(cp, at, seen))
    findings.extend(_check_recency(cp, at, seen))
    remaining, classified = _classify(cp, seen)
    findings.extend(classified)
    decision = _decide(findings, remaining)
    action = _next_action(cp, decision, findings, remaining, seen)
    rv = Revalidation(cp.source, at, decision, findings, remaining, action,
                      checkpoint_sha256=cp.sha256)
    if write_next is not None:
        target = Path(write_next)
        rv.next_checkpoint = str(write_next)
        rv.findings.append(finding("next", Reason.CHECKPOINT_WRITTEN,
                                   f"next checkpoint written to {target.name}: {action}"))
        rv.document = _next_document(cp, at, target, seen, rv)
        _write(rv.document, target)
    return rv
