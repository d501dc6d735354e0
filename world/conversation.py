"""Conversations between co-located agents: who talks (seeded, with a per-pair cooldown) and a
deterministic, templated exchange (the LLM writes real dialogue in the environment-agent issue)."""

from __future__ import annotations

import random

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
