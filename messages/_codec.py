"""msgpack codec: envelope header fields plus the payload dumped in JSON mode.

Decoding validates against the registry and raises a typed ``DecodeError`` for every way the
bytes can be wrong; the error keeps whatever header fields were readable.

Decoding is bounded (``DecodeLimits``, docs/protocol.md section 3): before msgpack builds a single
object, the raw bytes are checked against a total size and walked once, without building
anything, for string, binary, array and map lengths, nesting depth and the number of objects;
msgpack's own limits (``max_str_len``, ``max_array_len``, ...) are then given
to ``msgpack.unpackb`` as well. So a 4.8 MB entry of 5 million empty arrays (about 350 MB once
built) is refused having allocated nothing. The envelope header is validated strictly: exact
types (``format`` is the int 1, not ``1.0`` or ``true``), finite and bounded times, a bounded
attempt count, no field the protocol does not name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgpack
from pydantic import ValidationError

from messages._base import Message
from messages._envelope import ENVELOPE_FORMAT, Envelope
from messages._errors import (
    DecodeError,
    EncodeError,
    InvalidPayloadError,
    LimitExceededError,
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
ENVELOPE_FIELDS = frozenset(("format", "type", "version", "payload", *_HEADER_FIELDS))
"""Every key an envelope map may have; any other key makes it ``malformed``."""

MiB = 1024 * 1024


@dataclass(frozen=True)
class DecodeLimits:
    """Bounds on what one encoded envelope may contain, checked before anything is built.

    The defaults keep every message the runtime sends (a town snapshot grows about 40 KB per
    simulated day) and bound what a decoded entry can cost: at most ``max_entry_bytes`` of raw
    bytes and ``max_objects`` msgpack objects (a built Python object is at most ~80 bytes beyond its
    own text), so about 4 MiB + 11 MiB + its text decoded per entry, where an unbounded decoder
    turned 4.8 MB into 350 MB.
    """

    max_entry_bytes: int = 4 * MiB
    """Total size of the encoded envelope (the ``m`` field), checked on the raw bytes first."""
    max_str_len: int = 4 * MiB
    max_bin_len: int = 4 * MiB
    max_array_len: int = 65_536
    max_map_len: int = 65_536
    max_ext_len: int = 0
    """The protocol uses no msgpack extension types: any is refused."""
    max_depth: int = 32
    """Nesting of arrays and maps, the envelope map itself counting 1 (its payload map 2)."""
    max_objects: int = 131_072
    """msgpack objects in the whole envelope (every scalar, string, array and map counts 1)."""

    def unpack_options(self) -> dict[str, int]:
        """msgpack's own limits, for ``msgpack.unpackb`` / ``msgpack.Unpacker``."""
        return {
            "max_str_len": self.max_str_len,
            "max_bin_len": self.max_bin_len,
            "max_array_len": self.max_array_len,
            "max_map_len": self.max_map_len,
            "max_ext_len": self.max_ext_len,
        }


DEFAULT_LIMITS = DecodeLimits()

# First byte -> total size of a fixed-size scalar (nil, bool, int, float); 0: not one.
_SCALAR_SIZE = [0] * 256
for _b in (*range(0x00, 0x80), *range(0xE0, 0x100), 0xC0, 0xC2, 0xC3):
    _SCALAR_SIZE[_b] = 1
for _b, _n in ((0xCA, 5), (0xCB, 9), (0xCC, 2), (0xCD, 3), (0xCE, 5), (0xCF, 9), (0xD0, 2), (0xD1, 3)):
    _SCALAR_SIZE[_b] = _n
_SCALAR_SIZE[0xD2], _SCALAR_SIZE[0xD3] = 5, 9
_LENGTH_WIDTH = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC7: 1, 0xC8: 2, 0xC9: 4}
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}


