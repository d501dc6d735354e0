"""The msgpack codec: round trips and every typed decode error."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from messages import (
    REGISTRY,
    EncodeError,
    Envelope,
    InvalidPayloadError,
    MalformedEnvelopeError,
    Message,
    MessageRegistry,
    MissingUpcasterError,
    Ping,
    RegistrationError,
    UnknownMessageTypeError,
    UnsupportedVersionError,
    decode,
    encode,
    envelope_to_dict,
    with_attempt,
)


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
