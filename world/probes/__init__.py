"""Probe tools over a scene: two disjoint registries, an allow/deny policy, audits. Pure: the
registry actor (``actors.roles.registry``) fetches live scenes and publishes the audits.

- ``environment_registry``: the paper's eight factual tools (Table 8), from the asker's view.
- ``agent_state_registry``: the five implicit-intent tools (Appendix A5) over named agents.

Both accept the paper's names (``world.time``, ``agent.private_state``) and the AURA release's
(``get_time``, ``get_agent_private_state``). The scene and outcome models live in
``messages.probes`` (the lowest layer) and are imported from there, their one home.
"""

from __future__ import annotations

from messages.probes import REGISTRY_NAMES, ProbePolicy, RegistryName
from world.probes.agent_state import agent_state_registry, agent_state_tools
from world.probes.environment import environment_registry, environment_tools
from world.probes.names import NotFoundError, find_agent, find_location
from world.probes.registry import (
    ALLOW_ALL,
    PreparedCall,
    ProbeContext,
    ProbeRegistry,
    ToolSpec,
    perspective,
    policy_verdict,
)
from world.probes.scenes import SceneError, memory_facts, scene_from_aura_v2, scene_from_town, scene_time


def registry(name: RegistryName, policy: ProbePolicy | None = None) -> ProbeRegistry:
    """The registry called ``name`` ("environment" or "agent_state") under ``policy``."""
    if name == "environment":
        return environment_registry(policy)
    if name == "agent_state":
        return agent_state_registry(policy)
    raise ValueError(f"no probe registry {name!r}: choose from {', '.join(REGISTRY_NAMES)}")


__all__ = [
    "ALLOW_ALL",
    "NotFoundError",
    "PreparedCall",
    "ProbeContext",
    "ProbeRegistry",
    "SceneError",
    "ToolSpec",
    "agent_state_registry",
    "agent_state_tools",
    "environment_registry",
    "environment_tools",
    "find_agent",
    "find_location",
    "memory_facts",
    "perspective",
    "policy_verdict",
    "registry",
    "scene_from_aura_v2",
    "scene_from_town",
    "scene_time",
]
