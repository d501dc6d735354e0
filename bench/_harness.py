"""What every benchmark here shares: spawned children that are always stopped, machine facts,
the command line, timed steps, table cells, verdicts and the results file."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.context import SpawnProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from types import FrameType
from typing import Any, Protocol, TypeVar

import redis

from actors.bus.local_server import LocalRedisServer


class BenchError(RuntimeError):
    """A measurement could not complete (a child died, a wait timed out)."""


class Children:
    """Spawned child processes; every one is stopped (SIGTERM, then SIGKILL) on exit."""

    def __init__(self, *, ready_timeout: float, stop_timeout: float) -> None:
        self.ctx = multiprocessing.get_context("spawn")
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.procs: list[SpawnProcess] = []
        self.exit_codes: dict[str, int | None] = {}

    def queue(self) -> Queue[dict[str, Any]]:
        return self.ctx.Queue()

    def event(self) -> MpEvent:
        return self.ctx.Event()

    def start(self, name: str, target: Callable[..., None], *args: Any) -> SpawnProcess:
        """Start ``target(*args, ready)`` and wait until it sets ``ready``."""
        ready = self.ctx.Event()
        proc = self.ctx.Process(target=target, args=(*args, ready), name=name, daemon=True)
        proc.start()
        self.procs.append(proc)
        deadline = time.monotonic() + self.ready_timeout
        while not ready.wait(0.1):
            if not proc.is_alive() or time.monotonic() > deadline:
                self.stop(proc)
                raise BenchError(f"child {name} did not get ready (exit code {proc.exitcode})")
        return proc

    def join(self, proc: SpawnProcess, timeout: float | None = None) -> int | None:
        """Wait for a child that exits by itself, then make sure it is gone."""
        proc.join(self.stop_timeout if timeout is None else timeout)
        return self.stop(proc)

    def stop(self, proc: SpawnProcess, timeout: float | None = None) -> int | None:
        if proc.is_alive():
            proc.terminate()
            proc.join(self.stop_timeout if timeout is None else timeout)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
        if proc in self.procs:
            self.procs.remove(proc)
            self.exit_codes[proc.name] = proc.exitcode
        return proc.exitcode

    def __enter__(self) -> Children:
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in list(self.procs):
            self.stop(proc)


def machine_info(server: LocalRedisServer) -> dict[str, Any]:
    client = redis.Redis.from_url(server.url)
    try:
        info = client.info("server")
    finally:
        client.close()
    return {
        "cpu_count": os.cpu_count(),
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "redis_server_version": info.get("redis_version"),
        "redis_server_binary": server.binary,
        "redis_py_version": redis.__version__,
        "multiprocessing_start_method": "spawn",
    }


def num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def row(cells: Sequence[str], columns: Sequence[tuple[str, int]]) -> str:
    """A table row; a negative column width means left-aligned."""
    return " | ".join(c.ljust(-w) if w < 0 else c.rjust(w) for c, (_, w) in zip(cells, columns, strict=True))


def verdict(passed: bool | None) -> str:
    return "n/a" if passed is None else "PASS" if passed else "FAIL"


class _Reportable(Protocol):
    def to_json(self) -> dict[str, Any]: ...


def write_json(report: _Reportable, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_json(), indent=2) + "\n")


def exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through the finally blocks that stop the children


# ---------------------------------------------------------------------------------------- command line


class BenchParser:
    """The command line of a performance benchmark (``python -m bench.<name>``): its description is
    the module docstring's first paragraph; sizes whose default depends on ``--quick``; then
    ``--out`` (the JSON results file) and ``--quick`` (a smoke run)."""

    def __init__(self, module: str, doc: str | None, *, out: Path, quick: str) -> None:
        self.parser = argparse.ArgumentParser(
            prog=f"python -m {module}", description=(doc or "").split("\n\n")[0]
        )
        self.out = out
        self.quick = quick
        self._sized: dict[str, tuple[Any, Any]] = {}

    def sized(
        self,
        flag: str,
        help: str,
        *,
        default: Any,
        quick: Any,
        type: Callable[[str], Any] = int,
        show: Callable[[Any], str] = str,
    ) -> None:
        """An option that, when not given, takes ``quick`` under ``--quick`` and ``default`` otherwise."""
        action = self.parser.add_argument(
            flag, type=type, default=None, help=f"{help} (default {show(default)}, quick {show(quick)})"
        )
        self._sized[action.dest] = (default, quick)

    def parse(self, argv: Sequence[str] | None) -> argparse.Namespace:
        self.parser.add_argument(
            "--out", default=str(self.out), help="JSON results file (default %(default)s)"
        )
        self.parser.add_argument("--quick", action="store_true", help=self.quick)
        args = self.parser.parse_args(argv)
        for dest, (default, quick) in self._sized.items():
            if getattr(args, dest) is None:
                setattr(args, dest, quick if args.quick else default)
        return args

    def error(self, message: str) -> None:
        self.parser.error(message)


# ---------------------------------------------------------------------------------------- printing

T = TypeVar("T")


def step(name: str, fn: Callable[[], T], detail: Callable[[T], str] | None = None) -> T:
    """Run one measurement, saying its name first and then how long it took (and ``detail``)."""
    print(f"  {name} ...", end=" ", flush=True)
    t0 = time.monotonic()
    result = fn()
    took = time.monotonic() - t0
    print(f"{took:.1f}s{f' ({detail(result)})' if detail is not None else ''}", flush=True)
    return result


def finish(
    report: _Reportable,
    out: Path,
    sections: Sequence[str],
    *,
    elapsed_s: float,
    children: Mapping[str, int | None] | None = None,
) -> None:
    """Print the report's sections (blank lines between them; an empty one is left out), warn of
    children that did not exit cleanly, write the JSON results and say where."""
    for section in sections:
        if section:
            print()
            print(section)
    unclean = [f"{name}={code}" for name, code in (children or {}).items() if code != 0]
    if unclean:
        print(f"warning: child processes did not exit cleanly: {', '.join(unclean)}")
    write_json(report, out)
    print(f"\nresults written to {out} ({elapsed_s:.1f}s)")
