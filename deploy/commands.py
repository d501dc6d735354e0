"""What the runtime's ``auratown`` commands do (``selfcheck``, ``schema``, ``ping``, ``processes``; their
options: ``deploy.cli``), and what every command shares: ``UserError`` and ``open_bus``."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from actors.bus import Bus
    from actors.settings import Settings


class UserError(Exception):
    """Bad input or an unreachable service: printed as one line, exit status 2."""


@contextmanager
def open_bus(url: str | None, namespace: str, settings: Settings | None = None) -> Iterator[Bus]:
    """The bus at ``url`` (None: in process), its Redis checked; its dead letters kept as
    ``settings`` say (None: read them now)."""
    from actors.bus import Bus, DeadLetterPolicy, InvalidNameError, open_transport
    from actors.bus._url import TransportURLError

    try:
        transport = open_transport(url)
        bus = Bus(transport, namespace, dead_letter_policy=DeadLetterPolicy.from_settings(settings))
    except (TransportURLError, InvalidNameError) as exc:
        raise UserError(str(exc)) from None
    except ValueError as exc:  # redis-py's URL parser
        raise UserError(f"bad Redis URL {url!r}: {exc}") from None
    ping = getattr(transport, "ping", None)
    if ping is not None:
        import redis

        try:
            ping()
        except redis.AuthenticationError as exc:
            raise UserError(f"Redis at {transport.url} refused the credentials: {exc}") from None
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            raise UserError(f"cannot reach Redis at {transport.url}: {exc}") from None
        from actors.bus._redis import RedisTransport
        from actors.bus.redis_version import UnsupportedRedisError, check_server

        try:  # a server older than we support: one line now, not a syntax error later
            if isinstance(transport, RedisTransport):
                check_server(transport.client, transport.url)
        except UnsupportedRedisError as exc:
            raise UserError(str(exc)) from None
    try:
        yield bus
    finally:
        bus.close()
        transport.close()


def run(args: argparse.Namespace) -> int:
    from actors.roles import EchoActor
    from actors.runtime import Host
    from messages import Ping

    with open_bus(args.redis, args.namespace, args.settings) as bus:
        host = Host(bus, name="auratown-run")
        host.spawn(EchoActor, "echo")
        host.start()
        try:
            latencies = []
            for i in range(args.asks):
                t0 = time.perf_counter()
                bus.ask("echo", Ping(seq=i, body="run"), timeout=10)
                latencies.append((time.perf_counter() - t0) * 1e6)
            bus.publish("auratown.run", Ping(seq=args.asks, body="topic"))
            summary: dict[str, Any] = {
                "bus": bus.transport.url,
                "namespace": bus.namespace,
                "process_id": bus.process_id,
                "asks": args.asks,
                "ask_p50_us": round(statistics.median(latencies), 1),
                "ask_max_us": round(max(latencies), 1),
                "dead_letters": len(bus.dead_letters()),
                "processes_present": sum(p.alive for p in bus.processes()),
            }
            if args.serve:
                print(
                    f"serving 'echo' on {summary['bus']} namespace {bus.namespace}; Ctrl-C to stop",
                    flush=True,
                )
                host.run_until_signal()
        finally:
            host.stop()
        summary["stats"] = dict(sorted(bus.stats.items()))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"AURA Town runtime on {summary['bus']} (namespace {summary['namespace']})")
        p50, top = summary["ask_p50_us"], summary["ask_max_us"]
        print(f"  {summary['asks']} asks to 'echo': p50 {p50:.0f} us, max {top:.0f} us")
        print(f"  dead letters: {summary['dead_letters']}; processes present: {summary['processes_present']}")
        print("  bus counters: " + ", ".join(f"{k}={v}" for k, v in summary["stats"].items()))
    return 0


def schema(args: argparse.Namespace) -> int:
    from messages import json_schemas

    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create {out}: {exc.strerror}") from None
    schemas = json_schemas()
    for name, schema_doc in schemas.items():
        (out / name).write_text(json.dumps(schema_doc, indent=2, sort_keys=True) + "\n")
    print(f"wrote {len(schemas)} schemas to {out}")
    return 0


def ping(args: argparse.Namespace) -> int:
    from actors.bus import AskTimeoutError, RemoteError
    from messages import Ping, Pong

    failures = 0
    with open_bus(args.redis, args.namespace, args.settings) as bus:
        for i in range(args.count):
            t0 = time.perf_counter()
            try:
                reply = bus.ask(args.address, Ping(seq=i, body="auratown ping"), timeout=args.timeout)
            except (AskTimeoutError, RemoteError) as exc:
                failures += 1
                print(f"seq={i} {exc}")
                continue
            ms = (time.perf_counter() - t0) * 1000
            responder = reply.responder if isinstance(reply, Pong) else type(reply).__name__
            print(f"seq={i} reply from {responder} in {ms:.2f} ms")
    return 1 if failures else 0


def processes(args: argparse.Namespace) -> int:
    with open_bus(args.redis, args.namespace, args.settings) as bus:
        procs = bus.processes()
    if not procs:
        print(f"no process present on namespace {args.namespace}")
        return 0
    for p in procs:
        state = "alive" if p.alive else "dead"
        addresses = ",".join(p.info.get("addresses", []))
        print(f"{p.process_id}\t{state}\t{p.info.get('name', '')}\t{addresses}")
    return 0
