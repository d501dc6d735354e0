"""Trimming: acknowledged entries leave the streams a host reads, once per period."""

from __future__ import annotations

from actors.bus import Bus
from actors.runtime import Actor, Host, HostConfig
from actors.runtime._trimming import Trimming
from messages import Ping


def acknowledged_then_pending(bus: Bus) -> str:
    """Three entries in ``idle``'s inbox, the first two acknowledged; returns the pending one's id."""
    for seq in range(3):
        bus.tell("idle", Ping(seq=seq))
    deliveries = bus.fetch([bus.subscribe_inbox("idle")], count=10, block_ms=None)
    for d in deliveries[:2]:
        bus.complete(d)
    return deliveries[2].entry_id


def trim_once(bus: Bus, config: HostConfig) -> list[str]:
    """One maintenance round of a host reading ``idle``'s inbox; returns the entry ids left."""
    host = Host(bus, config)
    host.spawn(Actor, "idle")
    trimming = Trimming()
    trimming.before_host_boot(host)
    try:
        trimming.maintain(host)
    finally:
        host.stop()
    return [e.entry_id for e in bus.transport.range(bus.keys.inbox("idle"))]


def test_acknowledged_entries_are_trimmed_once_the_period_is_up(bus: Bus) -> None:
    pending = acknowledged_then_pending(bus)
    assert trim_once(bus, HostConfig(trim_every=0.0)) == [pending]


def test_nothing_is_trimmed_before_the_period_is_up(bus: Bus) -> None:
    acknowledged_then_pending(bus)
    assert len(trim_once(bus, HostConfig(trim_every=3600))) == 3
