"""The environment registry: the eight factual-grounding tools of the paper's Table 8.

They take the asker's point of view ("own location", "own plan", "my memories") and read only
public facts, so each is marked ``private=False`` and runs on ``scene.public()``.

Disclosure costs follow the release's scale (0 = observable by anyone present, 1 = moderate:
where others are, what they plan, what happened around town, 2 = high: the asker's own memory
stream, conversations included), so a condition that fires every tool pays for it.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import Field

from messages.probes import JsonObject, ProbePolicy, ProbeScene, RegistryName
from world.probes.common import (
    NoArgs,
    agent_row,
    every_agent,
    limit_field,
    part_of_day,
    place_row,
    plan_result,
    present_at,
)
from world.probes.names import NotFoundError, find_location
from world.probes.registry import ProbeContext, ProbeRegistry, ToolSpec, release_tool

REGISTRY: RegistryName = "environment"


class NearbyArgs(NoArgs):
    limit: int = limit_field(10, "agents")


class SummaryArgs(NoArgs):
    limit: int = limit_field(25, "agents")


class MemoryArgs(NoArgs):
    limit: int = limit_field(10, "memories, the most recent")


class EventArgs(NoArgs):
    limit: int = limit_field(10, "events, the most recent")


class LocationArgs(NoArgs):
    location: str | None = Field(
        default=None,
        min_length=1,
        description="A named place (any case; 'library' finds 'Town Library'). Default: the asker's own.",
    )


def world_time(scene: ProbeScene, ctx: ProbeContext, args: NoArgs) -> JsonObject:
    return {"time": scene.time, "day": scene.day, "part_of_day": part_of_day(scene.time)}


def world_location(scene: ProbeScene, ctx: ProbeContext, args: NoArgs) -> JsonObject:
    me = ctx.me(scene)
    facts = scene.locations.get(me.location) if me.location else None
    return {
        "agent": me.name,
        "location": me.location,
        "action": me.action,
        "place": None if facts is None else place_row(facts),
        "agents_here": [
            agent_row(a, location=False) for a in present_at(scene, me.location, without=me.name)
        ],
    }


def nearby_agents(scene: ProbeScene, ctx: ProbeContext, args: NearbyArgs) -> JsonObject:
    me = ctx.me(scene)
    here = present_at(scene, me.location, without=me.name)
    return {
        "agent": me.name,
        "location": me.location,
        "agents": [agent_row(a, location=False) for a in here[: args.limit]],
        "count": len(here),
    }


def agents_summary(scene: ProbeScene, ctx: ProbeContext, args: SummaryArgs) -> JsonObject:
    return every_agent(scene, args.limit)


def recent_memories(scene: ProbeScene, ctx: ProbeContext, args: MemoryArgs) -> JsonObject:
    me = ctx.me(scene)
    memories = scene.memories.get(me.name, [])
    return {
        "agent": me.name,
        "memories": [m.model_dump(mode="json", exclude_none=True) for m in memories[-args.limit :]],
        "count": len(memories),
    }


def recent_events(scene: ProbeScene, ctx: ProbeContext, args: EventArgs) -> JsonObject:
    events = scene.events[-args.limit :]
    return {
        "events": [e.model_dump(mode="json", exclude_none=True) for e in events],
        "count": len(scene.events),
    }


def own_plan(scene: ProbeScene, ctx: ProbeContext, args: NoArgs) -> JsonObject:
    return plan_result(ctx.me(scene), scene)


def location_info(scene: ProbeScene, ctx: ProbeContext, args: LocationArgs) -> JsonObject:
    if args.location is not None:
        name = find_location(scene, args.location)
    else:
        me = ctx.me(scene)
        if me.location is None:
            raise NotFoundError(f"{me.name} is between two places: give a location")
        name = me.location
    facts = scene.locations.get(name)
    here = present_at(scene, name)
    return {
        "location": name,
        "place": None if facts is None else place_row(facts),
        "agents": [agent_row(a, location=False) for a in here],
        "count": len(here),
    }


def environment_tools() -> list[ToolSpec[Any]]:
    spec = functools.partial(release_tool, registry=REGISTRY)

    return [
        # The clock is public to everyone: 0.
        spec("world.time", "get_time", "The simulation time and day.", NoArgs, world_time, disclosure=0),
        # What the asker sees around itself: 0.
        spec(
            "world.location",
            "get_location",
            "The asker's location: the place, its details, and who else is there doing what.",
            NoArgs,
            world_location,
            disclosure=0,
        ),
        spec(
            "world.nearby_agents",
            "get_nearby_agents",
            "The agents at the asker's location, with what each is doing.",
            NearbyArgs,
            nearby_agents,
            disclosure=0,
        ),
        # Where everyone in town is: more than one could see from where one stands: 1.
        spec(
            "world.agents_summary",
            "get_all_agents",
            "Every agent's location and current action.",
            SummaryArgs,
            agents_summary,
            disclosure=1,
        ),
        # The asker's own memory stream (observations, conversations, reflections): 2, the highest.
        spec(
            "memory.recent",
            "get_recent_memories",
            "The asker's most recent memories (observations, conversations, reflections, plans).",
            MemoryArgs,
            recent_memories,
            disclosure=2,
            needs_memories=True,
        ),
        # Who did what where around town, conversations included: 1.
        spec(
            "world.events_recent",
            "get_recent_events",
            "Recent events in town (conversations, announcements, incidents), oldest first.",
            EventArgs,
            recent_events,
            disclosure=1,
        ),
        # A schedule is public but says where someone will be: 1.
        spec(
            "agent.plan",
            "get_agent_plan",
            "The asker's plan for the day and the step under way now.",
            NoArgs,
            own_plan,
            disclosure=1,
        ),
        # A place's public facts and who is there: 0.
        spec(
            "world.location_info",
            "get_location_info",
            "Details of a named place (type, description, hours, open now) and who is there doing what.",
            LocationArgs,
            location_info,
            disclosure=0,
        ),
    ]


def environment_registry(policy: ProbePolicy | None = None) -> ProbeRegistry:
    return ProbeRegistry(REGISTRY, environment_tools(), policy)
