"""``roadcheck guard serve``: the guard's questions over HTTP, for hooks that call a URL.

One process answers for every session of a :class:`~roadcheck.GuardStore`, on a
loopback address only (``127.0.0.1``, ``::1`` or ``localhost``; any other
address is refused before anything is bound). Each request is a ``POST`` with
a JSON object, answered with a JSON object:

=====================================  ==========================================
``/v1/sessions/<id>``                  create the session (``201``; again: ``200``)
``/v1/sessions/<id>/check``            the body is an event: its :class:`Decision`
``/v1/sessions/<id>/observe``          the body is an event that happened: its ``seq``
``/v1/sessions/<id>/approve``          ``{"event": <action>, "by": <name>}``: the
                                       approval, bound to that call, and the
                                       decision that follows
``/v1/hooks/claude-code``               the body is a Claude Code hook event, as its
                                       ``http`` hook posts it: the answer is the
                                       hook's JSON output (see below)
=====================================  ==========================================

Sessions are held in memory between requests, each request's decisions saved
before it is answered (:mod:`roadcheck.guard.resident`).

It fails closed: an unknown session, a body that is not a JSON object, an
event replay would refuse, an unknown path or an internal error is answered
with a non-2xx status and ``{"verdict": "deny", "reason": ..., "error": ...}``,
so a client that reads only the status and one that reads only the verdict
both stop the call. A hook's endpoint answers status 200 whatever happens, since
Claude Code runs the call on any other status: a deny in the event's own JSON output
(:func:`roadcheck.guard.claude_code.deny_body`).

An approval is a person's word, so ``approve`` needs the approver's credential:
the server is started with a token (``--approve-token-file``, a file the agent
cannot read) and an approval carries it as ``Authorization: Bearer TOKEN``;
without it the answer is 401, and a server started without a token takes no
approval at all (403). Check and observe need no token: they only ever make
the guard stricter.

Clients are answered concurrently, each connection in a thread of its own, and
each request is bounded: a client that stops sending for :data:`REQUEST_TIMEOUT`
seconds is disconnected, so one slow or idle client never holds up another. (Two
requests for one session still take turns: its lock is held while it answers.)
Responses go out without Nagle's delay.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
import sys
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec
import orjson

from roadcheck.documents.approval import Approval
from roadcheck.errors import InputError, RoadcheckError
from roadcheck.guard.core import Decision
from roadcheck.guard.resident import ResidentStore
from roadcheck.guard.store import GuardSession, GuardStore
from roadcheck.ingest._json import message, repeated_key

__all__ = ["REQUEST_TIMEOUT", "GuardServer", "loopback", "read_token", "serve"]

#: The largest request body read (an event with its arguments).
MAX_BODY = 1 << 20
#: How long a connection may stay silent before it is closed, in seconds.
REQUEST_TIMEOUT = 5.0
_OPS = ("check", "observe", "approve")
#: Where a coding agent's ``http`` hook posts its event: ``/v1/hooks/<adapter>``.
HOOKS = "/v1/hooks/"


def loopback(host: str) -> str:
    """``host`` when it is a loopback address (``localhost`` is 127.0.0.1); else InputError."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        is_loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        is_loopback = False
    if not is_loopback:
        raise InputError(f"--host {host!r} is not a loopback address: the guard serves on "
                         "127.0.0.1, ::1 or localhost only")
    return host


