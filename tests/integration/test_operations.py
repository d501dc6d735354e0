"""Operations on a real Redis: the daemon's Prometheus endpoint scraped during a run (a listener
of its own, or the live view's server), bound to loopback only, and `auratown dlq
list|replay|purge` on dead letters the runtime really made."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.bus import Bus
from actors.bus._redis import RedisTransport
from actors.runtime import Host, HostConfig
from tests.conftest import ROOT, Processes, auratown, wait_until
from tests.support.actors import FlakyActor
from tests.support.messages import Done, Flaky, Work
from tests.unit.test_metrics import parse_exposition, value

pytestmark = pytest.mark.redis


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    """The process's stdout lines, read on a thread (a test must not block on a silent child)."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _urls(proc: subprocess.Popen[str], lines: queue.Queue[str], *prefixes: str) -> list[str]:
    """The URL ending each of the daemon's first lines that start with ``prefixes``, in their order."""
    seen: list[str] = []
    urls: dict[str, str] = {}

    def found() -> list[str] | None:
        while not lines.empty():
            line = lines.get()
            seen.append(line)
            for prefix in prefixes:
                if line.startswith(prefix) and prefix not in urls:
                    urls[prefix] = line.removeprefix(prefix).split(";")[0].strip()
        if proc.poll() is not None:
            raise AssertionError(f"the daemon exited with {proc.returncode}: {''.join(seen)}")
        return [urls[p] for p in prefixes] if len(urls) == len(prefixes) else None

    return wait_until(found, timeout=60, what=f"the daemon's lines {prefixes} (so far: {seen})")


def _scrape(url: str, headers: dict[str, str] | None = None) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return parse_exposition(r.read().decode())


def _ip(hex_address: str) -> str:
    """An address as /proc/net/tcp{,6} writes it (32-bit words in host order, little-endian here)."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, words)


def listening(pid: int) -> set[tuple[str, int]]:
    """The (address, port) pairs the process ``pid`` listens on over TCP: its socket descriptors
    matched against the kernel's tables (Linux /proc; no psutil)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):  # a descriptor closed meanwhile
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    found = set()
    for table in ("tcp", "tcp6"):
        for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                address, port = local.split(":")
                found.add((_ip(address), int(port, 16)))
    return found


def _port(url: str) -> int:
    port = urllib.parse.urlsplit(url).port
    assert port is not None, url
    return port


