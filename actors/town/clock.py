"""``clock``: paces the town. Sends Tick(n) to the world, waits for its TickCompleted, then sends
the next one when its speed allows, unless paused (``Step`` runs ticks even while paused).

The decision of what to do is ``next_action``, a pure function of the clock's state and the
time; the actor only persists the state, keeps a timer and sends what the function says.

The world's tick is the authority. When Redis comes back without its last writes (an OS crash
under ``appendfsync everysec``), the clock finds its stored state is not the one it last committed
(it checks before every message, and every ``VERIFY_EVERY`` seconds while it waits for the world):
it goes back to what Redis holds, records a repair and sends the awaited tick again at once. A
world that is not at the tick it is sent tells the clock where it is (a ``TickCompleted`` sent to
the clock's inbox, not published), and the clock adopts that position, recorded as a repair too.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import ClassVar

import structlog
from pydantic import BaseModel, ConfigDict

from actors.bus import Bus
from actors.runtime import Context, on
from actors.runtime._scheduler import Scheduler
from actors.town._config import TownConfig
from actors.town._stored import StoreGuardedActor
from messages.town import (
    ClockStatus,
    ClockWake,
    GetClockStatus,
    Pause,
    Resume,
    SetSpeed,
    Step,
    Tick,
    TickCompleted,
)

log = structlog.get_logger("auratown.clock")

CLOCK = "clock"
WAKE_RETRY_S = 1.0
"""Seconds before a wake-up that could not be sent (Redis away) is tried again."""
VERIFY_EVERY = 2.0
"""Seconds between checks, while a tick is awaited, that Redis still holds the clock's state."""
REPAIRS_KEPT = 20

WORLD = "world"


class ClockState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    next_tick: int = 0
    completed: int = -1
    awaiting: int | None = None
    paused: bool = False
    ticks_per_second: float = 1.0
    steps_pending: int = 0
    sent_at: float = 0.0
    """Wall time the last tick was sent (paces the next one; detects a stuck world)."""
    repairs: int = 0
    """Times the clock and the world were reconciled (Redis lost writes, or they disagreed)."""
    repair_log: list[str] = []  # pydantic copies mutable defaults
    """The last ``REPAIRS_KEPT`` repairs, what was found and what was done."""


@dataclass(frozen=True)
class NextAction:
    send: int | None = None
    """Send this tick now."""
    resend: int | None = None
    """Send the awaited tick again: the world has not completed it for too long."""
    wake_at: float | None = None
    """Nothing to do before this wall time."""


def next_action(state: ClockState, now: float, resend_after: float) -> NextAction:
    if state.awaiting is not None:
        stuck_at = state.sent_at + resend_after
        return NextAction(resend=state.awaiting) if now >= stuck_at else NextAction(wake_at=stuck_at)
    if state.steps_pending > 0:
        return NextAction(send=state.next_tick)
    if state.paused:
        return NextAction()
    if state.ticks_per_second > 0:
        due = state.sent_at + 1.0 / state.ticks_per_second
        if now < due:
            return NextAction(wake_at=due)
    return NextAction(send=state.next_tick)


def adopt(state: ClockState, world_completed: int) -> str | None:
    """The world says its last completed tick is ``world_completed``: take that position.
    Returns what changed (a repair to record), or None if the clock already agreed.

    Steps run while paused are owed ticks: a world behind the clock owes the ticks again, a
    world ahead of it has run some of them already."""
    if state.completed == world_completed and state.awaiting in (None, world_completed + 1):
        return None
    before = f"completed {state.completed}, awaiting {state.awaiting}"
    if state.paused or state.steps_pending:
        # Ticks [0, next_tick) were sent; the world has done [0, world_completed].
        state.steps_pending = max(0, state.steps_pending + state.next_tick - 1 - world_completed)
    state.completed = world_completed
    state.next_tick = world_completed + 1
    state.awaiting = None
    state.sent_at = 0.0
    return f"clock had {before}; the world has completed {world_completed}: adopted"


def record_repair(state: ClockState, what: str) -> None:
    state.repairs += 1
    state.repair_log = [*state.repair_log, what][-REPAIRS_KEPT:]


def completed(state: ClockState, tick: int) -> None:
    state.completed = max(state.completed, tick)
    state.next_tick = max(state.next_tick, tick + 1)
    if state.awaiting is not None and state.awaiting <= tick:
        state.awaiting = None


