"""One tick of the town, as pure functions over ``WorldState``.

The order within a tick follows DESIGN.md: perceptions out, decisions in (an agent without a
decision keeps its scheduled action), movement, conversations, private-state rules, belief
refresh, events. ``advance`` mutates the state it is given and returns what happened.
"""

from __future__ import annotations

import bisect
import hashlib
import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from messages.town import (
    INJECTABLE_KINDS,
    AgentView,
    BeliefView,
    ConversationRecord,
    Decision,
    EventAccepted,
    InjectEvent,
    Perception,
    PlanChange,
    PrivateView,
    TownEvent,
    TownStateView,
)
from world.clock import DAY_END_MINUTE, MINUTES_PER_TICK, NIGHT_MOVES, SimTime, format_minute, sim_time
from world.conversation import (
    ACCEPT_PROBABILITY,
    TOPICS_REMEMBERED,
    DialogueWriter,
    Speaker,
    Topic,
    can_talk,
    choose_topic,
    heard_belief,
    lines_for,
    pick_pairs,
    topics,
    voice_conversations,
)
from world.definition import Gathering, TownDefinition
from world.movement import spot, step_towards
from world.plans import agent_plan, departure, under_way
from world.rng import derive_rng
from world.rules import DEFAULT_RULES, DND, PrivateStateRules, RuleInput, evolve
from world.state import AgentState, Belief, PrivateState, WorldState, pair_key

MAX_EVENTS = 500
MAX_CONVERSATIONS = 200


class InvalidEventError(ValueError):
    """An injected event the world refuses, with a one-line reason."""


@dataclass
class TickReport:
    tick: int
    time: SimTime
    digest: str
    events: list[TownEvent] = field(default_factory=list)
    conversations: list[ConversationRecord] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- setup and reading


def initial_state(definition: TownDefinition, seed: int) -> WorldState:
    """Every agent asleep at its spot at home, before tick 0."""
    state = WorldState(seed=seed)
    for profile in definition.agents:
        x, y = spot(seed, profile.slug, definition.location(profile.home))
        state.agents[profile.slug] = AgentState(
            slug=profile.slug,
            name=profile.name,
            x=x,
            y=y,
            location=definition.location_at(x, y),
            action="sleeping",
            target=profile.home,
            private=PrivateState(
                availability=DND, emotional_state="resting", unspoken_goal=None, rule="sleep"
            ),
        )
    return state


def digest(state: WorldState) -> str:
    return hashlib.sha256(state.model_dump_json().encode()).hexdigest()


def groups_by_location(state: WorldState) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for slug, agent in state.agents.items():
        if agent.location is not None:
            groups.setdefault(agent.location, []).append(slug)
    return groups


def nearby_names(state: WorldState, groups: dict[str, list[str]], slug: str) -> tuple[str, ...]:
    """Names of the other agents at ``slug``'s location (none while it is between places)."""
    location = state.agents[slug].location
    if location is None:
        return ()
    return tuple(state.agents[s].name for s in groups[location] if s != slug)


def _event_index(state: WorldState, event_id: int) -> int | None:
    i = bisect.bisect_left(state.events, event_id, key=lambda e: e.id)
    return i if i < len(state.events) and state.events[i].id == event_id else None


def _events_by_id(state: WorldState, ids: list[int]) -> list[TownEvent]:
    out = []
    for event_id in ids:
        i = _event_index(state, event_id)
        if i is not None:
            out.append(state.events[i])
    return out


def perceptions(definition: TownDefinition, state: WorldState) -> dict[str, Perception]:
    """What each agent perceives before tick ``state.tick``: its place, company, new events and
    the conversations it had last tick. Marks the delivered events as seen."""
    now = sim_time(state.tick)
    groups = groups_by_location(state)
    recent_talks: dict[str, list[ConversationRecord]] = {}
    for conv in state.conversations:
        if conv.tick == state.tick - 1:
            for p in conv.participants:
                recent_talks.setdefault(p, []).append(conv)
    out = {}
    for slug, agent in state.agents.items():
        new_ids = [i for i in agent.perceived if i > agent.event_cursor]
        if agent.perceived:
            agent.event_cursor = max(agent.event_cursor, agent.perceived[-1])
        out[slug] = Perception(
            tick=state.tick,
            day=now.day,
            time=now.hhmm,
            minute=now.absolute_minutes,
            x=agent.x,
            y=agent.y,
            location=agent.location,
            action=agent.action,
            target=agent.target,
            nearby=nearby_names(state, groups, slug),
            events=tuple(_events_by_id(state, new_ids)),
            conversations=tuple(recent_talks.get(slug, ())),
            plan_changes=tuple(c for c in agent.plan_changes if c.day == now.day),
        )
    return out


