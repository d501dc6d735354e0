"""Redis Streams transport (redis-py).

Two connection pools: one with a socket timeout for ordinary commands, one without for blocking
reads, because the client's socket timeout is not extended for ``XREADGROUP ... BLOCK``
(redis/redis-py #3138). Blocks are also kept short by the callers.

A server that goes away after it was reached (a restart, a failover) is waited for: commands
retry their connection for ``reconnect_patience`` seconds instead of failing at once, so a timer's
one-off send or a commit does not get lost in a restart (tests/integration/test_faults.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from actors.bus._bus import READ_BATCH_MAX
from actors.bus._transport import (
    Commit,
    CommitResult,
    Fields,
    GroupInfo,
    PendingInfo,
    StreamEntry,
    Transport,
)

# Acknowledge, then apply the effects only if this call really acknowledged the entry: a second
# consumer that reclaimed and already committed it leaves XACK returning 0, and nothing is applied.
_COMMIT_LUA = """
local flags = ARGV[1]
local k = 1
if string.find(flags, 'a', 1, true) then
  if redis.call('XACK', KEYS[k], ARGV[2], ARGV[3]) == 0 then return 0 end
  k = k + 1
end
if string.find(flags, 'd', 1, true) then
  local seen = KEYS[k]
  k = k + 1
  if redis.call('ZSCORE', seen, ARGV[4]) then return 2 end
  local n = redis.call('ZCARD', seen)
  local top = redis.call('ZREVRANGE', seen, 0, 0, 'WITHSCORES')
  local score = 0
  if #top > 0 then score = tonumber(top[2]) + 1 end
  redis.call('ZADD', seen, score, ARGV[4])
  local limit = tonumber(ARGV[5])
  if n + 1 > limit then redis.call('ZREMRANGEBYRANK', seen, 0, n - limit) end
end
if string.find(flags, 's', 1, true) then
  redis.call('SET', KEYS[k], ARGV[6])
  k = k + 1
