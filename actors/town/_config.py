"""A town's configuration, kept in Redis so every process of the town (and every restart) runs
the same town with the same seed, whatever flags it was started with."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from actors.bus import Bus
from world import TownDefinition

CONFIG_KEY = "town.config"


class TownConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    definition: TownDefinition
    seed: int = 0
    decision_timeout: float = Field(default=2.0, gt=0)
    """Seconds the world waits for agents' decisions; a late agent keeps its scheduled action."""
    ticks_per_second: float = Field(default=1.0, ge=0)
    """The clock's initial speed (0: as fast as the world goes)."""
    start_paused: bool = False
    topic_history: int = Field(default=10_000, ge=100)
    """Entries kept on ``town.ticks``/``town.events`` for late readers when no group reads them."""
    resend_after: float = Field(default=60.0, gt=0)
    """Seconds without a TickCompleted before the clock sends the same tick again."""


def stored_config(bus: Bus) -> TownConfig | None:
    raw = bus.transport.get(bus.keys.kv(CONFIG_KEY))
    return None if raw is None else TownConfig.model_validate_json(raw)


def ensure_config(bus: Bus, proposed: TownConfig) -> tuple[TownConfig, bool]:
    """The namespace's town: the stored one if there is one, else ``proposed`` (stored now).
    Returns (config, created)."""
    created = bus.transport.set_if_absent(bus.keys.kv(CONFIG_KEY), proposed.model_dump_json().encode())
    if created:
        return proposed, True
    stored = stored_config(bus)
    assert stored is not None
    return stored, False


def replace_config(bus: Bus, config: TownConfig) -> None:
    bus.transport.set(bus.keys.kv(CONFIG_KEY), config.model_dump_json().encode())
