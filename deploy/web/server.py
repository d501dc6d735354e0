"""The live view's HTTP server: the standard library's HTTP handling, no web framework.

Routes (GET):

- ``/``: the page (``static/index.html``, ``app.js``, ``app.css``: plain HTML/JS/CSS, no CDN).
- ``/api/town``: the grid, locations and agents' public profiles.
- ``/api/state``: the latest state (every agent's position, action, nearby; private state and
  beliefs for operators), the clock's status and the last completed tick.
- ``/api/events?after=SEQ&limit=N``: recent town events (the ``town.events`` topic).
- ``/api/audit?after=SEQ&limit=N``: recent probe calls (``registry.audit``), operators only (403).
- ``/api/stream``: Server-Sent Events: ``state``, ``events`` and (operators) ``audit`` as they change.
- ``/logout``: forget the operator cookie. ``/healthz``: ``ok``, the feed's and the server's counters.
- any ``extra_routes`` path: ``callable() -> (content_type, body)``, operators only (``/metrics``:
  a scraper sends ``Authorization: Bearer TOKEN``).

A second address (``LiveViewConfig.scrape_address``, the daemon's ``--metrics-port``) answers the
extra routes and nothing else, without a token: for a scraper on an address the operator chose.
Its connections are served by the same thread and within the same bounds as the page's.

Operators: when the view has an operator token, ``?token=TOKEN`` on any page sets an HttpOnly
cookie (then redirects to the same page without the token) that expires after
``session_seconds``: an expired or altered cookie is refused (and cleared); scripts may send
``Authorization: Bearer TOKEN`` instead. Without a token configured nobody is an operator.

Bounds: one thread (``live-view-http``) accepts connections and reads requests with a selector,
so an open socket that has not sent a whole request costs a file descriptor, never a thread.
At most ``max_connections`` are open (more are answered 503 and closed); a connection must send
its whole request head within ``idle_timeout`` seconds of opening (or of its previous answer, when
kept alive), else it is closed (408 when it had started one). A complete request runs on a thread
of its own, at most ``max_requests`` at once plus ``max_streams`` event streams (beyond: 503).
A write that cannot complete within ``idle_timeout`` (a client that stopped reading) drops the
connection, event streams included.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import io
import json
import selectors
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import structlog
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

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
_CLEAR_COOKIE = f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
KEEPALIVE_SECONDS = 15.0

MAX_CONNECTIONS = 1024
"""Open connections at most (idle, reading a request, or being answered)."""
MAX_REQUESTS = 16
"""Requests answered at once (one thread each), event streams not counted."""
MAX_STREAMS = 32
"""Event streams (``/api/stream``) at once (one thread each)."""
IDLE_TIMEOUT = 10.0
"""Seconds a connection has to send a whole request head; and for a write to complete."""
SESSION_SECONDS = 8 * 3600
"""Lifetime of the operator cookie."""
MAX_REQUEST_HEAD = 16 * 1024
STREAM_SEND_BUFFER = 64 * 1024
"""Kernel send buffer of an event stream: what a client that stopped reading can hold back."""
_STREAM_PATH = "/api/stream"


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


def _status_line(status: HTTPStatus, reason: str) -> bytes:
    body = reason.encode() + b"\n"
    return (
        f"HTTP/1.1 {status.value} {status.phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\nCache-Control: no-store\r\n"
        + ("Retry-After: 5\r\n" if status == HTTPStatus.SERVICE_UNAVAILABLE else "")
        + "\r\n"
    ).encode() + body


class LiveViewConfig(BaseModel):
    """Where the live view listens, who is an operator, and its bounds (see the module's docstring)."""

    model_config = ConfigDict(frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)
    """0: a free port (``LiveView.address`` tells which)."""
    operator_token: str | None = None
    """Without one nobody is an operator (and the extra routes answer nobody on the page's address)."""
    scrape_address: tuple[str, int] | None = None
    """(host, port) where the extra routes, and nothing else, are answered without a token."""
    max_connections: PositiveInt = MAX_CONNECTIONS
    max_requests: PositiveInt = MAX_REQUESTS
    max_streams: PositiveInt = MAX_STREAMS
    idle_timeout: PositiveFloat = IDLE_TIMEOUT
    session_seconds: PositiveInt = SESSION_SECONDS


class ScrapeAddressError(OSError):
    """The scrape address could not be listened on (the page's address could)."""


def _listen(host: str, port: int) -> socket.socket:
    """A non-blocking socket listening on ``host:port`` (IPv6 when the host is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family, backlog=1024)
    except OSError as exc:
        # create_server appends "(while attempting to bind on address ...)": callers name it.
        raise OSError(exc.errno, (exc.strerror or str(exc)).partition(" (while attempting")[0]) from None
    sock.setblocking(False)
    return sock


def _http_url(address: tuple[str, int], path: str) -> str:
    """``http://HOST:PORT/PATH`` to reach ``address``; a wildcard host is reached on loopback."""
    host, port = address
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{shown}]:{port}{path}" if ":" in shown else f"http://{shown}:{port}{path}"


