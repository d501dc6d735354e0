"""The msgpack codec: round trips and every typed decode error."""

from __future__ import annotations

import random
import struct
import tracemalloc
from typing import Any

import msgpack
import pytest

from actors.bus import FIELD, Bus, MemoryTransport
from actors.bus._bus import READ_BATCH_MAX
from messages import (
    DEFAULT_LIMITS,
    REGISTRY,
    DecodeLimits,
    EncodeError,
    Envelope,
    InvalidPayloadError,
    LimitExceededError,
    MalformedEnvelopeError,
    Message,
    MessageRegistry,
    MissingUpcasterError,
    Ping,
    RegistrationError,
    UnknownMessageTypeError,
    UnsupportedVersionError,
    check_limits,
    decode,
    encode,
    envelope_to_dict,
    read_header,
    unpack,
    with_attempt,
)
from messages._envelope import MAX_ATTEMPT
from tests.support.fuzz import BOMB_KINDS, STRICT_CASES, bomb, strict_entry


def envelope(payload: Message, **kw: Any) -> Envelope:
    fields: dict[str, Any] = dict(
        id="m1", sender="a", recipient="b", namespace="town:test", wall_time=1700000000.5
    )
    fields.update(kw)
    return Envelope(payload=payload, **fields)


def wire(**overrides: Any) -> bytes:
    d = envelope_to_dict(envelope(Ping(seq=1, body="x"), reply_to="_reply.p", correlation_id="c1"))
    d.update(overrides)
    return bytes(msgpack.packb(d, use_bin_type=True))


def test_round_trip_keeps_every_field() -> None:
    env = envelope(
        Ping(seq=7, body="héllo"),
        correlation_id="c",
        reply_to="_reply.p",
        causation_id="m0",
        sim_time=390.0,
        attempt=3,
        deadline=1700000010.0,
        trace={"traceparent": "00-abc-def-01"},
    )
    assert decode(encode(env)) == env
    assert decode(encode(env)).type == "sys.ping"


def test_integers_beyond_64_bits_are_an_encode_error() -> None:
    with pytest.raises(EncodeError, match=r"sys\.ping"):
        encode(envelope(Ping(seq=2**64)))


def test_garbage_bytes_are_malformed() -> None:
    with pytest.raises(MalformedEnvelopeError) as info:
        decode(b"\xc1\xff definitely not msgpack")
    assert info.value.reason == "malformed"


def test_msgpack_that_is_not_a_map_is_malformed() -> None:
    with pytest.raises(MalformedEnvelopeError, match="must be a map"):
        decode(msgpack.packb([1, 2, 3]))


def test_unknown_type_keeps_the_header() -> None:
    with pytest.raises(UnknownMessageTypeError) as info:
        decode(wire(type="nobody.knows"))
    assert info.value.reason == "unknown_type"
    assert info.value.header["reply_to"] == "_reply.p"
    assert info.value.header["correlation_id"] == "c1"


def test_newer_version_is_unsupported() -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        decode(wire(version=99))
    assert info.value.reason == "unsupported_version"


def test_invalid_payload_names_the_field() -> None:
    with pytest.raises(InvalidPayloadError, match="seq") as info:
        decode(wire(payload={"seq": "not a number"}))
    assert info.value.reason == "invalid_payload"


def test_bad_header_field_is_malformed() -> None:
    with pytest.raises(MalformedEnvelopeError, match="attempt"):
        decode(wire(attempt=0))
    with pytest.raises(MalformedEnvelopeError, match="format"):
        decode(wire(format=2))


def test_extra_payload_fields_are_ignored_for_additive_changes() -> None:
    env = decode(wire(payload={"seq": 4, "body": "b", "added_later": True}))
    assert env.payload == Ping(seq=4, body="b")


def test_upcasters_bring_old_payloads_to_the_current_version() -> None:
    reg = MessageRegistry()

    @reg.register("demo.greet", 3)
    class Greet(Message):
        full_name: str
        polite: bool

    @reg.upcaster("demo.greet", 1)
    def v1_to_v2(p: dict[str, Any]) -> dict[str, Any]:
        return {"full_name": p.pop("name"), **p}

    @reg.upcaster("demo.greet", 2)
    def v2_to_v3(p: dict[str, Any]) -> dict[str, Any]:
        return {**p, "polite": True}

    old = envelope_to_dict(envelope(Greet(full_name="x", polite=False)))
    old.update(version=1, payload={"name": "Lin Wei"})
    env = decode(msgpack.packb(old), reg)
    assert env.payload == Greet(full_name="Lin Wei", polite=True)
    assert env.version == 3


