"""Write each HTML report (replay and audit) and a full-page screenshot of it under build/.

    .venv/bin/python scripts/screenshot_reports.py

Renders the example fixtures (with ``--by task_success``) and the hostile
trajectory of the tests with ``roadcheck replay --format html``, and the audit
page of a run of ``examples/doc_pipeline`` paused for its reviewer (in a
temporary runs directory) with ``roadcheck audit --html``, then opens each
page in headless Chromium (``$ROADCHECK_CHROMIUM`` or ``/usr/bin/chromium``,
driven by Playwright, 1280 px wide) and writes ``build/<name>.html`` and
``build/<name>.png``. Exits 1 when a page logs a console message or an error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
PAGES = {
    "replay-fixtures": ["examples/spec.json",
                        *sorted(str(p.relative_to(ROOT))
                                for p in (ROOT / "examples").glob("fixture_*.jsonl")),
                        "--by", "task_success"],
    "replay-hostile": ["examples/spec.json", "tests/data/html/hostile.jsonl"],
}
PIPELINE = ["examples/doc_pipeline/workflow.yaml", "--as", "writer", "--identity", "alice",
            "--run-id", "shot", "--param",
            "doc=examples/doc_pipeline/corpus/01_clean_release_notes.txt"]


def _audit_page(roadcheck: str, html: Path) -> int:
    """Run the doc pipeline until it pauses for review, then write its audit page."""
    with tempfile.TemporaryDirectory() as runs:
        subprocess.run([roadcheck, "run", *PIPELINE, "--runs-dir", runs], cwd=ROOT, check=False,
                       stdout=subprocess.DEVNULL)
        return subprocess.run([roadcheck, "audit", "shot", "--runs-dir", runs, "--html",
                               str(html)], cwd=ROOT, check=False,
                              stdout=subprocess.DEVNULL).returncode


def main(build: Path = BUILD) -> int:
    """Write every page and its screenshot under ``build``; 1 when any page misbehaves."""
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("ROADCHECK_CHROMIUM") or shutil.which("chromium") or \
        "/usr/bin/chromium"
    build.mkdir(exist_ok=True)
    roadcheck = str(Path(sys.executable).with_name("roadcheck"))
    bad = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        seen: list[str] = []
        page.on("console", lambda m: seen.append(f"console {m.type}: {m.text}"))
        page.on("pageerror", lambda e: seen.append(f"pageerror: {e}"))
        for name, args in [*PAGES.items(), ("audit-paused", [])]:
            html = build / f"{name}.html"
            if args:
                code = subprocess.run([roadcheck, "replay", *args, "--format", "html", "--output",
                                       str(html)], cwd=ROOT, check=False).returncode
            else:
                code = _audit_page(roadcheck, html)
            if code not in (0, 1) or not html.is_file():
                print(f"{name}: roadcheck exited {code}", file=sys.stderr)
                bad += 1
                continue
            seen.clear()
            page.goto(html.as_uri())
            page.wait_for_load_state("load")
            png = build / f"{name}.png"
            page.screenshot(path=str(png), full_page=True)
            for line in seen:
                print(f"{name}: {line}", file=sys.stderr)
            bad += bool(seen)
            print(f"wrote {png.relative_to(ROOT) if png.is_relative_to(ROOT) else png}")
        browser.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