def check_limits(data: bytes, limits: DecodeLimits = DEFAULT_LIMITS) -> None:
    """Walk msgpack bytes without building anything; raise ``LimitExceededError`` (a limit) or
    ``MalformedEnvelopeError`` (truncated, trailing bytes, an invalid byte).

    Stops at the first object past ``max_objects``, so its cost is bounded too.
    """
    n = len(data)
    if n > limits.max_entry_bytes:
        raise LimitExceededError(f"entry of {n} bytes exceeds max_entry_bytes ({limits.max_entry_bytes})")
    max_objects = limits.max_objects
    pos = 0
    todo = 1  # values still to read in the innermost open container (the top level: one)
    stack: list[int] = []  # ``todo`` of each enclosing container
    objects = 0
    while True:
        while todo == 0:
            if not stack:
                if pos > n:
                    raise MalformedEnvelopeError("truncated msgpack")
                if pos < n:
                    raise MalformedEnvelopeError(f"{n - pos} bytes after the envelope")
                return
            todo = stack.pop()
        todo -= 1
        objects += 1
        if objects > max_objects:
            raise LimitExceededError(f"more than max_objects ({max_objects}) msgpack objects")
        if pos >= n:
            raise MalformedEnvelopeError("truncated msgpack")
        b = data[pos]
        size = _SCALAR_SIZE[b]
        if size:
            pos += size
            continue
        if 0xA0 <= b <= 0xBF:  # fixstr
            pos += 1 + (b & 0x1F)
            continue
        items = -1
        is_map = False
        if b <= 0x9F:  # fixmap 0x80-0x8f, fixarray 0x90-0x9f
            items, pos, is_map = b & 0x0F, pos + 1, b <= 0x8F
        elif b in (0xDC, 0xDE):  # array16, map16
            items, pos, is_map = int.from_bytes(data[pos + 1 : pos + 3], "big"), pos + 3, b == 0xDE
        elif b in (0xDD, 0xDF):  # array32, map32
            items, pos, is_map = int.from_bytes(data[pos + 1 : pos + 5], "big"), pos + 5, b == 0xDF
        if items >= 0:
            _check_container(items, is_map, len(stack) + 1, limits)
            if items:
                stack.append(todo)
                todo = items * 2 if is_map else items
            continue
        width = _LENGTH_WIDTH.get(b)
        if width is not None:  # str8/16/32, bin8/16/32, ext8/16/32
            length = int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
            if b >= 0xD9:
                what, limit = "str", limits.max_str_len
            elif b <= 0xC6:
                what, limit = "bin", limits.max_bin_len
            else:
                what, limit, width = "ext", limits.max_ext_len, width + 1  # + the ext type byte
            if length > limit:
                raise LimitExceededError(f"a {what} of {length} bytes exceeds max_{what}_len ({limit})")
            pos += 1 + width + length
            continue
        fixext = _FIXEXT.get(b)
        if fixext is not None:
            if fixext > limits.max_ext_len:
                limit = limits.max_ext_len
                raise LimitExceededError(f"an ext of {fixext} bytes exceeds max_ext_len ({limit})")
            pos += 2 + fixext
            continue
        raise MalformedEnvelopeError(f"invalid msgpack byte 0x{b:02x}")


def _check_container(items: int, is_map: bool, depth: int, limits: DecodeLimits) -> None:
    if is_map and items > limits.max_map_len:
        raise LimitExceededError(f"a map of {items} entries exceeds max_map_len ({limits.max_map_len})")
    if not is_map and items > limits.max_array_len:
        raise LimitExceededError(f"an array of {items} items exceeds max_array_len ({limits.max_array_len})")
    if depth > limits.max_depth:
        raise LimitExceededError(f"nesting deeper than max_depth ({limits.max_depth})")


def unpack(data: bytes, limits: DecodeLimits = DEFAULT_LIMITS) -> Any:
    """msgpack bytes to plain data within ``limits`` (checked before building); typed errors."""
    check_limits(data, limits)
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=True, **limits.unpack_options())
    except Exception as exc:  # noqa: BLE001 - msgpack raises several unrelated types
        raise MalformedEnvelopeError(f"not msgpack: {type(exc).__name__}: {str(exc)[:200]}") from None


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


def encode(envelope: Envelope, limits: DecodeLimits = DEFAULT_LIMITS) -> bytes:
    """Encode an envelope to msgpack bytes; integers on the wire are 64-bit, and an envelope
    larger than ``limits.max_entry_bytes`` (which no reader would accept) is an ``EncodeError``."""
    try:
        packed: bytes = msgpack.packb(envelope_to_dict(envelope), use_bin_type=True)
    except (OverflowError, TypeError, ValueError) as exc:
        raise EncodeError(f"cannot encode {envelope.type} {envelope.id}: {exc}") from None
    if len(packed) > limits.max_entry_bytes:
        raise EncodeError(
            f"cannot encode {envelope.type} {envelope.id}: {len(packed)} bytes exceed "
            f"max_entry_bytes ({limits.max_entry_bytes})"
        )
    return packed


