"""Fault tests of a running town (issue 13): its daemon killed with kill -9 again and again and
restarted, Redis restarted from an AOF whose tail is cut (an OS crash under ``appendfsync
everysec``), and Redis outages longer than the agents' decision timeout.

What must hold: a restarted daemon takes over its predecessor's tick at once (not after the 30 s
visibility timeout); the clock and the world reconcile after lost writes, with the repair recorded,
and keep ticking; no agent memory is ahead of the world; and the town's history is the one an
undisturbed run has: every tick applied once (the pure town's digests), no agent marked "missed",
every agent's stored memory equal to the pure town's.

Random choices come from a seeded RNG (``AURATOWN_FAULT_SEED``); each test prints one
``FAULT FIGURES`` line (``pytest tests/integration/test_town_faults.py -rP``).
``AURATOWN_FAULT_KILLS`` / ``AURATOWN_FAULT_AOF_RUNS`` raise the number of kills and AOF runs
for a campaign, ``AURATOWN_FAULT_OUTAGE_S`` sets the length of each outage.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from actors.bus import Bus
from actors.bus._redis import RedisTransport
from actors.bus._transport import StreamEntry
from actors.bus.local_server import LocalRedisServer
from actors.town import TICKS_TOPIC, TownClient, embedded_town
from messages.town import TickCompleted
from tests.conftest import Processes, wait_until
from tests.support.topics import topic_messages
from world import AgentMindState, Town, WorldState, digest

pytestmark = pytest.mark.redis

SEED = int(os.environ.get("AURATOWN_FAULT_SEED", "7"))
KILLS = int(os.environ.get("AURATOWN_FAULT_KILLS", "5"))
AOF_RUNS = int(os.environ.get("AURATOWN_FAULT_AOF_RUNS", "2"))
OUTAGE_S = float(os.environ.get("AURATOWN_FAULT_OUTAGE_S", "0"))
"""Seconds of each Redis outage (0: 2.5 to 4 decision timeouts); past the transport's reconnect
patience (30 s) commands fail instead of waiting."""
TOWN_SEED = 42


def figures(name: str, **values: Any) -> None:
    print(f"FAULT FIGURES {name}: " + json.dumps({"seed": SEED, **values}, sort_keys=True))


class TownUnderTest:
    """One namespace's daemon, observed through Redis (a client bus and a raw connection)."""

    def __init__(self, processes: Processes, url: str, namespace: str, *daemon_args: str) -> None:
        self.processes, self.url, self.namespace = processes, url, namespace
        self.daemon_args = daemon_args
        self.transport = RedisTransport(url, socket_timeout=5)
        self.bus = Bus(self.transport, namespace)
        self.client = TownClient(self.bus, timeout=30)
        self.topic = self.bus.keys.topic(TICKS_TOPIC)
        raw = redis.Redis.from_url(url, socket_timeout=5)
        # A group that never reads: hosts trim a topic only below what every group acknowledged,
        # so the whole history of announcements stays for the checks.
        raw.xgroup_create(self.topic, "fault-observer", id="0", mkstream=True)
        raw.close()

    def start(self) -> subprocess.Popen[bytes]:
        return self.processes.start_module(
            "deploy.cli", "--log-level", "warning", "daemon", "--redis", self.url,
            "--namespace", self.namespace, "--paused", "--seed", str(TOWN_SEED), *self.daemon_args,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def last_announced(self) -> int:
        """The highest tick announced on ``town.ticks`` (-1: none yet, or Redis away)."""
        try:
            rows: Any = self.transport.client.xrevrange(self.topic, count=1)
        except redis.RedisError:
            return -1
        for entry_id, fields in rows:
            entry = StreamEntry(self.topic, entry_id.decode(), {k.decode(): v for k, v in fields.items()})
            env = self.bus.decode_entry(entry)
            if env is not None and isinstance(env.payload, TickCompleted):
                return env.payload.tick
        return -1

    def wait_announced(self, tick: int, what: str, timeout: float = 60) -> None:
        wait_until(lambda: self.last_announced() >= tick, timeout=timeout, what=what)

    def run(self, ticks_per_second: float) -> None:
        self.client.set_speed(ticks_per_second)
        self.client.resume()

    def finish(self) -> int:
        """Pause the clock and wait for the tick in flight: the number of ticks run."""
        self.client.pause()
        wait_until(lambda: self.client.status().awaiting is None, timeout=60, what="the last tick")
        completed = self.client.status().completed
        self.wait_announced(completed, "the last announcement")
        return completed + 1

    def answers(self) -> bool:
        try:
            TownClient(self.bus, timeout=2).status()
        except Exception:
            return False
        return True

    def announced(self) -> list[TickCompleted]:
        return topic_messages(self.bus, TICKS_TOPIC, TickCompleted)

    def stored(self, address: str) -> bytes | None:
        return self.bus.load_state(address)

    def close(self) -> None:
        self.bus.close()
        self.transport.close()


def check_history(town: TownUnderTest, ticks: int) -> dict[str, Any]:
    """The town's history against the pure town's: every tick once with its digest, none missed,
    the world and every agent's stored state equal to the undisturbed run's."""
    pure = Town(embedded_town(), seed=TOWN_SEED)
    reference = [r.digest for r in pure.step(ticks)]
    announced = town.announced()
    by_tick: dict[int, TickCompleted] = {}
    for t in announced:
        assert by_tick.setdefault(t.tick, t).digest == t.digest, f"tick {t.tick} announced with two digests"
    assert sorted(by_tick) == list(range(ticks)), f"announced ticks: {sorted(by_tick)}"
    wrong = [t for t, c in by_tick.items() if c.digest != reference[t]]
    assert not wrong, f"ticks whose world differs from the undisturbed one: {wrong}"
    missed = {t: c.missed for t, c in by_tick.items() if c.missed}
    assert not missed, f"agents marked missed: {missed}"
    raw_world = town.stored("world")
    assert raw_world is not None
    world = WorldState.model_validate_json(raw_world)
    assert world.tick == ticks and digest(world) == reference[-1]  # each tick applied exactly once
    ahead, differ = [], []
    for slug, expected in pure.mind_states.items():
        raw = town.stored(f"agent.{slug}")
        assert raw is not None, slug
        mind = AgentMindState.model_validate_json(raw)
        latest = max(i.minute for i in expected.memory.items)  # the world's last tick's minute
        if mind.last_tick >= world.tick or any(i.minute > latest for i in mind.memory.items):
            ahead.append(slug)
        if mind != expected:
            differ.append(slug)
    assert not ahead, f"agents whose memory is ahead of the world: {ahead}"
    assert not differ, f"agents whose memory differs from the undisturbed run: {differ}"
    assert town.bus.dead_letters() == []
    return {"announcements": len(announced), "duplicate_announcements": len(announced) - len(by_tick)}


# ---------------------------------------------------------------- kill -9 of the daemon


def test_daemon_killed_with_kill_9_again_and_again_takes_over_at_once(
    redis_url: str, namespace: str, processes: Processes
) -> None:
    """Several kill -9 at random moments of a stepping town, each followed by a restart: the new
    daemon takes over its predecessor's pending tick at once (visibility timeout: 30 s), and every
    tick is applied exactly once."""
    rng = random.Random(f"{SEED}-daemon-kills")
    flags = ("--visibility-timeout", "30", "--decision-timeout", "5")
    town = TownUnderTest(processes, redis_url, namespace, *flags)
    kills: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        daemon = town.start()
        wait_until(town.answers, timeout=60, what="the daemon to answer")
        town.run(0)  # as fast as the world goes: a kill finds a tick in flight
        for _ in range(KILLS):
            town.wait_announced(town.last_announced() + rng.randint(2, 6), "progress")
            time.sleep(rng.uniform(0.0, 0.4))  # a random moment within a tick, not a synchronisation
            daemon.send_signal(signal.SIGKILL)
            daemon.wait(timeout=10)
            at_kill = town.last_announced()
            restarted = time.monotonic()
            daemon = town.start()
            town.wait_announced(at_kill + 1, "a tick after the restart")
            kills.append({"after_tick": at_kill, "recovery_s": round(time.monotonic() - restarted, 2)})
        ticks = town.finish()
        elapsed = time.monotonic() - started
        history = check_history(town, ticks)
    finally:
        town.close()
    recovery = [k["recovery_s"] for k in kills]
    # A restart costs the interpreter's start and the daemon's set-up; the 30 s timeout is not waited.
    assert max(recovery) < 10, kills
    figures(
        "daemon-kills",
        kills=len(kills),
        ticks=ticks,
        max_recovery_seconds=max(recovery),
        recovery_seconds=recovery,
        visibility_timeout_seconds=30,
        seconds=round(elapsed, 1),
        **history,
    )


# ---------------------------------------------------------------- Redis loses its AOF tail


def _aof_incr(data_dir: Path) -> Path:
    """The AOF file Redis appends to (Redis 7: appendonlydir/*.incr.aof; older: appendonly.aof)."""
    incr = sorted((data_dir / "appendonlydir").glob("*.incr.aof"))
    return incr[-1] if incr else data_dir / "appendonly.aof"


EVERYSEC = ("--appendfsync", "everysec")


def _aof_tail_lost(
    rng: random.Random, data: Path, processes: Processes, name: str, speed: float
) -> dict[str, Any]:
    server = LocalRedisServer(appendonly=True, data_dir=str(data), extra_args=EVERYSEC).start()
    town = TownUnderTest(processes, server.url, name, "--decision-timeout", "5")
    try:
        daemon = town.start()
        wait_until(town.answers, timeout=60, what="the daemon to answer")
        town.run(speed)  # at 5 ticks/s the last second or two of writes hold a few ticks
        town.wait_announced(rng.randint(5, 15), "ticks before the cut")
        aof = _aof_incr(data)
        kept_bytes, kept_tick = aof.stat().st_size, town.last_announced()
        lose = rng.randint(3, 8)
        town.wait_announced(kept_tick + lose, "ticks to lose")
        server.kill()
        size = aof.stat().st_size
        with aof.open("r+b") as f:
            f.truncate(kept_bytes)  # the tail an OS crash would not have fsynced
        server = LocalRedisServer(
            appendonly=True, data_dir=str(data), port=server.port, extra_args=EVERYSEC
        ).start()
        t_up = time.monotonic()
        restored = town.last_announced()
        assert restored < kept_tick + lose, "the cut lost no tick; nothing was tested"
        town.wait_announced(restored + 1, "a tick after the restart")
        first_after = time.monotonic() - t_up
        town.wait_announced(kept_tick + lose + 5, "ticks past the lost ones")
        ticks = town.finish()
        clock = json.loads(town.stored("clock") or b"{}")
        assert clock["repairs"] >= 1 and clock["repair_log"], clock  # the repair is on record
        history = check_history(town, ticks)
        assert daemon.poll() is None  # the daemon lived through it
    finally:
        town.close()
        server.stop()
    return {
        "ticks_per_second": speed or "max",
        "announced_before_kill": kept_tick + lose,
        "aof_bytes_cut": size - kept_bytes,
        "last_announced_after_restore": restored,
        "first_tick_after_restart_seconds": round(first_after, 2),
        "repairs": clock["repairs"],
        "repair": clock["repair_log"][0],
        **history,
    }


def test_redis_losing_its_aof_tail_is_reconciled_and_the_town_keeps_ticking(
    tmp_path: Path, processes: Processes
) -> None:
    """Redis is killed and restarted from an AOF cut back a few ticks (what an OS crash under the
    shipped ``appendfsync everysec`` loses) while the daemon keeps running with its actors' state
    ahead of what Redis now holds. The clock finds its stored state lost, the world goes back to
    what Redis holds, the agents roll back with it; the repair is recorded, the town keeps ticking,
    and its history is the undisturbed one."""
    rng = random.Random(f"{SEED}-aof")
    runs = []
    for run in range(AOF_RUNS):
        (tmp_path / f"redis-{run}").mkdir()
        # At 5 ticks/s the cut mostly finds the clock between ticks; as fast as the world goes, a
        # tick in flight, agents deciding.
        speed = (5.0, 0.0)[run % 2]
        runs.append(_aof_tail_lost(rng, tmp_path / f"redis-{run}", processes, f"aof-{run}", speed))
    figures("aof-tail-lost", runs=len(runs), reconciled=len(runs), details=runs)


# ---------------------------------------------------------------- Redis outages longer than the timeouts


def test_redis_outages_longer_than_the_decision_timeout_change_no_history(
    tmp_path: Path, processes: Processes
) -> None:
    """Redis paused (SIGSTOP) or killed and restarted (``appendfsync always``: nothing lost) for
    several times the agents' decision timeout and the daemon's visibility timeout, while ticks
    run: no agent is marked missed, none loses an observation, the history is the undisturbed one."""
    rng = random.Random(f"{SEED}-outages")
    (tmp_path / "redis").mkdir()
    args = ("--appendfsync", "always")
    server = LocalRedisServer(appendonly=True, data_dir=str(tmp_path / "redis"), extra_args=args).start()
    decision_timeout, visibility = 1.0, 2.0
    town = TownUnderTest(
        processes, server.url, "outages", "--decision-timeout", str(decision_timeout),
        "--visibility-timeout", str(visibility),
    )  # fmt: skip
    outages: list[dict[str, Any]] = []
    try:
        daemon = town.start()
        wait_until(town.answers, timeout=60, what="the daemon to answer")
        town.run(0)  # as fast as the world goes: an outage finds agents deciding
        for how in ("pause", "kill", "pause"):
            town.wait_announced(town.last_announced() + rng.randint(2, 5), "ticks before the outage")
            time.sleep(rng.uniform(0.0, 0.3))  # a random moment within a tick
            down_for = OUTAGE_S or round(rng.uniform(2.5, 4.0) * decision_timeout, 2)
            assert server.process is not None
            t0 = time.monotonic()
            if how == "pause":
                os.kill(server.process.pid, signal.SIGSTOP)
                time.sleep(down_for)  # the outage itself, not a synchronisation
                os.kill(server.process.pid, signal.SIGCONT)
            else:
                server.kill()
                time.sleep(down_for)
                server = LocalRedisServer(
                    appendonly=True, data_dir=str(tmp_path / "redis"), port=server.port, extra_args=args
                ).start()
            outages.append({"how": how, "down_seconds": round(time.monotonic() - t0, 2)})
        town.wait_announced(town.last_announced() + 3, "ticks after the outages")
        ticks = town.finish()
        history = check_history(town, ticks)
        assert daemon.poll() is None
    finally:
        town.close()
        server.stop()
    assert min(o["down_seconds"] for o in outages) > max(decision_timeout, visibility)
    figures(
        "redis-outages",
        outages=outages,
        decision_timeout_seconds=decision_timeout,
        visibility_timeout_seconds=visibility,
        ticks=ticks,
        missed=0,
        history_equal_to_undisturbed=True,
        **history,
    )