class _Refused(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


class GuardServer(ThreadingHTTPServer):
    """An HTTP server on a loopback address answering for the sessions of ``store``.

    ``approve_token``: the credential an approval must carry; None takes none.
    """

    daemon_threads = True

    def __init__(self, store: GuardStore, host: str = "127.0.0.1", port: int = 0, *,
                 approve_token: str | None = None) -> None:
        host = loopback(host)
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        #: The sessions, held in memory between requests (each saved before it is answered).
        self.store = ResidentStore(store)
        self.approve_token = approve_token
        try:
            super().__init__((host, port), _Handler)
        except OSError as exc:
            raise InputError(f"cannot listen on {host} port {port}: "
                             f"{exc.strerror or exc}") from None

    @property
    def url(self) -> str:
        """The base URL the server answers on."""
        raw, port = self.server_address[0], self.server_address[1]
        host = raw.decode() if isinstance(raw, bytes) else str(raw)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}"

    def answer(self, path: str, body: bytes,
               authorization: str | None = None) -> tuple[int, dict[str, Any]]:
        """The status and JSON answer for a ``POST`` to ``path`` (``authorization``: the
        request's Authorization header, which an approval needs)."""
        try:
            return self._answer(path, body, authorization)
        except _Refused as stop:
            return stop.status, _deny(stop.reason, stop.message)
        except RoadcheckError as exc:
            return 400, _deny(exc.reason, str(exc))

    def hook(self, path: str, body: bytes) -> bytes:
        """The 2xx body answering a coding agent's ``http`` hook posted to ``path``
        (``/v1/hooks/claude-code``); every failure is a deny body, never an error status."""
        from roadcheck.guard import claude_code

        name = path.split("?", 1)[0].removeprefix(HOOKS)
        if name != "claude-code":
            return claude_code.deny_body(body, f"roadcheck guard: denied: no http hook "
                                         f"{name!r} here (only {HOOKS}claude-code)")
        store = self.store
        found = claude_code.run_hook(body, "", None, open_store=lambda: store,
                                     approver=store.store.approver or "user")
        return claude_code.http_body(body, found)

    def _authorize(self, authorization: str | None) -> None:
        if self.approve_token is None:
            raise _Refused(403, "bad-input", "approve is off: start roadcheck guard serve with "
                           "--approve-token-file to take approvals")
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
                given.strip().encode(), self.approve_token.encode()):
            raise _Refused(401, "bad-input", "approve needs the approver's token: "
                           "Authorization: Bearer TOKEN")

    def _answer(self, path: str, body: bytes,
                authorization: str | None) -> tuple[int, dict[str, Any]]:
        parts = path.split("?", 1)[0].split("/")
        if len(parts) not in (4, 5) or parts[:3] != ["", "v1", "sessions"] or (
                len(parts) == 5 and parts[4] not in _OPS):
            raise _Refused(404, "bad-input", f"no such endpoint: {path}")
        if len(parts) == 5 and parts[4] == "approve":
            self._authorize(authorization)  # before the body is even read as JSON
        session = parts[3]
        if len(parts) == 4:
            existed = self.store.exists(session)
            with self.store.session(session, create=True):
                pass
            return (200 if existed else 201), {"session": session, "created": not existed}
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise _Refused(400, "bad-input", f"the request body is not JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise _Refused(400, "bad-input", "the request body is not a JSON object")
        twice = repeated_key(body, doc)
        if twice is not None:
            raise _Refused(400, "bad-input", f"the request body has a {message(twice)}")
        with self.store.session(session) as live:
            if parts[4] == "check":
                return 200, live.check(doc).to_dict()
            if parts[4] == "observe":
                return 200, {"seq": live.observe(doc).seq}
            return 200, _approve(live, doc).to_dict()


def _approve(live: GuardSession, doc: dict[str, Any]) -> Decision:
    """Record ``doc["by"]``'s approval of the action ``doc["event"]``; the decision after."""
    call, by = doc.get("event"), doc.get("by")
    if not isinstance(call, dict) or call.get("event") != "action":
        raise _Refused(400, "bad-input", "approve needs 'event': the action approved")
    if not isinstance(by, str) or not by:
        raise _Refused(400, "bad-input", "approve needs 'by': who approved it")
    guard = live.guard
    # asked without logging: the log gets the decision the approval leads to
    decision = guard._decide(guard.event(call))
    if decision.verdict == "allow":  # an identical call's approval allows it: this one is new
        decision = replace(decision, missing=guard.guarding(call))
    approval = _approval_of(doc.get("approval"))
    if decision.verdict != "deny" and decision.missing:
        try:
            guard.approve(decision, by=by, agent=call.get("agent"), approval=approval)
        except InputError as exc:
            raise _Refused(400, "bad-input", exc.message) from None
    return live.check(call)


def _approval_of(doc: object) -> Approval | None:
    """The signed approval an approve request carries (``roadcheck guard approve --key``)."""
    if doc is None:
        return None
    try:
        return msgspec.convert(doc, Approval)
    except msgspec.ValidationError as exc:
        raise _Refused(400, "bad-input", f"'approval' is not a signed approval: {exc}") from None


def _deny(reason: str, message: str) -> dict[str, Any]:
    return {"verdict": "deny", "reason": reason, "error": message}


class _Handler(BaseHTTPRequestHandler):
    server: GuardServer
    server_version = "roadcheck-guard"
    protocol_version = "HTTP/1.1"
    timeout = REQUEST_TIMEOUT  # a silent connection is closed, never waited on
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: every decision is in the session's decision log."""

    def do_POST(self) -> None:
        if self.path.startswith(HOOKS):
            self._hook()
            return
        try:
            length = self.headers.get("Content-Length")
            # no body at all (a bare POST) is an empty one; a chunked body is not read
            chunked = self.headers.get("Transfer-Encoding") is not None
            size = -1 if chunked else int(length or "0")
            if not 0 <= size <= MAX_BODY:
                status, doc = 411 if size < 0 else 413, _deny(
                    "bad-input", f"a request body of 0 to {MAX_BODY} bytes with its "
                    "Content-Length is required")
            else:
                status, doc = self.server.answer(self.path, self.rfile.read(size),
                                                 self.headers.get("Authorization"))
        except TimeoutError:
            self.close_connection = True  # the client stopped sending: no answer
            return
        except Exception as exc:  # fail closed on any bug
            status, doc = 500, _deny("internal", f"{type(exc).__name__}: {exc}")
        self._send(status, doc)

    def _hook(self) -> None:
        """A hook's event in, its answer out, status 200 whatever happens (the agent runs
        the call on any other status)."""
        from roadcheck.guard.claude_code import deny_body

        body = b""
        try:
            length = self.headers.get("Content-Length")
            size = -1 if self.headers.get("Transfer-Encoding") is not None else int(
                length or "0")
            if not 0 <= size <= MAX_BODY:
                doc = deny_body(b"", f"roadcheck guard: denied: a request body of 0 to "
                                f"{MAX_BODY} bytes with its Content-Length is required")
                self.close_connection = True
            else:
                body = self.rfile.read(size)
                doc = self.server.hook(self.path, body)
        except TimeoutError:
            self.close_connection = True  # the client stopped sending: no answer
            return
        except Exception as exc:  # fail closed on any bug
            doc = deny_body(body, f"roadcheck guard: denied: internal error: "
                            f"{type(exc).__name__}: {exc}")
        self._send(200, doc)

    def do_GET(self) -> None:
        self._send(405, _deny("bad-input", "use POST"))

    do_PUT = do_DELETE = do_PATCH = do_GET

    def _send(self, status: int, doc: dict[str, Any] | bytes) -> None:
        body = doc if isinstance(doc, bytes) else orjson.dumps(doc)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if status >= 400:
            self.send_header("Connection", "close")
            self.close_connection = True
        # the end of the headers and the body in one write: one packet, no delay
        self._headers_buffer.append(b"\r\n" + body)  # type: ignore[attr-defined]
        self.flush_headers()


def read_token(path: str) -> str:
    """The approver's token from ``path``: a regular file that only its owner may read,
    holding one non-empty line. Anything else is an :class:`InputError`."""
    import os
    import stat

    from roadcheck._files import read_regular

    try:
        data = read_regular(path)
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise InputError(f"cannot read the approve token: {exc.strerror or exc}",
                         path=path) from None
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise InputError("the approve token file is readable by others: chmod 600 it, and "
                         "keep it where the guarded agent cannot read it", path=path)
    try:
        token = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        token = ""
    if not token or "\n" in token:
        raise InputError("the approve token file is empty or not one line of text", path=path)
    return token


def serve(store: GuardStore, host: str = "127.0.0.1", port: int = 8765, *,
          approve_token: str | None = None) -> None:
    """Answer until interrupted; prints the URL it serves on to standard error."""
    server = GuardServer(store, host, port, approve_token=approve_token)
    sys.stderr.write(f"roadcheck guard: serving on {server.url}\n")
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