def _header_of(raw: dict[Any, Any]) -> dict[str, Any]:
    return {k: raw[k] for k in ("format", "type", "version", *_HEADER_FIELDS) if k in raw}


def read_header(data: bytes, limits: DecodeLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Best-effort header of possibly invalid bytes (within ``limits``): never raises, may be
    empty; only the fields the protocol names."""
    try:
        raw = unpack(data, limits)
    except DecodeError:
        return {}
    return _header_of(raw) if isinstance(raw, dict) else {}


def with_attempt(data: bytes, attempt: int, limits: DecodeLimits = DEFAULT_LIMITS) -> bytes:
    """The same encoded envelope with its attempt count set (a replayed dead letter), payload
    untouched, whatever its type; bytes that are not an envelope map come back as they were."""
    try:
        raw = unpack(data, limits)
    except DecodeError:
        return data  # not ours to repair
    if not isinstance(raw, dict) or not _is_format(raw.get("format")) or raw.get("attempt") == attempt:
        return data
    raw["attempt"] = attempt
    packed: bytes = msgpack.packb(raw, use_bin_type=True)
    return packed


def _is_format(value: object) -> bool:
    return type(value) is int and value == ENVELOPE_FORMAT


def _names(keys: list[Any]) -> str:
    shown = ", ".join(repr(k)[:40] for k in keys[:5])
    return shown + (f" (+{len(keys) - 5} more)" if len(keys) > 5 else "")


_NO_PAYLOAD = Message()
"""Stands in for the payload while the header is validated on its own (before the payload)."""


def decode(
    data: bytes, registry: MessageRegistry = REGISTRY, limits: DecodeLimits = DEFAULT_LIMITS
) -> Envelope:
    """Decode and validate msgpack bytes into an ``Envelope`` with a typed payload.

    In order: the limits (nothing built yet), msgpack, the envelope's layout (a map with exactly
    the protocol's keys, ``format`` the int 1), its header validated strictly, then the payload
    against its registered model (through upcasters).
    """
    raw = unpack(data, limits)
    if not isinstance(raw, dict):
        raise MalformedEnvelopeError(f"envelope must be a map, got {type(raw).__name__}")
    header = _header_of(raw)
    fmt = raw.get("format")
    if not _is_format(fmt):
        raise MalformedEnvelopeError(f"unsupported envelope format {repr(fmt)[:40]}", header=header)
    unknown = [k for k in raw if k not in ENVELOPE_FIELDS]
    if unknown:
        raise MalformedEnvelopeError(f"unknown envelope field(s): {_names(unknown)}", header=header)
    name, version, payload = raw.get("type"), raw.get("version"), raw.get("payload")
    if not isinstance(name, str) or type(version) is not int or version < 1:
        detail = "envelope needs a string 'type' and an int 'version' >= 1"
        raise MalformedEnvelopeError(detail, header=header)
    if not isinstance(payload, dict):
        raise MalformedEnvelopeError("envelope 'payload' must be a map", header=header)
    fields = {k: raw[k] for k in _HEADER_FIELDS if k in raw}
    try:
        shell = Envelope.model_validate({**fields, "payload": _NO_PAYLOAD}, strict=True)
    except ValidationError as exc:
        raise MalformedEnvelopeError(f"bad envelope header: {_summarise(exc)}", header=header) from None
    try:
        model, payload = registry.upcast(name, version, payload)
    except DecodeError as exc:
        exc.header = header
        raise
    try:
        message = model.model_validate(payload)
    except ValidationError as exc:
        raise InvalidPayloadError(f"{name} v{version}: {_summarise(exc)}", header=header) from None
    return shell.model_copy(update={"payload": message})


def _summarise(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p)[:40] for p in err["loc"]) or "<root>"
        parts.append(f"{loc}: {err['msg'][:200]}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")
