"""A tiny OpenAI-compatible chat server for tests: scripted replies, counted requests.

Serves ``POST /v1/chat/completions`` on a free port of 127.0.0.1 from a thread. Each request
takes the next scripted ``Reply`` (valid or invalid JSON content, an empty body, an HTTP error,
a reply held longer than the client's timeout); an unscripted request gets a 400 so a test that
makes more calls than it expects fails loudly instead of hanging.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from actors.llm import GatewayConfig


@dataclass(frozen=True)
class Reply:
    status: int = 200
    content: str | None = None
    """The assistant message of a 200 chat completion."""
    body: bytes | None = None
    """Sent as is instead of a chat completion (an error document, or b"" for an empty body)."""
    hold: float = 0.0
    """Seconds to wait before replying; cut short when the stub stops or the client leaves."""
    trickle: float = 0.0
    """Seconds between the body's bytes: a reply that streams slowly, evading a per-read timeout."""
    cut: bool = False
    """Streamed: ``[DONE]`` comes before the answer's end (no finish reason, no usage), as
    llama-cpp-python's server ends a request when another one arrives (``--interrupt_requests``)."""


def ok(content: str) -> Reply:
    return Reply(content=content)


def json_reply(value: Any) -> Reply:
    return Reply(content=json.dumps(value))


def interrupted(content: str = '{"literal_need": "wh') -> Reply:
    return Reply(content=content, cut=True)


def empty_body() -> Reply:
    return Reply(body=b"")


def http_error(status: int, message: str = "stub error") -> Reply:
    error = {"error": {"message": message, "type": "stub_error", "param": None, "code": str(status)}}
    return Reply(status=status, body=json.dumps(error).encode())


def slow(content: str = "{}", hold: float = 10.0) -> Reply:
    return Reply(content=content, hold=hold)


def hang() -> Reply:
    """A request never answered (held until the stub stops): a model that always times out."""
    return Reply(content="{}", hold=3600.0)


def trickled(content: str = "{}", every: float = 0.1) -> Reply:
    """A reply whose body comes one byte every ``every`` seconds (a server generating slowly)."""
    return Reply(content=content, trickle=every)


CONTEXT_OVERFLOW = "the request exceeds the available context size, try increasing it"
"""llama.cpp's server's 400 for a prompt longer than its context."""

