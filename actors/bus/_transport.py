"""The stream operations both transports implement, with Redis Streams semantics.

``Bus`` builds tell/publish/ask, retries and dead-lettering on these; a transport only moves
entries. Every entry is a flat map of field -> bytes.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

Fields = Mapping[str, bytes]


@dataclass(frozen=True)
class StreamEntry:
    stream: str
    entry_id: str
    fields: dict[str, bytes]
    deliveries: int = 1
    """How often the group has delivered this entry (1 on the first read)."""


@dataclass(frozen=True)
class Ack:
    stream: str
    group: str
    entry_id: str


@dataclass(frozen=True)
class Commit:
    """Effects of one handled entry, applied atomically with its acknowledgement.

    If ``ack`` is given and the entry is no longer pending (another consumer reclaimed and
    committed it), nothing is applied: that is what makes a redelivered message's effect happen
    once. If ``dedupe`` (seen-set key, message id) names an id already seen, the entry is acked
    and nothing else is applied.
    """

    ack: Ack | None = None
    adds: tuple[tuple[str, Fields], ...] = ()
    state: tuple[str, bytes] | None = None
    dedupe: tuple[str, str] | None = None
    dedupe_limit: int = 10_000


class CommitResult(enum.Enum):
    APPLIED = "applied"
    STALE = "stale"
    """The entry was already acknowledged: another consumer committed it."""
    DUPLICATE = "duplicate"
    """The message id was already processed; the entry was acknowledged, nothing applied."""


@dataclass(frozen=True)
class PendingInfo:
    entry_id: str
    consumer: str
    idle_ms: int
    deliveries: int


@dataclass
class GroupInfo:
    name: str
    pending: int
    last_delivered_id: str
    consumers: list[str] = field(default_factory=list)


class Transport(abc.ABC):
    """Stream operations; thread-safe."""

    @abc.abstractmethod
    def ensure_group(self, stream: str, group: str, *, from_start: bool) -> None:
        """Create the stream and group if missing; ``from_start`` reads existing entries too."""

    @abc.abstractmethod
    def add(self, stream: str, fields: Fields) -> str: ...

    @abc.abstractmethod
    def add_many(self, items: Sequence[tuple[str, Fields]]) -> list[str]: ...

    @abc.abstractmethod
    def read_group(
        self, group: str, consumer: str, streams: Sequence[str], *, count: int, block_ms: int | None
    ) -> list[StreamEntry]:
        """New entries for ``consumer`` (``>``); blocks up to ``block_ms`` when there are none."""

    @abc.abstractmethod
    def read(self, stream: str, after_id: str, *, count: int, block_ms: int | None) -> list[StreamEntry]:
        """Entries after ``after_id`` without a group (for a stream one reader owns)."""

    @abc.abstractmethod
    def claim_idle(
        self, stream: str, group: str, consumer: str, *, min_idle_ms: int, count: int
    ) -> list[StreamEntry]:
        """Take over entries pending longer than ``min_idle_ms`` (XAUTOCLAIM)."""

    @abc.abstractmethod
    def renew(self, stream: str, group: str, consumer: str, entry_ids: Sequence[str]) -> None:
        """Reset the idle time of entries this consumer is still working on."""

    def claim(self, stream: str, group: str, consumer: str, entry_ids: Sequence[str]) -> list[StreamEntry]:
        """Take over these pending entries now, whatever their idle time (XCLAIM): what a consumer
        known to be dead left (a restarted process's predecessor). Entries no longer pending are
        skipped."""
        if not entry_ids:
            return []
        pending = {p.entry_id: p.deliveries for p in self.pending(stream, group, count=10_000)}
        wanted = [i for i in entry_ids if i in pending]
        self.renew(stream, group, consumer, wanted)
        out = []
        for entry_id in wanted:
            for e in self.range(stream, start=entry_id, end=entry_id, count=1):
                out.append(StreamEntry(stream, e.entry_id, e.fields, pending[entry_id] + 1))
        return out

    @abc.abstractmethod
    def commit(self, commit: Commit) -> CommitResult: ...

    def commit_many(self, commits: Sequence[Commit]) -> list[CommitResult]:
        """Apply several commits, each atomic on its own, in order (Redis: one round trip)."""
        return [self.commit(c) for c in commits]

    batches_commits: bool = False
    """True if ``commit_many`` is cheaper than as many ``commit`` calls (a network round trip)."""

    @abc.abstractmethod
    def delete_entries(self, stream: str, entry_ids: Sequence[str]) -> None: ...

    @abc.abstractmethod
    def range(
        self, stream: str, *, start: str = "-", end: str = "+", count: int | None = None
    ) -> list[StreamEntry]: ...

    @abc.abstractmethod
    def length(self, stream: str) -> int: ...

    @abc.abstractmethod
    def pending(self, stream: str, group: str, *, count: int = 100) -> list[PendingInfo]: ...

    @abc.abstractmethod
    def groups(self, stream: str) -> list[GroupInfo]: ...

    @abc.abstractmethod
    def delete_consumer(self, stream: str, group: str, consumer: str) -> int: ...

    @abc.abstractmethod
    def trim_acknowledged(self, stream: str) -> int:
        """Drop entries every group has acknowledged; never an unread or pending one."""

    @abc.abstractmethod
    def trim_before(self, stream: str, entry_id: str, *, ttl_ms: int | None = None) -> None:
        """Drop entries up to and including ``entry_id`` (a stream one reader owns); refresh its TTL."""

    # plain keys, hashes (presence, state)
    @abc.abstractmethod
    def get(self, key: str) -> bytes | None: ...

    @abc.abstractmethod
    def set(self, key: str, value: bytes, *, ttl_ms: int | None = None) -> None: ...

    @abc.abstractmethod
    def set_if_absent(self, key: str, value: bytes) -> bool:
        """Store ``value`` unless the key exists; True if this call stored it."""

    @abc.abstractmethod
    def delete(self, *keys: str) -> int: ...

    @abc.abstractmethod
    def exists(self, key: str) -> bool: ...

    @abc.abstractmethod
    def expire(self, key: str, ttl_ms: int) -> None: ...

    @abc.abstractmethod
    def hset(self, key: str, field_name: str, value: bytes) -> None: ...

    @abc.abstractmethod
    def hdel(self, key: str, field_name: str) -> None: ...

    @abc.abstractmethod
    def hgetall(self, key: str) -> dict[str, bytes]: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """Where this transport points: ``memory://`` or the Redis URL without its password."""
