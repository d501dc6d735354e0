"""Typed decode and registration errors.

Every failure to turn bytes into a message has its own class and a stable ``reason`` code, so the
bus can dead-letter it with that reason and a caller can tell the cases apart.
"""

from __future__ import annotations


class MessageError(Exception):
    """Base of every error raised by the wire contract."""


class RegistrationError(MessageError):
    """A message model or upcaster was registered inconsistently."""


class EncodeError(MessageError):
    """A message that cannot be put on the wire (an integer beyond 64 bits, a non-JSON value)."""


class DecodeError(MessageError):
    """Bytes could not be decoded into a valid envelope and message.

    ``reason`` is a stable machine-readable code (it ends up in the dead-letter stream);
    ``header`` holds whatever envelope fields could be read, so a reply can still be routed.
    """

    reason = "decode_error"

    def __init__(self, detail: str, *, header: dict[str, object] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.header: dict[str, object] = dict(header or {})


class MalformedEnvelopeError(DecodeError):
    """Not msgpack at all, or msgpack that is not an envelope."""

    reason = "malformed"


class LimitExceededError(MalformedEnvelopeError):
    """The bytes break a decoding limit (``messages.DecodeLimits``: entry size, a string, binary,
    array or map length, nesting depth, object count): refused before anything is built."""

    reason = "limit_exceeded"


class UnknownMessageTypeError(DecodeError):
    """The envelope names a message type that no model is registered under."""

    reason = "unknown_type"


class UnsupportedVersionError(DecodeError):
    """The envelope's schema version is newer than the registered model."""

    reason = "unsupported_version"


class MissingUpcasterError(DecodeError):
    """An older schema version arrived and no upcaster chain leads to the current one."""

    reason = "missing_upcaster"


class InvalidPayloadError(DecodeError):
    """The payload failed validation against the registered model."""

    reason = "invalid_payload"
