"""Conversations between co-located agents: who talks (seeded, with a per-pair cooldown), what
about, and a deterministic, templated exchange.

A topic comes from what the two bring: an event one of them saw, the gathering one hopes to bring
others to (the other may accept, and its plan changes), news one has of a third agent that the
other lacks (the listener's belief changes), or their interests; a pair does not go back over its
recent topics. An optional ``DialogueWriter`` (a model, in ``actors/``) may word the exchange
instead; who talks, where, about what and what it changes stay the seed's."""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from messages.town import ConversationRecord, TownEvent
from world.definition import AgentProfile
from world.rules import DND
from world.state import AgentState, Belief, pair_key

COOLDOWN_TICKS = 2
"""A pair that talked at tick t talks again at t + 3 at the earliest (AURA Appendix A6)."""
TALK_PROBABILITY = 0.8

_OPENERS = ("Good to see you", "Hello again", "Oh, hi", "Hey there")
_REPLIES = (
    "I was just thinking about {topic}",
    "Have you heard anything new about {topic}?",
    "{topic} has been on my mind lately",
    "Let's talk about {topic} some time",
)


def can_talk(agent: AgentState, sleeping: bool) -> bool:
    return not sleeping and agent.private.availability != DND


def pick_pairs(
    candidates: list[str], last_talked: dict[str, int], tick: int, rng: random.Random
) -> list[tuple[str, str]]:
    """Pairs who talk this tick: each agent in at most one conversation, cooled-down pairs only."""
    order = sorted(candidates)
    rng.shuffle(order)
    pairs = []
    used: set[str] = set()
    for i, a in enumerate(order):
        if a in used:
            continue
        for b in order[i + 1 :]:
            if b in used:
                continue
            if tick - last_talked.get(pair_key(a, b), -(10**9)) <= COOLDOWN_TICKS:
                continue
            if rng.random() < TALK_PROBABILITY:
                pairs.append((a, b))
                used.update((a, b))
            break  # one try per agent and tick
    return pairs


TopicKind = Literal["event", "gathering", "news", "interest", "day"]
_WEIGHTS: dict[TopicKind, float] = {"event": 3.0, "gathering": 3.0, "news": 2.0, "interest": 1.0, "day": 1.0}
ACCEPT_PROBABILITY = 0.7
"""Chance that a listener takes up an invitation it can keep."""
TOPICS_REMEMBERED = 12
"""A pair does not go back over its last this-many topics."""


@dataclass(frozen=True)
class Topic:
    """What a conversation is about, and what it may change."""

    text: str
    kind: TopicKind
    speaker: str
    """The slug of who brings it up."""
    about: str | None = None
    """news: the slug of the agent it is news of."""
    event: TownEvent | None = None


@dataclass(frozen=True)
class Speaker:
    """One side of a conversation as the world knows it this tick."""

    profile: AgentProfile
    action: str
    beliefs: Mapping[str, Belief]
    events: tuple[TownEvent, ...]
    """Environment events it perceived lately, oldest first."""


def topics(
    a: Speaker, b: Speaker, names: Mapping[str, str], discussed: Sequence[str], present: Collection[str] = ()
) -> list[Topic]:
    """What the pair could talk about, leaving out what it went over lately: events either of them
    saw, the gathering either hopes for, news one has of a third agent (not one ``present``) that
    the other lacks, and their interests; the day itself when nothing else is left."""
    seen = set(discussed)
    out: list[Topic] = []

    def add(topic: Topic) -> None:
        if topic.text not in seen:
            seen.add(topic.text)
            out.append(topic)

    for side in (a, b):
        for event in reversed(side.events):
            where = f" at {event.location}" if event.location else " in town"
            add(Topic(f"the {event.kind}{where}", "event", side.profile.slug, event=event))
    for side in (a, b):
        if side.profile.gathering is not None:
            add(Topic(side.profile.gathering.topic, "gathering", side.profile.slug))
    here = {a.profile.slug, b.profile.slug, *present}
    for side, other in ((a, b), (b, a)):
        for slug, belief in sorted(side.beliefs.items()):
            theirs = other.beliefs.get(slug)
            if slug in here or (theirs is not None and theirs.observed_tick >= belief.observed_tick):
                continue
            add(Topic(f"how {names.get(slug, slug)} is doing", "news", side.profile.slug, about=slug))
    shared = [t for t in a.profile.interests if t in b.profile.interests]
    for side in (a, b):
        for interest in (*shared, *side.profile.interests):
            add(Topic(interest, "interest", side.profile.slug))
    if not out:  # even when they went over it before: there is always the day itself
        out.append(Topic(f"what {a.profile.name.split()[0]} is up to: {a.action}", "day", a.profile.slug))
    return out


