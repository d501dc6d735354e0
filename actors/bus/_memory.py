"""In-process transport with the semantics of Redis Streams consumer groups.

Used for unit tests and the single-process embedded default. It keeps the same delivery rules
as Redis (pending entries, delivery counts, idle reclaim, acknowledgement-gated commits), so code
that works here works on Redis.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from actors.bus._transport import (
    Commit,
    CommitResult,
    Fields,
    GroupInfo,
    PendingInfo,
    StreamEntry,
    Transport,
)


def _parse(entry_id: str) -> int:
    return int(entry_id.partition("-")[0])


def _fmt(seq: int) -> str:
    return f"{seq}-0"


@dataclass
class _Pending:
    consumer: str
    delivered_at: float
    deliveries: int


@dataclass
class _Group:
    last_delivered: int
    pel: dict[int, _Pending] = field(default_factory=dict)
    consumers: set[str] = field(default_factory=set)


@dataclass
class _Stream:
    entries: dict[int, dict[str, bytes]] = field(default_factory=dict)
    ids: list[int] = field(default_factory=list)
    """The entries' ids in order, for bisecting: reads cost the entries they return."""
    last_id: int = 0

    def after(self, seq: int, count: int) -> list[int]:
        i = bisect.bisect_right(self.ids, seq)
        return self.ids[i : i + count]

    def remove(self, seqs: set[int]) -> None:
        for k in seqs:
            self.entries.pop(k, None)
        self.ids = [k for k in self.ids if k not in seqs]

    groups: dict[str, _Group] = field(default_factory=dict)


