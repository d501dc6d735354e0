"""The actor runtime: hosts, supervision, handler contexts."""

from actors.runtime._actor import (
    Actor,
    Context,
    PermanentError,
    StatefulActor,
    UnhandledMessageError,
    on,
)
from actors.runtime._host import ActorCrashedError, Host, HostConfig, HostError

__all__ = [
    "Actor",
    "ActorCrashedError",
    "Context",
    "Host",
    "HostConfig",
    "HostError",
    "PermanentError",
    "StatefulActor",
    "UnhandledMessageError",
    "on",
]
