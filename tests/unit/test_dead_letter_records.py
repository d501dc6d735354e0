"""Dead-letter records and reply addresses, on the in-memory transport (issue 13).

A record keeps at most the policy's bytes of an entry with its size and digest, is signed by the
runtime and verified on reading; a request's ``reply_to`` must be the asker's own reply stream.
"""

from __future__ import annotations

import hashlib

import pytest

from actors.bus import Bus, MemoryTransport
from actors.bus._bus import DeadLetterPolicy, ReplyAddressError
from actors.bus._keys import reply_to_problem
from messages import Ping, encode


def test_reply_to_must_be_a_reply_stream_of_the_askers_identity() -> None:
    assert reply_to_problem("echo", "_reply.vm-1-abc.t7") is None
    assert reply_to_problem("registry:scout", "_reply.scout.vm-1-abc.t7") is None
    for receiver, reply_to in (
        ("echo", "world"),
        ("echo", "registry"),
        ("echo", "_reply"),
        ("echo", "_reply.x y"),
        ("registry:scout", "_reply.oracle.vm-1"),
        ("registry:scout", "_reply.scout2.vm-1"),
        ("registry:scout", "_reply.vm-1-abc"),
        ("registry:scout", "clock"),
    ):
        assert reply_to_problem(receiver, reply_to) is not None, (receiver, reply_to)


def test_a_request_with_a_foreign_reply_to_is_an_error_delivery_and_never_answered() -> None:
    bus = Bus(MemoryTransport(), "ns")
    sub = bus.subscribe_inbox("registry:scout")
    env = bus.envelope("registry:scout", Ping(seq=1), correlation_id="c1", reply_to="world")
    bus.send(sub.stream, env)
    (d,) = bus.fetch([sub], count=1, block_ms=None)
    assert isinstance(d.error, ReplyAddressError) and d.error.reason == "bad_reply_to"
    with pytest.raises(ReplyAddressError):
        bus.reply_envelope(env, Ping(seq=2), sender="registry:scout")
    bus.dead_letter(d, d.error.reason, d.error.detail)
    assert bus.transport.length(bus.keys.inbox("world")) == 0  # not even the ErrorReply
    (letter,) = bus.dead_letters()
    assert letter.verified and letter.reason == "bad_reply_to" and letter.data == d.data


def test_a_long_entry_keeps_its_first_bytes_size_and_digest_and_is_signed() -> None:
    bus = Bus(MemoryTransport(), "ns", dead_letter_policy=DeadLetterPolicy(max_data=100))
    sub = bus.subscribe_inbox("echo")
    data = encode(bus.envelope("echo", Ping(seq=1, body="x" * 5000)))
    bus.transport.add(sub.stream, {"m": data})
    (d,) = bus.fetch([sub], count=1, block_ms=None)
    bus.dead_letter(d, "handler_error", "boom\n" * 10_000)
    (letter,) = bus.dead_letters()
    assert letter.verified and letter.truncated
    digest = hashlib.sha256(data).hexdigest()
    assert (letter.size, letter.data, letter.sha256) == (len(data), data[:100], digest)
    assert len(letter.detail) == 8192 and '"type": "sys.ping"' in letter.summary
    (entry,) = bus.transport.range(bus.keys.dead_letters)
    bus.transport.add(bus.keys.dead_letters, dict(entry.fields, reason=b"rejected"))  # altered
    assert [x.verified for x in bus.dead_letters()] == [True, False]
