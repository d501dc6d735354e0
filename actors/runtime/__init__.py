"""The actor runtime: hosts, supervision, handler contexts."""

from actors.runtime._actor import (
    Actor,
    Context,
    PermanentError,
    StatefulActor,
    UnhandledMessageError,
    on,
)
from actors.runtime._heap import freeze_heap
from actors.runtime._host import ActorCrashedError, Host, HostConfig, HostError
from actors.runtime._pool import CellDeadError

__all__ = [
    "Actor",
    "ActorCrashedError",
    "CellDeadError",
    "Context",
    "Host",
    "HostConfig",
    "HostError",
    "PermanentError",
    "StatefulActor",
    "UnhandledMessageError",
    "freeze_heap",
    "on",
]
