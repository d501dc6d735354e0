"""Town-life benchmark: what a few simulated days of the 5-agent AURATown look like (issue 17).

The real AURATown (``embedded_town()``) runs with its schedule minds (no LLM) for ``--days`` days,
once per seed. ``TownLifeStats`` is fed the state after each tick with the tick's report and counts,
for the whole run and per day:

* conversations: how many; distinct topics; distinct (pair, topic); repeats, i.e. the same pair on
  the same topic at the same time of day on another day (target 0); the share whose topic is none
  of the two speakers' static ``interests`` (drawn from events, gatherings, news);
* schedule keeping, per agent: the share of ticks at the place of the schedule entry under way
  (``day_plan``, without the day's changes: the last entry started by then, before the day's first
  one the previous day's last), travelling (between places or "walking to ..."), elsewhere; and
  the entries never reached while under way. Also the share at the place of the plan as the agent
  holds it then (the schedule with the day's changes: an invitation accepted, a place avoided),
  and how many changes were made;
* emotional state by activity: each agent-tick is sleep (rule ``sleep``), travel, work (at one of
  its workplaces), meal (eating, a meal, tea or coffee in its action) or other, first match wins;
  and the share of ``lonely`` agent-ticks;
* beliefs: each (believer, target) belief held at each tick is stale when its location is not the
  target's current one. Episodes started (a belief becoming stale), refreshes by co-location (seen
  together this tick after being stale), updates to the truth by a conversation (``heard_from``),
  stale beliefs that came true without an update (the target went back), and the mean number of
  ticks a belief was stale before a co-location refresh.

Prints each seed and their mean, then per day, per agent and emotion by activity pooled over the
seeds; writes everything as JSON (``bench/results/town_life.json`` by default).

Run::

    python -m bench.town_life                          # 3 days, seed 0: a second or two
    python -m bench.town_life --seed 0,1,2 --out /tmp/town_life.json
    PYTHONPATH=/other/checkout python bench/town_life.py   # by path: that checkout's world
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import platform
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from actors.town import embedded_town
from bench._cli import BenchParams, BenchParser, Scale, begin, params_from
from bench._output import finish, num, results_json, table
from world import (
    TICKS_PER_DAY,
    AgentProfile,
    AgentState,
    Belief,
    TickReport,
    Town,
    TownDefinition,
    WorldState,
)
from world.clock import format_minute
from world.definition import Activity

try:
    from world.plans import apply_changes, day_plan
except ImportError:  # the world before issue 17 (the baseline): no plan changes, day_plan in world.minds
    from world.minds import day_plan  # type: ignore[attr-defined,no-redef]

DAYS = Scale(3, quick=1)
ACTIVITY_CLASSES = ("sleep", "travel", "work", "meal", "other")
MEAL = re.compile(r"\b(?:eat|lunch|breakfast|dinner|tea\b|coffee)")
LONELY = "lonely"

SlotKey = tuple[int, int]
"""(day, index of the entry in that day's plan)."""
PairKey = tuple[str, str]
"""(believer, target) for beliefs; the two speakers, sorted, for conversations."""


# ---------------------------------------------------------------------------------------- per tick


def travelling(agent: AgentState) -> bool:
    return agent.location is None or agent.action.startswith("walking to")


def activity_class(profile: AgentProfile, agent: AgentState) -> str:
    """sleep, travel, work, meal or other: the first that fits."""
    if agent.private.rule == "sleep":
        return "sleep"
    if travelling(agent):
        return "travel"
    if agent.location in profile.workplaces:
        return "work"
    if MEAL.search(agent.action):
        return "meal"
    return "other"


def entry_under_way(
    plans: Callable[[int], list[tuple[int, Activity]]], day: int, minute: int
) -> tuple[SlotKey, Activity]:
    """The schedule entry under way: the last one started by ``minute``; before the day's first
    one, the previous day's last (the night's)."""
    plan = plans(day)
    started = [i for i, (start, _) in enumerate(plan) if start <= minute]
    if started:
        return (day, started[-1]), plan[started[-1]][1]
    previous = plans(day - 1)
    return (day - 1, len(previous) - 1), previous[-1][1]


# ---------------------------------------------------------------------------------------- tallies


@dataclass
class Tally:
    """Counts over some ticks (a day, a run, runs pooled); ``+`` adds two."""

    agent_ticks: int = 0
    at_place: int = 0
    at_planned: int = 0
    """At the place of the plan with the day's changes (``at_place``: of the schedule)."""
    plan_changes: int = 0
    travelling: int = 0
    lonely: int = 0
    conversations: int = 0
    off_interest: int = 0
    belief_ticks: int = 0
    stale: int = 0
    episodes: int = 0
    refreshed: int = 0
    heard: int = 0
    resolved: int = 0
    ticks_stale_before_refresh: int = 0
    topics: Counter[str] = field(default_factory=Counter)
    slots: int = 0
    slots_missed: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in dataclasses.fields(self)}
        )

    def figures(self) -> dict[str, Any]:
        """Its counts and the shares made of them."""
        counts = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "topics"}
        return {
            **counts,
            "distinct_topics": len(self.topics),
            "at_place_share": share(self.at_place, self.agent_ticks),
            "at_planned_share": share(self.at_planned, self.agent_ticks),
            "travelling_share": share(self.travelling, self.agent_ticks),
            "elsewhere_share": share(self.agent_ticks - self.at_place - self.travelling, self.agent_ticks),
            "lonely_share": share(self.lonely, self.agent_ticks),
            "off_interest_share": share(self.off_interest, self.conversations),
            "stale_share": share(self.stale, self.belief_ticks),
            "mean_ticks_stale_before_refresh": share(self.ticks_stale_before_refresh, self.refreshed),
        }


