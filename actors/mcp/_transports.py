"""Serving an ``EpisodeMcpServer``: streamable HTTP (uvicorn) behind a bearer-token gate, or stdio.

HTTP listens on 127.0.0.1 unless told otherwise. Listening on anything but loopback needs a token;
when a token is set, every request must carry ``Authorization: Bearer <token>`` (compared in
constant time), on loopback too, or it is answered 401.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import signal
import socket
import threading
from types import FrameType

import uvicorn
from mcp.server.stdio import stdio_server
from starlette.types import ASGIApp, Receive, Scope, Send

from actors.mcp._server import EpisodeMcpServer

MCP_PATH = "/mcp"


class InsecureBindError(ValueError):
    """Listening beyond this machine without a token."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_bind(host: str, token: str | None) -> None:
    """Raise ``InsecureBindError`` for a non-loopback address without a token."""
    if not token and not is_loopback(host):
        raise InsecureBindError(
            f"{host} is reachable from other machines: give --token (or set $AURATOWN_MCP_TOKEN) "
            "to require it from every client, or listen on 127.0.0.1"
        )


class BearerTokenGate:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("an empty token opens the gate to everyone")
        self.app = app
        self._token = token.encode()

    def _authorized(self, scope: Scope) -> bool:
        given = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, credentials = bytes(value).partition(b" ")
                if scheme.lower() == b"bearer":
                    given = credentials.strip()
                break
        return hmac.compare_digest(given, self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # a websocket: closed unanswered
        body = json.dumps({"error": "unauthorized", "detail": "send Authorization: Bearer <token>"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="auratown-mcp"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_app(mcp: EpisodeMcpServer, *, host: str, token: str | None) -> ASGIApp:
    """The streamable HTTP app at ``/mcp`` (DNS-rebinding checks on loopback), gated by ``token``."""
    app: ASGIApp = mcp.server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    return BearerTokenGate(app, token) if token else app


def _served(signum: int, frame: FrameType | None) -> None:
    """The signal uvicorn raises again after its graceful shutdown: nothing left to do."""


class _Uvicorn(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, mcp: EpisodeMcpServer) -> None:
        super().__init__(config)
        self.mcp = mcp

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # On the server's loop, before uvicorn waits for open connections: the open listen streams
        # end at once instead of holding the shutdown to its grace period.
        self.mcp.close()
        await super().shutdown(sockets)


class HttpEndpoint:
    """``mcp`` served over streamable HTTP at ``host:port`` (port 0: a free one, see ``url``).

    The socket is bound (and listening) when this is made, so a bad address fails at once and a
    client may connect before the server loop runs: it is answered once the loop starts.
    """

    def __init__(
        self, mcp: EpisodeMcpServer, host: str = "127.0.0.1", port: int = 0, *, token: str | None = None
    ):
        check_bind(host, token)
        self.mcp = mcp
        self.host = host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host, port))
            self.socket.listen(128)
        except OSError:
            self.socket.close()
            raise
        self.port: int = self.socket.getsockname()[1]
        config = uvicorn.Config(
            http_app(mcp, host=host, token=token),
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=2,
        )
        self.server = _Uvicorn(config, mcp)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{MCP_PATH}"

    def run(self) -> None:
        """Serve until SIGINT/SIGTERM, then return (call from the main thread)."""
        # uvicorn shuts down gracefully on either signal, then raises it again under the handlers it
        # found: with these, serving simply ends and the caller cleans up (the bridge leaves).
        previous = {sig: signal.signal(sig, _served) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.server.run(sockets=[self.socket])
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._release()

    def start(self) -> HttpEndpoint:
        """Serve in a background thread (tests, embedding); ``stop()`` ends it."""

        def serve() -> None:
            asyncio.run(self.server.serve(sockets=[self.socket]))

        self._thread = threading.Thread(target=serve, name=f"mcp-http-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self._release()

    def _release(self) -> None:
        with contextlib.suppress(OSError):
            self.socket.close()


async def serve_stdio(mcp: EpisodeMcpServer) -> None:
    """Serve one client on this process's stdin/stdout until it closes them."""
    async with stdio_server() as (read_stream, write_stream):
        try:
            await mcp.server.run(read_stream, write_stream, mcp.server.create_initialization_options())
        finally:
            mcp.close()
