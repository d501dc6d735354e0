"""The live view under hostile clients (issue 13, defect 7), against ``auratown daemon --http`` in
a process of its own on the private Redis, with real sockets on loopback:

- 800 idle and half-sent connections cost no thread each: the daemon's thread count stays flat,
  a normal client is answered meanwhile, and every one of them is closed at the idle timeout
  (half-sent ones with 408, even when they trickle a byte at a time); beyond the connection limit
  a new connection is answered 503 at once;
- event streams are limited (503 beyond), and a stream whose client stopped reading is dropped;
- ``/metrics`` needs the operator token; the operator cookie expires and is then refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import Processes, wait_until
from tests.integration.test_live_view import fetch, free_port

pytestmark = pytest.mark.redis

IDLE = 3.0
SESSION = 3
MAX_CONNECTIONS = 900
MAX_STREAMS = 2
FLOOD = 800


@dataclass
class Daemon:
    base: str
    port: int
    pid: int
    token: str

    def threads(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/task"))

    def server(self) -> dict[str, Any]:
        status, _, body = fetch(self.base + "/healthz")
        assert status == 200, body
        result: dict[str, Any] = json.loads(body)["server"]
        return result


@pytest.fixture
def daemon(
    processes: Processes, redis_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Daemon]:
    token = f"op-{uuid.uuid4().hex}"
    monkeypatch.setenv("AURATOWN_OPERATOR_TOKEN", token)
    port = free_port()
    proc = processes.start_module(
        "deploy.cli",
        "daemon",
        *("--redis", redis_url, "--namespace", namespace, "--seed", "7", "--speed", "10"),
        *("--http", f"127.0.0.1:{port}", "--http-idle-timeout", str(IDLE)),
        *("--http-max-connections", str(MAX_CONNECTIONS), "--http-max-streams", str(MAX_STREAMS)),
        *("--operator-session", str(SESSION)),
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def serving() -> bool:
        # Up, and the town's first state read (a busy machine can start the view before it).
        try:
            status, _, body = fetch(base + "/api/state")
        except OSError:
            return False
        return status == 200 and json.loads(body).get("state") is not None

    wait_until(serving, timeout=60, what="the daemon's live view and the town's first state")
    yield Daemon(base, port, proc.pid, token)


def _connect(port: int, *, rcvbuf: int | None = None) -> socket.socket:
    s = socket.socket()
    if rcvbuf is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s


def _read_until(s: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = s.recv(65536)
        assert chunk, f"closed before {marker!r}: {data[:200]!r}"
        data += chunk
    return data


def test_idle_and_half_sent_connections_are_bounded_and_closed(daemon: Daemon) -> None:
    assert fetch(daemon.base + "/api/state")[0] == 200
    baseline = max(daemon.threads() for _ in range(3))
    max_threads = baseline

    # 800 connections: 600 send nothing, 200 send half a request, 100 of them a byte at a time.
    opened: dict[socket.socket, float] = {}
    half: set[socket.socket] = set()
    trickle: dict[socket.socket, float] = {}
    started = time.monotonic()
    for i in range(FLOOD):
        s = _connect(daemon.port)
        opened[s] = time.monotonic()
        if i % 4 == 0:
            s.sendall(b"GET /api/state HTTP/1.1\r\nHost: x\r\n")
            half.add(s)
            if i % 8 == 0:
                trickle[s] = time.monotonic()
        if i % 50 == 0:
            max_threads = max(max_threads, daemon.threads())
    flood_seconds = time.monotonic() - started
    assert flood_seconds < IDLE, f"opening {FLOOD} connections took {flood_seconds:.1f}s"

    # Meanwhile a normal client is answered, and the server holds them all without a thread each.
    t0 = time.monotonic()
    status, _, body = fetch(daemon.base + "/api/state")
    normal_seconds = time.monotonic() - t0
    assert status == 200 and json.loads(body)["state"] is not None
    server = daemon.server()
    assert server["connections"] >= FLOOD
    max_threads = max(max_threads, daemon.threads())

    # Beyond --http-max-connections: 503 at once.
    free = MAX_CONNECTIONS - (server["connections"] - 1)  # minus the /healthz request's own
    extra: dict[socket.socket, float] = {}
    for _ in range(FLOOD // 8 + 50):
        s = _connect(daemon.port)
        extra[s] = time.monotonic()
    expected_refused = len(extra) - free

    # Watch every socket until the server closes it; keep trickling meanwhile.
    closed_after: dict[socket.socket, float] = {}
    first_bytes: dict[socket.socket, bytes] = {}
    sel = selectors.DefaultSelector()
    for s in [*opened, *extra]:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    every = {**opened, **extra}
    deadline = time.monotonic() + IDLE + 10
    while len(closed_after) < len(every) and time.monotonic() < deadline:
        for key, _ in sel.select(0.1):
            s = key.fileobj
            assert isinstance(s, socket.socket)
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                data = b""
            if data:
                first_bytes.setdefault(s, data)
                continue
            closed_after[s] = time.monotonic() - every[s]
            sel.unregister(s)
        now = time.monotonic()
        for s, last in trickle.items():
            if s not in closed_after and now - last >= 0.2:
                trickle[s] = now
                with contextlib.suppress(OSError):  # closed by the server meanwhile
                    s.send(b"x")
        max_threads = max(max_threads, daemon.threads())
    sel.close()
    for s in every:
        s.close()

    assert len(closed_after) == len(every), f"{len(every) - len(closed_after)} connections still open"
    refused = [s for s in extra if first_bytes.get(s, b"").startswith(b"HTTP/1.1 503")]
    assert abs(len(refused) - expected_refused) <= 1, (len(refused), expected_refused)
    assert all(closed_after[s] < 1.0 for s in refused)
    idle_closes = [closed_after[s] for s in [*opened, *(s for s in extra if s not in refused)]]
    assert min(idle_closes) >= IDLE * 0.9, min(idle_closes)
    assert max(idle_closes) <= IDLE + 3, max(idle_closes)
    assert all(first_bytes.get(s, b"").startswith(b"HTTP/1.1 408") for s in half)
    assert all(s not in first_bytes for s in opened if s not in half)  # silent ones: just closed
    assert max(closed_after[s] for s in trickle) <= IDLE + 3  # a trickle does not extend it

    after = daemon.server()
    assert after["connections"] == 1 and after["timed_out"] >= FLOOD
    assert max_threads <= baseline + 8, (baseline, max_threads)
    assert normal_seconds < 2.0
    print(
        f"FAULT FIGURES live view: connections attempted {len(every)}, refused {len(refused)} (503), "
        f"threads baseline {baseline} max observed {max_threads}, normal request {normal_seconds:.3f}s "
        f"during the flood, idle close {min(idle_closes):.2f}-{max(idle_closes):.2f}s "
        f"(timeout {IDLE}s; trickled half-requests {max(closed_after[s] for s in trickle):.2f}s)"
    )


def test_event_streams_are_limited_and_a_stalled_one_is_dropped(daemon: Daemon) -> None:
    request = b"GET /api/stream HTTP/1.1\r\nHost: x\r\n\r\n"
    reader = _connect(daemon.port)
    reader.sendall(request)
    _read_until(reader, b"event: hello")
    # A client that stops reading: a small receive buffer, a few bytes read, then nothing.
    stalled = _connect(daemon.port, rcvbuf=4096)
    stalled.sendall(request)
    _read_until(stalled, b"event: hello")
    stalled_at = time.monotonic()

    refused = _connect(daemon.port)
    refused.sendall(request)
    assert _read_until(refused, b"\r\n").startswith(b"HTTP/1.1 503")
    refused.close()

    reader.setblocking(False)
    received = 0

    def dropped() -> bool:
        nonlocal received
        try:
            while chunk := reader.recv(65536):
                received += len(chunk)
        except BlockingIOError:
            pass
        server = daemon.server()
        return server["dropped"] >= 1 and server["streams"] == 1

    wait_until(dropped, timeout=60, what="the stalled stream to be dropped")
    drop_seconds = time.monotonic() - stalled_at
    assert received > 0  # the reading client kept its stream meanwhile

    again = _connect(daemon.port)
    again.sendall(request)
    assert _read_until(again, b"event: hello").startswith(b"HTTP/1.1 200")
    for s in (again, reader, stalled):
        s.close()
    print(
        f"FAULT FIGURES live view streams: limit {MAX_STREAMS}, third refused 503, stalled stream dropped "
        f"after {drop_seconds:.1f}s (write timeout {IDLE}s), reader received {received} bytes meanwhile"
    )


def test_metrics_need_the_token_and_the_operator_cookie_expires(daemon: Daemon) -> None:
    base, bearer = daemon.base, {"Authorization": f"Bearer {daemon.token}"}
    assert fetch(base + "/metrics")[0] == 403
    assert fetch(base + "/metrics", {"Authorization": "Bearer nope"})[0] == 403
    status, headers, body = fetch(base + "/metrics", bearer)
    assert status == 200 and headers["Content-Type"].startswith("text/plain") and b"# TYPE" in body

    status, headers, _ = fetch(base + f"/?token={daemon.token}", follow=False)
    assert status == 303 and f"Max-Age={SESSION}" in headers["Set-Cookie"]
    issued = time.monotonic()
    cookie = headers["Set-Cookie"].split(";")[0]
    name, _, value = cookie.partition("=")
    assert daemon.token not in value
    assert fetch(base + "/api/audit", {"Cookie": cookie})[0] == 200
    assert fetch(base + "/metrics", {"Cookie": cookie})[0] == 200

    # An altered expiry, or a cookie of the old, never-expiring form: refused (and cleared).
    expires, _, mac = value.partition(".")
    for forged in (f"{int(expires) + 86400}.{mac}", mac, f"{expires}.{'0' * len(mac)}"):
        status, headers, _ = fetch(base + "/api/audit", {"Cookie": f"{name}={forged}"})
        assert status == 403 and "Max-Age=0" in headers.get("Set-Cookie", ""), forged

    # Once expired, the real cookie is refused too: a public visitor, and the cookie is cleared.
    wait_until(
        lambda: fetch(base + "/api/audit", {"Cookie": cookie})[0] == 403,
        timeout=SESSION + 5,
        what="the operator cookie to expire",
    )
    expired_after = time.monotonic() - issued
    assert SESSION - 1.5 <= expired_after <= SESSION + 2, expired_after
    status, headers, body = fetch(base + "/api/state", {"Cookie": cookie})
    assert status == 200 and json.loads(body)["operator"] is False
    assert "Max-Age=0" in headers.get("Set-Cookie", "")
    assert fetch(base + "/metrics", {"Cookie": cookie})[0] == 403
    print(
        f"FAULT FIGURES live view operator: /metrics refused without the token, cookie lifetime {SESSION}s "
        f"refused after {expired_after:.2f}s, 3 forged cookies refused"
    )