class MemoryTransport(Transport):
    """Streams, keys and hashes held in this process; thread-safe."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._mutex = threading.RLock()
        self._lock = threading.Condition(self._mutex)
        # Blocked readers by stream: an add wakes only the readers of its stream.
        self._waiters: dict[str, set[threading.Condition]] = {}
        self._streams: dict[str, _Stream] = {}
        self._keys: dict[str, tuple[bytes, float | None]] = {}
        self._hashes: dict[str, dict[str, bytes]] = {}
        self._seen: dict[str, dict[str, None]] = {}
        """Seen-id sets of idempotent actors, oldest first (a dict is an insertion-ordered set)."""
        self._next_seq = 0

    @property
    def url(self) -> str:
        return "memory://"

    def _stream(self, name: str) -> _Stream:
        s = self._streams.get(name)
        if s is None:
            s = self._streams[name] = _Stream()
        return s

    def _append(self, name: str, fields: Fields) -> str:
        self._next_seq += 1
        s = self._stream(name)
        s.entries[self._next_seq] = dict(fields)
        s.ids.append(self._next_seq)
        s.last_id = self._next_seq
        for waiter in self._waiters.get(name, ()):
            waiter.notify()
        return _fmt(self._next_seq)

    def _wait(self, streams: Sequence[str], timeout: float) -> None:
        """Block (lock held) until an entry is added to one of ``streams`` or ``timeout`` passes."""
        waiter = threading.Condition(self._mutex)
        for name in streams:
            self._waiters.setdefault(name, set()).add(waiter)
        try:
            waiter.wait(timeout)
        finally:
            for name in streams:
                group = self._waiters.get(name)
                if group is not None:
                    group.discard(waiter)
                    if not group:
                        del self._waiters[name]

    def ensure_group(self, stream: str, group: str, *, from_start: bool) -> None:
        with self._lock:
            s = self._stream(stream)
            if group not in s.groups:
                s.groups[group] = _Group(last_delivered=0 if from_start else s.last_id)

    def add(self, stream: str, fields: Fields) -> str:
        with self._lock:
            return self._append(stream, fields)

    def add_many(self, items: Sequence[tuple[str, Fields]]) -> list[str]:
        with self._lock:
            return [self._append(stream, fields) for stream, fields in items]

    def _take_new(self, group: str, consumer: str, streams: Sequence[str], count: int) -> list[StreamEntry]:
        out: list[StreamEntry] = []
        now = self._clock()
        for name in streams:
            s = self._streams.get(name)
            if s is None or group not in s.groups:
                raise KeyError(f"NOGROUP no group {group!r} on stream {name!r}")
            g = s.groups[group]
            g.consumers.add(consumer)
            if s.last_id <= g.last_delivered:
                continue
            for seq in s.after(g.last_delivered, count - len(out)):
                g.pel[seq] = _Pending(consumer, now, 1)
                g.last_delivered = seq
                out.append(StreamEntry(name, _fmt(seq), dict(s.entries[seq]), 1))
        return out

    def read_group(
        self, group: str, consumer: str, streams: Sequence[str], *, count: int, block_ms: int | None
    ) -> list[StreamEntry]:
        deadline = None if block_ms is None else self._clock() + block_ms / 1000
        with self._lock:
            while True:
                out = self._take_new(group, consumer, streams, count)
                if out or deadline is None:
                    return out
                remaining = deadline - self._clock()
                if remaining <= 0:
                    return []
                self._wait(streams, remaining)

    def read(self, stream: str, after_id: str, *, count: int, block_ms: int | None) -> list[StreamEntry]:
        after = _parse(after_id) if after_id not in ("$",) else None
        deadline = None if block_ms is None else self._clock() + block_ms / 1000
        with self._lock:
            if after is None:
                after = self._stream(stream).last_id
            while True:
                s = self._streams.get(stream)
                rows = [] if s is None else s.after(after, count)
                if rows or deadline is None:
                    assert s is not None or not rows
                    return [StreamEntry(stream, _fmt(k), dict(s.entries[k])) for k in rows] if s else []
                remaining = deadline - self._clock()
                if remaining <= 0:
                    return []
                self._wait([stream], remaining)

    def claim_idle(
        self, stream: str, group: str, consumer: str, *, min_idle_ms: int, count: int
    ) -> list[StreamEntry]:
        with self._lock:
            s = self._streams.get(stream)
            if s is None or group not in s.groups:
                return []
            g = s.groups[group]
            now = self._clock()
            out: list[StreamEntry] = []
            for seq in sorted(g.pel):
                if len(out) >= count:
                    break
                p = g.pel[seq]
                if (now - p.delivered_at) * 1000 < min_idle_ms:
                    continue
                if seq not in s.entries:
                    del g.pel[seq]
                    continue
                p.consumer, p.delivered_at, p.deliveries = consumer, now, p.deliveries + 1
                g.consumers.add(consumer)
                out.append(StreamEntry(stream, _fmt(seq), dict(s.entries[seq]), p.deliveries))
            return out

    def renew(self, stream: str, group: str, consumer: str, entry_ids: Sequence[str]) -> None:
        with self._lock:
            s = self._streams.get(stream)
            if s is None or group not in s.groups:
                return
            g = s.groups[group]
            now = self._clock()
            for entry_id in entry_ids:
                p = g.pel.get(_parse(entry_id))
                if p is not None:
                    p.consumer, p.delivered_at = consumer, now

    def commit(self, commit: Commit) -> CommitResult:
        with self._lock:
            if commit.ack is not None:
                s = self._streams.get(commit.ack.stream)
                g = s.groups.get(commit.ack.group) if s else None
                if g is None or g.pel.pop(_parse(commit.ack.entry_id), None) is None:
                    return CommitResult.STALE
            if commit.dedupe is not None:
                key, message_id = commit.dedupe
                seen = self._seen.setdefault(key, {})
                if message_id in seen:
                    return CommitResult.DUPLICATE
                seen[message_id] = None
                while len(seen) > commit.dedupe_limit:
                    del seen[next(iter(seen))]
            if commit.state is not None:
                self._keys[commit.state[0]] = (commit.state[1], None)
            for stream, fields in commit.adds:
                self._append(stream, fields)
            return CommitResult.APPLIED

    def delete_entries(self, stream: str, entry_ids: Sequence[str]) -> None:
        with self._lock:
            s = self._streams.get(stream)
            if s is not None:
                s.remove({_parse(entry_id) for entry_id in entry_ids})

    def range(
        self, stream: str, *, start: str = "-", end: str = "+", count: int | None = None
    ) -> list[StreamEntry]:
        lo = 0 if start == "-" else _parse(start)
        hi = None if end == "+" else _parse(end)
        with self._lock:
            s = self._streams.get(stream)
            if s is None:
                return []
            rows = [k for k in s.ids if k >= lo and (hi is None or k <= hi)]
            if count is not None:
                rows = rows[:count]
            return [StreamEntry(stream, _fmt(k), dict(s.entries[k])) for k in rows]

    def length(self, stream: str) -> int:
        with self._lock:
            s = self._streams.get(stream)
            return 0 if s is None else len(s.entries)

    def pending(self, stream: str, group: str, *, count: int = 100) -> list[PendingInfo]:
        with self._lock:
            s = self._streams.get(stream)
            if s is None or group not in s.groups:
                return []
            now = self._clock()
            g = s.groups[group]
            return [
                PendingInfo(
                    _fmt(k), g.pel[k].consumer, int((now - g.pel[k].delivered_at) * 1000), g.pel[k].deliveries
                )
                for k in sorted(g.pel)[:count]
            ]

    def groups(self, stream: str) -> list[GroupInfo]:
        with self._lock:
            s = self._streams.get(stream)
            if s is None:
                return []
            return [
                GroupInfo(name, len(g.pel), _fmt(g.last_delivered), sorted(g.consumers))
                for name, g in s.groups.items()
            ]

    def delete_consumer(self, stream: str, group: str, consumer: str) -> int:
        with self._lock:
            s = self._streams.get(stream)
            g = s.groups.get(group) if s else None
            if g is None:
                return 0
            owned = [k for k, p in g.pel.items() if p.consumer == consumer]
            for k in owned:
                del g.pel[k]
            g.consumers.discard(consumer)
            return len(owned)

    def trim_acknowledged(self, stream: str) -> int:
        with self._lock:
            s = self._streams.get(stream)
            if s is None or not s.groups:
                return 0
            keep_from = min(min(g.pel) if g.pel else g.last_delivered + 1 for g in s.groups.values())
            doomed = set(s.ids[: bisect.bisect_left(s.ids, keep_from)])
            s.remove(doomed)
            return len(doomed)

    def trim_before(self, stream: str, entry_id: str, *, ttl_ms: int | None = None) -> None:
        # Stream TTLs are not modelled in memory: the process owns all of it anyway.
        upto = _parse(entry_id)
        with self._lock:
            s = self._streams.get(stream)
            if s is not None:
                s.remove(set(s.ids[: bisect.bisect_right(s.ids, upto)]))

    def _live(self, key: str) -> bytes | None:
        item = self._keys.get(key)
        if item is None:
            return None
        value, expires = item
        if expires is not None and self._clock() >= expires:
            del self._keys[key]
            return None
        return value

    def get(self, key: str) -> bytes | None:
        with self._lock:
            return self._live(key)

    def set(self, key: str, value: bytes, *, ttl_ms: int | None = None) -> None:
        with self._lock:
            self._keys[key] = (value, None if ttl_ms is None else self._clock() + ttl_ms / 1000)

    def set_if_absent(self, key: str, value: bytes) -> bool:
        with self._lock:
            if self._live(key) is not None:
                return False
            self._keys[key] = (value, None)
            return True

    def delete(self, *keys: str) -> int:
        n = 0
        with self._lock:
            for key in keys:
                for table in (self._keys, self._hashes, self._streams, self._seen):
                    if key in table:
                        del table[key]  # type: ignore[attr-defined]
                        n += 1
        return n

    def exists(self, key: str) -> bool:
        with self._lock:
            return (
                self._live(key) is not None
                or key in self._hashes
                or key in self._streams
                or key in self._seen
            )

    def expire(self, key: str, ttl_ms: int) -> None:
        with self._lock:
            value = self._live(key)
            if value is not None:
                self._keys[key] = (value, self._clock() + ttl_ms / 1000)

    def hset(self, key: str, field_name: str, value: bytes) -> None:
        with self._lock:
            self._hashes.setdefault(key, {})[field_name] = value

    def hdel(self, key: str, field_name: str) -> None:
        with self._lock:
            h = self._hashes.get(key)
            if h is not None:
                h.pop(field_name, None)
                if not h:
                    del self._hashes[key]

    def hgetall(self, key: str) -> dict[str, bytes]:
        with self._lock:
            return dict(self._hashes.get(key, {}))

    def close(self) -> None:
        with self._lock:
            for group in self._waiters.values():
                for waiter in group:
                    waiter.notify()
