"""The base class of every message model."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict


class Message(BaseModel):
    """A frozen, registered wire message.

    Unknown fields are ignored rather than refused: an additive change keeps its schema version,
    so an older reader must accept a newer writer's extra fields.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    message_type: ClassVar[str] = ""
    schema_version: ClassVar[int] = 0
