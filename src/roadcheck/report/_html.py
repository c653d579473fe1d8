"""A self-contained HTML page: inline CSS, no scripts, nothing fetched, every value escaped."""

from __future__ import annotations

import re
from html import escape
from typing import Any

__all__ = ["esc", "page"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:72rem;
color:#1d1d1f;padding:0 1rem}
h1{font-size:1.4rem;margin-bottom:.2rem}h2{font-size:1.1rem;margin-top:2rem}
.meta{color:#555}table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{border:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f6}code,pre{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
pre{white-space:pre-wrap;word-break:break-word;margin:0;max-height:16rem;overflow:auto}
.pass{color:#0a7a2f;font-weight:600}.fail{color:#b3261e;font-weight:600}
.banner{padding:.6rem .8rem;border-radius:4px;margin:1rem 0}
.ok{background:#e7f5ec}.bad{background:#fdecea}.wait{background:#fff4d6}
td{overflow-wrap:break-word}td code{overflow-wrap:anywhere}
tr.broken td{background:#fdecea;outline:2px solid #b3261e}
tr:target td{box-shadow:inset 0 0 0 2px #b3261e}.outcome{font-size:1.05rem;margin-top:0}
a{color:#0b57d0}
"""


# What markup escaping leaves alone and a page must not show raw: the bidi embedding,
# override, isolate and mark characters (they reorder what is read), the C0 and C1
# controls but tab, newline and carriage return (whitespace in HTML, kept for <pre>), the
# Unicode line and paragraph separators, and lone surrogates (no character at all).
_SHOWN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                    "\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def esc(value: Any) -> str:
    """Escape any value for HTML text or attribute context; a bidi or control character
    is shown as ``repr`` shows it (``\\u202e``), as the text reports show it."""
    text = "" if value is None else str(value)
    if _SHOWN.search(text) is not None:
        text = _SHOWN.sub(lambda m: repr(m.group())[1:-1], text)
    return escape(text, quote=True)


def page(title: str, body: str) -> str:
    """Wrap an already-escaped body in a complete page; the CSP forbids scripts and fetches."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'\">"
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
