"""Messages of the runtime itself: health checks and error replies."""

from __future__ import annotations

from pydantic import Field

from messages._base import Message
from messages._registry import message


@message("sys.ping", 1)
class Ping(Message):
    """Ask an address to answer with a ``Pong``; ``body`` is echoed back."""

    seq: int = 0
    body: str = ""


@message("sys.pong", 1)
class Pong(Message):
    seq: int = 0
    body: str = ""
    responder: str = ""


@message("sys.error", 1)
class ErrorReply(Message):
    """Sent to an asker instead of a reply when its request was dead-lettered.

    ``reason`` is the dead-letter reason code (``handler_error``, ``invalid_payload``, ...), so
    the asker fails at once with a typed error instead of waiting for its deadline.
    """

    reason: str = Field(min_length=1)
    detail: str = ""
    request_type: str | None = None
