"""The replay HTML report (``--format html``), read in a real headless Chromium.

The page must load with no console error and nothing fetched, the filter must
show and hide trajectories, and a hostile trajectory (markup, a closing style
tag, bidi controls, in the file name too) must render as text.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from roadcheck.cli import main

from .browser import browser, hostile_body, open_page

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = Path(__file__).parent / "data" / "html" / "hostile.jsonl"
FIXTURES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("fixture_*.jsonl"))
HOSTILE_NAME = "<script>window.__pwned=3\u202e<b>x.jsonl"


def _write(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> str:
    with pytest.raises(SystemExit) as info:
        main(["replay", "examples/spec.json", *args, "--format", "html", "--output", str(out)])
    assert info.value.code == 1
    assert capsys.readouterr() == ("", "")
    return out.read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.fixture
def fixtures_page(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    out = tmp_path / "report.html"
    _write(capsys, out, *FIXTURES, "--by", "task_success")
    return out


@pytest.fixture
def hostile_page(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    named = tmp_path / HOSTILE_NAME
    shutil.copy(HOSTILE, named)
    out = tmp_path / "hostile.html"
    _write(capsys, out, str(HOSTILE), str(named))
    return out


_open = open_page


class TestPageSource:
    def test_self_contained_with_a_csp(self, fixtures_page: Path) -> None:
        """One CSP meta allows the one inline script by hash and nothing from anywhere."""
        html = fixtures_page.read_text()
        csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
        assert csp is not None
        assert "default-src 'none'" in csp.group(1)
        assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+'", csp.group(1))
        assert html.count("<script>") == 1
        assert not re.search(r"(src|href)=\"(https?:)?//", html)

    def test_deterministic(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """Same inputs, byte-identical page."""
        a = _write(capsys, tmp_path / "a.html", *FIXTURES)
        b = _write(capsys, tmp_path / "b.html", *FIXTURES)
        assert a == b

    def test_html_needs_output(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--format html without --output is a usage error, exit 2."""
        with pytest.raises(SystemExit) as info:
            main(["replay", "examples/spec.json", FIXTURES[0], "--format", "html"])
        assert info.value.code == 2
        assert capsys.readouterr().err.startswith("error[usage]: replay: --format html needs")


class TestInBrowser:
    def test_loads_with_no_console_error_and_no_request(self, fixtures_page: Path) -> None:
        """The page loads clean: no console message, no error, nothing fetched."""
        with browser() as b:
            page = b.new_page()
            assert _open(page, fixtures_page) == []
            assert page.locator("section.traj").count() == 8
            assert page.locator("#f-count").text_content() == "8 of 8 shown"

    def test_summary_and_contrast(self, fixtures_page: Path) -> None:
        """The summary counts verdicts and groups; each block shows task_success beside it."""
        with browser() as b:
            page = b.new_page()
            _open(page, fixtures_page)
            body = page.locator("body").inner_text()
            assert "3 PASS" in body and "4 BLOCK" in body and "1 ERROR" in body
            assert "By task_success" in body
            skipped = page.locator("section.traj", has_text="fixture_skipped.jsonl")
            assert "final metric says task_success=true · the trajectory says " \
                   "checkpoint-skipped" in skipped.locator(".contrast").inner_text()

    def test_filter_by_verdict_and_code(self, fixtures_page: Path) -> None:
        """The filter shows only the chosen verdict, then only the chosen reason code."""
        with browser() as b:
            page = b.new_page()
            _open(page, fixtures_page)
            page.select_option("#f-verdict", "BLOCK")
            visible = page.locator("section.traj:visible")
            assert visible.count() == 4
            assert all(v == "BLOCK" for v in
                       visible.evaluate_all("els => els.map(e => e.dataset.verdict)"))
            page.select_option("#f-code", "checkpoint-skipped")
            assert page.locator("section.traj:visible").count() == 1
            assert page.locator("#f-count").text_content() == "1 of 8 shown"
            page.select_option("#f-verdict", "PASS")
            assert page.locator("section.traj:visible").count() == 0
            page.select_option("#f-verdict", "")
            page.select_option("#f-code", "")
            assert page.locator("section.traj:visible").count() == 8

    def test_reason_links_to_the_event_it_names(self, fixtures_page: Path) -> None:
        """A reason's 'seq 6' links to the row of seq 6 (file line 5), which is highlighted."""
        with browser() as b:
            page = b.new_page()
            _open(page, fixtures_page)
            section = page.locator("section.traj", has_text="fixture_skipped.jsonl")
            link = section.locator("ul.reasons a", has_text="seq 6")
            href = link.get_attribute("href")
            assert href is not None
            row = page.locator(href)
            assert row.get_attribute("class") == "named"
            assert row.locator("td").nth(0).inner_text() == "6"
            assert row.locator("td").nth(1).inner_text() == "5"
            link.click()
            assert page.evaluate("location.hash") == href

    def test_hostile_trajectory_renders_as_text(self, hostile_page: Path) -> None:
        """<script>, </style>, event handlers and bidi controls show as text; nothing runs."""
        with browser() as b:
            page = b.new_page()
            body = hostile_body(page, hostile_page)
            assert "<script>window.__pwned=3\\u202e<b>x.jsonl" in body
            assert "sc\\u202eanner" in body and "a\\u2066b" in body
            assert "\u202e" not in body and "\u2066" not in body
            assert page.locator("section.traj").count() == 2


