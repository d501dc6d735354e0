"""Prometheus metrics (text format, histogram, endpoint) and the deploy/ files (they parse, agree)."""

from __future__ import annotations

import configparser
import math
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import yaml

from actors.bus import Bus, MemoryTransport
from actors.bus.local_server import find_redis_server, free_port
from actors.llm import UsageLedger, UsageStats
from actors.llm._stages import Stage
from actors.roles import EchoActor
from actors.runtime import Host, HostConfig
from actors.runtime.metrics import (
    CONTENT_TYPE,
    Histogram,
    MetricsText,
    format_value,
    metrics_route,
    render_metrics,
    serve_metrics,
)
from messages import Ping
from tests.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"

_SAMPLE = re.compile(
    r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\})?'
    r" (?P<value>\S+)$"
)
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\.)*)"')


def parse_exposition(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Check ``text`` against the text format's rules; samples by name (labels unescaped)."""
    assert text.endswith("\n"), "the last line must end with a line feed"
    types: dict[str, str] = {}
    helps: set[str] = set()
    finished: set[str] = set()
    current: str | None = None
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            assert name not in helps, f"two HELP lines for {name}"
            helps.add(name)
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in {"counter", "gauge", "histogram", "summary", "untyped"}
            assert name not in types, f"two TYPE lines for {name}"
            types[name] = kind
            if current is not None:
                finished.add(current)
            current = name
            continue
        m = _SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        name = m["name"]
        family = next((f for f in (name, re.sub(r"_(bucket|sum|count)$", "", name)) if types.get(f)), None)
        assert family is not None, f"{name} has no TYPE line before it"
        assert family == current and family not in finished, f"{name}: samples of a family are not together"
        labels = {k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\") for k, v in
                  _LABEL.findall(m["labels"] or "")}  # fmt: skip
        value = float(m["value"].replace("+Inf", "inf"))
        out.setdefault(name, []).append((labels, value))
    return out


def value(samples: dict[str, list[tuple[dict[str, str], float]]], metric: str, **labels: str) -> float:
    matching = [v for ls, v in samples.get(metric, []) if all(ls.get(k) == x for k, x in labels.items())]
    assert len(matching) == 1, f"{metric}{labels}: {matching}"
    return matching[0]


# ---------------------------------------------------------------------------- format


def test_histogram_buckets_are_cumulative_and_le_inclusive() -> None:
    h = Histogram((0.1, 1.0))
    for v in (0.05, 0.1, 0.5, 1.0, 7.0):
        h.observe(v)
    snap = h.snapshot()
    assert snap.counts == (2, 2, 1)
    assert snap.cumulative() == [(0.1, 2), (1.0, 4), (math.inf, 5)]
    assert snap.count == 5 and snap.total == pytest.approx(8.65)
    with pytest.raises(ValueError):
        Histogram((1.0, 0.5))


def test_text_format_escapes_labels_and_help_and_renders_histograms() -> None:
    out = MetricsText(prefix="t_")
    out.family("odd", "gauge", 'help with \\ and\nnewline and "quotes"')
    out.sample("odd", 1.5, {"v": 'a"b\\c\nd'})
    out.family("lat", "histogram", "latency")
    h = Histogram((0.5,))
    h.observe(0.25)
    h.observe(2)
    out.histogram("lat", h.snapshot(), {"actor_type": "X"})
    text = out.render()
    assert '# HELP t_odd help with \\\\ and\\nnewline and "quotes"\n' in text
    assert 't_odd{v="a\\"b\\\\c\\nd"} 1.5\n' in text
    samples = parse_exposition(text)
    assert value(samples, "t_odd") == 1.5 and samples["t_odd"][0][0] == {"v": 'a"b\\c\nd'}
    assert value(samples, "t_lat_bucket", le="0.5") == 1
    assert value(samples, "t_lat_bucket", le="+Inf") == 2 == value(samples, "t_lat_count")
    assert value(samples, "t_lat_sum") == 2.25
    assert [format_value(v) for v in (3, 2.0, 0.25, math.inf, -math.inf, math.nan)] == [
        "3", "2", "0.25", "+Inf", "-Inf", "NaN"
    ]  # fmt: skip


# ---------------------------------------------------------------------------- a host's metrics


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


def test_a_scrape_during_a_bus_outage_still_answers() -> None:
    class Broken(MemoryTransport):
        def length(self, stream: str) -> int:
            raise ConnectionError("Redis is restarting")

    bus = Bus(Broken(), "outage")
    bus.count("acked", 2)
    samples = parse_exposition(render_metrics(None, bus))
    assert value(samples, "auratown_bus_up") == 0
    assert value(samples, "auratown_bus_events_total", event="acked") == 2


def test_the_endpoint_serves_metrics_404s_elsewhere_and_reports_render_errors() -> None:
    calls = []

    def render() -> str:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("boom")
        return "# TYPE x gauge\nx 1\n"

    with serve_metrics(0, render, host="127.0.0.1") as server:
        with urllib.request.urlopen(server.url, timeout=5) as r:
            assert r.status == 200 and r.headers["Content-Type"] == CONTENT_TYPE
            assert r.read() == b"# TYPE x gauge\nx 1\n"
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(server.url, timeout=5)
        assert err.value.code == 500 and b"boom" in err.value.read()
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/other", timeout=5)
        assert err.value.code == 404
    assert metrics_route(lambda: "x 1\n")() == (CONTENT_TYPE, b"x 1\n")


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
