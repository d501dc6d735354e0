"""Argument models and public fragments shared by the two registries' tools.

Every fragment here is built from public fields only (name, location, action, plan, a place's
facts): the private-state and belief tools build their own results.
"""

from __future__ import annotations

from collections import Counter

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from messages.probes import JsonObject, LocationFacts, PlanItem, ProbeScene, SceneAgent
from world.clock import parse_minute


class NoArgs(BaseModel):
    """A tool without arguments. Unknown arguments are refused, so a typo is reported rather than
    silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentArgs(NoArgs):
    agent_name: str = Field(
        min_length=1,
        validation_alias=AliasChoices("agent_name", "agent", "name"),
        description="The agent's name (full name, first name or slug; any case).",
    )


def limit_field(default: int, what: str) -> int:
    result: int = Field(default=default, ge=1, le=200, description=f"At most this many {what}.")
    return result


def agent_row(a: SceneAgent, *, location: bool = True) -> JsonObject:
    row: JsonObject = {"name": a.name}
    if location:
        row["location"] = a.location
    row["action"] = a.action
    return row


def every_agent(scene: ProbeScene, limit: int) -> JsonObject:
    """Every agent's public row (the first ``limit``) and their number: the release's
    get_all_agents, which both registries offer."""
    agents = list(scene.agents.values())
    return {"agents": [agent_row(a) for a in agents[:limit]], "count": len(agents)}


def plan_rows(plan: list[PlanItem]) -> list[JsonObject]:
    return [p.model_dump(mode="json", exclude_none=True) for p in plan]


def current_step(plan: list[PlanItem], hhmm: str) -> PlanItem | None:
    """The plan step under way at ``hhmm``: the last one started by then."""
    try:
        now = parse_minute(hhmm)
    except ValueError:
        return None
    current = None
    for step in plan:
        if step.time is None:
            continue
        try:
            started = parse_minute(step.time)
        except ValueError:
            continue
        if started <= now:
            current = step
    return current


def plan_result(agent: SceneAgent, scene: ProbeScene) -> JsonObject:
    step = current_step(agent.plan, scene.time)
    return {
        "agent": agent.name,
        "time": scene.time,
        "plan": plan_rows(agent.plan),
        "current": None if step is None else step.model_dump(mode="json", exclude_none=True),
    }


def place_row(facts: LocationFacts) -> JsonObject:
    return facts.model_dump(mode="json", exclude_none=True)


def present_at(scene: ProbeScene, location: str | None, *, without: str | None = None) -> list[SceneAgent]:
    if location is None:
        return []
    return [a for a in scene.agents.values() if a.location == location and a.name != without]


def focus_location(scene: ProbeScene) -> str | None:
    """Where most of the scene's agents are (ties: the first such place by name)."""
    counts = Counter(a.location for a in scene.agents.values() if a.location is not None)
    if not counts:
        return None
    best = max(counts.values())
    return min(loc for loc, n in counts.items() if n == best)


def part_of_day(hhmm: str) -> str | None:
    try:
        hour = parse_minute(hhmm) // 60
    except ValueError:
        return None
    if hour < 5:
        return "night"
    if hour < 12:
        return "morning"
    if hour < 17:
        return "afternoon"
    if hour < 21:
        return "evening"
    return "night"
