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

if TYPE_CHECKING:
    from actors.settings import Settings


@dataclass
class GatewayPool:
    """The deadlines and limits not given come from ``settings`` (None: read at construction), so
    every process of a run (workers too) uses the same ``AURATOWN_MODEL_*`` ones."""

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
    """Output tokens of every stage's answer, replacing each stage's own cap (``--max-tokens``);
    None: the settings' ``model_max_tokens``, else each stage's cap."""
    context_window: int | None = None
    """Tokens the model reads and writes in all (``--context-window``); None: the settings'
    ``model_context_window``, else litellm's model info."""
    settings: Settings | None = field(default=None, repr=False, compare=False)
    _gateways: dict[str, LLMGateway] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.settings is None:
            from actors.settings import load_settings

            self.settings = load_settings()
        self.timeout = self.timeout or self.settings.model_timeout
        self.stage_budget = self.stage_budget or self.settings.model_stage_budget
        self.unit_budget = self.unit_budget or self.settings.model_unit_budget
        self.max_tokens = self.max_tokens or self.settings.model_max_tokens
        self.context_window = self.context_window or self.settings.model_context_window

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
                config = GatewayConfig(
                    model=model,
                    api_base=self.api_base,
                    api_key=self.api_key,
                    timeout=self.timeout,
                    max_tokens=self.max_tokens,
                    context_window=self.context_window,
                    stage_budget=self.stage_budget,
                    unit_budget=self.unit_budget,
                )
                gw = self._gateways[model] = LLMGateway(config, cache=store)
            return gw
