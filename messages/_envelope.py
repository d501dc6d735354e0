"""The envelope every message travels in."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from messages._base import Message

ENVELOPE_FORMAT = 1
"""Version of the envelope layout itself (not of any payload)."""


class Envelope(BaseModel):
    """Routing, causality and timing around one message.

    Ids and times are given by the caller: this layer reads no clock and draws no randomness.
    ``recipient`` is an actor address (``world``, ``agent.lin-wei``) or a topic name; ``reply_to``
    is the address an answer should go to; ``correlation_id`` pairs a reply with its request and
    ``causation_id`` names the message whose handling produced this one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    sender: str
    recipient: str = Field(min_length=1)
    namespace: str = Field(min_length=1)
    wall_time: float
    payload: Message
    correlation_id: str | None = None
    reply_to: str | None = None
    causation_id: str | None = None
    sim_time: float | None = None
    attempt: int = Field(default=1, ge=1)
    deadline: float | None = None
    trace: dict[str, str] = Field(default_factory=dict)

    @property
    def type(self) -> str:
        """The registered name of the payload's model."""
        return self.payload.message_type

    @property
    def version(self) -> int:
        """The schema version of the payload's model."""
        return self.payload.schema_version
