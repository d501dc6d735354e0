"""Putting a town's actors on a host: all roles in one process, or some roles per process."""

from __future__ import annotations

from collections.abc import Collection

from actors.aura import BackendFactory
from actors.roles.env import ENV, EnvActor
from actors.roles.registry import REGISTRY, RegistryActor
from actors.runtime import Host
from actors.town._config import TownConfig
from actors.town.agent import TownAgentActor
from actors.town.clock import CLOCK, ClockActor
from actors.town.world import TICKS_TOPIC, WorldActor, agent_address
from world import MindFactory, schedule_mind
from world.conversation import DialogueWriter

ROLES = ("clock", "world", "agents", "registry", "env")


def spawn_town(
    host: Host,
    config: TownConfig,
    *,
    roles: Collection[str] = ROLES,
    agents: Collection[str] | None = None,
    mind_factory: MindFactory = schedule_mind,
    backends: BackendFactory | None = None,
    dialogue: DialogueWriter | None = None,
) -> list[str]:
    """Spawn the town's actors of the given roles (``agents`` narrows which town agents);
    returns the addresses spawned. ``mind_factory`` makes the agents' minds and ``dialogue``
    words the world's conversations (``actors.town.llm_mind.llm_mind_factory`` gives both)."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown role(s) {sorted(unknown)}: choose from {', '.join(ROLES)}")
    definition = config.definition
    spawned = []
    if "world" in roles:
        host.spawn(lambda: WorldActor(config, dialogue), "world")
        spawned.append("world")
    if "clock" in roles:
        host.spawn(lambda: ClockActor(config), CLOCK, topics=(TICKS_TOPIC,))
        spawned.append(CLOCK)
    if "registry" in roles:
        host.spawn(RegistryActor, REGISTRY)
        spawned.append(REGISTRY)
    if "env" in roles:
        host.spawn(lambda: EnvActor(backends), ENV)
        spawned.append(ENV)
    if "agents" in roles:
        wanted = None if agents is None else {definition.find_agent(a) for a in agents}
        if wanted is not None and None in wanted:
            missing = [a for a in agents or () if definition.find_agent(a) is None]
            raise ValueError(f"no agent named {missing[0]!r} in {definition.name}")
        for profile in definition.agents:
            if wanted is not None and profile not in wanted:
                continue
            address = agent_address(profile.slug)
            host.spawn(
                lambda p=profile: TownAgentActor(definition, p, config.seed, mind_factory),  # type: ignore[misc]
                address,
                pooled=TownAgentActor.pooled,
            )
            spawned.append(address)
    return spawned
