"""The audit page: outcome first, the broken record linked, every cell filled, in Chromium."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from playwright.sync_api import Page

from roadcheck.cli import cli

from ..browser import browser, hostile_body, open_page
from ..evidence_layout import record_lines, write_record_lines

Build = Callable[..., dict[str, Any]]
WriteWorkflow = Callable[..., Path]
BAD = "import sys\nopen(sys.argv[1], 'w').write('bad')\n"


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def _audit(runs: Path, run_id: str, out: Path) -> str:
    result = _invoke("audit", run_id, "--runs-dir", str(runs), "--html", str(out))
    assert result.exit_code in (0, 1), result.output
    return out.read_text(encoding="utf-8")


def _run(path: Path, runs: Path, run_id: str, *extra: str, role: str = "writer",
         identity: str = "alice") -> None:
    _invoke("run", str(path), "--as", role, "--identity", identity, *extra,
            "--runs-dir", str(runs), *(("--run-id", run_id) if "--resume" not in extra else ()))


def _open(page: Page, path: Path) -> list[str]:
    return open_page(page, path, width=1280)


def _cells(html: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", html, flags=re.S)


class TestOutcomeFirst:
    def test_completed(self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow) -> None:
        """A completed run says so in the page's first line."""
        runs = tmp_path / "runs"
        _run(workflow_file(phase("make")), runs, "c")
        html = _audit(runs, "c", tmp_path / "a.html")
        body = html.split("<body>", 1)[1]
        assert body.lstrip().startswith('<p class="banner outcome ok" id="outcome"><b>Completed')

    def test_hard_stop_says_why(self, tmp_path: Path, phase: Build,
                                workflow_file: WriteWorkflow) -> None:
        """A hard-stopped run names the phase, the attempt and the gate's summary first."""
        runs = tmp_path / "runs"
        _run(workflow_file(phase("make", producer=BAD, max_attempts=1)), runs, "h")
        html = _audit(runs, "h", tmp_path / "h.html")
        first = re.search(r'id="outcome"><b>([^<]*)</b>', html)
        assert first is not None
        assert first.group(1).startswith("Hard-stop at phase make attempt 1: ")

    def test_pause_and_refusal_are_events(self, tmp_path: Path, phase: Build,
                                          workflow_file: WriteWorkflow) -> None:
        """A paused run ends with a PAUSED row; a refusal is a REFUSED row and the outcome."""
        runs = tmp_path / "runs"
        path = workflow_file(phase("make"), phase("review", role="qa", reviews="make"))
        _run(path, runs, "p")
        paused = _audit(runs, "p", tmp_path / "p.html")
        assert re.search(r'id="outcome"><b>Paused: ', paused)
        assert '<tr class="paused">' in paused
        _run(path, runs, "p", "--resume", "p", role="qa", identity="alice")
        refused = _audit(runs, "p", tmp_path / "r.html")
        assert re.search(r'id="outcome"><b>Refused at phase review attempt 1: ', refused)
        assert "REFUSED<br><span class=\"meta\">role guard refused</span>" in refused
        assert '<tr class="paused">' not in refused


class TestCells:
    def test_no_none_and_no_blank_cell(self, tmp_path: Path, phase: Build,
                                       workflow_file: WriteWorkflow) -> None:
        """Every cell has text; a missing value is a dash, never None."""
        runs = tmp_path / "runs"
        _run(workflow_file(phase("make"), phase("review", role="qa", reviews="make")), runs, "n")
        html = _audit(runs, "n", tmp_path / "n.html")
        for cell in _cells(html):
            text = re.sub(r"<[^>]+>", "", cell).strip()
            assert text and "None" not in text, cell

    def test_digests_short_with_the_full_value_on_hover(self, tmp_path: Path, phase: Build,
                                                        workflow_file: WriteWorkflow) -> None:
        """A digest shows 12 hex digits; its title holds all 64."""
        runs = tmp_path / "runs"
        _run(workflow_file(phase("make")), runs, "d")
        html = _audit(runs, "d", tmp_path / "d.html")
        full = re.findall(r'<code title="([0-9a-f]{64})">([0-9a-f]{12})\u2026</code>', html)
        assert len(full) == 2  # the artifact's sha256 and the record's hash
        assert all(f.startswith(short) for f, short in full)


