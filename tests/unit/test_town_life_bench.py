"""The town-life benchmark's counts, from hand-built ticks of a two-agent town; and its command line
on the real town."""

from __future__ import annotations

import json
import logging
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.town_life import TownLifeStats, activity_class, entry_under_way, main
from messages.town import ConversationRecord, PlanChange
from world import AgentState, Belief, PrivateState, TickReport, TownDefinition, WorldState, sim_time
from world.definition import Activity


def _place(name: str, kind: str, x: int) -> dict[str, object]:
    return {"name": name, "type": kind, "x": x, "y": 0, "width": 2, "height": 2, "capacity": 4}


TOWN = TownDefinition.model_validate(
    {
        "width": 20,
        "height": 4,
        "locations": [
            _place("Ann Home", "home", 0),
            _place("Bob Home", "home", 4),
            _place("Cafe", "park", 8),  # a park's hours: always open
            _place("Park", "park", 12),
        ],
        "agents": [
            {
                "name": "Ann",
                "age": 30,
                "home": "Ann Home",
                "workplaces": ["Cafe"],
                "interests": ["poetry"],
                "schedule": [
                    {"start": "06:00", "location": "Ann Home", "action": "sleeping"},
                    {"start": "06:30", "location": "Cafe", "action": "serving breakfast"},
                    {"start": "08:00", "location": "Park", "action": "walking the dog"},
                ],
            },
            {
                "name": "Bob",
                "age": 60,
                "home": "Bob Home",
                "interests": ["chess"],
                "schedule": [
                    {"start": "06:00", "location": "Bob Home", "action": "eating breakfast"},
                    {"start": "06:30", "location": "Park", "action": "jogging"},
                    {"start": "07:00", "location": "Cafe", "action": "drinking coffee"},
                ],
            },
        ],
    }
)


def _agent(
    slug: str,
    location: str | None,
    action: str,
    emotion: str,
    beliefs: dict[str, Belief],
    *,
    rule: str = "default",
) -> AgentState:
    private = PrivateState(emotional_state=emotion, rule=rule, beliefs_about_others=beliefs)
    return AgentState(
        slug=slug, name=slug.title(), x=0, y=0, location=location, action=action, private=private
    )


def _tick(
    tick: int, ann: AgentState, bob: AgentState, *talks: tuple[tuple[str, str], str]
) -> tuple[WorldState, TickReport]:
    state = WorldState(seed=0, tick=tick + 1, agents={"ann": ann, "bob": bob})
    conversations = [
        ConversationRecord(tick=tick, location="Cafe", participants=pair, topic=topic, lines=())
        for pair, topic in talks
    ]
    return state, TickReport(tick=tick, time=sim_time(tick), digest="", conversations=conversations)


def _feed(ticks: list[tuple[WorldState, TickReport]]) -> TownLifeStats:
    stats = TownLifeStats(TOWN, seed=0)
    for state, report in ticks:
        stats.observe(state, report)
    return stats


def _three_days_of_ticks() -> TownLifeStats:
    """Ticks 0, 1, 2 (day 0, 06:00-07:00) and 37 (day 1, 07:00)."""
    park, cafe = Belief(location="Park", observed_tick=-1), Belief(location="Cafe", observed_tick=2)
    ann_home = Belief(location="Ann Home", observed_tick=-1)
    return _feed(
        [
            # Ann asleep at home (her belief that Bob is at the park is stale), Bob at breakfast at home.
            _tick(
                0,
                _agent("ann", "Ann Home", "sleeping", "resting", {"bob": park}, rule="sleep"),
                _agent("bob", "Bob Home", "eating breakfast", "neutral", {"ann": ann_home}),
            ),
            # Ann on her way to the cafe (Bob's belief goes stale); Bob at the cafe, not in the park.
            _tick(
                1,
                _agent("ann", None, "walking to Cafe", "relaxed", {"bob": park}),
                _agent("bob", "Cafe", "drinking coffee", "neutral", {"ann": ann_home}),
                (("bob", "ann"), "the fire at the Park"),
            ),
            # Both at the cafe: both beliefs refreshed, after 2 and 1 ticks stale.
            _tick(
                2,
                _agent("ann", "Cafe", "serving breakfast", "neutral", {"bob": cafe}),
                _agent("bob", "Cafe", "drinking coffee", "lonely", {"ann": cafe}),
                (("ann", "bob"), "poetry"),
            ),
            # The next day at 07:00, the same pair on the same topic: a repeat.
            _tick(
                37,
                _agent("ann", "Cafe", "serving breakfast", "lonely", {"bob": cafe}),
                _agent("bob", "Cafe", "drinking coffee", "relaxed", {"ann": cafe}),
                (("ann", "bob"), "poetry"),
            ),
        ]
    )