class ClockActor(StoreGuardedActor[ClockState]):
    state_model = ClockState
    topics = ("town.ticks",)
    stored_here: ClassVar[dict[tuple[str, str], int]] = {}

    def __init__(self, config: TownConfig) -> None:
        self.config = config
        self._now = time.time
        self._timer: Scheduler | None = None
        self._wake_due: float | None = None
        self._lock = threading.Lock()
        super().__init__(CLOCK)

    def initial_state(self) -> ClockState:
        return ClockState(ticks_per_second=self.config.ticks_per_second, paused=self.config.start_paused)

    def position(self) -> int:
        return self.state.completed

    def behind_stored(self, bus: Bus, stored_here: int) -> None:
        """Loaded a state behind what this process stored: Redis lost writes (or a commit did
        not apply). Record it and ask the world again for the awaited tick at once."""
        s = self.state
        s.sent_at = 0.0
        what = (
            f"the clock's stored state is behind what this process stored (completed {s.completed} < "
            f"{stored_here}): Redis lost writes or a commit did not apply; went on from it and asked "
            "the world again"
        )
        self._repaired(bus, what)

    def lost_writes(self, ctx: Context, lost: ClockState) -> None:
        """Every actor's stored state is from the same earlier moment: ask the world again for
        the awaited tick, at once."""
        s = self.state
        what = (
            f"Redis lost the clock's last writes (it had completed {lost.completed}, awaiting "
            f"{lost.awaiting}; Redis holds completed {s.completed}, awaiting {s.awaiting}): "
            "went back to what Redis holds and asked the world again"
        )
        s.sent_at = 0.0  # an awaited tick is sent again now: its message may be lost too
        self._repaired(ctx.bus, what)

    def _repaired(self, bus: Bus, what: str) -> None:
        record_repair(self.state, what)
        bus.count("town_repairs")
        log.warning("clock repaired", repair=what, repairs=self.state.repairs)

    def on_start(self, address: str, bus: Bus) -> None:
        self.guard_start(address, bus)
        self._timer = Scheduler(f"clock-timer-{bus.process_id}")
        self._wake_at(self._now())  # resume wherever the stored state left off

    def on_stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()  # pending wakes are dropped: a restarted clock re-plans from its state

    # ------------------------------------------------------------------ timer

    def _wake_at(self, when: float) -> None:
        with self._lock:
            if self._wake_due is not None and self._wake_due <= when:
                return  # an earlier wake is already set; it re-plans
            self._wake_due = when
        assert self._timer is not None
        self._timer.call_later(max(0.0, when - self._now()), lambda: self._fire(when))

    def _fire(self, when: float) -> None:
        with self._lock:
            if self._wake_due != when:
                return
            self._wake_due = None
        if self._bus is not None and not self._bus.closed:
            try:
                self._bus.tell(self._address, ClockWake(due=when), sender=self._address)
            except Exception as exc:  # noqa: BLE001 - Redis away longer than the transport waits
                # A lost wake-up would stall the town for good: try again until the bus is back.
                log.warning("clock wake-up not sent; retrying", error=repr(exc), retry_in=WAKE_RETRY_S)
                self._wake_at(self._now() + WAKE_RETRY_S)

    # ------------------------------------------------------------------ handlers

    def _advance(self, ctx: Context) -> None:
        s = self.state
        action = next_action(s, self._now(), self.config.resend_after)
        if action.resend is not None:
            log.warning("world has not completed the tick; sending it again", tick=action.resend)
            ctx.tell(WORLD, Tick(tick=action.resend), sim_time=action.resend)
            s.sent_at = self._now()
            self._wake_at(s.sent_at + min(self.config.resend_after, VERIFY_EVERY))
        elif action.send is not None:
            ctx.tell(WORLD, Tick(tick=action.send), sim_time=action.send)
            s.awaiting = action.send
            s.next_tick = action.send + 1
            s.sent_at = self._now()
            s.steps_pending = max(0, s.steps_pending - 1)
            self._wake_at(s.sent_at + min(self.config.resend_after, VERIFY_EVERY))
        elif action.wake_at is not None:
            if s.awaiting is not None:  # look again soon that Redis kept what we stored
                self._wake_at(min(action.wake_at, self._now() + VERIFY_EVERY))
            else:
                self._wake_at(action.wake_at)

    def _status(self, target: int | None = None) -> ClockStatus:
        s = self.state
        return ClockStatus(
            next_tick=s.next_tick,
            completed=s.completed,
            awaiting=s.awaiting,
            paused=s.paused,
            ticks_per_second=s.ticks_per_second,
            steps_pending=s.steps_pending,
            target=target,
        )

    @on(ClockWake)
    def wake(self, ctx: Context, msg: ClockWake) -> None:
        self._advance(ctx)

    @on(TickCompleted)
    def tick_completed(self, ctx: Context, msg: TickCompleted) -> None:
        if ctx.envelope.recipient == ctx.address:
            # Sent to the clock itself, not published: the world's position, which wins, unless
            # it answers a tick the clock no longer waits for (a stale or redelivered one).
            answered = ctx.envelope.sim_time
            awaiting = self.state.awaiting
            what = None if awaiting not in (None, answered) else adopt(self.state, msg.tick)
            if what is not None:
                self._repaired(ctx.bus, what)
        else:
            completed(self.state, msg.tick)
        self._advance(ctx)

    @on(Pause)
    def pause(self, ctx: Context, msg: Pause) -> ClockStatus:
        self.state.paused = True
        return self._status()

    @on(Resume)
    def resume(self, ctx: Context, msg: Resume) -> ClockStatus:
        self.state.paused = False
        self._advance(ctx)
        return self._status()

    @on(SetSpeed)
    def set_speed(self, ctx: Context, msg: SetSpeed) -> ClockStatus:
        self.state.ticks_per_second = msg.ticks_per_second
        self._advance(ctx)
        return self._status()

    @on(Step)
    def step(self, ctx: Context, msg: Step) -> ClockStatus:
        s = self.state
        # Ticks already sent or owed by earlier steps run first; these come after them.
        last_owed = (s.awaiting if s.awaiting is not None else s.completed) + s.steps_pending
        s.steps_pending += msg.count
        target = last_owed + msg.count
        self._advance(ctx)
        return self._status(target)

    @on(GetClockStatus)
    def status(self, ctx: Context, msg: GetClockStatus) -> ClockStatus:
        return self._status()
