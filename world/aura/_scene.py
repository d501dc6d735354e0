"""Sense, Scene and Memory from a ``ProbeScene``, and the in-process probe client."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from messages.probes import MemoryFacts, ProbeOutcome, ProbeScene, ToolList
from world.aura._types import ProbeReply, PublicAgent, SceneView, ToolInfo
from world.memory import MemoryItem, MemoryStream, importance, keywords
from world.probes.registry import ProbeRegistry

MEMORY_K = 5


def _minute(day: int | None, hhmm: str | None) -> int:
    if not hhmm:
        return (day or 0) * 1440
    h, _, m = hhmm.partition(":")
    try:
        return (day or 0) * 1440 + int(h) * 60 + int(m or 0)
    except ValueError:
        return (day or 0) * 1440


def retrieve_memories(
    memories: Sequence[MemoryFacts], query: str, now_minute: int, k: int = MEMORY_K
) -> list[str]:
    """The asker's memories best for ``query`` by AURA's score (recency, importance, similarity)."""
    stream = MemoryStream(
        items=[
            MemoryItem(
                id=i,
                kind=m.kind
                if m.kind in ("observation", "conversation", "reflection", "plan")
                else "observation",  # type: ignore[arg-type]
                text=m.text,
                importance=max(1, min(10, m.importance if m.importance is not None else importance(m.text))),
                minute=_minute(m.day, m.time),
                keywords=keywords(m.text),
            )
            for i, m in enumerate(memories, 1)
        ]
    )
    return [s.item.text for s in stream.retrieve(query, now_minute, k)]


def scene_view(scene: ProbeScene, asker: str, query: str, *, everyone: bool | None = None) -> SceneView:
    """What every condition sees: the public scene from the asker's place and the asker's best
    memories for the query. Private facts and beliefs are never read here.

    ``everyone``: whether the public state of every agent is in view. By default it is for a
    scripted scene (the AURA v2 snapshots show every agent's location and action), while in a
    live town one sees only who shares one's place: anyone else takes a probe.
    """
    if everyone is None:
        everyone = not scene.source.startswith("town:")
    public = scene.public()
    me = _find(public, asker)
    name = me or asker
    agent = public.agents.get(name)
    here = agent.location if agent else None
    nearby = tuple(
        a.name for a in public.agents.values() if a.name != name and here is not None and a.location == here
    )
    memories = retrieve_memories(public.memories.get(name, []), query, _minute(public.day, public.time))
    return SceneView(
        asker=name,
        time=public.time,
        day=public.day,
        asker_location=here,
        agents=tuple(
            PublicAgent(a.name, a.location or "between places", a.action)
            for a in public.agents.values()
            if everyone or a.name == name or a.name in nearby
        ),
        nearby=nearby,
        memories=tuple(memories),
        summary=public.summary,
        locations=tuple(public.locations),
        known=tuple(a.name for a in public.agents.values()),
    )


def _find(scene: ProbeScene, who: str) -> str | None:
    low = who.strip().lower()
    for a in scene.agents.values():
        if low in (a.name.lower(), (a.slug or "").lower(), a.name.split()[0].lower()):
            return a.name
    return None


def allowed_tools(listed: ToolList) -> list[ToolInfo]:
    """The tools of ``listed`` that the registry's policy allows (the planner never sees a denied
    one), whether the list came from a registry in process or over the bus."""
    allowed = set(listed.allowed)
    return [
        ToolInfo(s.name, s.description, dict(s.parameters), s.private, tuple(s.aliases))
        for s in listed.specs
        if s.name in allowed
    ]


def reply_of(outcome: ProbeOutcome) -> ProbeReply:
    return ProbeReply(
        tool=outcome.tool,
        status=outcome.status,
        result=dict(outcome.result) if outcome.result is not None else None,
        error=outcome.error,
        disclosure=outcome.disclosure,
    )


@dataclass(eq=False)
class RegistryProbes:
    """A ``ProbeClient`` over an in-process registry and a fixed scene (embedded runs, benchmarks)."""

    registry: ProbeRegistry
    scene: ProbeScene
    caller: str
    asker: str | None = None
    outcomes: list[ProbeOutcome] = field(default_factory=list, init=False, repr=False)
    """Every call's outcome, audit included, in call order."""

    def tools(self) -> list[ToolInfo]:
        return allowed_tools(self.registry.tool_list())

    def call(self, tool: str, args: dict[str, Any]) -> ProbeReply:
        outcome = self.registry.call(self.scene, self.caller, tool, args, asker=self.asker)
        self.outcomes.append(outcome)
        return reply_of(outcome)
