"""Town benchmark: ticks per second and peak memory of AURATown from 5 to 2000 agents.

Every town runs deterministic minds (``schedule_mind``, no LLM): the 5-agent town is the real
AURATown (``embedded_town()``), the others are ``generate_town(n, seed=0)``; the world's seed is 42.
Each size first runs ``--warmup`` ticks (not timed), then ``--ticks`` timed ticks; every size and
mode runs the same tick window (ticks ``warmup .. warmup + ticks - 1``), because the cost of a tick
varies over the simulated day. Two modes, each size in its own spawned child process so that its
peak RSS is its own:

* ``in-process``: the child builds ``world.Town`` and calls ``town.step(1)`` once per timed tick
  (perceive, decide, advance for every agent; no bus). Its peak RSS (``ru_maxrss``) is taken right
  after the timed ticks. With ``--heap`` the child then builds a second, fresh town and runs the
  same ticks under ``tracemalloc`` for the peak Python heap (slow, so off by default).
* ``redis``: a child hosts the whole town on one ``Host`` over a ``RedisTransport``, as
  ``auratown daemon`` does: ``ensure_config`` + ``spawn_town`` (the ``clock``, the ``world`` and one
  ``agent.<slug>`` actor per agent; paused, ``ticks_per_second=0``, ``decision_timeout=30``). This
  process drives it with a ``TownClient`` on its own ``Bus``: ``client.step(ticks, wait=...)``, so
  every Tick, every Perception/Decision ask (the world scatters them with ``ask_many``) and every
  TickCompleted crosses processes through Redis. The timed wall time is that of the one ``step``
  call, from sending the Step to seeing the last TickCompleted. The child's peak RSS is taken when
  it has stopped its host. Host CPU and redis-server CPU over the timed ticks come from
  ``/proc/<pid>/stat`` and ``INFO cpu``; "conns" is redis-server's ``connected_clients`` then.
  Missed decisions are summed from the TickCompleted entries (warm-up ticks included).

Only a private ``redis-server`` is used (``LocalRedisServer`` on a free port, never the machine's
default one), with one namespace per size (``bench:town:<n>``).

The hosting child uses the transport's own connection pools (``--max-connections N`` puts
``?max_connections=N`` on its URL instead). They block rather than fail when every connection is
busy: a host runs each busy actor on its own thread, and redis-py's plain pool (100 connections)
made agents die with ``MaxConnectionsError`` at 200 agents and more, found by this benchmark.
The children's warnings and errors are counted
and printed (``--verbose`` also shows them on stderr), as are the bus counters (restarts, ask
timeouts, ...) when they are not just sent/received/acked.

The targets, printed as PASS/FAIL:

1. a tick's cost grows about linearly with agents: seconds per tick at 2000 agents <= 12x seconds per
   tick at 200 agents, checked for each mode ("n/a" if either size was not run or failed);
2. the 5-agent daemon stays under 150 MB resident: peak RSS of the redis-mode child hosting the
   5-agent town (clock, world and agents).

Results and machine info are written as JSON (``bench/results/town.json`` by default).

Run::

    python -m bench.town                      # defaults, a few minutes on a 2-core machine
    python -m bench.town --quick              # smoke run: 5, 50, 200 agents, 5 ticks
    python -m bench.town --sizes 5,200 --ticks 35 --out /tmp/town.json
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import os
import resource
import sys
import time
import tracemalloc
from collections import Counter
from dataclasses import asdict, dataclass, field
from multiprocessing.context import SpawnProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from typing import Any

import redis

from actors.bus import Bus
from actors.bus._redis import RedisTransport
from actors.bus.local_server import LocalRedisServer
from actors.runtime import Host, HostConfig, freeze_heap
from actors.town import TownClient, TownConfig, TownRequestError, embedded_town, ensure_config, spawn_town
from actors.town.world import TICKS_TOPIC
from bench._cli import BenchParams, BenchParser, Scale, bench_main, params_from
from bench._harness import BenchError, Children, child_result, child_run, private_machine, wait_for_stop
from bench._output import num, results_json, step, table, verdict
from messages.town import TickCompleted
from world import Town, TownDefinition, generate_town

SIZES = Scale([5, 50, 200, 500, 2000], quick=[5, 50, 200])
TICKS = Scale(15, quick=5)
DEFAULT_WARMUP = 2
DEFAULT_MAX_CONNECTIONS = 0

EMBEDDED_AGENTS = 5
"""This size runs the real AURATown (``embedded_town()``); every other size a generated town."""
GENERATOR_SEED = 0
WORLD_SEED = 42
DECISION_TIMEOUT = 30.0

LINEAR_SMALL, LINEAR_LARGE = 200, 2000
LINEAR_TARGET = 12.0
"""Seconds per tick at LINEAR_LARGE agents divided by that at LINEAR_SMALL must be at most this."""
DAEMON_AGENTS = 5
RSS_TARGET_MB = 150.0
"""Peak RSS of the process hosting the 5-agent town on Redis must stay below this."""

MODES = ("in-process", "redis")
OBSERVER_GROUP = "bench-observer"
"""A consumer group on the ticks topic that never reads: it keeps the host from trimming the
TickCompleted entries this benchmark reads afterwards."""
READY_TIMEOUT = 180.0
STOP_TIMEOUT = 60.0
CLIENT_TIMEOUT = 60.0
ROUTINE_STATS = frozenset({"sent", "received", "acked"})


# ---------------------------------------------------------------------------------------- results


@dataclass
class Run:
    """One size in one mode."""

    mode: str
    agents: int
    locations: int = 0
    town: str = ""
    warmup_ticks: int = 0
    ticks: int = 0
    seconds: float = 0.0
    """Wall time of the timed ticks."""
    tick_seconds: list[float] = field(default_factory=list)
    """Each timed tick's duration (redis: between the TickCompleted wall times)."""
    setup_s: float = 0.0
    """Building the town (in-process) or ensure_config + spawn_town + host.start (redis)."""
    warmup_s: float = 0.0
    peak_rss_mb: float | None = None
    heap_peak_mb: float | None = None
    actors: int | None = None
    host_cpu_s: float | None = None
    """CPU time (all threads) of the process running the town during the timed ticks."""
    redis_cpu_s: float | None = None
    redis_clients: int | None = None
    missed: int | None = None
    stop_s: float | None = None
    bus_stats: dict[str, int] = field(default_factory=dict)
    log_counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.ticks > 0 and self.seconds > 0

    @property
    def s_per_tick(self) -> float | None:
        return self.seconds / self.ticks if self.ok else None

    @property
    def ticks_per_s(self) -> float | None:
        return self.ticks / self.seconds if self.ok else None

    @property
    def max_tick_s(self) -> float | None:
        return max(self.tick_seconds) if self.ok and self.tick_seconds else None

    def per_tick(self, value: float | None) -> float | None:
        return None if value is None or not self.ok else value / self.ticks

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "s_per_tick": self.s_per_tick,
            "ticks_per_s": self.ticks_per_s,
            "max_tick_s": self.max_tick_s,
            "host_cpu_s_per_tick": self.per_tick(self.host_cpu_s),
            "redis_cpu_s_per_tick": self.per_tick(self.redis_cpu_s),
        }


