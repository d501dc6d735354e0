"""Model usage of the episode actors read back per actor as a wire summary (the gateways
themselves come from ``actors.llm.GatewayPool``)."""

from __future__ import annotations

from actors.llm import (
    LLMGateway,
    UsageStats,
)
from messages.aura import UsageSummary


def actor_usage(gateway: LLMGateway | None, actor: str) -> UsageStats:
    if gateway is None:
        return UsageStats()
    return gateway.usage.by_actor().get(actor, UsageStats())


def usage_summary(before: UsageStats, after: UsageStats, fallbacks: tuple[str, ...] = ()) -> UsageSummary:
    """What ``actor`` spent between two readings of its ledger."""
    return UsageSummary(
        model_calls=max(0, after.calls - before.calls),
        cache_hits=max(0, after.cache_hits - before.cache_hits),
        prompt_tokens=max(0, after.prompt_tokens - before.prompt_tokens),
        completion_tokens=max(0, after.completion_tokens - before.completion_tokens),
        cost_usd=max(0.0, after.cost_usd - before.cost_usd),
        fallbacks=fallbacks,
    )


def add_usage(a: UsageSummary, b: UsageSummary) -> UsageSummary:
    return UsageSummary(
        model_calls=a.model_calls + b.model_calls,
        cache_hits=a.cache_hits + b.cache_hits,
        prompt_tokens=a.prompt_tokens + b.prompt_tokens,
        completion_tokens=a.completion_tokens + b.completion_tokens,
        cost_usd=a.cost_usd + b.cost_usd,
        fallbacks=a.fallbacks + b.fallbacks,
        answered=a.answered + b.answered,
    )


def fallback_reasons(gateway: LLMGateway | None, actor: str) -> tuple[str, ...]:
    """Every fallback ``actor`` recorded on ``gateway``, as ``stage: reason``."""
    if gateway is None:
        return ()
    return tuple(f"{r.stage}: {r.reason}" for r in gateway.usage.fallback_records() if r.actor == actor)
