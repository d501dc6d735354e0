"""One LLM gateway per model, shared by every caller of a process: its cache and usage ledger
accumulate across queries, sessions and actors."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from actors.llm._cache import DiskCache, ResponseCache
from actors.llm._config import GatewayConfig
from actors.llm._gateway import LLMGateway
from actors.llm._stages import STAGE_SETTINGS, StageSettings

if TYPE_CHECKING:
    from actors.settings import Settings


@dataclass
class GatewayPool:
    """The deadlines not given come from ``settings`` (None: read at construction), so every
    process of a run (workers too) uses the same ``AURATOWN_MODEL_*`` ones."""

    api_base: str | None = None
    api_key: str | None = None
    timeout: float | None = None
    """Seconds one request may take; None: the settings' ``model_timeout`` (60)."""
    stage_budget: float | None = None
    """Seconds one stage may take (retries and repair); None: the settings' ``model_stage_budget``,
    else ``GatewayConfig``'s default (twice the timeout)."""
    unit_budget: float | None = None
    """Seconds one unit of work may take (a turn, a question, a reflection); None: the settings'
    ``model_unit_budget``, else ``GatewayConfig``'s default (four times the timeout)."""
    cache: ResponseCache | None = None
    cache_dir: Path | None = None
    max_tokens: int | None = None
    """A cap on every stage's answer (a small local model that rambles past the timeout)."""
    settings: Settings | None = field(default=None, repr=False, compare=False)
    _gateways: dict[str, LLMGateway] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.timeout is None or self.stage_budget is None or self.unit_budget is None:
            if self.settings is None:
                from actors.settings import load_settings

                self.settings = load_settings()
            self.timeout = self.timeout or self.settings.model_timeout
            self.stage_budget = self.stage_budget or self.settings.model_stage_budget
            self.unit_budget = self.unit_budget or self.settings.model_unit_budget

    @property
    def gateways(self) -> dict[str, LLMGateway]:
        """The gateways made so far, by model (read by metrics: each one's usage ledger)."""
        with self._lock:
            return dict(self._gateways)

    def get(self, model: str) -> LLMGateway:
        assert self.timeout is not None  # __post_init__ filled it in
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
                    stage_budget=self.stage_budget,
                    unit_budget=self.unit_budget,
                )
                gw = self._gateways[model] = LLMGateway(config, cache=store)
            return gw