def share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass
class _Seen:
    """A belief as it was after the previous tick."""

    stale: bool
    run: int
    """Consecutive ticks it has been stale, up to and including that tick."""
    observed_tick: int
    heard_from: str | None


@dataclass(frozen=True)
class Talk:
    day: int
    minute: int
    pair: PairKey
    topic: str


class TownLifeStats:
    """Fed the state after each tick with the tick's report (``observe``); ``figures`` gives the run's."""

    def __init__(self, definition: TownDefinition, seed: int) -> None:
        self.definition = definition
        self.seed = seed
        self.days: dict[int, Tally] = {}
        self.agents: dict[str, Tally] = {}
        self.emotions: dict[str, Counter[str]] = {c: Counter() for c in ACTIVITY_CLASSES}
        self.talks: list[Talk] = []
        self.ticks = 0
        self._plans: dict[tuple[str, int], list[tuple[int, Activity]]] = {}
        self._reached: dict[tuple[str, SlotKey], bool] = {}
        """(agent, schedule entry) -> whether the agent was at its place on a tick it was under way."""
        self._beliefs: dict[PairKey, _Seen] = {}
        self._changes: set[tuple[str, int]] = set()
        """(agent, change id) of the plan changes seen so far."""

    def plan(self, slug: str, day: int) -> list[tuple[int, Activity]]:
        key = (slug, day)
        if key not in self._plans:
            self._plans[key] = day_plan(self.definition.agent(slug), day, self.seed)
        return self._plans[key]

    def observe(self, state: WorldState, report: TickReport) -> None:
        self.ticks += 1
        day = self.days.setdefault(report.time.day, Tally())
        self._conversations(report, day)
        for slug, agent in state.agents.items():
            self._agent(slug, agent, report, day)
        self._beliefs_of(state, report.tick, day)

    def _conversations(self, report: TickReport, day: Tally) -> None:
        for conv in report.conversations:
            a, b = sorted(conv.participants)[:2]
            interests = {*self.definition.agent(a).interests, *self.definition.agent(b).interests}
            day.conversations += 1
            day.off_interest += conv.topic not in interests
            day.topics[conv.topic] += 1
            self.talks.append(Talk(report.time.day, report.time.minute, (a, b), conv.topic))

    def _agent(self, slug: str, agent: AgentState, report: TickReport, day: Tally) -> None:
        profile = self.definition.agent(slug)
        mine = self.agents.setdefault(slug, Tally())
        slot, entry = entry_under_way(lambda d: self.plan(slug, d), report.time.day, report.time.minute)
        at_place = agent.location == entry.location
        self._reached[slug, slot] = self._reached.get((slug, slot), False) or at_place
        at_planned = agent.location == self._planned(slug, agent, report.time.day, report.time.minute)
        changes = {(slug, c.id) for c in getattr(agent, "plan_changes", ())}  # none in older worlds
        new_changes = len(changes - self._changes)
        self._changes |= changes
        lonely = agent.private.emotional_state == LONELY
        for tally in (day, mine):
            tally.agent_ticks += 1
            tally.at_place += at_place
            tally.at_planned += at_planned
            tally.plan_changes += new_changes
            tally.travelling += not at_place and travelling(agent)
            tally.lonely += lonely
        self.emotions[activity_class(profile, agent)][agent.private.emotional_state] += 1

    def _planned(self, slug: str, agent: AgentState, day: int, minute: int) -> str:
        """The place of the step under way in the plan the agent holds: its schedule with the day's
        changes."""
        changes = [c for c in getattr(agent, "plan_changes", ()) if c.day == day]
        if not changes:
            return entry_under_way(lambda d: self.plan(slug, d), day, minute)[1].location
        today = apply_changes(self.plan(slug, day), changes)
        return entry_under_way(lambda d: today if d == day else self.plan(slug, d), day, minute)[1].location

    def _beliefs_of(self, state: WorldState, tick: int, day: Tally) -> None:
        for believer, agent in state.agents.items():
            for target, belief in agent.private.beliefs_about_others.items():
                if target in state.agents:
                    self._belief((believer, target), belief, state.agents[target].location, tick, day)

    def _belief(self, key: PairKey, belief: Belief, truth: str | None, tick: int, day: Tally) -> None:
        heard_from: str | None = getattr(belief, "heard_from", None)  # older worlds have no hearsay
        stale = belief.location != truth
        before = self._beliefs.get(key)
        was_stale = before is not None and before.stale
        day.belief_ticks += 1
        day.stale += stale
        day.episodes += stale and not was_stale
        if before is not None and was_stale and not stale:
            if belief.observed_tick == tick and heard_from is None:
                day.refreshed += 1
                day.ticks_stale_before_refresh += before.run
            elif heard_from is not None and (belief.observed_tick, heard_from) != (
                before.observed_tick,
                before.heard_from,
            ):
                day.heard += 1
            else:
                day.resolved += 1
        run = (before.run if before is not None and was_stale else 0) + 1 if stale else 0
        self._beliefs[key] = _Seen(stale, run, belief.observed_tick, heard_from)

    # ------------------------------------------------------------------------------ the run's figures

    def _with_slots(self, tally: Tally, slug: str | None = None, day: int | None = None) -> Tally:
        """``tally`` with the schedule entries (of ``slug``, of ``day``) under way and never reached."""
        reached = [r for (s, (d, _)), r in self._reached.items() if slug in {None, s} and day in {None, d}]
        return dataclasses.replace(tally, slots=len(reached), slots_missed=reached.count(False))

    def total(self) -> Tally:
        return self._with_slots(sum(self.days.values(), Tally()))

    def day_tallies(self) -> dict[int, Tally]:
        return {d: self._with_slots(t, day=d) for d, t in sorted(self.days.items())}

    def agent_tallies(self) -> dict[str, Tally]:
        return {s: self._with_slots(t, slug=s) for s, t in sorted(self.agents.items())}

    def repeats(self) -> dict[tuple[PairKey, str, int], list[int]]:
        """(pair, topic, minute of the day) -> the days it happened on, where more than one."""
        days: dict[tuple[PairKey, str, int], set[int]] = {}
        for t in self.talks:
            days.setdefault((t.pair, t.topic, t.minute), set()).add(t.day)
        return {k: sorted(d) for k, d in days.items() if len(d) > 1}

    def figures(self) -> dict[str, Any]:
        total = self.total()
        repeats = self.repeats()
        names = {p.slug: p.name for p in self.definition.agents}
        return {
            "seed": self.seed,
            "ticks": self.ticks,
            "total": {
                **total.figures(),
                "distinct_pair_topics": len({(t.pair, t.topic) for t in self.talks}),
                "repeats": sum(len(d) - 1 for d in repeats.values()),
            },
            "repeat_examples": [
                f"{names.get(a, a)} & {names.get(b, b)} on {topic!r} at {format_minute(minute)}, "
                f"days {', '.join(map(str, d))}"
                for ((a, b), topic, minute), d in sorted(repeats.items())[:5]
            ],
            "topics": dict(total.topics.most_common()),
            "days": {str(d): t.figures() for d, t in self.day_tallies().items()},
            "agents": {s: t.figures() for s, t in self.agent_tallies().items()},
            "emotions_by_activity": {c: dict(n.most_common()) for c, n in self.emotions.items()},
        }


