"""Bus benchmark: throughput and ask latency of the memory and Redis transports against raw redis-py.

What is measured, in one run and on one private ``redis-server`` (``LocalRedisServer``, never the
machine's default port), each measurement in its own namespace / stream keys:

Throughput (messages per second, from the first send to the handling of the last message):

* ``memory``: a ``Host`` and a ``Bus`` on one ``MemoryTransport`` in this process; a producer
  thread calls ``bus.tell("sink", Ping(seq=i))`` N times; the sink actor counts and sets a
  ``threading.Event`` on the Nth message.
* ``redis``: the same, but the ``Host`` with the sink runs in a separate (spawned) process and the
  producer in this one; on the Nth message the sink tells a ``Pong`` carrying its handling time to
  a "done" inbox that this process reads (no sleeping, no polling).
* ``raw``: redis-py doing the same work: the producer encodes an ``Envelope`` with a ``Ping`` (the
  very same bytes as the bus's) and XADDs it, one entry at a time; a consumer process reads with
  ``XREADGROUP COUNT 64 BLOCK``, decodes each entry with ``messages.decode`` and XACKs it alone.
* ``raw batch-ack`` (for information only): as ``raw`` but one XACK per batch read.

Ask round-trip latency (p50/p99 in microseconds over M sequential asks, after a warm-up):

* ``memory``: ``bus.ask("echo", Ping(...))`` to an ``Echo`` actor hosted in this process.
* ``redis``: the ``Echo`` host in a separate process, the asking ``Bus`` in this one.
* ``raw``: the client XADDs an encoded request envelope and XREAD BLOCKs on its own reply stream;
  a server process XREADGROUP BLOCKs on the request stream, decodes, encodes a ``Pong`` envelope
  and sends XADD (reply) + XACK (request) in one pipeline.

The redis and raw asks are timed interleaved, in alternating blocks of 50, so that both see the
same machine conditions; their ratio is then much steadier on a noisy (virtual) machine.
Throughput runs one after the other; each also reports the consumer process's CPU time per message.

The targets, printed as PASS/FAIL: redis msgs/s / raw (ack per message) msgs/s >= 0.5, and redis
ask p50 / raw ask p50 <= 2.0. Results and machine info are written as JSON.

Run::

    python -m bench.bus                       # defaults, about a minute on a 2-core machine
    python -m bench.bus --quick               # smoke run, a few seconds
    python -m bench.bus --messages 50000 --asks 5000 --out /tmp/bus.json
"""

from __future__ import annotations

import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from multiprocessing.context import SpawnProcess
from multiprocessing.synchronize import Event as MpEvent
from types import FrameType
from typing import Any

import redis

from actors.bus import FIELD, INBOX_GROUP, Bus, KeyLayout, MemoryTransport, Transport, open_transport
from actors.ids import new_id, new_process_id
from actors.logging import configure_logging
from actors.roles import EchoActor as Echo
from actors.runtime import Actor, Context, Host, on
from bench._cli import BenchParams, BenchParser, Scale, bench_main, params_from
from bench._harness import BenchError, Children, private_machine
from bench._output import num, results_json, step, table, verdict
from messages import Envelope, Message, Ping, Pong, decode, encode

MESSAGES = Scale(20_000, quick=2_000)
ASKS = Scale(2_000, quick=200)
WARMUP = Scale(100, quick=20)

THROUGHPUT_TARGET = 0.5
"""redis msgs/s divided by raw (ack per message) msgs/s must be at least this."""
LATENCY_TARGET = 2.0
"""redis ask p50 divided by raw ask p50 must be at most this."""

SINK = "sink"
ECHO = "echo"
DONE = "bench-done"
READ_COUNT = 64
BLOCK_MS = 250
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
ASK_TIMEOUT = 10.0
ASK_BLOCK = 50
"""Asks timed in a row for one transport before switching to the other."""

