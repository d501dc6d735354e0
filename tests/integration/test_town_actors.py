"""The town's actors on the bus (memory and a real Redis): the same town as the pure simulation,
late agents, injected events, clock controls, export and import."""

from __future__ import annotations

import pytest

from actors.bus import Bus, MemoryTransport
from actors.bus._transport import Fields
from actors.runtime import Host, HostConfig
from actors.town import (
    TICKS_TOPIC,
    ClockState,
    StepTimeoutError,
    TownClient,
    TownConfig,
    TownRequestError,
    embedded_town,
    ensure_config,
    import_snapshot,
    spawn_town,
)
from messages.town import InjectEvent, TickCompleted, TownEvent
from tests.conftest import wait_until
from tests.support.topics import topic_messages
from tests.support.town import running_town
from world import Town


def completions(bus: Bus) -> list[TickCompleted]:
    return topic_messages(bus, TICKS_TOPIC, TickCompleted)


def test_the_actor_town_is_the_pure_town_tick_for_tick(bus: Bus) -> None:
    reference = [r.digest for r in Town(embedded_town(), seed=42).step(35)]
    with running_town(bus) as client:
        status = client.step(35, wait=120)
        assert status.target == 34
        view = client.state(private=True)
    assert view.tick == 35 and view.digest == reference[-1]
    done = completions(bus)
    assert [c.tick for c in done] == list(range(35))  # every tick once, in order
    assert [c.digest for c in done] == reference
    assert all(c.missed == () for c in done)


def test_an_agent_that_misses_the_deadline_keeps_its_schedule_and_the_tick_completes(bus: Bus) -> None:
    present = ["zhang-hao", "chen-mei", "liu-yang", "wang-jun"]  # Lin Wei's actor is not running
    with running_town(bus, agents=present, decision_timeout=0.3) as client:
        client.step(3, wait=60)
        view = client.state(private=True)
    done = completions(bus)
    assert [c.tick for c in done] == [0, 1, 2]
    assert all(c.missed == ("lin-wei",) for c in done)
    # Her scheduled action is what the schedule mind would have chosen: the pure town's, apart
    # from the count of missed decisions.
    pure = Town(embedded_town(), seed=42)
    pure.step(3)
    assert [a.model_dump() for a in view.agents] == [
        a.model_dump() for a in pure.view(include_private=True).agents
    ]
    assert view.digest != pure.digest()


def test_an_injected_event_reaches_the_log_and_stresses_through_the_rule(bus: Bus) -> None:
    with running_town(bus) as client:
        client.step(20, wait=60)  # 15:30: Zhang Hao translates at the library, Wang Jun beside him
        before = client.state("Zhang Hao", private=True).agents[0]
        assert before.location == "Town Library" and before.private is not None
        accepted = client.inject(
            InjectEvent(kind="argument", description="a loud quarrel over a fine", location="Town Library")
        )
        assert "zhang-hao" in accepted.witnesses
        client.step(1, wait=60)
        after = client.state("zhang-hao", private=True, events=5)
        with pytest.raises(TownRequestError, match="no location named 'Atlantis'"):
            client.inject(InjectEvent(kind="argument", description="x", location="Atlantis"))
        with pytest.raises(TownRequestError, match="no agent named 'Nobody'"):
            client.state("Nobody")
    zhang = after.agents[0].private
    assert zhang is not None
    assert (zhang.rule, zhang.emotional_state) == ("recent_stress", "stressed")
    assert any(e.id == accepted.event.id for e in after.events)


def test_clock_pause_speed_step_and_resume(bus: Bus) -> None:
    with running_town(bus) as client:
        status = client.status()
        assert (status.paused, status.completed, status.next_tick) == (True, -1, 0)
        assert client.step(2, wait=30).target == 1
        assert client.set_speed(0).ticks_per_second == 0
        resumed = client.resume()
        assert not resumed.paused
        client.wait_for_tick(6, timeout=30)  # running on its own now
        paused = client.pause()
        assert paused.paused
        last = client.status()
        # Paused: at most the tick already sent completes, nothing more is sent.
        client.wait_for_tick(last.next_tick - 1, timeout=30)
        settled = client.status()
        assert settled.awaiting is None and settled.next_tick == settled.completed + 1
        assert client.step(1, wait=30).target == settled.completed + 1