def test_missing_upcaster_is_typed() -> None:
    reg = MessageRegistry()

    @reg.register("demo.v2", 2)
    class V2(Message):
        x: int = 0

    old = envelope_to_dict(envelope(V2()))
    old["version"] = 1
    with pytest.raises(MissingUpcasterError) as info:
        decode(msgpack.packb(old), reg)
    assert info.value.reason == "missing_upcaster"


def test_registry_refuses_inconsistent_registrations() -> None:
    reg = MessageRegistry()

    @reg.register("demo.a", 1)
    class A(Message):
        pass

    with pytest.raises(RegistrationError):

        @reg.register("demo.a", 1)
        class B(Message):
            pass

    with pytest.raises(RegistrationError):
        reg.register("demo.zero", 0)
    with pytest.raises(RegistrationError):
        reg.register("demo.notmsg", 1)(int)  # type: ignore[type-var]


def test_messages_are_frozen() -> None:
    p = Ping(seq=1)
    with pytest.raises(ValueError):
        p.seq = 2  # type: ignore[misc]


def test_registry_names_are_not_class_paths() -> None:
    for name, model in REGISTRY.models().items():
        assert name != f"{model.__module__}.{model.__qualname__}"
        assert model.message_type == name


def test_with_attempt_resets_the_count_and_keeps_everything_else() -> None:
    tired = envelope(Ping(seq=3, body="again"), attempt=5, correlation_id="c9")
    fresh = decode(with_attempt(encode(tired), 1))
    assert fresh == tired.model_copy(update={"attempt": 1})
    garbage = b"\xc1not msgpack"
    assert with_attempt(garbage, 1) == garbage
    unknown = wire(type="someone.elses", attempt=4)  # no model needed: only the header changes
    assert msgpack.unpackb(with_attempt(unknown, 1))["attempt"] == 1


# ---------------------------------------------------------------- limits and strict validation


def test_an_expansion_bomb_is_refused_before_anything_is_built() -> None:
    """The issue's 4.8 MB of 5 million empty arrays (~350 MB once built) costs nothing to refuse."""
    wire_ = envelope_to_dict(envelope(Ping(seq=1, body="x")))
    bombs = {kind: bomb(kind, wire_).fields[FIELD] for kind in BOMB_KINDS}
    tracemalloc.start()
    try:
        for kind, data in bombs.items():
            with pytest.raises(LimitExceededError) as info:
                decode(data)
            assert info.value.reason == "limit_exceeded", kind
            assert read_header(data) == {}  # the dead-letter path reads nothing either
            assert with_attempt(data, 1) is data
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, peak  # vs ~350 MB for the first bomb alone with msgpack's defaults


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"\xdd" + (5_000_000).to_bytes(4, "big") + b"\x90" * 10, "max_array_len"),
        (b"\xdf" + (70_000).to_bytes(4, "big"), "max_map_len"),
        (b"\x91" * 40 + b"\x90", "max_depth"),
        (b"\xdc" + (60_000).to_bytes(2, "big") + b"\x92\x90\x90" * 60_000, "max_objects"),
        (b"\xdb" + (2**31).to_bytes(4, "big"), "max_str_len"),
        (b"\xc6" + (2**31).to_bytes(4, "big"), "max_bin_len"),
        (b"\xd6\xff\x00\x00\x00\x00", "max_ext_len"),
        (b"\xa1x" * (DEFAULT_LIMITS.max_entry_bytes // 2 + 1), "max_entry_bytes"),
    ],
)
def test_each_limit_is_checked_on_the_raw_bytes(data: bytes, words: str) -> None:
    with pytest.raises(LimitExceededError, match=words):
        check_limits(data)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"\x92\x01", "truncated"),
        (b"\xa5abc", "truncated"),
        (b"\x01\x02", "after the envelope"),
        (b"\xc1", "invalid msgpack byte"),
        (b"\x92\xcb" + struct.pack(">d", 1.5), "truncated"),
    ],
)
def test_broken_msgpack_is_malformed_before_unpacking(data: bytes, words: str) -> None:
    with pytest.raises(MalformedEnvelopeError, match=words) as info:
        check_limits(data)
    assert info.value.reason == "malformed"


