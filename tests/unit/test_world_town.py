"""The pure town: definitions, time, movement, beliefs, events, conversations, memory, minds,
determinism and snapshots. No I/O beyond reading the AURA release's map by path."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest

from actors.town import embedded_town
from messages.town import Decision, InjectEvent
from tests.conftest import AURA_RELEASE
from world import (
    TICKS_PER_DAY,
    AgentMindState,
    InvalidEventError,
    MemoryStream,
    ScheduleMind,
    Town,
    TownDefinitionError,
    TownSnapshot,
    advance,
    agent_turn,
    generate_town,
    initial_state,
    parse_town,
    perceptions,
    sim_time,
)
from world.conversation import COOLDOWN_TICKS
from world.simulation import MAX_EVENTS

AURA_MAP = AURA_RELEASE / "town_map.json"


def small_town(agents: list[dict[str, Any]], extra_locations: list[dict[str, Any]] | None = None) -> Any:
    """Two 3x3 places a cell apart (X at 0,0 and Y at 4,0), a square, and the given agents."""
    locations = [
        {
            "name": "X",
            "type": "cafe",
            "x": 0,
            "y": 0,
            "width": 3,
            "height": 3,
            "capacity": 8,
            "opening_hours": ["06:00", "23:00"],
        },
        {"name": "Y", "type": "home", "x": 4, "y": 0, "width": 3, "height": 3, "capacity": 4},
        {"name": "Square", "type": "square", "x": 0, "y": 4, "width": 7, "height": 3, "capacity": 40},
        *(extra_locations or []),
    ]
    return parse_town({"name": "Small", "width": 12, "height": 12, "locations": locations, "agents": agents})


def agent(name: str, schedule: list[tuple[str, str, str]], **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "age": 30,
        "home": kw.pop("home", "Y"),
        "workplaces": kw.pop("workplaces", []),
        "interests": kw.pop("interests", ["tea"]),
        "unspoken_goal": "a goal",
        "schedule": [{"start": s, "location": loc, "action": act} for s, loc, act in schedule],
        **kw,
    }


# ---------------------------------------------------------------- definitions


def test_the_embedded_town_is_auratown() -> None:
    town = embedded_town()
    assert (town.width, town.height) == (60, 60)
    assert len(town.locations) == 20
    assert [a.name for a in town.agents] == ["Lin Wei", "Zhang Hao", "Chen Mei", "Liu Yang", "Wang Jun"]
    assert [(a.age, a.occupation) for a in town.agents][:2] == [(32, "Cafe Owner"), (28, "Writer")]
    # Workplaces name real locations (the reference code's "Library" matched nothing).
    for a in town.agents:
        assert a.workplaces and all(town.has_location(w) for w in a.workplaces)
    assert town.agent("wang-jun").workplaces == ("Town Library",)


@pytest.mark.aura_release
def test_the_aura_release_map_loads_unchanged() -> None:
    data = json.loads(AURA_MAP.read_text())
    town = parse_town(data, agents=embedded_town().agents)
    assert (town.width, town.height, len(town.locations)) == (60, 60, 20)
    assert {loc.name for loc in town.locations} == {loc.name for loc in embedded_town().locations}
    assert town.location("Sunrise Cafe").opening_hours == ("07:00", "21:00")  # default for its type
    Town(town, seed=1).step(3)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["agents"][0].update(home="Nowhere"), "unknown location 'Nowhere'"),
        (lambda d: d["locations"].append(dict(d["locations"][0])), "duplicate location names"),
        (lambda d: d["locations"][0].update(x=59), "outside the 60x60 grid"),
        (lambda d: d["agents"][0]["schedule"].reverse(), "strictly increasing"),
        (lambda d: d.update(format="other/9"), "unknown town format"),
    ],
)
def test_bad_definitions_are_refused_with_a_reason(mutate: Any, message: str) -> None:
    data = embedded_town().model_dump(mode="json")
    mutate(data)
    with pytest.raises(TownDefinitionError, match=message):
        parse_town(data)


def test_a_map_without_agents_needs_agents() -> None:
    data = {
        "width": 10,
        "height": 10,
        "locations": [{"name": "A", "type": "home", "x": 0, "y": 0, "width": 2, "height": 2, "capacity": 2}],
    }
    with pytest.raises(TownDefinitionError, match="no agents"):
        parse_town(data)


# ---------------------------------------------------------------- time and movement


def test_ticks_cover_six_to_eleven_then_roll_over() -> None:
    assert TICKS_PER_DAY == 35
    assert str(sim_time(0)) == "day 0 06:00"
    assert str(sim_time(34)) == "day 0 23:00"
    assert str(sim_time(35)) == "day 1 06:00"
    assert sim_time(35).absolute_minutes - sim_time(34).absolute_minutes == 7 * 60


def test_agents_move_at_most_three_cells_per_tick() -> None:
    town = Town(embedded_town(), seed=7)
    before = {s: (a.x, a.y) for s, a in town.state.agents.items()}
    moved = 0
    for _ in range(TICKS_PER_DAY):
        town.step()
        for s, a in town.state.agents.items():
            step = abs(a.x - before[s][0]) + abs(a.y - before[s][1])
            assert step <= 3
            moved += step > 0
            before[s] = (a.x, a.y)
            assert a.location == town.definition.location_at(a.x, a.y)
    assert moved > 20


# ---------------------------------------------------------------- beliefs


def test_beliefs_refresh_only_when_co_located_and_go_stale_otherwise() -> None:
    d = small_town(
        [
            agent("Ann", [("06:00", "X", "waiting for customers")], home="X"),
            agent("Ben", [("06:00", "X", "drinking tea"), ("08:00", "Y", "napping at home")], home="X"),
            agent("Cat", [("06:00", "Y", "reading")], home="Y"),
        ]
    )
    town = Town(d, seed=3)
    town.step(2)  # 06:00, 06:30: Ann and Ben share X
    ann = town.state.agents["ann"].private.beliefs_about_others
    assert ann["ben"].location == "X" and ann["ben"].observed_tick == 1
    assert "cat" not in ann  # never together: no belief at all
    town.step(6)  # Ben has gone home to Y by now
    ben = town.state.agents["ben"]
    assert ben.location == "Y"
    stale = town.state.agents["ann"].private.beliefs_about_others["ben"]
    assert stale.location == "X" and stale.action == "drinking tea"  # what Ann last saw
    assert stale.observed_tick < town.tick - 2
    # Ben and Cat now share Y: their beliefs about each other are fresh.
    assert town.state.agents["cat"].private.beliefs_about_others["ben"].observed_tick == town.tick - 1
    assert town.state.agents["ben"].private.beliefs_about_others["cat"].location == "Y"


# ---------------------------------------------------------------- events and the stress rule


def test_an_injected_argument_stresses_those_present_through_the_stress_rule() -> None:
    d = small_town(
        [
            agent("Ann", [("06:00", "Square", "selling vegetables at a stall")], home="Square"),
            agent("Ben", [("06:00", "Y", "tidying up")], home="Y"),
        ]
    )
    town = Town(d, seed=1)
    town.step(2)
    assert town.state.agents["ann"].private.rule == "default"
    accepted = town.inject(
        InjectEvent(kind="argument", description="two vendors argue loudly", location="Square")
    )
    assert accepted.witnesses == ("ann",)
    assert accepted.event.source == "environment" and accepted.event.tick == 2
    assert town.state.events[-1] == accepted.event
    town.step()
    ann, ben = town.state.agents["ann"].private, town.state.agents["ben"].private
    assert (ann.rule, ann.emotional_state, ann.availability) == ("recent_stress", "stressed", "available")
    assert ben.rule == "default"  # not there, did not perceive it
    # The agent remembers what it perceived.
    texts = [m.text for m in town.mind_states["ann"].memory.items]
    assert any("argument: two vendors argue loudly" in t for t in texts)


def test_a_town_wide_event_reaches_everyone() -> None:
    town = Town(embedded_town(), seed=1)
    accepted = town.inject(InjectEvent(kind="emergency", description="power lines down"))
    assert set(accepted.witnesses) == set(town.state.agents)


@pytest.mark.parametrize("ticks_before", [4, 14, 26])
def test_a_town_wide_emergency_stresses_whoever_no_earlier_rule_of_table_6_holds(ticks_before: int) -> None:
    """First match wins (AURA Table 6): sleep, a loaded or an empty workplace, deep focus and a
    relaxed action all come before ``recent_stress``, so the emergency changes the state of exactly
    the agents for whom only ``default`` would have held, the same town without it tells which."""
    quiet, alarmed = Town(embedded_town(), seed=1), Town(embedded_town(), seed=1)
    for _ in range(ticks_before):
        quiet.step()
        alarmed.step()
    alarmed.inject(InjectEvent(kind="emergency", description="power lines down"))
    quiet.step()
    alarmed.step()
    for slug, agent in alarmed.state.agents.items():
        without = quiet.state.agents[slug].private.rule
        expected = "recent_stress" if without in ("default", "recent_stress") else without
        assert (slug, agent.private.rule) == (slug, expected)
        if expected == "recent_stress":
            assert agent.private.emotional_state == "stressed"


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            InjectEvent(kind="argument", description="x", location="Moon Base"),
            "no location named 'Moon Base'",
        ),
        (InjectEvent(kind="argument", description="x", participants=("Nobody",)), "no agent named 'Nobody'"),
    ],
)
def test_invalid_events_are_refused_with_a_reason(event: InjectEvent, message: str) -> None:
    town = Town(embedded_town(), seed=1)
    with pytest.raises(InvalidEventError, match=message):
        town.inject(event)
    assert town.state.events == []


def test_the_event_log_is_bounded() -> None:
    town = Town(embedded_town(), seed=1)
    for i in range(MAX_EVENTS + 25):
        town.inject(InjectEvent(kind="announcement", description=f"notice {i}", location="Town Hall"))
    assert len(town.state.events) == MAX_EVENTS
    assert town.state.events[-1].description == f"notice {MAX_EVENTS + 24}"


# ---------------------------------------------------------------- conversations


def test_co_located_agents_talk_with_a_two_tick_cooldown() -> None:
    d = small_town(
        [
            agent("Ann", [("06:00", "X", "having tea")], home="X", interests=["tea", "birds"]),
            agent("Ben", [("06:00", "X", "having tea")], home="X", interests=["birds"]),
        ]
    )
    town = Town(d, seed=5)
    ticks = [c.tick for r in town.step(TICKS_PER_DAY) for c in r.conversations]
    assert len(ticks) >= 3
    assert all(b - a > COOLDOWN_TICKS for a, b in itertools.pairwise(ticks))
    topics = [c.topic for c in town.state.conversations]
    # Their interests first, none twice; then, with nothing left to say, the day itself.
    assert sorted(topics[:2]) == ["birds", "tea"]
    assert all(t.startswith("what ") for t in topics[2:])
    for slug in ("ann", "ben"):
        assert any(m.kind == "conversation" for m in town.mind_states[slug].memory.items)


# ---------------------------------------------------------------- minds and missed decisions


def test_an_agent_without_a_decision_keeps_its_scheduled_action() -> None:
    d = embedded_town()
    with_minds, without = Town(d, seed=9), Town(d, seed=9)
    for _ in range(10):
        with_minds.step()
        perceptions(d, without.state)
        report = advance(d, without.state, {})  # nobody answered in time
        assert sorted(report.missed) == sorted(d.slugs)
        assert without.state.tick == with_minds.state.tick
        for slug in d.slugs:
            a, b = with_minds.state.agents[slug], without.state.agents[slug]
            assert (a.x, a.y, a.action, a.private.rule) == (b.x, b.y, b.action, b.private.rule)


def test_a_decision_for_an_unknown_place_falls_back_to_the_schedule() -> None:
    d = embedded_town()
    state = initial_state(d, 1)
    perceptions(d, state)
    bad = {"lin-wei": Decision(tick=0, action="flying", target="The Moon")}
    report = advance(d, state, bad)
    assert "lin-wei" in report.missed
    assert state.agents["lin-wei"].action != "flying"


def test_a_repeated_perception_gets_the_same_decision_and_is_remembered_once() -> None:
    d = embedded_town()
    profile = d.agent("lin-wei")
    mind = ScheduleMind(d, profile, 4)
    state = AgentMindState(slug="lin-wei")
    perception = perceptions(d, initial_state(d, 4))["lin-wei"]
    first = agent_turn(state, mind, perception)
    count = len(state.memory.items)
    again = agent_turn(state, mind, perception)
    assert again == first
    assert len(state.memory.items) == count
    assert [m.kind for m in state.memory.items] == ["plan", "observation"]


# ---------------------------------------------------------------- memory stream


def test_memory_keeps_at_most_200_items_and_reflects_every_ten_observations() -> None:
    mem = MemoryStream()
    for i in range(10):
        mem.add("observation", f"10:{i:02d} at Sunrise Cafe: serving", minute=600 + i)
    assert [m.kind for m in mem.items].count("reflection") == 1
    assert "Sunrise Cafe" in mem.items[-1].text
    for i in range(400):
        mem.add("observation", f"obs {i} at Town Park", minute=700 + i)
    assert len(mem.items) == 200
    assert [m.kind for m in mem.items].count("reflection") == 41  # reflections outlive observations


def test_retrieval_score_uses_the_papers_weights_and_real_elapsed_time() -> None:
    mem = MemoryStream()
    night = mem.add("observation", "an argument at Town Square", minute=sim_time(34).absolute_minutes)
    mem.add("observation", "quiet tea at the Tea House", minute=sim_time(35).absolute_minutes)
    now = sim_time(35).absolute_minutes  # next morning 06:00: 7 hours later, not one tick
    best = mem.retrieve("argument square", now, k=2)
    top = best[0]
    assert top.item.id == night.id
    expected = 0.3 * math.exp(-0.01 * 420) + 0.4 * night.importance / 10 + 0.3 * 1.0
    assert top.score == pytest.approx(expected)
    assert night.importance == 8  # keyword heuristic: an argument matters


# ---------------------------------------------------------------- determinism and snapshots


def day_digests(seed: int) -> list[str]:
    return [r.digest for r in Town(embedded_town(), seed=seed).step(TICKS_PER_DAY)]


def test_same_seed_same_digests_over_a_full_day_and_a_different_seed_differs() -> None:
    a, b, c = day_digests(42), day_digests(42), day_digests(43)
    assert a == b
    assert a != c
    assert len(set(a)) == TICKS_PER_DAY


def test_snapshot_round_trip_is_byte_for_byte_and_the_fork_evolves_identically() -> None:
    town = Town(embedded_town(), seed=11)
    town.step(20)
    town.inject(InjectEvent(kind="celebration", description="a surprise party", location="Sunrise Cafe"))
    data = town.snapshot().to_bytes()
    fork = Town.restore(data)
    assert fork.snapshot().to_bytes() == data
    assert TownSnapshot.from_bytes(data).to_bytes() == data
    assert [r.digest for r in fork.step(20)] == [r.digest for r in town.step(20)]
    assert fork.snapshot().to_bytes() == town.snapshot().to_bytes()


def test_the_generator_makes_a_deterministic_town_of_any_size() -> None:
    d = generate_town(200, seed=3)
    assert len(d.agents) == 200 and len(d.locations) >= 100
    assert d == generate_town(200, seed=3)
    assert d != generate_town(200, seed=4)
    for a in d.agents:
        assert all(d.has_location(w) for w in a.workplaces)
    town = Town(d, seed=1)
    town.step(12)
    assert any(a.location in d.agent(s).workplaces for s, a in town.state.agents.items())
