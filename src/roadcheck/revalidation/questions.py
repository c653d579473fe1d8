"""The questions of revalidation, each a function that reads the world and returns a
typed answer: its findings, and what it observed that the decision and the next
checkpoint need. None of them writes anything.

The order is the report's: the task, the artifacts (and the inputs), the external
effects (asked of the system that owns them), what is allowed now (capabilities,
budgets, blockers, date gates), and the recency of the promised cadence.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import orjson

from roadcheck._files import FileRefused, NotRegularFile, OutsideRoots, describe, read_regular
from roadcheck.documents.checkpoint import ArtifactDoc, BudgetDoc, CapabilityDoc, EffectDoc
from roadcheck.errors import InputError
from roadcheck.findings import Finding
from roadcheck.reasons import Reason
from roadcheck.revalidation._world import (
    ago,
    leaves,
    parses,
    read_number,
    rel,
    rel_msg,
    run,
    sha256_file,
    tree_digest,
    written_relative,
)
from roadcheck.revalidation.checkpoint import Checkpoint, format_ts, parse_ts
from roadcheck.revalidation.result import finding

__all__ = [
    "DEFAULT_MAX_AGE",
    "AllowedAnswer",
    "Answers",
    "ArtifactSeen",
    "ArtifactsAnswer",
    "CapabilitySeen",
    "EffectSeen",
    "EffectsAnswer",
    "RecencyAnswer",
    "TaskAnswer",
    "ask",
]

#: What the owner of an effect answered: it holds it, it does not, or no answer.
Answer = Literal["found", "not_found", "no_answer"]
#: A recorded capability with no max_age is trusted this long.
DEFAULT_MAX_AGE = timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class TaskAnswer:
    """The task file read again: its state now (None when it could not be read)."""

    findings: tuple[Finding, ...] = ()
    state: str | None = None


@dataclass(frozen=True, slots=True)
class ArtifactSeen:
    """One artifact checked on disk: valid or not, its digest now, the problem found."""

    valid: bool
    digest: str | None = None
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class ArtifactsAnswer:
    """The inputs' digest now (None when unlisted or unreadable) and each artifact."""

    findings: tuple[Finding, ...]
    inputs_digest: str | None
    artifacts: Mapping[str, ArtifactSeen]


@dataclass(frozen=True, slots=True)
class EffectSeen:
    """One external effect as its owner answered: its state now, and its remote id."""

    state: str
    answer: Answer
    remote_id: str | None = None


@dataclass(frozen=True, slots=True)
class EffectsAnswer:
    findings: tuple[Finding, ...]
    effects: Mapping[str, EffectSeen]


@dataclass(frozen=True, slots=True)
class CapabilitySeen:
    """A capability now: allowed, denied, or None when it must be checked again."""

    state: str | None
    checked_at: datetime | None


@dataclass(frozen=True, slots=True)
class AllowedAnswer:
    """Capabilities, what each budget has spent (None: unreadable), active blockers."""

    findings: tuple[Finding, ...]
    capabilities: Mapping[str, CapabilitySeen]
    budgets: Mapping[str, float | None]
    blockers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RecencyAnswer:
    """When the last output of the promised cadence was made, where it could be read."""

    findings: tuple[Finding, ...] = ()
    last_output_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Answers:
    """Every question's answer, in the order they are asked."""

    task: TaskAnswer
    artifacts: ArtifactsAnswer
    effects: EffectsAnswer
    allowed: AllowedAnswer
    recency: RecencyAnswer

    @property
    def findings(self) -> list[Finding]:
        """The findings of all the questions, in the report's order."""
        return [*self.task.findings, *self.artifacts.findings, *self.effects.findings,
                *self.allowed.findings, *self.recency.findings]


def ask(cp: Checkpoint, now: datetime) -> Answers:
    """Ask every question of the checkpoint, reading the world as it is at ``now``."""
    return Answers(task=ask_task(cp, now), artifacts=ask_artifacts(cp),
                   effects=ask_effects(cp), allowed=ask_allowed(cp, now),
                   recency=ask_recency(cp, now))


# ---------------------------------------------------------------- 1. task

_CANCELLED = {"cancelled", "canceled", "aborted"}
_FINISHED = {"done", "finished", "completed", "closed"}