@dataclass(frozen=True)
class _Listener:
    sock: socket.socket
    scrape: bool
    """The scrape address: only the extra routes, no token needed."""


@dataclass(slots=True, eq=False)  # eq=False: hashed by identity (the pending connections' keys)
class _Conn:
    """A connection the accepting thread watches: it has not sent a whole request yet."""

    sock: socket.socket
    address: Any
    buffer: bytes
    deadline: float
    scrape: bool
    """Accepted on the scrape address."""


class _SocketWriter(io.BufferedIOBase):
    """``wfile``: every write goes straight to the socket (within its timeout)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self._sock.sendall(b)
        return len(b)


class LiveView:
    """A running live view: the feed and the HTTP server in their own threads."""

    def __init__(
        self,
        feed: TownFeed,
        config: LiveViewConfig | None = None,
        *,
        extra_routes: Mapping[str, Route] | None = None,
    ) -> None:
        """Listen on ``config.host:port`` (and its scrape address); OSError if it cannot,
        ``ScrapeAddressError`` when only the scrape address cannot."""
        self.feed = feed
        self.config = config = config or LiveViewConfig()
        self.operator_token = config.operator_token or None
        self.idle_timeout = config.idle_timeout
        self.session_seconds = config.session_seconds
        self.extra_routes: dict[str, Route] = dict(extra_routes or {})
        self._static = {
            path: ((STATIC / name).read_bytes(), ctype) for path, (name, ctype) in _STATIC_FILES.items()
        }
        self._listeners = [_Listener(_listen(config.host, config.port), scrape=False)]
        if config.scrape_address is not None:
            try:
                self._listeners.append(_Listener(_listen(*config.scrape_address), scrape=True))
            except OSError as exc:
                self._listeners[0].sock.close()
                raise ScrapeAddressError(exc.errno, exc.strerror) from exc
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._pending: dict[_Conn, None] = {}  # insertion order is deadline order
        self._returned: list[_Conn] = []  # kept-alive connections handed back by request threads
        self._lock = threading.Lock()
        self._open = self._requests = self._streams = 0
        self.counters = {"accepted": 0, "refused": 0, "timed_out": 0, "dropped": 0, "served": 0}
        self._stopping = threading.Event()
        self._accept_paused_until = 0.0
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        """Where the page is served: (host, port), the port chosen when 0 was asked for."""
        host, port = self._listeners[0].sock.getsockname()[:2]
        return str(host), int(port)

    @property
    def scrape_address(self) -> tuple[str, int] | None:
        """Where the extra routes are answered without a token, if anywhere."""
        if len(self._listeners) < 2:
            return None
        host, port = self._listeners[1].sock.getsockname()[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        return _http_url(self.address, "/")

    def scrape_url(self, path: str) -> str | None:
        """The extra route ``path`` on the scrape address (None without one)."""
        address = self.scrape_address
        return None if address is None else _http_url(address, path)

    def operator_url(self) -> str | None:
        return (
            None if self.operator_token is None else f"{self.url}?{urlencode({'token': self.operator_token})}"
        )

    def start(self) -> LiveView:
        self.feed.start()
        for listener in self._listeners:
            self._selector.register(listener.sock, selectors.EVENT_READ, listener)
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._wake_r)
        self._thread = threading.Thread(target=self._serve, name="live-view-http", daemon=True)
        self._thread.start()
        log.info("live view serving", url=self.url, operator=self.operator_token is not None)
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.feed.stop()  # wakes the event streams, which then end
        self._wake()
        if self._thread is not None:
            self._thread.join(5)
        for conn in list(self._pending):
            self._close(conn)
        with self._lock:
            returned, self._returned = self._returned, []
        for conn in returned:
            self._close(conn)
        self._selector.close()
        for listener in self._listeners:
            listener.sock.close()
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> LiveView:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def status(self) -> dict[str, Any]:
        """The server's counters (``/healthz``)."""
        with self._lock:
            return {
                "connections": self._open,
                "requests": self._requests,
                "streams": self._streams,
                **self.counters,
                "limits": self.config.model_dump(
                    include={
                        "max_connections",
                        "max_requests",
                        "max_streams",
                        "idle_timeout",
                        "session_seconds",
                    }
                ),
            }

    # ------------------------------------------------------------------ the accepting thread

    def _serve(self) -> None:
        try:
            while not self._stopping.is_set():
                self._expire(time.monotonic())
                timeout = 0.5
                if self._pending:
                    first = next(iter(self._pending))
                    timeout = min(timeout, max(0.0, first.deadline - time.monotonic()))
                if self._accept_paused_until and time.monotonic() >= self._accept_paused_until:
                    self._accept_paused_until = 0.0
                    for listener in self._listeners:
                        self._selector.register(listener.sock, selectors.EVENT_READ, listener)
                for key, _ in self._selector.select(timeout):
                    if isinstance(key.data, _Listener):
                        self._accept(key.data)
                    elif key.data is self._wake_r:
                        self._take_returned()
                    else:
                        self._read(key.data)
        except Exception:  # pragma: no cover - a bug here would silently stop the view: say so
            if not self._stopping.is_set():
                log.exception("live view server failed")

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _take_returned(self) -> None:
        with contextlib.suppress(OSError):
            while self._wake_r.recv(4096):
                pass
        with self._lock:
            returned, self._returned = self._returned, []
        for conn in returned:
            self._watch(conn)
            if conn.buffer:  # a pipelined request already read
                self._read(conn, receive=False)

    def _watch(self, conn: _Conn) -> None:
        try:
            conn.sock.setblocking(False)
            self._selector.register(conn.sock, selectors.EVENT_READ, conn)
        except (OSError, ValueError):
            self._close(conn, watched=False)
            return
        self._pending[conn] = None

    def _accept(self, listener: _Listener) -> None:
        while True:
            try:
                sock, address = listener.sock.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    # Out of descriptors: stop accepting for a moment rather than spin.
                    log.warning("live view cannot accept", error=str(exc))
                    for each in self._listeners:
                        with contextlib.suppress(KeyError, ValueError):
                            self._selector.unregister(each.sock)
                    self._accept_paused_until = time.monotonic() + 0.25
                return
            with self._lock:
                full = self._open >= self.config.max_connections
                if full:
                    self.counters["refused"] += 1
                else:
                    self._open += 1
                    self.counters["accepted"] += 1
            if full:
                _refuse(sock, _status_line(HTTPStatus.SERVICE_UNAVAILABLE, "too many connections"))
                continue
            deadline = time.monotonic() + self.idle_timeout
            self._watch(_Conn(sock, address, b"", deadline, scrape=listener.scrape))

    def _expire(self, now: float) -> None:
        while self._pending:
            conn = next(iter(self._pending))
            if conn.deadline > now:
                return
            with self._lock:
                self.counters["timed_out"] += 1
            if conn.buffer:  # it started a request and did not finish it in time
                with contextlib.suppress(OSError):
                    conn.sock.send(_status_line(HTTPStatus.REQUEST_TIMEOUT, "request not received in time"))
            self._close(conn)

    def _read(self, conn: _Conn, *, receive: bool = True) -> None:
        if receive:
            try:
                data = conn.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._close(conn)
                return
            conn.buffer += data
        head_end = conn.buffer.find(b"\r\n\r\n")
        if head_end < 0:
            if len(conn.buffer) > MAX_REQUEST_HEAD:
                self._refuse(conn, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request head too large")
            return
        if head_end + 4 > MAX_REQUEST_HEAD:
            self._refuse(conn, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request head too large")
            return
        head, conn.buffer = conn.buffer[: head_end + 4], conn.buffer[head_end + 4 :]
        target = head.split(b"\r\n", 1)[0].split(b" ")
        stream = len(target) > 1 and urlsplit(target[1].decode("latin-1")).path == _STREAM_PATH
        with self._lock:
            limits = self.config
            busy = self._streams >= limits.max_streams if stream else self._requests >= limits.max_requests
            if busy:
                self.counters["refused"] += 1
            elif stream:
                self._streams += 1
            else:
                self._requests += 1
        if busy:
            what = "too many event streams" if stream else "too many requests"
            self._refuse(conn, HTTPStatus.SERVICE_UNAVAILABLE, what, counted=True)
            return
        self._unwatch(conn)
        threading.Thread(
            target=self._answer, args=(conn, head, stream), name="live-view-request", daemon=True
        ).start()

    def _refuse(self, conn: _Conn, status: HTTPStatus, reason: str, *, counted: bool = False) -> None:
        if not counted:
            with self._lock:
                self.counters["refused"] += 1
        self._unwatch(conn)
        _refuse(conn.sock, _status_line(status, reason))
        with self._lock:
            self._open -= 1

    def _unwatch(self, conn: _Conn) -> None:
        self._pending.pop(conn, None)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(conn.sock)

    def _close(self, conn: _Conn, *, watched: bool = True) -> None:
        if watched:
            self._unwatch(conn)
        _close(conn.sock)
        with self._lock:
            self._open -= 1

    # ------------------------------------------------------------------ request threads

    def _answer(self, conn: _Conn, head: bytes, stream: bool) -> None:
        keep = False
        try:
            conn.sock.setblocking(True)
            conn.sock.settimeout(self.idle_timeout)
            if stream:
                with contextlib.suppress(OSError):
                    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, STREAM_SEND_BUFFER)
            handler = _Handler(conn, self, head)
            keep = not handler.close_connection and not self._stopping.is_set()
            with self._lock:
                self.counters["served"] += 1
                if handler.dropped:
                    self.counters["dropped"] += 1
        except Exception:
            log.debug("live view request ended", exc_info=True)
        finally:
            with self._lock:
                if stream:
                    self._streams -= 1
                else:
                    self._requests -= 1
                if keep:
                    conn.deadline = time.monotonic() + self.idle_timeout
                    self._returned.append(conn)
            if keep:
                self._wake()
            else:
                _close(conn.sock)
                with self._lock:
                    self._open -= 1

    # ------------------------------------------------------------------ operators

    def _mac(self, expires: int) -> str:
        assert self.operator_token is not None
        message = b"auratown live view operator\n" + str(expires).encode()
        return hmac.new(self.operator_token.encode(), message, hashlib.sha256).hexdigest()

    def cookie_value(self, now: float | None = None) -> str:
        """A new operator session: ``EXPIRES.MAC`` (Unix seconds; HMAC-SHA256 keyed by the token)."""
        expires = int(time.time() if now is None else now) + self.session_seconds
        return f"{expires}.{self._mac(expires)}"

    def session_expiry(self, candidate: str, now: float | None = None) -> int | None:
        """When the operator cookie ``candidate`` expires (Unix seconds), or None: not valid now
        (expired, altered, minted for a longer lifetime than the current one, no token)."""
        if self.operator_token is None:
            return None
        expires_text, _, mac = candidate.partition(".")
        if not expires_text.isdigit() or len(expires_text) > 12:
            return None
        expires, now = int(expires_text), time.time() if now is None else now
        if not now < expires <= now + self.session_seconds + 60:
            return None
        return expires if hmac.compare_digest(mac.encode(), self._mac(expires).encode()) else None

    def is_token(self, candidate: str) -> bool:
        return self.operator_token is not None and hmac.compare_digest(
            candidate.encode(), self.operator_token.encode()
        )

    def is_cookie(self, candidate: str) -> bool:
        return self.session_expiry(candidate) is not None


def _refuse(sock: socket.socket, response: bytes) -> None:
    """Answer ``response`` without blocking the accepting thread, then close."""
    with contextlib.suppress(OSError):
        sock.setblocking(False)
        sock.send(response)
        with contextlib.suppress(OSError):
            sock.recv(65536)  # what the client sent: closing on unread data would reset the answer
        sock.shutdown(socket.SHUT_WR)
    _close(sock)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()


def start_live_view(
    bus: Bus,
    definition: TownDefinition,
    config: LiveViewConfig | None = None,
    *,
    extra_routes: Mapping[str, Route] | None = None,
    **feed_options: Any,
) -> LiveView:
    """Serve the live view of the town on ``bus`` (its namespace) as ``config`` says (by default
    on a free port of loopback); ``feed_options``: ``TownFeed``'s."""
    return LiveView(TownFeed(bus, definition, **feed_options), config, extra_routes=extra_routes).start()


def _items(items: list[Item]) -> list[dict[str, Any]]:
    return [{"seq": i.seq, **i.data} for i in items]


class _Handler(BaseHTTPRequestHandler):
    """Answers one request whose head the accepting thread has read (``GET``/``HEAD`` only)."""

    protocol_version = "HTTP/1.1"
    server_version = "auratown-live-view"
    sys_version = ""

    def __init__(self, conn: _Conn, view: LiveView, head: bytes) -> None:
        # Not BaseRequestHandler.__init__: no socketserver here, and exactly one request.
        self.request = self.connection = conn.sock
        self.client_address = conn.address
        self.scrape = conn.scrape
        self.view = view
        self.rfile = io.BytesIO(head)
        self.wfile = _SocketWriter(conn.sock)
        self.close_connection = True
        self.dropped = False
        self._cookie_header: str | None = None
        self._session_expires: int | None = None
        self.handle_one_request()
        headers = getattr(self, "headers", None)  # none when the request line was not HTTP
        if headers is not None and (
            headers.get("Transfer-Encoding") or headers.get("Content-Length", "0").strip() != "0"
        ):
            self.close_connection = True  # a body it did not read: the connection cannot be reused

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
        headers = dict(headers or {})
        if self._cookie_header is not None:
            headers.setdefault("Set-Cookie", self._cookie_header)
        for name, value in headers.items():
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
        """True/False: operator or not; None: a wrong token was presented (answer 403). An expired
        or altered cookie makes a public visitor, and is cleared."""
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
        if morsel is None:
            return False
        self._session_expires = view.session_expiry(morsel.value)
        if self._session_expires is None:
            self._cookie_header = _CLEAR_COOKIE
            return False
        return True

    # ------------------------------------------------------------------ routing

    def do_HEAD(self) -> None:
        self._route(head_only=True)

    def do_GET(self) -> None:
        self._route(head_only=False)

    def _route(self, *, head_only: bool) -> None:
        try:
            self._dispatch(head_only=head_only)
        except OSError:  # the client went away, or stopped reading: drop it
            self.close_connection = True
            self.dropped = True
        except Exception:
            log.exception("live view request failed", path=self.path)
            self.close_connection = True
            with contextlib.suppress(OSError):  # the headers may be out already
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error")

    def _dispatch(self, *, head_only: bool) -> None:
        url = urlsplit(self.path)
        path, query = url.path, parse_qs(url.query)
        view = self.view
        if self.scrape:  # the scrape address: the extra routes, no page, no operators
            if path in view.extra_routes:
                self._extra_route(path, head_only=head_only)
            else:
                self._error(
                    HTTPStatus.NOT_FOUND, f"this address serves {', '.join(sorted(view.extra_routes))}"
                )
            return
        operator = self._operator(query)
        if operator is None:
            # A stale cookie must not lock the browser out of the public view.
            self._send(
                HTTPStatus.FORBIDDEN,
                b"wrong operator token\n",
                "text/plain; charset=utf-8",
                {"Set-Cookie": _CLEAR_COOKIE},
            )
            return
        if "token" in query and not path.startswith("/api/"):
            # Remember the operator in a cookie and drop the token from the address bar and history.
            rest = urlencode({k: v for k, v in query.items() if k != "token"}, doseq=True)
            cookie = (
                f"{COOKIE}={view.cookie_value()}; Path=/; Max-Age={view.session_seconds}; "
                "HttpOnly; SameSite=Strict"
            )
            self._send(
                HTTPStatus.SEE_OTHER,
                b"",
                "text/plain",
                {"Location": path + (f"?{rest}" if rest else ""), "Set-Cookie": cookie},
            )
            return
        if path in view.extra_routes:
            if not operator:
                reason = (
                    f"{path} is for operators: send Authorization: Bearer <operator token>"
                    if view.operator_token is not None
                    else f"{path} needs an operator token on this view (--operator-token)"
                )
                self._error(HTTPStatus.FORBIDDEN, reason)
                return
            self._extra_route(path, head_only=head_only)
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
        elif path == _STREAM_PATH:
            self._stream(operator)
        elif path == "/logout":
            self._send(
                HTTPStatus.SEE_OTHER, b"", "text/plain", {"Location": "/", "Set-Cookie": _CLEAR_COOKIE}
            )
        elif path == "/healthz":
            self._json(
                {
                    "ok": True,
                    "operator_enabled": view.operator_token is not None,
                    **feed.status(),
                    "server": view.status(),
                }
            )
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no such page: {path}")

    def _extra_route(self, path: str, *, head_only: bool) -> None:
        ctype, body = self.view.extra_routes[path]()
        self._send(HTTPStatus.OK, body, ctype, head_only=head_only)

    # ------------------------------------------------------------------ Server-Sent Events

    def _stream(self, operator: bool) -> None:
        """Until the view stops, the client goes away or stops reading (a write that does not
        complete within the idle timeout), or the operator's session expires (the page then
        reconnects as the public)."""
        feed = self.view.feed
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Accel-Buffering", "no")
        self.send_header("Connection", "close")
        if self._cookie_header is not None:
            self.send_header("Set-Cookie", self._cookie_header)
        self.end_headers()
        self.close_connection = True
        sent_state = b""
        events_after = audit_after = 0
        self._event("hello", json.dumps({"operator": operator}).encode())
        seq = -1
        while not feed.stopped:
            if self._session_expires is not None and time.time() >= self._session_expires:
                return
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
            if feed.wait(seq, KEEPALIVE_SECONDS) == seq and not feed.stopped:
                self.wfile.write(b": keepalive\n\n")

    def _event(self, name: str, data: bytes) -> None:
        self.wfile.write(b"event: " + name.encode() + b"\ndata: " + data + b"\n\n")


def _int(query: dict[str, list[str]], name: str, default: int) -> int:
    try:
        return max(0, int(query[name][0]))
    except (KeyError, ValueError):
        return default
