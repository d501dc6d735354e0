"""Errors raised by the bus to its callers."""

from __future__ import annotations

from messages import Message


class BusError(Exception):
    """Base of the bus's own errors."""


class BusClosedError(BusError):
    """The bus was closed; nothing more is sent or received."""


class AskTimeoutError(BusError, TimeoutError):
    """No reply arrived before the ask's deadline."""

    def __init__(self, recipient: str, message_type: str, timeout: float) -> None:
        super().__init__(f"no reply from {recipient!r} to {message_type} within {timeout:g}s")
        self.recipient = recipient
        self.message_type = message_type
        self.timeout = timeout


class RemoteError(BusError):
    """The request was dead-lettered by the responder; ``reason`` is the dead-letter reason."""

    def __init__(self, recipient: str, reason: str, detail: str) -> None:
        super().__init__(f"{recipient!r} failed the request: {reason}: {detail}")
        self.recipient = recipient
        self.reason = reason
        self.detail = detail


class UnexpectedReplyError(BusError, TypeError):
    """An ask answered with a message of another type than the one the asker expected."""

    def __init__(self, recipient: str, expected: str, reply: Message) -> None:
        received = reply.message_type or type(reply).__qualname__
        super().__init__(f"{recipient!r} answered {received}, expected {expected}")
        self.recipient = recipient
        self.expected = expected
        self.received = received
        self.reply = reply
        """The reply itself (a refusal the asker may want to read, e.g. ``Rejected.reason``)."""
