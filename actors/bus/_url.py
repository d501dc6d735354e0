"""Choose a transport from a URL."""

from __future__ import annotations

from actors.bus._memory import MemoryTransport
from actors.bus._transport import Transport

_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


class TransportURLError(ValueError):
    """A bus URL with a scheme no transport serves."""


def open_transport(url: str | None) -> Transport:
    """``memory://`` (or nothing) for the in-process bus; redis://, rediss://, unix:// for Redis."""
    if not url or url == "memory://":
        return MemoryTransport()
    if url.startswith(_REDIS_SCHEMES):
        from actors.bus._redis import RedisTransport

        return RedisTransport(url)
    raise TransportURLError(f"unsupported bus URL {url!r}: use memory://, redis://, rediss:// or unix://")
