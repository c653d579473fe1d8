"""A real headless Chromium for the HTML report tests: the distribution's package, no download.

The browser is ``$ASSAY_CHROMIUM`` or ``/usr/bin/chromium`` (Debian's
``chromium`` package, installed by ``.ci/run``), driven through Playwright.
A missing browser fails the tests that need it; it never skips them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

__all__ = ["CHROMIUM", "browser"]

CHROMIUM = os.environ.get("ASSAY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@contextmanager
def browser() -> Iterator[Browser]:
    """A headless Chromium; AssertionError (a failure, never a skip) when it is not installed."""
    assert Path(CHROMIUM).is_file(), (
        f"no Chromium at {CHROMIUM}: install it (apt-get install -y chromium) "
        "or set ASSAY_CHROMIUM")
    with sync_playwright() as p:
        # --no-sandbox: CI containers run as root, where Chromium's sandbox cannot start.
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()
