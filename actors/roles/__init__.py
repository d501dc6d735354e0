"""Actor roles: thin actors delegating to pure code in ``world`` and ``messages``."""

from actors.roles.echo import EchoActor

__all__ = ["EchoActor"]