def _read_task(path: Path) -> Mapping[str, Any] | Finding:
    """The task document, or the finding that says why it cannot stand."""
    from roadcheck.documents.loader import decode

    try:
        try:
            data = read_regular(path)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None
        doc = decode(data, str(path), "task", InputError)
    except InputError as exc:
        return finding("task", Reason.TASK_UNREADABLE,
                       f"the task file cannot be read ({exc.location_message()}); "
                       "the checkpoint cannot stand in for it", "escalate")
    if not isinstance(doc, Mapping):
        return finding("task", Reason.TASK_UNREADABLE, f"{path.name} is not an object",
                       "escalate")
    return doc


def _task_state(state: str) -> list[Finding]:
    if state.lower() in _CANCELLED:
        return [finding("task", Reason.TASK_CANCELLED, f"the task is {state} now", "escalate")]
    if state.lower() in _FINISHED:
        return [finding("task", Reason.TASK_FINISHED,
                        f"the task is {state} now; nothing may be redone under it", "escalate")]
    return []


def _task_deadline(doc: Mapping[str, Any], name: str, now: datetime) -> list[Finding]:
    if doc.get("deadline") is None:
        return []
    try:
        deadline = parse_ts(doc["deadline"])
    except ValueError:
        return [finding("task", Reason.TASK_UNREADABLE, f"{name}: deadline is not a timestamp",
                        "escalate")]
    if deadline < now:
        return [finding("task", Reason.TASK_DEADLINE_PASSED,
                        f"the deadline {format_ts(deadline)} has passed", "escalate")]
    return []


def _task_instructions(doc: Mapping[str, Any], observed_at: datetime) -> list[Finding]:
    """The first of the two update times the task gives, against the checkpoint's time."""
    for key in ("instructions_updated_at", "updated_at"):
        if doc.get(key) is None:
            continue
        try:
            changed = parse_ts(doc[key])
        except ValueError:
            continue
        if changed > observed_at:
            return [finding("task", Reason.TASK_INSTRUCTIONS_CHANGED,
                            f"{key} {format_ts(changed)} is newer than the checkpoint "
                            f"({format_ts(observed_at)}); its plan may be obsolete", "escalate")]
        return []
    return []


def _task_attempts(doc: Mapping[str, Any]) -> list[Finding]:
    attempts, limit = doc.get("attempts"), doc.get("max_attempts")
    if isinstance(attempts, int) and isinstance(limit, int) and attempts >= limit:
        return [finding("task", Reason.TASK_ATTEMPTS_EXHAUSTED,
                        f"{attempts} of {limit} attempts used", "escalate")]
    return []


def ask_task(cp: Checkpoint, now: datetime) -> TaskAnswer:
    """Is the task still active, unexpired, unchanged, with attempts left?"""
    task = cp.doc.task
    if task is None:
        return TaskAnswer()
    path = cp.path(task.path)
    doc = _read_task(path)
    if isinstance(doc, Finding):
        return TaskAnswer((doc,))
    state = str(doc.get("state", "active"))
    found = [*_task_state(state), *_task_deadline(doc, path.name, now),
             *_task_instructions(doc, cp.observed_at), *_task_attempts(doc)]
    if not found:
        was = f" (checkpoint said {task.state})" if task.state not in (None, state) else ""
        found = [finding("task", Reason.TASK_CURRENT, f"{path.name} is {state}{was}")]
    return TaskAnswer(tuple(found), state)


# ---------------------------------------------------------------- 2. artifacts

#: a problem an artifact has: its reason code and the message
Problem = tuple[str, str]


def _place_problem(name: str, path: Path, base: Path,
                   st: os.stat_result | None) -> Problem | None:
    """Whether the artifact is where it may be, and a file or a directory."""
    outside = (Reason.ARTIFACT_OUTSIDE_ROOT,
               f"{name}: {rel(path, base)} leaves the checkpoint's folder; write an "
               "absolute path if that file is meant")
    written = written_relative(path, base)
    if written is not None and written.split(os.sep, 1)[0] == os.pardir:
        return outside
    if st is None:
        return Reason.ARTIFACT_MISSING, f"{name}: nothing at {path.name}"
    if not stat.S_ISDIR(st.st_mode) and not stat.S_ISREG(st.st_mode):
        return (Reason.ARTIFACT_NOT_REGULAR,
                f"{name}: {rel(path, base)} is {describe(st.st_mode)}, not a regular file")
    if leaves(path, base):  # a symlink out of the folder
        return outside
    return None


