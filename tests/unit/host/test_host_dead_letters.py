"""Dead-lettering: undecodable and over-delivered entries never reach an actor; rejections are written."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.bus import FIELD, INBOX_GROUP, Bus, Delivery
from actors.roles import EchoActor
from actors.runtime import Host, HostConfig, Rejected
from actors.runtime._dead_letters import DeadLetters
from messages import Ping, Pong
from tests.conftest import wait_until


@pytest.fixture
def host(bus: Bus) -> Iterator[Host]:
    h = Host(bus)
    yield h
    h.stop()


def fetch_one(bus: Bus) -> Delivery:
    (delivery,) = bus.fetch([bus.subscribe_inbox("echo")], count=10, block_ms=None)
    return delivery


def test_an_undecodable_entry_is_rejected_with_the_decoders_reason(bus: Bus, host: Host) -> None:
    bus.transport.add(bus.keys.inbox("echo"), {FIELD: b"\xc1 not msgpack"})
    delivery = fetch_one(bus)
    assert delivery.error is not None
    with pytest.raises(Rejected) as info:
        DeadLetters().before_dispatch_message(host, delivery)
    assert (info.value.reason, info.value.detail) == (delivery.error.reason, delivery.error.detail)


def test_an_entry_delivered_more_often_than_allowed_is_rejected(bus: Bus, host: Host) -> None:
    bus.tell("echo", Ping(seq=1), attempt=bus.max_attempts + 1)
    with pytest.raises(Rejected) as info:
        DeadLetters().before_dispatch_message(host, fetch_one(bus))
    assert info.value.reason == "max_attempts"
    assert info.value.detail == f"delivered {bus.max_attempts + 1} times without being acknowledged"


def test_an_entry_within_its_attempts_passes(bus: Bus, host: Host) -> None:
    bus.tell("echo", Ping(seq=1), attempt=bus.max_attempts)
    DeadLetters().before_dispatch_message(host, fetch_one(bus))


def test_a_rejected_delivery_is_acknowledged_into_the_dead_letter_stream(bus: Bus, host: Host) -> None:
    bus.tell("echo", Ping(seq=2))
    delivery = fetch_one(bus)
    DeadLetters().reject_message(host, delivery, "quarantined", "not here")
    (dead,) = bus.dead_letters()
    assert (dead.reason, dead.detail, dead.message_type, dead.source_entry_id) == (
        "quarantined",
        "not here",
        "sys.ping",
        delivery.entry_id,
    )
    assert bus.transport.pending(bus.keys.inbox("echo"), INBOX_GROUP, count=10) == []


def test_a_host_dead_letters_what_it_fetched_undecodable_and_serves_on(bus: Bus) -> None:
    bus.transport.add(bus.keys.inbox("echo"), {FIELD: b"\xc1 not msgpack"})
    with Host(bus, HostConfig(block_ms=20)) as host:
        host.spawn(EchoActor, "echo")
        (dead,) = wait_until(bus.dead_letters, what="the dead letter")
        assert bus.ask("echo", Ping(seq=3), timeout=5) == Pong(seq=3, responder=bus.process_id)
    assert dead.reason == "malformed"
