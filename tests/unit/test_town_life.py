"""AURATown's day as a town: plans kept (travel takes what the distance needs, then the agent stays),
plans that change (an invitation accepted, a place avoided after an emergency), conversations whose
topics vary and come from what the two know, and what a conversation changes."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from actors.town import embedded_town
from messages.town import InjectEvent, PlanChange
from tests.unit.test_world_town import agent, small_town
from world import TICKS_PER_DAY, Town, perceptions, sim_time
from world.definition import Activity
from world.movement import spot, travel_ticks
from world.plans import agent_plan, apply_changes, under_way
from world.probes.scenes import scene_from_town
from world.state import pair_key

DAYS = 3


def change(cid: int, start: int, end: int, location: str = "Square", day: int = 0) -> PlanChange:
    return PlanChange(id=cid, day=day, start=start, end=end, location=location, action="meeting", reason="r")


# ---------------------------------------------------------------- plans, pure


def test_a_change_replaces_its_span_and_hands_back_to_the_step_under_way_when_it_ends() -> None:
    a, b, c = (Activity(location=n, action=n.lower()) for n in ("X", "Y", "Z"))
    plan = [(360, a), (600, b), (900, c)]
    assert under_way(plan, 300) == a and under_way(plan, 600) == b and under_way(plan, 899) == b
    changed = apply_changes(plan, [change(1, 540, 720)])
    assert [(m, s.location) for m, s in changed] == [(360, "X"), (540, "Square"), (720, "Y"), (900, "Z")]
    # A later change wins over an earlier one where they overlap; a change to the day's end resumes nothing.
    both = apply_changes(plan, [change(2, 660, 1410, "Y"), change(1, 540, 720)])
    assert [(m, s.location) for m, s in both] == [(360, "X"), (540, "Square"), (660, "Y")]


# ---------------------------------------------------------------- schedules kept


@pytest.mark.parametrize("seed", [0, 7])
def test_each_agent_sets_off_when_a_step_starts_arrives_as_soon_as_the_distance_allows_and_stays(
    seed: int,
) -> None:
    definition = embedded_town()
    town = Town(definition, seed=seed)
    started: dict[str, tuple[int, Activity, tuple[int, int] | None]] = {}
    arrivals = 0
    for _ in range(DAYS * TICKS_PER_DAY):
        before = {s: (a.x, a.y) for s, a in town.state.agents.items()}
        report = town.step(1)[0]
        now = report.time
        for slug, a in town.state.agents.items():
            profile = definition.agent(slug)
            step = under_way(agent_plan(profile, now.day, seed, a.plan_changes), now.minute)
            # Never off early to the next step: the target is the step under way.
            assert a.target == step.location, (slug, now.hhmm)
            if now.slot == 0 or started[slug][1] != step:
                # A day's first step starts after the night's walk, which the test does not see.
                started[slug] = (report.tick, step, before[slug] if now.slot else None)
            tick0, _, origin = started[slug]
            if origin is None:
                continue
            needed = travel_ticks(origin, spot(seed, slug, definition.location(step.location)))
            if a.location != step.location:
                assert report.tick - tick0 + 1 < needed, (slug, now.hhmm, "late")
                assert a.action == f"walking to {step.location}"
            else:
                arrivals += 1
                assert a.action == step.action
    assert arrivals > DAYS * TICKS_PER_DAY * len(definition.agents) // 2


def test_whoever_is_still_on_the_way_at_23_00_walks_home_in_the_night() -> None:
    definition = embedded_town()
    town = Town(definition, seed=0)
    town.step(TICKS_PER_DAY)
    out = [s for s, a in town.state.agents.items() if a.location != definition.agent(s).home]
    assert out, "the test needs someone still walking home at 23:00"
    town.step(1)
    for slug in out:
        assert town.state.agents[slug].location == definition.agent(slug).home


# ---------------------------------------------------------------- conversations


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_over_three_days_no_pair_repeats_a_topic_at_the_same_time_of_day(seed: int) -> None:
    definition = embedded_town()
    town = Town(definition, seed=seed)
    records = [c for r in town.step(DAYS * TICKS_PER_DAY) for c in r.conversations]
    assert len(records) >= DAYS
    keys = Counter((pair_key(*c.participants), c.topic, sim_time(c.tick).slot) for c in records)
    assert max(keys.values()) == 1
    interests = {t for p in definition.agents for t in p.interests}
    assert any(c.topic not in interests for c in records), "topics come only from fixed interests"


def two_at_x(**ann: Any) -> Any:
    return small_town(
        [
            agent("Ann", [("06:00", "X", "having tea")], home="X", interests=["tea"], **ann),
            agent("Ben", [("06:00", "X", "having tea")], home="X", interests=["birds"]),
        ]
    )


def test_an_event_the_two_saw_is_what_they_talk_about() -> None:
    town = Town(two_at_x(), seed=3)
    town.inject(InjectEvent(kind="argument", description="two neighbours shouted over a fence", location="X"))
    talks = [c for r in town.step(6) for c in r.conversations]
    assert talks[0].topic == "the argument at X"
    assert any("shouted over a fence" in line for line in talks[0].lines)
    memory = town.mind_states["ann"].memory.items
    assert any(m.kind == "conversation" and "argument" in m.text for m in memory)


def test_news_of_a_third_agent_changes_what_the_listener_believes() -> None:
    d = small_town(
        [
            agent(
                "Ann", [("06:00", "X", "having tea"), ("07:00", "Square", "walking in the square")], home="X"
            ),
            agent("Cat", [("06:00", "X", "having tea")], home="X", interests=["tea"]),
            agent("Ben", [("06:00", "Y", "reading"), ("08:00", "X", "having tea")], home="Y"),
        ]
    )
    town = Town(d, seed=1)
    heard = None
    for _ in range(TICKS_PER_DAY):
        town.step(1)
        belief = town.state.agents["ben"].private.beliefs_about_others.get("ann")
        if belief is not None:
            heard = belief
            break
    assert heard is not None and heard.heard_from == "cat"
    told = town.state.agents["cat"].private.beliefs_about_others["ann"]
    assert (heard.location, heard.action, heard.observed_tick) == (
        told.location,
        told.action,
        told.observed_tick,
    )
    view = town.view(include_private=True).agents[2].private
    assert view is not None and view.beliefs_about_others["ann"].heard_from == "cat"


GATHERING = {
    "topic": "the birdwatching walk",
    "activity": "joining the birdwatching walk",
    "location": "Square",
    "start": "18:00",
    "end": "19:00",
}


def test_an_accepted_invitation_changes_the_guests_plan_visibly_and_takes_it_there() -> None:
    accepted = refused = 0
    for seed in range(12):
        town = Town(two_at_x(gathering=GATHERING), seed=seed)
        for _ in range(TICKS_PER_DAY):
            report = town.step(1)[0]
            asked = [c for c in report.conversations if c.topic == GATHERING["topic"]]
            if asked and "I will be there" in asked[0].lines[-1]:
                accepted += 1
                ben = town.state.agents["ben"]
                (joined,) = ben.plan_changes
                assert (joined.location, joined.action, joined.end) == (
                    "Square",
                    "joining the birdwatching walk",
                    1140,
                )
                assert joined.reason == "invited by Ann"
                plan_events = [e for e in report.events if e.kind == "plan"]
                assert any("Ben changed plans" in e.description for e in plan_events)
                # The guest hears of it, the public plan shows it, and the guest goes.
                # (perceiving marks events delivered: look on a copy, so Ben still gets them)
                nxt = perceptions(town.definition, town.state.model_copy(deep=True))["ben"]
                if joined.day == nxt.day:
                    assert nxt.plan_changes == (joined,)
                scene = scene_from_town(town.definition, town.state)
                if joined.day == scene.day:
                    assert ("Square", "joining the birdwatching walk") in [
                        (p.location, p.action) for p in scene.agents["Ben"].plan
                    ]
                town.step((joined.day * TICKS_PER_DAY + 24) - town.tick + 1)  # through 18:00 of that day
                assert town.state.agents["ben"].location == "Square"
                assert town.state.agents["ben"].action == "joining the birdwatching walk"
                memory = " ".join(m.text for m in town.mind_states["ben"].memory.items)
                assert "changed plans" in memory
                break
            if asked and "cannot make it" in asked[0].lines[-1]:
                refused += 1
                assert town.state.agents["ben"].plan_changes == []
                break
    assert accepted and refused


def test_an_outage_sends_those_who_saw_it_home_for_the_rest_of_the_day_and_no_one_else() -> None:
    definition = embedded_town()
    town = Town(definition, seed=0)
    town.step(12)  # 12:00: Lin Wei serves lunch at her cafe
    assert town.state.agents["lin-wei"].location == "Sunrise Cafe"
    accepted = town.inject(
        InjectEvent(kind="outage", description="the power is out", location="Sunrise Cafe")
    )
    assert accepted.witnesses == ("lin-wei",)
    lin = town.state.agents["lin-wei"]
    (home,) = lin.plan_changes
    assert (home.location, home.start, home.end) == ("Lin Wei's Home", 12 * 60, 21 * 60)
    assert all(not a.plan_changes for s, a in town.state.agents.items() if s != "lin-wei")
    town.step(1)
    assert lin.target == "Lin Wei's Home" and lin.action == "walking to Lin Wei's Home"
    town.step(TICKS_PER_DAY)  # the next day her schedule is her own again
    assert lin.plan_changes == [] and lin.location == "Sunrise Cafe"


def test_the_workplaces_are_those_of_the_papers_table_6() -> None:
    """'workplace map: Lin Wei -> Sunrise Cafe, Chen Mei -> General Store, Zhang Hao -> home/library,
    Liu Yang/Wang Jun -> Library' (AURA, Appendix A3)."""
    assert {a.name: set(a.workplaces) for a in embedded_town().agents} == {
        "Lin Wei": {"Sunrise Cafe"},
        "Chen Mei": {"Chen's General Store"},
        "Zhang Hao": {"Zhang Hao's Home", "Town Library"},
        "Liu Yang": {"Town Library"},
        "Wang Jun": {"Town Library"},
    }
