"""The entries a host holds, each in its phase: readers wait here for room, a drain for the end.

A delivery enters queued (handed to its actor's cell), runs, and leaves when it is settled:
committed, handed back, dead-lettered, or requeued after a middleware held it. The window is
bounded (``HostConfig.max_in_flight``): more would starve other processes serving the same
addresses.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from actors.bus import Delivery


class Phase(Enum):
    QUEUED = "queued"
    RUNNING = "running"
    CANCELLED = "cancelled"
    """Handed back, or about to be: not this host's any more."""
    HELD = "held"
    """A middleware settles it later (a retry waiting out its backoff)."""
    COMMITTING = "committing"


UNFINISHED = (Phase.QUEUED, Phase.RUNNING)
"""What a restarted actor is given again, and a retired one's handed back."""


@dataclass
class _Item:
    delivery: Delivery
    phase: Phase = Phase.QUEUED


class InFlight:
    def __init__(self, limit: int, batch_room: int) -> None:
        self.limit = limit
        self.batch_room = batch_room
        """Room a reader waits for: woken for every finished message, it would read one entry
        per round trip once the window is full."""
        self._items: dict[tuple[str, str], _Item] = {}
        self._cv = threading.Condition()
        self._readers_waiting = 0
        self._closing = False

    def __len__(self) -> int:
        with self._cv:
            return len(self._items)

    def holds(self, key: tuple[str, str]) -> bool:
        with self._cv:
            return key in self._items

    def room(self, stopping: Callable[[], bool]) -> int:
        """Wait until a batch fits (or ``stopping``); returns the room there is."""
        with self._cv:
            while not stopping() and self.limit - len(self._items) < self.batch_room:
                self._readers_waiting += 1
                try:
                    self._cv.wait(0.5)
                finally:
                    self._readers_waiting -= 1
            return self.limit - len(self._items)

    def admit(self, deliveries: Iterable[Delivery]) -> list[Delivery]:
        """Queue the deliveries not held already (an entry of ours reclaimed is); returns them."""
        with self._cv:
            fresh = [d for d in deliveries if d.key not in self._items]
            for d in fresh:
                self._items[d.key] = _Item(d)
            return fresh

    def begin(self, d: Delivery) -> bool:
        """Queued becomes running; False if it is not queued (cancelled, or not ours)."""
        with self._cv:
            item = self._items.get(d.key)
            if item is None or item.phase is not Phase.QUEUED:
                return False
            item.phase = Phase.RUNNING
            return True

    def set_phase(self, d: Delivery, phase: Phase) -> None:
        with self._cv:
            item = self._items.get(d.key)
            if item is not None:
                item.phase = phase

    def phase(self, d: Delivery) -> Phase | None:
        with self._cv:
            item = self._items.get(d.key)
            return None if item is None else item.phase

    def finish(self, d: Delivery) -> None:
        with self._cv:
            self._items.pop(d.key, None)
            # Wake waiters only when it matters: a reader needs a batch's room, a drain needs empty.
            if self._closing or (self._readers_waiting and self.limit - len(self._items) >= self.batch_room):
                self._cv.notify_all()

    def claimed(self) -> list[Delivery]:
        """What this host holds and has not handed back: the claims to renew."""
        with self._cv:
            return [i.delivery for i in self._items.values() if i.phase is not Phase.CANCELLED]

    def move(self, to: Phase, *, phases: tuple[Phase, ...], address: str | None = None) -> list[Delivery]:
        """Move the deliveries in ``phases`` (of ``address``, or all) to ``to``; returns them."""
        with self._cv:
            items = [
                i
                for i in self._items.values()
                if i.phase in phases and (address is None or i.delivery.address == address)
            ]
            for item in items:
                item.phase = to
        return [i.delivery for i in items]

    def close(self) -> None:
        """The host is stopping: wake every waiter now and at each finish."""
        with self._cv:
            self._closing = True
            self._cv.notify_all()

    def drain(self, deadline: float) -> list[Delivery]:
        """Wait until nothing runs or commits, at most until ``deadline``; returns what still does."""
        with self._cv:
            while True:
                busy = [
                    i.delivery for i in self._items.values() if i.phase in (Phase.RUNNING, Phase.COMMITTING)
                ]
                remaining = deadline - time.monotonic()
                if not busy or remaining <= 0:
                    return busy
                self._cv.wait(remaining)
