"""How a town agent chooses what to do: the ``Mind`` protocol and the deterministic schedule mind.

A mind turns a ``Perception`` into a ``Decision``. ``agent_turn`` wraps any mind with what every
agent does each tick regardless of its mind: record the perception in its memory stream (with
a plan at the start of each day) and answer a repeated perception with the same decision, so a
redelivered request changes nothing.

A mind may also implement the optional hooks ``ImportanceScorer``, ``Reflector`` and
``FallbackReporter`` (a model-backed mind does); without them the memory stream's keyword
heuristic scores importance and words reflections, exactly as for the schedule mind.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, cast, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from messages.town import Decision, Perception
from world.clock import MINUTES_PER_DAY, format_minute
from world.definition import AgentProfile, TownDefinition
from world.memory import MemoryDraft, MemoryItem, MemoryKind, MemoryStream, ReflectionHook, importance
from world.plans import PlanStep, apply_changes, day_plan, under_way


class AgentMindState(BaseModel):
    """What ``agent.<slug>`` owns and persists: its memory stream and its last decision."""

    model_config = ConfigDict(extra="forbid")

    slug: str
    memory: MemoryStream = Field(default_factory=MemoryStream)
    last_tick: int = -1
    last_decision: Decision | None = None
    plan_day: int = -1
    fallbacks: dict[str, int] = Field(default_factory=dict)
    """Answers a model-backed mind could not give (failed, invalid or late), by stage, that fell
    back to the deterministic default (``FallbackReporter``); always empty for the schedule mind."""


class Mind(Protocol):
    name: str

    def plan(self, day: int) -> list[PlanStep]:
        """The agent's intended day (recorded in its memory each morning)."""
        ...

    def decide(self, perception: Perception, memory: MemoryStream) -> Decision: ...


MindFactory = Callable[[TownDefinition, AgentProfile, int], Mind]


@runtime_checkable
class ImportanceScorer(Protocol):
    """Optional hook: rates new memories (1-10) instead of the keyword heuristic."""

    def score_importance(self, drafts: Sequence[MemoryDraft], memory: MemoryStream) -> Sequence[int | None]:
        """One weight per draft (all the memories one turn adds, in order); None keeps a draft's
        heuristic importance."""
        ...


@runtime_checkable
class Reflector(Protocol):
    """Optional hook: words the reflection the memory stream makes every few observations."""

    def write_reflection(self, recent: Sequence[MemoryItem], draft: str, minute: int) -> str | None:
        """The reflection on ``recent`` observations; None keeps the heuristic ``draft``."""
        ...


@runtime_checkable
class FallbackReporter(Protocol):
    """Optional hook: a mind whose answers may fall back to the deterministic default says how
    often, so the agent's state counts it (``AgentMindState.fallbacks``)."""

    def take_fallbacks(self) -> Mapping[str, int]:
        """Fallbacks by stage since the last call (the mind forgets them once taken)."""
        ...


class ScheduleMind:
    """Follows the agent's daily schedule with the day's changes the world tells it of (the
    deterministic, offline mind): at each step's start it sets off for the step's place and stays
    there until the next step starts."""

    name = "schedule"

    def __init__(self, definition: TownDefinition, profile: AgentProfile, seed: int) -> None:
        self.definition = definition
        self.profile = profile
        self.seed = seed
        self._plans: dict[int, list[PlanStep]] = {}

    def plan(self, day: int) -> list[PlanStep]:
        plan = self._plans.get(day)
        if plan is None:
            self._plans = {day: day_plan(self.profile, day, self.seed)}  # one day cached is enough
            plan = self._plans[day]
        return plan

    def decide(self, perception: Perception, memory: MemoryStream) -> Decision:
        minute = perception.minute - perception.day * MINUTES_PER_DAY
        plan = self.plan(perception.day)
        if perception.plan_changes:
            plan = apply_changes(plan, perception.plan_changes)
        activity = under_way(plan, minute)
        return Decision(
            tick=perception.tick, action=activity.action, target=activity.location, mind=self.name
        )


