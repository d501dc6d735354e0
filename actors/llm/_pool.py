"""One LLM gateway per model, shared by every caller of a process: its cache and usage ledger
accumulate across queries, sessions and actors."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from actors.llm._cache import DiskCache, ResponseCache
from actors.llm._config import GatewayConfig
from actors.llm._gateway import LLMGateway
from actors.llm._stages import STAGE_SETTINGS, StageSettings

ENV_TIMEOUT = "AURATOWN_MODEL_TIMEOUT"
ENV_STAGE_BUDGET = "AURATOWN_MODEL_STAGE_BUDGET"
ENV_UNIT_BUDGET = "AURATOWN_MODEL_UNIT_BUDGET"
"""Environment variables that set a pool's per-request deadline and its stage and unit budgets
(seconds) when the caller does not: every process of a run (workers too) reads the same ones."""


def _env_seconds(name: str) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not 0 < value < float("inf"):
        raise ValueError(f"{name} must be positive and finite, got {raw!r}")
    return value


@dataclass
class GatewayPool:
    api_base: str | None = None
    api_key: str | None = None
    timeout: float | None = None
    """Seconds one request may take; None: $AURATOWN_MODEL_TIMEOUT, else 60."""
    stage_budget: float | None = None
    """Seconds one stage may take (retries and repair); None: $AURATOWN_MODEL_STAGE_BUDGET, else
    ``GatewayConfig``'s default (twice the timeout)."""
    unit_budget: float | None = None
    """Seconds one unit of work may take (a turn, a question, a reflection); None:
    $AURATOWN_MODEL_UNIT_BUDGET, else ``GatewayConfig``'s default (four times the timeout)."""
    cache: ResponseCache | None = None
    cache_dir: Path | None = None
    max_tokens: int | None = None
    """A cap on every stage's answer (a small local model that rambles past the timeout)."""
    _gateways: dict[str, LLMGateway] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def gateways(self) -> dict[str, LLMGateway]:
        """The gateways made so far, by model (read by metrics: each one's usage ledger)."""
        with self._lock:
            return dict(self._gateways)

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
                    timeout=self.timeout or _env_seconds(ENV_TIMEOUT) or 60.0,
                    stage_overrides=overrides,
                    stage_budget=self.stage_budget or _env_seconds(ENV_STAGE_BUDGET),
                    unit_budget=self.unit_budget or _env_seconds(ENV_UNIT_BUDGET),
                )
                gw = self._gateways[model] = LLMGateway(config, cache=store)
            return gw
