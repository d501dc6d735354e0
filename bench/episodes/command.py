"""``auratown bench episodes``: run episodes of pi-Bench-format tasks into a run directory.

Units (episode x assistant x repetition, plus the without-history ablation) run in this process
on the in-process bus by default. ``--bus URL`` runs them over that Redis; ``--workers N`` spreads
them over N worker processes (over ``--bus``, or a private redis-server this command starts). A
rerun on the same ``--out`` resumes: finished sessions are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.episodes.loader import LoadedEpisode, TaskFormatError, find_episodes, lint_episode, load_episode
from bench.episodes.plan import PlanError, Unit, parse_assistants, plan_units
from bench.episodes.report import write_summary
from bench.episodes.store import EpisodeRunDir, RunDirError

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


def _config(args: argparse.Namespace, episodes: list[LoadedEpisode]) -> dict[str, Any]:
    return {
        "tasks": [str(e.directory) for e in episodes],
        "episodes": [e.episode.episode_id for e in episodes],
        "assistants": args.assistants,
        "runs": args.runs,
        "ablation": not args.no_ablation,
        "model": args.model,
        "judge_model": args.judge_model,
        "max_turns": args.max_turns,
    }


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
    config = _config(args, episodes)
    from bench.suite.runs import git_commit

    manifest = {
        "benchmark": "pi-bench episodes",
        "config": config,
        "namespace": args.namespace or f"episodes.{out.name}",
        "git_commit": git_commit(ROOT),
        "python": platform.python_version(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "units": [u.key for u in units],
        "unit_sessions": {u.key: len(u.task_ids) for u in units},
        "unit_info": {
            u.key: {"episode": u.episode_id, "assistant": u.assistant.name, "run": u.run, "only": u.only}
            for u in units
        },
    }
    try:
        run_dir.create(manifest)
    except RunDirError as exc:
        raise EpisodeUsageError(str(exc)) from None
    namespace = str(run_dir.manifest()["namespace"])
    started = time.monotonic()
    if args.workers > 1:
        _run_in_workers(args, out, namespace, units)
    else:
        run_units_here(args, run_dir, namespace, units, bus_url=args.bus)
    manifest = run_dir.manifest()
    manifest["seconds_last_invocation"] = round(time.monotonic() - started, 2)
    run_dir.write_manifest(manifest)
    return out, write_summary(out)


def settings_from(args: argparse.Namespace) -> Any:
    from bench.episodes.runner import RunSettings

    return RunSettings(
        model=args.model,
        judge_model=args.judge_model,
        api_base=args.api_base,
        session_timeout=args.session_timeout,
        max_turns=args.max_turns,
    )


def run_units_here(
    args: argparse.Namespace,
    run_dir: EpisodeRunDir,
    namespace: str,
    units: list[Unit],
    *,
    bus_url: str | None,
) -> None:
    from actors.bus import Bus, MemoryTransport, Transport
    from actors.bus._redis import RedisTransport
    from actors.episodes import GatewayPool
    from bench.episodes.runner import EpisodeHost, UnitRunner

    transport: Transport = RedisTransport(bus_url) if bus_url else MemoryTransport()
    bus = Bus(transport, namespace)
    settings = settings_from(args)
    gateways = GatewayPool(api_base=args.api_base, cache_dir=args.cache_dir)
    host = EpisodeHost(bus, settings, gateways=gateways)
    try:
        for i, unit in enumerate(units, 1):
            if not args.quiet:
                print(f"[{i}/{len(units)}] {unit.key}", file=sys.stderr, flush=True)
            UnitRunner(host, unit, run_dir.unit(unit.key)).run()
    finally:
        host.stop()
        bus.close()
        transport.close()


def _run_in_workers(args: argparse.Namespace, out: Path, namespace: str, units: list[Unit]) -> None:
    server = None
    url = args.bus
    if url is None:
        from actors.bus.local_server import LocalRedisServer

        server = LocalRedisServer()
        server.start()
        url = server.url
    shares = [units[i :: args.workers] for i in range(args.workers)]
    procs = []
    try:
        for share in shares:
            if not share:
                continue
            cmd = [
                sys.executable, "-m", "bench.episodes.worker", "--out", str(out), "--bus", url,
                "--namespace", namespace, "--units", ",".join(u.key for u in share),
                "--args", json.dumps(_worker_args(args)),
            ]  # fmt: skip
            procs.append(subprocess.Popen(cmd, cwd=ROOT, env={**os.environ}))
        failed = [p.returncode for p in procs if p.wait() != 0]
        if failed:
            raise EpisodeUsageError(f"{len(failed)} worker(s) failed (exit {failed[0]}); rerun to resume")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        if server is not None:
            server.stop()


def _worker_args(args: argparse.Namespace) -> dict[str, Any]:
    keys = (
        "tasks", "assistants", "runs", "no_ablation", "model", "judge_model", "api_base",
        "session_timeout", "max_turns", "cache_dir", "quiet",
    )  # fmt: skip
    data = {k: getattr(args, k) for k in keys}
    data["cache_dir"] = str(args.cache_dir) if args.cache_dir else None
    return data
