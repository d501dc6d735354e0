"""The agent-state registry: the five implicit-intent tools of the paper's Appendix A5.

Disjoint from the environment registry by design: these probe individual agents, by name,
rather than the world from the asker's point of view. Names (the release's in brackets):

- ``agent.all`` (get_all_agents): every agent's location and action. Public.
- ``agent.nearby`` (get_nearby_agents): the agents at a place. Public.
- ``agent.plan_of`` (get_agent_plan): a named agent's plan. Public: it never holds the
  unspoken goal (the release's v2 tool returned it; SOURCE.md lists that as a bug).
- ``agent.private_state`` (get_agent_private_state): availability, emotional state, unspoken
  goal. The only way to read them.
- ``agent.belief_about`` (get_agent_belief_about): what a believer last took to be true of a
  target. The only way to read beliefs.

The release names coincide with two of the environment registry's aliases (get_nearby_agents,
get_agent_plan), as in the release itself: each registry resolves names within itself.

Disclosure costs extend the environment scale (0 observable, 1 moderate, 2 high) by one step:
3 for an agent's private state, the ground truth of its mind that nobody else can observe; a
belief costs 2, since it is the believer's private view but second-hand (possibly stale) about
the target; the paper's second-order queries forbid the private-state probe and require this one.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import AliasChoices, Field

from messages.probes import JsonObject, ProbePolicy, ProbeScene, RegistryName
from world.probes.common import (
    AgentArgs,
    NoArgs,
    agent_row,
    every_agent,
    focus_location,
    limit_field,
    plan_result,
    present_at,
)
from world.probes.names import NotFoundError, find_agent, find_location
from world.probes.registry import ProbeContext, ProbeRegistry, ToolSpec, release_tool

REGISTRY: RegistryName = "agent_state"


class AllArgs(NoArgs):
    limit: int = limit_field(50, "agents")


class NearbyArgs(NoArgs):
    location: str | None = Field(
        default=None,
        min_length=1,
        description="A named place. Default: the asker's location, else where most agents are.",
    )


class BeliefArgs(NoArgs):
    believer: str = Field(
        min_length=1,
        validation_alias=AliasChoices("believer", "agent_name", "agent"),
        description="The agent whose belief is asked for.",
    )
    target: str = Field(
        min_length=1,
        validation_alias=AliasChoices("target", "about", "target_name"),
        description="The agent the belief is about.",
    )


def all_agents(scene: ProbeScene, ctx: ProbeContext, args: AllArgs) -> JsonObject:
    return every_agent(scene, args.limit)


def nearby(scene: ProbeScene, ctx: ProbeContext, args: NearbyArgs) -> JsonObject:
    if args.location is not None:
        where: str | None = find_location(scene, args.location)
    elif ctx.asker is not None:
        where = scene.agents[ctx.asker].location
    else:
        where = focus_location(scene)
    if where is None:
        raise NotFoundError("no place to look at: give a location")
    here = present_at(scene, where)
    return {"location": where, "agents": [agent_row(a) for a in here], "count": len(here)}


def plan_of(scene: ProbeScene, ctx: ProbeContext, args: AgentArgs) -> JsonObject:
    return plan_result(scene.agents[find_agent(scene, args.agent_name)], scene)


def private_state(scene: ProbeScene, ctx: ProbeContext, args: AgentArgs) -> JsonObject:
    name = find_agent(scene, args.agent_name)
    facts = scene.agents[name].private
    if facts is None:
        raise NotFoundError(f"no private state is recorded for {name} in this scene")
    return {"agent": name, **facts.model_dump(mode="json", exclude_none=True)}


def belief_about(scene: ProbeScene, ctx: ProbeContext, args: BeliefArgs) -> JsonObject:
    believer = find_agent(scene, args.believer, role="believer")
    target = find_agent(scene, args.target, role="target")
    if believer == target:
        raise NotFoundError(f"{believer}'s view of themself is private state: use agent.private_state")
    belief = scene.agents[believer].beliefs.get(target)
    if belief is None:
        raise NotFoundError(f"{believer} has no belief recorded about {target}")
    return {
        "believer": believer,
        "target": target,
        "belief": belief.model_dump(mode="json", exclude_none=True),
    }


def agent_state_tools() -> list[ToolSpec[Any]]:
    spec = functools.partial(release_tool, registry=REGISTRY)

    return [
        # Everyone's whereabouts at once: 1, as the environment's agents summary.
        spec(
            "agent.all",
            "get_all_agents",
            "Every agent's public state: location and current action.",
            AllArgs,
            all_agents,
            disclosure=1,
            private=False,
        ),
        # Who is at one place, visible to anyone there: 0.
        spec(
            "agent.nearby",
            "get_nearby_agents",
            "The agents at a place (default: the asker's, else the busiest) with their actions.",
            NearbyArgs,
            nearby,
            disclosure=0,
            private=False,
        ),
        # A schedule says where someone will be: 1. Public; never the unspoken goal.
        spec(
            "agent.plan_of",
            "get_agent_plan",
            "A named agent's public plan for the day and the step under way now.",
            AgentArgs,
            plan_of,
            disclosure=1,
            private=False,
        ),
        # The ground truth of someone's mind: 3, the highest.
        spec(
            "agent.private_state",
            "get_agent_private_state",
            "A named agent's private state: availability, emotional state, unspoken goal.",
            AgentArgs,
            private_state,
            disclosure=3,
            private=True,
        ),
        # The believer's private, possibly stale view of the target: 2.
        spec(
            "agent.belief_about",
            "get_agent_belief_about",
            "What one agent (the believer) currently believes about another's availability and mood; "
            "it may differ from the truth.",
            BeliefArgs,
            belief_about,
            disclosure=2,
            private=True,
        ),
    ]


def agent_state_registry(policy: ProbePolicy | None = None) -> ProbeRegistry:
    return ProbeRegistry(REGISTRY, agent_state_tools(), policy)