def test_the_daemons_metrics_endpoint_shows_traffic_and_handler_latency(
    processes: Processes, redis_url: str, namespace: str
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", "daemon", "--redis", redis_url, "--namespace", namespace,
         "--speed", "20", "--metrics-port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    processes.procs.append(proc)  # type: ignore[arg-type]  # killed at teardown if still running
    (url,) = _urls(proc, _lines(proc), "metrics on ")
    # Without --metrics-host: loopback, and the one listener of the process.
    assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
    assert listening(proc.pid) == {("127.0.0.1", _port(url))}

    def busy() -> dict[str, list[tuple[dict[str, str], float]]] | None:
        s = _scrape(url)
        ticks = sum(v for _, v in s.get("auratown_handler_latency_seconds_count", []))
        return s if ticks >= 20 else None

    samples = wait_until(busy, timeout=60, what="twenty handled messages in the daemon's metrics")
    inbound = {ls["stream"]: v for ls, v in samples["auratown_messages_in_total"]}
    outbound = {ls["stream"]: v for ls, v in samples["auratown_messages_out_total"]}
    assert inbound.get("inbox:world", 0) > 0 and inbound.get("inbox:clock", 0) > 0, inbound
    assert sum(outbound.values()) > 0
    types = {ls["actor_type"] for ls, _ in samples["auratown_handler_latency_seconds_count"]}
    assert {"WorldActor", "ClockActor"} <= types, types
    for actor_type in types:  # cumulative buckets ending at the count
        buckets = [v for ls, v in samples["auratown_handler_latency_seconds_bucket"]
                   if ls["actor_type"] == actor_type]  # fmt: skip
        assert buckets == sorted(buckets)
        count = value(samples, "auratown_handler_latency_seconds_count", actor_type=actor_type)
        assert buckets[-1] == count > 0
    assert value(samples, "auratown_bus_up") == 1
    assert value(samples, "auratown_dead_letters") == 0
    pending = {ls["stream"] for ls, _ in samples["auratown_stream_pending"]}
    assert "inbox:world" in pending and "inbox:clock" in pending
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0


def test_with_the_live_view_its_server_answers_the_metrics_on_loopback_only(
    processes: Processes, redis_url: str, namespace: str
) -> None:
    token = "op-metrics"
    proc = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", "daemon", "--redis", redis_url, "--namespace", namespace,
         "--speed", "20", "--http", "127.0.0.1:0", "--operator-token", token, "--metrics-port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    processes.procs.append(proc)  # type: ignore[arg-type]  # killed at teardown if still running
    view_url, metrics_url = _urls(proc, _lines(proc), "live view: ", "metrics on ")
    assert view_url.startswith("http://127.0.0.1:") and metrics_url.startswith("http://127.0.0.1:")
    # One server, two addresses, both on loopback as --http was: nothing listens on 0.0.0.0.
    assert listening(proc.pid) == {("127.0.0.1", _port(view_url)), ("127.0.0.1", _port(metrics_url))}

    def handled() -> dict[str, list[tuple[dict[str, str], float]]] | None:
        s = _scrape(metrics_url)  # no token on the scrape address
        return s if sum(v for _, v in s.get("auratown_handler_latency_seconds_count", [])) >= 5 else None

    wait_until(handled, timeout=60, what="handled messages in the daemon's metrics")
    # On the page's address, /metrics is for operators: the token opens it, nothing else does.
    on_view = _scrape(view_url + "metrics", {"Authorization": f"Bearer {token}"})
    assert value(on_view, "auratown_bus_up") == 1
    with pytest.raises(urllib.error.HTTPError) as refused:
        _scrape(view_url + "metrics")
    assert refused.value.code == 403
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0


@pytest.mark.parametrize("http", [(), ("--http", "127.0.0.1:0")], ids=["alone", "with the live view"])
def test_a_busy_metrics_port_is_a_one_line_error(http: tuple[str, ...]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = auratown("daemon", *http, "--metrics-port", str(port), timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"auratown daemon: error: cannot serve metrics on port {port}: Address already in use"
    )


# ---------------------------------------------------------------------------- dlq


@pytest.fixture
def failing_host(redis_url: str, namespace: str) -> Iterator[Bus]:
    """A host whose ``flaky`` actor fails Flaky messages and rejects Work; dead letters made for real."""
    bus = Bus(RedisTransport(redis_url), namespace)
    host = Host(bus, HostConfig(block_ms=50, retry_backoff=0.01, retry_backoff_max=0.05))
    host.spawn(FlakyActor, "flaky")
    FlakyActor.attempts.clear()
    with host:
        yield bus
    bus.close()
    bus.transport.close()


def _dlq(redis_url: str, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return auratown("dlq", *args, "--redis", redis_url, "--namespace", namespace, timeout=60)


def test_dlq_list_replay_and_purge_real_dead_letters(
    failing_host: Bus, redis_url: str, namespace: str
) -> None:
    bus = failing_host
    bus.tell("flaky", Flaky(key="k1", fail_times=bus.max_attempts))  # fails every attempt it gets
    bus.tell("flaky", Work(seq=7))  # PermanentError: rejected at once
    bus.transport.add(bus.keys.inbox("flaky"), {"m": b"\xc1garbage"})  # undecodable
    wait_until(lambda: len(bus.dead_letters()) == 3, timeout=30, what="three dead letters")

    listed = _dlq(redis_url, namespace, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["reason"]: r for r in json.loads(listed.stdout)}
    assert set(rows) == {"handler_error", "rejected", "malformed"}
    assert {r["origin"] for r in rows.values()} == {"verified"}  # signed by the runtime
    assert rows["malformed"]["bytes"] == rows["malformed"]["kept_bytes"] == len(b"\xc1garbage")
    assert rows["handler_error"]["type"] == "test.flaky" and rows["handler_error"]["source"] == "flaky"
    assert rows["handler_error"]["attempts"] == bus.max_attempts
    assert rows["rejected"]["type"] == "test.work" and rows["rejected"]["attempts"] == 1
    assert "transient failure" in rows["handler_error"]["detail"]
    text = _dlq(redis_url, namespace, "list")
    assert text.returncode == 0 and "3 dead letter(s)" in text.stdout
    assert all(r["id"] in text.stdout for r in rows.values())

    # Bad input: one line on stderr, exit status 2, nothing changed.
    for args, message in (
        (("replay",), "needs --id ENTRY, --reason R or --all"),
        (("purge", "--id", "1-999"), "no dead letter with id 1-999"),
        (("purge", "--all", "--reason", "rejected"), "--all cannot be combined"),
        (("replay", "--reason", "nope"), "matches --reason nope"),
    ):
        bad = _dlq(redis_url, namespace, *args)
        assert bad.returncode == 2 and message in bad.stderr and len(bad.stderr.splitlines()) == 1, bad
    assert len(bus.dead_letters()) == 3

    # Replay: the original bytes go back to the inbox; the (now working) handler succeeds.
    replay = _dlq(redis_url, namespace, "replay", "--id", rows["handler_error"]["id"])
    assert replay.returncode == 0 and "1 replayed" in replay.stdout, replay.stderr

    def done() -> bool:
        envelopes = [bus.decode_entry(e) for e in bus.transport.range(bus.keys.inbox("collector"))]
        return any(
            env is not None and isinstance(env.payload, Done) and env.payload.by == "k1" for env in envelopes
        )

    wait_until(done, timeout=30, what="the replayed message to be handled")
    # It came back with a fresh attempt count: a replay gets every retry again.
    inbox = [bus.decode_entry(e) for e in bus.transport.range(bus.keys.inbox("flaky"))]
    replayed = [env for env in inbox if env is not None and isinstance(env.payload, Flaky)]
    assert replayed[-1].attempt == 1, [(e.id, e.attempt) for e in replayed]
    assert {d.reason for d in bus.dead_letters()} == {"rejected", "malformed"}

    purged = _dlq(redis_url, namespace, "purge", "--reason", "malformed", "--json")
    assert purged.returncode == 0 and len(json.loads(purged.stdout)["purged"]) == 1
    assert [d.reason for d in bus.dead_letters()] == ["rejected"]
    everything = _dlq(redis_url, namespace, "purge", "--all")
    assert everything.returncode == 0 and "purged every dead letter (1)" in everything.stdout
    assert bus.dead_letters() == []
    empty = _dlq(redis_url, namespace, "list")
    assert empty.returncode == 0 and "no dead letters" in empty.stdout
