"""``episodes``: the worker role that runs whole episode units (``RunUnit``), one per message.

A unit's message carries everything it needs (the episode and task files, assets, scorer
sources, the run's settings), so a worker on another machine needs no shared filesystem. The
unit's own actors (``registry.KEY``, ``user.KEY``, the built-in ``assistant.KEY``) are hosted in
this worker's process on the run's namespace while it runs, and its progress is published on the
run's ``episode.units`` topic. The unit's entry stays unacknowledged for as long as the unit runs
(the host renews its claim): a worker that dies leaves it to another one after the visibility
timeout, which resumes the unit from its persisted progress and the episode's state in Redis.

Running a unit is the benchmark's business (``bench.episodes.worker.UnitService``); this actor
only hands the message over, so the layers keep pointing down.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from actors.runtime import Actor, Context, on
from messages.episodes import UNIT_WORKER, RunUnit

log = structlog.get_logger("auratown.episodes_worker")

__all__ = ["UNIT_WORKER", "EpisodeUnitActor", "UnitRunnerFn"]

UnitRunnerFn = Callable[[RunUnit], None]
"""Runs one unit to its end (publishing its progress); raises to leave it for a retry."""


class EpisodeUnitActor(Actor):
    pooled = True
    """On the host's pool (daemon threads): a stopping worker never waits on a unit in progress;
    the unit's entry stays pending and another worker takes it over."""

    def __init__(self, run_unit: UnitRunnerFn) -> None:
        self.run_unit = run_unit

    @on(RunUnit)
    def run(self, ctx: Context, msg: RunUnit) -> None:
        log.info("unit received", unit=msg.unit, namespace=msg.namespace, attempt=ctx.envelope.attempt)
        self.run_unit(msg)
