"""Talking to a running town from outside: the controls behind ``auratown state/step/inject/...``."""

from __future__ import annotations

import time
from typing import TypeVar

from actors.bus import Bus, UnexpectedReplyError
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


class StepTimeoutError(TownRequestError, TimeoutError):
    """The ticks asked for did not complete within the wait."""

    def __init__(self, tick: int, timeout: float) -> None:
        super().__init__(f"tick {tick} did not complete within {timeout:g}s")
        self.tick = tick
        self.timeout = timeout


STEP_WAIT = 300.0
"""Seconds ``TownClient.step`` waits for its last tick unless told otherwise."""

M = TypeVar("M", bound=Message)


class TownClient:
    def __init__(self, bus: Bus, *, timeout: float = 10.0) -> None:
        self.bus = bus
        self.timeout = timeout

    def ask(self, recipient: str, msg: Message, expect: type[M], timeout: float | None = None) -> M:
        """Ask one of the town's actors for an ``expect``: a ``Rejected`` (or another reply) raises
        ``TownRequestError`` with the reason; no reply in time, ``AskTimeoutError``."""
        try:
            return self.bus.ask(recipient, msg, expect=expect, timeout=timeout or self.timeout)
        except UnexpectedReplyError as exc:
            if isinstance(exc.reply, Rejected):
                raise TownRequestError(exc.reply.reason) from None
            raise TownRequestError(str(exc)) from None

    # clock
    def status(self) -> ClockStatus:
        return self.ask(CLOCK, GetClockStatus(), ClockStatus)

    def pause(self) -> ClockStatus:
        return self.ask(CLOCK, Pause(), ClockStatus)

    def resume(self) -> ClockStatus:
        return self.ask(CLOCK, Resume(), ClockStatus)

    def set_speed(self, ticks_per_second: float) -> ClockStatus:
        return self.ask(CLOCK, SetSpeed(ticks_per_second=ticks_per_second), ClockStatus)

    def step(self, count: int, *, wait: float | None = STEP_WAIT) -> ClockStatus:
        """Run ``count`` more ticks (even paused) and return once the last of them completed,
        within ``wait`` seconds (else ``StepTimeoutError``). ``wait=None`` returns as soon as the
        clock accepted the steps; ``status.target`` is then the tick to ``wait_for_tick`` on."""
        status = self.ask(CLOCK, Step(count=count), ClockStatus)
        if wait is not None and status.target is not None:
            self.wait_for_tick(status.target, timeout=wait)
        return status

    def wait_for_tick(self, tick: int, *, timeout: float) -> None:
        """Block until the clock has recorded tick ``tick`` as completed (``StepTimeoutError``
        after ``timeout`` seconds).

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
                    raise StepTimeoutError(tick, timeout)
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
        return self.ask("world", msg, TownStateView)

    def inject(self, event: InjectEvent) -> EventAccepted:
        return self.ask("world", event, EventAccepted)

    def export(self, *, timeout: float = 60.0) -> TownSnapshot:
        reply = self.ask(
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
