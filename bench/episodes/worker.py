"""Episode units on worker processes: the message that carries a unit, and its running in a worker.

The coordinator (``auratown bench episodes --workers N`` or ``--remote-workers``) turns each unit
into a ``RunUnit`` carrying the episode and task files, assets and scorer sources, so a worker
needs no shared filesystem. ``UnitService`` (the ``episodes`` role of ``auratown worker``) runs
it with the same building blocks as a local run (``EpisodeHost``, ``UnitRunner``) on the run's
namespace; its record is a ``PublishedUnitRecord``: every line that a local run appends to
``units/KEY.jsonl`` (and the session's trace lines) is published on the run's ``episode.units``
topic, and the unit's progress is kept in Redis so that another worker resumes it.

Delivery: a line is published before the progress that includes it is stored, so a worker that
dies in between publishes it again on resume; the coordinator keeps the first ``finished`` line
of a task. A unit whose owner (the coordinator invocation that sent it) was replaced is dropped:
a rerun of the coordinator supersedes what an earlier one left queued.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog

from actors.bus import Bus, Transport
from actors.runtime import HostConfig
from bench.episodes.loader import LoadedEpisode, LoadedTask
from bench.episodes.plan import Unit, parse_assistants
from bench.episodes.runner import EpisodeHost, EpisodeRunError, RunSettings, UnitRunner, gateway_pool
from bench.episodes.store import UnitProgress, UnitRecord, UnitStep
from bench.rundir import UnitLine
from messages.episodes import (
    EPISODE_UNITS,
    RunUnit,
    UnitEvent,
    UnitEventKind,
    UnitSettings,
    UnitTask,
)
from world.episodes.apps.seed import WorldSeed
from world.episodes.tasks import EpisodeFile, TaskFile

log = structlog.get_logger("auratown.episodes")


class UnitSuperseded(Exception):
    """A newer coordinator invocation owns the unit: this delivery stops without a word."""


def owner_key(bus: Bus, unit: str) -> str:
    return bus.keys.kv(f"unit-owner.{unit}")


def progress_key(bus: Bus, unit: str) -> str:
    return bus.keys.kv(f"unit-progress.{unit}")


# ---------------------------------------------------------------- the message of a unit


def unit_message(
    unit: Unit, *, namespace: str, owner: str, settings: UnitSettings, progress: Sequence[UnitStep]
) -> RunUnit:
    """Everything a worker needs to run ``unit`` (for a coordinator)."""
    ep = unit.episode
    return RunUnit(
        namespace=namespace,
        owner=owner,
        unit=unit.key,
        episode=ep.episode.model_dump(mode="json"),
        directory=str(ep.directory),
        tasks=tuple(
            UnitTask(
                task=t.task.model_dump(mode="json"),
                assets=dict(t.assets),
                binaries=dict(t.binaries),
                rule_scorer=t.rule_scorer,
                rule_scorer_path=str(t.rule_scorer_path) if t.rule_scorer_path else None,
                depends_on=tuple(t.depends_on),
            )
            for t in ep.tasks
        ),
        offered=ep.offered,
        seed=ep.seed.model_dump(mode="json") if ep.seed is not None else None,
        assistant=unit.assistant.name,
        run=unit.run,
        only=unit.only,
        settings=settings,
        progress=tuple(step.as_json() for step in progress),
    )


def unit_from_message(msg: RunUnit) -> Unit:
    """The unit a message describes, rebuilt without touching the filesystem."""
    directory = Path(msg.directory)
    tasks = []
    for t in msg.tasks:
        task = TaskFile.model_validate(t.task)
        tasks.append(
            LoadedTask(
                task=task,
                directory=directory / "tasks" / task.task_id,
                assets=dict(t.assets),
                rule_scorer=t.rule_scorer,
                rule_scorer_path=Path(t.rule_scorer_path) if t.rule_scorer_path else None,
                depends_on=tuple(t.depends_on),
                binaries=dict(t.binaries),
            )
        )
    seed = WorldSeed.model_validate(msg.seed) if msg.seed is not None else None
    episode = LoadedEpisode(
        EpisodeFile.model_validate(msg.episode), directory, tuple(tasks), offered=msg.offered, seed=seed
    )
    [choice] = parse_assistants(msg.assistant)
    unit = Unit(episode, episode.episode.episode_id, choice, msg.run, only=msg.only)
    if unit.key != msg.unit:
        raise ValueError(f"the unit rebuilt from the message is {unit.key!r}, not {msg.unit!r}")
    return unit


# ---------------------------------------------------------------- the record of a unit on a worker


class PublishedUnitRecord(UnitRecord):
    """A unit's record kept in Redis (its steps) and published line by line on the run's topic;
    the coordinator writes the files."""

    def __init__(self, bus: Bus, msg: RunUnit) -> None:
        self.bus = bus
        self.msg = msg
        self.unit = msg.unit
        self._lock = threading.Lock()
        self._progress_key = progress_key(bus, msg.unit)
        stored = bus.transport.get(self._progress_key)
        saved = json.loads(stored) if stored is not None else list(msg.progress)
        self.steps: list[UnitStep] = [UnitStep.from_json(s) for s in saved]

    def progress(self) -> UnitProgress:
        with self._lock:
            return UnitProgress(self.steps)

    def check_owner(self) -> None:
        owner = self.bus.transport.get(owner_key(self.bus, self.unit))
        if owner is not None and owner.decode() != self.msg.owner:
            raise UnitSuperseded(self.unit)

    def write(self, line: UnitLine, trace: Sequence[Mapping[str, Any]] = ()) -> None:
        with self._lock:
            self.bus.publish(
                EPISODE_UNITS,
                UnitEvent(
                    unit=self.unit,
                    owner=self.msg.owner,
                    event=line.event,
                    seq=len(self.steps),
                    line=line.line(),
                    trace=tuple(dict(t) for t in trace),
                    worker=self.bus.process_id,
                ),
            )
            self.steps.append(UnitStep.of(line))
            self.bus.transport.set(self._progress_key, json.dumps([s.as_json() for s in self.steps]).encode())

    def mark_started(self, task_id: str) -> None:
        self.check_owner()  # between sessions: a superseded unit stops here
        super().mark_started(task_id)

    def end(self, kind: UnitEventKind, error: str = "") -> None:
        """The unit's last word: ``done`` or ``failed``."""
        self.bus.publish(
            EPISODE_UNITS,
            UnitEvent(
                unit=self.unit, owner=self.msg.owner, event=kind, error=error, worker=self.bus.process_id
            ),
        )


