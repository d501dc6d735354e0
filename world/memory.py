"""An agent's memory stream (AURA Appendix A23, after Park et al.): observations, conversations,
reflections and plans, scored for retrieval by recency, importance and keyword similarity.

Recency uses the real elapsed simulation time in minutes (nights included), not the number of
items or ticks between two memories.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from world.text import STOPWORDS, words

MemoryKind = Literal["observation", "conversation", "reflection", "plan"]

MAX_ITEMS = 200
REFLECTION_EVERY = 10
W_RECENCY, W_IMPORTANCE, W_SIMILARITY = 0.3, 0.4, 0.3
DECAY = 0.01

# Emotional salience: the highest matching weight is the memory's importance (1-10).
_SALIENCE: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(rf"\b(?:{p})", re.IGNORECASE), w)
    for p, w in (
        (r"emergenc|fire\b|accident|injur|hurt|ambulance", 9),
        (r"argu|fight|shout|broke|broken|fail", 8),
        (r"worr|stress|anxious|afraid|sad|lonely|upset", 6),
        (r"celebrat|festival|party|wedding|birthday|poetry reading|exhibition", 6),
        (r"secret|plan|goal|deadline|decid|promise|invite", 5),
        (r"talk|chat|conversation|discuss|met\b|meet", 4),
        (r"reflection", 5),
        (r"sleep", 1),
    )
)


def keywords(text: str) -> list[str]:
    """Lower-case content words (``world.text``'s tokens and stopwords, numbers kept: "3pm" and
    "42" tell memories apart), in first-seen order, without duplicates."""
    return list(dict.fromkeys(w for w in words(text) if len(w) > 1 and w not in STOPWORDS))


def importance(text: str) -> int:
    """Keyword heuristic for how much a memory matters (the offline stand-in for an LLM rating)."""
    return max((w for pattern, w in _SALIENCE if pattern.search(text)), default=2)


def similarity(query_words: list[str], item_words: list[str]) -> float:
    """Share of the query's keywords the memory contains (0..1)."""
    if not query_words:
        return 0.0
    words = set(item_words)
    return sum(1 for w in query_words if w in words) / len(query_words)


class MemoryItem(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int
    kind: MemoryKind
    text: str
    importance: int = Field(ge=1, le=10)
    minute: int
    """Absolute simulation minute it was formed (day * 1440 + minute of day)."""
    keywords: list[str]


class ScoredMemory(BaseModel):
    model_config = ConfigDict(frozen=True)

    item: MemoryItem
    score: float
    recency: float
    similarity: float


class MemoryDraft(NamedTuple):
    """A memory about to be added, shown to a mind that scores importance itself."""

    kind: MemoryKind
    text: str
    minute: int
    heuristic: int
    """The keyword heuristic's importance: what the memory gets when the mind gives none."""


ReflectionHook = Callable[[Sequence[MemoryItem], str, int], str | None]
"""(the observations reflected upon, the heuristic reflection text, minute) -> the reflection's
text, or None to keep the heuristic text."""


class MemoryStream(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[MemoryItem] = Field(default_factory=list)
    next_id: int = 1
    observations_since_reflection: int = 0
    max_items: int = MAX_ITEMS
    reflection_every: int = REFLECTION_EVERY

    def add(
        self,
        kind: MemoryKind,
        text: str,
        minute: int,
        weight: int | None = None,
        reflect: ReflectionHook | None = None,
    ) -> MemoryItem:
        """Add a memory (importance: ``weight`` if given, else the heuristic). Every
        ``reflection_every`` observations a reflection follows, worded by ``reflect`` if given."""
        item = MemoryItem(
            id=self.next_id,
            kind=kind,
            text=text,
            importance=importance(text) if weight is None else max(1, min(10, weight)),
            minute=minute,
            keywords=keywords(text),
        )
        self.next_id += 1
        self.items.append(item)
        if kind == "observation":
            self.observations_since_reflection += 1
            if self.observations_since_reflection >= self.reflection_every:
                self.observations_since_reflection = 0
                self._reflect(minute, reflect)
        self._evict()
        return item

    def _reflect(self, minute: int, reflect: ReflectionHook | None = None) -> None:
        recent = [i for i in self.items if i.kind == "observation"][-self.reflection_every :]
        places = Counter(
            m.group(1) for i in recent if (m := re.search(r" at (.+?)(?:[,;:]| with |$)", i.text))
        )
        notable = max(recent, key=lambda i: (i.importance, i.id))
        parts = []
        if places:
            parts.append(f"lately I have mostly been at {places.most_common(1)[0][0]}")
        parts.append(f"what stood out: {notable.text}")
        text = "Reflection: " + "; ".join(parts)
        if reflect is not None:
            worded = reflect(recent, text, minute)
            if worded is not None and worded.strip():
                text = worded.strip()
        weight = min(10, max(i.importance for i in recent) + 1)
        self.items.append(
            MemoryItem(
                id=self.next_id,
                kind="reflection",
                text=text,
                importance=weight,
                minute=minute,
                keywords=keywords(text),
            )
        )
        self.next_id += 1

    def _evict(self) -> None:
        # Oldest observation first: reflections and plans summarise them and are kept longer.
        while len(self.items) > self.max_items:
            idx = next((i for i, m in enumerate(self.items) if m.kind == "observation"), 0)
            del self.items[idx]

    def retrieve(self, query: str, now_minute: int, k: int = 5) -> list[ScoredMemory]:
        """The ``k`` best memories for ``query`` at ``now_minute`` by the weighted score (ties: newer)."""
        q = keywords(query)
        scored = []
        for item in self.items:
            recency = math.exp(-DECAY * max(0, now_minute - item.minute))
            sim = similarity(q, item.keywords)
            score = W_RECENCY * recency + W_IMPORTANCE * item.importance / 10 + W_SIMILARITY * sim
            scored.append(ScoredMemory(item=item, score=score, recency=recency, similarity=sim))
        scored.sort(key=lambda s: (-s.score, -s.item.id))
        return scored[:k]

    def recent(self, n: int = 10, kind: MemoryKind | None = None) -> list[MemoryItem]:
        items = self.items if kind is None else [i for i in self.items if i.kind == kind]
        return items[-n:] if n > 0 else []
