"""One LLM gateway per model, shared by the episode actors of a process (their caches and usage
ledgers accumulate across sessions), and usage read back per actor as a wire summary."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from actors.llm import (
    STAGE_SETTINGS,
    DiskCache,
    GatewayConfig,
    LLMGateway,
    ResponseCache,
    StageSettings,
    UsageStats,
)
from messages.aura import UsageSummary


@dataclass
class GatewayPool:
    api_base: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    cache: ResponseCache | None = None
    cache_dir: Path | None = None
    max_tokens: int | None = None
    """A cap on every stage's answer (a small local model that rambles past the timeout)."""
    _gateways: dict[str, LLMGateway] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, model: str) -> LLMGateway:
        with self._lock:
            gw = self._gateways.get(model)
            if gw is None:
                store = self.cache
                if store is None and self.cache_dir is not None:
                    store = self.cache = DiskCache(self.cache_dir)
                overrides = {}
                if self.max_tokens is not None:
                    overrides = {
                        stage: StageSettings(
                            s.temperature, min(s.max_tokens or self.max_tokens, self.max_tokens)
                        )
                        for stage, s in STAGE_SETTINGS.items()
                    }
                config = GatewayConfig(
                    model=model,
                    api_base=self.api_base,
                    api_key=self.api_key,
                    timeout=self.timeout,
                    stage_overrides=overrides,
                )
                gw = self._gateways[model] = LLMGateway(config, cache=store)
            return gw


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
    )


def fallback_reasons(gateway: LLMGateway | None, actor: str) -> tuple[str, ...]:
    """Every fallback ``actor`` recorded on ``gateway``, as ``stage: reason``."""
    if gateway is None:
        return ()
    return tuple(f"{r.stage}: {r.reason}" for r in gateway.usage.fallback_records() if r.actor == actor)
