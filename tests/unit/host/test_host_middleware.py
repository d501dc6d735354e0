"""The host's middleware: a caller's hooks run in order around handled, failed and rejected messages."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from actors.bus import Bus, Delivery
from actors.runtime import Actor, Host, HostConfig, Middleware, Rejected
from tests.conftest import wait_until
from tests.support.actors import FlakyActor
from tests.support.messages import Flaky, Work

FAST = HostConfig(block_ms=20, retry_backoff=0.001, retry_backoff_max=0.002)


class Recorder(Middleware):
    """Writes each hook it sees, with its own name, into a shared journal."""

    def __init__(self, name: str, journal: list[str], lock: threading.Lock) -> None:
        self.name, self.journal, self.lock = name, journal, lock

    def _note(self, event: str) -> None:
        with self.lock:
            self.journal.append(f"{self.name}:{event}")

    def before_host_boot(self, host: Host) -> None:
        self._note("before_host_boot")

    def after_host_boot(self, host: Host) -> None:
        self._note("after_host_boot")

    def after_actor_spawned(self, host: Host, address: str) -> None:
        self._note(f"after_actor_spawned {address}")

    def after_reading_stopped(self, host: Host) -> None:
        self._note("after_reading_stopped")

    def after_host_shutdown(self, host: Host) -> None:
        self._note("after_host_shutdown")

    def before_process_message(self, host: Host, actor: Actor, delivery: Delivery) -> None:
        self._note(f"before_process {delivery.attempt}")

    def after_process_message(
        self, host: Host, actor: Actor, delivery: Delivery, *, exception: BaseException | None
    ) -> None:
        self._note(f"after_process {delivery.attempt} {type(exception).__name__ if exception else 'ok'}")

    def reject_message(self, host: Host, delivery: Delivery, reason: str, detail: str) -> None:
        self._note(f"reject {reason}")


@pytest.fixture
def journal() -> list[str]:
    return []


@pytest.fixture
def host(bus: Bus, journal: list[str]) -> Iterator[Host]:
    lock = threading.Lock()
    h = Host(bus, FAST, middleware=[Recorder("outer", journal, lock), Recorder("inner", journal, lock)])
    h.spawn(FlakyActor, "flaky")
    yield h
    h.stop()


def message_events(journal: list[str]) -> list[str]:
    return [e for e in journal if "process" in e or "reject" in e]


def test_hooks_run_outer_first_before_and_inner_first_after_a_handled_message(
    bus: Bus, host: Host, journal: list[str]
) -> None:
    host.start()
    bus.tell("flaky", Flaky(key="ok"))
    wait_until(lambda: len(message_events(journal)) == 4, what="the four message hooks")
    assert message_events(journal) == [
        "outer:before_process 1",
        "inner:before_process 1",
        "inner:after_process 1 ok",
        "outer:after_process 1 ok",
    ]


def test_hooks_see_a_failed_message_each_attempt_then_its_rejection(
    bus: Bus, host: Host, journal: list[str]
) -> None:
    host.start()
    bus.tell("flaky", Flaky(key="fails", fail_times=99))
    expected = bus.max_attempts * 4 + 2
    wait_until(lambda: len(message_events(journal)) == expected, what="every attempt and the rejection")
    events = message_events(journal)
    for attempt in range(1, bus.max_attempts + 1):
        at = (attempt - 1) * 4
        assert events[at : at + 4] == [
            f"outer:before_process {attempt}",
            f"inner:before_process {attempt}",
            f"inner:after_process {attempt} RuntimeError",
            f"outer:after_process {attempt} RuntimeError",
        ]
    assert events[-2:] == ["outer:reject handler_error", "inner:reject handler_error"]
    (dead,) = bus.dead_letters()  # the built-in dead-lettering ran before them
    assert dead.reason == "handler_error"


def test_lifecycle_hooks_run_around_boot_spawn_and_shutdown(bus: Bus, host: Host, journal: list[str]) -> None:
    host.start()
    host.spawn(FlakyActor, "late")
    host.stop()
    assert journal == [
        "inner:after_actor_spawned flaky",
        "outer:after_actor_spawned flaky",
        "outer:before_host_boot",
        "inner:before_host_boot",
        "inner:after_host_boot",
        "outer:after_host_boot",
        "inner:after_actor_spawned late",
        "outer:after_actor_spawned late",
        "inner:after_reading_stopped",
        "outer:after_reading_stopped",
        "inner:after_host_shutdown",
        "outer:after_host_shutdown",
    ]


class Quarantine(Middleware):
    """Keeps every ``Work`` message from its actor."""

    def before_dispatch_message(self, host: Host, delivery: Delivery) -> None:
        if delivery.envelope is not None and isinstance(delivery.envelope.payload, Work):
            raise Rejected("quarantined", f"work {delivery.envelope.payload.seq} is not handled here")


def test_a_middleware_rejects_a_delivery_before_it_reaches_the_actor(bus: Bus) -> None:
    with Host(bus, FAST, middleware=[Quarantine()]) as host:
        host.spawn(FlakyActor, "flaky")
        bus.tell("flaky", Work(seq=4))
        bus.tell("flaky", Flaky(key="passes"))
        (dead,) = wait_until(bus.dead_letters, what="the quarantined message's dead letter")
        wait_until(lambda: FlakyActor.attempts["passes"] == 1, what="the other message handled")
    assert (dead.reason, dead.detail, dead.message_type) == (
        "quarantined",
        "work 4 is not handled here",
        "test.work",
    )


class Broken(Middleware):
    def maintain(self, host: Host) -> None:
        raise RuntimeError("this middleware's housekeeping is broken")


class Ticks(Middleware):
    def __init__(self) -> None:
        self.ticks = 0

    def maintain(self, host: Host) -> None:
        self.ticks += 1


def test_a_failing_maintenance_step_does_not_stop_the_others(bus: Bus) -> None:
    ticks = Ticks()
    with Host(bus, FAST, middleware=[Broken(), ticks]) as host:
        host.wake_maintenance()
        wait_until(lambda: ticks.ticks >= 3, what="maintenance rounds past the broken middleware")