def _members_problem(name: str, a: ArtifactDoc, path: Path, is_dir: bool) -> Problem | None:
    members = Checkpoint.expect(a).members
    if members is None:
        return None
    root = path if is_dir else path.parent
    try:
        n = sum(1 for _ in root.glob(members.glob))
    except (OSError, ValueError, NotImplementedError) as exc:
        # a pattern the file system refuses (a name too long) counts nothing
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return (Reason.ARTIFACT_MEMBERS_MISMATCH,
                f"{name}: cannot count members matching {members.glob[:60]!r}: {why}")
    if n != members.count:
        return (Reason.ARTIFACT_MEMBERS_MISMATCH,
                f"{name}: {n} members match {members.glob!r}, expected {members.count}")
    return None


def _expect_problem(name: str, a: ArtifactDoc, path: Path, cp: Checkpoint,
                    st: os.stat_result) -> Problem | None:
    """What the checkpoint expects of the artifact: a size, newer than its inputs, members."""
    is_dir = stat.S_ISDIR(st.st_mode)
    ex = cp.expect(a)
    if ex.min_bytes is not None and not is_dir and st.st_size < ex.min_bytes:
        return (Reason.ARTIFACT_TOO_SMALL,
                f"{name}: {st.st_size} bytes, expected at least {ex.min_bytes}")
    for inp in cp.paths(ex.newer_than):
        try:
            inp_mtime = inp.stat().st_mtime
        except OSError:
            return Reason.ARTIFACT_STALE, f"{name}: its input {inp.name} is missing"
        if st.st_mtime < inp_mtime:
            return (Reason.ARTIFACT_STALE,
                    f"{name}: older than its input {inp.name}; it was built from older inputs")
    return _members_problem(name, a, path, is_dir)


def _digest(name: str, path: Path, base: Path, is_dir: bool) -> str | Problem:
    """The artifact's digest now, or the problem met while reading it."""
    try:
        return tree_digest(path) if is_dir else sha256_file(path)
    except OutsideRoots as exc:
        return Reason.ARTIFACT_OUTSIDE_ROOT, f"{name}: {rel_msg(exc, base)}"
    except NotRegularFile as exc:
        return Reason.ARTIFACT_NOT_REGULAR, f"{name}: {rel_msg(exc, base)}"
    except OSError as exc:
        return Reason.ARTIFACT_MISSING, f"{name}: cannot read: {exc.strerror or exc}"


def _content_problem(name: str, a: ArtifactDoc, path: Path, digest: str,
                     is_dir: bool) -> Problem | None:
    """The digest against the recorded one, then the declared format."""
    if a.digest is not None and digest != a.digest:
        return (Reason.ARTIFACT_DIGEST_MISMATCH,
                f"{name}: sha256 on disk {digest[7:19]}... differs from the recorded "
                f"{a.digest[7:19]}...")
    fmt = Checkpoint.expect(a).format
    if fmt is not None and not is_dir:
        problem = parses(path, fmt)
        if problem is not None:
            return Reason.ARTIFACT_UNPARSEABLE, f"{name}: {problem}"
    return None


def check_artifact(name: str, a: ArtifactDoc,
                   cp: Checkpoint) -> tuple[Problem | None, str | None]:
    """The artifact's first problem (None when valid), and its digest when it was read."""
    path, base = cp.path(a.path), cp.base
    try:
        st: os.stat_result | None = path.stat()
    except OSError:
        st = None
    problem = _place_problem(name, path, base, st)
    if problem is not None or st is None:
        return problem, None
    problem = _expect_problem(name, a, path, cp, st)
    if problem is not None:
        return problem, None
    is_dir = stat.S_ISDIR(st.st_mode)
    digest = _digest(name, path, base, is_dir)
    if not isinstance(digest, str):
        return digest, None
    return _content_problem(name, a, path, digest, is_dir), digest


