"""The factual and privacy suites as benchmark cells: paired town snapshots, answer, claim judge.

Factual (and privacy) queries are first-person questions of a town resident ("where am I?"), so
each query position gets an asker (the town's agents in turn) and a tick (``first_tick + position
% ticks_per_day``: the queries see different times of day). The town is captured once per (seed,
position) with ``paired_snapshot`` and that frozen scene is replayed, read-only, to every
condition of the position: the conditions are compared on exactly the same world.

Gold facts come from the snapshot and the query's ``requires`` (``gold_facts``). What a snapshot
cannot check is left out, not guessed: a query none of whose requirements is checkable has no gold,
and its cells record ``judge_failure="no_checkable_gold"`` with no score (never a pass).
Not checkable from a ``ProbeScene``: distances and routes (``location_distance``,
``library_location``, ``location_position``, ``nearby_locations``, ``spatial_awareness``), filtered
place lists (``location_list``: "the parks"), free-text memory content (``recent_memories``,
``important_memories``, ``reflections``, ``location_history``, ``memory_temporal``, ...), personality,
and every recommendation or analysis (``*_recommendations``, ``plan_optimization``,
``situational_analysis``, ``creative_suggestions``, ...): those need an LLM judge with the full state.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.suite.cells import Answerer, CellInput, local_answerer
from bench.suite.datasets import FactualQuery, PairedSnapshot, PrivacyQuery, Suite, paired_snapshot
from bench.suite.judges import FactualClaimJudge, FactualScore, JudgeFailure
from bench.suite.runs import CellKey
from messages.aura import GoldLabels
from messages.probes import ProbeScene, SceneAgent
from world.aura import Backend
from world.definition import TownDefinition
from world.probes import ProbeRegistry, environment_registry

FIRST_TICK = 6
"""A town stepped to tick 6 shows 08:30 (half-hour ticks from 06:00; a scene shows the last
applied tick): every position sees the town awake."""
TICKS_PER_POSITION_CYCLE = 24
"""Positions cycle through 24 half hours, 08:30 to 20:00."""

FactualJudgeFn = Callable[[Mapping[str, str], str, tuple[str, ...], str], FactualScore | JudgeFailure]
"""(gold facts, answer, known values, question) -> verdict; the claim judge ignores the question."""


def snapshot_tick(position: int) -> int:
    return FIRST_TICK + position % TICKS_PER_POSITION_CYCLE


def asker_of(definition: TownDefinition, position: int) -> str:
    """The resident query ``position`` speaks as: the town's agents in turn."""
    return definition.agents[position % len(definition.agents)].name


def _part_of_day(hhmm: str) -> str:
    hour = int(hhmm.split(":", maxsplit=1)[0])
    if 5 <= hour < 12:
        return "morning"
    if 12 <= hour < 17:
        return "afternoon"
    if 17 <= hour < 21:
        return "evening"
    return "night"


def _mentioned(names: list[str], text: str) -> str | None:
    """The first of ``names`` the text mentions: the full name, or else its last word when only
    one name ends with it ("the library" -> "Town Library")."""
    low = text.lower()
    for name in names:
        if re.search(rf"\b{re.escape(name.lower())}\b", low):
            return name
    by_last: dict[str, list[str]] = {}
    for name in names:
        by_last.setdefault(name.split()[-1].lower(), []).append(name)
    for last, owners in by_last.items():
        if len(owners) == 1 and re.search(rf"\b{re.escape(last)}\b", low):
            return owners[0]
    return None


def _current_step(agent: SceneAgent, now: str) -> tuple[int, int] | None:
    """(index of the plan step under way at ``now``, plan length), or None without a plan."""
    started = [i for i, p in enumerate(agent.plan) if p.time is not None and p.time <= now]
    return (started[-1], len(agent.plan)) if started else None


def gold_facts(scene: ProbeScene, query: FactualQuery) -> dict[str, str]:
    """Fact name -> value that a correct answer to ``query`` states, read from ``scene``.

    Lists become one fact per item (``nearby_agents:Zhang Hao``) so that the judge's completeness
    counts items and naming one of them is never a contradiction of the whole list.
    """
    asker = scene.agents.get(scene.asker or "")
    others = [n for n in scene.agents if n != scene.asker]
    other = _mentioned(others, query.query)
    place = _mentioned(list(scene.locations), query.query)
    gold: dict[str, str] = {}
    for need in query.requires:
        if need == "current_time":
            gold["current_time"] = scene.time
        elif need == "time_period":
            gold["time_period"] = _part_of_day(scene.time)
        elif need == "current_day":
            gold["current_day"] = f"day {scene.day}"
        elif need == "agent_location" and asker is not None and asker.location is not None:
            gold["agent_location"] = asker.location
        elif need == "location_type" and asker is not None and asker.location in scene.locations:
            gold["location_type"] = scene.locations[asker.location].type
        elif need == "nearby_agents" and asker is not None and asker.location is not None:
            for n in others:
                if scene.agents[n].location == asker.location:
                    gold[f"nearby_agents:{n}"] = n
        elif need in ("agent_list", "all_agents"):
            for n in others:
                gold[f"{need}:{n}"] = n
        elif need == "all_locations":
            for loc in scene.locations:
                gold[f"all_locations:{loc}"] = loc
        elif need == "agents_at_location" and place is not None:
            for n, a in scene.agents.items():
                if a.location == place:
                    gold[f"agents_at_location:{n}"] = n
        elif need == "agent_count":
            at = [a for a in scene.agents.values() if place is None or a.location == place]
            gold["agent_count"] = str(len(at))
        elif need == "specific_agent_location" and other is not None:
            where = scene.agents[other].location
            if where is not None:
                gold["specific_agent_location"] = where
        elif need == "specific_agent_action" and other is not None:
            gold["specific_agent_action"] = scene.agents[other].action
        elif need == "agent_occupation" and other is not None and scene.agents[other].occupation:
            gold["agent_occupation"] = scene.agents[other].occupation
        elif need == "location_owner" and place is not None and scene.locations[place].owner:
            gold["location_owner"] = str(scene.locations[place].owner)
        elif need == "location_capacity" and place is not None and scene.locations[place].capacity:
            gold["location_capacity"] = str(scene.locations[place].capacity)
        elif need in ("latest_event", "recent_events") and scene.events:
            gold[need] = scene.events[-1].description
        elif need == "recent_conversations" and scene.asker is not None:
            talks = [e for e in scene.events if e.kind == "conversation" and scene.asker in e.participants]
            for n in talks[-1].participants if talks else ():
                if n != scene.asker:
                    gold[f"recent_conversations:{n}"] = n
        elif need in ("agent_plan", "daily_plan", "remaining_plan") and asker is not None:
            step = _current_step(asker, scene.time)
            if step is None:
                continue
            index = step[0] + 1 if need == "remaining_plan" else step[0]
            if index < step[1]:
                gold[need] = asker.plan[index].action
    return gold


