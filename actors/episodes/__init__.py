"""Actors of proactive-assistant episodes (pi-Bench): the episode's tool registry, the simulated
user, the built-in assistant under test and the grader; thin, over ``world.episodes``."""

from actors.episodes.assistant import AssistantActor
from actors.episodes.grader import GRADER, GraderActor
from actors.episodes.registry import EpisodeRegistryActor
from actors.episodes.user import SimulatedUserActor
from actors.llm import GatewayPool

__all__ = [
    "GRADER",
    "AssistantActor",
    "EpisodeRegistryActor",
    "GatewayPool",
    "GraderActor",
    "SimulatedUserActor",
]
