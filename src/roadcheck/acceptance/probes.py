"""Read-only post-condition probes the command line can build.

The gate takes any callable as a probe; these two cover the common cases:

- :class:`CommandProbe` runs a command (an argv list, never through a shell)
  and treats exit 0 as "the effect is there".
- :class:`UrlProbe` sends one GET and treats a 2xx answer as "the effect is
  there". It follows a redirect only to the same scheme, host and port.

Both are bounded by a timeout; running out of time is a probe that could not
complete, which the gate reports as a failure. A probe command runs like every
other command roadcheck starts (:func:`roadcheck._commands.run_command`): in its own
process group, killed whole when it ends, its output bounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["CommandProbe", "ProbeAnswer", "UrlProbe"]

DEFAULT_TIMEOUT = 10.0


class ProbeAnswer(NamedTuple):
    """What a probe saw; false when the effect was not found, with a detail saying why."""

    confirmed: bool
    detail: str = ""

    def __bool__(self) -> bool:
        return self.confirmed


class ProbeError(Exception):
    """The probe could not complete (the gate names it in the failing reason)."""


class CommandProbe:
    """Run ``argv`` without a shell; exit 0 confirms the effect."""

    def __init__(self, argv: Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> None:
        if not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError("a probe command is a non-empty list of strings")
        self.argv = list(argv)
        self.timeout = timeout
        self.label = f"probe command '{argv[0]}'"

    def __call__(self) -> ProbeAnswer:
        import subprocess

        from roadcheck._commands import run_command

        # its own process group, killed whole at the end; output read through a bounded buffer
        run = run_command(self.argv, cwd=None, timeout=self.timeout, stdin=subprocess.DEVNULL)
        if run.timed_out:
            raise ProbeError(f"timed out after {self.timeout:g}s")
        if run.exit_code is None:
            raise ProbeError(f"cannot run: {run.error}")
        if run.exit_code == 0:
            return ProbeAnswer(True)
        return ProbeAnswer(False, f"exit {run.exit_code}")


class UrlProbe:
    """Send one read-only GET to ``url``; a 2xx answer confirms the effect."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"a probe URL must be http:// or https:// with a host, got {url!r}")
        self.url = url
        self.timeout = timeout
        self.label = f"probe GET {parts.scheme}://{parts.netloc}"

    def __call__(self) -> ProbeAnswer:
        import urllib.error
        import urllib.request

        opener = _opener(self.url)
        request = urllib.request.Request(self.url, method="GET",
                                         headers={"User-Agent": "roadcheck-accept-probe"})
        try:
            with opener.open(request, timeout=self.timeout) as response:
                status = int(response.status)
        except urllib.error.HTTPError as exc:
            status = int(exc.code)
            exc.close()
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise ProbeError(f"timed out after {self.timeout:g}s") from None
            raise ProbeError(f"cannot reach: {reason}") from None
        except TimeoutError:
            raise ProbeError(f"timed out after {self.timeout:g}s") from None
        except OSError as exc:
            raise ProbeError(f"cannot reach: {exc}") from None
        if 200 <= status < 300:
            return ProbeAnswer(True)
        return ProbeAnswer(False, f"HTTP {status}")


def _origin(url: str) -> tuple[str, str, int | None]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


def _opener(url: str) -> Any:
    """An opener without proxies whose redirects must stay on ``url``'s origin."""
    import urllib.request

    origin = _origin(url)

    class SameOriginRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                             newurl: str) -> Any:
            if _origin(newurl) != origin:
                raise ProbeError(f"refused a redirect to another host: {newurl}")
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return urllib.request.build_opener(SameOriginRedirects(), urllib.request.ProxyHandler({}))
