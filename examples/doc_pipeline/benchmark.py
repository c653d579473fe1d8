"""The doc pipeline benchmark: the same producers, gated and ungated, on a seeded corpus.

Six short documents (two clean, four with one seeded fault each) go through
normalize -> summarize -> review (another role, another identity) -> publish.

Gated, every phase is advanced by the harness only on a passing gate with a
durable evidence record. Ungated, the same producers run with every gate
skipped, and whatever comes out is published. The benchmark reports two facts:

1. across the gated runs, no phase advanced without a passing, evidence-backed
   gate (a passing record in an intact hash chain whose artifact digest matches
   the file on disk);
2. the broken documents the ungated chain published, and the phase at which the
   gated runs stopped each of them.

Run ``python examples/doc_pipeline/benchmark.py`` to print the facts and write
a self-contained HTML report (exit 1 when a fact fails); ``pytest -m
benchmark`` asserts both facts from the same :func:`run_benchmark`.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import roadcheck
from roadcheck.harness import GateContext, Workflow, evaluate
from roadcheck.harness.audit import load_trail
from roadcheck.report._html import esc, page

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
WORKFLOW = HERE / "workflow.yaml"
#: Who holds each role: two identities, so the review is never self-review.
IDENTITIES = {"writer": "writer-agent", "reviewer": "reviewer-agent"}


@dataclass
class DocOutcome:
    """One document's journey, gated and ungated."""

    doc: str
    gated_status: str
    stopped_at: str | None
    advances: int
    unbacked: list[str]
    ungated_published: bool
    ungated_broken_at: str | None
    diagnostic: str