def _inputs_digest(paths: tuple[Path, ...], base: Path) -> tuple[str | None, str]:
    """The digest of the inputs, or ``None`` and why one cannot be read."""
    import hashlib

    h = hashlib.sha256()
    for p in paths:
        try:
            h.update(f"{rel(p, base)}\0{sha256_file(p)}\n".encode())
        except FileRefused as exc:
            return None, rel_msg(exc, base)
        except OSError:
            return None, f"{rel(p, base)} is missing"
    return "sha256:" + h.hexdigest(), ""


def _inputs(cp: Checkpoint) -> tuple[str | None, list[Finding]]:
    if not cp.inputs:
        return None, []
    digest, why = _inputs_digest(cp.inputs, cp.base)
    if digest is None:
        return None, [finding("artifacts", Reason.INPUTS_CHANGED, "an input listed in 'inputs' "
                              f"cannot be read: {why}", "invalid")]
    if cp.doc.inputs_digest is not None and digest != cp.doc.inputs_digest:
        return digest, [finding("artifacts", Reason.INPUTS_CHANGED,
                                "the inputs no longer match inputs_digest; outputs built from "
                                "them are stale", "invalid")]
    return digest, []


def _valid_message(name: str, a: ArtifactDoc) -> str:
    ex = Checkpoint.expect(a)
    checks = ["present"]
    if ex.min_bytes is not None:
        checks.append(f">= {ex.min_bytes} bytes")
    checks.append("sha256 matches" if a.digest else "sha256 recorded now")
    if ex.format:
        checks.append(f"parses as {ex.format}")
    if ex.members:
        checks.append(f"{ex.members.count} members")
    if ex.newer_than:
        checks.append("newer than its inputs")
    return f"{name}: {', '.join(checks)}"


def ask_artifacts(cp: Checkpoint) -> ArtifactsAnswer:
    """Do the inputs still match, and is each artifact present, whole and as recorded?"""
    inputs_digest, found = _inputs(cp)
    seen: dict[str, ArtifactSeen] = {}
    for name, a in cp.doc.artifacts.items():
        problem, digest = check_artifact(name, a, cp)
        if problem is None:
            seen[name] = ArtifactSeen(True, digest)
            found.append(finding("artifacts", Reason.ARTIFACT_VALID, _valid_message(name, a)))
            continue
        seen[name] = ArtifactSeen(False, digest, problem[1])
        # a device, a FIFO or a path out of the folder is no artifact to rebuild: a person
        # must look at what is there before anything goes on
        refused = problem[0] in (Reason.ARTIFACT_NOT_REGULAR, Reason.ARTIFACT_OUTSIDE_ROOT)
        found.append(finding("artifacts", problem[0], problem[1],
                             "escalate" if refused else "invalid"))
    return ArtifactsAnswer(tuple(found), inputs_digest, seen)


# ---------------------------------------------------------------- 3. effects

def _ask_ledger(e: EffectDoc, ledger: Path) -> tuple[Answer, str, dict[str, Any] | None]:
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
        if not isinstance(rec, dict) or not any(rec.get(k) == v for k, v in keys.items()):
            continue
        if str(rec.get("status", "ok")).lower() in ("failed", "rejected", "error"):
            continue
        return "found", f"ledger {ledger.name} line {n}", rec
    return "not_found", f"no record in ledger {ledger.name}", None


def _ask_command(e: EffectDoc, base: Path) -> tuple[Answer, str, dict[str, Any] | None]:
    assert e.reconcile is not None
    code, out = run(e.reconcile, base, e.timeout)
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


def _ownerless(name: str, e: EffectDoc) -> tuple[EffectSeen, Finding]:
    """An effect with no ledger and no reconcile command: nobody to ask."""
    seen = EffectSeen("unknown", "no_answer")
    if e.state == "confirmed":
        return seen, finding("effects", Reason.EFFECT_UNRECONCILED,
                             f"{name}: recorded as confirmed, but no ledger or reconcile "
                             "command lets its owner confirm it", "reconcile")
    return seen, finding("effects", Reason.EFFECT_UNKNOWN,
                         f"{name}: recorded as {e.state} and no owner to ask; absence "
                         "in the local log is not proof that nothing happened", "reconcile")


