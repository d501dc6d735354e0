"""A request's own HTTP connection to an OpenAI-compatible server, shut when nobody waits for it.

The gateway gives up on a request at its deadline, but the thread running ``litellm.completion``
stays blocked on the socket, and a server such as llama.cpp keeps generating for a client that
left: the next requests queue behind it and time out too. Closing the socket from the waiting
thread is not enough on Linux (a ``recv`` blocked in another thread keeps the socket open and no
FIN is sent), so every socket of the request's client is ``shutdown``: the server sees the client
go and cancels the generation, and the blocked thread wakes at once.

Imported by the gateway on the first request only (httpx and openai load with litellm anyway).
"""

from __future__ import annotations

import contextlib
import re
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import certifi
import httpcore
import httpx
import openai


class _RecordingBackend(httpcore.SyncBackend):
    """httpcore's own sockets, each remembered so it can be shut down from another thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sockets: list[socket.socket] = []

    def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        stream = super().connect_tcp(*args, **kwargs)
        sock = stream.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            with self._lock:
                self.sockets.append(sock)
        return stream


_FINISH = re.compile(rb'"finish_reason"\s*:\s*"')


class _FinishWatch:
    """Reads along the response's bytes for a non-null ``finish_reason``."""

    def __init__(self) -> None:
        self.seen = False
        self.streamed = False

    def watch(self, response: httpx.Response) -> None:
        self.streamed = self.streamed or response.headers.get("content-type", "").startswith(
            "text/event-stream"
        )
        response.stream = _Watched(response.stream, self)  # type: ignore[assignment]


class _Watched(httpx.SyncByteStream):
    def __init__(self, stream: Any, watch: _FinishWatch) -> None:
        self._stream = stream
        self._watch = watch

    def __iter__(self) -> Iterator[bytes]:
        tail = b""
        for part in self._stream:
            if not self._watch.seen:
                window = tail + part
                self._watch.seen = _FINISH.search(window) is not None
                tail = window[-40:]  # a marker split between two reads
            yield part

    def close(self) -> None:
        self._stream.close()


class Connection:
    """An ``openai.OpenAI`` client (litellm's ``client=``) of one request: ``abandon`` from any
    thread ends it; ``close`` in the request's thread frees it."""

    def __init__(self, *, base_url: str, api_key: str, timeout: float) -> None:
        self._backend = _RecordingBackend()
        transport = httpx.HTTPTransport(retries=0)
        # httpx takes no network backend, so its pool is swapped for one with ours; the same
        # settings httpx gives it (TLS from certifi, HTTP/1.1). A test holds this to httpx's API.
        transport._pool = httpcore.ConnectionPool(
            ssl_context=ssl.create_default_context(cafile=certifi.where()),
            network_backend=self._backend,
        )
        self._finish = _FinishWatch()
        self._http = httpx.Client(
            transport=transport, timeout=timeout, event_hooks={"response": [self._finish.watch]}
        )
        self.client = openai.OpenAI(
            api_key=api_key, base_url=base_url, http_client=self._http, max_retries=0, timeout=timeout
        )

    @property
    def cut_short(self) -> bool:
        """Whether the server streamed an answer without saying how it ended (no ``finish_reason``):
        a stream a server cut short (llama-cpp-python ends a request when another arrives), for
        which the client library makes up an ending."""
        return self._finish.streamed and not self._finish.seen

    def abandon(self) -> None:
        """Shut every socket of the request now: the server stops, the blocked thread wakes."""
        with self._backend._lock:
            sockets = list(self._backend.sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._http.close()