def scheduled_decision(definition: TownDefinition, state: WorldState, slug: str) -> Decision:
    """The decision an agent's schedule gives: what it keeps when its mind misses the deadline."""
    now = sim_time(state.tick)
    plan = agent_plan(definition.agent(slug), now.day, state.seed, state.agents[slug].plan_changes)
    activity = under_way(plan, now.minute)
    return Decision(tick=state.tick, action=activity.action, target=activity.location, mind="schedule")


# ---------------------------------------------------------------- events


def _log_event(state: WorldState, event: TownEvent, witnesses: list[str], rules: PrivateStateRules) -> None:
    state.events.append(event)
    if len(state.events) > MAX_EVENTS:
        del state.events[: len(state.events) - MAX_EVENTS]
    keep = max(rules.stress_window, 8)
    for slug in witnesses:
        perceived = state.agents[slug].perceived
        perceived.append(event.id)
        if len(perceived) > keep:
            del perceived[: len(perceived) - keep]


def _witnesses(state: WorldState, location: str | None, participants: tuple[str, ...]) -> list[str]:
    if location is None:
        return list(state.agents)
    present = [s for s, a in state.agents.items() if a.location == location]
    return present + [p for p in participants if p not in present]


def inject(
    definition: TownDefinition, state: WorldState, spec: InjectEvent, rules: PrivateStateRules = DEFAULT_RULES
) -> EventAccepted:
    """Log an environment event now; agents present (everyone, for a town-wide one) perceive it.
    It is in their stress window when the next tick evolves private state."""
    if spec.location is not None and not definition.has_location(spec.location):
        known = ", ".join(sorted(loc.name for loc in definition.locations)[:8])
        raise InvalidEventError(f"no location named {spec.location!r} (known: {known}, ...)")
    participants = []
    for who in spec.participants:
        profile = definition.find_agent(who)
        if profile is None:
            raise InvalidEventError(f"no agent named {who!r}")
        participants.append(profile.slug)
    event = TownEvent(
        id=state.next_event_id,
        tick=state.tick,
        kind=spec.kind,
        description=spec.description.strip(),
        location=spec.location,
        participants=tuple(participants),
        source="environment",
    )
    state.next_event_id += 1
    witnesses = _witnesses(state, spec.location, event.participants)
    _log_event(state, event, witnesses, rules)
    if event.kind in AVOIDED_AFTER and event.location is not None:
        for slug in witnesses:
            _avoid(definition, state, slug, event, rules)
    return EventAccepted(event=event, witnesses=tuple(witnesses))


AVOIDED_AFTER = frozenset({"emergency", "accident", "outage"})
"""Event kinds after which those who witnessed them keep away from the place for the rest of the day."""


def _avoid(
    definition: TownDefinition, state: WorldState, slug: str, event: TownEvent, rules: PrivateStateRules
) -> None:
    """The rest of today's steps at the event's place (the one under way included) become time at
    home: one plan change per run of such steps, announced to the agent."""
    now = sim_time(state.tick)
    profile = definition.agent(slug)
    plan = agent_plan(profile, now.day, state.seed, state.agents[slug].plan_changes)
    if profile.home == event.location:
        return
    ends = [start for start, _ in plan[1:]] + [DAY_END_MINUTE + MINUTES_PER_TICK]
    spans: list[list[int]] = []  # runs of consecutive steps at the place, from now on
    for (begins, activity), end in zip(plan, ends, strict=True):
        if activity.location != event.location or end <= now.minute:
            continue
        start = max(begins, now.minute)
        if spans and spans[-1][1] == start:
            spans[-1][1] = end
        else:
            spans.append([start, end])
    for start, end in spans:
        change = PlanChange(
            id=state.next_event_id,
            day=now.day,
            start=start,
            end=end,
            location=profile.home,
            action=f"staying home after the {event.kind} at {event.location}",
            reason=f"{event.kind}: {event.description}",
        )
        _change_plan(state, slug, change, [slug], rules)


