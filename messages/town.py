"""Messages of AURATown: the tick protocol, perceptions and decisions, events, state views and
the clock's controls."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from messages._base import Message
from messages._registry import message

InjectableKind = Literal[
    "argument", "emergency", "accident", "celebration", "announcement", "weather", "outage", "delivery"
]
"""Kinds of environment events that may be injected into a town."""
EventKind = Literal[InjectableKind, "conversation", "assistant", "plan"]
INJECTABLE_KINDS: tuple[str, ...] = get_args(InjectableKind)


# ---------------------------------------------------------------- events


@message("town.event", 1)
class TownEvent(Message):
    """Something that happened in the town; published on the ``town.events`` topic."""

    id: int
    tick: int
    kind: EventKind
    description: str
    location: str | None = None
    """None: a town-wide event that every agent perceives."""
    participants: tuple[str, ...] = ()
    source: Literal["world", "environment"] = "world"

    @property
    def text(self) -> str:
        return f"{self.kind}: {self.description}"


@message("town.inject_event", 1)
class InjectEvent(Message):
    """An environment-triggered event for the world to log now (``auratown inject``)."""

    kind: InjectableKind
    description: str = Field(min_length=1, max_length=500)
    location: str | None = None
    participants: tuple[str, ...] = ()


@message("town.event_accepted", 1)
class EventAccepted(Message):
    event: TownEvent
    witnesses: tuple[str, ...]


@message("town.rejected", 1)
class Rejected(Message):
    """A town request refused: an invalid event, an unknown agent, an incomplete export."""

    reason: str


class PlanChange(Message):
    """A change to one agent's plan for one day: from ``start`` until ``end`` (minutes of the day)
    it does ``action`` at ``location`` instead of what its schedule says, for ``reason``."""

    id: int
    """The id of the ``plan`` event that announced it (changes apply in this order)."""
    day: int
    start: int
    end: int
    location: str
    action: str
    reason: str


class ConversationRecord(Message):
    tick: int
    location: str
    participants: tuple[str, ...]
    topic: str
    lines: tuple[str, ...]


# ---------------------------------------------------------------- the tick protocol


@message("town.tick", 1)
class Tick(Message):
    """Clock -> world: run tick ``tick`` (absolute; 0 = day 0, 06:00)."""

    tick: int = Field(ge=0)


@message("town.tick_completed", 1)
class TickCompleted(Message):
    """World -> topic ``town.ticks``: tick ``tick`` is applied and stored."""

    tick: int
    day: int
    time: str
    digest: str
    """sha256 of the world state after the tick: equal digests, equal towns."""
    missed: tuple[str, ...] = ()
    """Agents that missed the decision deadline and kept their scheduled action."""
    events: tuple[TownEvent, ...] = ()
    conversations: int = 0


@message("town.perception", 1)
class Perception(Message):
    """World -> ``agent.<slug>`` (an ask): what the agent perceives; the reply is a ``Decision``."""

    tick: int
    day: int
    time: str
    minute: int
    """Absolute simulation minute (day * 1440 + minute of day)."""
    x: int
    y: int
    location: str | None
    action: str
    target: str | None
    nearby: tuple[str, ...] = ()
    events: tuple[TownEvent, ...] = ()
    conversations: tuple[ConversationRecord, ...] = ()
    plan_changes: tuple[PlanChange, ...] = ()
    """Today's changes to the agent's plan (the schedule mind follows its schedule with them)."""


@message("town.decision", 1)
class Decision(Message):
    tick: int
    action: str = Field(min_length=1, max_length=300)
    target: str
    """The location to be at (or head for)."""
    mind: str = "schedule"


# ---------------------------------------------------------------- reading the town


class BeliefView(Message):
    location: str | None
    action: str
    availability: str
    emotional_state: str
    observed_tick: int
    heard_from: str | None = None
    """None: seen together; else who told of it in a conversation (a slug)."""


class PrivateView(Message):
    availability: str
    emotional_state: str
    unspoken_goal: str | None
    rule: str
    beliefs_about_others: dict[str, BeliefView] = {}  # pydantic copies mutable defaults


class AgentView(Message):
    slug: str
    name: str
    x: int
    y: int
    location: str | None
    action: str
    target: str | None
    nearby: tuple[str, ...]
    private: PrivateView | None = None


@message("town.record_exchange", 1)
class RecordExchange(Message):
    """``env`` -> ``world``: a question the assistant answered, logged as an event that only the
    asker perceives (so it lands in the asker's memory on the next tick)."""

    asker: str
    query: str
    answer: str


@message("town.get_state", 1)
class GetTownState(Message):
    agent: str | None = None
    """An agent's name or slug: only that agent."""
    include_private: bool = False
    events: int = Field(default=10, ge=0, le=1000)


@message("town.state", 1)
class TownStateView(Message):
    town: str
    seed: int
    tick: int
    """The next tick to run."""
    day: int
    time: str
    """Time of the last applied tick (or of tick 0 before any)."""
    digest: str
    agents: tuple[AgentView, ...]
    events: tuple[TownEvent, ...]


@message("town.export_snapshot", 1)
class ExportSnapshot(Message):
    """Ask the world for the whole town (world state and every agent's mind) as one snapshot."""

    mind_timeout: float = Field(default=10.0, gt=0)


@message("town.snapshot", 1)
class SnapshotData(Message):
    tick: int
    data: str
    """The snapshot's canonical JSON (``world.TownSnapshot``)."""


@message("town.get_mind", 1)
class GetMindState(Message):
    pass


@message("town.mind_state", 1)
class MindStateData(Message):
    slug: str
    data: str
    """The agent's mind state as JSON (``world.AgentMindState``)."""


# ---------------------------------------------------------------- clock controls


@message("clock.pause", 1)
class Pause(Message):
    pass


@message("clock.resume", 1)
class Resume(Message):
    pass


@message("clock.set_speed", 1)
class SetSpeed(Message):
    ticks_per_second: float = Field(ge=0, le=10_000)
    """0: as fast as the world can go."""


@message("clock.step", 1)
class Step(Message):
    """Run ``count`` more ticks now, even while paused, as fast as possible."""

    count: int = Field(ge=1, le=1_000_000)


@message("clock.get_status", 1)
class GetClockStatus(Message):
    pass


@message("clock.wake", 1)
class ClockWake(Message):
    """The clock's own timer: time to consider sending the next tick."""

    due: float = Field(default=0.0, allow_inf_nan=False)


@message("clock.status", 1)
class ClockStatus(Message):
    next_tick: int
    """The next tick the clock will send."""
    completed: int
    """The last tick the world completed (-1: none)."""
    awaiting: int | None
    paused: bool
    ticks_per_second: float = Field(ge=0, le=10_000)
    steps_pending: int
    target: int | None = None
    """For a Step reply: the tick whose completion ends the steps."""
