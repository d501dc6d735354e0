"""Prometheus metrics (prometheus_client: a registry per host, scrape-time collectors, the
standalone listener) and the deploy/ files (they parse, agree)."""

from __future__ import annotations

import configparser
import re
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from actors.bus import Bus, MemoryTransport
from actors.bus.local_server import find_redis_server, free_port
from actors.llm import UsageLedger, UsageStats
from actors.llm._stages import Stage
from actors.roles import EchoActor
from actors.runtime import Host, HostConfig
from actors.runtime.metrics import (
    CONTENT_TYPE,
    HandlerLatency,
    metrics_registry,
    metrics_route,
    render_metrics,
    serve_metrics,
)
from messages import Ping
from tests.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"

Samples = dict[str, list[tuple[dict[str, str], float]]]


def parse_exposition(text: str) -> Samples:
    """Samples by name (labels unescaped), read by prometheus_client's own parser of the text format."""
    assert text.endswith("\n"), "the last line must end with a line feed"
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def value(samples: Samples, metric: str, **labels: str) -> float:
    matching = [v for ls, v in samples.get(metric, []) if all(ls.get(k) == x for k, x in labels.items())]
    assert len(matching) == 1, f"{metric}{labels}: {matching}"
    return matching[0]


def scrape(registry: CollectorRegistry) -> Samples:
    return parse_exposition(generate_latest(registry).decode())


# ---------------------------------------------------------------------------- a host's metrics


def test_handler_latency_buckets_are_cumulative_and_le_inclusive() -> None:
    latency = HandlerLatency((0.1, 1.0))
    for v in (0.05, 0.1, 0.5, 1.0, 7.0):
        latency.observe("X", v)
    registry = CollectorRegistry()
    registry.register(latency.histogram)
    samples = scrape(registry)
    bucket = "auratown_handler_latency_seconds_bucket"
    assert value(samples, bucket, actor_type="X", le="0.1") == 2
    assert value(samples, bucket, actor_type="X", le="1.0") == 4
    assert value(samples, bucket, actor_type="X", le="+Inf") == 5
    assert value(samples, "auratown_handler_latency_seconds_count", actor_type="X") == 5
    assert value(samples, "auratown_handler_latency_seconds_sum", actor_type="X") == pytest.approx(8.65)


@pytest.fixture
def echo_host() -> Iterator[Host]:
    bus = Bus(MemoryTransport(), "metrics-test")
    host = Host(bus, HostConfig(block_ms=20))
    host.spawn(EchoActor, "echo")
    with host:
        yield host
    bus.close()


def test_a_hosts_metrics_count_traffic_latency_backlog_and_dead_letters(echo_host: Host) -> None:
    bus = echo_host.bus
    for i in range(5):
        bus.ask("echo", Ping(seq=i, body="metrics"), timeout=5)
    bus.transport.add(bus.keys.inbox("echo"), {"m": b"\x00not msgpack"})
    wait_until(bus.dead_letters, what="the garbage entry to be dead-lettered")

    samples = parse_exposition(render_metrics(echo_host, bus))
    assert value(samples, "auratown_messages_in_total", stream="inbox:echo") == 6
    assert value(samples, "auratown_messages_out_total", stream="inbox:echo") == 5  # the asks
    assert value(samples, "auratown_messages_out_total", stream="inbox:_reply") == 5  # the replies
    assert value(samples, "auratown_messages_out_total", stream="dlq") == 1
    assert value(samples, "auratown_bus_events_total", event="acked") == 5
    (reason,) = [ls["reason"] for ls, _ in samples["auratown_dead_lettered_total"]]
    assert value(samples, "auratown_dead_lettered_total", reason=reason) == 1
    assert value(samples, "auratown_dead_letters") == 1
    assert value(samples, "auratown_bus_up") == 1
    assert value(samples, "auratown_stream_pending", stream="inbox:echo", group="inbox") == 0
    assert value(samples, "auratown_handler_latency_seconds_count", actor_type="EchoActor") == 5
    assert value(samples, "auratown_handler_latency_seconds_bucket", actor_type="EchoActor", le="+Inf") == 5
    buckets = [v for ls, v in samples["auratown_handler_latency_seconds_bucket"]]
    assert buckets == sorted(buckets) and buckets[0] >= 0
    assert value(samples, "auratown_actors", state="alive") == 1
    assert value(samples, "auratown_info", name="host", namespace="metrics-test") == 1