def test_export_and_import_fork_a_town_that_evolves_like_the_original(bus: Bus) -> None:
    with running_town(bus) as client:
        client.step(10, wait=60)
        snap = client.export()
        assert snap.world.tick == 10 and set(snap.minds) == set(embedded_town().slugs)
        assert all(m.last_tick == 9 for m in snap.minds.values())
        client.step(5, wait=60)
        original = client.state().digest
    fork_bus = Bus(bus.transport, bus.namespace + ".fork")
    import_snapshot(fork_bus, snap)
    with pytest.raises(TownRequestError, match="already holds a town"):
        import_snapshot(fork_bus, snap)
    with running_town(fork_bus, seed=999) as fork:  # the stored config wins over the flags
        fork.step(5, wait=60)
        assert fork.state().digest == original
    fork_bus.close()


def test_topics_nobody_reads_keep_only_their_recent_history(bus: Bus) -> None:
    events = bus.keys.topic("town.events")
    with running_town(bus, topic_history=100) as client:
        for i in range(150):
            client.inject(InjectEvent(kind="announcement", description=f"notice {i}", location="Town Hall"))
        assert bus.transport.length(events) == 150
        client.step(35, wait=120)  # the day's last tick caps the history
    kept = [bus.decode_entry(e) for e in bus.transport.range(events)]
    assert len(kept) == 100
    last = kept[-1]
    assert last is not None and isinstance(last.payload, TownEvent)


class _ClockInboxOutage(MemoryTransport):
    """A memory bus on which sending to the clock's inbox fails while ``down`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.refused = 0

    def add(self, stream: str, fields: Fields) -> str:
        if self.down and stream.endswith(":inbox:clock"):
            self.refused += 1
            raise ConnectionError("the bus is away")
        return super().add(stream, fields)


def test_a_wake_up_the_bus_refused_is_sent_again_and_the_clock_goes_on() -> None:
    transport = _ClockInboxOutage()
    bus = Bus(transport, "town:outage")
    try:
        with running_town(bus, ticks_per_second=50.0, start_paused=False):
            wait_until(lambda: len(completions(bus)) >= 2, timeout=30, what="the first ticks")
            transport.down = True
            wait_until(lambda: transport.refused >= 2, timeout=30, what="refused wake-ups")
            stalled = len(completions(bus))
            transport.down = False
            wait_until(lambda: len(completions(bus)) >= stalled + 3, timeout=30, what="ticks after it")
        ticks = [c.tick for c in completions(bus)]
        assert ticks == list(range(ticks[0], ticks[0] + len(ticks)))  # none lost, none doubled
    finally:
        bus.close()


def test_a_clock_ahead_of_the_world_is_told_its_tick_and_the_town_goes_on(bus: Bus) -> None:
    """The clock's stored state says ticks the world never ran (Redis kept the clock's writes of a
    later moment than the world's): the clock takes what Redis holds, the world tells it where it
    is instead of dead-lettering a tick that "would skip" its own, and the steps still end where
    they were aimed, every tick once (issue 13)."""
    reference = [r.digest for r in Town(embedded_town(), seed=42).step(13)]
    with running_town(bus) as client:
        client.step(5, wait=60)
        ahead = ClockState(completed=9, next_tick=10, paused=True, ticks_per_second=0.0)
        bus.transport.set(bus.keys.state("clock"), ahead.model_dump_json().encode())
        status = client.step(3, wait=None)  # returns at once: the test waits below
        assert status.target == 12  # the clock believed the world had run 9 ticks
        client.wait_for_tick(12, timeout=60)
        view = client.state()
    assert view.tick == 13 and view.digest == reference[-1]
    assert sorted({c.tick for c in completions(bus)}) == list(range(13))
    assert bus.dead_letters() == []
    clock = ClockState.model_validate_json(bus.load_state("clock") or b"")
    assert clock.repairs == 2, clock.repair_log  # what Redis held, then the world's position
    assert "Redis lost the clock's last writes" in clock.repair_log[0]
    assert "the world has completed 4: adopted" in clock.repair_log[1]


def test_a_step_that_does_not_complete_in_time_raises_a_typed_timeout(bus: Bus) -> None:
    """A town whose world runs nowhere: the clock accepts the step, no tick ever completes."""
    config, _ = ensure_config(bus, TownConfig(definition=embedded_town(), start_paused=True))
    with Host(bus, HostConfig(block_ms=50)) as host:
        spawn_town(host, config, roles=("clock",))
        client = TownClient(bus, timeout=10)
        with pytest.raises(StepTimeoutError) as caught:
            client.step(2, wait=0.3)
        assert (caught.value.tick, caught.value.timeout) == (1, 0.3)
        assert isinstance(caught.value, TimeoutError) and client.status().completed == -1
        assert client.step(1, wait=None).target == 2  # not waiting: accepted, the target given
