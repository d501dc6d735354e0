"""Fuzzed stream entries for the fault tests: every way an inbox entry can be wrong, each labelled
with the dead-letter reason the bus must give it. Seeded: the same seed makes the same entries.

An envelope within the decoding limits (``messages.DEFAULT_LIMITS``: 4 MiB) is a valid message
whatever its size, so the oversized cases here carry their bulk in a field that is also wrong (a
huge unknown type name, a huge non-integer, a huge header of the wrong type). The strict cases are
envelopes the protocol calls malformed although msgpack reads them (``format`` 1.0 or true, NaN or
infinite times, an absurd deadline or attempt count, an extra field); ``bombs`` makes the
expansion bombs (small bytes, huge once built), kept out of ``entries`` for their size.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack

from actors.bus import FIELD
from messages import (
    Envelope,
    LimitExceededError,
    MalformedEnvelopeError,
    check_limits,
    envelope_to_dict,
    read_header,
)

REPLY_ADDRESS = "_reply.fuzz"
"""Where the asks among the fuzzed entries want their answer: each gets an ErrorReply there (a
reply stream: a receiver answers nowhere else)."""

KINDS = (
    "random_bytes",
    "truncated",
    "not_a_map",
    "wrong_types",
    "unknown_type",
    "newer_version",
    "oversized",
    "invalid_payload",
    "no_message_field",
    "unencodable_reply",
    "strict_header",
    "extra_entry_field",
)

STRICT_CASES: tuple[tuple[str, Any, str], ...] = (
    ("format", 1.0, "format"),
    ("format", True, "format"),
    ("version", 1.0, "version"),
    ("wall_time", float("nan"), "wall_time"),
    ("sim_time", float("nan"), "sim_time"),
    ("deadline", float("inf"), "deadline"),
    ("sim_time", -float("inf"), "sim_time"),
    ("deadline", 1e300, "deadline"),
    ("wall_time", -1.0, "wall_time"),
    ("attempt", 2**63 - 1, "attempt"),
    ("attempt", 1.0, "attempt"),
    ("attempt", True, "attempt"),
    ("id", b"bin-not-str", "id"),
    ("sender", "s" * 10_000, "sender"),
    ("extra_header", 1, "unknown envelope field"),
)
"""(header field, value, a word the dead letter's detail names): each is ``malformed``."""

BOMB_KINDS = ("empty_arrays", "nested_arrays", "deep_nesting", "wide_map", "long_string", "ext_type")


@dataclass(frozen=True)
class FuzzEntry:
    kind: str
    reason: str
    """The dead-letter reason the bus must record."""
    fields: dict[str, bytes]

    @property
    def wants_error_reply(self) -> bool:
        """The bus can read a reply address and correlation id from it: the asker is told."""
        header = read_header(self.fields.get(FIELD, b""))
        return isinstance(header.get("reply_to"), str) and isinstance(header.get("correlation_id"), str)


def _pack(wire: dict[str, Any]) -> bytes:
    packed: bytes = msgpack.packb(wire, use_bin_type=True)
    return packed


class Fuzzer:
    """Makes fuzzed entries from valid template envelopes (one per target inbox)."""

    def __init__(self, rng: random.Random, templates: list[Envelope], bad_payloads: list[dict[str, Any]]):
        """``bad_payloads[i]`` is a payload that fails validation for ``templates[i]``'s type."""
        self.rng = rng
        self.templates = templates
        self.bad_payloads = bad_payloads
        self._makers: dict[str, Callable[[dict[str, Any], int], FuzzEntry]] = {
            "random_bytes": self._random_bytes,
            "truncated": self._truncated,
            "not_a_map": self._not_a_map,
            "wrong_types": self._wrong_types,
            "unknown_type": self._unknown_type,
            "newer_version": self._newer_version,
            "oversized": self._oversized,
            "invalid_payload": self._invalid_payload,
            "no_message_field": self._no_message_field,
            "unencodable_reply": self._unencodable_reply,
            "strict_header": self._strict_header,
            "extra_entry_field": self._extra_entry_field,
        }

    def entries(self, n: int) -> list[tuple[int, FuzzEntry]]:
        """``n`` entries as (template index, entry); every kind appears, in a random order."""
        out = []
        for i in range(n):
            kind = KINDS[i % len(KINDS)] if i < len(KINDS) else self.rng.choice(KINDS)
            t = 0 if kind == "unencodable_reply" else self.rng.randrange(len(self.templates))
            wire = envelope_to_dict(self.templates[t])
            wire["id"] = f"fuzz-{i}"
            if self.rng.random() < 0.3:  # an ask: the bus must answer it with an ErrorReply
                wire["reply_to"], wire["correlation_id"] = REPLY_ADDRESS, f"corr-{i}"
            out.append((t, self._makers[kind](wire, t)))
        self.rng.shuffle(out)
        return out

    def _entry(self, kind: str, reason: str, data: bytes) -> FuzzEntry:
        return FuzzEntry(kind, reason, {FIELD: data})

    def _random_bytes(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        data = self.rng.randbytes(self.rng.randrange(0, 300))  # even a map would lack the format
        # A random header may declare a 4 GB string or array: refused as a limit, before unpacking.
        return self._entry("random_bytes", "limit_exceeded" if _breaks_a_limit(data) else "malformed", data)

    def _truncated(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        data = _pack(wire)
        return self._entry("truncated", "malformed", data[: self.rng.randrange(0, len(data))])

    def _not_a_map(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        value = self.rng.choice([list(wire.values()), 42, "an envelope", None, 3.5, b"\x00\x01"])
        return self._entry("not_a_map", "malformed", _pack(value))  # type: ignore[arg-type]

    def _wrong_types(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        field, value = self.rng.choice(
            [
                ("format", 99),
                ("type", 7),
                ("version", "1"),
                ("version", True),
                ("payload", ["seq", 1]),
                ("id", 12345),
                ("id", ""),
                ("wall_time", "noon"),
                ("attempt", 0),
                ("attempt", [1]),
                ("trace", ["a", "b"]),
                ("recipient", None),
                ("namespace", {"x": 1}),
                ("deadline", "tomorrow"),
            ]
        )
        wire[field] = value
        return self._entry("wrong_types", "malformed", _pack(wire))

    def _unknown_type(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        wire["type"] = self.rng.choice(["nobody.knows", "sys.pingg", "", "town.tick.v2", "💥"])
        return self._entry("unknown_type", "unknown_type", _pack(wire))

    def _newer_version(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        wire["version"] = int(wire["version"]) + self.rng.randrange(1, 1_000_000)
        return self._entry("newer_version", "unsupported_version", _pack(wire))

    def _oversized(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        size = self.rng.randrange(4_000, 64_000)  # vs ~300 bytes for a normal envelope
        choice = self.rng.randrange(3)
        if choice == 0:
            wire["type"] = "x" * size
            return self._entry("oversized", "unknown_type", _pack(wire))
        if choice == 1:
            bad = dict(self.bad_payloads[t])
            bad[next(iter(bad))] = "z" * size
            wire["payload"] = bad
            return self._entry("oversized", "invalid_payload", _pack(wire))
        wire["attempt"] = "x" * size
        return self._entry("oversized", "malformed", _pack(wire))

    def _invalid_payload(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        wire["payload"] = dict(self.bad_payloads[t])
        return self._entry("invalid_payload", "invalid_payload", _pack(wire))

    def _unencodable_reply(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        """A valid ask whose answer cannot be encoded: the first template (a Ping) echoes ``seq``,
        here an integer beyond 64 bits, given as the numeric string that validation accepts."""
        wire["payload"] = {**wire["payload"], "seq": "9" * self.rng.randrange(20, 60)}
        wire["reply_to"], wire["correlation_id"] = REPLY_ADDRESS, f"corr-{wire['id']}"
        return self._entry("unencodable_reply", "unencodable", _pack(wire))

    def _no_message_field(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        return FuzzEntry("no_message_field", "malformed", {"x": _pack(wire)})

    def _strict_header(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        return strict_entry(wire, *self.rng.choice(STRICT_CASES)[:2])

    def _extra_entry_field(self, wire: dict[str, Any], t: int) -> FuzzEntry:
        """A valid envelope in ``m`` but another field beside it."""
        extra = self.rng.choice(["x", "m2", "reply_to", "M"])
        return FuzzEntry("extra_entry_field", "malformed", {FIELD: _pack(wire), extra: b"1"})


def strict_entry(wire: dict[str, Any], field: str, value: Any) -> FuzzEntry:
    """A valid envelope with one header field set to something strict validation refuses."""
    wire = dict(wire)
    wire[field] = value
    return FuzzEntry("strict_header", "malformed", {FIELD: _pack(wire)})


def bomb(kind: str, wire: dict[str, Any]) -> FuzzEntry:
    """An expansion bomb (or a limit case) in a valid envelope's payload, refused as
    ``limit_exceeded`` before msgpack builds it: a few MB of bytes, hundreds of MB once built."""
    head = dict(wire)
    head["payload"] = {"seq": 1, "body": None}  # ``None`` is replaced by the bomb's bytes below
    packed = _pack(head)
    marker = b"\xa4body\xc0"  # the key "body" and nil
    assert packed.count(marker) == 1
    if kind == "empty_arrays":  # the 4.8 MB of 5 million empty arrays (~350 MB built)
        body = b"\xdd" + (5_000_000).to_bytes(4, "big") + b"\x90" * 5_000_000
    elif kind == "nested_arrays":  # under every length limit and the size limit: too many objects
        inner = b"\xdc" + (1000).to_bytes(2, "big") + b"\x90" * 1000
        body = b"\xdc" + (3000).to_bytes(2, "big") + inner * 3000
    elif kind == "deep_nesting":
        body = b"\x91" * 100_000 + b"\x90"
    elif kind == "wide_map":  # a map longer than max_map_len
        body = b"\xdf" + (1_000_000).to_bytes(4, "big") + b"\xa1k\xc0" * 1_000_000
    elif kind == "long_string":  # a string header claiming 2 GB
        body = b"\xdb" + (2**31).to_bytes(4, "big") + b"x" * 1000
    elif kind == "ext_type":  # the protocol has no extension types
        body = b"\xd6\xff" + b"\x00" * 4  # a msgpack timestamp
    else:
        raise ValueError(kind)
    data = packed.replace(marker, b"\xa4body" + body)
    return FuzzEntry(kind, "limit_exceeded", {FIELD: data})


def _breaks_a_limit(data: bytes) -> bool:
    try:
        check_limits(data)
    except LimitExceededError:
        return True
    except MalformedEnvelopeError:
        return False
    return False


def count_by(entries: list[FuzzEntry], attr: str) -> dict[str, int]:
    return dict(sorted(Counter(getattr(e, attr) for e in entries).items()))
