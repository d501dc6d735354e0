"""Fuzzed stream entries for the fault tests: every way an inbox entry can be wrong, each labelled
with the dead-letter reason the bus must give it. Seeded: the same seed makes the same entries.

The wire contract sets no size limit, so an oversized but well-formed envelope is a valid message;
the oversized cases here carry their bulk in a field that is also wrong (a huge unknown type name,
a huge non-integer, a huge header of the wrong type).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack

from actors.bus import FIELD
from messages import Envelope, envelope_to_dict, read_header

REPLY_ADDRESS = "fuzz.replies"
"""Where the asks among the fuzzed entries want their answer: each gets an ErrorReply there."""

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
)


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
        return self._entry("random_bytes", "malformed", data)

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


def count_by(entries: list[FuzzEntry], attr: str) -> dict[str, int]:
    return dict(sorted(Counter(getattr(e, attr) for e in entries).items()))