def _answered(name: str, e: EffectDoc, answer: Answer, how: str,
              rec: dict[str, Any] | None) -> tuple[EffectSeen, Finding]:
    """What the owner's answer makes of the effect."""
    if answer == "found":
        remote = e.remote_id
        if rec is not None and isinstance(rec.get("remote_id"), str):
            remote = rec["remote_id"]
        was = "" if e.state == "confirmed" else f" (local record said {e.state})"
        shown = f" as {remote}" if remote else ""
        return (EffectSeen("confirmed", answer, remote),
                finding("effects", Reason.EFFECT_CONFIRMED,
                        f"{name}: the provider holds it{shown}: {how}{was}"))
    if answer == "not_found":
        warn = e.state == "confirmed"
        was = "; the local 'confirmed' was wrong" if warn else ""
        return (EffectSeen("attempted" if e.state == "attempted" else "unknown", answer, None),
                finding("effects", Reason.EFFECT_NOT_FOUND,
                        f"{name}: {how}; it did not happen{was}", "warn" if warn else "ok"))
    return (EffectSeen("unknown", answer, e.remote_id),
            finding("effects", Reason.EFFECT_UNKNOWN,
                    f"{name}: {how}; reconcile before any retry", "reconcile"))


def ask_effects(cp: Checkpoint) -> EffectsAnswer:
    """What does the system that owns each external effect say happened?"""
    seen: dict[str, EffectSeen] = {}
    found: list[Finding] = []
    for name, e in cp.doc.external_effects.items():
        if e.ledger is not None:
            seen[name], one = _answered(name, e, *_ask_ledger(e, cp.path(e.ledger)))
        elif e.reconcile is not None:
            seen[name], one = _answered(name, e, *_ask_command(e, cp.base))
        else:
            seen[name], one = _ownerless(name, e)
        found.append(one)
    return EffectsAnswer(tuple(found), seen)


# ---------------------------------------------------------------- 4. allowed

def _checked_capability(name: str, c: CapabilityDoc, cp: Checkpoint,
                        now: datetime) -> tuple[CapabilitySeen, Finding]:
    """A capability with a check command: the command decides, now."""
    assert c.check is not None
    code, out = run(c.check, cp.base, c.timeout)
    if code == 0:
        return (CapabilitySeen("allowed", now),
                finding("allowed", Reason.CAPABILITY_ALLOWED, f"{name}: the check allows it now"))
    if code == 1:
        return (CapabilitySeen("denied", now),
                finding("allowed", Reason.CAPABILITY_LOST, f"{name}: the check denies it now",
                        "escalate"))
    why = out.strip() if code is None else f"exited {code}"
    return (CapabilitySeen(None, cp.time(c.checked_at)),
            finding("allowed", Reason.CAPABILITY_STALE,
                    f"{name}: the check gave no answer ({why})", "escalate"))


def _recorded_capability(name: str, c: CapabilityDoc,
                         now: datetime) -> tuple[CapabilitySeen, Finding]:
    """A capability as recorded: trusted while younger than its max_age."""
    checked_at = Checkpoint.time(c.checked_at)
    if c.state == "denied":
        return (CapabilitySeen(c.state, checked_at),
                finding("allowed", Reason.CAPABILITY_LOST, f"{name}: recorded as denied",
                        "escalate"))
    max_age = Checkpoint.duration(c.max_age) or DEFAULT_MAX_AGE
    if checked_at is None or now - checked_at > max_age:
        age = ("never checked" if checked_at is None
               else f"checked {ago(now - checked_at)} ago")
        return (CapabilitySeen(None, checked_at),
                finding("allowed", Reason.CAPABILITY_STALE,
                        f"{name}: {age}, older than its max_age {ago(max_age)}; re-check "
                        "it before acting", "escalate"))
    return (CapabilitySeen(c.state, checked_at),
            finding("allowed", Reason.CAPABILITY_ALLOWED,
                    f"{name}: allowed, checked {ago(now - checked_at)} ago"))


def _spent(b: BudgetDoc, cp: Checkpoint) -> tuple[float | None, str]:
    """What a budget has spent (None: it cannot be read), and where that was read."""
    if b.spent_file is not None:
        spent_file = cp.path(b.spent_file)
        try:
            return read_number(read_regular(spent_file).decode("utf-8")), spent_file.name
        except (OSError, UnicodeDecodeError):
            return None, spent_file.name
    if b.spent_command is not None:
        code, out = run(b.spent_command, cp.base, b.timeout)
        return (read_number(out) if code == 0 else None), "spent_command"
    return b.spent, "recorded"


