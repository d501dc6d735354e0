"""Prometheus metrics of a process: bus traffic, handler latency, backlog, dead letters, LLM usage.

Rendered by hand in the Prometheus text exposition format (version 0.0.4: ``# HELP`` and
``# TYPE`` before each family's samples, label values with ``\\``, ``"`` and newline escaped,
cumulative histogram buckets ending in ``le="+Inf"``, a newline after the last line), so no client
library is needed. ``render_metrics`` reads the counters the bus and host keep anyway, plus a few
Redis queries (pending entries and stream lengths of the streams the host reads, the dead-letter
stream's length); ``serve_metrics`` answers ``GET /metrics`` from a thread.

Only the standard library is imported at module level: the host imports ``HandlerLatency``.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from actors.bus import Bus
    from actors.llm import UsageLedger
    from actors.runtime._host import Host

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

LATENCY_BUCKETS: tuple[float, ...] = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
"""Upper bounds in seconds: a pure handler takes well under a millisecond, a model call seconds."""

Ledgers = Mapping[str, "UsageLedger"] | Callable[[], Mapping[str, "UsageLedger"]]
"""Usage ledgers by name (``gateway.usage``), or a function giving them at scrape time."""


# ---------------------------------------------------------------------------- histograms


@dataclass(frozen=True)
class HistogramSnapshot:
    bounds: tuple[float, ...]
    counts: tuple[int, ...]
    """Observations per bucket, not cumulative; one more than ``bounds`` (the +Inf bucket)."""
    total: float
    count: int

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations <= it), ending with (+inf, count)."""
        out, running = [], 0
        for bound, n in zip((*self.bounds, math.inf), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


class Histogram:
    """Observations counted into fixed buckets; thread-safe."""

    def __init__(self, bounds: Sequence[float] = LATENCY_BUCKETS) -> None:
        if list(bounds) != sorted(set(bounds)):
            raise ValueError("histogram bounds must be strictly increasing")
        self.bounds = tuple(bounds)
        self._counts = [0] * (len(self.bounds) + 1)
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        i = _bucket_index(self.bounds, value)
        with self._lock:
            self._counts[i] += 1
            self._sum += value

    def snapshot(self) -> HistogramSnapshot:
        with self._lock:
            return HistogramSnapshot(self.bounds, tuple(self._counts), self._sum, sum(self._counts))


def _bucket_index(bounds: tuple[float, ...], value: float) -> int:
    lo, hi = 0, len(bounds)
    while lo < hi:  # the first bound >= value (buckets are "less than or equal")
        mid = (lo + hi) // 2
        if bounds[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


class HandlerLatency:
    """One latency histogram per actor type: how long handlers take (the host records it)."""

    def __init__(self, bounds: Sequence[float] = LATENCY_BUCKETS) -> None:
        self._bounds = tuple(bounds)
        self._by_type: dict[str, Histogram] = {}
        self._lock = threading.Lock()

    def observe(self, actor_type: str, seconds: float) -> None:
        h = self._by_type.get(actor_type)
        if h is None:
            with self._lock:
                h = self._by_type.setdefault(actor_type, Histogram(self._bounds))
        h.observe(seconds)

    def snapshot(self) -> dict[str, HistogramSnapshot]:
        with self._lock:
            items = list(self._by_type.items())
        return {name: h.snapshot() for name, h in sorted(items)}


# ---------------------------------------------------------------------------- text format


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


@dataclass
class _Family:
    kind: str
    help: str
    samples: list[tuple[str, dict[str, str], float]]


class MetricsText:
    """Families of samples, rendered grouped by family (each after its HELP and TYPE lines)."""

    def __init__(self, prefix: str = "auratown_") -> None:
        self.prefix = prefix
        self._families: dict[str, _Family] = {}

    def family(self, name: str, kind: str, help_text: str) -> str:
        full = self.prefix + name
        if full not in self._families:
            self._families[full] = _Family(kind, help_text, [])
        return full

    def sample(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        """A sample of family ``name`` (declared first with ``family``)."""
        self._families[self.prefix + name].samples.append((self.prefix + name, dict(labels or {}), value))

    def histogram(self, name: str, snap: HistogramSnapshot, labels: Mapping[str, str]) -> None:
        fam = self._families[self.prefix + name]
        full = self.prefix + name
        for bound, n in snap.cumulative():
            fam.samples.append((full + "_bucket", {**labels, "le": format_value(bound)}, n))
        fam.samples.append((full + "_sum", dict(labels), snap.total))
        fam.samples.append((full + "_count", dict(labels), snap.count))

    def render(self) -> str:
        lines: list[str] = []
        for name, fam in self._families.items():
            lines.append(f"# HELP {name} {_escape_help(fam.help)}")
            lines.append(f"# TYPE {name} {fam.kind}")
            for sample_name, labels, value in fam.samples:
                if labels:
                    inner = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels.items())
                    lines.append(f"{sample_name}{{{inner}}} {format_value(value)}")
                else:
                    lines.append(f"{sample_name} {format_value(value)}")
        return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- what is measured


def stream_label(bus: Bus, stream: str) -> str:
    """A stream key without the namespace's prefix; every reply stream of asks is one label."""
    base = bus.keys.base + ":"
    name = stream[len(base) :] if stream.startswith(base) else stream
    if name.startswith("inbox:_reply."):
        return "inbox:_reply"
    return name


def _traffic(out: MetricsText, bus: Bus) -> None:
    events, traffic, reasons = bus.counters()
    by_label: Counter[tuple[str, str]] = Counter()
    for (direction, stream), n in traffic.items():
        by_label[(direction, stream_label(bus, stream))] += n
    out.family("messages_in_total", "counter", "Entries this process read from each stream.")
    out.family("messages_out_total", "counter", "Entries this process wrote to each stream.")
    for (direction, stream), n in sorted(by_label.items()):
        out.sample(f"messages_{direction}_total", n, {"stream": stream})
    out.family("bus_events_total", "counter", "Bus and runtime events of this process (acked, retried, ...).")
    for event, n in sorted(events.items()):
        out.sample("bus_events_total", n, {"event": event})
    out.family("dead_lettered_total", "counter", "Entries this process moved to the dead-letter stream.")
    for reason, n in sorted(reasons.items()):
        out.sample("dead_lettered_total", n, {"reason": reason})
    out.family(
        "dead_letters_dropped_total", "counter", "Dead letters this process dropped by the retention policy."
    )
    for cause in ("age", "length"):
        dropped = events.get(f"dead_letters_dropped_{cause}", 0)
        out.sample("dead_letters_dropped_total", dropped, {"cause": cause})


def _backlog(out: MetricsText, host: Host | None, bus: Bus) -> bool:
    """Redis-side gauges; False if the bus could not be read (the rest still renders)."""
    out.family("bus_up", "gauge", "1 if the last scrape could read the bus, else 0.")
    out.family("dead_letters", "gauge", "Entries in the namespace's dead-letter stream.")
    out.family("stream_length", "gauge", "Entries in each stream this process reads.")
    out.family("stream_pending", "gauge", "Entries delivered to a consumer group and not yet acknowledged.")
    try:
        dlq = bus.transport.length(bus.dead_letter_stream)  # an attached agent: its own
        rows: list[tuple[str, str, int, int]] = []
        seen: set[tuple[str, str]] = set()
        for sub in host.subscriptions() if host is not None else []:
            if (sub.stream, sub.group) in seen:
                continue
            seen.add((sub.stream, sub.group))
            pending = next((g.pending for g in bus.transport.groups(sub.stream) if g.name == sub.group), 0)
            rows.append((stream_label(bus, sub.stream), sub.group, bus.transport.length(sub.stream), pending))
    except Exception:  # noqa: BLE001 - a scrape during a Redis outage still answers
        out.sample("bus_up", 0)
        return False
    out.sample("bus_up", 1)
    out.sample("dead_letters", dlq)
    for stream, group, length, pending in sorted(rows):
        out.sample("stream_length", length, {"stream": stream})
        out.sample("stream_pending", pending, {"stream": stream, "group": group})
    return True


def _host(out: MetricsText, host: Host) -> None:
    out.family("info", "gauge", "Always 1: the process's name, namespace and bus process id.")
    out.sample(
        "info", 1, {"name": host.name, "namespace": host.bus.namespace, "process_id": host.bus.process_id}
    )
    out.family("start_time_seconds", "gauge", "When the host was created (Unix time).")
    out.sample("start_time_seconds", host.started_at)
    out.family("in_flight", "gauge", "Entries this host holds: queued, running, waiting to retry or commit.")
    out.sample("in_flight", host.in_flight())
    out.family("actors", "gauge", "Actors bound here, alive or not.")
    alive = sum(host.alive(a) for a in host.addresses)
    out.sample("actors", alive, {"state": "alive"})
    out.sample("actors", len(host.addresses) - alive, {"state": "down"})
    out.family("handler_latency_seconds", "histogram", "Time spent in message handlers, per actor type.")
    for actor_type, snap in host.handler_latency.snapshot().items():
        out.histogram("handler_latency_seconds", snap, {"actor_type": actor_type})


_LLM_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("calls", "llm_calls_total", "Requests sent to the model (retries and repairs included)."),
    ("cache_hits", "llm_cache_hits_total", "Model calls answered from the response cache."),
    ("prompt_tokens", "llm_prompt_tokens_total", "Prompt tokens sent to the model."),
    ("completion_tokens", "llm_completion_tokens_total", "Completion tokens received from the model."),
    ("cost_usd", "llm_cost_usd_total", "Cost in US dollars (litellm's price map; 0 if unpriced)."),
    ("latency_s", "llm_latency_seconds_total", "Seconds spent waiting on the model."),
    ("failures", "llm_failures_total", "Gateway calls that ended in an error."),
    ("retries", "llm_retries_total", "Retried model requests."),
    ("repairs", "llm_repairs_total", "Repair calls for answers that did not parse."),
    ("fallbacks", "llm_fallbacks_total", "Callers that gave up on the model and used an offline backend."),
)


def _llm(out: MetricsText, ledgers: Mapping[str, UsageLedger]) -> None:
    for _, name, help_text in _LLM_FIELDS:
        out.family(name, "counter", help_text + " Per ledger (gateway) and stage.")
    for ledger_name, ledger in sorted(ledgers.items()):
        for stage, stats in sorted(ledger.by_stage().items()):
            labels = {"ledger": ledger_name, "stage": str(stage)}
            for field_name, name, _ in _LLM_FIELDS:
                out.sample(name, getattr(stats, field_name), labels)


def render_metrics(
    host: Host | None, bus: Bus | None = None, ledgers: Ledgers | Iterable[UsageLedger] | None = None
) -> str:
    """The metrics of ``host`` (its bus by default) and of the usage ledgers, as Prometheus text.

    ``ledgers``: by name, a function returning them by name (read at each scrape: gateways made
    later are included), or a plain sequence (named "0", "1", ...). Without a host (a client
    process), only the bus's counters, the dead-letter count and the ledgers are rendered.
    """
    if bus is None:
        if host is None:
            raise ValueError("render_metrics needs a host or a bus")
        bus = host.bus
    out = MetricsText()
    if host is not None:
        _host(out, host)
    _traffic(out, bus)
    _backlog(out, host, bus)
    _llm(out, _named_ledgers(ledgers))
    return out.render()


def _named_ledgers(ledgers: Ledgers | Iterable[UsageLedger] | None) -> Mapping[str, UsageLedger]:
    if ledgers is None:
        return {}
    if callable(ledgers):
        return ledgers()
    if isinstance(ledgers, Mapping):
        return ledgers
    return {str(i): ledger for i, ledger in enumerate(ledgers)}


# ---------------------------------------------------------------------------- HTTP endpoint


class MetricsServer:
    """A running ``/metrics`` endpoint (a stdlib HTTP server on a daemon thread)."""

    def __init__(self, httpd: ThreadingHTTPServer, thread: threading.Thread) -> None:
        self._httpd = httpd
        self._thread = thread

    @property
    def host(self) -> str:
        return str(self._httpd.server_address[0])

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def metrics_route(render: Callable[[], str]) -> Callable[[], tuple[str, bytes]]:
    """``render`` as a route of another server (the live view's ``extra_routes``)."""
    return lambda: (CONTENT_TYPE, render().encode())


def serve_metrics(port: int, render: Callable[[], str], *, host: str = "127.0.0.1") -> MetricsServer:
    """Answer ``GET /metrics`` with ``render()`` on ``host:port`` (0: a free port) until closed."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] not in ("/metrics", "/"):
                self._reply(404, "text/plain; charset=utf-8", b"not found: try /metrics\n")
                return
            try:
                body = render().encode()
            except Exception as exc:  # noqa: BLE001 - the scraper gets the reason, the server lives
                self._reply(500, "text/plain; charset=utf-8", f"{type(exc).__name__}: {exc}\n".encode())
                return
            self._reply(200, CONTENT_TYPE, body)

        def _reply(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a scrape every few seconds is not news

    httpd = ThreadingHTTPServer((host, port), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, name=f"metrics-{port}", daemon=True)
    thread.start()
    return MetricsServer(httpd, thread)


def serve_host_metrics(
    host: Host, port: int, *, ledgers: Ledgers | None = None, bind: str = "127.0.0.1"
) -> MetricsServer:
    """``serve_metrics`` for a host process (``auratown daemon --metrics-port``, workers)."""
    return serve_metrics(port, lambda: render_metrics(host, host.bus, ledgers), host=bind)