class TestInBrowser:
    def test_broken_record_linked_highlighted_and_fits(self, tmp_path: Path, phase: Build,
                                                       workflow_file: WriteWorkflow) -> None:
        """A tampered run: the banner links the broken row, which is marked; no sideways scroll."""
        runs = tmp_path / "runs"
        _run(workflow_file(phase("make", producer=BAD, max_attempts=2)), runs, "t")
        ev = runs / "t" / "evidence.jsonl"
        lines = record_lines(ev)
        lines[1] = lines[1].replace('"verdict":"fail"', '"verdict":"pass"')
        write_record_lines(ev, lines)
        out = tmp_path / "t.html"
        html = _audit(runs, "t", out)
        assert not re.search(r'(src|href)\s*=\s*"(?!#record-\d+")', html)
        with browser() as b:
            page = b.new_page()
            assert _open(page, out) == []
            link = page.locator(".banner.bad a")
            assert link.get_attribute("href") == "#record-2"
            link.click()
            assert page.evaluate("location.hash") == "#record-2"
            row = page.locator("tr#record-2")
            assert "broken" in (row.get_attribute("class") or "")
            assert "BROKEN HERE" in row.inner_text()
            assert page.locator("tr.broken").count() == 1
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            first = page.locator("body > *").first
            assert first.get_attribute("id") == "outcome"
            bad = page.evaluate("[...document.querySelectorAll('td')].map(td => td.innerText)"
                                ".filter(t => !t.trim() || /\\bNone\\b/.test(t)).length")
            assert bad == 0


class TestGuardSession:
    def test_outcome_counts_the_decisions(self, tmp_path: Path) -> None:
        """A guard session's page opens with how many decisions it holds and the last one."""
        import json

        import roadcheck

        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps({"mandatory_checkpoints": [
            {"checkpoint_id": "ok", "must_precede": "send"}]}))
        with roadcheck.GuardStore(tmp_path / "state", spec).session("s", create=True) as live:
            live.check({"event": "action", "action_type": "send"})
        html = _audit(tmp_path / "state", "s", tmp_path / "g.html")
        first = re.search(r'id="outcome"><b>([^<]*)</b>', html)
        assert first is not None
        assert first.group(1).startswith("Guard session: 1 decision recorded; the last: ")


HOSTILE = ("<script>window.__pwned=1</script> </style><b id=\"pwn\">bold</b> "
           "<img src=x onerror=\"window.__pwned=2\"> sc\u202eanner a\u2066b")


class TestHostileInBrowser:
    def test_gate_output_and_identity_render_as_text(self, tmp_path: Path, phase: Build,
                                                     workflow_file: WriteWorkflow,
                                                     script: Callable[[str, str], str]) -> None:
        """Markup, a closing style tag, a handler and bidi controls in what a run recorded
        show as text on the audit page: nothing runs, nothing is reordered."""
        shout = script("shout.py", f"import sys\nprint({HOSTILE!r})\nsys.exit(1)\n")
        path = workflow_file(phase("make", gate={"command": ["{python}", shout]},
                                   max_attempts=1))
        runs = tmp_path / "runs"
        _run(path, runs, "x", identity="<b>eve</b>\u202e")
        out = tmp_path / "x.html"
        html = _audit(runs, "x", out)
        assert "\u202e" not in html and "\u2066" not in html
        with browser() as b:
            body = hostile_body(b.new_page(), out)
        assert "sc\\u202eanner a\\u2066b" in body
        assert "<b>eve</b>\\u202e" in body