# Namespaces of equal length, so every variant moves envelopes of the same size.
NS_TPUT = {
    "memory": "bench-tput-mem",
    "redis": "bench-tput-bus",
    "raw": "bench-tput-raw",
    "raw_batch": "bench-tput-rwb",
}
NS_ASK = {"memory": "bench-ask-mem", "redis": "bench-ask-bus", "raw": "bench-ask-raw"}

RawEntry = tuple[str, dict[bytes, bytes]]


# ---------------------------------------------------------------------------------------- results


@dataclass
class Throughput:
    label: str
    messages: int
    seconds: float
    send_seconds: float
    """Time the producer took to send all messages (the rest is the consumer catching up)."""
    envelope_bytes: int
    consumer_cpu_s: float | None
    """CPU time (all threads) of the consumer process from its first to its last message."""

    @property
    def msgs_per_s(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    @property
    def consumer_cpu_us_per_msg(self) -> float | None:
        return None if self.consumer_cpu_s is None else self.consumer_cpu_s / self.messages * 1e6

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "msgs_per_s": self.msgs_per_s,
            "consumer_cpu_us_per_msg": self.consumer_cpu_us_per_msg,
        }


@dataclass
class Latency:
    label: str
    samples_us: list[float] = field(repr=False)
    warmup: int
    envelope_bytes: int

    def quantile(self, q: float) -> float:
        """The sample at rank ``q`` of the sorted samples (nearest rank, no interpolation)."""
        ordered = sorted(self.samples_us)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    @property
    def p50(self) -> float:
        return self.quantile(0.50)

    @property
    def p99(self) -> float:
        return self.quantile(0.99)

    def to_json(self) -> dict[str, Any]:
        s = self.samples_us
        return {
            "label": self.label,
            "asks": len(s),
            "warmup": self.warmup,
            "envelope_bytes": self.envelope_bytes,
            "p50_us": self.p50,
            "p90_us": self.quantile(0.90),
            "p99_us": self.p99,
            "mean_us": statistics.fmean(s),
            "min_us": min(s),
            "max_us": max(s),
        }


# ---------------------------------------------------------------------------------------- actors


@dataclass(frozen=True)
class Completion:
    """When the consumer handled the last message, and its process's CPU time from first to last."""

    handled_at: float
    cpu_s: float

    def to_text(self) -> str:
        return f"{self.handled_at!r} {self.cpu_s!r}"

    @classmethod
    def from_text(cls, text: str) -> Completion:
        handled_at, cpu_s = text.split()
        return cls(float(handled_at), float(cpu_s))


DoneHook = Callable[[Context, int, Completion], None]


class Sink(Actor):
    """Counts told ``Ping``s; calls ``done`` on the ``target``-th. An ask is answered with the count."""

    def __init__(self, target: int, done: DoneHook) -> None:
        self.target = target
        self.done = done
        self.seen = 0
        self.cpu_start = 0.0

    @on(Ping)
    def ping(self, ctx: Context, msg: Ping) -> Pong | None:
        if ctx.envelope.reply_to is not None:
            return Pong(seq=self.seen, responder=ctx.address)
        self.seen += 1
        if self.seen == 1:
            self.cpu_start = time.process_time()
        if self.seen == self.target:
            self.done(ctx, self.seen, Completion(time.time(), time.process_time() - self.cpu_start))
        return None


def _tell_done(ctx: Context, seen: int, completion: Completion) -> None:
    ctx.tell(DONE, Pong(seq=seen, body=completion.to_text(), responder=ctx.address))


# ---------------------------------------------------------------------------------------- children


def _child_setup() -> None:
    configure_logging(level="WARNING")


def _host_child(url: str, namespace: str, role: str, target: int, ready: MpEvent) -> None:
    """A child process hosting the sink or the echo actor until SIGTERM."""
    _child_setup()
    transport = open_transport(url)
    bus = Bus(transport, namespace)
    host = Host(bus, name=f"bench-{role}")
    if role == SINK:
        host.spawn(lambda: Sink(target, _tell_done), SINK)
    else:
        host.spawn(Echo, ECHO)
    try:
        host.start()
        ready.set()
        host.run_until_signal()
    finally:
        bus.close()
        transport.close()