@dataclass
class BenchmarkResult:
    """The two facts, and the per-document rows behind them."""

    docs: list[DocOutcome] = field(default_factory=list)

    @property
    def gated_advances(self) -> int:
        """Phase transitions made by the gated runs."""
        return sum(d.advances for d in self.docs)

    @property
    def unbacked_advances(self) -> int:
        """Gated advances without a passing, evidence-backed gate (the invariant: 0)."""
        return sum(len(d.unbacked) for d in self.docs)

    @property
    def broken_published_ungated(self) -> list[DocOutcome]:
        """Documents the ungated chain published although a gate fails on its artifacts."""
        return [d for d in self.docs if d.ungated_published and d.ungated_broken_at]

    @property
    def stopped_by_phase(self) -> dict[str, int]:
        """Of those, how many the gated runs stopped at each phase."""
        out: dict[str, int] = {}
        for d in self.broken_published_ungated:
            if d.stopped_at is not None:
                out[d.stopped_at] = out.get(d.stopped_at, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        """The facts as one JSON-able document."""
        return {"gated_advances": self.gated_advances,
                "unbacked_advances": self.unbacked_advances,
                "broken_published_ungated": len(self.broken_published_ungated),
                "stopped_by_phase": self.stopped_by_phase,
                "docs": [d.__dict__ for d in self.docs]}


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _gated(wf: Workflow, doc: Path, runs: Path) -> roadcheck.RunResult:
    """Run one document gated, handing the run to whichever role it waits for."""
    result = wf.run(role="writer", identity=IDENTITIES["writer"], runs_dir=runs,
                    params={"doc": str(doc)}, run_id=f"gated-{doc.stem}")
    while result.status == "paused" and result.waiting_for is not None:
        role = result.waiting_for
        result = wf.run(role=role, identity=IDENTITIES[role], runs_dir=runs,
                        resume=result.run_id)
    return result


def _unbacked(result: roadcheck.RunResult, runs: Path) -> tuple[int, list[str]]:
    """Count the phases the gated run advanced past, and list those without backing evidence."""
    trail = load_trail(runs, result.run_id)
    passing = {r["phase"]: r for r in trail.records if r["verdict"] == "pass"}
    advanced = [p.name for p in result.phases if p.status == "passed"]
    missing = []
    for name in advanced:
        rec = passing.get(name)
        if rec is None or not trail.check.ok:
            missing.append(name)
            continue
        on_disk = _sha256(Path(result.run_dir) / rec["artifact"]["path"])
        if on_disk != rec["artifact"]["sha256"]:
            missing.append(name)
    return len(advanced), missing


def _ungated(wf: Workflow, doc: Path, runs: Path) -> tuple[bool, str | None]:
    """Run the producers with gates skipped; then ask each gate, after the fact, what shipped."""
    result = wf.run(role="writer", identity=IDENTITIES["writer"], runs_dir=runs,
                    params={"doc": str(doc)}, run_id=f"ungated-{doc.stem}", gated=False)
    run_dir = Path(result.run_dir)
    published = (run_dir / "published.md").is_file()
    values = {"run_dir": str(run_dir), "python": sys.executable, "spec_dir": str(HERE),
              "doc": str(doc)}
    for phase in wf.spec.phases:
        artifact = run_dir / phase.artifact
        ctx = GateContext(artifact, run_dir, HERE, {**values, "artifact": str(artifact),
                                                    "phase": phase.name, "input": ""},
                          {}, phase.name)
        if not evaluate(phase.gate, ctx).passed:
            return published, phase.name
    return published, None


def run_benchmark(workdir: str | Path) -> BenchmarkResult:
    """Run every corpus document gated and ungated under ``workdir``; return the facts."""
    runs = Path(workdir)
    wf = Workflow.load(WORKFLOW)
    out = BenchmarkResult()
    for doc in sorted(CORPUS.glob("*.txt")):
        gated = _gated(wf, doc, runs / "gated")
        advances, unbacked = _unbacked(gated, runs / "gated")
        stopped = next((p.name for p in gated.phases if p.status == "failed"), None)
        published, broken_at = _ungated(wf, doc, runs / "ungated")
        out.docs.append(DocOutcome(doc.name, gated.status, stopped, advances, unbacked,
                                   published, broken_at, gated.message))
    return out


def render_text(result: BenchmarkResult) -> str:
    """The printed report."""
    lines = ["doc_pipeline benchmark: the same producers, gated and ungated",
             f"{'document':<34} {'gated':<10} {'stopped at':<11} ungated"]
    for d in result.docs:
        ungated = ("published, broken at " + d.ungated_broken_at if d.ungated_broken_at
                   else "published, clean") if d.ungated_published else "not published"
        lines.append(f"{d.doc:<34} {d.gated_status:<10} {d.stopped_at or '-':<11} {ungated}")
    by_phase = ", ".join(f"{n} at {p}" for p, n in result.stopped_by_phase.items())
    lines += [
        f"fact 1: across {len(result.docs)} gated runs, {result.unbacked_advances} of "
        f"{result.gated_advances} phase advances had no passing, evidence-backed gate",
        f"fact 2: {len(result.broken_published_ungated)} broken artifacts reached publish "
        f"ungated that the gated runs stopped ({by_phase})",
    ]
    return "\n".join(lines) + "\n"


def missed(result: BenchmarkResult) -> list[str]:
    """The facts that failed: an empty list when the gates held as the benchmark claims."""
    out = []
    if not result.docs or result.gated_advances == 0:
        out.append("no gated phase advanced: nothing was measured")
    if result.unbacked_advances:
        out.append(f"{result.unbacked_advances} gated advance(s) without a passing, "
                   "evidence-backed gate")
    let_through = [d.doc for d in result.broken_published_ungated
                   if d.gated_status == "completed" or d.stopped_at != d.ungated_broken_at]
    if let_through:
        out.append("the gated runs did not stop a broken document where it first fails: "
                   + ", ".join(let_through))
    return out


def render_html(result: BenchmarkResult) -> str:
    """The same facts as a self-contained page."""
    rows = "".join(
        f"<tr><td>{esc(d.doc)}</td>"
        f"<td class=\"{'pass' if d.gated_status == 'completed' else 'fail'}\">"
        f"{esc(d.gated_status)}</td><td>{esc(d.stopped_at or '-')}</td>"
        f"<td>{esc(d.advances)}</td><td>{esc('published' if d.ungated_published else 'no')}"
        f"</td><td>{esc(d.ungated_broken_at or 'clean')}</td><td>{esc(d.diagnostic)}</td></tr>"
        for d in result.docs)
    by_phase = ", ".join(f"{n} at {p}" for p, n in result.stopped_by_phase.items())
    body = (
        "<h1>doc_pipeline: gated vs ungated</h1>"
        "<p class=\"meta\">Six documents, two clean and four with one seeded fault each, "
        "through normalize, summarize, review (another role and identity) and publish.</p>"
        f"<div class=\"banner ok\"><b>Fact 1.</b> Across {len(result.docs)} gated runs, "
        f"{esc(result.unbacked_advances)} of {esc(result.gated_advances)} phase advances had no "
        "passing, evidence-backed gate.</div>"
        f"<div class=\"banner bad\"><b>Fact 2.</b> {len(result.broken_published_ungated)} broken "
        f"artifacts reached publish ungated that the gated runs stopped ({esc(by_phase)}).</div>"
        "<table><tr><th>document</th><th>gated</th><th>stopped at</th><th>advances</th>"
        "<th>ungated</th><th>ungated artifact first fails</th><th>gated diagnostic</th></tr>"
        f"{rows}</table>"
    )
    return page("doc_pipeline benchmark", body)


def main(argv: list[str] | None = None) -> int:
    """Print the facts and write the HTML report; exit 1 when a fact fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", default="build/doc_pipeline_benchmark.html",
                        help="where to write the HTML report")
    parser.add_argument("--workdir", default=None, help="keep the runs here (default: temp)")
    args = parser.parse_args(argv)
    if args.workdir:
        result = run_benchmark(args.workdir)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            result = run_benchmark(tmp)
    sys.stdout.write(render_text(result))
    out = Path(args.html)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(result), encoding="utf-8")
    print(f"report: {out}")
    failed = missed(result)
    print("missed: " + "; ".join(failed) if failed else "both facts hold")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
