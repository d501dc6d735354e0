"""Reading what was published on a topic, for assertions."""

from __future__ import annotations

from typing import TypeVar

from actors.bus import Bus
from messages import Message

M = TypeVar("M", bound=Message)


def topic_messages(bus: Bus, topic: str, model: type[M]) -> list[M]:
    """Every payload of type ``model`` on ``topic``, oldest first (entries of other types skipped)."""
    out: list[M] = []
    for entry in bus.transport.range(bus.keys.topic(topic)):
        env = bus.decode_entry(entry)
        if env is not None and isinstance(env.payload, model):
            out.append(env.payload)
    return out