def choose_topic(candidates: Sequence[Topic], rng: random.Random) -> Topic:
    """A seeded draw, fresher kinds (events, gatherings, news) weighted above standing interests."""
    return rng.choices(list(candidates), weights=[_WEIGHTS[t.kind] for t in candidates])[0]


def lines_for(  # noqa: PLR0917 - the wording needs each of these
    topic: Topic, a: Speaker, b: Speaker, names: Mapping[str, str], accepted: bool | None, rng: random.Random
) -> tuple[str, ...]:
    """The templated exchange: the one who raises the topic speaks first."""
    first, second = (a, b) if topic.speaker == a.profile.slug else (b, a)
    one, two = first.profile.name, second.profile.name
    hello = f"{one}: {rng.choice(_OPENERS)}, {two.split()[0]}."
    if topic.kind == "event" and topic.event is not None:
        return (
            hello,
            f"{one}: Did you hear? {_sentence(topic.event.description.rstrip('.'))}.",
            f"{two}: " + rng.choice(("That is worrying.", "I had no idea.", "I hope everyone is all right.")),
        )
    if topic.kind == "gathering" and first.profile.gathering is not None:
        g = first.profile.gathering
        reply = (
            "I would love to come; I will be there."
            if accepted
            else "I cannot make it this time, sorry."
            if accepted is False
            else "Good luck with it."
        )
        return (
            hello,
            f"{one}: I am planning {g.topic}, {g.start}-{g.end} at {g.location}. Will you come?",
            f"{two}: {reply}",
        )
    if topic.kind == "news" and topic.about is not None:
        belief = first.beliefs[topic.about]
        where = belief.location or "on the way somewhere"
        return (
            hello,
            f"{one}: I saw {names.get(topic.about, topic.about)} at {where}, {belief.action}.",
            f"{two}: "
            + rng.choice(("Good to know.", "I had not seen them in a while.", "Thanks for telling me.")),
        )
    return (
        hello,
        f"{two}: " + _sentence(rng.choice(_REPLIES).format(topic=topic.text)),
        f"{one}: " + _sentence(rng.choice(_REPLIES).format(topic=topic.text)),
    )


def heard_belief(teller: Speaker, about: str, teller_slug: str) -> Belief:
    """What a listener believes of ``about`` after ``teller`` told it: the teller's belief, marked
    as heard (its observed tick stays the teller's: hearsay is as old as the sighting)."""
    return teller.beliefs[about].model_copy(update={"heard_from": teller_slug})


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


@dataclass(frozen=True)
class ConversationDraft:
    """A conversation the town has decided on (pair, place, topic, templated lines), shown to a
    ``DialogueWriter`` with what the speakers are doing and feeling."""

    record: ConversationRecord
    speakers: tuple[AgentProfile, AgentProfile]
    actions: tuple[str, str]
    moods: tuple[str, str]


class DialogueWriter(Protocol):
    """Optional hook of ``advance``: words the tick's conversations."""

    def write_dialogue(self, drafts: Sequence[ConversationDraft]) -> Sequence[tuple[str, ...] | None]:
        """One entry per draft, in order: its lines, or None to keep the templated ones."""
        ...


def voice_conversations(
    writer: DialogueWriter,
    records: list[ConversationRecord],
    speakers: Sequence[tuple[AgentProfile, AgentProfile]],
    actions: Sequence[tuple[str, str]],
    moods: Sequence[tuple[str, str]],
) -> list[ConversationRecord]:
    """``records`` with the lines ``writer`` gives; a record it gives none (or blank ones) for keeps
    its templated lines."""
    drafts = [
        ConversationDraft(record=r, speakers=s, actions=a, moods=m)
        for r, s, a, m in zip(records, speakers, actions, moods, strict=True)
    ]
    written = list(writer.write_dialogue(drafts))
    if len(written) != len(records):
        return records  # an answer for other conversations than asked about changes nothing
    out = []
    for record, lines in zip(records, written, strict=True):
        usable = tuple(line.strip() for line in lines or () if line.strip())
        out.append(record.model_copy(update={"lines": usable}) if usable else record)
    return out