def schedule_mind(definition: TownDefinition, profile: AgentProfile, seed: int) -> Mind:
    return ScheduleMind(definition, profile, seed)


def observe(
    state: AgentMindState,
    perception: Perception,
    plan: list[PlanStep] | None = None,
    *,
    scorer: ImportanceScorer | None = None,
    reflector: Reflector | None = None,
) -> None:
    """Record a perception in the memory stream: the day's plan first thing, then what was seen.
    ``scorer`` rates the turn's memories in one go and ``reflector`` words a reflection falling due;
    without them the memory stream's heuristics do."""
    memory = state.memory
    minute = perception.minute
    entries: list[tuple[MemoryKind, str]] = []
    if plan is not None and perception.day != state.plan_day:
        state.plan_day = perception.day
        steps = "; ".join(f"{format_minute(m)} {a.action} at {a.location}" for m, a in plan)
        entries.append(("plan", f"Plan for day {perception.day}: {steps}"))
    where = perception.location or "the street"
    with_whom = f" with {', '.join(perception.nearby)}" if perception.nearby else ""
    entries.append(("observation", f"{perception.time} at {where}{with_whom}: {perception.action}"))
    for event in perception.events:
        if event.kind == "conversation":
            continue  # recorded below from the agent's own side
        place = f" at {event.location}" if event.location else " in town"
        entries.append(("observation", f"{perception.time}{place}, {event.kind}: {event.description}"))
    for conv in perception.conversations:
        others = [p for p in conv.participants if p != state.slug]
        entries.append(
            (
                "conversation",
                f"Talked with {', '.join(others)} at {conv.location} about {conv.topic}: "
                + " ".join(conv.lines),
            )
        )
    weights = _weights(scorer, entries, minute, memory)
    reflect: ReflectionHook | None = reflector.write_reflection if reflector is not None else None
    for (kind, text), weight in zip(entries, weights, strict=True):
        memory.add(kind, text, minute, weight, reflect)


def _weights(
    scorer: ImportanceScorer | None, entries: list[tuple[MemoryKind, str]], minute: int, memory: MemoryStream
) -> list[int | None]:
    if scorer is None:
        return [None] * len(entries)
    drafts = [MemoryDraft(kind, text, minute, importance(text)) for kind, text in entries]
    weights = list(scorer.score_importance(drafts, memory))
    # A hook answering for other memories than it was shown changes nothing: heuristics, all.
    return weights if len(weights) == len(entries) else [None] * len(entries)


@functools.cache
def _hooks(kind: type) -> tuple[bool, bool, bool]:
    """Which optional hooks a mind class has (a protocol check per turn costs more than a turn)."""
    return issubclass(kind, ImportanceScorer), issubclass(kind, Reflector), issubclass(kind, FallbackReporter)


def _count_fallbacks(state: AgentMindState, mind: Mind) -> None:
    if _hooks(type(mind))[2]:
        for stage, count in cast(FallbackReporter, mind).take_fallbacks().items():
            if count:
                state.fallbacks[stage] = state.fallbacks.get(stage, 0) + count


def agent_turn(state: AgentMindState, mind: Mind, perception: Perception) -> Decision:
    """One tick of an agent: remember, then decide. A perception already handled (a redelivery
    after a crash) gets the decision it got before and is not remembered twice."""
    if perception.tick <= state.last_tick and state.last_decision is not None:
        if state.last_decision.tick == perception.tick:
            return state.last_decision
        # An older tick than our last: the world is replaying; answer without recording.
        replayed = mind.decide(perception, state.memory)
        _count_fallbacks(state, mind)
        return replayed
    scores, reflects, _ = _hooks(type(mind))
    observe(
        state,
        perception,
        mind.plan(perception.day),
        scorer=cast(ImportanceScorer, mind) if scores else None,
        reflector=cast(Reflector, mind) if reflects else None,
    )
    decision = mind.decide(perception, state.memory)
    if decision.tick != perception.tick:
        decision = decision.model_copy(update={"tick": perception.tick})
    _count_fallbacks(state, mind)
    state.last_tick = perception.tick
    state.last_decision = decision
    return decision
