"""A real headless Chromium for the HTML report tests: the distribution's package, no download.

The browser is ``$ROADCHECK_CHROMIUM`` or ``/usr/bin/chromium`` (Debian's
``chromium`` package, installed by ``.ci/run``), driven through Playwright.
A missing browser fails the tests that need it; it never skips them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

__all__ = ["CHROMIUM", "browser", "hostile_body", "open_page"]

CHROMIUM = os.environ.get("ROADCHECK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@contextmanager
def browser() -> Iterator[Browser]:
    """A headless Chromium; AssertionError (a failure, never a skip) when it is not installed."""
    assert Path(CHROMIUM).is_file(), (
        f"no Chromium at {CHROMIUM}: install it (apt-get install -y chromium) "
        "or set ROADCHECK_CHROMIUM")
    with sync_playwright() as p:
        # --no-sandbox: CI containers run as root, where Chromium's sandbox cannot start.
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


def open_page(page: Page, path: Path, width: int | None = None) -> list[str]:
    """Load ``path``; return every console message and page error, and each request made."""
    seen: list[str] = []

    def console(msg: ConsoleMessage) -> None:
        seen.append(f"console {msg.type}: {msg.text}")

    page.on("console", console)
    page.on("pageerror", lambda exc: seen.append(f"pageerror: {exc}"))
    page.on("request", lambda req: seen.append(f"request: {req.url}")
            if not req.url.startswith("file:") else None)
    if width is not None:
        page.set_viewport_size({"width": width, "height": 900})
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return seen


def hostile_body(page: Page, path: Path) -> str:
    """Open a page built from hostile input; assert nothing in it ran; return its text.

    The hostile input holds a ``<script>`` that sets ``window.__pwned``, a
    ``</style>`` followed by an element with id ``pwn``, and an image tag.
    """
    assert open_page(page, path) == []
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#pwn").count() == 0
    assert page.locator("img").count() == 0
    body = page.locator("body").inner_text()
    assert "<script>window.__pwned=1</script>" in body
    assert '</style><b id="pwn">bold</b>' in body
    return body