def _entries(reply: Any) -> list[RawEntry]:
    """Entries of an XREAD / XREADGROUP reply (RESP2 list or RESP3 map)."""
    if not reply:
        return []
    items = [(k, v[0]) for k, v in reply.items()] if isinstance(reply, dict) else reply
    out: list[RawEntry] = []
    for _stream, rows in items:
        for entry_id, fields in rows:
            if fields is not None:
                out.append((entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id), fields))
    return out


@dataclass(frozen=True)
class RawConsumerSpec:
    url: str
    stream: str
    done_stream: str
    messages: int
    batch_ack: bool


def _raw_consumer(spec: RawConsumerSpec, ready: MpEvent) -> None:
    """Read, decode and acknowledge ``messages`` entries, then report when the last was handled."""
    _child_setup()
    client = redis.Redis.from_url(spec.url)
    client.ping()
    ready.set()
    stream, handled, handled_at, cpu_start = spec.stream, 0, 0.0, 0.0
    while handled < spec.messages:
        entries = _entries(
            client.xreadgroup(INBOX_GROUP, "raw-consumer", {stream: ">"}, count=READ_COUNT, block=BLOCK_MS)
        )
        for entry_id, fields in entries:
            decode(fields[FIELD.encode()])
            handled += 1
            handled_at = time.time()
            if handled == 1:
                cpu_start = time.process_time()
            if not spec.batch_ack:
                client.xack(stream, INBOX_GROUP, entry_id)
        if spec.batch_ack and entries:
            client.xack(stream, INBOX_GROUP, *(e[0] for e in entries))
    done = Completion(handled_at, time.process_time() - cpu_start)
    client.xadd(spec.done_stream, {"n": str(handled), "done": done.to_text()})
    client.close()


def _echo_reply(namespace: str, request: Envelope) -> Envelope:
    """The reply envelope the bus would build for ``request`` (same fields, same size)."""
    assert isinstance(request.payload, Ping) and request.reply_to is not None
    return Envelope(
        id=new_id(),
        sender=ECHO,
        recipient=request.reply_to,
        namespace=namespace,
        wall_time=time.time(),
        payload=Pong(seq=request.payload.seq, body=request.payload.body, responder=ECHO),
        correlation_id=request.correlation_id,
        causation_id=request.id,
        sim_time=request.sim_time,
        trace=dict(request.trace),
    )


def _raw_echo_server(url: str, namespace: str, ready: MpEvent) -> None:
    """Answer requests with XADD reply + XACK in one pipeline until SIGTERM."""
    _child_setup()
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    keys = KeyLayout(namespace)
    stream = keys.inbox(ECHO)
    client = redis.Redis.from_url(url)
    client.ping()
    ready.set()
    while not stop.is_set():
        for entry_id, fields in _entries(
            client.xreadgroup(INBOX_GROUP, "raw-echo", {stream: ">"}, count=READ_COUNT, block=BLOCK_MS)
        ):
            request = decode(fields[FIELD.encode()])
            reply = _echo_reply(namespace, request)
            assert reply.recipient
            pipe = client.pipeline(transaction=False)
            pipe.xadd(keys.inbox(reply.recipient), {FIELD: encode(reply)})
            pipe.xack(stream, INBOX_GROUP, entry_id)
            pipe.execute()
    client.close()


# ---------------------------------------------------------------------------------------- helpers


def _wait_thread(t: threading.Thread, timeout: float, what: str) -> None:
    t.join(timeout)
    if t.is_alive():
        raise BenchError(f"{what} did not finish within {timeout:.0f}s")