def test_conversations_count_topics_repeats_and_topics_from_outside_the_interests() -> None:
    figures = _three_days_of_ticks().figures()
    total = figures["total"]
    assert total["conversations"] == 3
    assert [figures["days"][d]["conversations"] for d in ("0", "1")] == [2, 1]
    assert total["distinct_topics"] == 2
    assert total["distinct_pair_topics"] == 2
    assert total["repeats"] == 1
    assert figures["repeat_examples"] == ["Ann & Bob on 'poetry' at 07:00, days 0, 1"]
    assert total["off_interest"] == 1
    assert total["off_interest_share"] == pytest.approx(1 / 3)
    assert figures["topics"] == {"poetry": 2, "the fire at the Park": 1}


def test_schedule_keeping_per_agent_and_entries_never_reached() -> None:
    figures = _three_days_of_ticks().figures()
    ann, bob = figures["agents"]["ann"], figures["agents"]["bob"]
    # Ann: at home, on the way, at the cafe, at the cafe the next day.
    assert (ann["agent_ticks"], ann["at_place"], ann["travelling"]) == (4, 3, 1)
    assert (ann["slots"], ann["slots_missed"]) == (3, 0)
    # Bob: at the cafe while his 06:30 entry is the park: elsewhere, and that entry never reached.
    assert (bob["agent_ticks"], bob["at_place"], bob["travelling"]) == (4, 3, 0)
    assert bob["elsewhere_share"] == 0.25
    assert (bob["slots"], bob["slots_missed"]) == (4, 1)
    total = figures["total"]
    assert (total["at_place_share"], total["travelling_share"], total["elsewhere_share"]) == (
        0.75,
        0.125,
        0.125,
    )
    assert (total["slots"], total["slots_missed"]) == (7, 1)
    assert [(figures["days"][d]["slots"], figures["days"][d]["slots_missed"]) for d in ("0", "1")] == [
        (5, 1),
        (2, 0),
    ]


def test_at_the_place_of_the_plan_with_its_changes() -> None:
    meeting = PlanChange(id=7, day=0, start=390, end=480, location="Park", action="meeting", reason="invited")
    ann_at_park = _agent("ann", "Park", "meeting", "neutral", {})
    stats = _feed(
        [
            # Ann meets someone in the park instead of serving at her cafe, as her changed plan says.
            _tick(
                1,
                ann_at_park.model_copy(update={"plan_changes": [meeting]}),
                _agent("bob", "Park", "jogging", "neutral", {}),
            ),
            _tick(
                2,
                ann_at_park.model_copy(update={"plan_changes": [meeting]}),
                _agent("bob", "Cafe", "drinking coffee", "neutral", {}),
            ),
        ]
    )
    total = stats.figures()["total"]
    assert (total["agent_ticks"], total["at_place"], total["at_planned"]) == (4, 2, 4)
    assert total["plan_changes"] == 1
    assert stats.figures()["agents"]["ann"]["at_planned_share"] == 1.0


def test_emotional_states_by_activity_class() -> None:
    figures = _three_days_of_ticks().figures()
    assert figures["emotions_by_activity"] == {
        "sleep": {"resting": 1},
        "travel": {"relaxed": 1},
        "work": {"neutral": 1, "lonely": 1},  # serving breakfast at her cafe is work, not a meal
        "meal": {"neutral": 2, "lonely": 1, "relaxed": 1},
        "other": {},
    }
    assert figures["total"]["lonely_share"] == 0.25


