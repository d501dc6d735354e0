"""The Redis versions AURA Town supports, and the one-line refusal of any other.

The oldest supported is 7.0: the agents' ACL (``auratown acl``, ``deploy/redis/users.acl``) grants
read-only and append-only keys with the ``%R~`` / ``%W~`` selectors, which Redis 6 rejects as a
syntax error. A server is checked twice: a binary before ``LocalRedisServer`` starts it
(``redis-server --version``) and a running server when a command connects (``HELLO``, which every
ACL user of ours may run, unlike ``INFO``).
"""

from __future__ import annotations

import re
from typing import Any

MIN_REDIS_VERSION = (7, 0)
WHY_MIN = "ACL key selectors"
"""What the oldest supported version brings that we need (the refusal says it)."""

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


class UnsupportedRedisError(RuntimeError):
    """A Redis server (binary or running) older than ``MIN_REDIS_VERSION``."""


def parse_version(text: str) -> tuple[int, int, int]:
    """``"7.0.15"`` (or ``redis-server --version``'s ``v=7.0.15``) as ``(7, 0, 15)``."""
    match = _VERSION.search(text)
    if match is None:
        raise ValueError(f"no Redis version in {text!r}")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def minimum_text() -> str:
    return ".".join(map(str, MIN_REDIS_VERSION))


def unsupported_reason(version: str) -> str | None:
    """Why ``version`` is refused (the tail of the one-line error), or None if it is supported."""
    if parse_version(version)[:2] >= MIN_REDIS_VERSION:
        return None
    return f"is older than {minimum_text()}, the oldest AURA Town supports ({WHY_MIN})"


def refusal(version: str, where: str) -> str | None:
    """The one line refusing a too-old ``version`` found at ``where`` (None: supported)."""
    reason = unsupported_reason(version)
    return None if reason is None else f"Redis {version} at {where} {reason}"


def check_version(version: str, where: str) -> None:
    """Raise ``UnsupportedRedisError`` with ``refusal``'s line for a too-old ``version``."""
    refused = refusal(version, where)
    if refused is not None:
        raise UnsupportedRedisError(refused)


def _field(reply: Any, name: str) -> str | None:
    """A field of HELLO's reply: a map under RESP3, a flat name/value list under RESP2."""
    if isinstance(reply, list):
        reply = dict(zip(reply[::2], reply[1::2], strict=False))
    if not isinstance(reply, dict):
        return None
    for key, value in reply.items():
        if (key.decode() if isinstance(key, bytes) else key) == name:
            return value.decode() if isinstance(value, bytes) else str(value)
    return None


def server_version(client: Any, where: str) -> str | None:
    """The version of the server a redis-py ``client`` reaches (``where``, for the error); None if
    it will not say (an ACL user allowed neither ``HELLO`` nor ``INFO``)."""
    import redis

    try:
        return _field(client.execute_command("HELLO"), "version")
    except redis.exceptions.NoPermissionError:
        pass
    except redis.exceptions.ResponseError as exc:
        if "unknown command" not in str(exc).lower():
            raise
        raise UnsupportedRedisError(  # HELLO arrived in 6.0
            f"Redis at {where} does not know HELLO (5.x or older): older than {minimum_text()}, "
            f"the oldest AURA Town supports ({WHY_MIN})"
        ) from None
    try:
        return str(client.info("server")["redis_version"])
    except redis.exceptions.NoPermissionError:
        return None


def check_server(client: Any, where: str) -> None:
    """Refuse, in one line, the running server ``client`` reaches if it is too old."""
    version = server_version(client, where)
    if version is not None:  # else: not ours to know; whoever restricted this user runs the server
        check_version(version, where)