class Producer:
    """A thread telling ``n`` pings to the sink as fast as the bus takes them; stoppable on error."""

    def __init__(self, bus: Bus, n: int) -> None:
        self.bus = bus
        self.n = n
        self.send_seconds = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="producer", daemon=True)

    def _run(self) -> None:
        t0 = time.time()
        for i in range(self.n):
            if self._stop.is_set():
                return
            self.bus.tell(SINK, Ping(seq=i))
        self.send_seconds = time.time() - t0

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        _wait_thread(self._thread, timeout, "producer")

    def stop(self) -> None:
        """Stop early (after an error elsewhere) and wait, so the bus can be closed under it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)


def _envelope_size(bus: Bus, recipient: str, payload: Message, **kw: Any) -> int:
    return len(encode(bus.envelope(recipient, payload, **kw)))


def _wait_done(transport: Transport, stream: str, timeout: float) -> Completion:
    """Block on the done inbox; the sink's handling time of the last message."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in transport.read(stream, "0-0", count=1, block_ms=1000):
            env = decode(entry.fields[FIELD])
            assert isinstance(env.payload, Pong)
            return Completion.from_text(env.payload.body)
    raise BenchError(f"no completion on {stream} within {timeout:.0f}s")


def _wait_raw_done(client: redis.Redis, stream: str, timeout: float) -> Completion:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for _entry_id, fields in _entries(client.xread({stream: "0-0"}, count=1, block=1000)):
            return Completion.from_text(fields[b"done"].decode())
    raise BenchError(f"no completion on {stream} within {timeout:.0f}s")


def _timeout_for(n: int) -> float:
    return 60.0 + n / 100


def _timed_asks(askers: dict[str, Callable[[int], None]], m: int, warmup: int) -> dict[str, list[float]]:
    """Warm every asker up, then time ``m`` asks of each in alternating blocks.

    Interleaving lets the transports compared share the same machine conditions (a noisy
    neighbour, CPU frequency) instead of each getting its own stretch of time.
    """
    for ask in askers.values():
        for i in range(warmup):
            ask(i)
    samples: dict[str, list[float]] = {name: [] for name in askers}
    names = list(askers)
    for block, first in enumerate(range(0, m, ASK_BLOCK)):
        for name in names if block % 2 == 0 else names[::-1]:
            ask, out = askers[name], samples[name]
            for i in range(first, min(first + ASK_BLOCK, m)):
                t0 = time.perf_counter_ns()
                ask(warmup + i)
                out.append((time.perf_counter_ns() - t0) / 1000)
    return samples


def _bus_ask(bus: Bus) -> Callable[[int], None]:
    def ask(i: int) -> None:
        reply = bus.ask(ECHO, Ping(seq=i), timeout=ASK_TIMEOUT)
        if not isinstance(reply, Pong) or reply.seq != i:
            raise BenchError(f"unexpected reply {reply!r} to ping {i}")

    return ask


# ---------------------------------------------------------------------------------------- throughput


def bench_memory_throughput(n: int) -> Throughput:
    transport = MemoryTransport()
    ns = NS_TPUT["memory"]
    host_bus, bus = Bus(transport, ns), Bus(transport, ns)
    done = threading.Event()
    completions: list[Completion] = []

    def on_done(ctx: Context, seen: int, completion: Completion) -> None:
        completions.append(completion)
        done.set()

    producer = Producer(bus, n)
    try:
        with Host(host_bus, name="bench-mem-sink") as host:
            host.spawn(lambda: Sink(n, on_done), SINK)
            t0 = time.time()
            producer.start()
            if not done.wait(_timeout_for(n)):
                raise BenchError("memory sink did not see every message")
            producer.join(10)
    finally:
        producer.stop()
        bus.close()
        host_bus.close()
    size = _envelope_size(bus, SINK, Ping(seq=n - 1))
    # One process: its CPU time covers the producer too, so it is not reported as the consumer's.
    return Throughput("memory", n, completions[0].handled_at - t0, producer.send_seconds, size, None)