def _budget_finding(name: str, b: BudgetDoc, spent: float | None, source: str) -> Finding:
    if spent is None:
        return finding("allowed", Reason.BUDGET_UNKNOWN,
                       f"{name}: cannot read what is spent ({source})", "escalate")
    if spent >= b.limit:
        return finding("allowed", Reason.BUDGET_EXHAUSTED,
                       f"{name}: {spent:g} of {b.limit:g} spent", "escalate")
    return finding("allowed", Reason.BUDGET_AVAILABLE,
                   f"{name}: {spent:g} of {b.limit:g} spent ({source})")


def _blockers(cp: Checkpoint, now: datetime) -> tuple[list[str], list[Finding]]:
    active: list[str] = []
    found: list[Finding] = []
    for bl in cp.doc.blockers:
        if bl.file is not None:
            file = cp.path(bl.file)
            try:
                on = file.exists()
                why = f"{file.name} exists"
            except OSError as exc:
                # what cannot be checked cannot clear the blocker
                on = True
                why = f"cannot tell whether {file.name[:60]} exists: {exc.strerror or exc}"
        else:
            until = cp.time(bl.until)
            on = bl.active and (until is None or now < until)
            why = "recorded active" + (f" until {format_ts(until)}" if until else "")
        if on:
            active.append(bl.name)
            found.append(finding("allowed", Reason.BLOCKER_ACTIVE, f"{bl.name}: {why}",
                                 "escalate"))
    return active, found


def _date_gates(cp: Checkpoint, now: datetime) -> list[Finding]:
    found = []
    for g in cp.doc.date_gates:
        not_before, not_after = cp.time(g.not_before), cp.time(g.not_after)
        if not_before is not None and now < not_before:
            found.append(finding("allowed", Reason.DATE_GATE_CLOSED,
                                 f"{g.name}: not before {format_ts(not_before)}", "escalate"))
        elif not_after is not None and now > not_after:
            found.append(finding("allowed", Reason.DATE_GATE_CLOSED,
                                 f"{g.name}: not after {format_ts(not_after)}", "escalate"))
    return found


def ask_allowed(cp: Checkpoint, now: datetime) -> AllowedAnswer:
    """Is each capability still held, each budget unspent, no blocker or date gate closed?"""
    found: list[Finding] = []
    caps: dict[str, CapabilitySeen] = {}
    for name, c in cp.doc.capabilities.items():
        caps[name], one = (_checked_capability(name, c, cp, now) if c.check is not None
                           else _recorded_capability(name, c, now))
        found.append(one)
    budgets: dict[str, float | None] = {}
    for name, b in cp.doc.budgets.items():
        spent, source = _spent(b, cp)
        budgets[name] = spent
        found.append(_budget_finding(name, b, spent, source))
    active, blocked = _blockers(cp, now)
    return AllowedAnswer((*found, *blocked, *_date_gates(cp, now)), caps, budgets, tuple(active))


# ---------------------------------------------------------------- 5. recency

def ask_recency(cp: Checkpoint, now: datetime) -> RecencyAnswer:
    """Is the promised cadence still met: is the scheduled work delivering?"""
    c = cp.doc.cadence
    if c is None:
        return RecencyAnswer()
    every = cp.duration(c.every)
    assert every is not None  # a required field
    last = cp.time(c.last_output_at)
    if c.command is not None:
        code, out = run(c.command, cp.base, c.timeout)
        last = None
        if code == 0:
            try:
                last = parse_ts(out.strip())
            except ValueError:
                last = None
        if last is None:
            return RecencyAnswer((finding(
                "recency", Reason.CADENCE_UNKNOWN, "the cadence command gave no timestamp "
                f"({'exited ' + str(code) if code else out.strip()[:80]!s})", "escalate"),))
    assert last is not None
    age = now - last
    if age > every:
        return RecencyAnswer((finding(
            "recency", Reason.CADENCE_MISSED,
            f"last output {format_ts(last)}, {ago(age)} ago, exceeds the promised cadence of "
            f"{ago(every)}; scheduled work exists but is not delivering", "escalate"),), last)
    return RecencyAnswer((finding(
        "recency", Reason.CADENCE_MET,
        f"last output {ago(age)} ago, within the cadence of {ago(every)}"),), last)
