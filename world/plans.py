"""An agent's plan for a day: its schedule (alternatives drawn by the seed) with the day's changes
applied, and which step is under way at a given minute.

A step runs from its start until the next step starts: the agent sets off for a step's place when
the step starts and stays there until the next one begins (travel takes what the distance needs,
``world.movement``). A ``PlanChange`` replaces the steps of one span of one day (an invitation
accepted in a conversation, a place avoided after an emergency) and hands back to the step that
would have been under way when the span ends.
"""

from __future__ import annotations

from collections.abc import Iterable

from messages.town import PlanChange
from world.clock import DAY_END_MINUTE, MINUTES_PER_TICK
from world.definition import Activity, AgentProfile, TownDefinition
from world.movement import spot, travel_ticks
from world.rng import derive_rng

PlanStep = tuple[int, Activity]
"""(minute of the day it starts, what and where)."""


def day_plan(profile: AgentProfile, day: int, seed: int) -> list[PlanStep]:
    """The agent's schedule for ``day``: each entry's activity, alternatives drawn by the seed."""
    rng = derive_rng(seed, "plan", profile.slug, day)
    plan = []
    for entry in profile.schedule:
        options = entry.activities
        activity = options[0] if len(options) == 1 else rng.choice(options)
        plan.append((entry.minute, activity))
    return plan


def under_way(plan: list[PlanStep], minute_of_day: int) -> Activity:
    """The step under way at ``minute_of_day``: the last one started by then (the first one before
    the plan's first step)."""
    current = plan[0][1]
    for start, activity in plan:
        if start > minute_of_day:
            break
        current = activity
    return current


def apply_changes(plan: list[PlanStep], changes: Iterable[PlanChange]) -> list[PlanStep]:
    """``plan`` with each change (in the order made) replacing the steps of its span; the step that
    was under way at the span's end resumes then."""
    steps = list(plan)
    for change in sorted(changes, key=lambda c: c.id):
        resume = under_way(steps, change.end) if steps else None
        kept = [(m, a) for m, a in steps if not change.start <= m < change.end]
        kept.append((change.start, Activity(location=change.location, action=change.action)))
        if resume is not None and change.end <= DAY_END_MINUTE and all(m != change.end for m, _ in kept):
            kept.append((change.end, resume))
        steps = sorted(kept, key=lambda s: s[0])
    return steps


def agent_plan(
    profile: AgentProfile, day: int, seed: int, changes: Iterable[PlanChange] = ()
) -> list[PlanStep]:
    """The plan the agent follows on ``day``: its schedule with that day's changes."""
    return apply_changes(day_plan(profile, day, seed), (c for c in changes if c.day == day))


def departure(  # noqa: PLR0917 - a pure function of exactly these facts
    definition: TownDefinition,
    profile: AgentProfile,
    plan: list[PlanStep],
    location: str,
    arrive_by: int,
    seed: int,
) -> int:
    """The latest minute (on a tick) to set off from where the plan has the agent just before
    ``arrive_by`` so as to be at ``location`` by then."""
    origin = under_way(plan, arrive_by - 1).location
    ticks = travel_ticks(
        spot(seed, profile.slug, definition.location(origin)),
        spot(seed, profile.slug, definition.location(location)),
    )
    # A move happens in the tick that starts at a minute: arriving at ``arrive_by`` takes ``ticks``
    # moves, the last of them in the tick starting at ``arrive_by``.
    return arrive_by - max(0, ticks - 1) * MINUTES_PER_TICK