def bench_redis_throughput(url: str, n: int, children: Children) -> Throughput:
    ns = NS_TPUT["redis"]
    proc = children.start("redis-sink", _host_child, url, ns, SINK, n)
    transport = open_transport(url)
    bus = Bus(transport, ns)
    producer = Producer(bus, n)
    try:
        warm = bus.ask(SINK, Ping(seq=-1), timeout=ASK_TIMEOUT)  # the host is reading
        assert isinstance(warm, Pong)
        t0 = time.time()
        producer.start()
        done = _wait_done(transport, bus.keys.inbox(DONE), _timeout_for(n))
        producer.join(10)
        size = _envelope_size(bus, SINK, Ping(seq=n - 1))
        return Throughput("redis", n, done.handled_at - t0, producer.send_seconds, size, done.cpu_s)
    finally:
        producer.stop()
        bus.close()
        transport.close()
        children.stop(proc)


def _raw_produce(client: redis.Redis, stream: str, namespace: str, n: int) -> int:
    """XADD ``n`` encoded ping envelopes one by one (as ``Bus.tell`` does); the last one's size."""
    size = 0
    for i in range(n):
        env = Envelope(
            id=new_id(),
            sender="",
            recipient=SINK,
            namespace=namespace,
            wall_time=time.time(),
            payload=Ping(seq=i),
        )
        data = encode(env)
        client.xadd(stream, {FIELD: data})
        size = len(data)
    return size


def bench_raw_throughput(url: str, n: int, children: Children, *, batch_ack: bool) -> Throughput:
    ns = NS_TPUT["raw_batch" if batch_ack else "raw"]
    keys = KeyLayout(ns)
    stream, done_stream = keys.inbox(SINK), keys.inbox(DONE)
    client = redis.Redis.from_url(url)
    _create_group(client, stream)
    label = "raw_batch" if batch_ack else "raw"
    spec = RawConsumerSpec(url, stream, done_stream, n, batch_ack)
    proc = children.start(f"{label}-consumer", _raw_consumer, spec)
    try:
        t0 = time.time()
        size = _raw_produce(client, stream, ns, n)
        send_seconds = time.time() - t0
        done = _wait_raw_done(client, done_stream, _timeout_for(n))
        children.join(proc)
        return Throughput(label, n, done.handled_at - t0, send_seconds, size, done.cpu_s)
    finally:
        client.close()
        children.stop(proc)


# ---------------------------------------------------------------------------------------- ask latency


def bench_memory_ask(m: int, warmup: int) -> Latency:
    transport = MemoryTransport()
    ns = NS_ASK["memory"]
    host_bus, bus = Bus(transport, ns), Bus(transport, ns)
    try:
        with Host(host_bus, name="bench-mem-echo") as host:
            host.spawn(Echo, ECHO)
            samples = _timed_asks({"memory": _bus_ask(bus)}, m, warmup)["memory"]
    finally:
        bus.close()
        host_bus.close()
    return Latency("memory", samples, warmup, _ask_size(bus))


def _ask_size(bus: Bus) -> int:
    lane = f"{bus.reply_address}.t{threading.get_ident()}"
    return _envelope_size(
        bus, ECHO, Ping(seq=0), correlation_id=new_id(), reply_to=lane, deadline=time.time() + ASK_TIMEOUT
    )


