"""An actor whose stored state must still be in Redis: the clock's and the world's guard against
Redis losing its last writes (an OS crash under ``appendfsync everysec`` cuts the AOF's tail).

Two checks, each leading to a repair the subclass records:

- before every message, the state Redis holds must be the one this actor last stored (loaded or
  saved); if it is not, the actor goes back to what Redis holds (``lost_writes``): every actor's
  stored state is from the same earlier moment, so the town can run the lost ticks again;
- a (re)load that gives a position behind what this process stored before (a restart, or a
  commit that did not apply) is reported (``behind_stored``).
"""

from __future__ import annotations

from typing import ClassVar, TypeVar

from pydantic import BaseModel

from actors.bus import Bus
from actors.runtime import Context, StatefulActor
from messages import Message

S = TypeVar("S", bound=BaseModel)


class StoreGuardedActor(StatefulActor[S]):
    stored_here: ClassVar[dict[tuple[str, str], int]]
    """(namespace, address) -> the position an actor of this class last stored in this process
    (each subclass has its own)."""

    def __init__(self, address: str) -> None:
        self._bus: Bus | None = None
        self._address = address
        self._committed: bytes | None = None
        """The state as last stored (loaded or saved): what Redis must still hold."""
        super().__init__()

    def position(self) -> int:
        """Where the state is: the clock's last completed tick, the world's next tick."""
        raise NotImplementedError

    def behind_stored(self, bus: Bus, stored_here: int) -> None:
        """A load gave a position behind ``stored_here``, what this process stored before."""

    def lost_writes(self, ctx: Context, lost: S) -> None:
        """Redis no longer held ``lost``; the state is now what Redis holds."""

    def guard_start(self, address: str, bus: Bus) -> None:
        """Call from ``on_start``: the first load is checked once the bus is known."""
        self._bus, self._address = bus, address
        self._check_regression(bus)

    def save_state(self) -> bytes | None:
        data = super().save_state()
        self._committed = data
        if self._bus is not None:
            self.stored_here[self._bus.namespace, self._address] = self.position()
        return data

    def load_state(self, data: bytes | None) -> None:
        super().load_state(data)
        self._committed = data
        if self._bus is not None:  # a reload; the first load is checked by guard_start
            self._check_regression(self._bus)

    def _check_regression(self, bus: Bus) -> None:
        key = (bus.namespace, self._address)
        stored_here = self.stored_here.get(key)
        if stored_here is not None and self.position() < stored_here:
            self.behind_stored(bus, stored_here)
        self.stored_here[key] = self.position()

    def dispatch(self, ctx: Context, message: Message) -> Message | None:
        self.verify_store(ctx)
        return super().dispatch(ctx, message)

    def verify_store(self, ctx: Context) -> None:
        """Go back to what Redis holds if it is not what this actor last stored."""
        if self._committed is None:
            return
        stored = ctx.bus.load_state(ctx.address)
        if stored == self._committed:
            return
        lost = self.state
        StatefulActor.load_state(self, stored)  # not a reload to check: this is the repair
        self._committed = stored
        self.stored_here[ctx.bus.namespace, ctx.address] = self.position()
        self.lost_writes(ctx, lost)