def test_scrape_time_values_are_read_at_each_scrape(echo_host: Host) -> None:
    bus = echo_host.bus
    registry = metrics_registry(echo_host)
    before = scrape(registry)
    assert value(before, "auratown_dead_letters") == 0
    assert "auratown_handler_latency_seconds_count" not in before  # no handler ran yet
    bus.ask("echo", Ping(seq=1, body="later"), timeout=5)
    bus.transport.add(bus.keys.inbox("echo"), {"m": b"\x00not msgpack"})
    wait_until(bus.dead_letters, what="the garbage entry to be dead-lettered")
    after = scrape(registry)  # the same registry, scraped again
    assert value(after, "auratown_dead_letters") == 1
    assert value(after, "auratown_stream_length", stream="inbox:echo") == 2
    assert value(after, "auratown_messages_in_total", stream="inbox:echo") == 2
    assert value(after, "auratown_handler_latency_seconds_count", actor_type="EchoActor") == 1


def test_two_hosts_in_one_process_keep_their_own_metrics() -> None:
    hosts = []
    for name, asks in (("first", 2), ("second", 3)):
        bus = Bus(MemoryTransport(), name)
        host = Host(bus, HostConfig(block_ms=20), name=name)
        host.spawn(EchoActor, "echo")
        host.start()
        hosts.append(host)
        for i in range(asks):
            bus.ask("echo", Ping(seq=i, body=name), timeout=5)
    try:
        registries = [metrics_registry(h) for h in hosts]  # no clash: a registry each
        for host, registry, asks in zip(hosts, registries, (2, 3), strict=True):
            samples = scrape(registry)
            assert value(samples, "auratown_info", name=host.name) == 1
            assert value(samples, "auratown_handler_latency_seconds_count", actor_type="EchoActor") == asks
            assert value(samples, "auratown_messages_in_total", stream="inbox:echo") == asks
    finally:
        for host in hosts:
            host.stop()
            host.bus.close()


def test_a_process_lanes_are_summed_in_one_registry() -> None:
    """A worker's lanes (here one role each): hosts on one namespace, a bus each, one latency
    histogram between them."""
    transport = MemoryTransport()
    latency = HandlerLatency()
    lanes = []
    for lane in range(2):
        host = Host(Bus(transport, "lanes"), HostConfig(block_ms=20), name=f"echo#{lane}")
        host.handler_latency = latency
        host.spawn(EchoActor, f"echo{lane}")
        lanes.append(host)
    client = Bus(transport, "lanes")
    try:
        for host in lanes:
            host.start()
        for i in range(6):
            client.ask("echo0" if i % 3 == 0 else "echo1", Ping(seq=i, body="lanes"), timeout=5)
        samples = scrape(metrics_registry(lanes))
        assert value(samples, "auratown_messages_in_total", stream="inbox:echo0") == 2
        assert value(samples, "auratown_messages_in_total", stream="inbox:echo1") == 4
        assert value(samples, "auratown_bus_events_total", event="acked") == 6  # both buses' counts
        assert value(samples, "auratown_handler_latency_seconds_count", actor_type="EchoActor") == 6
        assert value(samples, "auratown_actors", state="alive") == 2
        assert {ls["name"] for ls, _ in samples["auratown_info"]} == {"echo#0", "echo#1"}
        assert value(samples, "auratown_stream_pending", stream="inbox:echo1", group="inbox") == 0
        with pytest.raises(ValueError, match="handler_latency"):  # lanes timed apart would clash
            lanes[1].handler_latency = HandlerLatency()
            metrics_registry(lanes)
    finally:
        for host in lanes:
            host.stop()
            host.bus.close()
        client.close()


