"""Prometheus metrics of a process: bus traffic, handler latency, backlog, dead letters, LLM usage.

Built on ``prometheus_client``, with a registry of each process's own (``metrics_registry``), never
the library's global one: two hosts in one process, and tests, do not see each other's samples.
Handler latency is a ``Histogram`` the host observes as it goes; everything else is read at scrape
time by custom collectors: the counters the bus keeps anyway, a few Redis queries (length and
pending entries of the streams the host reads, the dead-letter stream's length), the host's state
and the usage ledgers of the model gateways. ``metrics_route`` mounts the exposition on the live
view's server; ``serve_metrics`` answers scrapes on a listener of its own (the library's server),
for a process without the live view.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Histogram, generate_latest, start_http_server
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily

if TYPE_CHECKING:
    from actors.bus import Bus, Subscription
    from actors.llm import UsageLedger
    from actors.runtime._host import Host

PREFIX = "auratown_"

CONTENT_TYPE = choose_encoder("")[1]
"""What ``generate_latest`` writes (the text format 0.0.4): the library's answer to a scraper that
asks for no particular format."""

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

Family = CounterMetricFamily | GaugeMetricFamily

Ledgers = Mapping[str, "UsageLedger"] | Callable[[], Mapping[str, "UsageLedger"]]
"""Usage ledgers by name (``gateway.usage``), or a function giving them at scrape time."""


class HandlerLatency:
    """One latency histogram per actor type: how long handlers take (the host records it)."""

    def __init__(self, buckets: Iterable[float] = LATENCY_BUCKETS) -> None:
        self.histogram = Histogram(
            PREFIX + "handler_latency_seconds",
            "Time spent in message handlers, per actor type.",
            ["actor_type"],
            buckets=tuple(buckets),
            registry=None,  # registered by each registry that shows it (metrics_registry)
        )
        # Each actor type's child, looked up once: ``labels()`` costs more than the observation,
        # and the host observes every message.
        self._children: dict[str, Any] = {}

    def observe(self, actor_type: str, seconds: float) -> None:
        child = self._children.get(actor_type)
        if child is None:
            child = self._children.setdefault(actor_type, self.histogram.labels(actor_type=actor_type))
        child.observe(seconds)


# ---------------------------------------------------------------------------- scrape-time collectors


def stream_label(bus: Bus, stream: str) -> str:
    """A stream key without the namespace's prefix; every reply stream of asks is one label."""
    base = bus.keys.base + ":"
    name = stream[len(base) :] if stream.startswith(base) else stream
    if name.startswith("inbox:_reply."):
        return "inbox:_reply"
    return name


class _Collector(ABC):
    """A custom collector: its families are declared once (``describe``, so a registry refuses a
    clash of names) and filled from fresh reads at each scrape (``collect``)."""

    @abstractmethod
    def families(self) -> dict[str, Family]:
        """Empty families, by a key ``fill`` knows them by."""

    @abstractmethod
    def fill(self, families: dict[str, Family]) -> None:
        """Add this scrape's samples to ``families``."""

    def describe(self) -> Iterator[Family]:
        return iter(self.families().values())

    def collect(self) -> Iterator[Family]:
        families = self.families()
        self.fill(families)
        return iter(families.values())