def record_exchange(
    definition: TownDefinition,
    state: WorldState,
    asker: str,
    query: str,
    answer: str,
    *,
    rules: PrivateStateRules = DEFAULT_RULES,
) -> EventAccepted:
    """Log a question the assistant answered. Only the asker perceives it: a private exchange,
    which reaches the asker's memory through the next tick's perception like any event."""
    profile = definition.find_agent(asker)
    if profile is None:
        raise InvalidEventError(f"no agent named {asker!r}")
    short = answer.strip() if len(answer.strip()) <= 300 else answer.strip()[:299] + "…"
    event = TownEvent(
        id=state.next_event_id,
        tick=state.tick,
        kind="assistant",
        description=f"asked the assistant {query.strip()!r}; it answered: {short}",
        location=state.agents[profile.slug].location,
        participants=(profile.slug,),
        source="environment",
    )
    state.next_event_id += 1
    _log_event(state, event, [profile.slug], rules)
    return EventAccepted(event=event, witnesses=(profile.slug,))


# ---------------------------------------------------------------- the tick


def advance(
    definition: TownDefinition,
    state: WorldState,
    decisions: Mapping[str, Decision],
    rules: PrivateStateRules = DEFAULT_RULES,
    dialogue: DialogueWriter | None = None,
) -> TickReport:
    """Apply tick ``state.tick`` with the agents' decisions; missing or unusable ones fall back to
    the schedule. ``dialogue`` words the tick's conversations (default: the templates). Returns
    the tick's report; ``state.tick`` moves on by one."""
    tick = state.tick
    now = sim_time(tick)
    seed = state.seed
    report = TickReport(tick=tick, time=now, digest="")

    # 0. the night: whoever was still on the way at 23:00 walks on (the night's ticks of walking)
    if now.slot == 0 and tick > 0:
        for slug, agent in state.agents.items():
            agent.plan_changes = [c for c in agent.plan_changes if c.day >= now.day]
            if agent.target is not None and definition.has_location(agent.target):
                goal = spot(seed, slug, definition.location(agent.target))
                for _ in range(NIGHT_MOVES):
                    agent.x, agent.y = step_towards((agent.x, agent.y), goal)
                agent.location = definition.location_at(agent.x, agent.y)

    # 1. decisions and movement
    for slug, agent in state.agents.items():
        decision = decisions.get(slug)
        if decision is None or decision.tick != tick or not definition.has_location(decision.target):
            report.missed.append(slug)
            agent.missed_decisions += 1
            decision = scheduled_decision(definition, state, slug)
        goal = spot(seed, slug, definition.location(decision.target))
        agent.x, agent.y = step_towards((agent.x, agent.y), goal)
        agent.location = definition.location_at(agent.x, agent.y)
        agent.target = decision.target
        agent.action = (
            decision.action if agent.location == decision.target else f"walking to {decision.target}"
        )
    state.missed_decisions += len(report.missed)
    groups = groups_by_location(state)

    # 2. conversations between co-located agents
    for location in sorted(groups):
        members = groups[location]
        if len(members) < 2:
            continue
        candidates = [
            s for s in members if can_talk(state.agents[s], bool(rules.sleep.search(state.agents[s].action)))
        ]
        if len(candidates) < 2:
            continue
        rng = derive_rng(seed, "talk", tick, location)
        for a, b in pick_pairs(candidates, state.last_talked, tick, rng):
            conv, event = _converse(definition, state, (a, b), location, members, rng, rules)
            report.conversations.append(conv)
            report.events.append(event)
    report.events.extend(e for e in state.events if e.kind == "plan" and e.tick == tick)
    if dialogue is not None and report.conversations:
        report.conversations = _voiced(definition, state, report.conversations, dialogue)
    state.conversations.extend(report.conversations)
    if len(state.conversations) > MAX_CONVERSATIONS:
        del state.conversations[: len(state.conversations) - MAX_CONVERSATIONS]
    # Cooldowns older than the cooldown window can never block again: keep the map small.
    if report.conversations or len(state.last_talked) > 4 * len(state.agents):
        state.last_talked = {k: t for k, t in state.last_talked.items() if tick - t <= 2}

    # 3. private state by the rule table
    event_text: dict[int, str] = {}
    for slug, agent in state.agents.items():
        profile = definition.agent(slug)
        loc = agent.location
        peers = len(groups[loc]) - 1 if loc is not None else 0
        texts = []
        for event_id in agent.perceived[-rules.stress_window :]:
            text = event_text.get(event_id)
            if text is None:
                events = _events_by_id(state, [event_id])
                text = event_text[event_id] = events[0].text if events else ""
            texts.append(text)
        outcome = evolve(
            RuleInput(
                action=agent.action,
                at_workplace=loc is not None and loc in profile.workplaces,
                peers=peers,
                open_now=loc is not None and definition.location(loc).is_open(now.minute),
                recent_events=tuple(texts),
                previous_emotion=agent.private.emotional_state,
                standing_goal=profile.unspoken_goal or None,
            ),
            rules,
        )
        p = agent.private
        p.rule, p.availability, p.emotional_state, p.unspoken_goal = outcome

    # 4. beliefs refresh only between agents sharing a location this tick
    for members in groups.values():
        if len(members) < 2:
            continue
        seen = {
            s: Belief(
                location=state.agents[s].location,
                action=state.agents[s].action,
                availability=state.agents[s].private.availability,
                emotional_state=state.agents[s].private.emotional_state,
                observed_tick=tick,
            )
            for s in members
        }
        for s in members:
            beliefs = state.agents[s].private.beliefs_about_others
            for other in members:
                if other != s:
                    beliefs[other] = seen[other]

    state.tick = tick + 1
    report.digest = digest(state)
    return report