def test_llm_usage_from_ledgers_by_ledger_and_stage() -> None:
    ledger = UsageLedger()
    ledger.add(
        Stage.ACTION, "Lin Wei", UsageStats(calls=3, prompt_tokens=120, completion_tokens=30, cost_usd=0.25)
    )
    ledger.add(Stage.INTENT, "env", UsageStats(calls=1, failures=1, latency_s=1.5))
    ledger.add_fallback(Stage.ACTION, "Lin Wei", "timeout")
    bus = Bus(MemoryTransport(), "llm-metrics")
    for ledgers in ({"minds": ledger}, lambda: {"minds": ledger}):
        samples = parse_exposition(render_metrics(None, bus, ledgers))
        assert value(samples, "auratown_llm_calls_total", ledger="minds", stage="action") == 3
        assert value(samples, "auratown_llm_prompt_tokens_total", ledger="minds", stage="action") == 120
        assert value(samples, "auratown_llm_completion_tokens_total", ledger="minds", stage="action") == 30
        assert value(samples, "auratown_llm_cost_usd_total", ledger="minds", stage="action") == 0.25
        assert value(samples, "auratown_llm_fallbacks_total", ledger="minds", stage="action") == 1
        assert value(samples, "auratown_llm_failures_total", ledger="minds", stage="intent") == 1
        assert value(samples, "auratown_llm_latency_seconds_total", ledger="minds", stage="intent") == 1.5
    samples = parse_exposition(render_metrics(None, bus, [ledger]))
    assert value(samples, "auratown_llm_calls_total", ledger="0", stage="intent") == 1
    later: dict[str, UsageLedger] = {}
    registry = metrics_registry(None, bus, lambda: later)  # a gateway made after the registry
    assert "auratown_llm_calls_total" not in scrape(registry)
    later["env:model"] = ledger
    assert value(scrape(registry), "auratown_llm_calls_total", ledger="env:model", stage="action") == 3


def test_label_values_are_escaped() -> None:
    odd = 'a"b\\c\nd'
    bus = Bus(MemoryTransport(), "escaped")
    bus.count(odd, 2)
    ledger = UsageLedger()
    ledger.add(Stage.ACTION, "x", UsageStats(calls=1))
    text = render_metrics(None, bus, {odd: ledger})
    assert 'event="a\\"b\\\\c\\nd"' in text
    samples = parse_exposition(text)
    assert value(samples, "auratown_bus_events_total", event=odd) == 2
    assert value(samples, "auratown_llm_calls_total", ledger=odd) == 1


def test_a_scrape_during_a_bus_outage_still_answers() -> None:
    class Broken(MemoryTransport):
        def length(self, stream: str) -> int:
            raise ConnectionError("Redis is restarting")

    bus = Bus(Broken(), "outage")
    bus.count("acked", 2)
    samples = parse_exposition(render_metrics(None, bus))
    assert value(samples, "auratown_bus_up") == 0
    assert value(samples, "auratown_bus_events_total", event="acked") == 2


# ---------------------------------------------------------------------------- the standalone listener


def _get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read()


def test_the_listener_serves_the_registry_on_loopback_by_default(echo_host: Host) -> None:
    echo_host.bus.ask("echo", Ping(seq=1, body="scraped"), timeout=5)
    with serve_metrics(metrics_registry(echo_host), 0) as server:
        assert server.host == "127.0.0.1" and server.url == f"http://127.0.0.1:{server.port}/metrics"
        status, ctype, body = _get(server.url)
        assert status == 200 and ctype == CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"
        samples = parse_exposition(body.decode())
        assert value(samples, "auratown_handler_latency_seconds_count", actor_type="EchoActor") == 1
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5).close()  # closed


def test_the_listener_binds_the_address_given_and_no_other() -> None:
    registry = metrics_registry(None, Bus(MemoryTransport(), "bound"))
    with serve_metrics(registry, 0, host="127.0.0.2") as server:
        assert (server.host, server.url) == ("127.0.0.2", f"http://127.0.0.2:{server.port}/metrics")
        assert _get(server.url)[0] == 200
        with pytest.raises(ConnectionRefusedError):  # not a wildcard: 127.0.0.1 is another address
            socket.create_connection(("127.0.0.1", server.port), timeout=5).close()


def test_a_failing_collector_is_a_500_and_the_listener_lives_on() -> None:
    calls: list[int] = []

    class Flaky:
        def collect(self) -> Iterator[Metric]:
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("boom")
            return iter(())

    registry = metrics_registry(None, Bus(MemoryTransport(), "flaky"))
    registry.register(Flaky())
    with serve_metrics(registry, 0) as server:
        assert _get(server.url)[0] == 500
        status, _, body = _get(server.url)
        assert status == 200 and value(parse_exposition(body.decode()), "auratown_bus_up") == 1