class BusCollector(_Collector):
    """What the buses counted (traffic, events, dead letters: summed, for a process whose lanes
    have a bus each) and the backlog in Redis, read through the first: the dead-letter stream's
    length and, for each stream ``subscriptions`` reads, its length and the entries delivered and
    not yet acknowledged."""

    def __init__(
        self, buses: Sequence[Bus], subscriptions: Callable[[], Iterable[Subscription]] = tuple
    ) -> None:
        if not buses:
            raise ValueError("BusCollector needs a bus")
        self.buses = buses
        self.bus = buses[0]
        self.subscriptions = subscriptions

    def families(self) -> dict[str, Family]:
        return {
            "in": CounterMetricFamily(
                PREFIX + "messages_in_total", "Entries this process read from each stream.", labels=["stream"]
            ),
            "out": CounterMetricFamily(
                PREFIX + "messages_out_total", "Entries this process wrote to each stream.", labels=["stream"]
            ),
            "events": CounterMetricFamily(
                PREFIX + "bus_events_total",
                "Bus and runtime events of this process (acked, retried, ...).",
                labels=["event"],
            ),
            "dead_lettered": CounterMetricFamily(
                PREFIX + "dead_lettered_total",
                "Entries this process moved to the dead-letter stream.",
                labels=["reason"],
            ),
            "dropped": CounterMetricFamily(
                PREFIX + "dead_letters_dropped_total",
                "Dead letters this process dropped by the retention policy.",
                labels=["cause"],
            ),
            "up": GaugeMetricFamily(PREFIX + "bus_up", "1 if the last scrape could read the bus, else 0."),
            "dead_letters": GaugeMetricFamily(
                PREFIX + "dead_letters", "Entries in the namespace's dead-letter stream."
            ),
            "length": GaugeMetricFamily(
                PREFIX + "stream_length", "Entries in each stream this process reads.", labels=["stream"]
            ),
            "pending": GaugeMetricFamily(
                PREFIX + "stream_pending",
                "Entries delivered to a consumer group and not yet acknowledged.",
                labels=["stream", "group"],
            ),
        }

    def fill(self, families: dict[str, Family]) -> None:
        bus = self.bus
        events, traffic, reasons = Counter[str](), Counter[tuple[str, str]](), Counter[str]()
        for each in self.buses:
            counted = each.counters()
            events.update(counted[0])  # update, not +=: a count of 0 stays
            traffic.update(counted[1])
            reasons.update(counted[2])
        by_label: Counter[tuple[str, str]] = Counter()
        for (direction, stream), n in traffic.items():
            by_label[(direction, stream_label(bus, stream))] += n
        for (direction, stream), n in sorted(by_label.items()):
            families[direction].add_metric([stream], n)
        for event, n in sorted(events.items()):
            families["events"].add_metric([event], n)
        for reason, n in sorted(reasons.items()):
            families["dead_lettered"].add_metric([reason], n)
        for cause in ("age", "length"):
            families["dropped"].add_metric([cause], events.get(f"dead_letters_dropped_{cause}", 0))
        try:
            backlog = self._backlog()
        except Exception:  # noqa: BLE001 - a scrape during a Redis outage still answers
            families["up"].add_metric([], 0)
            return
        dead_letters, rows = backlog
        families["up"].add_metric([], 1)
        families["dead_letters"].add_metric([], dead_letters)
        for stream, group, length, pending in sorted(rows):
            families["length"].add_metric([stream], length)
            families["pending"].add_metric([stream, group], pending)

    def _backlog(self) -> tuple[int, list[tuple[str, str, int, int]]]:
        bus = self.bus
        dead_letters = bus.transport.length(bus.dead_letter_stream)  # an attached agent: its own
        rows: list[tuple[str, str, int, int]] = []
        seen: set[tuple[str, str]] = set()
        for sub in self.subscriptions():
            if (sub.stream, sub.group) in seen:
                continue
            seen.add((sub.stream, sub.group))
            pending = next((g.pending for g in bus.transport.groups(sub.stream) if g.name == sub.group), 0)
            rows.append((stream_label(bus, sub.stream), sub.group, bus.transport.length(sub.stream), pending))
        return dead_letters, rows


class HostCollector(_Collector):
    """The hosts' names, the earliest start, and their entries in hand and actors alive or down,
    summed (a process's lanes)."""

    def __init__(self, hosts: Sequence[Host]) -> None:
        self.hosts = hosts

    def families(self) -> dict[str, Family]:
        return {
            "info": GaugeMetricFamily(
                PREFIX + "info",
                "Always 1: the process's name, namespace and bus process id.",
                labels=["name", "namespace", "process_id"],
            ),
            "start": GaugeMetricFamily(
                PREFIX + "start_time_seconds", "When the host was created (Unix time)."
            ),
            "in_flight": GaugeMetricFamily(
                PREFIX + "in_flight", "Entries this host holds: queued, running, waiting to retry or commit."
            ),
            "actors": GaugeMetricFamily(
                PREFIX + "actors", "Actors bound here, alive or not.", labels=["state"]
            ),
        }

    def fill(self, families: dict[str, Family]) -> None:
        hosts = self.hosts
        for host in hosts:
            families["info"].add_metric([host.name, host.bus.namespace, host.bus.process_id], 1)
        families["start"].add_metric([], min(host.started_at for host in hosts))
        families["in_flight"].add_metric([], sum(host.in_flight() for host in hosts))
        bound = [(host, a) for host in hosts for a in host.addresses]
        alive = sum(host.alive(a) for host, a in bound)
        families["actors"].add_metric(["alive"], alive)
        families["actors"].add_metric(["down"], len(bound) - alive)


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
"""(field of ``UsageStats``, metric name, help)."""


