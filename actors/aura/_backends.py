"""Which backend answers a query: the offline rules, or a model through a shared gateway."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from actors.aura._llm_backend import LLMBackend
from actors.llm import DiskCache, GatewayConfig, LLMGateway, ResponseCache
from world.aura import Backend, OfflineBackend

BackendFactory = Callable[[str | None], Backend]
"""model (None: the default) -> a fresh backend for one query."""


def make_backend_factory(
    default_model: str | None = None,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    cache: ResponseCache | None = None,
    cache_dir: Path | None = None,
    timeout: float = 30.0,
    actor: str = "env",
    gateways: dict[str, LLMGateway] | None = None,
) -> BackendFactory:
    """Offline unless a model is named (per query, or ``default_model``). One gateway per model,
    shared across queries (its usage ledger and cache accumulate); one backend per query."""
    gateways = gateways if gateways is not None else {}  # a caller's dict sees every gateway made (metrics)
    lock = threading.Lock()
    store = cache if cache is not None else (DiskCache(cache_dir) if cache_dir is not None else None)

    def make(model: str | None) -> Backend:
        chosen = model or default_model
        if not chosen or chosen == "offline":
            return OfflineBackend()
        with lock:
            gw = gateways.get(chosen)
            if gw is None:
                config = GatewayConfig(model=chosen, api_base=api_base, api_key=api_key, timeout=timeout)
                gw = gateways[chosen] = LLMGateway(config, cache=store)
        return LLMBackend(gw, actor=actor)

    return make