class RawAsker:
    """The raw client: XADD the request, XREAD BLOCK its own reply stream until the answer."""

    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.keys = KeyLayout(namespace)
        self.request_stream = self.keys.inbox(ECHO)
        # The same reply address shape as a bus lane, so the envelopes are the same size.
        self.reply_to = f"_reply.{new_process_id()}.t{threading.get_ident()}"
        self.reply_stream = self.keys.inbox(self.reply_to)
        self.last_id = "0-0"
        self.request_bytes = 0

    def request(self, i: int) -> Envelope:
        now = time.time()
        return Envelope(
            id=new_id(),
            sender="",
            recipient=ECHO,
            namespace=self.namespace,
            wall_time=now,
            payload=Ping(seq=i),
            correlation_id=new_id(),
            reply_to=self.reply_to,
            deadline=now + ASK_TIMEOUT,
        )

    def __call__(self, i: int) -> None:
        req = self.request(i)
        data = encode(req)
        if i == 0:
            self.request_bytes = len(data)
        self.client.xadd(self.request_stream, {FIELD: data})
        deadline = time.monotonic() + ASK_TIMEOUT
        while time.monotonic() < deadline:
            for entry_id, fields in _entries(
                self.client.xread({self.reply_stream: self.last_id}, count=16, block=1000)
            ):
                self.last_id = entry_id
                reply = decode(fields[FIELD.encode()])
                if reply.correlation_id == req.correlation_id:
                    if not isinstance(reply.payload, Pong) or reply.payload.seq != i:
                        raise BenchError(f"unexpected reply {reply.payload!r} to ping {i}")
                    return
        raise BenchError(f"raw ask {i} timed out")