RESPONSE_FORMAT_REFUSED = "'response_format' of type 'json_schema' is not supported by this server"
LLAMA_CPP_PYTHON_REFUSAL = (
    "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)
"""What llama-cpp-python's server (the README's local model) answers a json_schema response_format."""


def rate_limited() -> Reply:
    return http_error(429, "rate limit exceeded")


def server_error() -> Reply:
    return http_error(500, "internal server error")


GARBAGE = "{not json, 'yes': YES ,,"
"""What a broken model says: neither JSON nor prose."""


def garbage(text: str = GARBAGE) -> Reply:
    return ok(text)


def always(reply: Reply) -> Callable[[dict[str, Any]], Reply]:
    """A responder giving every request ``reply`` (``OpenAIStub(responder=always(hang()))``)."""
    return lambda request: reply


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    stub: OpenAIStub


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = {"unparsable": raw.decode(errors="replace")}
        stub = self.server.stub
        reply = stub._take(self.path, request)
        if reply.hold and not self._hold(reply.hold):
            stub._disconnected()
            return
        status, body = reply.status, reply.body
        if body is None and request.get("stream"):
            self._stream(request, reply)
            return
        if body is None:
            body = json.dumps(_chat_completion(request, reply.content or "", stub.request_count)).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if reply.trickle:
                for i in range(len(body)):
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    if stub._release.wait(reply.trickle):
                        return
            else:
                self.wfile.write(body)
        except OSError:
            stub._disconnected()  # the client left (gave up) while we were answering

    def _stream(self, request: dict[str, Any], reply: Reply) -> None:
        """The answer as server-sent events (``stream: true``): the content in one chunk, or one
        character a chunk ``trickle`` seconds apart, then the usage and ``[DONE]``."""
        stub = self.server.stub
        whole = _chat_completion(request, reply.content or "", stub.request_count)
        base = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
        content = reply.content or ""
        pieces = list(content) if reply.trickle else [content]
        events = [
            base
            | {
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": piece}, "finish_reason": None}
                ]
            }
            for piece in pieces
        ]
        if not reply.cut:
            events.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            events.append(base | {"choices": [], "usage": whole["usage"]})
        self.close_connection = True  # the stream's end is the connection's
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for event in events:
                self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                self.wfile.flush()
                if reply.trickle and stub._release.wait(reply.trickle):
                    return
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except OSError:
            stub._disconnected()

    def _hold(self, seconds: float) -> bool:
        """Wait ``seconds`` (or until the stub stops) as a generating server does: watching the
        connection, as llama.cpp does. False when the client closed it meanwhile."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.server.stub._release.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.02)
            if readable:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return False
                except OSError:
                    return False
        return True


def _prompt_words(request: dict[str, Any]) -> int:
    """The stub's token count: words (a stand-in tokenizer, like a local server's own)."""
    return sum(len(str(m.get("content", "")).split()) for m in request.get("messages", []))


def _chat_completion(request: dict[str, Any], content: str, n: int) -> dict[str, Any]:
    prompt_words = _prompt_words(request)
    completion_words = len(content.split())
    return {
        "id": f"chatcmpl-stub-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "stub"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_words,
            "completion_tokens": completion_words,
            "total_tokens": prompt_words + completion_words,
        },
    }


class OpenAIStub:
    """``with OpenAIStub() as stub: stub.script(ok("hi")); ... api_base=stub.url``."""

    def __init__(
        self,
        responder: Callable[[dict[str, Any]], Reply] | None = None,
        *,
        context_size: int | None = None,
        refuse_response_format: bool | str = False,
    ) -> None:
        """``responder``: answers a request when no scripted reply is left (a long run's model).
        ``context_size``: a request whose prompt words plus ``max_tokens`` exceed it gets
        llama.cpp's 400 (``CONTEXT_OVERFLOW``); ``refuse_response_format``: a request with a
        ``response_format`` gets a 400 saying so; ``"json_schema"``: only that form is refused, with
        llama-cpp-python's 500 (``json_object`` with a ``schema`` is taken). Neither takes a
        scripted reply."""
        self._responder = responder
        self.context_size = context_size
        self.refuse_response_format = refuse_response_format
        self._disconnects: list[float] = []
        self._disconnect = threading.Event()
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque()
        self._requests: list[dict[str, Any]] = []
        self._paths: list[str] = []
        self._release = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.stub = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="openai-stub", daemon=True
        )

    @property
    def url(self) -> str:
        """The ``api_base`` to give litellm (``openai/<model>`` models)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    @property
    def paths(self) -> list[str]:
        with self._lock:
            return list(self._paths)

    @property
    def pending(self) -> int:
        """Scripted replies not taken yet."""
        with self._lock:
            return len(self._replies)

    def _take(self, path: str, request: dict[str, Any]) -> Reply:
        with self._lock:
            self._requests.append(request)
            self._paths.append(path)
            if path.rstrip("/") != "/v1/chat/completions":
                return http_error(404, f"no route {path}")
            form = (request.get("response_format") or {}).get("type")
            if self.refuse_response_format is True and form is not None:
                return http_error(400, RESPONSE_FORMAT_REFUSED)
            if self.refuse_response_format == form == "json_schema":
                return http_error(500, LLAMA_CPP_PYTHON_REFUSAL)
            if self.context_size is not None:
                words = _prompt_words(request) + int(request.get("max_tokens") or 0)
                if words > self.context_size:
                    return http_error(400, CONTEXT_OVERFLOW)
            if self._replies:
                return self._replies.popleft()
        if self._responder is not None:
            return self._responder(request)
        return http_error(400, "unscripted request")

    def _disconnected(self) -> None:
        with self._lock:
            self._disconnects.append(time.monotonic())
        self._disconnect.set()

    def wait_disconnect(self, timeout: float) -> float | None:
        """``time.monotonic()`` when a client first closed its connection before its answer was
        complete (a request given up on), waiting up to ``timeout`` seconds; None if none did."""
        if not self._disconnect.wait(timeout):
            return None
        with self._lock:
            return self._disconnects[0]

    def start(self) -> OpenAIStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def config(
        self, *, timeout: float, max_retries: int, backoff: float = 0.001, **more: Any
    ) -> GatewayConfig:
        """A gateway's configuration that talks to this stub (``more``: any other field)."""
        return GatewayConfig(
            model="openai/stub-model",
            api_base=self.url,
            api_key="sk-stub",
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            **more,
        )
