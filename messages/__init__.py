"""The wire contract: message models, the envelope, the codec and the schema registry.

This package does no I/O, reads no clock and draws no randomness.
"""

from messages import aura, episodes, probes, town
from messages._base import Message
from messages._codec import (
    DEFAULT_LIMITS,
    DecodeLimits,
    check_limits,
    decode,
    encode,
    envelope_to_dict,
    read_header,
    unpack,
    with_attempt,
)
from messages._envelope import ENVELOPE_FORMAT, Envelope
from messages._errors import (
    DecodeError,
    EncodeError,
    InvalidPayloadError,
    LimitExceededError,
    MalformedEnvelopeError,
    MessageError,
    MissingUpcasterError,
    RegistrationError,
    UnknownMessageTypeError,
    UnsupportedVersionError,
)
from messages._registry import REGISTRY, MessageRegistry, message, upcaster
from messages._schema import envelope_schema, json_schemas, schema_file_name
from messages.system import ErrorReply, Ping, Pong

__all__ = [
    "DEFAULT_LIMITS",
    "ENVELOPE_FORMAT",
    "REGISTRY",
    "DecodeError",
    "DecodeLimits",
    "EncodeError",
    "Envelope",
    "ErrorReply",
    "InvalidPayloadError",
    "LimitExceededError",
    "MalformedEnvelopeError",
    "Message",
    "MessageError",
    "MessageRegistry",
    "MissingUpcasterError",
    "Ping",
    "Pong",
    "RegistrationError",
    "UnknownMessageTypeError",
    "UnsupportedVersionError",
    "aura",
    "check_limits",
    "decode",
    "encode",
    "envelope_schema",
    "envelope_to_dict",
    "episodes",
    "json_schemas",
    "message",
    "probes",
    "read_header",
    "schema_file_name",
    "town",
    "unpack",
    "upcaster",
    "with_attempt",
]
