"""The in-flight window: what a host holds, in which phase; readers wait for room, a drain for the end."""

from __future__ import annotations

import threading
import time

from actors.bus import Bus, Delivery
from actors.runtime._in_flight import UNFINISHED, InFlight, Phase
from messages import Ping


def deliveries(bus: Bus, address: str, n: int) -> list[Delivery]:
    for seq in range(n):
        bus.tell(address, Ping(seq=seq))
    return bus.fetch([bus.subscribe_inbox(address)], count=n, block_ms=None)


def test_an_entry_already_held_is_not_admitted_twice(bus: Bus) -> None:
    window = InFlight(limit=10, batch_room=5)
    a, b = deliveries(bus, "a", 2)
    assert window.admit([a]) == [a]
    assert window.admit([a, b]) == [b]
    assert len(window) == 2 and window.holds(a.key)


def test_only_a_queued_entry_begins_and_a_cancelled_one_is_no_longer_claimed(bus: Bus) -> None:
    window = InFlight(limit=10, batch_room=5)
    a, b = deliveries(bus, "a", 2)
    window.admit([a, b])
    assert window.begin(a) and not window.begin(a)
    assert window.move(Phase.CANCELLED, phases=(Phase.QUEUED,)) == [b]
    assert not window.begin(b)
    assert window.claimed() == [a]
    assert window.phase(a) is Phase.RUNNING


def test_an_actors_unfinished_entries_move_and_no_others(bus: Bus) -> None:
    window = InFlight(limit=10, batch_room=5)
    (a,) = deliveries(bus, "a", 1)
    b, c = deliveries(bus, "b", 2)
    window.admit([a, b, c])
    window.begin(b)
    window.set_phase(c, Phase.HELD)
    assert window.move(Phase.QUEUED, phases=UNFINISHED, address="b") == [b]
    assert (window.phase(a), window.phase(b), window.phase(c)) == (Phase.QUEUED, Phase.QUEUED, Phase.HELD)


def test_a_reader_waits_for_a_batchs_room(bus: Bus) -> None:
    window = InFlight(limit=3, batch_room=2)
    held = deliveries(bus, "a", 3)
    window.admit(held)
    rooms: list[int] = []
    reader = threading.Thread(target=lambda: rooms.append(window.room(lambda: False)))
    reader.start()
    window.finish(held[0])  # one free place: not a batch's room yet
    window.finish(held[1])
    reader.join(timeout=5)
    assert rooms == [2]


def test_a_drain_returns_at_once_when_idle_and_at_its_deadline_with_what_still_runs(bus: Bus) -> None:
    window = InFlight(limit=10, batch_room=5)
    a, b = deliveries(bus, "a", 2)
    window.admit([a, b])
    assert window.drain(time.monotonic() + 60) == []  # queued is not running
    window.begin(a)
    assert window.drain(time.monotonic() - 1) == [a]
    finisher = threading.Thread(target=window.finish, args=(a,))
    window.close()
    finisher.start()
    assert window.drain(time.monotonic() + 60) == []
    finisher.join(timeout=5)