def test_the_walk_accepts_what_msgpack_encodes() -> None:
    rng = random.Random(13)

    def value(depth: int) -> Any:
        kind = rng.randrange(9 if depth < 4 else 6)
        scalars: list[Any] = [
            None,
            rng.choice([True, False]),
            rng.randint(-(2**63), 2**64 - 1),
            rng.uniform(-1e300, 1e300),
            "é" * rng.choice([0, 1, 31, 32, 255, 256, 40_000, 70_000]),
            rng.randbytes(rng.randrange(0, 300)),
        ]
        if kind < 6:
            return scalars[kind]
        n = rng.choice([0, 3, 15, 16, 17])
        if kind == 6:
            return [value(depth + 1) for _ in range(n)]
        return {f"k{i}": value(depth + 1) for i in range(n)}

    checked = 0
    for big in ([None] * 70_000, dict.fromkeys(map(str, range(70_000)), 1.5)):
        data = msgpack.packb(big, use_bin_type=True)
        check_limits(data, DecodeLimits(max_array_len=70_000, max_map_len=70_000, max_objects=10**6))
    for _ in range(200):
        data = msgpack.packb(value(0), use_bin_type=True)
        if len(data) > DEFAULT_LIMITS.max_entry_bytes:
            continue
        check_limits(data, DecodeLimits(max_array_len=70_000, max_map_len=70_000))
        limits = DecodeLimits(max_array_len=70_000, max_map_len=70_000, max_objects=10**7)
        assert unpack(data, limits) == msgpack.unpackb(data, raw=False)
        checked += 1
    assert checked > 100


def test_custom_limits_apply() -> None:
    data = wire()
    decode(data)
    with pytest.raises(LimitExceededError, match="max_entry_bytes"):
        decode(data, limits=DecodeLimits(max_entry_bytes=len(data) - 1))
    with pytest.raises(LimitExceededError, match="max_objects"):
        decode(data, limits=DecodeLimits(max_objects=10))
    with pytest.raises(LimitExceededError, match="max_depth"):
        decode(data, limits=DecodeLimits(max_depth=1))


@pytest.mark.parametrize(("field", "value", "words"), STRICT_CASES)
def test_strict_envelope_validation(field: str, value: Any, words: str) -> None:
    w = envelope_to_dict(envelope(Ping(seq=1, body="x"), reply_to="_reply.p", correlation_id="c1"))
    data = strict_entry(w, field, value).fields[FIELD]
    with pytest.raises(MalformedEnvelopeError) as info:
        decode(data)
    assert info.value.reason == "malformed"
    assert words in info.value.detail
    assert "delivered" not in info.value.detail


def test_a_huge_attempt_is_malformed_not_a_huge_delivery_count() -> None:
    with pytest.raises(MalformedEnvelopeError, match="attempt") as info:
        decode(wire(attempt=2**63 - 1))
    assert info.value.header["reply_to"] == "_reply.p"  # the asker can still be told
    assert decode(wire(attempt=MAX_ATTEMPT)).attempt == MAX_ATTEMPT
    with pytest.raises(MalformedEnvelopeError, match="attempt"):
        decode(wire(attempt=MAX_ATTEMPT + 1))


def test_ints_are_accepted_where_floats_are_expected() -> None:
    env = decode(wire(wall_time=1700000000, deadline=1700000010, sim_time=0))
    assert (env.wall_time, env.deadline, env.sim_time) == (1700000000.0, 1700000010.0, 0.0)


def test_an_envelope_no_reader_would_accept_is_not_encoded() -> None:
    with pytest.raises(EncodeError, match="max_entry_bytes"):
        encode(envelope(Ping(seq=1, body="x" * DEFAULT_LIMITS.max_entry_bytes)))
    big = envelope(Ping(seq=1, body="x" * (DEFAULT_LIMITS.max_entry_bytes - 1000)))
    assert decode(encode(big)) == big  # a large message within the limit is a valid message


def test_an_entry_is_exactly_one_m_field_and_a_batch_is_bounded() -> None:
    bus = Bus(MemoryTransport(), "town:test")
    sub = bus.subscribe_inbox("echo")
    good = encode(envelope(Ping(seq=1)))
    bus.transport.add(sub.stream, {FIELD: good, "x": b"1"})
    bus.transport.add(sub.stream, {"x": good})
    for _ in range(3 * READ_BATCH_MAX):
        bus.transport.add(sub.stream, {FIELD: good})
    first = bus.fetch([sub], count=10_000, block_ms=None)
    assert len(first) == READ_BATCH_MAX
    errors = [d.error for d in first[:2]]
    assert [e.reason if e else None for e in errors] == ["malformed", "malformed"]
    assert "beside 'm'" in str(errors[0]) and "no 'm'" in str(errors[1])
    assert first[0].data == good  # kept for the dead letter
    assert all(d.envelope is not None for d in first[2:])
    bus.close()
