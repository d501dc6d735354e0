"""Dead letters on a real Redis (issue 13): bounded records, retention, and signed origins.

- A 5 MB expansion bomb written into a served inbox becomes a dead letter of at most the
  policy's bytes (its first bytes, its size and SHA-256, a bounded header summary), never an
  expanded text form; `dlq replay` refuses it (its bytes are incomplete).
- Retention drops dead letters by age and by length, and counts each drop (bus stats and the
  ``auratown_dead_letters_dropped_total`` metric).
- Each record the runtime writes is signed; a record altered or copied by anyone else is not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

import pytest

from actors.bus import Bus
from actors.bus._bus import DeadLetter, DeadLetterPolicy
from actors.bus._redis import RedisTransport
from actors.roles import EchoActor
from actors.runtime import Host, HostConfig
from actors.runtime.metrics import render_metrics
from messages import Ping, Pong
from tests.conftest import auratown, wait_until
from tests.unit.test_metrics import parse_exposition, value

pytestmark = pytest.mark.redis

FIGURES: dict[str, object] = {}


def _bomb(arrays: int = 5_000_000) -> bytes:
    """One msgpack array of ``arrays`` empty arrays: 5 MB that would decode to ~350 MB."""
    return b"\xdd" + arrays.to_bytes(4, "big") + b"\x90" * arrays


def _stored_bytes(bus: Bus, entry_id: str) -> int:
    (entry,) = bus.transport.range(bus.keys.dead_letters, start=entry_id, end=entry_id)
    return sum(len(k) + len(v) for k, v in entry.fields.items())


@pytest.fixture
def served(redis_url: str, namespace: str) -> Iterator[Bus]:
    bus = Bus(RedisTransport(redis_url), namespace)
    host = Host(bus, HostConfig(block_ms=50))
    host.spawn(EchoActor, "echo")
    with host:
        yield bus
    bus.close()
    bus.transport.close()


def test_a_five_megabyte_poison_entry_becomes_a_bounded_dead_letter(
    served: Bus, redis_url: str, namespace: str
) -> None:
    bus = served
    assert isinstance(bus.transport, RedisTransport)
    bomb = _bomb()
    bus.transport.add(bus.keys.inbox("echo"), {"m": bomb})

    def dead() -> DeadLetter | None:
        return next(iter(bus.dead_letters()), None)

    letter = wait_until(dead, timeout=60, what="the bomb to be dead-lettered")
    assert letter is not None
    limit = bus.dead_letter_policy.max_data
    stored = _stored_bytes(bus, letter.entry_id)
    memory = int(bus.transport.client.memory_usage(bus.keys.dead_letters) or 0)
    assert letter.verified and letter.reason
    assert letter.size == len(bomb) and letter.truncated and letter.data == bomb[:limit]
    assert letter.sha256 == hashlib.sha256(bomb).hexdigest()
    assert len(letter.detail) <= 8192 and len(letter.summary) <= 4096
    assert stored <= limit + 16 * 1024, stored  # the kept bytes and a few bounded fields
    # the service goes on
    assert bus.ask("echo", Ping(seq=1), timeout=10) == Pong(seq=1, responder=bus.process_id)
    # never replayed: only part of it was kept
    replay = auratown("dlq", "replay", "--all", "--json", "--redis", redis_url, "--namespace", namespace)
    assert replay.returncode == 1
    (skipped,) = json.loads(replay.stdout)["skipped"]
    assert f"only {limit} of its {len(bomb)} bytes" in skipped["why"]
    FIGURES.update(
        poison_entry_bytes=len(bomb),
        dead_letter_record_bytes=stored,
        dlq_memory_usage_bytes=memory,
    )


def test_retention_drops_dead_letters_by_age_and_length_and_counts_them(
    redis_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1_000_000.0]
    monkeypatch.setenv("AURATOWN_DLQ_MAX_LEN", "5")
    monkeypatch.setenv("AURATOWN_DLQ_MAX_AGE", "100")
    monkeypatch.setenv("AURATOWN_DLQ_MAX_BYTES", "1024")
    policy = DeadLetterPolicy.from_settings()
    assert (policy.max_len, policy.max_age, policy.max_data) == (5, 100.0, 1024)
    bus = Bus(RedisTransport(redis_url), namespace, clock=lambda: now[0], dead_letter_policy=policy)
    try:
        sub = bus.subscribe_inbox("poison")

        def dead_letter(n: int) -> None:
            for i in range(n):
                bus.transport.add(sub.stream, {"m": b"\xc1garbage-%d" % i})
            deliveries = bus.fetch([sub], count=n, block_ms=None)
            assert len(deliveries) == n
            for d in deliveries:
                bus.dead_letter(d, "malformed", "not msgpack")

        dead_letter(3)
        now[0] += 101  # those three are now older than max_age
        dead_letter(1)
        assert bus.stats["dead_letters_dropped_age"] == 3
        assert [d.wall_time for d in bus.dead_letters()] == [now[0]]
        dead_letter(8)  # nine in all: the oldest four go
        assert bus.stats["dead_letters_dropped_length"] == 4
        kept = bus.dead_letters()
        assert len(kept) == 5 and all(d.verified for d in kept)
        samples = parse_exposition(render_metrics(None, bus))
        assert value(samples, "auratown_dead_letters_dropped_total", cause="age") == 3
        assert value(samples, "auratown_dead_letters_dropped_total", cause="length") == 4
        FIGURES.update(retention_dropped_age=3, retention_dropped_length=4, retention_kept=len(kept))
    finally:
        bus.close()
        bus.transport.close()
    monkeypatch.setenv("AURATOWN_DLQ_MAX_LEN", "0")
    with pytest.raises(ValueError, match="AURATOWN_DLQ_MAX_LEN"):
        DeadLetterPolicy.from_settings()


def test_a_record_not_written_by_the_runtime_is_unverified(redis_url: str, namespace: str) -> None:
    bus = Bus(RedisTransport(redis_url), namespace)
    try:
        sub = bus.subscribe_inbox("poison")
        bus.transport.add(sub.stream, {"m": b"\xc1"})
        (d,) = bus.fetch([sub], count=1, block_ms=None)
        bus.dead_letter(d, "malformed", "not msgpack")
        (genuine,) = bus.transport.range(bus.keys.dead_letters)
        tampered = dict(genuine.fields, stream=bus.keys.inbox("registry").encode())
        copied = dict(genuine.fields)  # the same fields signed for this stream, in another one
        bus.transport.add(bus.keys.dead_letters, tampered)
        bus.transport.add(bus.keys.agent_dead_letters("scout"), copied)
        assert [x.verified for x in bus.dead_letters()] == [True, False]
        bus.dead_letter_stream = bus.keys.agent_dead_letters("scout")
        assert [x.verified for x in bus.dead_letters()] == [False]
    finally:
        bus.close()
        bus.transport.close()
    print(f"FAULT FIGURES dead letters: {json.dumps(FIGURES, sort_keys=True)}")
