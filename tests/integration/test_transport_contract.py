"""The memory and redis transports obey the same Redis Streams contract (each test runs on both)."""

from __future__ import annotations

import uuid

from actors.bus import Ack, Commit, CommitResult, Transport
from tests.conftest import wait_until


def names() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"auratown:{{t-{tag}}}:inbox:a", f"auratown:{{t-{tag}}}:out"


def test_group_reads_each_entry_once_and_tracks_pending(transport: Transport) -> None:
    s, _ = names()
    transport.ensure_group(s, "g", from_start=True)
    transport.ensure_group(s, "g", from_start=True)  # idempotent
    ids = [transport.add(s, {"m": f"{i}".encode()}) for i in range(3)]
    first = transport.read_group("g", "c1", [s], count=2, block_ms=None)
    second = transport.read_group("g", "c2", [s], count=10, block_ms=None)
    assert [e.entry_id for e in first + second] == ids
    assert [e.fields["m"] for e in first] == [b"0", b"1"]
    assert transport.read_group("g", "c1", [s], count=10, block_ms=10) == []
    pending = transport.pending(s, "g")
    assert [(p.entry_id, p.consumer) for p in pending] == [(ids[0], "c1"), (ids[1], "c1"), (ids[2], "c2")]


def test_group_created_at_the_end_skips_old_entries(transport: Transport) -> None:
    s, _ = names()
    transport.add(s, {"m": b"old"})
    transport.ensure_group(s, "late", from_start=False)
    transport.add(s, {"m": b"new"})
    got = transport.read_group("late", "c", [s], count=10, block_ms=None)
    assert [e.fields["m"] for e in got] == [b"new"]


def test_commit_applies_effects_only_for_the_first_acknowledgement(transport: Transport) -> None:
    s, out = names()
    transport.ensure_group(s, "g", from_start=True)
    transport.add(s, {"m": b"x"})
    (e,) = transport.read_group("g", "c1", [s], count=1, block_ms=None)
    state_key = s + ":state"
    commit = Commit(ack=Ack(s, "g", e.entry_id), adds=((out, {"m": b"effect"}),), state=(state_key, b"s1"))
    assert transport.commit(commit) is CommitResult.APPLIED
    again = Commit(ack=Ack(s, "g", e.entry_id), adds=((out, {"m": b"effect"}),), state=(state_key, b"s2"))
    assert transport.commit(again) is CommitResult.STALE
    assert [x.fields["m"] for x in transport.range(out)] == [b"effect"]
    assert transport.get(state_key) == b"s1"
    assert transport.pending(s, "g") == []


def test_dedupe_skips_a_message_id_seen_before(transport: Transport) -> None:
    s, out = names()
    transport.ensure_group(s, "g", from_start=True)
    transport.add(s, {"m": b"1"})
    transport.add(s, {"m": b"1-again"})
    e1, e2 = transport.read_group("g", "c", [s], count=2, block_ms=None)
    seen = s + ":seen"
    c1 = Commit(ack=Ack(s, "g", e1.entry_id), adds=((out, {"m": b"e"}),), dedupe=(seen, "msg-1"))
    c2 = Commit(ack=Ack(s, "g", e2.entry_id), adds=((out, {"m": b"e"}),), dedupe=(seen, "msg-1"))
    assert transport.commit(c1) is CommitResult.APPLIED
    assert transport.commit(c2) is CommitResult.DUPLICATE
    assert transport.length(out) == 1
    assert transport.pending(s, "g") == []  # the duplicate was acknowledged too


def test_dedupe_memory_is_bounded(transport: Transport) -> None:
    s, _ = names()
    seen = s + ":seen"
    for i in range(5):
        assert transport.commit(Commit(dedupe=(seen, f"id{i}"), dedupe_limit=3)) is CommitResult.APPLIED
    assert transport.commit(Commit(dedupe=(seen, "id4"), dedupe_limit=3)) is CommitResult.DUPLICATE
    assert transport.commit(Commit(dedupe=(seen, "id0"), dedupe_limit=3)) is CommitResult.APPLIED


def test_idle_entries_are_reclaimed_with_their_delivery_count(transport: Transport) -> None:
    s, _ = names()
    transport.ensure_group(s, "g", from_start=True)
    eid = transport.add(s, {"m": b"x"})
    transport.read_group("g", "dead", [s], count=1, block_ms=None)
    (claimed,) = transport.claim_idle(s, "g", "alive", min_idle_ms=0, count=10)
    assert (claimed.entry_id, claimed.deliveries, claimed.fields["m"]) == (eid, 2, b"x")
    assert transport.pending(s, "g")[0].consumer == "alive"


def test_renewed_entries_are_not_reclaimed(transport: Transport) -> None:
    s, _ = names()
    transport.ensure_group(s, "g", from_start=True)
    transport.add(s, {"m": b"x"})
    (e,) = transport.read_group("g", "worker", [s], count=1, block_ms=None)
    transport.renew(s, "g", "worker", [e.entry_id])
    assert transport.claim_idle(s, "g", "thief", min_idle_ms=60_000, count=10) == []


def test_trim_never_drops_unread_or_pending_entries(transport: Transport) -> None:
    s, _ = names()
    ids = [transport.add(s, {"m": str(i).encode()}) for i in range(6)]
    assert transport.trim_acknowledged(s) == 0  # no group reads it yet
    transport.ensure_group(s, "a", from_start=True)
    transport.ensure_group(s, "b", from_start=True)
    got = transport.read_group("a", "c", [s], count=4, block_ms=None)
    for e in got[:3]:
        transport.commit(Commit(ack=Ack(s, "a", e.entry_id)))
    # group b has read nothing: nothing may go
    assert transport.trim_acknowledged(s) == 0
    for e in transport.read_group("b", "c", [s], count=6, block_ms=None):
        transport.commit(Commit(ack=Ack(s, "b", e.entry_id)))
    # a still holds ids[3] pending and has not read ids[4:]
    assert transport.trim_acknowledged(s) == 3
    assert [e.entry_id for e in transport.range(s)] == ids[3:]


def test_blocking_read_returns_empty_at_its_timeout(transport: Transport) -> None:
    s, _ = names()
    transport.ensure_group(s, "g", from_start=True)
    assert transport.read_group("g", "c", [s], count=1, block_ms=20) == []
    assert transport.read(s, "0-0", count=1, block_ms=20) == []


def test_keys_hashes_and_expiry(transport: Transport) -> None:
    s, _ = names()
    transport.set(s + ":k", b"v")
    assert transport.get(s + ":k") == b"v"
    transport.set(s + ":gone", b"v", ttl_ms=1)
    wait_until(lambda: transport.get(s + ":gone") is None, what="a 1 ms key to expire")
    transport.hset(s + ":h", "f", b"1")
    assert transport.hgetall(s + ":h") == {"f": b"1"}
    transport.hdel(s + ":h", "f")
    assert transport.hgetall(s + ":h") == {}
    assert transport.delete(s + ":k") == 1
    assert transport.get(s + ":k") is None
