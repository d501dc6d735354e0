"""Host metrics: each handler's time is recorded under its actor type; expired messages are counted."""

from __future__ import annotations

from actors.bus import Bus
from actors.runtime import Host, HostConfig
from actors.runtime.metrics import HandlerLatency
from tests.conftest import wait_until
from tests.support.actors import FlakyActor, Slow
from tests.support.messages import Flaky, Work


class RecordedLatency(HandlerLatency):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, float]] = []

    def observe(self, actor_type: str, seconds: float) -> None:
        self.seen.append((actor_type, seconds))
        super().observe(actor_type, seconds)


def test_each_handler_run_is_timed_under_its_actor_type_failed_or_not(bus: Bus) -> None:
    host = Host(bus, HostConfig(block_ms=20, retry_backoff=0.001))
    latency = host.handler_latency = RecordedLatency()
    host.spawn(Slow, "slow")
    host.spawn(FlakyActor, "flaky")
    with host:
        bus.tell("slow", Work(seq=1, seconds=0.05))
        bus.tell("flaky", Flaky(key="once", fail_times=1))
        wait_until(lambda: len(latency.seen) == 3, what="three handler runs")
    assert sorted(actor_type for actor_type, _ in latency.seen) == ["FlakyActor", "FlakyActor", "Slow"]
    # The slow handler's 50 ms are in its time (how fast the others ran depends on the machine).
    assert [seconds >= 0.05 for actor_type, seconds in latency.seen if actor_type == "Slow"] == [True]


def test_a_message_past_its_deadline_is_counted_and_never_handled(bus: Bus) -> None:
    host = Host(bus, HostConfig(block_ms=20))
    latency = host.handler_latency = RecordedLatency()
    host.spawn(FlakyActor, "flaky")
    with host:
        bus.tell("flaky", Flaky(key="late"), deadline=bus.clock() - 1)
        wait_until(lambda: bus.stats["expired"] == 1, what="the expired message")
    assert FlakyActor.attempts["late"] == 0
    assert latency.seen == []
