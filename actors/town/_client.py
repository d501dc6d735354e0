"""Talking to a running town from outside: the controls behind ``auratown state/step/inject/...``."""

from __future__ import annotations

import time

from actors.bus import Bus
from actors.town._config import CONFIG_KEY, TownConfig, stored_config
from actors.town.clock import CLOCK, ClockState
from actors.town.world import TICKS_TOPIC, agent_address
from messages import Message
from messages.town import (
    ClockStatus,
    EventAccepted,
    ExportSnapshot,
    GetClockStatus,
    GetTownState,
    InjectEvent,
    Pause,
    Rejected,
    Resume,
    SetSpeed,
    SnapshotData,
    Step,
    TickCompleted,
    TownStateView,
)
from world import TownSnapshot


class TownRequestError(Exception):
    """The town refused a request (the reason is the message) or did not answer in time."""


class TownClient:
    def __init__(self, bus: Bus, *, timeout: float = 10.0) -> None:
        self.bus = bus
        self.timeout = timeout

    def _ask(
        self, recipient: str, msg: Message, expect: type[Message], timeout: float | None = None
    ) -> Message:
        reply = self.bus.ask(recipient, msg, timeout=timeout or self.timeout)
        if isinstance(reply, Rejected):
            raise TownRequestError(reply.reason)
        if not isinstance(reply, expect):
            raise TownRequestError(
                f"{recipient} answered {reply.message_type}, expected {expect.message_type}"
            )
        return reply

    # clock
    def status(self) -> ClockStatus:
        return self._ask(CLOCK, GetClockStatus(), ClockStatus)  # type: ignore[return-value]

    def pause(self) -> ClockStatus:
        return self._ask(CLOCK, Pause(), ClockStatus)  # type: ignore[return-value]

    def resume(self) -> ClockStatus:
        return self._ask(CLOCK, Resume(), ClockStatus)  # type: ignore[return-value]

    def set_speed(self, ticks_per_second: float) -> ClockStatus:
        return self._ask(CLOCK, SetSpeed(ticks_per_second=ticks_per_second), ClockStatus)  # type: ignore[return-value]

    def step(self, count: int, *, wait: float | None = None) -> ClockStatus:
        """Run ``count`` more ticks; with ``wait``, block until the last of them completed."""
        status: ClockStatus = self._ask(CLOCK, Step(count=count), ClockStatus)  # type: ignore[assignment]
        if wait is not None and status.target is not None:
            self.wait_for_tick(status.target, timeout=wait)
        return status

    def wait_for_tick(self, tick: int, *, timeout: float) -> None:
        """Block until the clock has recorded tick ``tick`` as completed.

        The ``town.ticks`` topic only wakes the wait: the clock hears the same TickCompleted on
        its own subscription, a moment later, so the clock's status is what decides (a status
        read straight after this returns then agrees with it)."""
        deadline = time.monotonic() + timeout
        stream = self.bus.keys.topic(TICKS_TOPIC)
        last = "0-0"
        announced = False  # the topic has shown the tick; the clock is about to record it
        while True:
            if self.status().completed >= tick:
                return
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TownRequestError(f"tick {tick} did not complete within {timeout:g}s")
                window = 20 if announced else 1000
                entries = self.bus.transport.read(
                    stream, last, count=500, block_ms=max(1, min(window, int(remaining * 1000)))
                )
                if not entries:
                    break  # ask the clock again
                for entry in entries:
                    last = entry.entry_id
                    env = self.bus.decode_entry(entry)
                    if (
                        env is not None
                        and isinstance(env.payload, TickCompleted)
                        and env.payload.tick >= tick
                    ):
                        announced = True
                if announced:
                    break

    # world
    def state(self, agent: str | None = None, *, private: bool = False, events: int = 10) -> TownStateView:
        msg = GetTownState(agent=agent, include_private=private, events=events)
        return self._ask("world", msg, TownStateView)  # type: ignore[return-value]

    def inject(self, event: InjectEvent) -> EventAccepted:
        return self._ask("world", event, EventAccepted)  # type: ignore[return-value]

    def export(self, *, timeout: float = 60.0) -> TownSnapshot:
        reply: SnapshotData = self._ask(  # type: ignore[assignment]
            "world", ExportSnapshot(mind_timeout=max(1.0, timeout / 2)), SnapshotData, timeout=timeout
        )
        return TownSnapshot.from_bytes(reply.data)


def import_snapshot(bus: Bus, snapshot: TownSnapshot, base: TownConfig | None = None) -> TownConfig:
    """Make ``bus``'s namespace a fork of ``snapshot``: the town's config, the world's state, the
    clock's and every agent's. The namespace must hold no town yet (pick a new one to fork).
    The fork's clock starts paused: ``step`` or ``resume`` it."""
    if stored_config(bus) is not None:
        raise TownRequestError(
            f"namespace {bus.namespace!r} already holds a town; import into a new --namespace"
        )
    fields = {} if base is None else base.model_dump(exclude={"definition", "seed"})
    config = TownConfig(definition=snapshot.definition, seed=snapshot.world.seed, **fields)
    t = bus.transport
    t.set(bus.keys.state("world"), snapshot.world.model_dump_json().encode())
    for slug, mind in snapshot.minds.items():
        t.set(bus.keys.state(agent_address(slug)), mind.model_dump_json().encode())
    clock = ClockState(
        next_tick=snapshot.world.tick,
        completed=snapshot.world.tick - 1,
        paused=True,
        ticks_per_second=config.ticks_per_second,
    )
    t.set(bus.keys.state(CLOCK), clock.model_dump_json().encode())
    # The config goes last: a daemon that sees it finds every state already in place.
    if not t.set_if_absent(bus.keys.kv(CONFIG_KEY), config.model_dump_json().encode()):
        raise TownRequestError(f"namespace {bus.namespace!r} was claimed by another town during the import")
    return config