class TestScreenshotScript:
    def test_writes_each_page_and_its_screenshot(self, tmp_path: Path) -> None:
        """scripts/screenshot_reports.py renders every page, opens it cleanly, and writes
        a PNG of it beside the page."""
        from .conftest import load_script

        script = load_script(ROOT / "scripts" / "screenshot_reports.py")
        assert script.main(tmp_path / "build") == 0
        names = ["audit-paused", "replay-fixtures", "replay-hostile"]
        assert sorted(p.name for p in (tmp_path / "build").iterdir()) == sorted(
            f"{n}.{ext}" for n in names for ext in ("html", "png"))
        for name in names:
            png = (tmp_path / "build" / f"{name}.png").read_bytes()
            assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000


def _runs(folder: Path, n: int) -> None:
    """``n`` native runs of the billing pipeline, every other one skipping the checkpoint."""
    folder.mkdir()
    for i in range(n):
        events = [{"seq": 1, "event": "action", "agent": "scanner", "action_type": "pull_rows",
                   "args": {"page": i}},
                  {"seq": 2, "event": "handoff", "agent": "scanner", "from_agent": "scanner",
                   "to_agent": "reporter", "payload": {"row_count": {"value": i,
                                                                     "verified": True}}}]
        if i % 2 == 0:
            events.append({"seq": 3, "event": "checkpoint", "agent": "reporter",
                           "checkpoint_id": "confirm_with_user", "confirmed_by": "owner"})
        events += [{"seq": 4, "event": "action", "agent": "reporter",
                    "action_type": "send_report", "irreversible": True,
                    "args": {"to": "cfo@example.com", "body": f"run {i}: " + "x" * 300}},
                   {"seq": 5, "event": "final", "agent": "reporter", "task_success": True}]
        (folder / f"r{i:05d}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


class TestManyRuns:
    """A report of many runs opens on its first page at once; the rest are drawn a page at
    a time, and the filter counts every run, on every page."""

    def test_the_timeline_shows_what_each_event_did(self, capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
        with pytest.raises(SystemExit):
            main(["replay", "examples/frameworks/claude-code/spec.yaml",
                  "examples/frameworks/claude-code/approved.jsonl", "--format", "html",
                  "--output", str(tmp_path / "cc.html")])
        with browser() as b:
            page = b.new_page()
            assert _open(page, tmp_path / "cc.html") == []
            rows = page.locator("tr[id^=t1-e]")
            push = rows.nth(5).inner_text()
            assert "Bash" in push and "cd /home/dev/shop && git push origin main" in push
            said = rows.nth(4).inner_text()
            assert "Yes, push it." in said and "derived checkpoint push_approved" in said
        capsys.readouterr()

    def test_long_arguments_are_shortened_and_expand(self, capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
        _runs(tmp_path / "runs", 2)
        out = tmp_path / "two.html"
        _write(capsys, out, str(tmp_path / "runs"))
        with browser() as b:
            page = b.new_page()
            assert _open(page, out) == []
            send = page.locator("#t1-e4 details.x")
            assert send.count() == 1
            assert "x" * 300 not in send.locator("summary").inner_text()
            send.locator("summary").click()
            assert "x" * 300 in send.inner_text()
            assert "recorded checkpoint" in page.locator("#t1-e3").inner_text()

    @pytest.mark.stress  # about 40 s: 20,000 files written, judged, located and drawn
    def test_20000_runs_open_on_the_first_page_within_5_seconds(
            self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        import time

        _runs(tmp_path / "runs", 20_000)
        out = tmp_path / "many.html"
        _write(capsys, out, str(tmp_path / "runs"))
        with browser() as b:
            page = b.new_page()
            start = time.perf_counter()
            page.goto(out.as_uri())
            page.locator("#f-count").filter(has_text="shown").wait_for()
            first = page.locator("section.traj").first
            first.wait_for()
            elapsed = time.perf_counter() - start
            assert elapsed < 5.0, f"first page after {elapsed:.1f} s"
            assert page.locator("section.traj").count() == 50
            assert page.locator("#f-count").text_content() == "20000 of 20000 shown"
            assert page.locator("#p-at").text_content() == "page 1 of 400"
            page.click("#p-next")
            assert page.locator("#p-at").text_content() == "page 2 of 400"
            assert "[51]" in page.locator("section.traj").first.inner_text()
            page.select_option("#f-verdict", "BLOCK")
            assert page.locator("#f-count").text_content() == "10000 of 20000 shown"
            assert page.locator("#p-at").text_content() == "page 1 of 200"
            assert {page.locator("section.traj").nth(i).get_attribute("data-verdict")
                    for i in range(50)} == {"BLOCK"}