def run_town(definition: TownDefinition, seed: int, days: int) -> TownLifeStats:
    town = Town(definition, seed=seed)
    stats = TownLifeStats(definition, seed)
    for _ in range(days * TICKS_PER_DAY):
        for report in town.step(1):
            stats.observe(town.state, report)
    return stats


# ---------------------------------------------------------------------------------------- report


@dataclass
class Params(BenchParams):
    days: int
    seed: list[int]


K = TypeVar("K", int, str)


def pooled(runs: Iterable[Mapping[K, Tally]]) -> dict[K, Tally]:
    """Each key's tallies added over the runs."""
    out: dict[K, Tally] = {}
    for tallies in runs:
        for key, tally in tallies.items():
            out[key] = out.get(key, Tally()) + tally
    return dict(sorted(out.items()))


@dataclass
class Report:
    params: Params
    runs: list[TownLifeStats]
    elapsed_s: float

    def pooled_days(self) -> dict[int, Tally]:
        return pooled(r.day_tallies() for r in self.runs)

    def pooled_agents(self) -> dict[str, Tally]:
        return pooled(r.agent_tallies() for r in self.runs)

    def pooled_emotions(self) -> dict[str, Counter[str]]:
        return {c: sum((r.emotions[c] for r in self.runs), Counter[str]()) for c in ACTIVITY_CLASSES}

    def to_json(self) -> dict[str, Any]:
        runs = [r.figures() for r in self.runs]
        figures = {
            "runs": runs,
            "mean": {key: mean([get(f) for f in runs]) for key, _, get, _ in HEADLINE},
            "pooled": {
                "days": {str(d): t.figures() for d, t in sorted(self.pooled_days().items())},
                "agents": {s: t.figures() for s, t in sorted(self.pooled_agents().items())},
                "emotions_by_activity": {c: dict(n.most_common()) for c, n in self.pooled_emotions().items()},
            },
        }
        machine = {
            "python_version": platform.python_version(),
            "world": str(Path(inspect.getfile(Town)).parent),
        }
        return results_json("bench.town_life", self.params, machine, figures, self.elapsed_s)


def mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _total(key: str) -> Callable[[Mapping[str, Any]], float | None]:
    return lambda figures: figures["total"][key]


HEADLINE: tuple[tuple[str, str, Callable[[Mapping[str, Any]], float | None], str], ...] = (
    ("conversations", "conversations", _total("conversations"), "n"),
    ("distinct_topics", "distinct topics", _total("distinct_topics"), "n"),
    ("distinct_pair_topics", "distinct (pair, topic)", _total("distinct_pair_topics"), "n"),
    ("repeats", "repeats: pair+topic+time on another day (target 0)", _total("repeats"), "n"),
    ("off_interest_share", "topics outside both speakers' interests", _total("off_interest_share"), "%"),
    ("at_place_share", "agent-ticks at the scheduled place", _total("at_place_share"), "%"),
    ("at_planned_share", "... at the place of the plan with its changes", _total("at_planned_share"), "%"),
    ("plan_changes", "plan changes made", _total("plan_changes"), "n"),
    ("travelling_share", "agent-ticks travelling", _total("travelling_share"), "%"),
    ("elsewhere_share", "agent-ticks elsewhere", _total("elsewhere_share"), "%"),
    ("slots", "schedule entries under way", _total("slots"), "n"),
    ("slots_missed", "schedule entries never reached", _total("slots_missed"), "n"),
    ("lonely_share", "agent-ticks lonely", _total("lonely_share"), "%"),
    ("belief_ticks", "belief-ticks", _total("belief_ticks"), "n"),
    ("stale_share", "belief-ticks stale", _total("stale_share"), "%"),
    ("episodes", "stale episodes started", _total("episodes"), "n"),
    ("refreshed", "refreshed by co-location", _total("refreshed"), "n"),
    ("heard", "set right by a conversation", _total("heard"), "n"),
    ("resolved", "came true again without an update", _total("resolved"), "n"),
    (
        "mean_ticks_stale_before_refresh",
        "mean ticks stale before a refresh",
        _total("mean_ticks_stale_before_refresh"),
        "f",
    ),
)
"""The figures printed per seed and averaged: (JSON key, label, getter, format)."""


def cell(value: float | None, kind: str) -> str:
    if kind == "%":
        return num(None if value is None else 100 * value, ".1f")
    return num(value, ".2f" if kind == "f" or (value is not None and value != int(value)) else ".0f")


