"""Building a ``ProbeScene``: from a live town's state, or from an AURA v2 benchmark scene.

Both are pure: the caller reads files and asks actors; these only reshape data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from messages.probes import (
    BeliefFacts,
    EventFacts,
    LocationFacts,
    MemoryFacts,
    PlanItem,
    PrivateFacts,
    ProbeScene,
    SceneAgent,
)
from world.clock import MINUTES_PER_DAY, format_minute, sim_time
from world.definition import Location, TownDefinition
from world.memory import MemoryItem
from world.minds import AgentMindState
from world.plans import agent_plan
from world.probes.names import NotFoundError, find_agent
from world.state import WorldState

EVENTS_IN_SCENE = 50
"""Events a live scene carries (``world.events_recent`` reads at most these)."""

_CLOCK_12H = re.compile(r"\b(\d{1,2}):(\d{2})\s*([AaPp])\.?\s*[Mm]\b\.?")
_CLOCK_24H = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")


class SceneError(ValueError):
    """A scene that cannot be built, with a one-line reason."""


def location_facts(loc: Location, minute_of_day: int | None = None) -> LocationFacts:
    return LocationFacts(
        name=loc.name,
        type=loc.type,
        description=loc.description,
        owner=loc.owner,
        capacity=loc.capacity,
        opening_hours=loc.opening_hours,
        open_now=None if minute_of_day is None else loc.is_open(minute_of_day),
    )


def memory_facts(item: MemoryItem) -> MemoryFacts:
    day, minute = divmod(item.minute, MINUTES_PER_DAY)
    return MemoryFacts(
        kind=item.kind, text=item.text, day=day, time=format_minute(minute), importance=item.importance
    )


# ---------------------------------------------------------------- a live town


def scene_from_town(
    definition: TownDefinition,
    state: WorldState,
    minds: Mapping[str, AgentMindState] | None = None,
    asker: str | None = None,
) -> ProbeScene:
    """The town at its last applied tick (before any tick: day 0, 06:00).

    Plans are the agents' plans for the day, their schedules with the day's changes (public);
    private facts and beliefs come from the world state; memories only for the agents whose mind
    state is given (by slug).
    ``asker`` (a name or slug) must be one of the town's agents.
    """
    now = sim_time(max(0, state.tick - 1))
    name_of = {slug: a.name for slug, a in state.agents.items()}
    asker_name = None
    if asker is not None:
        profile = definition.find_agent(asker)
        if profile is None or profile.slug not in state.agents:
            raise SceneError(f"no agent named {asker!r} in {definition.name}")
        asker_name = profile.name

    agents: dict[str, SceneAgent] = {}
    for slug, a in state.agents.items():
        profile = definition.agent(slug)
        plan = [
            PlanItem(time=format_minute(minute), location=act.location, action=act.action)
            for minute, act in agent_plan(profile, now.day, state.seed, a.plan_changes)
        ]
        p = a.private
        beliefs = {}
        for other, b in sorted(p.beliefs_about_others.items()):
            seen = sim_time(b.observed_tick) if b.observed_tick >= 0 else None
            beliefs[name_of.get(other, other)] = BeliefFacts(
                availability=b.availability,
                emotional_state=b.emotional_state,
                location=b.location,
                action=b.action,
                observed_day=None if seen is None else seen.day,
                observed_time=None if seen is None else seen.hhmm,
            )
        agents[a.name] = SceneAgent(
            name=a.name,
            slug=slug,
            location=a.location,
            action=a.action,
            occupation=profile.occupation,
            plan=plan,
            private=PrivateFacts(
                availability=p.availability,
                emotional_state=p.emotional_state,
                unspoken_goal=p.unspoken_goal,
                rule=p.rule,
            ),
            beliefs=beliefs,
        )

    events = []
    for e in state.events[-EVENTS_IN_SCENE:]:
        at = sim_time(e.tick)
        events.append(
            EventFacts(
                id=e.id,
                day=at.day,
                time=at.hhmm,
                kind=e.kind,
                description=e.description,
                location=e.location,
                participants=[name_of.get(s, s) for s in e.participants],
            )
        )
    memories = {
        name_of[slug]: [memory_facts(i) for i in mind.memory.items]
        for slug, mind in (minds or {}).items()
        if slug in name_of
    }
    return ProbeScene(
        time=now.hhmm,
        day=now.day,
        summary=_town_summary(definition.name, now.day, now.hhmm, agents, asker_name),
        asker=asker_name,
        agents=agents,
        locations={loc.name: location_facts(loc, now.minute) for loc in definition.locations},
        events=events,
        memories=memories,
        source=f"town:{definition.name}@{state.tick}",
    )


def _town_summary(town: str, day: int, hhmm: str, agents: Mapping[str, SceneAgent], asker: str | None) -> str:
    """A public one-liner: where the asker is and with whom (no private fact)."""
    head = f"{town}, day {day}, {hhmm}; {len(agents)} agents."
    if asker is None:
        return head
    me = agents[asker]
    if me.location is None:
        return f"{head} {asker} is on the way between two places ({me.action})."
    others = [n for n, a in agents.items() if n != asker and a.location == me.location]
    company = f" with {', '.join(others)}" if others else ", alone"
    return f"{head} {asker} is at {me.location}{company}."


# ---------------------------------------------------------------- an AURA v2 scene


def scene_time(text: str) -> str | None:
    """'Sunrise Cafe, 10:15 AM.' -> '10:15'; '2:30 PM' -> '14:30'; '14:30' -> '14:30'."""
    m = _CLOCK_12H.search(text)
    if m:
        hour, minute, half = int(m.group(1)), int(m.group(2)), m.group(3).lower()
        if not (1 <= hour <= 12 and minute < 60):
            return None
        hour = hour % 12 + (12 if half == "p" else 0)
        return f"{hour:02d}:{minute:02d}"
    m = _CLOCK_24H.search(text)
    return f"{int(m.group(1)):02d}:{m.group(2)}" if m else None


def _plan_items(raw: Any) -> list[PlanItem]:
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise SceneError(f"a plan is a list of steps, not {type(raw).__name__}")
    items = []
    for step in raw:
        if isinstance(step, str):
            items.append(PlanItem(action=step))
        elif isinstance(step, Mapping):
            items.append(PlanItem.model_validate(step))
        else:
            raise SceneError(f"a plan step is text or an object, not {type(step).__name__}")
    return items


def scene_from_aura_v2(
    scene: Mapping[str, Any],
    *,
    scene_id: str = "",
    asker: str | None = None,
    time: str | None = None,
    day: int = 0,
    definition: TownDefinition | None = None,
) -> ProbeScene:
    """An implicit-intent v2 scene (``summary``, ``public_state``, ``private_state``,
    ``beliefs_about_others``, optionally ``plans``) as a ``ProbeScene``.

    The time comes from ``time`` or else from the summary ("10:15 AM"). Without a ``plans`` entry
    an agent's plan is its current public activity only: unlike the release's ``get_agent_plan``,
    the unspoken goal never becomes a plan step (SOURCE.md). ``definition`` (a town map) adds the
    places' details; otherwise a place is known by its name only.
    """
    for key in ("summary", "public_state", "private_state"):
        if key not in scene:
            raise SceneError(f"scene {scene_id or '?'} has no {key!r}")
    summary = str(scene["summary"])
    hhmm = time or scene_time(summary)
    if hhmm is None:
        raise SceneError(f"scene {scene_id or '?'}: no time in its summary; pass time='HH:MM'")
    public: Mapping[str, Any] = scene["public_state"]
    private: Mapping[str, Any] = scene["private_state"]
    beliefs: Mapping[str, Any] = scene.get("beliefs_about_others", {})
    plans: Mapping[str, Any] = scene.get("plans", {})
    for group, what in ((private, "private_state"), (beliefs, "beliefs_about_others"), (plans, "plans")):
        strangers = sorted(set(group) - set(public))
        if strangers:
            raise SceneError(f"scene {scene_id or '?'}: {what} names agents not in public_state: {strangers}")

    agents = {}
    for name, pub in public.items():
        location = pub.get("location") or None
        action = str(pub.get("action") or "unknown")
        plan = (
            _plan_items(plans[name])
            if name in plans
            else [PlanItem(time=hhmm, location=location, action=action)]
        )
        priv = private.get(name)
        agents[name] = SceneAgent(
            name=name,
            location=location,
            action=action,
            occupation=str(pub.get("occupation", "")),
            plan=plan,
            private=None if priv is None else PrivateFacts.model_validate(priv),
            beliefs={
                target: BeliefFacts.model_validate(b) for target, b in (beliefs.get(name) or {}).items()
            },
        )
        for target in agents[name].beliefs:
            if target not in public:
                raise SceneError(f"scene {scene_id or '?'}: {name} holds a belief about unknown {target!r}")

    minute = int(hhmm[:2]) * 60 + int(hhmm[3:])
    locations: dict[str, LocationFacts] = {}
    if definition is not None:
        locations = {loc.name: location_facts(loc, minute) for loc in definition.locations}
    for a in agents.values():
        if a.location is not None and a.location not in locations:
            locations[a.location] = LocationFacts(name=a.location)
    built = ProbeScene(
        time=hhmm,
        day=day,
        summary=summary,
        agents=agents,
        locations=locations,
        source=f"aura_v2:{scene_id}" if scene_id else "aura_v2",
    )
    if asker is None:
        return built
    try:
        return built.model_copy(update={"asker": find_agent(built, asker)})
    except NotFoundError as exc:
        raise SceneError(f"scene {scene_id or '?'}: the asker {exc}") from None
