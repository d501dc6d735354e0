"""Supervision: a dead actor is restarted; one that keeps dying within the window is given up."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.bus import Bus
from actors.runtime import Host, HostConfig
from actors.runtime._supervision import Supervision
from tests.conftest import wait_until
from tests.support.actors import FlakyActor
from tests.support.messages import Flaky
from tests.unit.host.conftest import FakeClock

CONFIG = HostConfig(restart_limit=2, restart_window=60.0)


@pytest.fixture
def host(bus: Bus) -> Iterator[Host]:
    """A host not started: these tests call the supervisor's hooks themselves. The actor is pooled,
    so the one a restart replaces (alive: nothing killed it) holds no thread of its own."""
    h = Host(bus, CONFIG)
    h.spawn(FlakyActor, "flaky", pooled=True)
    yield h
    h.stop()


def die(host: Host, supervision: Supervision) -> None:
    supervision.after_actor_died(host, "flaky", SystemExit("crash"))
    supervision.maintain(host)


def test_a_dead_actor_is_restarted_on_the_maintenance_round(bus: Bus, host: Host, clock: FakeClock) -> None:
    supervision = Supervision(clock=clock)
    supervision.after_actor_died(host, "flaky", SystemExit("crash"))
    assert bus.stats["restarts"] == 0  # not from the dying actor's thread
    supervision.maintain(host)
    assert (bus.stats["restarts"], supervision.restarts("flaky")) == (1, 1)
    assert host.alive("flaky")


def test_an_actor_that_keeps_dying_within_the_window_is_given_up(
    bus: Bus, host: Host, clock: FakeClock
) -> None:
    supervision = Supervision(clock=clock)
    for _ in range(CONFIG.restart_limit + 1):
        die(host, supervision)
    assert (bus.stats["restarts"], bus.stats["gave_up"]) == (CONFIG.restart_limit, 1)
    assert bus.keys.inbox("flaky") not in {s.stream for s in host.subscriptions()}


def test_restarts_older_than_the_window_no_longer_count(bus: Bus, host: Host, clock: FakeClock) -> None:
    supervision = Supervision(clock=clock)
    for _ in range(CONFIG.restart_limit):
        die(host, supervision)
    clock.now += CONFIG.restart_window + 1
    die(host, supervision)
    assert (bus.stats["restarts"], bus.stats["gave_up"]) == (CONFIG.restart_limit + 1, 0)
    assert supervision.restarts("flaky") == 1


def test_a_restarted_actor_gets_the_message_its_predecessor_died_on(bus: Bus) -> None:
    with Host(bus, HostConfig(block_ms=20, retry_backoff=0.001)) as host:
        host.spawn(FlakyActor, "flaky")
        bus.tell("flaky", Flaky(key="crash-once", fail_times=1, crash=True))
        wait_until(lambda: FlakyActor.attempts["crash-once"] == 2, what="the attempt after the restart")
        assert bus.stats["restarts"] == 1
        assert wait_until(lambda: host.alive("flaky"), what="the restarted actor")
