"""The live view's HTTP server: stdlib ``http.server`` in a thread, no framework.

Routes (GET):

- ``/``: the page (``static/index.html``, ``app.js``, ``app.css``: plain HTML/JS/CSS, no CDN).
- ``/api/town``: the grid, locations and agents' public profiles.
- ``/api/state``: the latest state (every agent's position, action, nearby; private state and
  beliefs for operators), the clock's status and the last completed tick.
- ``/api/events?after=SEQ&limit=N``: recent town events (the ``town.events`` topic).
- ``/api/audit?after=SEQ&limit=N``: recent probe calls (``registry.audit``), operators only (403).
- ``/api/stream``: Server-Sent Events: ``state``, ``events`` and (operators) ``audit`` as they change.
- ``/logout``: forget the operator cookie. ``/healthz``: ``ok`` and the feed's counters.
- any ``extra_routes`` path: ``callable() -> (content_type, body)`` (e.g. ``/metrics``).

Operators: when the view has an operator token, ``?token=TOKEN`` on any page sets an HttpOnly
cookie (then redirects to the same page without the token); scripts may send
``Authorization: Bearer TOKEN`` instead. Without a token configured nobody is an operator.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Callable, Mapping
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import structlog

from actors.bus import Bus
from deploy.web.feed import Item, TownFeed
from world import TownDefinition

log = structlog.get_logger("auratown.web")

Route = Callable[[], tuple[str, bytes]]
"""An extra route: returns (content type, body)."""

STATIC = Path(__file__).resolve().parent / "static"
_STATIC_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/app.css": ("app.css", "text/css; charset=utf-8"),
    "/favicon.ico": ("favicon.svg", "image/svg+xml"),
    "/static/favicon.svg": ("favicon.svg", "image/svg+xml"),
}
COOKIE = "auratown_operator"
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
KEEPALIVE_SECONDS = 15.0


def parse_address(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT``, ``PORT`` or ``[V6]:PORT`` -> (host, port). ValueError if invalid."""
    text = text.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    host = host.strip("[]") or default_host
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"expected HOST:PORT, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} is out of range (0-65535)")
    return host, port


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    view: LiveView


class LiveView:
    """A running live view: the feed and the HTTP server in their own threads."""

    def __init__(
        self,
        feed: TownFeed,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        operator_token: str | None = None,
        extra_routes: Mapping[str, Route] | None = None,
    ) -> None:
        self.feed = feed
        self.operator_token = operator_token or None
        self.extra_routes: dict[str, Route] = dict(extra_routes or {})
        self._static = {
            path: ((STATIC / name).read_bytes(), ctype) for path, (name, ctype) in _STATIC_FILES.items()
        }
        server_class = (
            type("_Server6", (_Server,), {"address_family": socket.AF_INET6}) if ":" in host else _Server
        )
        self.server: _Server = server_class((host, port), _Handler)
        self.server.view = self
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        shown = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
        return f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/"

    def operator_url(self) -> str | None:
        return (
            None if self.operator_token is None else f"{self.url}?{urlencode({'token': self.operator_token})}"
        )

    def start(self) -> LiveView:
        self.feed.start()
        self._thread = threading.Thread(target=self.server.serve_forever, name="live-view-http", daemon=True)
        self._thread.start()
        log.info("live view serving", url=self.url, operator=self.operator_token is not None)
        return self

    def stop(self) -> None:
        self.feed.stop()
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join(5)
        self.server.server_close()

    def __enter__(self) -> LiveView:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ operators

    def cookie_value(self) -> str:
        assert self.operator_token is not None
        return hmac.new(
            self.operator_token.encode(), b"auratown live view operator", hashlib.sha256
        ).hexdigest()

    def is_token(self, candidate: str) -> bool:
        return self.operator_token is not None and hmac.compare_digest(
            candidate.encode(), self.operator_token.encode()
        )

    def is_cookie(self, candidate: str) -> bool:
        return self.operator_token is not None and hmac.compare_digest(
            candidate.encode(), self.cookie_value().encode()
        )


def start_live_view(
    bus: Bus,
    definition: TownDefinition,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    operator_token: str | None = None,
    extra_routes: Mapping[str, Route] | None = None,
    **feed_options: Any,
) -> LiveView:
    """Serve the live view of the town on ``bus`` (its namespace) at ``host:port`` (0: any free port)."""
    feed = TownFeed(bus, definition, **feed_options)
    return LiveView(
        feed, host=host, port=port, operator_token=operator_token, extra_routes=extra_routes
    ).start()