def known_values(scene: ProbeScene, gold: Mapping[str, str]) -> tuple[str, ...]:
    """Names a claim may get wrong, of the kinds the gold asks for: the town's places when a gold
    value is a place, its residents (not the asker, whom an answer may address) when one is a
    resident. A true place named while the question is about the time is not a contradiction."""
    values = set(gold.values())
    places = list(scene.locations) if values & set(scene.locations) else []
    people = [n for n in scene.agents if n != scene.asker] if values & set(scene.agents) else []
    return (*places, *people)


def _claim_judge(
    gold: Mapping[str, str], answer: str, known: tuple[str, ...], question: str = ""
) -> FactualScore | JudgeFailure:
    return FactualClaimJudge(known).judge(gold, answer)


class Snapshots:
    """Paired snapshots, captured once per (seed, position) and shared by every condition."""

    def __init__(self, definition: TownDefinition) -> None:
        self.definition = definition
        self._cache: dict[tuple[int, int], PairedSnapshot] = {}
        self._lock = threading.Lock()

    def get(self, seed: int, position: int) -> PairedSnapshot:
        key = (seed, position)
        with self._lock:
            snap = self._cache.get(key)
            if snap is None:
                tick = snapshot_tick(position)
                snap = paired_snapshot(self.definition, seed, tick, asker=asker_of(self.definition, position))
                self._cache[key] = snap
            return snap


@dataclass(frozen=True)
class _Query:
    position: int
    query: FactualQuery

    @property
    def forbidden(self) -> tuple[str, ...]:
        return tuple(self.query.forbidden_tools) if isinstance(self.query, PrivacyQuery) else ()

    @property
    def allowed(self) -> tuple[str, ...]:
        return tuple(self.query.allowed_tools) if isinstance(self.query, PrivacyQuery) else ()


def queries(suite: Suite) -> tuple[FactualQuery, ...]:
    return suite.privacy() if suite.name == "privacy" else suite.factual()


def cell_runner(
    suite: Suite,
    backends: Callable[[], Backend],
    *,
    definition: TownDefinition | None = None,
    judge: FactualJudgeFn | None = None,
    registry: ProbeRegistry | None = None,
    explore_max_steps: int = 3,
    answer: Answerer | None = None,
) -> Callable[[CellKey], Mapping[str, Any]]:
    """What a run executes for each cell key of a factual or privacy ``suite``."""
    if definition is None:
        from actors.town import embedded_town  # the bench may name the town; the default is ours

        definition = embedded_town()
    snapshots = Snapshots(definition)
    by_id = {str(q.id): _Query(i, q) for i, q in enumerate(queries(suite))}
    reg = registry or environment_registry()
    ask = answer or local_answerer(reg, backends)
    score = judge or _claim_judge

    def execute(key: CellKey) -> Mapping[str, Any]:
        q = by_id[key.query_id]
        snap = snapshots.get(key.seed, q.position)
        scene = snap.scene
        assert scene.asker is not None
        gold_tools = q.allowed or ()
        cell = CellInput(
            key.query_id,
            q.query.query,
            scene,
            GoldLabels(required_tools=gold_tools),
            q.forbidden,
            asker=scene.asker,
        )
        record = dict(ask(cell, key.condition, explore_max_steps))
        gold = gold_facts(scene, q.query)
        record.update(
            category=q.query.category,
            asker=scene.asker,
            tick=snap.tick,
            scene_time=scene.time,
            snapshot=snap.digest,
            gold=gold,
        )
        if not gold:
            record.update(scores={}, judge_failure="no_checkable_gold")
            return record
        verdict = score(gold, record["answer"], known_values(scene, gold), q.query.query)
        if isinstance(verdict, JudgeFailure):
            record.update(scores={}, judge_failure=verdict.reason)
            return record
        record.update(
            # precision counts as 0 without a verifiable claim (FA as the judge computes it); strict
            # precision comes from the claim counts and excludes such cells (A9).
            scores={
                "precision": verdict.precision or 0.0,
                "completeness": verdict.completeness,
                "fa": verdict.fa,
            },
            correct=verdict.correct,
            contradicted=verdict.contradicted,
            unverifiable=verdict.unverifiable,
            claims=[{"text": c.text, "label": c.label} for c in verdict.claims],
        )
        return record

    return execute
