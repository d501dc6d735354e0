"""The envelope every message travels in."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from messages._base import Message

ENVELOPE_FORMAT = 1
"""Version of the envelope layout itself (not of any payload)."""

MAX_ID_LEN = 256
"""Longest id, address, namespace, correlation or causation id an envelope may carry."""
MAX_UNIX_TIME = 253_402_300_799.0
"""The last second of year 9999: the bound of ``wall_time`` and ``deadline`` (unix seconds)."""
MAX_SIM_TIME = 1e12
"""Bound of ``|sim_time|`` (simulated minutes): far beyond any run, far below float overflow."""
MAX_ATTEMPT = 1_000
"""Highest attempt count an envelope may claim (the bus gives up after a handful of attempts)."""
MAX_TRACE_ITEMS = 32
MAX_TRACE_VALUE_LEN = 1_024

_Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_LEN)]
_Name = Annotated[str, StringConstraints(max_length=MAX_ID_LEN)]
_TraceValue = Annotated[str, StringConstraints(max_length=MAX_TRACE_VALUE_LEN)]
_UnixTime = Annotated[float, Field(ge=0.0, le=MAX_UNIX_TIME, allow_inf_nan=False)]
_SimTime = Annotated[float, Field(ge=-MAX_SIM_TIME, le=MAX_SIM_TIME, allow_inf_nan=False)]


class Envelope(BaseModel):
    """Routing, causality and timing around one message.

    Ids and times are given by the caller: this layer reads no clock and draws no randomness.
    ``recipient`` is an actor address (``world``, ``agent.lin-wei``) or a topic name; ``reply_to``
    is the address an answer should go to; ``correlation_id`` pairs a reply with its request and
    ``causation_id`` names the message whose handling produced this one.

    Every field is bounded (docs/protocol.md, section 3): times are finite and within their range,
    the attempt count is at most ``MAX_ATTEMPT``, strings and the trace map have a maximum size.
    Decoding validates the wire form strictly (exact types: ``1.0`` or ``true`` is not an int).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: _Id
    sender: _Name
    recipient: _Id
    namespace: _Id
    wall_time: _UnixTime
    payload: Message
    correlation_id: _Name | None = None
    reply_to: _Name | None = None
    causation_id: _Name | None = None
    sim_time: _SimTime | None = None
    attempt: int = Field(default=1, ge=1, le=MAX_ATTEMPT)
    deadline: _UnixTime | None = None
    trace: dict[_TraceValue, _TraceValue] = Field(default_factory=dict, max_length=MAX_TRACE_ITEMS)

    @property
    def type(self) -> str:
        """The registered name of the payload's model."""
        return self.payload.message_type

    @property
    def version(self) -> int:
        """The schema version of the payload's model."""
        return self.payload.schema_version
