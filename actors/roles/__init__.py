"""Actor roles: thin actors delegating to pure code in ``world`` and ``messages``."""

from actors.roles.echo import EchoActor
from actors.roles.env import ENV, EnvActor
from actors.roles.registry import AUDIT_TOPIC, REGISTRY, RegistryActor

__all__ = ["AUDIT_TOPIC", "ENV", "REGISTRY", "EchoActor", "EnvActor", "RegistryActor"]
