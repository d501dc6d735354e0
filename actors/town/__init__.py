"""AURATown on the bus: the clock, world and town-agent actors, their launcher and a client."""

from actors.town._client import STEP_WAIT, StepTimeoutError, TownClient, TownRequestError, import_snapshot
from actors.town._config import TownConfig, ensure_config, replace_config, stored_config
from actors.town._definitions import embedded_town, load_town
from actors.town._embedded import EmbeddedTown
from actors.town._launch import ROLES, spawn_town
from actors.town.agent import TownAgentActor
from actors.town.clock import ClockActor, ClockState, next_action
from actors.town.llm_mind import LLMDialogue, LLMMind, LLMMinds, LLMMindSettings, llm_mind_factory
from actors.town.world import EVENTS_TOPIC, TICKS_TOPIC, WorldActor, agent_address

__all__ = [
    "EVENTS_TOPIC",
    "ROLES",
    "STEP_WAIT",
    "TICKS_TOPIC",
    "ClockActor",
    "ClockState",
    "EmbeddedTown",
    "LLMDialogue",
    "LLMMind",
    "LLMMindSettings",
    "LLMMinds",
    "StepTimeoutError",
    "TownAgentActor",
    "TownClient",
    "TownConfig",
    "TownRequestError",
    "WorldActor",
    "agent_address",
    "embedded_town",
    "ensure_config",
    "import_snapshot",
    "llm_mind_factory",
    "load_town",
    "next_action",
    "replace_config",
    "spawn_town",
    "stored_config",
]
