"""msgpack codec: envelope header fields plus the payload dumped in JSON mode.

Decoding validates against the registry and raises a typed ``DecodeError`` for every way the
bytes can be wrong; the error keeps whatever header fields were readable.
"""

from __future__ import annotations

from typing import Any

import msgpack
from pydantic import ValidationError

from messages._envelope import ENVELOPE_FORMAT, Envelope
from messages._errors import (
    DecodeError,
    EncodeError,
    InvalidPayloadError,
    MalformedEnvelopeError,
)
from messages._registry import REGISTRY, MessageRegistry

_HEADER_FIELDS = (
    "id",
    "sender",
    "recipient",
    "namespace",
    "wall_time",
    "correlation_id",
    "reply_to",
    "causation_id",
    "sim_time",
    "attempt",
    "deadline",
    "trace",
)


def envelope_to_dict(envelope: Envelope) -> dict[str, Any]:
    """The wire form of an envelope as plain data (what msgpack encodes)."""
    wire: dict[str, Any] = {
        "format": ENVELOPE_FORMAT,
        "type": envelope.type,
        "version": envelope.version,
    }
    for name in _HEADER_FIELDS:
        wire[name] = getattr(envelope, name)
    wire["payload"] = envelope.payload.model_dump(mode="json")
    return wire


def encode(envelope: Envelope) -> bytes:
    """Encode an envelope to msgpack bytes; integers on the wire are 64-bit."""
    try:
        packed: bytes = msgpack.packb(envelope_to_dict(envelope), use_bin_type=True)
    except (OverflowError, TypeError, ValueError) as exc:
        raise EncodeError(f"cannot encode {envelope.type} {envelope.id}: {exc}") from None
    return packed


def read_header(data: bytes) -> dict[str, Any]:
    """Best-effort header of possibly invalid bytes: never raises, may be empty."""
    try:
        raw = msgpack.unpackb(data, raw=False)
    except Exception:  # noqa: BLE001 - garbage in, empty header out; the caller reports it
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if k != "payload" and isinstance(k, str)}


def with_attempt(data: bytes, attempt: int) -> bytes:
    """The same encoded envelope with its attempt count set (a replayed dead letter), payload
    untouched, whatever its type; bytes that are not an envelope map come back as they were."""
    try:
        raw = msgpack.unpackb(data, raw=False)
    except Exception:  # noqa: BLE001 - not ours to repair
        return data
    if not isinstance(raw, dict) or raw.get("format") != ENVELOPE_FORMAT or raw.get("attempt") == attempt:
        return data
    raw["attempt"] = attempt
    packed: bytes = msgpack.packb(raw, use_bin_type=True)
    return packed


def decode(data: bytes, registry: MessageRegistry = REGISTRY) -> Envelope:
    """Decode and validate msgpack bytes into an ``Envelope`` with a typed payload."""
    try:
        raw = msgpack.unpackb(data, raw=False)
    except Exception as exc:  # noqa: BLE001 - msgpack raises several unrelated types
        raise MalformedEnvelopeError(f"not msgpack: {type(exc).__name__}: {exc}") from None
    if not isinstance(raw, dict):
        raise MalformedEnvelopeError(f"envelope must be a map, got {type(raw).__name__}")
    header = {k: v for k, v in raw.items() if k != "payload" and isinstance(k, str)}
    fmt = raw.get("format")
    if fmt != ENVELOPE_FORMAT:
        raise MalformedEnvelopeError(f"unsupported envelope format {fmt!r}", header=header)
    name, version, payload = raw.get("type"), raw.get("version"), raw.get("payload")
    if not isinstance(name, str) or not isinstance(version, int) or isinstance(version, bool):
        raise MalformedEnvelopeError("envelope needs a string 'type' and an int 'version'", header=header)
    if not isinstance(payload, dict):
        raise MalformedEnvelopeError("envelope 'payload' must be a map", header=header)
    try:
        model, payload = registry.upcast(name, version, payload)
    except DecodeError as exc:
        exc.header = header
        raise
    try:
        message = model.model_validate(payload)
    except ValidationError as exc:
        raise InvalidPayloadError(f"{name} v{version}: {_summarise(exc)}", header=header) from None
    fields = {k: raw[k] for k in _HEADER_FIELDS if k in raw}
    try:
        return Envelope.model_validate({**fields, "payload": message})
    except ValidationError as exc:
        raise MalformedEnvelopeError(f"bad envelope header: {_summarise(exc)}", header=header) from None


def _summarise(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        parts.append(f"{loc}: {err['msg']}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")