def test_a_stale_belief_refreshed_by_co_location() -> None:
    figures = _three_days_of_ticks().figures()
    total = figures["total"]
    assert (total["belief_ticks"], total["stale"], total["stale_share"]) == (8, 3, 0.375)
    assert (total["episodes"], total["refreshed"], total["heard"], total["resolved"]) == (2, 2, 0, 0)
    assert total["mean_ticks_stale_before_refresh"] == 1.5
    day0, day1 = figures["days"]["0"], figures["days"]["1"]
    assert (day0["belief_ticks"], day0["stale"], day0["refreshed"]) == (6, 3, 2)
    assert (day1["belief_ticks"], day1["stale"], day1["refreshed"]) == (2, 0, 0)


def test_a_belief_set_right_by_a_conversation_and_one_that_came_true_again() -> None:
    ann_at_park = Belief(location="Park", observed_tick=-1)
    bob_at_park = Belief(location="Park", observed_tick=-1)
    heard = Belief(location="Ann Home", observed_tick=0, heard_from="carl")
    stats = _feed(
        [
            _tick(
                0,
                _agent("ann", "Ann Home", "reading", "neutral", {"bob": bob_at_park}),
                _agent("bob", "Cafe", "drinking coffee", "neutral", {"ann": ann_at_park}),
            ),
            # Bob went to the park as Ann believed; Bob heard where Ann is from a third agent.
            _tick(
                1,
                _agent("ann", "Ann Home", "reading", "neutral", {"bob": bob_at_park}),
                _agent("bob", "Park", "jogging", "neutral", {"ann": heard}),
            ),
        ]
    )
    total = stats.figures()["total"]
    assert (total["belief_ticks"], total["stale"], total["episodes"]) == (4, 2, 2)
    assert (total["refreshed"], total["heard"], total["resolved"]) == (0, 1, 1)
    assert total["mean_ticks_stale_before_refresh"] is None


def test_activity_classes_and_the_entry_under_way_before_the_day_s_first() -> None:
    ann = TOWN.agent("ann")
    assert activity_class(ann, _agent("ann", "Park", "eating lunch", "relaxed", {})) == "meal"
    assert activity_class(ann, _agent("ann", "Park", "reading the team sheet", "relaxed", {})) == "other"
    assert activity_class(ann, _agent("ann", "Park", "walking to Cafe", "relaxed", {})) == "travel"
    late = [
        (480, Activity(location="Park", action="jogging")),
        (1320, Activity(location="Ann Home", action="sleeping")),
    ]
    assert entry_under_way(lambda day: late, 1, 360) == ((0, 1), late[1][1])
    assert entry_under_way(lambda day: late, 1, 480) == ((1, 0), late[0][1])


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """main() configures logging and SIGTERM for a process of its own: put them back after."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    sigterm = signal.getsignal(signal.SIGTERM)
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    signal.signal(signal.SIGTERM, sigterm)


@pytest.mark.usefixtures("restored_logging")
def test_main_runs_the_real_town_and_writes_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "town_life.json"
    assert main(["--days", "1", "--seed", "0,1", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["benchmark"] == "bench.town_life"
    assert data["params"]["seed"] == [0, 1] and data["params"]["days"] == 1
    assert [r["seed"] for r in data["runs"]] == [0, 1]
    for run in data["runs"]:
        assert run["ticks"] == 35
        assert run["total"]["agent_ticks"] == 5 * 35
        assert set(run["agents"]) == {"lin-wei", "zhang-hao", "chen-mei", "liu-yang", "wang-jun"}
    for key in (
        "conversations",
        "distinct_topics",
        "repeats",
        "at_place_share",
        "lonely_share",
        "stale_share",
    ):
        assert key in data["mean"]
    assert sum(sum(n.values()) for n in data["pooled"]["emotions_by_activity"].values()) == 2 * 5 * 35
    printed = capsys.readouterr().out
    assert "seed 1" in printed and "mean" in printed and f"results written to {out}" in printed