# ---------------------------------------------------------------------------------------- towns


def town_definition(agents: int) -> TownDefinition:
    if agents == EMBEDDED_AGENTS:
        return embedded_town()
    return generate_town(agents, seed=GENERATOR_SEED)


def town_config(definition: TownDefinition) -> TownConfig:
    return TownConfig(
        definition=definition,
        seed=WORLD_SEED,
        ticks_per_second=0.0,
        start_paused=True,
        decision_timeout=DECISION_TIMEOUT,
    )


def peak_rss_mb() -> float:
    """This process's peak resident set size (``ru_maxrss``: KB on Linux, bytes on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process, all threads (Linux ``/proc``; None elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------- children


@dataclass(frozen=True)
class InProcessSpec:
    agents: int
    warmup: int
    ticks: int
    heap: bool
    verbose: bool


def _in_process_child(spec: InProcessSpec, results: Queue[dict[str, Any]], ready: MpEvent) -> None:
    """Build and step one town in this process; put the measurements on ``results``."""
    with child_run(results, verbose=spec.verbose) as child:
        ready.set()
        out = child.out
        t0 = time.perf_counter()
        definition = town_definition(spec.agents)
        town = Town(definition, seed=WORLD_SEED)
        out["setup_s"] = time.perf_counter() - t0
        out["town"], out["locations"] = definition.name, len(definition.locations)
        t0 = time.perf_counter()
        missed = sum(len(r.missed) for r in town.step(spec.warmup))
        out["warmup_s"] = time.perf_counter() - t0
        durations: list[float] = []
        cpu0 = time.process_time()
        start = time.perf_counter()
        for _ in range(spec.ticks):
            t0 = time.perf_counter()
            missed += sum(len(r.missed) for r in town.step(1))
            durations.append(time.perf_counter() - t0)
        out["seconds"] = time.perf_counter() - start
        out["host_cpu_s"] = time.process_time() - cpu0
        out["tick_seconds"], out["missed"] = durations, missed
        out["peak_rss_mb"] = peak_rss_mb()
        if spec.heap:
            del town
            gc.collect()
            tracemalloc.start()
            try:
                Town(definition, seed=WORLD_SEED).step(spec.warmup + spec.ticks)
                out["heap_peak_mb"] = tracemalloc.get_traced_memory()[1] / (1024 * 1024)
            finally:
                tracemalloc.stop()


@dataclass(frozen=True)
class HostSpec:
    url: str
    namespace: str
    agents: int
    max_in_flight: int | None
    fetch_count: int | None
    verbose: bool

    def host_config(self) -> HostConfig:
        defaults = HostConfig()
        return HostConfig(
            max_in_flight=self.max_in_flight or defaults.max_in_flight,
            fetch_count=self.fetch_count or defaults.fetch_count,
        )


def _redis_host_child(spec: HostSpec, stop: MpEvent, results: Queue[dict[str, Any]], ready: MpEvent) -> None:
    """Host the whole town (clock, world, agents) until ``stop``; then put the measurements."""
    with child_run(results, verbose=spec.verbose) as child:
        transport = child.closing(RedisTransport(spec.url))
        bus = child.closing(Bus(transport, spec.namespace))
        out = child.out
        t0 = time.perf_counter()
        definition = town_definition(spec.agents)
        config, _ = ensure_config(bus, town_config(definition))
        host = Host(bus, spec.host_config(), name=f"bench-town-{spec.agents}")
        spawned = spawn_town(host, config)
        host.start()
        freeze_heap()  # as auratown daemon does
        out["setup_s"] = time.perf_counter() - t0
        out["town"], out["locations"], out["actors"] = (
            definition.name,
            len(definition.locations),
            len(spawned),
        )
        ready.set()
        wait_for_stop(stop)
        t0 = time.perf_counter()
        host.stop()
        out["stop_s"] = time.perf_counter() - t0
        out["peak_rss_mb"] = peak_rss_mb()
        out["bus_stats"] = dict(bus.stats)


def _apply(run: Run, out: dict[str, Any]) -> Run:
    for key, value in out.items():
        setattr(run, key, value)
    return run


def _run_timeout(agents: int, ticks: int) -> float:
    """A generous bound for ``ticks`` ticks of a town of ``agents`` (about 10x what they take)."""
    return 60.0 + ticks * (1.0 + agents / 40)


# ---------------------------------------------------------------------------------------- in process


def bench_in_process(agents: int, params: Params, children: Children) -> Run:
    warmup, ticks = params.warmup, params.ticks
    run = Run("in-process", agents, warmup_ticks=warmup, ticks=ticks)
    results = children.queue()
    spec = InProcessSpec(agents, warmup, ticks, params.heap, params.verbose)
    proc = children.start(f"in-process-{agents}", _in_process_child, spec, results)
    try:
        timeout = _run_timeout(agents, warmup + ticks) * (4 if params.heap else 1)
        _apply(run, child_result(results, proc, timeout))
        children.join(proc)
    finally:
        children.stop(proc)
    return run


# ---------------------------------------------------------------------------------------- redis


def _with_max_connections(url: str, max_connections: int) -> str:
    if max_connections <= 0:
        return url
    return f"{url}{'&' if '?' in url else '?'}max_connections={max_connections}"


def _redis_cpu_s(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _completions(transport: RedisTransport, bus: Bus) -> dict[int, tuple[float, int]]:
    """Every TickCompleted on the ticks topic: tick -> (wall time of its first, decisions missed)."""
    stream = bus.keys.topic(TICKS_TOPIC)
    seen: dict[int, tuple[float, int]] = {}
    last = "0-0"
    while True:
        entries = transport.read(stream, last, count=1000, block_ms=None)
        if not entries:
            return seen
        for entry in entries:
            last = entry.entry_id
            env = bus.decode_entry(entry)
            if env is not None and isinstance(env.payload, TickCompleted) and env.payload.tick not in seen:
                seen[env.payload.tick] = (env.wall_time, len(env.payload.missed))


def bench_redis(server: LocalRedisServer, agents: int, params: Params, children: Children) -> Run:
    warmup, ticks = params.warmup, params.ticks
    run = Run("redis", agents, warmup_ticks=warmup, ticks=ticks)
    namespace = f"bench:town:{agents}"
    transport = RedisTransport(server.url)
    bus = Bus(transport, namespace)
    admin = redis.Redis.from_url(server.url)
    results, stop = children.queue(), children.event()
    spec = HostSpec(
        _with_max_connections(server.url, params.max_connections),
        namespace,
        agents,
        params.max_in_flight,
        params.fetch_count,
        params.verbose,
    )
    proc: SpawnProcess | None = None
    try:
        transport.ensure_group(bus.keys.topic(TICKS_TOPIC), OBSERVER_GROUP, from_start=True)
        proc = children.start(f"redis-town-{agents}", _redis_host_child, spec, stop, results)
        assert proc.pid is not None
        client = TownClient(bus, timeout=CLIENT_TIMEOUT)
        t0 = time.perf_counter()
        client.step(warmup, wait=_run_timeout(agents, warmup) + READY_TIMEOUT)
        run.warmup_s = time.perf_counter() - t0
        host_cpu0, redis_cpu0 = process_cpu_s(proc.pid), _redis_cpu_s(admin)
        t0 = time.perf_counter()
        client.step(ticks, wait=_run_timeout(agents, ticks))
        run.seconds = time.perf_counter() - t0
        host_cpu1, redis_cpu1 = process_cpu_s(proc.pid), _redis_cpu_s(admin)
        run.redis_cpu_s = redis_cpu1 - redis_cpu0
        run.host_cpu_s = None if host_cpu0 is None or host_cpu1 is None else host_cpu1 - host_cpu0
        run.redis_clients = int(admin.info("clients")["connected_clients"])
        stop.set()
        _apply(run, child_result(results, proc, STOP_TIMEOUT + agents / 20))
        children.join(proc)
        done = _completions(transport, bus)
        last = warmup + ticks - 1
        if any(t not in done for t in range(last + 1)):
            raise BenchError(f"TickCompleted missing for some of ticks 0..{last}")
        run.tick_seconds = [done[t][0] - done[t - 1][0] for t in range(warmup, last + 1)]
        run.missed = sum(done[t][1] for t in range(last + 1))
    except (BenchError, TownRequestError, redis.RedisError) as exc:
        run.error = f"{type(exc).__name__}: {exc}"
        if proc is not None and proc.is_alive():
            stop.set()
            with contextlib.suppress(BenchError):
                _apply(
                    run, {k: v for k, v in child_result(results, proc, STOP_TIMEOUT).items() if k != "error"}
                )
    finally:
        if proc is not None:
            children.stop(proc)
        bus.close()
        transport.close()
        admin.close()
    return run


# ---------------------------------------------------------------------------------------- report


@dataclass
class Params(BenchParams):
    sizes: list[int]
    ticks: int
    warmup: int
    max_connections: int
    max_in_flight: int | None
    fetch_count: int | None
    heap: bool
    verbose: bool


@dataclass
class Report:
    params: Params
    machine: dict[str, Any]
    runs: list[Run]
    children: dict[str, int | None]
    elapsed_s: float

    def find(self, mode: str, agents: int) -> Run | None:
        return next((r for r in self.runs if r.mode == mode and r.agents == agents), None)

    def linear_ratio(self, mode: str) -> float | None:
        small, large = self.find(mode, LINEAR_SMALL), self.find(mode, LINEAR_LARGE)
        if small is None or large is None or small.s_per_tick is None or large.s_per_tick is None:
            return None
        return large.s_per_tick / small.s_per_tick

    def daemon_rss(self) -> float | None:
        run = self.find("redis", DAEMON_AGENTS)
        return None if run is None else run.peak_rss_mb

    def checks(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for mode in MODES:
            ratio = self.linear_ratio(mode)
            out[f"linear_{mode.replace('-', '_')}"] = {
                "value": ratio,
                "target": f"s/tick({LINEAR_LARGE}) / s/tick({LINEAR_SMALL}) <= {LINEAR_TARGET:g}",
                "pass": None if ratio is None else ratio <= LINEAR_TARGET,
            }
        rss = self.daemon_rss()
        out["daemon_rss_5_agents"] = {
            "value": rss,
            "target": f"peak RSS < {RSS_TARGET_MB:g} MB",
            "pass": None if rss is None else rss < RSS_TARGET_MB,
        }
        return out

    def to_json(self) -> dict[str, Any]:
        figures = {
            "runs": [r.to_json() for r in self.runs],
            "checks": self.checks(),
            "child_exit_codes": self.children,
        }
        return results_json("bench.town", self.params, self.machine, figures, self.elapsed_s)


def _cells(r: Run) -> list[str]:
    return [
        r.mode,
        str(r.agents),
        str(r.locations) if r.locations else "-",
        num(r.actors, "d"),
        str(r.ticks),
        num(r.s_per_tick, ".4f") if r.ok else "error",
        num(r.ticks_per_s, ".2f"),
        num(r.max_tick_s, ".3f"),
        num(r.per_tick(r.host_cpu_s), ".4f"),
        num(r.per_tick(r.redis_cpu_s), ".4f"),
        num(r.redis_clients, "d"),
        num(r.missed, "d"),
        num(r.peak_rss_mb, ".1f"),
    ]


COLUMNS = (
    ("mode", -10),
    ("agents", 6),
    ("locs", 5),
    ("actors", 6),
    ("ticks", 5),
    ("s/tick", 8),
    ("ticks/s", 8),
    ("max tick s", 10),
    ("host cpu/tick", 13),
    ("redis cpu/tick", 14),
    ("conns", 5),
    ("missed", 6),
    ("peak RSS MB", 11),
)
"""Table headings and widths (negative: left-aligned)."""


def format_table(report: Report) -> str:
    lines = table(COLUMNS, (_cells(r) for r in report.runs))
    lines.append(
        f"ticks {report.params.warmup}..{report.params.warmup + report.params.ticks - 1} timed after "
        f"{report.params.warmup} warm-up tick(s); cpu/tick: CPU seconds per tick of the process running "
        "the town (all threads) and of redis-server; conns: redis-server's connected clients after "
        "the timed ticks; missed: decisions missed over all ticks run"
    )
    heaps = [r for r in report.runs if r.heap_peak_mb is not None]
    if heaps:
        lines.append(
            "peak Python heap (tracemalloc, separate pass): "
            + ", ".join(f"{r.agents} agents {r.heap_peak_mb:.1f} MB" for r in heaps)
        )
    return "\n".join(lines)


def format_notes(report: Report) -> str:
    """Errors, unusual bus counters and the children's warnings, per run."""
    lines: list[str] = []
    for r in report.runs:
        label = f"{r.mode} {r.agents}"
        if r.error:
            lines.append(f"{label}: ERROR {r.error}")
        unusual = {k: v for k, v in sorted(r.bus_stats.items()) if k not in ROUTINE_STATS and v}
        if unusual:
            lines.append(f"{label}: bus counters {unusual}")
        for event, count in Counter(r.log_counts).most_common(5):
            lines.append(f"{label}: {count}x {event}")
        if len(r.log_counts) > 5:
            lines.append(
                f"{label}: ... and {len(r.log_counts) - 5} more kinds of warning/error (see the JSON)"
            )
    return "\n".join(lines)


