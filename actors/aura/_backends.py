"""Which backend answers a query: the offline rules, or a model through a shared gateway."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from actors.aura._llm_backend import LLMBackend
from actors.llm import GatewayPool, ResponseCache
from world.aura import Backend, OfflineBackend, SocialReader

if TYPE_CHECKING:
    from actors.settings import Settings

BackendFactory = Callable[[str | None], Backend]
"""model (None: the default) -> a fresh backend for one query."""


def make_backend_factory(
    default_model: str | None = None,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    cache: ResponseCache | None = None,
    cache_dir: Path | None = None,
    timeout: float | None = None,
    actor: str = "env",
    pool: GatewayPool | None = None,
    budget: float | None = None,
    reader: SocialReader | None = None,
    settings: Settings | None = None,
) -> BackendFactory:
    """Offline unless a model is named (per query, or ``default_model``). One gateway per model,
    shared across queries (its usage ledger and cache accumulate); one backend per query.
    ``pool``: the gateways to use (a caller that reads their usage, e.g. for metrics).
    ``timeout``: seconds one model request may take (None: the settings'); ``settings``: the
    deadlines and limits not given (None: read now); ``budget``: seconds every model call of one
    query may take together (None: the gateway's unit budget); past it each remaining stage
    answers with its offline rules, recorded as a fallback. ``reader``: the offline IntentInferrer's
    social reader (None: ``reader_from_setting()``, the embedding reader when its extra is installed,
    else the cue reader)."""
    pool = pool or GatewayPool(
        api_base=api_base,
        api_key=api_key,
        timeout=timeout,
        cache=cache,
        cache_dir=cache_dir,
        stage_budget=min(1.5 * timeout, budget) if budget is not None and timeout is not None else budget,
        settings=settings,
    )

    chosen_reader: list[SocialReader] = [reader] if reader is not None else []

    def offline_reader() -> SocialReader:
        if not chosen_reader:  # resolved on first use: loading a model is not free
            from actors.aura._embedding import reader_from_setting

            chosen_reader.append(reader_from_setting())
        return chosen_reader[0]

    def make(model: str | None) -> Backend:
        chosen = model or default_model
        if not chosen or chosen == "offline":
            return OfflineBackend(offline_reader())
        return LLMBackend(pool.get(chosen), actor=actor, budget_s=budget)

    return make
