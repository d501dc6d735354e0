"""Conversations between co-located agents: who talks (seeded, with a per-pair cooldown) and a
deterministic, templated exchange. An optional ``DialogueWriter`` (a model, in ``actors/``) may
word the exchange instead; who talks, where and about what stay the seed's."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from messages.town import ConversationRecord
from world.definition import AgentProfile
from world.rules import DND
from world.state import AgentState, pair_key

COOLDOWN_TICKS = 2
"""A pair that talked at tick t talks again at t + 3 at the earliest (AURA Appendix A6)."""
TALK_PROBABILITY = 0.6

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


def converse(
    a: AgentProfile, b: AgentProfile, location: str, tick: int, rng: random.Random
) -> ConversationRecord:
    shared = [t for t in a.interests if t in b.interests]
    pool = shared or list(a.interests) or list(b.interests) or ["the town"]
    topic = rng.choice(pool)
    lines = (
        f"{a.name}: {rng.choice(_OPENERS)}, {b.name.split()[0]}.",
        f"{b.name}: " + _sentence(rng.choice(_REPLIES).format(topic=topic)),
        f"{a.name}: " + _sentence(rng.choice(_REPLIES).format(topic=topic)),
    )
    return ConversationRecord(
        tick=tick, location=location, participants=(a.slug, b.slug), topic=topic, lines=lines
    )


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