# ---------------------------------------------------------------- conversations and plan changes


def _speaker(definition: TownDefinition, state: WorldState, slug: str) -> Speaker:
    agent = state.agents[slug]
    events = [e for e in _events_by_id(state, agent.perceived) if e.kind in INJECTABLE_KINDS]
    return Speaker(
        profile=definition.agent(slug),
        action=agent.action,
        beliefs=agent.private.beliefs_about_others,
        events=tuple(events),
    )


def _converse(  # noqa: PLR0917 - one conversation needs each of these
    definition: TownDefinition,
    state: WorldState,
    pair: tuple[str, str],
    location: str,
    present: list[str],
    rng: random.Random,
    rules: PrivateStateRules,
) -> tuple[ConversationRecord, TownEvent]:
    """One conversation: its topic and lines, the ``conversation`` event everyone ``present``
    perceives, then what it changes (the listener's belief about a third agent; the listener's
    plan, and maybe the host's, when it accepts an invitation: announced after the conversation)."""
    tick = state.tick
    a, b = pair
    key = pair_key(a, b)
    names = {s: ag.name for s, ag in state.agents.items()}
    first, second = _speaker(definition, state, a), _speaker(definition, state, b)
    topic = choose_topic(topics(first, second, names, state.pair_topics.get(key, ()), present), rng)
    teller = first if topic.speaker == a else second
    listener = b if topic.speaker == a else a
    invitation = _invitation(definition, state, topic, listener, rng) if topic.kind == "gathering" else None
    accepted = None if invitation is None else invitation >= 0
    record = ConversationRecord(
        tick=tick,
        location=location,
        participants=(a, b),
        topic=topic.text,
        lines=lines_for(topic, first, second, names, accepted, rng),
    )
    event = TownEvent(
        id=state.next_event_id,
        tick=tick,
        kind="conversation",
        description=f"{names[a]} and {names[b]} talked about {topic.text}",
        location=location,
        participants=(a, b),
    )
    state.next_event_id += 1
    _log_event(state, event, list(present), rules)
    state.last_talked[key] = tick
    recent = state.pair_topics.setdefault(key, [])
    recent.append(topic.text)
    del recent[:-TOPICS_REMEMBERED]
    if topic.kind == "news" and topic.about is not None:
        beliefs = state.agents[listener].private.beliefs_about_others
        beliefs[topic.about] = heard_belief(teller, topic.about, topic.speaker)
    elif invitation is not None and invitation >= 0:
        _accept(definition, state, topic.speaker, listener, invitation, rules=rules)
    return record, event


def _invitation(
    definition: TownDefinition, state: WorldState, topic: Topic, guest: str, rng: random.Random
) -> int | None:
    """The host raises its gathering. The day ``guest`` accepts it for (today if it can still be
    there in time, else tomorrow), -1 if it declines (the seeded draw), None if there is nothing to
    accept (no gathering, or already coming)."""
    gathering = definition.agent(topic.speaker).gathering
    if gathering is None:
        return None
    now = sim_time(state.tick)
    agent = state.agents[guest]
    profile = definition.agent(guest)
    day = now.day
    today = agent_plan(profile, day, state.seed, agent.plan_changes)
    leave = departure(definition, profile, today, gathering.location, gathering.start_minute, state.seed)
    if leave < now.minute + MINUTES_PER_TICK:
        day += 1  # too late to get there today: tomorrow
    if any(c.day == day and c.action == gathering.activity for c in agent.plan_changes):
        return None  # already coming
    return day if rng.random() < ACCEPT_PROBABILITY else -1