def format_checks(report: Report) -> str:
    c = report.checks()
    lines = []
    for mode in MODES:
        chk = c[f"linear_{mode.replace('-', '_')}"]
        lines.append(
            f"{mode + ':':<11} s/tick at {LINEAR_LARGE} agents / s/tick at {LINEAR_SMALL} agents = "
            f"{num(chk['value'], '.2f'):>6}  (target <= {LINEAR_TARGET:g}, "
            f"for x{LINEAR_LARGE // LINEAR_SMALL} agents)  {verdict(chk['pass'])}"
        )
    rss = c["daemon_rss_5_agents"]
    lines.append(
        f"{DAEMON_AGENTS}-agent daemon (clock + world + agents on redis): peak RSS = "
        f"{num(rss['value'], '.1f')} MB  (target < {RSS_TARGET_MB:g} MB)  {verdict(rss['pass'])}"
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------- main


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of agent counts: {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("agent counts must be positive")
    return sizes


def parse_args(argv: list[str] | None) -> Params:
    cli = BenchParser("bench.town", __doc__, quick="small sizes and few ticks for a smoke run")
    cli.sized("--sizes", "agent counts", SIZES, type=_sizes, show=_show_sizes)
    cli.sized("--ticks", "timed ticks per run", TICKS)
    p = cli.parser
    p.add_argument(
        "--warmup", type=int, default=DEFAULT_WARMUP, help="untimed ticks first (default %(default)s)"
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=DEFAULT_MAX_CONNECTIONS,
        help="connections of the hosting child's command pool (default 0: the transport's own)",
    )
    p.add_argument(
        "--max-in-flight", type=int, default=None, help="HostConfig.max_in_flight (default: HostConfig's)"
    )
    p.add_argument(
        "--fetch-count", type=int, default=None, help="HostConfig.fetch_count (default: HostConfig's)"
    )
    p.add_argument("--heap", action="store_true", help="also measure the peak Python heap in process (slow)")
    p.add_argument("--verbose", action="store_true", help="show the children's warnings and errors on stderr")
    a = cli.parse(argv)
    if a.ticks < 1 or a.warmup < 1:
        cli.error("--ticks and --warmup must be at least 1")
    for name in ("max_in_flight", "fetch_count"):
        if getattr(a, name) is not None and getattr(a, name) < 1:
            cli.error(f"--{name.replace('_', '-')} must be positive")
    return params_from(Params, a)


def _show_sizes(sizes: list[int]) -> str:
    return ",".join(map(str, sizes))


def _s_per_tick(run: Run) -> str:
    return f"{run.s_per_tick:.4f} s/tick" if run.s_per_tick is not None else f"error: {run.error}"


def run(params: Params) -> Report:
    started = time.monotonic()
    w, t = params.warmup, params.ticks
    runs: list[Run] = []
    with private_machine(READY_TIMEOUT, STOP_TIMEOUT) as (server, children, machine):
        print(
            f"redis-server {machine['redis_server_version']} on {server.url}; {machine['cpu_count']} CPUs; "
            f"sizes {params.sizes}; {t} timed ticks after {w} warm-up",
            flush=True,
        )
        for n in params.sizes:
            runs.append(
                step(
                    f"in-process {n} agents",
                    functools.partial(bench_in_process, n, params, children),
                    _s_per_tick,
                )
            )
        for n in params.sizes:
            runs.append(
                step(
                    f"redis {n} agents",
                    functools.partial(bench_redis, server, n, params, children),
                    _s_per_tick,
                )
            )
        exit_codes = dict(children.exit_codes)
    return Report(params, machine, runs, exit_codes, time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    return bench_main(argv, parse_args, run, (format_table, format_notes, format_checks))


if __name__ == "__main__":
    sys.exit(main())
