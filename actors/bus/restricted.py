"""A Redis transport for a client under a restrictive ACL (an attached agent's Redis user).

The standard transport applies a handler's effects with one Lua script (``EVALSHA``) whose
declared keys include the streams it appends to. Redis checks a script's declared keys for read
AND write access, so an agent that may only append to another process's reply stream (ACL
``%W~``, never read it) could not reply. This transport makes the same commit with plain
commands, each checked on its own: the effects first (dedupe mark, state, appends), then the
acknowledgement. Delivery stays at-least-once: a crash between the two redelivers the entry and
its effects may be applied twice (askers ignore a second reply to one correlation id); a
commit whose acknowledgement finds the entry already taken by another consumer is ``STALE``.

Use it with a bus whose process id is ``identity_process_id(IDENT, ...)`` so that the process's
own reply and control streams fall under its ACL (``auratown acl``). Its ``identity`` (the URL's
user, or given) sends the bus's dead letters to the agent's own stream (``dlq:IDENT``): the
runtime's dead-letter stream is written by the runtime only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from actors.bus._keys import check_identity
from actors.bus._redis import RedisTransport
from actors.bus._transport import Commit, CommitResult


class RestrictedRedisTransport(RedisTransport):
    """``RedisTransport`` without scripts: every command names only keys the ACL grants."""

    batches_commits = False

    def __init__(self, url: str, *, identity: str | None = None, **kw: Any) -> None:
        super().__init__(url, **kw)
        user = identity or self.client.connection_pool.connection_kwargs.get("username")
        self.identity: str | None = check_identity(user) if user and user != "default" else None
        """The agent's ACL user, whose dead letters go to its own stream."""

    def commit(self, commit: Commit) -> CommitResult:
        client = self.client
        if commit.dedupe is not None:
            seen, message_id = commit.dedupe
            if client.zscore(seen, message_id) is not None:
                if commit.ack is not None:
                    client.xack(commit.ack.stream, commit.ack.group, commit.ack.entry_id)
                return CommitResult.DUPLICATE
        pipe = client.pipeline(transaction=False)
        if commit.dedupe is not None:
            seen, message_id = commit.dedupe
            pipe.zadd(seen, {message_id: time.time_ns()})
            pipe.zremrangebyrank(seen, 0, -commit.dedupe_limit - 1)
        if commit.state is not None:
            pipe.set(commit.state[0], commit.state[1])
        for stream, fields in commit.adds:
            pipe.xadd(stream, dict(fields))  # type: ignore[arg-type]
        if commit.ack is not None:
            pipe.xack(commit.ack.stream, commit.ack.group, commit.ack.entry_id)
        results = pipe.execute()
        if commit.ack is not None and int(results[-1]) == 0:
            return CommitResult.STALE
        return CommitResult.APPLIED

    def commit_many(self, commits: Sequence[Commit]) -> list[CommitResult]:
        return [self.commit(c) for c in commits]
