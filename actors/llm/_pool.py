"""One LLM gateway per model, shared by every caller of a process: its cache and usage ledger
accumulate across queries, sessions and actors."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from actors.llm._cache import DiskCache, ResponseCache
from actors.llm._config import GatewayConfig
from actors.llm._gateway import LLMGateway
from actors.llm._stages import STAGE_SETTINGS, StageSettings


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
                    timeout=self.timeout,
                    stage_overrides=overrides,
                )
                gw = self._gateways[model] = LLMGateway(config, cache=store)
            return gw
