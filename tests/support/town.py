"""A town on a test's bus: the embedded town, paused, its actors hosted in this process."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from actors.bus import Bus
from actors.runtime import Actor, Host, HostConfig
from actors.town import ROLES, TownClient, TownConfig, embedded_town, ensure_config, spawn_town


@contextmanager
def running_town(
    bus: Bus,
    *,
    seed: int = 42,
    agents: list[str] | None = None,
    roles: tuple[str, ...] = ROLES,
    actors: Mapping[str, Callable[[], Actor]] | None = None,
    **config: Any,
) -> Iterator[TownClient]:
    """The embedded town (paused, no tick rate, a 10 s decision timeout unless ``config`` says
    otherwise; a configuration already on the bus wins) with its ``roles``, and ``actors`` (address
    -> factory) beside it on the same host."""
    fields: dict[str, Any] = {"ticks_per_second": 0.0, "start_paused": True, "decision_timeout": 10.0}
    stored, _ = ensure_config(bus, TownConfig(definition=embedded_town(), seed=seed, **(fields | config)))
    with Host(bus, HostConfig(block_ms=50, drain_timeout=5), name="town-test") as host:
        spawn_town(host, stored, roles=roles, agents=agents)
        for address, factory in (actors or {}).items():
            host.spawn(factory, address)
        yield TownClient(bus, timeout=20)
