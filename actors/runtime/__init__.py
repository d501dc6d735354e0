"""The actor runtime: hosts, their middleware, handler contexts."""

from actors.runtime._actor import (
    Actor,
    Context,
    PermanentError,
    StatefulActor,
    UnhandledMessageError,
    on,
)
from actors.runtime._config import HostConfig
from actors.runtime._heap import freeze_heap
from actors.runtime._host import ActorCrashedError, Host, HostError
from actors.runtime._middleware import Middleware, Rejected
from actors.runtime._pool import CellDeadError

__all__ = [
    "Actor",
    "ActorCrashedError",
    "CellDeadError",
    "Context",
    "Host",
    "HostConfig",
    "HostError",
    "Middleware",
    "PermanentError",
    "Rejected",
    "StatefulActor",
    "UnhandledMessageError",
    "freeze_heap",
    "on",
]
