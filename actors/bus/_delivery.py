"""One entry read from a stream, decoded or not, on its way to a local actor."""

from __future__ import annotations

from dataclasses import dataclass

from messages import DecodeError, Envelope


@dataclass(frozen=True)
class Subscription:
    """A stream one local address reads, in a consumer group."""

    stream: str
    group: str
    address: str
    topic: str | None = None
    """Set when ``stream`` is a topic; retries of its messages then go to ``address``'s inbox."""
    control: bool = False
    """A process's own wake-up stream: its entries are not messages and not counted as traffic."""


@dataclass(frozen=True)
class Delivery:
    subscription: Subscription
    entry_id: str
    data: bytes
    deliveries: int
    envelope: Envelope | None
    error: DecodeError | None

    @property
    def stream(self) -> str:
        return self.subscription.stream

    @property
    def group(self) -> str:
        return self.subscription.group

    @property
    def address(self) -> str:
        return self.subscription.address

    @property
    def attempt(self) -> int:
        """Handler attempts so far, this one included: requeues plus redeliveries of this entry."""
        base = self.envelope.attempt if self.envelope is not None else 1
        return base + self.deliveries - 1

    @property
    def key(self) -> tuple[str, str]:
        return (self.subscription.stream, self.entry_id)

    def describe(self) -> str:
        if self.envelope is not None:
            return f"{self.envelope.type} {self.envelope.id}"
        return f"undecodable entry {self.entry_id}"