end
local a = 7
while k <= #KEYS do
  local nf = tonumber(ARGV[a])
  local args = {KEYS[k], '*'}
  for i = 1, 2 * nf do args[#args + 1] = ARGV[a + i] end
  redis.call('XADD', unpack(args))
  a = a + 1 + 2 * nf
  k = k + 1
end
return 1
"""

_COMMIT_RESULTS = {0: CommitResult.STALE, 1: CommitResult.APPLIED, 2: CommitResult.DUPLICATE}


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _fields(raw: dict[Any, Any] | None) -> dict[str, bytes]:
    if not raw:
        return {}
    return {_s(k): v if isinstance(v, bytes) else str(v).encode() for k, v in raw.items()}


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    netloc = f"{user}:***@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _next_id(entry_id: str) -> str:
    ms, _, seq = entry_id.partition("-")
    return f"{ms}-{int(seq or 0) + 1}"


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


T = TypeVar("T")

RECONNECT_PATIENCE = 30.0
"""Seconds a command waits for a server that went away to come back (a restart) before failing."""


class _Reconnect(Retry):
    """Retries connection errors with backoff, but only once this transport has reached its server
    (a wrong URL or a refused password still fails at once) and only for ``patience`` seconds.

    One instance is shared by every connection of a transport (redis-py deep-copies a Retry per
    connection; this one is stateless apart from the shared ``reached`` flag).
    """

    def __init__(self, patience: float) -> None:
        super().__init__(ExponentialBackoff(cap=0.5, base=0.02), -1, (redis.ConnectionError,))
        self.patience = patience
        self.reached = threading.Event()

    def __deepcopy__(self, memo: dict[int, Any]) -> _Reconnect:
        return self

    def call_with_retry(  # type: ignore[override]
        self,
        do: Callable[[], T],
        fail: Callable[..., Any],
        is_retryable: Callable[[Exception], bool] | None = None,
        with_failure_count: bool = False,
    ) -> T:
        deadline = time.monotonic() + self.patience

        def attempt() -> T:
            result = do()
            self.reached.set()
            return result

        def retryable(error: Exception) -> bool:
            return (
                self.reached.is_set()
                and not isinstance(error, redis.AuthenticationError)
                and time.monotonic() < deadline
                and (is_retryable is None or is_retryable(error))
            )

        return super().call_with_retry(attempt, fail, retryable, with_failure_count)


MAX_CONNECTIONS = 64
"""Connections for commands; more threads than this wait their turn (a URL's max_connections wins)."""
MAX_BLOCKING_CONNECTIONS = 512
"""Connections for blocking reads: one per reader thread and per thread with a reply lane."""


class RedisTransport(Transport):
    """Streams on a Redis server: ``redis://``, ``rediss://``, ``unix://``, with password or ACL user."""

    def __init__(
        self,
        url: str,
        *,
        socket_timeout: float = 10.0,
        client_name: str | None = None,
        reconnect_patience: float = RECONNECT_PATIENCE,
    ) -> None:
        self._url = url
        common: dict[str, Any] = {"client_name": client_name} if client_name else {}
        if reconnect_patience > 0:
            common["retry"] = _Reconnect(reconnect_patience)

        def client(max_connections: int, read_timeout: float | None) -> redis.Redis:
            # Blocking pools: a host runs many actor threads that each commit; past the pool's
            # size they wait for a connection instead of failing (redis-py's plain pool raises).
            pool = redis.BlockingConnectionPool.from_url(
                url,
                max_connections=max_connections,
                timeout=socket_timeout,
                socket_timeout=read_timeout,
                socket_connect_timeout=socket_timeout,
                **common,
            )
            return redis.Redis(connection_pool=pool)

        self._client = client(MAX_CONNECTIONS, socket_timeout)
        self._blocking = client(MAX_BLOCKING_CONNECTIONS, None)
        self._commit_script = self._client.register_script(_COMMIT_LUA)

    @property
    def url(self) -> str:
        return redact_url(self._url)

    @property
    def client(self) -> redis.Redis:
        """The underlying client, for operations outside the bus (tests, tools)."""
        return self._client

    def ping(self) -> bool:
        return bool(self._client.ping())

    def ensure_group(self, stream: str, group: str, *, from_start: bool) -> None:
        try:
            self._client.xgroup_create(stream, group, id="0" if from_start else "$", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def add(self, stream: str, fields: Fields) -> str:
        return _s(self._client.xadd(stream, dict(fields)))  # type: ignore[arg-type]

    def add_many(self, items: Sequence[tuple[str, Fields]]) -> list[str]:
        pipe = self._client.pipeline(transaction=False)
        for stream, fields in items:
            pipe.xadd(stream, dict(fields))  # type: ignore[arg-type]
        return [_s(i) for i in pipe.execute()]

    def _parse_read(self, reply: Any) -> list[StreamEntry]:
        out: list[StreamEntry] = []
        if not reply:
            return out
        # RESP2 (the default): [[stream, [(id, fields), ...]], ...]; RESP3: {stream: [[...]]}
        items = [(k, v[0]) for k, v in reply.items()] if isinstance(reply, dict) else reply
        for stream, entries in items:
            name = _s(stream)
            for entry_id, fields in entries:
                if fields is None:
                    continue
                out.append(StreamEntry(name, _s(entry_id), _fields(fields), 1))
        return out

    def read_group(
        self, group: str, consumer: str, streams: Sequence[str], *, count: int, block_ms: int | None
    ) -> list[StreamEntry]:
        if not streams:
            return []
        # XREADGROUP's COUNT is per stream: this caps each; ``Bus.fetch`` divides READ_BATCH_MAX
        # among the streams it reads (docs/protocol.md, section 3, the memory budget).
        count = max(1, min(count, READ_BATCH_MAX))
        reply = self._blocking.xreadgroup(
            group, consumer, dict.fromkeys(streams, ">"), count=count, block=block_ms
        )
        return self._parse_read(reply)

    def read(self, stream: str, after_id: str, *, count: int, block_ms: int | None) -> list[StreamEntry]:
        reply = self._blocking.xread({stream: after_id}, count=count, block=block_ms)
        return self._parse_read(reply)

    def claim_idle(
        self, stream: str, group: str, consumer: str, *, min_idle_ms: int, count: int
    ) -> list[StreamEntry]:
        claimed: list[tuple[str, dict[str, bytes]]] = []
        start = "0-0"
        while len(claimed) < count:
            reply = self._client.xautoclaim(
                stream, group, consumer, min_idle_ms, start_id=start, count=count - len(claimed)
            )
            start = _s(reply[0])
            for entry_id, fields in reply[1]:
                if fields is not None:
                    claimed.append((_s(entry_id), _fields(fields)))
            if start == "0-0":
                break
        return self._with_deliveries(stream, group, claimed)

    def claim(self, stream: str, group: str, consumer: str, entry_ids: Sequence[str]) -> list[StreamEntry]:
        if not entry_ids:
            return []
        # XCLAIM with no idle minimum: counts the delivery (a message that kills its process each
        # time still reaches its attempt limit) and returns the fields; ids no longer pending are
        # left out by Redis itself.
        rows: Any = self._client.xclaim(stream, group, consumer, 0, list(entry_ids))
        return self._with_deliveries(stream, group, [(_s(i), _fields(f)) for i, f in rows if f is not None])

    def _with_deliveries(
        self, stream: str, group: str, claimed: Sequence[tuple[str, dict[str, bytes]]]
    ) -> list[StreamEntry]:
        """Claimed entries with how often the group has delivered each (XPENDING, one round trip)."""
        if not claimed:
            return []
        pipe = self._client.pipeline(transaction=False)
        for entry_id, _ in claimed:
            pipe.xpending_range(stream, group, min=entry_id, max=entry_id, count=1)
        counts = pipe.execute()
        return [
            StreamEntry(stream, entry_id, fields, int(info[0]["times_delivered"]) if info else 1)
            for (entry_id, fields), info in zip(claimed, counts, strict=True)
        ]

    def renew(self, stream: str, group: str, consumer: str, entry_ids: Sequence[str]) -> None:
        if entry_ids:
            self._client.xclaim(stream, group, consumer, 0, list(entry_ids), justid=True)

    batches_commits = True

    def commit(self, commit: Commit) -> CommitResult:
        # A direct EVALSHA: in a pipeline redis-py would first ask SCRIPT EXISTS (one more trip).
        keys, args = self._commit_args(commit)
        return _COMMIT_RESULTS[int(self._commit_script(keys=keys, args=args))]

    def commit_many(self, commits: Sequence[Commit]) -> list[CommitResult]:
        if len(commits) == 1:
            return [self.commit(commits[0])]
        for attempt in (1, 2):
            pipe = self._client.pipeline(transaction=False)
            for commit in commits:
                keys, args = self._commit_args(commit)
                pipe.evalsha(self._commit_script.sha, len(keys), *keys, *args)
            try:
                return [_COMMIT_RESULTS[int(r)] for r in pipe.execute()]
            except redis.exceptions.NoScriptError:
                # The server lost its script cache (restart, failover): nothing ran; load and redo.
                if attempt == 2:
                    raise
                self._client.script_load(_COMMIT_LUA)
        raise AssertionError("unreachable")

    @staticmethod
    def _commit_args(commit: Commit) -> tuple[list[str], list[Any]]:
        flags = ""
        keys: list[str] = []
        group = entry_id = message_id = ""
        state_value: bytes = b""
        if commit.ack is not None:
            flags += "a"
            keys.append(commit.ack.stream)
            group, entry_id = commit.ack.group, commit.ack.entry_id
        if commit.dedupe is not None:
            flags += "d"
            keys.append(commit.dedupe[0])
            message_id = commit.dedupe[1]
        if commit.state is not None:
            flags += "s"
            keys.append(commit.state[0])
            state_value = commit.state[1]
        args: list[Any] = [flags, group, entry_id, message_id, commit.dedupe_limit, state_value]
        for stream, fields in commit.adds:
            keys.append(stream)
            args.append(len(fields))
            for name, value in fields.items():
                args.extend((name, value))
        return keys, args

    def delete_entries(self, stream: str, entry_ids: Sequence[str]) -> None:
        if entry_ids:
            self._client.xdel(stream, *entry_ids)

    def range(
        self, stream: str, *, start: str = "-", end: str = "+", count: int | None = None
    ) -> list[StreamEntry]:
        rows: Any = self._client.xrange(stream, min=start, max=end, count=count)
        return [StreamEntry(stream, _s(i), _fields(f)) for i, f in rows]

    def length(self, stream: str) -> int:
        return int(self._client.xlen(stream))

    def pending(self, stream: str, group: str, *, count: int = 100) -> list[PendingInfo]:
        try:
            rows: Any = self._client.xpending_range(stream, group, min="-", max="+", count=count)
        except redis.ResponseError as exc:
            if "NOGROUP" in str(exc):
                return []
            raise
        return [
            PendingInfo(
                _s(r["message_id"]),
                _s(r["consumer"]),
                int(r["time_since_delivered"]),
                int(r["times_delivered"]),
            )
            for r in rows
        ]

    def groups(self, stream: str) -> list[GroupInfo]:
        try:
            rows = self._client.xinfo_groups(stream)
        except redis.ResponseError as exc:
            if "no such key" in str(exc).lower():
                return []
            raise
        out = []
        for r in rows:
            name = _s(r["name"])
            consumers = [_s(c["name"]) for c in self._client.xinfo_consumers(stream, name)]
            out.append(GroupInfo(name, int(r["pending"]), _s(r["last-delivered-id"]), consumers))
        return out

    def delete_consumer(self, stream: str, group: str, consumer: str) -> int:
        try:
            return int(self._client.xgroup_delconsumer(stream, group, consumer))
        except redis.ResponseError as exc:
            if "NOGROUP" in str(exc) or "no such key" in str(exc).lower():
                return 0
            raise

    def trim_acknowledged(self, stream: str) -> int:
        try:
            groups = self._client.xinfo_groups(stream)
        except redis.ResponseError:
            return 0
        if not groups:
            return 0  # nobody reads it yet: every entry is still unread
        keep_from: tuple[int, int] | None = None
        for g in groups:
            name = _s(g["name"])
            summary = self._client.xpending(stream, name) if int(g["pending"]) > 0 else None
            if summary and summary.get("min"):
                first = _id_key(_s(summary["min"]))
            else:  # nothing pending (or acknowledged since XINFO): all delivered entries are done
                first = _id_key(_next_id(_s(g["last-delivered-id"])))
            keep_from = first if keep_from is None or first < keep_from else keep_from
        assert keep_from is not None
        return int(self._client.xtrim(stream, minid=f"{keep_from[0]}-{keep_from[1]}", approximate=False))

    def trim_before(self, stream: str, entry_id: str, *, ttl_ms: int | None = None) -> None:
        pipe = self._client.pipeline(transaction=False)
        pipe.xtrim(stream, minid=_next_id(entry_id), approximate=False)
        if ttl_ms is not None:
            pipe.pexpire(stream, ttl_ms)
        pipe.execute()

    def get(self, key: str) -> bytes | None:
        value = self._client.get(key)
        return value if value is None or isinstance(value, bytes) else str(value).encode()

    def set(self, key: str, value: bytes, *, ttl_ms: int | None = None) -> None:
        self._client.set(key, value, px=ttl_ms)

    def set_if_absent(self, key: str, value: bytes) -> bool:
        return bool(self._client.set(key, value, nx=True))

    def delete(self, *keys: str) -> int:
        return int(self._client.delete(*keys)) if keys else 0

    def exists(self, key: str) -> bool:
        return bool(self._client.exists(key))

    def expire(self, key: str, ttl_ms: int) -> None:
        self._client.pexpire(key, ttl_ms)

    def hset(self, key: str, field_name: str, value: bytes) -> None:
        self._client.hset(key, field_name, value)

    def hdel(self, key: str, field_name: str) -> None:
        self._client.hdel(key, field_name)

    def hgetall(self, key: str) -> dict[str, bytes]:
        return _fields(self._client.hgetall(key))  # type: ignore[arg-type]

    def close(self) -> None:
        self._client.close()
        self._blocking.close()
        # A client given a pool does not own it: disconnect the pools' sockets explicitly.
        self._client.connection_pool.disconnect()
        self._blocking.connection_pool.disconnect()
