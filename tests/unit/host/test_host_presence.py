"""Presence: a host announces itself, and takes the work of dead or silent consumers."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator

import pytest

from actors.bus import Bus, MemoryTransport
from actors.runtime import Host, HostConfig
from actors.runtime._presence import Presence, pid_gone
from tests.conftest import wait_until
from tests.support.actors import FlakyActor
from tests.support.messages import Flaky
from tests.unit.host.conftest import FakeClock


@pytest.fixture
def transport(clock: FakeClock) -> MemoryTransport:
    """Its clock measures how long entries were idle, and expires presence."""
    return MemoryTransport(clock=clock)


@pytest.fixture
def other(bus: Bus) -> Iterator[Bus]:
    """Another process's bus on the same transport: a consumer that reads and never acknowledges."""
    b = Bus(bus.transport, bus.namespace)
    yield b
    b.close()


def left_pending(bus: Bus, other: Bus, key: str) -> None:
    """``other`` reads a message for ``flaky`` and leaves it pending."""
    bus.tell("flaky", Flaky(key=key))
    (delivery,) = other.fetch([other.subscribe_inbox("flaky")], count=10, block_ms=None)
    assert delivery.envelope is not None and delivery.envelope.payload == Flaky(key=key)


def announced(bus: Bus, host: Host) -> dict[str, object]:
    (me,) = [p for p in bus.processes() if p.process_id == bus.process_id]
    return me.info


def test_a_running_host_announces_itself_and_each_new_address_at_once(bus: Bus) -> None:
    host = Host(bus, HostConfig(block_ms=20), name="announcer")
    host.spawn(FlakyActor, "flaky")
    with host:
        info = announced(bus, host)
        assert (info["name"], info["host"], info["pid"]) == ("announcer", socket.gethostname(), os.getpid())
        assert info["addresses"] == ["flaky"]
        host.spawn(FlakyActor, "late")
        assert announced(bus, host)["addresses"] == ["flaky", "late"]
    assert [p.process_id for p in bus.processes()] == []


def test_a_dead_predecessors_pending_entries_are_taken_over_at_once(bus: Bus, other: Bus) -> None:
    # this very pid under another process id: an earlier incarnation of this process
    other.heartbeat({"host": socket.gethostname(), "pid": os.getpid(), "addresses": ["flaky"]}, ttl_ms=60_000)
    left_pending(bus, other, "orphan")
    host = Host(bus, HostConfig(visibility_timeout=3600))
    host.spawn(FlakyActor, "flaky")
    try:
        Presence().take_over(host)
        wait_until(lambda: FlakyActor.attempts["orphan"] == 1, what="the taken-over message handled")
    finally:
        host.stop()
    assert bus.stats["taken_over"] == 1
    assert other.process_id not in {p.process_id for p in bus.processes()}  # forgotten


def test_a_live_consumers_entries_are_reclaimed_only_after_the_visibility_timeout(
    bus: Bus, other: Bus, clock: FakeClock
) -> None:
    other.heartbeat({"host": "elsewhere", "pid": 1, "addresses": ["flaky"]}, ttl_ms=60_000)
    left_pending(bus, other, "slow-worker")
    host = Host(bus, HostConfig(visibility_timeout=5))
    host.spawn(FlakyActor, "flaky")
    presence = Presence()
    try:
        presence.take_over(host)
        presence.reclaim(host)
        assert host.in_flight() == 0
        clock.now += 6
        presence.reclaim(host)
        wait_until(lambda: FlakyActor.attempts["slow-worker"] == 1, what="the reclaimed message handled")
    finally:
        host.stop()
    assert (bus.stats["reclaimed"], bus.stats["taken_over"]) == (1, 0)


def test_a_pid_is_gone_once_its_process_ended() -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    assert pid_gone(child.pid)
    assert not pid_gone(os.getpid())
    assert not pid_gone("not a pid")
    assert not pid_gone(0)
