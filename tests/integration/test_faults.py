"""Fault tests: Redis restarted under a running daemon, workers killed with kill -9 during a
benchmark run, and 10,000 fuzzed entries written straight into a running host's inboxes.

Every random choice (kill points, victims, down times, fuzzed bytes) comes from a seeded RNG whose
seed is printed with the figures; each test prints one ``FAULT FIGURES`` JSON line (see them with
``pytest tests/integration/test_faults.py -rP``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from actors.bus import FIELD, Bus
from actors.bus._redis import RedisTransport
from actors.bus.local_server import LocalRedisServer
from actors.town import TICKS_TOPIC, embedded_town
from messages import ErrorReply, Ping, Pong
from messages.town import TickCompleted
from tests.conftest import ROOT, Processes, wait_until
from tests.support.fuzz import REPLY_ADDRESS, FuzzEntry, Fuzzer, count_by
from tests.support.messages import GetTotal, Incr, Total
from tests.support.topics import topic_messages
from world import Town, WorldState, digest

pytestmark = pytest.mark.redis

SEED = int(os.environ.get("AURATOWN_FAULT_SEED", "7"))


def figures(name: str, **values: Any) -> None:
    print(f"FAULT FIGURES {name}: " + json.dumps({"seed": SEED, **values}, sort_keys=True))


def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=5)


# ---------------------------------------------------------------- Redis restarted under a daemon


def _ticks(url: str, namespace: str) -> list[TickCompleted]:
    transport = RedisTransport(url, socket_timeout=5, reconnect_patience=0)
    bus = Bus(transport, namespace)
    try:
        return topic_messages(bus, TICKS_TOPIC, TickCompleted)
    except redis.ConnectionError:
        return []
    finally:
        bus.close()
        transport.close()


@pytest.mark.parametrize("how", ["shutdown", "kill-9"])
def test_redis_restarted_mid_run_loses_and_repeats_no_tick(
    how: str, tmp_path: Path, processes: Processes
) -> None:
    """Redis (AOF) goes away for a while and comes back on the same port and data: the daemon
    reconnects by itself and the town goes on, every tick applied once, in order."""
    rng = random.Random(f"{SEED}-{how}")
    # kill -9 loses what was not yet fsynced: with `appendfsync always` nothing acknowledged is.
    extra = ("--appendfsync", "always") if how == "kill-9" else ()
    server = LocalRedisServer(appendonly=True, data_dir=str(tmp_path / "redis"), extra_args=extra)
    (tmp_path / "redis").mkdir()
    server.start()
    namespace = "fault-town"
    observer = Bus(RedisTransport(server.url), namespace).keys.topic(TICKS_TOPIC)
    raw = _client(server.url)
    # A group that never reads: hosts trim a topic only below what every group has acknowledged,
    # so the whole tick history stays for the check.
    raw.xgroup_create(observer, "fault-observer", id="0", mkstream=True)
    raw.close()
    daemon = processes.start_module(
        "deploy.cli", "daemon", "--redis", server.url, "--namespace", namespace, "--seed", "42",
        "--speed", "5", "--visibility-timeout", "5", stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        before_at = rng.randint(4, 12)
        down_for = round(rng.uniform(0.5, 2.5), 2)
        wait_until(lambda: len(_ticks(server.url, namespace)) >= before_at, timeout=60, what="ticks")
        t_down = time.monotonic()
        if how == "kill-9":
            server.kill()
        else:
            server.stop()  # SIGTERM: redis-server flushes its AOF and exits
        ticks_before = len(_ticks(server.url, namespace))
        assert ticks_before == 0  # nobody answers while it is down
        time.sleep(down_for)  # the outage itself, not a synchronisation
        server = LocalRedisServer(
            appendonly=True, data_dir=str(tmp_path / "redis"), port=server.port, extra_args=extra
        ).start()
        t_up = time.monotonic()
        at_restart = _ticks(server.url, namespace)
        restored = len(at_restart)
        wait_until(
            lambda: len(_ticks(server.url, namespace)) >= restored + 1, timeout=30, what="a tick after"
        )
        first_after = time.monotonic() - t_up
        wait_until(
            lambda: len(_ticks(server.url, namespace)) >= restored + 10, timeout=60, what="ten ticks after"
        )
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=30) == 0
        ticks = _ticks(server.url, namespace)
        transport = RedisTransport(server.url)
        bus = Bus(transport, namespace)
        stored = bus.load_state("world")
        dead = len(bus.dead_letters())
        bus.close()
        transport.close()
    finally:
        server.stop()
    numbers = [t.tick for t in ticks]
    doubled = [n for n, c in Counter(numbers).items() if c > 1]
    assert numbers == list(range(len(numbers))), f"ticks not consecutive and unique: {numbers}"
    assert restored >= before_at  # the AOF brought back every tick announced before the outage
    pure = Town(embedded_town(), seed=42)
    reference = [r.digest for r in pure.step(len(numbers))]
    assert [t.digest for t in ticks] == reference  # each tick is the one the pure town computes
    assert stored is not None
    world = WorldState.model_validate_json(stored)
    assert world.tick in (len(numbers), len(numbers) + 1)  # at most one tick after the last check
    if world.tick == len(numbers):
        assert digest(world) == reference[-1]
    assert dead == 0
    figures(
        f"redis-restart[{how}]",
        ticks_before_outage=restored,
        ticks_total=len(numbers),
        doubled=doubled,
        redis_down_seconds=round(t_up - t_down, 2),
        first_tick_after_restart_seconds=round(first_after, 2),
        dead_letters=dead,
    )


# ---------------------------------------------------------------- workers killed during a benchmark

BENCH = ("bench", "aura", "--suite", "implicit-v2", "--seeds", "42,123,456", "--quiet")
COMPARED = (
    "answer",
    "alerts",
    "tools_called",
    "scores",
    "probes",
    "gap",
    "budget",
    "disclosure",
    "forbidden_violations",
    "gold_tools_hit",
)


def _cells(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Workers:
    """``auratown worker --roles registry,env`` processes serving one namespace."""

    def __init__(self, processes: Processes, url: str, namespace: str) -> None:
        self.processes, self.url, self.namespace = processes, url, namespace
        self.bus = Bus(RedisTransport(url), namespace)

    def start(self) -> subprocess.Popen[bytes]:
        return self.processes.start_module(
            "deploy.cli", "--log-level", "warning", "worker", "--redis", self.url,
            "--namespace", self.namespace, "--roles", "registry,env", "--visibility-timeout", "3",
            stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def live(self) -> dict[int, str]:
        return {
            int(p.info["pid"]): p.process_id
            for p in self.bus.processes()
            if p.alive and "env" in p.info.get("addresses", ())
        }


def test_workers_killed_with_kill_9_mid_benchmark_change_no_answer(
    redis_url: str, namespace: str, tmp_path: Path, processes: Processes
) -> None:
    rng = random.Random(f"{SEED}-kills")
    local = subprocess.run(
        [sys.executable, "-m", "deploy.cli", *BENCH, "--out", str(tmp_path / "local")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert local.returncode == 0, local.stderr
    reference = {c["cell"]: c for c in _cells(tmp_path / "local" / "cells.jsonl")}
    total = len(reference)

    workers = Workers(processes, redis_url, namespace)
    by_pid = {workers.start().pid: None for _ in range(3)}
    wait_until(lambda: len(workers.live()) == 3, timeout=60, what="three workers")
    kill_points = sorted(rng.sample(range(total // 10, total * 9 // 10), 3))
    out = tmp_path / "killed"
    started = time.monotonic()
    bench = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", *BENCH, "--bus", redis_url, "--remote-workers", namespace,
         "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    kills: list[dict[str, Any]] = []
    try:
        for point in kill_points:
            wait_until(
                lambda p=point: len(_cells(out / "cells.jsonl")) >= p or bench.poll() is not None,  # type: ignore[misc]
                timeout=120,
                what=f"{point} cells",
            )
            assert bench.poll() is None, "the run ended before every kill point; nothing was tested"
            live = workers.live()
            victim = rng.choice(sorted(p for p in live if p in by_pid))
            os.kill(victim, signal.SIGKILL)  # mid-cell: each worker holds cells and probe calls
            kills.append({"after_cells": len(_cells(out / "cells.jsonl")), "pid": victim})
            del by_pid[victim]
            by_pid[workers.start().pid] = None  # the operator's replacement
        _, stderr = bench.communicate(timeout=180)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.communicate()
    elapsed = time.monotonic() - started
    assert bench.returncode == 0, stderr[-2000:]
    cells = _cells(out / "cells.jsonl")
    failed = [c for c in cells if not c["ok"]]
    assert not failed, failed[:3]
    assert sorted(c["cell"] for c in cells) == sorted(reference)  # each cell once
    degraded = [c["cell"] for c in cells if any(s.get("status") == "unavailable" for s in c.get("trace", []))]
    differ = [c["cell"] for c in cells if any(c.get(k) != reference[c["cell"]].get(k) for k in COMPARED)]
    assert not differ, f"{len(differ)} cells differ from the undisturbed run ({degraded=}): {differ[:5]}"
    dead = workers.bus.dead_letters()
    workers.bus.close()
    figures(
        "worker-kills",
        cells=total,
        kill_points=kill_points,
        kills=kills,
        identical_to_undisturbed=total - len(differ),
        failed_cells=len(failed),
        dead_letters=len(dead),
        seconds=round(elapsed, 1),
    )


# ---------------------------------------------------------------- fuzzed envelopes

FUZZED = 10_000


@pytest.fixture
def hosts(
    redis_url: str, namespace: str, processes: Processes, tmp_path: Path
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """An echo and a counter host; their logs (a warning per dead letter) go to files, since an
    unread pipe would fill up and block them."""
    procs = {}
    for role in ("echo", "counter"):
        with (tmp_path / f"{role}.log").open("wb") as log:
            procs[role] = processes.start_module(
                "tests.support.worker", redis_url, namespace, role, stderr=log.fileno()
            )
    yield procs


def test_ten_thousand_fuzzed_entries_are_dead_lettered_and_nothing_else_is_affected(
    redis_url: str, namespace: str, hosts: dict[str, subprocess.Popen[bytes]]
) -> None:
    rng = random.Random(f"{SEED}-fuzz")
    transport = RedisTransport(redis_url)
    bus = Bus(transport, namespace)
    wait_until(
        lambda: (
            {a for p in bus.processes() if p.alive for a in p.info.get("addresses", ())}
            >= {"echo", "counter"}
        ),
        what="the echo and counter hosts",
    )
    pids = {p.process_id for p in bus.processes() if p.alive}
    templates = [bus.envelope("echo", Ping(seq=1, body="t")), bus.envelope("counter", Incr(n=1))]
    bad = [{"seq": "not-a-number"}, {"n": "lots"}]
    inboxes = [bus.keys.inbox("echo"), bus.keys.inbox("counter")]
    fuzzed = Fuzzer(rng, templates, bad).entries(FUZZED)
    raw = _client(redis_url)
    started = time.monotonic()
    expected: dict[tuple[str, str], FuzzEntry] = {}  # (stream, entry id) -> what was written
    asks, incr_total, incr_ids = 0, 0, []
    chunk = 250
    for start in range(0, len(fuzzed), chunk):
        pipe = raw.pipeline(transaction=False)
        batch = fuzzed[start : start + chunk]
        for t, entry in batch:
            pipe.xadd(inboxes[t], entry.fields)  # type: ignore[arg-type]
        for (t, entry), entry_id in zip(batch, pipe.execute(), strict=True):
            expected[inboxes[t], entry_id.decode()] = entry
        # valid traffic interleaved with the garbage: answered, applied, as if nothing happened
        body = "y" * rng.choice([0, 10, 100_000])  # no size limit on a well-formed message
        assert bus.ask("echo", Ping(seq=start, body=body), timeout=30) == Pong(
            seq=start, body=body, responder=_responder(bus)
        )
        asks += 1
        n = rng.randint(1, 9)
        incr_ids.append(bus.tell("counter", Incr(n=n)).id)
        incr_total += n
    wait_until(lambda: len(bus.dead_letters()) >= FUZZED, timeout=120, what=f"{FUZZED} dead letters")
    dead_letters = bus.dead_letters()
    elapsed = time.monotonic() - started
    total = bus.ask("counter", GetTotal(), timeout=30)
    assert isinstance(total, Total)
    assert (total.total, total.applied) == (incr_total, incr_ids)  # every valid Incr once, in order
    assert len(dead_letters) == FUZZED  # and nothing valid was dead-lettered
    seen = {(d.source_stream, d.source_entry_id): d for d in dead_letters}
    assert set(seen) == set(expected)  # every fuzzed entry, each once
    wrong = [(e.kind, e.reason, seen[i].reason) for i, e in expected.items() if seen[i].reason != e.reason]
    assert not wrong, wrong[:5]
    assert all(d.detail for d in dead_letters)
    # Each keeps the original bytes (the first 16 KiB of a longer entry), their size and digest.
    for d in dead_letters:
        original = expected[d.source_stream, d.source_entry_id].fields.get(FIELD, b"")
        assert d.size == len(original) and original.startswith(d.data)
        assert d.data == original[: len(d.data)] and (d.truncated or d.data == original)
        assert d.verified
    # Asks among them were answered at once with an ErrorReply carrying the reason.
    wanted = [e for e in expected.values() if e.wants_error_reply]
    decoded = [bus.decode_entry(e) for e in transport.range(bus.keys.inbox(REPLY_ADDRESS))]
    replies = [r.payload for r in decoded if r is not None and isinstance(r.payload, ErrorReply)]
    assert len(replies) == len(decoded) == len(wanted)
    assert Counter(r.reason for r in replies) == Counter(e.reason for e in wanted)
    for inbox in inboxes:
        assert transport.pending(inbox, "inbox") == []
    assert all(p.poll() is None for p in hosts.values())  # no host crashed ...
    assert {p.process_id for p in bus.processes() if p.alive} >= pids  # ... or was restarted
    keys = {k.decode() for k in raw.scan_iter(match=f"*{{{namespace}}}*")}
    states = sorted(k for k in keys if ":state:" in k)
    assert states == [bus.keys.state("counter")], states  # no actor state but the counter's
    raw.delete(*keys)  # some 40 MB of dead letters: not for the rest of the session's server
    raw.close()
    bus.close()
    transport.close()
    figures(
        "fuzz",
        fuzzed=FUZZED,
        by_kind=count_by([e for _, e in fuzzed], "kind"),
        dead_lettered_by_reason=dict(sorted(Counter(d.reason for d in dead_letters).items())),
        error_replies=len(replies),
        valid_asks_answered=asks,
        valid_incr_applied=len(incr_ids),
        seconds=round(elapsed, 1),
    )


def _responder(bus: Bus) -> str:
    return next(p.process_id for p in bus.processes() if p.alive and "echo" in p.info.get("addresses", ()))
