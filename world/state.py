"""The mutable state of a running town: what the world actor owns and snapshots every tick.

Public fields (position, location, action, who is nearby) are what any observer sees; the
``private`` part is only readable through probe tools. Beliefs are sparse: an agent holds a
belief about another only after they have shared a location, or after a third agent told it of
a sighting in a conversation (``Belief.heard_from``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from messages.town import ConversationRecord, PlanChange, TownEvent

UNKNOWN = "unknown"


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class Belief(_State):
    """What one agent last saw of another, when they were last together."""

    location: str | None = None
    action: str = UNKNOWN
    availability: str = UNKNOWN
    emotional_state: str = UNKNOWN
    observed_tick: int = -1
    heard_from: str | None = None
    """None: seen together; else the slug of the agent who told of it in a conversation."""


class PrivateState(_State):
    availability: str = "available"
    emotional_state: str = "neutral"
    unspoken_goal: str | None = None
    beliefs_about_others: dict[str, Belief] = Field(default_factory=dict)
    rule: str = "default"
    """The private-state rule that produced this state (explains it to a reader)."""


class AgentState(_State):
    slug: str
    name: str
    x: int
    y: int
    location: str | None
    """The named location whose rectangle holds the agent, or None on the way between two."""
    action: str
    target: str | None = None
    """Where the agent is heading (its current activity's location)."""
    missed_decisions: int = 0
    private: PrivateState = Field(default_factory=PrivateState)
    perceived: list[int] = Field(default_factory=list)
    """Ids of the last events this agent perceived, newest last (the stress rule's window)."""
    event_cursor: int = 0
    """Events up to this id have been delivered to the agent in a perception."""
    plan_changes: list[PlanChange] = Field(default_factory=list)
    """Changes to today's and tomorrow's plan (older days are dropped at the start of a day)."""


class WorldState(_State):
    seed: int
    tick: int = 0
    """The next tick to run (ticks 0..tick-1 are applied)."""
    agents: dict[str, AgentState] = Field(default_factory=dict)
    events: list[TownEvent] = Field(default_factory=list)
    next_event_id: int = 1
    conversations: list[ConversationRecord] = Field(default_factory=list)
    last_talked: dict[str, int] = Field(default_factory=dict)
    """Tick of the last conversation of each pair ``"a|b"`` (sorted slugs): the cooldown."""
    pair_topics: dict[str, list[str]] = Field(default_factory=dict)
    """The last topics each pair talked about (newest last): a pair does not go over them again."""
    missed_decisions: int = 0


def pair_key(a: str, b: str) -> str:
    return f"{a}|{b}" if a < b else f"{b}|{a}"
