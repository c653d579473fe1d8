"""Replay reports: the text layout people read and the JSON document scripts read."""

from __future__ import annotations

from collections import Counter
from typing import Any

from assay.conformance.result import ReplayResult, ReplayRun
from assay.conformance.result import scalar_text as _json_scalar
from assay.report._text import dump_json, plural, sha256_footer, text_lines

__all__ = ["replay_report"]

HEADER = "assay replay: the final metric says the run arrived; the recorded road decides"
_TRANSCRIPTS = frozenset({"openai-chat", "tau-bench", "tau2"})


def _spec_line(run: ReplayRun, spec: Any) -> str:
    parts = [plural(len(spec.mandatory_checkpoints), "mandatory checkpoint"),
             plural(len(spec.handoff_contracts), "handoff contract")]
    if spec.derive:
        parts.append(plural(len(spec.derive), "derive rule"))
    return f"spec : {run.spec_source or '<in memory>'} ({', '.join(parts)})"


def _sha_line(run: ReplayRun) -> list[str]:
    return [] if run.spec_sha256 is None else [f"spec-sha256: {run.spec_sha256}"]


def _files_lines(run: ReplayRun) -> list[str]:
    per_file = Counter(r.path for r in run.results)
    lines = [f"files: {len(run.files) or len(per_file)}"]
    if any(fmt != "native" for _, fmt in run.files) or len(run.results) != len(run.files):
        lines[0] += f", {plural(len(run.results), 'trajectory', 'trajectories')}"
        for path, fmt in run.files:
            lines.append(f"input: {path} ({fmt}, "
                         f"{plural(per_file.get(path, 0), 'trajectory', 'trajectories')})")
    return lines


def _block(index: int, r: ReplayResult) -> list[str]:
    out = [f"[{index}] {r.id}"]
    if r.stats is not None:
        s = r.stats
        cps = plural(s.checkpoints, "checkpoint")
        if s.derived_checkpoints:
            cps += f" ({s.derived_checkpoints} derived)"
        if r.source in _TRANSCRIPTS:  # a chat log marks nothing irreversible; count tool calls
            acts = plural(s.actions, "tool call")
        else:
            acts = plural(s.irreversible, "irreversible action")
        out.append(f"trajectory: {plural(s.events, 'event')}, agents: "
                   f"{', '.join(s.agents) or '-'}; {plural(s.handoffs, 'handoff')}, {cps}, "
                   f"{acts}")
        extra = "".join(f"{k}={_json_scalar(v)}; " for k, v in sorted(r.meta.items()))
        out.append(f"final : task_success={_json_scalar(r.task_success)} ({extra}recorded, "
                   "printed for contrast, ignored for the verdict)")
    out.append(f"verdict : {r.verdict} ({r.headline}) exit {r.exit}")
    if r.verdict == "BLOCK":
        out.extend(f"reason : {f.code}: {f.message}" for f in r.reasons)
    else:
        out.extend(f"detail : {f.message}" for f in r.reasons)
    out.extend(f"warn : {f.code}: {f.message}" for f in r.warnings)
    out.extend(f"note : {f.message}" for f in r.notes)
    if r.verdict == "BLOCK":
        out.append(f"contrast : final metric says task_success={_json_scalar(r.task_success)} / "
                   f"trajectory says {r.headline}")
    return out


def _summary_line(c: dict[str, int]) -> str:
    warn = f" ({c['warn']} with warnings)" if c["warn"] else ""
    return (f"summary: {c['pass']} PASS{warn}, {c['block']} BLOCK, {c['error']} ERROR "
            f"-> overall exit {c['exit']}")


def _per_file(run: ReplayRun) -> list[str]:
    lines = []
    for path, _fmt in run.files:
        c = Counter(r.verdict for r in run.results if r.path == path)
        lines.append(f"file : {path}: {c['PASS']} PASS, {c['BLOCK']} BLOCK, {c['ERROR']} ERROR")
    return lines


def replay_report(run: ReplayRun, spec: Any, *, fmt: str = "text", summary_only: bool = False,
                  by_field: str | None = None) -> str:
    """Render a replay run as the text report or the JSON document."""
    if fmt == "json":
        return dump_json(run.to_dict(summary_only=summary_only, by_field=by_field))
    counts = run.counts()
    lines = [HEADER, _spec_line(run, spec), *_sha_line(run), *_files_lines(run)]
    if summary_only:
        lines.extend(_per_file(run))
    else:
        for i, r in enumerate(run.results, 1):
            lines.extend(_block(i, r))
    if by_field is not None:
        for key, g in run.by(by_field).items():
            lines.append(f"by {by_field}={key}: {g['pass']} PASS, {g['block']} BLOCK, "
                         f"{g['error']} ERROR")
    lines.append(_summary_line(counts))
    return sha256_footer(text_lines(lines))