def _accept(
    definition: TownDefinition,
    state: WorldState,
    host_slug: str,
    guest: str,
    day: int,
    *,
    rules: PrivateStateRules,
) -> None:
    """The guest's plan for ``day`` takes it to the host's gathering; the host's too, if it had
    not planned to be there."""
    host = definition.agent(host_slug)
    gathering = host.gathering
    assert gathering is not None  # _invitation checked
    _join(definition, state, guest, day, gathering, gathering.activity, f"invited by {host.name}", rules)
    host_plan = agent_plan(host, day, state.seed, state.agents[host_slug].plan_changes)
    if under_way(host_plan, gathering.start_minute).location != gathering.location:
        coming = f"{state.agents[guest].name} is coming"
        _join(definition, state, host_slug, day, gathering, f"hosting {gathering.topic}", coming, rules)


def _join(  # noqa: PLR0917 - a plan change needs each of these
    definition: TownDefinition,
    state: WorldState,
    slug: str,
    day: int,
    gathering: Gathering,
    action: str,
    reason: str,
    rules: PrivateStateRules,
) -> None:
    """Change ``slug``'s plan for ``day`` to be at ``gathering`` from when it must set off (or from
    the start, if its plan has it there already) until the gathering ends."""
    profile = definition.agent(slug)
    agent = state.agents[slug]
    plan = agent_plan(profile, day, state.seed, agent.plan_changes)
    leave = departure(definition, profile, plan, gathering.location, gathering.start_minute, state.seed)
    start = leave if under_way(plan, leave).location != gathering.location else gathering.start_minute
    change = PlanChange(
        id=state.next_event_id,
        day=day,
        start=start,
        end=gathering.end_minute,
        location=gathering.location,
        action=action,
        reason=reason,
    )
    _change_plan(state, slug, change, [slug], rules)


def _change_plan(
    state: WorldState, slug: str, change: PlanChange, witnesses: list[str], rules: PrivateStateRules
) -> None:
    """Record ``change`` in the agent's plan and announce it (a ``plan`` event its witnesses perceive)."""
    agent = state.agents[slug]
    agent.plan_changes.append(change)
    when = "today" if change.day == sim_time(state.tick).day else f"on day {change.day}"
    event = TownEvent(
        id=change.id,
        tick=state.tick,
        kind="plan",
        description=(
            f"{agent.name} changed plans {when}: {format_minute(change.start)}-{format_minute(change.end)} "
            f"{change.action} at {change.location} ({change.reason})"
        ),
        location=agent.location,
        participants=(slug,),
    )
    state.next_event_id = max(state.next_event_id, change.id + 1)
    _log_event(state, event, witnesses, rules)


def _voiced(
    definition: TownDefinition, state: WorldState, records: list[ConversationRecord], writer: DialogueWriter
) -> list[ConversationRecord]:
    pairs = [(r.participants[0], r.participants[1]) for r in records]
    agents = state.agents
    return voice_conversations(
        writer,
        records,
        [(definition.agent(a), definition.agent(b)) for a, b in pairs],
        [(agents[a].action, agents[b].action) for a, b in pairs],
        [(agents[a].private.emotional_state, agents[b].private.emotional_state) for a, b in pairs],
    )


# ---------------------------------------------------------------- views


def _private_view(p: PrivateState) -> PrivateView:
    return PrivateView(
        availability=p.availability,
        emotional_state=p.emotional_state,
        unspoken_goal=p.unspoken_goal,
        rule=p.rule,
        beliefs_about_others={
            k: BeliefView(**b.model_dump()) for k, b in sorted(p.beliefs_about_others.items())
        },
    )


def view(
    definition: TownDefinition,
    state: WorldState,
    *,
    agent: str | None = None,
    include_private: bool = False,
    events: int = 10,
) -> TownStateView:
    """The town as a reader sees it; private state only when asked for."""
    slugs = list(state.agents)
    if agent is not None:
        profile = definition.find_agent(agent)
        if profile is None:
            raise KeyError(f"no agent named {agent!r}")
        slugs = [profile.slug]
    groups = groups_by_location(state)
    shown = sim_time(max(0, state.tick - 1))
    agents = []
    for slug in slugs:
        a = state.agents[slug]
        agents.append(
            AgentView(
                slug=slug,
                name=a.name,
                x=a.x,
                y=a.y,
                location=a.location,
                action=a.action,
                target=a.target,
                nearby=nearby_names(state, groups, slug),
                private=_private_view(a.private) if include_private else None,
            )
        )
    return TownStateView(
        town=definition.name,
        seed=state.seed,
        tick=state.tick,
        day=shown.day,
        time=shown.hhmm,
        digest=digest(state),
        agents=tuple(agents),
        events=tuple(state.events[-events:]) if events else (),
    )
