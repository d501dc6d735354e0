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
from bench.episodes.runner import EpisodeHost, EpisodeRunError, RunSettings, UnitRunner
from bench.episodes.store import UnitRecord, finished_line, trace_lines
from messages.episodes import (
    EPISODE_UNITS,
    RunUnit,
    SessionEnded,
    SessionGrade,
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
    unit: Unit, *, namespace: str, owner: str, settings: UnitSettings, progress: Sequence[Mapping[str, Any]]
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
        progress=tuple(compact(line) for line in progress),
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


def compact(line: Mapping[str, Any]) -> dict[str, Any]:
    """What resuming needs of a record line: its event, task and clock."""
    out: dict[str, Any] = {"event": str(line.get("event", ""))}
    if "task_id" in line:
        out["task_id"] = str(line["task_id"])
    if "clock" in line:
        out["clock"] = float(line["clock"])
    return out


# ---------------------------------------------------------------- the record of a unit on a worker


class PublishedUnitRecord(UnitRecord):
    """A unit's record kept in Redis and published line by line on the run's topic."""

    def __init__(self, bus: Bus, msg: RunUnit) -> None:
        # No files: the coordinator writes them. The base class's paths are never opened.
        self.bus = bus
        self.msg = msg
        self.unit = msg.unit
        self.path = Path(f"<{msg.unit}>")
        self.trace_path = self.path
        self._lock = threading.Lock()
        self._progress_key = progress_key(bus, msg.unit)
        stored = bus.transport.get(self._progress_key)
        self.lines: list[dict[str, Any]] = (
            json.loads(stored) if stored is not None else [compact(p) for p in msg.progress]
        )

    # What UnitRunner reads (the same answers UnitRecord gives from its file).

    def _current(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for line in self.lines:
            events = [] if line.get("event") == "reset" else [*events, line]
        return events

    def finished_tasks(self) -> set[str]:
        return {str(e["task_id"]) for e in self._current() if e.get("event") == "finished"}

    def started(self, task_id: str) -> bool:
        return any(e.get("event") == "started" and e.get("task_id") == task_id for e in self._current())

    def last_task(self) -> str | None:
        finished = [e for e in self._current() if e.get("event") == "finished"]
        return str(finished[-1]["task_id"]) if finished else None

    def last_clock(self) -> float:
        finished = [e for e in self._current() if e.get("event") == "finished"]
        return float(finished[-1].get("clock", 0.0)) if finished else 0.0

    # What UnitRunner writes.

    def check_owner(self) -> None:
        owner = self.bus.transport.get(owner_key(self.bus, self.unit))
        if owner is not None and owner.decode() != self.msg.owner:
            raise UnitSuperseded(self.unit)

    def _add(self, kind: UnitEventKind, line: dict[str, Any], trace: Sequence[dict[str, Any]] = ()) -> None:
        with self._lock:
            self.bus.publish(
                EPISODE_UNITS,
                UnitEvent(
                    unit=self.unit,
                    owner=self.msg.owner,
                    event=kind,
                    seq=len(self.lines),
                    line=line,
                    trace=tuple(trace),
                    worker=self.bus.process_id,
                ),
            )
            self.lines.append(compact(line))
            self.bus.transport.set(self._progress_key, json.dumps(self.lines).encode())

    def mark_started(self, task_id: str) -> None:
        self.check_owner()  # between sessions: a superseded unit stops here
        self._add("started", {"event": "started", "task_id": task_id})

    def reset(self) -> None:
        self._add("reset", {"event": "reset"})

    def finish(
        self,
        task: LoadedTask,
        ended: SessionEnded,
        grade: SessionGrade,
        clock: float,
        *,
        reflection: Mapping[str, Any] | None = None,
        reruns: int = 0,
    ) -> None:
        line = finished_line(task, ended, grade, clock, reflection=reflection, reruns=reruns)
        self._add("finished", line, trace_lines(ended, grade))

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
    return RunSettings(
        model=msg.model,
        judge_model=msg.judge_model,
        api_base=msg.api_base,
        session_timeout=msg.session_timeout,
        ask_timeout=msg.ask_timeout,
        max_turns=msg.max_turns,
        max_tokens=msg.max_tokens,
        apps=msg.apps,
        shared_world=msg.shared_world,
        appworld_home=appworld_home,
    )


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
        from actors.episodes import GatewayPool

        with self._lock:
            eh = self._hosts.get((namespace, settings))
            if eh is None:
                gateways = GatewayPool(
                    api_base=settings.api_base, cache_dir=self.cache_dir, max_tokens=settings.max_tokens
                )
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
