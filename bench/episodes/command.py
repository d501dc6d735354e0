"""``auratown bench episodes``: run episodes of pi-Bench-format tasks into a run directory.

Units (episode x assistant x repetition, plus the without-history ablation) run in this process
on the in-process bus by default. ``--bus URL`` runs them over that Redis. ``--workers N`` starts
N ``auratown worker --roles episodes`` processes (over ``--bus``, or a private redis-server this
command starts) and ``--remote-workers [NS]`` uses workers already serving namespace NS on
``--bus``: each unit goes to them as one ``RunUnit`` message (tasks, assets and scorers inline),
runs in whichever worker takes it, and its sessions come back on the run's ``episode.units``
topic, which this process (the coordinator) appends to the run directory. A unit whose worker
dies is taken over by another after the visibility timeout and resumes where it was. A rerun on
the same ``--out`` resumes: finished sessions are kept.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.episodes.loader import LoadedEpisode, TaskFormatError, find_episodes, lint_episode, load_episode
from bench.episodes.plan import PlanError, Unit, parse_assistants, plan_units
from bench.episodes.report import write_summary
from bench.episodes.store import EpisodeRunDir, UnitProgress
from bench.progress import Progress
from bench.rundir import (
    DataRef,
    EpisodeConfig,
    EpisodeManifest,
    RunDirError,
    SessionFinishedLine,
    UnitInfo,
    UnitResetLine,
    git_commit,
    read_unit_line,
)

if TYPE_CHECKING:
    from actors.bus import Transport
    from messages.episodes import UnitEvent, UnitSettings

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = Path(__file__).resolve().parent / "data"


class EpisodeUsageError(ValueError):
    """A bad request, explained in one line."""


def load_all(path: Path) -> list[LoadedEpisode]:
    if not path.exists():
        raise EpisodeUsageError(f"--tasks {path}: no such directory")
    dirs = find_episodes(path)
    if not dirs:
        raise EpisodeUsageError(f"--tasks {path}: no episode.yaml here or in its subdirectories")
    try:
        return [load_episode(d) for d in dirs]
    except TaskFormatError as exc:
        raise EpisodeUsageError(f"{exc} (--lint lists every problem)") from None


def lint(path: Path) -> tuple[int, str]:
    """Every problem of every episode under ``path``; exit status 1 if any is an error."""
    from world.episodes.apps import EpisodeTools

    known = EpisodeTools().names()
    dirs = find_episodes(path) if path.exists() else []
    if not dirs:
        return 2, f"{path}: no episode.yaml here or in its subdirectories"
    lines = []
    errors = 0
    for d in dirs:
        for issue in lint_episode(d, known):
            lines.append(f"{issue.severity}: {issue.file}: {issue.field}: {issue.message}")
            errors += issue.severity == "error"
    lines.append(f"{len(dirs)} episode(s), {errors} error(s), {len(lines) - errors} warning(s)")
    return (1 if errors else 0), "\n".join(lines)


COMPUTING_SETTINGS = frozenset({"model", "judge_model", "max_turns", "max_tokens", "apps", "shared_world"})
"""The unit settings that change what a run computes (its endpoint and timeouts do not)."""


def _config(args: argparse.Namespace, episodes: list[LoadedEpisode]) -> EpisodeConfig:
    return EpisodeConfig(
        tasks=tuple(DataRef.of(e.directory) for e in episodes),
        episodes=tuple(e.episode.episode_id for e in episodes),
        assistants=args.assistants,
        runs=args.runs,
        ablation=not args.no_ablation,
        **unit_settings(args).model_dump(include=set(COMPUTING_SETTINGS)),
    )


def run_episodes(args: argparse.Namespace) -> tuple[Path, str]:
    episodes = load_all(Path(args.tasks) if args.tasks else BUNDLED)
    try:
        assistants = parse_assistants(args.assistants)
        units = plan_units(episodes, assistants, args.runs, ablation=not args.no_ablation)
    except PlanError as exc:
        raise EpisodeUsageError(str(exc)) from None
    if any(a.external for a in assistants) and args.bus is None:
        raise EpisodeUsageError("an external assistant attaches over Redis: give --bus URL")
    out = Path(args.out) if args.out else ROOT / "runs" / f"episodes-{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir = EpisodeRunDir(out)
    manifest = EpisodeManifest(
        config=_config(args, episodes),
        namespace=args.namespace or f"episodes.{out.name}",
        git_commit=git_commit(ROOT),
        python=platform.python_version(),
        started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        units=tuple(u.key for u in units),
        unit_sessions={u.key: len(u.task_ids) for u in units},
        unit_info={
            u.key: UnitInfo(episode=u.episode_id, assistant=u.assistant.name, run=u.run, only=u.only)
            for u in units
        },
    )
    try:
        run_dir.create(manifest)
    except RunDirError as exc:
        raise EpisodeUsageError(str(exc)) from None
    namespace = run_dir.manifest(EpisodeManifest).namespace
    started = time.monotonic()
    remote = getattr(args, "remote_workers", None)
    if remote is not None and args.bus is None:
        raise EpisodeUsageError("--remote-workers sends the units over Redis: give --bus URL")
    if remote is not None or args.workers > 1:
        run_on_workers(args, run_dir, namespace, units, remote=remote)
    else:
        run_units_here(args, run_dir, namespace, units, bus_url=args.bus)
    seconds = round(time.monotonic() - started, 2)
    run_dir.write_manifest(
        run_dir.manifest(EpisodeManifest).model_copy(update={"seconds_last_invocation": seconds})
    )
    return out, write_summary(out)


def unit_settings(args: argparse.Namespace) -> UnitSettings:
    """What every unit of the run runs with (as a worker is sent it): the options of those names."""
    from messages.episodes import UnitSettings

    given = vars(args)
    return UnitSettings.model_validate({k: given[k] for k in UnitSettings.model_fields if k in given})


def settings_from(args: argparse.Namespace) -> Any:
    from bench.episodes.worker import settings_of

    return settings_of(unit_settings(args), getattr(args, "appworld_home", None))


def _progress(args: argparse.Namespace, units: list[Unit]) -> Progress:
    """A line per unit off a terminal (units are long), and what happens inside one as a sign of life."""
    return Progress(len(units), desc="episodes", unit="unit", quiet=args.quiet, lines=len(units))


def run_units_here(
    args: argparse.Namespace,
    run_dir: EpisodeRunDir,
    namespace: str,
    units: list[Unit],
    *,
    bus_url: str | None,
) -> None:
    from actors.bus import Bus, MemoryTransport
    from actors.bus._redis import RedisTransport
    from bench.episodes.runner import EpisodeHost, EpisodeRunError, UnitRunner, gateway_pool

    transport: Transport = RedisTransport(bus_url) if bus_url else MemoryTransport()
    bus = Bus(transport, namespace)
    settings = settings_from(args)
    gateways = gateway_pool(settings, cache_dir=args.cache_dir)
    try:
        host = EpisodeHost(bus, settings, gateways=gateways)
    except EpisodeRunError as exc:  # e.g. --apps appworld without AppWorld installed
        bus.close()
        transport.close()
        raise EpisodeUsageError(str(exc)) from None
    try:
        with _progress(args, units) as progress:
            # A unit an earlier invocation finished is kept (run again here, with the in-process
            # bus's state gone, it would start over).
            todo = [u for u in units if not set(u.task_ids) <= run_dir.unit(u.key).finished_tasks()]
            progress.start(done=len(units) - len(todo))
            for unit in todo:
                progress.note(f"{unit.key}: started")
                UnitRunner(host, unit, run_dir.unit(unit.key), on_session=progress.note).run()
                progress.advance()
    finally:
        host.stop()
        bus.close()
        transport.close()


# ---------------------------------------------------------------- units on worker processes

WORKER_READY_TIMEOUT = 60.0
"""Seconds a run waits for a worker to be present (remote) before it gives up."""


class Coordinator:
    """Sends a run's units to the workers and writes what they publish into the run directory.

    It reads the run's ``episode.units`` topic with a group of its own (``coordinator``) that
    outlives it: a coordinator started again on the same run directory (same namespace) gets
    what the workers published while none was running.
    """

    ADDRESS = "coordinator"

    def __init__(
        self, transport: Transport, namespace: str, run_dir: EpisodeRunDir, *, progress: Progress
    ) -> None:
        from actors.bus import Bus

        self.transport = transport
        self.bus = Bus(transport, namespace)
        self.run_dir = run_dir
        self.progress = progress
        """Started with the units sent; a unit done or failed advances it."""
        self.owner = uuid.uuid4().hex
        self.expected: set[str] = set()
        self.ended: dict[str, str] = {}
        """Unit key -> "" when done, else its error."""
        self._finished: dict[str, set[str]] = {}
        self._cv = threading.Condition()
        self.host: Any = None

    def start(self) -> None:
        from actors.runtime import Actor, Context, Host, on
        from messages.episodes import EPISODE_UNITS, UnitEvent

        coordinator = self

        class Collector(Actor):
            @on(UnitEvent)
            def event(self, ctx: Context, msg: UnitEvent) -> None:
                coordinator.record(msg)

        self.host = Host(self.bus, name="episodes-coordinator")
        self.host.spawn(Collector, self.ADDRESS, topics=(EPISODE_UNITS,))
        self.host.start()

    def record(self, msg: UnitEvent) -> None:
        """Append a published line to the unit's files (a ``finished`` line already there, from a
        worker that died before storing its progress, is not written twice)."""
        record = self.run_dir.unit(msg.unit)
        with self._cv:
            if msg.event in ("done", "failed"):
                if msg.owner == self.owner and msg.unit not in self.ended:
                    self.ended[msg.unit] = msg.error if msg.event == "failed" else ""
                    if msg.event == "failed":
                        self.progress.say(f"{msg.unit} FAILED: {msg.error} (worker {msg.worker})")
                    else:
                        self.progress.note(f"{msg.unit} done (worker {msg.worker})")
                    self.progress.advance(ok=msg.event == "done")
                    self._cv.notify_all()
                return
            if msg.event == "finished":  # a sign of life from inside a unit
                self.progress.note(f"{msg.unit}: session {msg.line.get('task_id')} finished")
            done = self._finished.get(msg.unit)
            if done is None:
                done = self._finished[msg.unit] = record.finished_tasks()
            line = read_unit_line(msg.line)
            if isinstance(line, UnitResetLine):
                done.clear()
            elif isinstance(line, SessionFinishedLine):
                if line.task_id in done:
                    return
                done.add(line.task_id)
            record.write(line, msg.trace)

    def send(self, units: list[Unit], worker_namespace: str, settings: Any) -> int:
        """A ``RunUnit`` for every unit not finished yet; returns how many were sent."""
        from actors.bus import Bus
        from bench.episodes.worker import owner_key, unit_message
        from messages.episodes import UNIT_WORKER

        todo = []
        for unit in units:
            steps = self.run_dir.unit(unit.key).steps()
            if not set(unit.task_ids) <= UnitProgress(steps).finished_tasks():
                todo.append((unit, steps))
        with self._cv:
            self.expected = {u.key for u, _ in todo}
            self.progress.start(done=len(units) - len(todo))
        workers = Bus(self.transport, worker_namespace)
        try:
            for unit, steps in todo:
                # The owner first: a unit an earlier invocation left queued is dropped by its worker.
                self.transport.set(owner_key(self.bus, unit.key), self.owner.encode())
                msg = unit_message(
                    unit, namespace=self.bus.namespace, owner=self.owner, settings=settings, progress=steps
                )
                workers.tell(UNIT_WORKER, msg, sender=self.ADDRESS)
        finally:
            workers.close()
        return len(todo)

    def wait(self, alive: Any) -> None:
        """Until every unit sent is done or failed; ``alive()`` raises when no worker is left."""
        while True:
            with self._cv:
                if set(self.ended) >= self.expected:
                    return
                self._cv.wait(1.0)
                if set(self.ended) >= self.expected:
                    return
            alive()

    def stop(self) -> None:
        if self.host is not None:
            self.host.stop()
        self.bus.close()


def _workers_present(transport: Transport, namespace: str) -> int:
    from actors.bus import Bus
    from messages.episodes import UNIT_WORKER

    bus = Bus(transport, namespace)
    try:
        return sum(1 for p in bus.processes() if p.alive and UNIT_WORKER in p.info.get("addresses", ()))
    finally:
        bus.close()


def _start_local_workers(args: argparse.Namespace, url: str, namespace: str) -> list[subprocess.Popen[bytes]]:
    cmd = [
        sys.executable, "-m", "deploy.cli", "--log-level", "warning", "worker", "--redis", url,
        "--namespace", namespace, "--roles", "episodes",
    ]  # fmt: skip
    if args.cache_dir:
        cmd += ["--cache-dir", str(args.cache_dir)]
    return [
        subprocess.Popen(cmd, cwd=ROOT, env={**os.environ}, stdout=subprocess.DEVNULL)
        for _ in range(args.workers)
    ]


def _stop_local_workers(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


def run_on_workers(
    args: argparse.Namespace,
    run_dir: EpisodeRunDir,
    namespace: str,
    units: list[Unit],
    *,
    remote: str | None,
) -> None:
    """Run the units on ``--workers N`` local worker processes, or on the remote workers serving
    namespace ``remote``; their sessions are written into ``run_dir`` as they finish."""
    from actors.bus._redis import RedisTransport

    server = None
    url = args.bus
    if url is None:
        from actors.bus.local_server import LocalRedisServer

        server = LocalRedisServer()
        server.start()
        url = server.url
    transport = RedisTransport(url)
    worker_ns = remote or namespace
    procs: list[subprocess.Popen[bytes]] = []
    progress = _progress(args, units)
    coordinator = Coordinator(transport, namespace, run_dir, progress=progress)
    settings = unit_settings(args)
    absent_since = [time.monotonic()]

    def alive() -> None:
        if procs:
            if all(p.poll() is not None for p in procs):
                codes = sorted({p.returncode for p in procs})
                raise EpisodeUsageError(f"every worker exited (codes {codes}); rerun to resume")
            return
        if _workers_present(transport, worker_ns):
            absent_since[0] = time.monotonic()
        elif time.monotonic() - absent_since[0] > WORKER_READY_TIMEOUT:
            raise EpisodeUsageError(
                f"no `auratown worker --roles episodes` present on namespace {worker_ns!r} at {url} "
                f"for {WORKER_READY_TIMEOUT:g}s; rerun to resume"
            )

    try:
        coordinator.start()  # subscribed before the first unit goes out
        if remote is None:
            procs = _start_local_workers(args, url, worker_ns)
        elif not _workers_present(transport, worker_ns):
            raise EpisodeUsageError(
                f"no `auratown worker --roles episodes` is serving namespace {worker_ns!r} at {url}"
            )
        sent = coordinator.send(units, worker_ns, settings)
        where = f"{args.workers} local worker(s)" if procs else f"the workers of namespace {worker_ns}"
        progress.say(f"{sent} unit(s) sent to {where}")
        coordinator.wait(alive)
    finally:
        coordinator.stop()
        progress.close()
        _stop_local_workers(procs)
        transport.close()
        if server is not None:
            server.stop()
    failed = {k: e for k, e in coordinator.ended.items() if e}
    if failed:
        key, error = next(iter(sorted(failed.items())))
        raise EpisodeUsageError(f"{len(failed)} unit(s) failed ({key}: {error}); rerun to resume")