def _create_group(client: redis.Redis, stream: str) -> None:
    try:
        client.xgroup_create(stream, INBOX_GROUP, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


def bench_remote_asks(url: str, m: int, warmup: int, children: Children) -> dict[str, Latency]:
    """Redis-bus asks and raw redis-py asks, each to its own echo process, timed interleaved."""
    bus_ns, raw_ns = NS_ASK["redis"], NS_ASK["raw"]
    client = redis.Redis.from_url(url)
    _create_group(client, KeyLayout(raw_ns).inbox(ECHO))
    transport = open_transport(url)
    bus = Bus(transport, bus_ns)
    procs: list[SpawnProcess] = []
    try:
        procs.append(children.start("redis-echo", _host_child, url, bus_ns, ECHO, 0))
        procs.append(children.start("raw-echo", _raw_echo_server, url, raw_ns))
        asker = RawAsker(client, raw_ns)
        samples = _timed_asks({"redis": _bus_ask(bus), "raw": asker}, m, warmup)
    finally:
        for proc in procs:
            children.stop(proc)
        bus.close()
        transport.close()
        client.close()
    return {
        "redis": Latency("redis", samples["redis"], warmup, _ask_size(bus)),
        "raw": Latency("raw", samples["raw"], warmup, asker.request_bytes),
    }


# ---------------------------------------------------------------------------------------- report


@dataclass
class Params(BenchParams):
    messages: int
    asks: int
    warmup: int


@dataclass
class Report:
    params: Params
    machine: dict[str, Any]
    throughput: dict[str, Throughput]
    latency: dict[str, Latency]
    children: dict[str, int | None]
    elapsed_s: float

    @property
    def throughput_ratio(self) -> float:
        return self.throughput["redis"].msgs_per_s / self.throughput["raw"].msgs_per_s

    @property
    def latency_ratio(self) -> float:
        return self.latency["redis"].p50 / self.latency["raw"].p50

    def checks(self) -> dict[str, dict[str, Any]]:
        return {
            "throughput_redis_over_raw": {
                "value": self.throughput_ratio,
                "target": f">= {THROUGHPUT_TARGET}",
                "pass": self.throughput_ratio >= THROUGHPUT_TARGET,
            },
            "ask_p50_redis_over_raw": {
                "value": self.latency_ratio,
                "target": f"<= {LATENCY_TARGET}",
                "pass": self.latency_ratio <= LATENCY_TARGET,
            },
        }

    def to_json(self) -> dict[str, Any]:
        figures = {
            "throughput": {k: v.to_json() for k, v in self.throughput.items()},
            "ask_latency": {k: v.to_json() for k, v in self.latency.items()},
            "checks": self.checks(),
            "child_exit_codes": self.children,
        }
        return results_json("bench.bus", self.params, self.machine, figures, self.elapsed_s)


ROW_LABELS = {
    "memory": "memory (Host+Bus, 1 process)",
    "redis": "redis (Host+Bus, 2 processes)",
    "raw": "raw redis-py (XACK per message)",
    "raw_batch": "raw redis-py (XACK per batch, info)",
}


def _ratio(num: float | None, den: float | None) -> str:
    return f"{num / den:.2f}x" if num is not None and den else "-"


COLUMNS = (
    ("transport", -36),
    ("msgs/s", 7),
    ("cpu us/msg", 10),
    ("ask p50 us", 10),
    ("ask p99 us", 10),
    ("msgs/s vs raw", 13),
    ("p50 vs raw", 10),
)
"""Table headings and widths (negative: left-aligned)."""


def format_table(report: Report) -> str:
    """One row per transport; the ratios are against raw redis-py with an XACK per message."""
    raw_tput, raw_p50 = report.throughput["raw"].msgs_per_s, report.latency["raw"].p50

    def cells(key: str, label: str) -> list[str]:
        tput, lat = report.throughput.get(key), report.latency.get(key)
        rate, p50 = (tput.msgs_per_s if tput else None), (lat.p50 if lat else None)
        cpu, p99 = (tput.consumer_cpu_us_per_msg if tput else None), (lat.p99 if lat else None)
        ratios = [_ratio(rate, raw_tput), _ratio(p50, raw_p50)]
        return [label, num(rate, ",.0f"), num(cpu, ",.0f"), num(p50, ",.1f"), num(p99, ",.1f"), *ratios]

    lines = table(COLUMNS, (cells(key, label) for key, label in ROW_LABELS.items()))
    lines.append(
        "cpu us/msg: CPU time of the consumer process (all its threads) per message; "
        "memory runs in one process, so none is given"
    )
    return "\n".join(lines)


def format_checks(report: Report) -> str:
    c = report.checks()
    t, lat = c["throughput_redis_over_raw"], c["ask_p50_redis_over_raw"]
    return "\n".join(
        [
            f"redis msgs/s / raw msgs/s (XACK per message) = {t['value']:.2f}  (target {t['target']})  "
            f"{verdict(t['pass'])}",
            f"redis ask p50 / raw ask p50                  = {lat['value']:.2f}  (target {lat['target']})  "
            f"{verdict(lat['pass'])}",
        ]
    )


# ---------------------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> Params:
    cli = BenchParser("bench.bus", __doc__, quick="small sizes for a smoke run")
    cli.sized("--messages", "messages per throughput run", MESSAGES)
    cli.sized("--asks", "timed asks per latency run", ASKS)
    cli.sized("--warmup", "untimed asks first", WARMUP)
    a = cli.parse(argv)
    if a.messages < 1 or a.asks < 1 or a.warmup < 0:
        cli.error("--messages and --asks must be positive, --warmup not negative")
    return params_from(Params, a)


def run(params: Params) -> Report:
    started = time.monotonic()
    n, m, w = params.messages, params.asks, params.warmup
    with private_machine(READY_TIMEOUT, STOP_TIMEOUT) as (server, children, machine):
        url = server.url
        print(
            f"redis-server {machine['redis_server_version']} on {url}; {machine['cpu_count']} CPUs; "
            f"{n} messages, {m} asks (+{w} warm-up)",
            flush=True,
        )
        throughput: dict[str, Throughput] = {
            "memory": step("throughput memory", lambda: bench_memory_throughput(n)),
            "redis": step("throughput redis", lambda: bench_redis_throughput(url, n, children)),
            "raw": step("throughput raw", lambda: bench_raw_throughput(url, n, children, batch_ack=False)),
            "raw_batch": step(
                "throughput raw batch-ack", lambda: bench_raw_throughput(url, n, children, batch_ack=True)
            ),
        }
        latency: dict[str, Latency] = {
            "memory": step("ask memory", lambda: bench_memory_ask(m, w)),
            **step("ask redis + raw (interleaved)", lambda: bench_remote_asks(url, m, w, children)),
        }
        exit_codes = dict(children.exit_codes)
    return Report(params, machine, throughput, latency, exit_codes, time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    return bench_main(argv, parse_args, run, (format_table, format_checks))


if __name__ == "__main__":
    sys.exit(main())
