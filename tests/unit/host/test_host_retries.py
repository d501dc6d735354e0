"""Retries: a failed handler runs again after a growing backoff, and its last failure is rejected."""

from __future__ import annotations

import threading

from actors.bus import FIELD, INBOX_GROUP, Bus
from actors.runtime import Actor, Context, Host, HostConfig, Middleware, on
from actors.runtime._retries import backoff, failure_detail
from actors.runtime._scheduler import Scheduler
from messages import decode
from tests.conftest import wait_until
from tests.support.actors import FlakyActor
from tests.support.messages import Flaky, Work


def test_the_backoff_doubles_with_each_attempt_up_to_its_cap() -> None:
    assert [backoff(a, base=0.05, cap=0.3) for a in (1, 2, 3, 4, 5)] == [0.05, 0.1, 0.2, 0.3, 0.3]


def test_the_failure_detail_names_the_exception_and_where_it_was_raised() -> None:
    def handler() -> None:
        raise ValueError("no such key")

    try:
        handler()
    except ValueError as exc:
        detail = failure_detail(exc)
    assert detail.startswith("ValueError: no such key\n")
    assert "in handler" in detail


def test_a_failed_handler_runs_again_with_its_attempt_counted(bus: Bus) -> None:
    with Host(bus, HostConfig(block_ms=20, retry_backoff=0.001)) as host:
        host.spawn(FlakyActor, "flaky")
        bus.tell("flaky", Flaky(key="twice", fail_times=2))
        wait_until(lambda: FlakyActor.attempts["twice"] == 3, what="the third attempt")
    assert bus.stats["retried"] == 2
    assert bus.dead_letters() == []


def test_a_retry_waiting_out_its_backoff_is_held_then_requeued_when_the_host_stops(bus: Bus) -> None:
    host = Host(bus, HostConfig(block_ms=20, retry_backoff=3600, retry_backoff_max=3600))
    host.spawn(FlakyActor, "flaky")
    host.start()
    try:
        bus.tell("flaky", Flaky(key="once", fail_times=1))
        wait_until(lambda: FlakyActor.attempts["once"] == 1, what="the failed first attempt")
        wait_until(lambda: bus.stats["retried"] == 0 and host.in_flight() == 1, what="the held retry")
    finally:
        assert host.stop(drain_timeout=5) is True
    original, requeued = bus.transport.range(bus.keys.inbox("flaky"))
    again = decode(requeued.fields[FIELD])
    assert (again.payload, again.attempt) == (Flaky(key="once", fail_times=1), 2)
    assert again.id == decode(original.fields[FIELD]).id
    assert bus.transport.pending(bus.keys.inbox("flaky"), INBOX_GROUP, count=10) == []  # the original acked
    assert host.in_flight() == 0


def test_a_call_scheduled_after_the_flush_runs_at_once_not_never() -> None:
    scheduler = Scheduler("test")
    ran: list[str] = []
    scheduler.call_later(3600, lambda: ran.append("waiting"))
    assert scheduler.flush_and_stop() == 1
    scheduler.call_later(3600, lambda: ran.append("late"))
    assert ran == ["waiting", "late"]


class FailsOnceReadingStopped(Actor):
    """Fails its first message only after the host has stopped reading (a handler that fails
    during the drain), so its retry is scheduled after the retries were flushed."""

    reading_stopped = threading.Event()
    started = threading.Event()

    @on(Flaky)
    def flaky(self, ctx: Context, msg: Flaky) -> None:
        FlakyActor.attempts[msg.key] += 1
        if FlakyActor.attempts[msg.key] == 1:
            FailsOnceReadingStopped.started.set()
            assert FailsOnceReadingStopped.reading_stopped.wait(10)
            raise RuntimeError("failed during the drain")


class SignalReadingStopped(Middleware):
    def after_reading_stopped(self, host: Host) -> None:
        FailsOnceReadingStopped.reading_stopped.set()


def test_a_handler_failing_during_the_drain_is_requeued_not_lost(bus: Bus) -> None:
    FailsOnceReadingStopped.reading_stopped.clear()
    FailsOnceReadingStopped.started.clear()
    host = Host(
        bus,
        HostConfig(block_ms=20, retry_backoff=3600, retry_backoff_max=3600),
        middleware=[SignalReadingStopped()],
    )
    host.spawn(FailsOnceReadingStopped, "flaky")
    host.start()
    bus.tell("flaky", Flaky(key="drain", fail_times=1))
    assert FailsOnceReadingStopped.started.wait(10)
    assert host.stop(drain_timeout=10) is True
    entries = bus.transport.range(bus.keys.inbox("flaky"))
    assert [decode(e.fields[FIELD]).attempt for e in entries] == [1, 2]
    assert bus.transport.pending(bus.keys.inbox("flaky"), INBOX_GROUP, count=10) == []
    assert host.in_flight() == 0


def test_the_last_attempt_is_rejected_with_its_traceback(bus: Bus) -> None:
    with Host(bus, HostConfig(block_ms=20, retry_backoff=0.001)) as host:
        host.spawn(FlakyActor, "flaky")
        bus.tell("flaky", Flaky(key="always", fail_times=99))
        (dead,) = wait_until(bus.dead_letters, what="the dead letter")
    assert (dead.reason, dead.attempts) == ("handler_error", bus.max_attempts)
    assert dead.detail.startswith(f"RuntimeError: transient failure {bus.max_attempts} of always")
    assert FlakyActor.attempts["always"] == bus.max_attempts


def test_a_permanent_error_is_not_retried(bus: Bus) -> None:
    with Host(bus, HostConfig(block_ms=20, retry_backoff=0.001)) as host:
        host.spawn(FlakyActor, "flaky")
        bus.tell("flaky", Work(seq=9))
        (dead,) = wait_until(bus.dead_letters, what="the dead letter")
    assert (dead.reason, dead.attempts) == ("rejected", 1)
    assert bus.stats["retried"] == 0