def _items(items: list[Item]) -> list[dict[str, Any]]:
    return [{"seq": i.seq, **i.data} for i in items]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "auratown-live-view"
    sys_version = ""

    @property
    def view(self) -> LiveView:
        return self.server.view

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http", client=self.client_address[0], line=format % args)

    # ------------------------------------------------------------------ responses

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        headers: Mapping[str, str] | None = None,
        *,
        head_only: bool = False,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", _CSP)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if not head_only:
            self.wfile.write(body)

    def _json(self, obj: Any, status: int = 200) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode(), "application/json; charset=utf-8")

    def _error(self, status: HTTPStatus, reason: str) -> None:
        self._json({"error": reason}, status)

    # ------------------------------------------------------------------ operators

    def _operator(self, query: dict[str, list[str]]) -> bool | None:
        """True/False: operator or not; None: a wrong token was presented (answer 403)."""
        view = self.view
        if view.operator_token is None:
            return False
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return True if view.is_token(auth[7:].strip()) else None
        if "token" in query:
            return True if view.is_token(query["token"][0]) else None
        try:
            cookie = SimpleCookie(self.headers.get("Cookie", ""))
        except CookieError:
            return False
        morsel = cookie.get(COOKIE)
        return morsel is not None and view.is_cookie(morsel.value)

    # ------------------------------------------------------------------ routing

    def do_HEAD(self) -> None:
        self._route(head_only=True)

    def do_GET(self) -> None:
        self._route(head_only=False)

    def _route(self, *, head_only: bool) -> None:
        try:
            self._dispatch(head_only=head_only)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away
        except Exception:
            log.exception("live view request failed", path=self.path)
            with contextlib.suppress(OSError):  # the headers may be out already
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error")

    def _dispatch(self, *, head_only: bool) -> None:
        url = urlsplit(self.path)
        path, query = url.path, parse_qs(url.query)
        operator = self._operator(query)
        view = self.view
        if operator is None:
            self.send_response(HTTPStatus.FORBIDDEN)
            body = b"wrong operator token\n"
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            # A stale cookie must not lock the browser out of the public view.
            self.send_header("Set-Cookie", f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
            self.end_headers()
            self.wfile.write(body)
            return
        if "token" in query and not path.startswith("/api/"):
            # Remember the operator in a cookie and drop the token from the address bar and history.
            rest = urlencode({k: v for k, v in query.items() if k != "token"}, doseq=True)
            cookie = f"{COOKIE}={view.cookie_value()}; Path=/; HttpOnly; SameSite=Strict"
            self._send(
                HTTPStatus.SEE_OTHER,
                b"",
                "text/plain",
                {"Location": path + (f"?{rest}" if rest else ""), "Set-Cookie": cookie},
            )
            return
        if path in view.extra_routes:
            ctype, body = view.extra_routes[path]()
            self._send(HTTPStatus.OK, body, ctype, head_only=head_only)
            return
        if path in view._static:
            body, ctype = view._static[path]
            self._send(HTTPStatus.OK, body, ctype, head_only=head_only)
            return
        feed = view.feed
        if path == "/api/town":
            self._json(feed.town)
        elif path == "/api/state":
            self._send(HTTPStatus.OK, feed.state_json(operator=operator), "application/json; charset=utf-8")
        elif path == "/api/events":
            after, limit = _int(query, "after", 0), _int(query, "limit", 0) or None
            self._json({"seq": feed.seq, "items": _items(feed.events(after, limit))})
        elif path == "/api/audit":
            if not operator:
                self._error(HTTPStatus.FORBIDDEN, "probe calls are for operators: open the page with ?token=")
                return
            after, limit = _int(query, "after", 0), _int(query, "limit", 0) or None
            self._json({"seq": feed.seq, "items": _items(feed.audit(after, limit))})
        elif path == "/api/stream":
            self._stream(operator)
        elif path == "/logout":
            self._send(
                HTTPStatus.SEE_OTHER,
                b"",
                "text/plain",
                {"Location": "/", "Set-Cookie": f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"},
            )
        elif path == "/healthz":
            self._json({"ok": True, "operator_enabled": view.operator_token is not None, **feed.status()})
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no such page: {path}")

    # ------------------------------------------------------------------ Server-Sent Events

    def _stream(self, operator: bool) -> None:
        feed = self.view.feed
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Accel-Buffering", "no")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        sent_state = b""
        events_after = audit_after = 0
        self._event("hello", json.dumps({"operator": operator}).encode())
        seq = -1
        while not feed.stopped:
            seq = feed.seq
            state = feed.state_json(operator=operator)
            if state != sent_state:
                self._event("state", state)
                sent_state = state
            events = feed.events(events_after)
            if events:
                events_after = events[-1].seq
                self._event("events", json.dumps(_items(events), ensure_ascii=False).encode())
            if operator:
                audit = feed.audit(audit_after)
                if audit:
                    audit_after = audit[-1].seq
                    self._event("audit", json.dumps(_items(audit), ensure_ascii=False).encode())
            self.wfile.flush()
            if feed.wait(seq, KEEPALIVE_SECONDS) == seq and not feed.stopped:
                self.wfile.write(b": keepalive\n\n")
                self.wfile.flush()

    def _event(self, name: str, data: bytes) -> None:
        self.wfile.write(b"event: " + name.encode() + b"\ndata: " + data + b"\n\n")


def _int(query: dict[str, list[str]], name: str, default: int) -> int:
    try:
        return max(0, int(query[name][0]))
    except (KeyError, ValueError):
        return default
