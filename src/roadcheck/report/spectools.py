"""The reports of the tools that test a spec: ``spec check``, ``diff`` and ``explain``,
each as text or one JSON document (sorted keys), byte for byte the same for the same
inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roadcheck.report._text import dump_json, plural, text_lines

if TYPE_CHECKING:
    from roadcheck.conformance.diff import SpecDiff
    from roadcheck.conformance.explain import Explanation
    from roadcheck.conformance.speccheck import SpecCheck

__all__ = ["diff_report", "explain_report", "spec_check_report"]


def _where(loc: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(spec)"


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def spec_check_report(check: SpecCheck, *, fmt: str = "text") -> str:
    """``roadcheck spec check``'s report."""
    if fmt == "json":
        return dump_json(_check_doc(check))
    spec = check.spec
    lines = [f"spec: {spec.source}"]
    if spec.sha256 is not None:
        lines.append(f"spec-sha256: {spec.sha256}")
    cov = check.coverage
    if cov is not None:
        lines.append(f"trajectories: {cov.trajectories} in {plural(len(check.files), 'file')}")
        rows = [["rule", "", "reached", "runs", "matched", "failed", "failed runs"]]
        rows.extend([_where(r.probe.loc), r.probe.label, str(r.reached), str(r.runs),
                     str(r.matched), str(r.failed), str(r.failed_runs)] for r in cov.rules)
        lines.append("coverage:")
        lines.extend(_table(rows, {2, 3, 4, 5, 6}))
    if check.examples:
        lines.append("examples:")
        for e in check.examples:
            want = e.verdict + (f" {sorted(set(e.reasons))}" if e.reasons is not None else "")
            got = e.got_verdict + f" {list(e.got_reasons)}"
            mark = "ok  " if e.ok else "FAIL"
            lines.append(f"  {mark}  examples.{e.index} {e.trajectory}: expected {want}, "
                         f"got {got}")
    if check.problems:
        lines.append("problems:")
        for p in check.problems:
            at = f"{spec.source}:{p.line}: " if p.line is not None and spec.source else ""
            field = f"{_where(p.loc)}: " if p.loc else ""
            lines.append(f"  {p.level}[{p.code}]: {at}{field}{p.message}")
    errors = sum(p.level == "error" for p in check.problems)
    warnings = len(check.problems) - errors
    failed = sum(not e.ok for e in check.examples)
    word = "FAIL" if check.exit else "OK"
    lines.append(f"result: {word} ({plural(errors, 'error')}, {plural(warnings, 'warning')}, "
                 f"{plural(failed, 'failed example')}) (exit {check.exit})")
    return text_lines(lines)


def _check_doc(check: SpecCheck) -> dict[str, Any]:
    doc: dict[str, Any] = {"spec": check.spec.source, "spec_sha256": check.spec.sha256,
                           "exit": check.exit,
                           "problems": [p.to_dict() for p in check.problems],
                           "examples": [e.to_dict() for e in check.examples]}
    cov = check.coverage
    if cov is not None:
        doc["trajectories"] = cov.trajectories
        doc["files"] = list(check.files)
        doc["coverage"] = [{"field": _where(r.probe.loc), "rule": r.probe.label,
                            "reached": r.reached, "runs": r.runs, "matched": r.matched,
                            "failed": r.failed, "failed_runs": r.failed_runs, "live": r.live}
                           for r in cov.rules]
        doc["unguarded_irreversible"] = {k: cov.unguarded[k] for k in sorted(cov.unguarded)}
    return doc


def diff_report(diff: SpecDiff, *, fmt: str = "text") -> str:
    """``roadcheck diff``'s report: the changes grouped, then the totals."""
    if fmt == "json":
        return dump_json(diff.to_dict())
    lines = [f"old spec: {diff.old.source}", f"new spec: {diff.new.source}",
             f"trajectories: {diff.trajectories}"]
    for group, title in (("blocked", "newly blocked"), ("allowed", "newly allowed (widening)"),
                         ("reasons", "changed reasons"), ("errors", "could not judge")):
        changes = [c for c in diff.changes if c.group == group]
        if not changes:
            continue
        lines.append(f"{title}: {len(changes)}")
        for c in changes:
            lines.append(f"  {c.id}: {c.old_verdict} -> {c.new_verdict}")
            lines.extend(f"    - {code}: {msg}" for code, msg in c.gone)
            lines.extend(f"    + {code}: {msg}" for code, msg in c.added)
    counts = diff.counts()
    lines.append(f"result: {counts['blocked']} newly blocked, {counts['allowed']} newly "
                 f"allowed, {counts['reasons']} changed reasons, {counts['same']} unchanged"
                 f" (exit {diff.exit})")
    return text_lines(lines)


def explain_report(ex: Explanation, *, fmt: str = "text") -> str:
    """``roadcheck explain``'s report: the event, then each rule that looked at it."""
    if fmt == "json":
        return dump_json(ex.to_dict())
    lines = [f"event seq {ex.seq} of {ex.trajectory}: {ex.summary}"]
    if not ex.rules:
        lines.append("no rule of the spec looks at this event")
    for r in ex.rules:
        lines.append(f"{_where(r.loc)} ({r.label}): {r.outcome}")
        for s in r.selectors:
            lines.append(f"  {s.role} {s.shown}: {'matched' if s.matched else 'did not match'}")
            lines.extend(f"    {'ok  ' if ok else 'FAIL'} {text}" for ok, text in s.conditions)
        lines.extend(f"  {d}" for d in r.details)
    return text_lines(lines)
