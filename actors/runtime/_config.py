"""How a host reads, holds, retries, restarts and announces: ``HostConfig``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class HostConfig(BaseModel):
    """A host's settings (seconds unless a name says otherwise); every one has a working default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fetch_count: int = Field(
        default=64, ge=1, description="Entries a reader fetches per stream and round trip."
    )
    block_ms: int = Field(
        default=250, ge=0, description="How long a fetch waits for new entries, in milliseconds."
    )
    max_in_flight: int = Field(
        default=256,
        ge=1,
        description="Entries this process holds at once; more would starve other processes of the "
        "same address.",
    )
    visibility_timeout: float = Field(
        default=30.0,
        gt=0,
        description="How long an entry may stay unrenewed before another process reclaims it.",
    )
    heartbeat_every: float = Field(default=2.0, gt=0, description="Between presence announcements.")
    drain_timeout: float = Field(
        default=10.0, ge=0, description="How long ``Host.stop`` waits for running handlers."
    )
    retry_backoff: float = Field(
        default=0.05, ge=0, description="Wait before a failed handler's second attempt."
    )
    retry_backoff_max: float = Field(
        default=5.0, ge=0, description="The backoff doubles per attempt up to this."
    )
    restart_limit: int = Field(
        default=5, ge=0, description="Restarts of a dying actor within the window, then it is given up."
    )
    restart_window: float = Field(
        default=60.0, ge=0, description="The window ``restart_limit`` counts restarts in."
    )
    trim_every: float = Field(
        default=30.0, ge=0, description="Between trims of read entries and old dead letters."
    )
    pool_size: int = Field(
        default=4,
        ge=1,
        description="Worker threads shared by the pooled actors (``Actor.pooled``). Handlers that wait on "
        "the network (model calls) want more; CPU-bound ones gain nothing beyond a few, with the GIL.",
    )

    @property
    def renew_every(self) -> float:
        return self.visibility_timeout / 3

    @property
    def reclaim_every(self) -> float:
        return max(0.05, self.visibility_timeout / 2)