def format_headline(report: Report) -> str:
    runs = [r.figures() for r in report.runs]
    seeds = [f"seed {r.seed}" for r in report.runs]
    columns = [("figure", -52), *((s, 8) for s in seeds)]
    if len(runs) > 1:
        columns.append(("mean", 8))
    rows = []
    for _, label, get, kind in HEADLINE:
        values = [get(f) for f in runs]
        cells = [cell(v, kind) for v in values]
        if len(runs) > 1:
            cells.append(cell(mean(values), kind))
        rows.append([label + (" %" if kind == "%" else ""), *cells])
    days = report.params.days
    head = f"AURATown, {days} day(s) x {TICKS_PER_DAY} ticks, seeds {', '.join(map(str, report.params.seed))}"
    examples = [f"  seed {f['seed']} repeat: {e}" for f in runs for e in f["repeat_examples"][:2]]
    return "\n".join([head, *table(columns, rows), *examples])


DAY_COLUMNS = (
    ("day", 3),
    ("convs", 5),
    ("topics", 6),
    ("off-int %", 9),
    ("at place %", 10),
    ("travel %", 8),
    ("unreached", 9),
    ("lonely %", 8),
    ("stale %", 7),
    ("episodes", 8),
    ("refreshed", 9),
    ("heard", 5),
)


def _pct(value: float | None) -> str:
    return cell(value, "%")


def format_days(report: Report) -> str:
    n = len(report.runs)
    rows = []
    for d, t in sorted(report.pooled_days().items()):
        f = t.figures()
        rows.append(
            [
                str(d),
                num(t.conversations / n, ".1f"),
                str(len(t.topics)),
                _pct(f["off_interest_share"]),
                _pct(f["at_place_share"]),
                _pct(f["travelling_share"]),
                num(t.slots_missed / n, ".1f"),
                _pct(f["lonely_share"]),
                _pct(f["stale_share"]),
                num(t.episodes / n, ".1f"),
                num(t.refreshed / n, ".1f"),
                num(t.heard / n, ".1f"),
            ]
        )
    note = "per day, pooled over the seeds (counts: mean per seed; topics: distinct over the seeds)"
    return "\n".join([note, *table(DAY_COLUMNS, rows)])


AGENT_COLUMNS = (
    ("agent", -10),
    ("at place %", 10),
    ("planned %", 9),
    ("travel %", 8),
    ("elsewhere %", 11),
    ("never reached", 13),
    ("lonely %", 8),
)


def format_agents(report: Report) -> str:
    rows = []
    for slug, t in sorted(report.pooled_agents().items()):
        f = t.figures()
        rows.append(
            [
                slug,
                _pct(f["at_place_share"]),
                _pct(f["at_planned_share"]),
                _pct(f["travelling_share"]),
                _pct(f["elsewhere_share"]),
                f"{t.slots_missed}/{t.slots}",
                _pct(f["lonely_share"]),
            ]
        )
    return "\n".join(["per agent, pooled over the seeds", *table(AGENT_COLUMNS, rows)])


def format_emotions(report: Report) -> str:
    pooled = report.pooled_emotions()
    overall = sum(pooled.values(), Counter[str]())
    states = [s for s, _ in overall.most_common()]
    columns = [("activity", -8), ("n", 5), *((s, max(len(s), 5)) for s in states)]
    rows = []
    for c in ACTIVITY_CLASSES:
        n = sum(pooled[c].values())
        rows.append([c, str(n), *(_pct(share(pooled[c][s], n)) for s in states)])
    total = sum(overall.values())
    rows.append(["all", str(total), *(_pct(share(overall[s], total)) for s in states)])
    note = "emotional state by activity, % of each row's agent-ticks, pooled over the seeds"
    return "\n".join([note, *table(columns, rows)])


# ---------------------------------------------------------------------------------------- main


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of seeds: {text!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError("no seed given")
    return seeds


def parse_args(argv: Sequence[str] | None) -> Params:
    cli = BenchParser("bench.town_life", __doc__, quick="one day")
    cli.sized("--days", "simulated days per seed", DAYS)
    cli.parser.add_argument(
        "--seed", type=_seeds, default=[0], help="the world's seed, or a comma list of seeds (default 0)"
    )
    args = cli.parse(list(argv) if argv is not None else None)
    if args.days < 1:
        cli.error("--days must be at least 1")
    return params_from(Params, args)


def run(params: Params) -> Report:
    started = time.monotonic()
    definition = embedded_town()
    runs = [run_town(definition, seed, params.days) for seed in params.seed]
    return Report(params, runs, time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    params = begin(parse_args, argv)
    report = run(params)
    sections = (format_headline, format_days, format_agents, format_emotions)
    finish(report, Path(params.out), [s(report) for s in sections], elapsed_s=report.elapsed_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
