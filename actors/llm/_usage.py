"""Token, cost, latency and failure accounting per actor, per stage and in total."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from actors.llm._stages import Stage


@dataclass(frozen=True)
class UsageStats:
    calls: int = 0
    """Requests sent to the model: every attempt, retries and repair calls included."""
    cache_hits: int = 0
    """Gateway calls answered from the response cache (no request sent)."""
    prompt_tokens: int = 0
    """Every request's, failed ones included (counted locally when the provider sent no usage)."""
    completion_tokens: int = 0
    cost_usd: float = 0.0
    """From litellm's cost map; 0 for a model it does not price (e.g. a local server)."""
    latency_s: float = 0.0
    """Wall time spent waiting on the model, failed attempts included."""
    failures: int = 0
    """Gateway calls that ended in an LLMError."""
    retries: int = 0
    repairs: int = 0
    fallbacks: int = 0
    """Callers that gave up on the model and used an offline backend (``record_fallback``)."""
    trimmed: int = 0
    """Requests whose prompt was cut to fit the model's context window (``llm.trimmed`` events)."""

    def __add__(self, other: UsageStats) -> UsageStats:
        return UsageStats(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FallbackRecord:
    stage: Stage
    actor: str
    reason: str


@dataclass
class _Totals:
    total: UsageStats = field(default_factory=UsageStats)
    by_actor: dict[str, UsageStats] = field(default_factory=dict)
    by_stage: dict[Stage, UsageStats] = field(default_factory=dict)


class UsageLedger:
    """Thread-safe: actors on several threads share one gateway. Reads return snapshots."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._t = _Totals()
        self._fallbacks: list[FallbackRecord] = []

    def add(self, stage: Stage, actor: str, delta: UsageStats) -> None:
        with self._lock:
            self._add(stage, actor, delta)

    def add_fallback(self, stage: Stage, actor: str, reason: str) -> None:
        with self._lock:
            self._fallbacks.append(FallbackRecord(stage, actor, reason))
            self._add(stage, actor, UsageStats(fallbacks=1))

    def _add(self, stage: Stage, actor: str, delta: UsageStats) -> None:
        self._t.total = self._t.total + delta
        self._t.by_actor[actor] = self._t.by_actor.get(actor, UsageStats()) + delta
        self._t.by_stage[stage] = self._t.by_stage.get(stage, UsageStats()) + delta

    def total(self) -> UsageStats:
        with self._lock:
            return self._t.total

    def by_actor(self) -> dict[str, UsageStats]:
        with self._lock:
            return dict(self._t.by_actor)

    def by_stage(self) -> dict[Stage, UsageStats]:
        with self._lock:
            return dict(self._t.by_stage)

    def fallback_records(self) -> list[FallbackRecord]:
        with self._lock:
            return list(self._fallbacks)

    def to_dict(self) -> dict[str, Any]:
        """For a run manifest: totals, per actor, per stage and the fallbacks with their reasons."""
        with self._lock:
            return {
                "total": self._t.total.to_dict(),
                "by_actor": {a: s.to_dict() for a, s in sorted(self._t.by_actor.items())},
                "by_stage": {str(st): s.to_dict() for st, s in sorted(self._t.by_stage.items())},
                "fallbacks": [
                    {"stage": str(r.stage), "actor": r.actor, "reason": r.reason} for r in self._fallbacks
                ],
            }