class UsageCollector(_Collector):
    """Model usage from the gateways' ledgers, per ledger and stage."""

    def __init__(self, ledgers: Ledgers | Iterable[UsageLedger] | None) -> None:
        self.ledgers = ledgers

    def families(self) -> dict[str, Family]:
        return {
            field: CounterMetricFamily(PREFIX + name, help_text + " Per ledger (gateway) and stage.",
                                       labels=["ledger", "stage"])
            for field, name, help_text in _LLM_FIELDS
        }  # fmt: skip

    def fill(self, families: dict[str, Family]) -> None:
        for ledger_name, ledger in sorted(self._named().items()):
            for stage, stats in sorted(ledger.by_stage().items()):
                for field, family in families.items():
                    family.add_metric([ledger_name, str(stage)], getattr(stats, field))

    def _named(self) -> Mapping[str, UsageLedger]:
        ledgers = self.ledgers
        if ledgers is None:
            return {}
        if callable(ledgers):
            return ledgers()  # read at each scrape: gateways made later are included
        if isinstance(ledgers, Mapping):
            return ledgers
        return {str(i): ledger for i, ledger in enumerate(ledgers)}


# ---------------------------------------------------------------------------- a process's registry


def metrics_registry(
    host: Host | Sequence[Host] | None,
    bus: Bus | None = None,
    ledgers: Ledgers | Iterable[UsageLedger] | None = None,
) -> CollectorRegistry:
    """The metrics of ``host`` (its bus by default) and of the usage ledgers, in a registry of their own.

    ``host``: one host, or a process's lanes (hosts on one namespace, a bus each, sharing one
    ``HandlerLatency``: a worker's), whose counts are summed. ``ledgers``: by name, a function
    returning them by name (read at each scrape: gateways made later are included), or a plain
    sequence (named "0", "1", ...). Without a host (a client process), only the bus's counters,
    the dead-letter count and the ledgers are collected.
    """
    hosts: list[Host] = [] if host is None else list(host) if isinstance(host, Sequence) else [host]
    buses = list({id(b): b for b in ([bus] if bus is not None else []) + [h.bus for h in hosts]}.values())
    if not buses:
        raise ValueError("metrics_registry needs a host or a bus")
    registry = CollectorRegistry()
    if hosts:
        registry.register(HostCollector(hosts))
        # A histogram shared by lanes is registered once; two of them would clash (refused).
        for histogram in {id(h.handler_latency): h.handler_latency.histogram for h in hosts}.values():
            registry.register(histogram)
    registry.register(BusCollector(buses, lambda: [s for h in hosts for s in h.subscriptions()]))
    registry.register(UsageCollector(ledgers))
    return registry


def render_metrics(
    host: Host | None, bus: Bus | None = None, ledgers: Ledgers | Iterable[UsageLedger] | None = None
) -> str:
    """One scrape of ``metrics_registry(host, bus, ledgers)``, as Prometheus text."""
    return generate_latest(metrics_registry(host, bus, ledgers)).decode()


def metrics_route(registry: CollectorRegistry) -> Callable[[], tuple[str, bytes]]:
    """A scrape of ``registry`` as a route of another server (the live view's ``extra_routes``)."""
    return lambda: (CONTENT_TYPE, generate_latest(registry))


# ---------------------------------------------------------------------------- a listener of its own


class MetricsServer:
    """A running ``/metrics`` listener (prometheus_client's server, on a daemon thread)."""

    def __init__(self, httpd: WSGIServer, thread: threading.Thread) -> None:
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
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_metrics(registry: CollectorRegistry, port: int, *, host: str = "127.0.0.1") -> MetricsServer:
    """Answer scrapes of ``registry`` on ``host:port`` (0: a free port) until closed.

    The listener has no token: anything but a loopback ``host`` shows the metrics to whoever can
    reach it. OSError if the address cannot be listened on."""
    httpd, thread = start_http_server(port, addr=host, registry=registry)
    return MetricsServer(httpd, thread)