def test_the_route_for_another_server_is_one_scrape_of_the_registry() -> None:
    bus = Bus(MemoryTransport(), "route")
    bus.count("acked", 4)
    ctype, body = metrics_route(metrics_registry(None, bus))()
    assert ctype == CONTENT_TYPE
    assert value(parse_exposition(body.decode()), "auratown_bus_events_total", event="acked") == 4


# ---------------------------------------------------------------------------- deploy/


def _yaml_docs(path: Path) -> list[dict[str, object]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def test_the_kubernetes_manifests_parse_and_fit_together() -> None:
    docs = [d for f in sorted((DEPLOY / "k8s").glob("*.yaml")) for d in _yaml_docs(f)]
    by_kind: dict[str, list[dict[str, object]]] = {}
    for d in docs:
        assert {"apiVersion", "kind", "metadata"} <= d.keys()
        by_kind.setdefault(str(d["kind"]), []).append(d)
    assert len(by_kind["Deployment"]) == 2 and len(by_kind["StatefulSet"]) == 1
    (config_map,) = by_kind["ConfigMap"]
    data = config_map["data"]
    assert isinstance(data, dict)
    assert data["redis.conf"] == (DEPLOY / "redis.conf").read_text(), "the ConfigMap's redis.conf is stale"
    (sts,) = by_kind["StatefulSet"]
    spec = sts["spec"]
    assert isinstance(spec, dict) and spec["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    commands = set()
    for dep in by_kind["Deployment"]:
        (container,) = dep["spec"]["template"]["spec"]["containers"]  # type: ignore[index]
        assert container["envFrom"] == [{"configMapRef": {"name": config_map["metadata"]["name"]}}]  # type: ignore[index]
        args = container["args"]
        commands.add(args[0])
        for arg in args:  # every $(VAR) the args use is defined by the ConfigMap
            for var in re.findall(r"\$\((\w+)\)", arg):
                assert var in data, var
    assert commands == {"daemon", "worker"}


def test_compose_has_redis_a_daemon_and_two_workers() -> None:
    (compose,) = _yaml_docs(DEPLOY / "docker-compose.yml")
    services = compose["services"]
    assert isinstance(services, dict)
    assert set(services) == {"redis", "daemon", "worker"}
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["daemon"]["command"][0] == "daemon" and services["worker"]["command"][0] == "worker"
    assert "./redis.conf:/usr/local/etc/redis/redis.conf:ro" in services["redis"]["volumes"]
    assert (DEPLOY / services["daemon"]["build"]["dockerfile"].removeprefix("deploy/")).exists()


def test_systemd_units_parse_and_run_auratown() -> None:
    units = {p.name: p for p in (DEPLOY / "systemd").glob("*.service")}
    assert set(units) == {"auratown-daemon.service", "auratown-worker@.service"}
    for name, path in units.items():
        unit = configparser.ConfigParser(strict=False, interpolation=None)
        unit.optionxform = str  # type: ignore[assignment,method-assign]
        unit.read(path)
        assert {"Unit", "Service", "Install"} <= set(unit.sections())
        exec_start = unit["Service"]["ExecStart"]
        assert exec_start.split()[0].endswith("/auratown")
        assert (" daemon " if "daemon" in name else " worker ") in exec_start
        assert unit["Service"]["KillSignal"] == "SIGTERM"


def test_redis_conf_loads_with_aof_everysec_and_no_eviction(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [find_redis_server(), str(DEPLOY / "redis.conf"), "--port", str(port), "--bind", "127.0.0.1",
         "--dir", str(tmp_path), "--daemonize", "no"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = redis.Redis(port=port, socket_timeout=5)
    try:

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"redis-server refused deploy/redis.conf: {proc.stdout.read()!r}")  # type: ignore[union-attr]
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                return False

        wait_until(up, timeout=10, what="redis-server with deploy/redis.conf")
        conf = {k: v for name in ("appendonly", "appendfsync", "maxmemory-policy")
                for k, v in client.config_get(name).items()}  # fmt: skip
        assert conf == {"appendonly": "yes", "appendfsync": "everysec", "maxmemory-policy": "noeviction"}
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout:
            proc.stdout.close()
