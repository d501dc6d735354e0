"""The bus and the host, on both transports: delivery, asks, retries, dead letters, supervision."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from actors.bus import FIELD, AskTimeoutError, Bus, RemoteError
from actors.runtime import Actor, Context, Host, HostConfig, HostError, on
from messages import REGISTRY, Envelope, MessageRegistry, Ping, Pong, decode, encode
from tests.conftest import wait_until
from tests.support.actors import Counter_, Echo, FlakyActor
from tests.support.messages import Done, Flaky, GetTotal, Incr, Total, Work

FAST = HostConfig(visibility_timeout=1.0, heartbeat_every=0.2, retry_backoff=0.01, drain_timeout=5.0)


@pytest.fixture(autouse=True)
def fresh_flaky_counts() -> None:
    FlakyActor.attempts.clear()


@pytest.fixture
def host(bus: Bus) -> Iterator[Host]:
    h = Host(bus, FAST)
    yield h
    h.stop()


def collected(bus: Bus, address: str = "collector") -> list[Envelope]:
    return [decode(e.fields[FIELD]) for e in bus.transport.range(bus.keys.inbox(address))]


def test_tell_reaches_the_actor_and_its_effects_are_sent(bus: Bus, host: Host) -> None:
    host.spawn(FlakyActor, "flaky")
    host.start()
    bus.tell("flaky", Flaky(key="tell-ok"))
    done = wait_until(lambda: collected(bus), what="the actor's message to the collector")
    assert done[0].payload == Done(seq=1, by="tell-ok")
    assert done[0].sender == "flaky"
    assert done[0].causation_id is not None


def test_ask_returns_the_reply(bus: Bus, host: Host) -> None:
    host.spawn(Echo, "echo")
    host.start()
    reply = bus.ask("echo", Ping(seq=5, body="hi"), timeout=5)
    assert reply == Pong(seq=5, body="hi", responder=bus.process_id)


def test_every_actor_answers_a_ping_without_a_handler_of_its_own(bus: Bus, host: Host) -> None:
    host.spawn(Counter_, "counter")
    host.start()
    reply = bus.ask("counter", Ping(seq=7, body="alive?"), timeout=5)
    assert reply == Pong(seq=7, body="alive?", responder=bus.process_id)
    assert bus.transport.range(bus.keys.dead_letters) == []


def test_ask_async_resolves_many_concurrent_requests(bus: Bus, host: Host) -> None:
    host.spawn(Echo, "echo")
    host.start()
    futures = [bus.ask_async("echo", Ping(seq=i), timeout=10) for i in range(20)]
    assert sorted(f.result(timeout=10).payload.seq for f in futures) == list(range(20))  # type: ignore[attr-defined]


def test_ask_without_responder_is_a_typed_timeout(bus: Bus) -> None:
    with pytest.raises(AskTimeoutError, match="nobody"):
        bus.ask("nobody", Ping(), timeout=0.2)
    fut = bus.ask_async("nobody", Ping(), timeout=0.2)
    with pytest.raises(AskTimeoutError):
        fut.result(timeout=5)


def test_a_failing_handler_is_retried_then_succeeds_once(bus: Bus, host: Host) -> None:
    host.spawn(FlakyActor, "flaky")
    host.start()
    bus.tell("flaky", Flaky(key="retry-3", fail_times=2))
    done = wait_until(lambda: collected(bus), what="success after two failures")
    assert done[0].payload == Done(seq=3, by="retry-3")
    assert bus.stats["retried"] == 2
    assert bus.dead_letters() == []


def test_a_handler_that_keeps_failing_is_dead_lettered_and_the_asker_told(bus: Bus, host: Host) -> None:
    host.spawn(FlakyActor, "flaky")
    host.start()
    with pytest.raises(RemoteError) as info:
        bus.ask("flaky", Flaky(key="always", fail_times=99), timeout=10)
    assert info.value.reason == "handler_error"
    assert "transient failure" in info.value.detail
    (dl,) = bus.dead_letters()
    assert (dl.reason, dl.attempts, dl.message_type) == ("handler_error", bus.max_attempts, "test.flaky")
    assert decode(dl.data).payload == Flaky(key="always", fail_times=99)
    assert FlakyActor.attempts["always"] == bus.max_attempts


def test_an_ask_the_responder_cannot_decode_fails_fast_with_its_reason(
    transport: Any, namespace: str
) -> None:
    narrow = MessageRegistry()  # a responder that knows only the system messages
    for name, model in REGISTRY.models().items():
        if name.startswith("sys."):
            narrow.register(name, model.schema_version)(model)
    server_bus = Bus(transport, namespace, registry=narrow)
    client_bus = Bus(transport, namespace)
    with Host(server_bus, FAST) as host:
        host.spawn(Echo, "echo")
        with pytest.raises(RemoteError) as info:
            client_bus.ask("echo", GetTotal(), timeout=10)
    client_bus.close()
    server_bus.close()
    assert info.value.reason == "unknown_type"
    assert [d.reason for d in server_bus.dead_letters()] == ["unknown_type"]


def test_permanent_errors_and_unhandled_types_are_dead_lettered_at_once(bus: Bus, host: Host) -> None:
    host.spawn(FlakyActor, "flaky")
    host.start()
    bus.tell("flaky", Work(seq=1))
    bus.tell("flaky", GetTotal())  # a type it has no handler for
    dls = wait_until(lambda: len(bus.dead_letters()) == 2 and bus.dead_letters(), what="two dead letters")
    assert sorted((d.reason, d.attempts) for d in dls) == [("rejected", 1), ("unhandled_type", 1)]


PLACEMENTS = pytest.mark.parametrize("pooled", [False, True], ids=["own-thread", "pooled"])


@PLACEMENTS
def test_a_dead_actor_is_restarted_by_its_supervisor(bus: Bus, host: Host, pooled: bool) -> None:
    host.spawn(FlakyActor, "flaky", pooled=pooled)
    host.start()
    bus.tell("flaky", Flaky(key="crash-once", fail_times=1, crash=True))
    done = wait_until(lambda: collected(bus), what="the retried message after the restart")
    assert done[0].payload == Done(seq=2, by="crash-once")
    assert bus.stats["restarts"] == 1
    assert host.alive("flaky")


@PLACEMENTS
def test_an_actor_that_keeps_dying_is_given_up_and_its_work_handed_back(bus: Bus, pooled: bool) -> None:
    host = Host(bus, HostConfig(visibility_timeout=1.0, retry_backoff=0.001, restart_limit=2))
    host.spawn(FlakyActor, "flaky", pooled=pooled)
    host.start()
    try:
        bus.tell("flaky", Flaky(key="crash-always", fail_times=99, crash=True))
        wait_until(lambda: bus.stats["gave_up"] == 1, what="the supervisor to give up")
        assert not host.alive("flaky")
        assert bus.stats["restarts"] == 2
    finally:
        host.stop()
    # nothing was lost: the message is in the inbox or the dead-letter stream
    inbox = bus.transport.range(bus.keys.inbox("flaky"))
    remaining = [decode(e.fields[FIELD]).payload for e in inbox] + [
        decode(d.data).payload for d in bus.dead_letters()
    ]
    assert Flaky(key="crash-always", fail_times=99, crash=True) in remaining


def test_topics_reach_every_subscribing_group_once(bus: Bus) -> None:
    seen: dict[str, list[int]] = {"a": [], "b": []}
    lock = threading.Lock()

    class Listener(Actor):
        topics = ("town.test",)

        def on_start(self, address: str, bus: Bus) -> None:
            self.address = address

        @on(Ping)
        def ping(self, ctx: Context, msg: Ping) -> None:
            with lock:
                seen[self.address].append(msg.seq)

    host = Host(bus, FAST)
    host.spawn(Listener, "a")
    host.spawn(Listener, "b")
    host.start()
    try:
        for i in range(3):
            bus.publish("town.test", Ping(seq=i))
        wait_until(lambda: len(seen["a"]) == 3 and len(seen["b"]) == 3, what="both groups")
    finally:
        host.stop()
    assert sorted(seen["a"]) == sorted(seen["b"]) == [0, 1, 2]


@PLACEMENTS
def test_state_is_committed_with_each_ack_and_restored_in_a_new_host(bus: Bus, pooled: bool) -> None:
    with Host(bus, FAST) as h1:
        h1.spawn(Counter_, "counter", pooled=pooled)
        for n in (1, 2, 3):
            bus.tell("counter", Incr(n=n))
        wait_until(
            lambda: getattr(bus.ask("counter", GetTotal(), timeout=5), "total", None) == 6, what="total 6"
        )
    with Host(bus, FAST) as h2:
        h2.spawn(Counter_, "counter", pooled=pooled)
        total = bus.ask("counter", GetTotal(), timeout=5)
    assert isinstance(total, Total) and total.total == 6 and len(total.applied) == 3


def test_a_message_delivered_twice_is_applied_once(bus: Bus) -> None:
    env = bus.envelope("counter", Incr(n=5))
    data = encode(env)
    bus.transport.add(bus.keys.inbox("counter"), {FIELD: data})
    bus.transport.add(bus.keys.inbox("counter"), {FIELD: data})  # e.g. a sender's own retry
    with Host(bus, FAST) as h:
        h.spawn(Counter_, "counter")
        wait_until(lambda: bus.stats["duplicates"] == 1, what="the duplicate to be recognised")
        total = bus.ask("counter", GetTotal(), timeout=5)
    assert isinstance(total, Total) and total.total == 5 and total.applied == [env.id]


def test_an_expired_message_is_acknowledged_without_running_the_handler(bus: Bus, host: Host) -> None:
    host.spawn(FlakyActor, "flaky")
    bus.tell("flaky", Flaky(key="late"), deadline=bus.clock() - 1)
    host.start()
    wait_until(lambda: bus.stats["expired"] == 1, what="the expired message")
    assert FlakyActor.attempts["late"] == 0


def test_spawning_an_address_twice_is_refused(bus: Bus, host: Host) -> None:
    host.spawn(Echo, "echo")
    with pytest.raises(HostError, match="already hosted"):
        host.spawn(Echo, "echo")


def test_presence_is_visible_while_running_and_removed_on_stop(bus: Bus) -> None:
    h = Host(bus, FAST, name="presence-test")
    h.spawn(Echo, "echo")
    h.start()
    procs = wait_until(lambda: [p for p in bus.processes() if p.alive], what="presence")
    assert procs[0].process_id == bus.process_id
    assert procs[0].info["addresses"] == ["echo"]
    h.stop()
    assert bus.processes() == []


def test_log_lines_of_a_handler_carry_the_message_context(bus: Bus, host: Host) -> None:
    captured: list[dict[str, Any]] = []

    def capture(_logger: Any, _name: str, event: dict[str, Any]) -> Any:
        captured.append(dict(event))
        raise structlog.DropEvent

    class Chatty(Actor):
        @on(Ping)
        def ping(self, ctx: Context, msg: Ping) -> None:
            structlog.get_logger("test").info("handling ping")

    structlog.configure(processors=[structlog.contextvars.merge_contextvars, capture])
    try:
        host.spawn(Chatty, "chatty")
        host.start()
        env = bus.tell("chatty", Ping(seq=1), correlation_id="corr-77")
        line = wait_until(
            lambda: next((c for c in captured if c["event"] == "handling ping"), None),
            what="the handler's log line",
        )
    finally:
        structlog.reset_defaults()
    assert line["message_id"] == env.id
    assert line["correlation_id"] == "corr-77"
    assert line["actor"] == "chatty"


def test_pooled_actors_share_the_pool_and_each_keeps_its_order(bus: Bus) -> None:
    config = HostConfig(visibility_timeout=5.0, heartbeat_every=0.2, pool_size=2)
    addresses = [f"counter.{i}" for i in range(20)]
    with Host(bus, config) as h:
        for address in addresses:
            h.spawn(Counter_, address, pooled=True)
        sent = {a: [bus.tell(a, Incr(n=n)).id for n in range(1, 6)] for a in addresses}
        totals = {}
        for a in addresses:
            wait_until(
                lambda a=a: getattr(bus.ask(a, GetTotal(), timeout=5), "total", None) == 15,
                what=f"{a} to add up its five messages",
            )
            totals[a] = bus.ask(a, GetTotal(), timeout=5)
        pool_threads = {t.name for t in threading.enumerate() if t.name.startswith("actors-")}
    assert all(isinstance(t, Total) and t.applied == sent[a] for a, t in totals.items())  # in order
    assert len(pool_threads) == 2  # twenty actors, two threads
