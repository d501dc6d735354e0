"""The bus: one interface, a Redis Streams transport and an in-process memory transport."""

from actors.bus._bus import FIELD, Bus, DeadLetter, DeadLetterPolicy, Outgoing, ProcessInfo
from actors.bus._delivery import Delivery, Subscription
from actors.bus._errors import AskTimeoutError, BusClosedError, BusError, RemoteError, UnexpectedReplyError
from actors.bus._keys import (
    INBOX_GROUP,
    InvalidNameError,
    KeyLayout,
    check_address,
    check_namespace,
    control_address,
    reply_address,
)
from actors.bus._memory import MemoryTransport
from actors.bus._transport import (
    Ack,
    Commit,
    CommitResult,
    GroupInfo,
    PendingInfo,
    StreamEntry,
    Transport,
)
from actors.bus._url import open_transport

__all__ = [
    "FIELD",
    "INBOX_GROUP",
    "Ack",
    "AskTimeoutError",
    "Bus",
    "BusClosedError",
    "BusError",
    "Commit",
    "CommitResult",
    "DeadLetter",
    "DeadLetterPolicy",
    "Delivery",
    "GroupInfo",
    "InvalidNameError",
    "KeyLayout",
    "MemoryTransport",
    "Outgoing",
    "PendingInfo",
    "ProcessInfo",
    "RemoteError",
    "StreamEntry",
    "Subscription",
    "Transport",
    "UnexpectedReplyError",
    "check_address",
    "check_namespace",
    "control_address",
    "open_transport",
    "reply_address",
]