# ---------------------------------------------------------------- the worker's side


def settings_of(msg: UnitSettings, appworld_home: str | None = None) -> RunSettings:
    return RunSettings(**msg.model_dump(), appworld_home=appworld_home)


class UnitService:
    """Runs ``RunUnit`` messages in this process (the ``episodes`` role of ``auratown worker``).

    One ``EpisodeHost`` per (run namespace, settings), made on first use and kept for the
    process's life, hosts the units' actors; units of one run may run at once (``--pool-size``).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        cache_dir: Path | None = None,
        config: HostConfig | None = None,
        appworld_home: str | None = None,
    ) -> None:
        """``appworld_home``: where this worker's AppWorld is installed, for units that ask for
        AppWorld's apps (None: the default place)."""
        self.transport = transport
        self.appworld_home = appworld_home
        self.cache_dir = cache_dir
        self.config = config
        self._hosts: dict[tuple[str, RunSettings], EpisodeHost] = {}
        self._lock = threading.Lock()
        self.stopping = threading.Event()

    def _host(self, namespace: str, settings: RunSettings) -> EpisodeHost:
        with self._lock:
            eh = self._hosts.get((namespace, settings))
            if eh is None:
                gateways = gateway_pool(settings, cache_dir=self.cache_dir)
                bus = Bus(self.transport, namespace)
                eh = EpisodeHost(bus, settings, gateways=gateways, config=self.config)
                self._hosts[(namespace, settings)] = eh
            return eh

    def run(self, msg: RunUnit) -> None:
        """Run the unit to its end and publish ``done``, or ``failed`` with the reason. While the
        worker stops, an error is raised instead: the unit is left to another worker."""
        try:
            eh = self._host(msg.namespace, settings_of(msg.settings, self.appworld_home))
        except EpisodeRunError as exc:  # e.g. AppWorld asked for and not installed on this worker
            log.error("unit cannot run on this worker", unit=msg.unit, error=str(exc))
            PublishedUnitRecord(Bus(self.transport, msg.namespace), msg).end("failed", str(exc))
            return
        record = PublishedUnitRecord(eh.bus, msg)
        try:
            record.check_owner()
            unit = unit_from_message(msg)
            UnitRunner(eh, unit, record).run()
        except UnitSuperseded:
            log.info("unit superseded by a newer run; dropped", unit=msg.unit)
            return
        except Exception as exc:
            if self.stopping.is_set():
                raise
            log.error("unit failed", unit=msg.unit, error=repr(exc))
            record.end("failed", f"{type(exc).__name__}: {exc}")
            return
        record.end("done")
        log.info("unit done", unit=msg.unit)

    def stop(self) -> None:
        self.stopping.set()
        with self._lock:
            hosts = list(self._hosts.values())
        for eh in hosts:
            eh.stop()
            eh.bus.close()
