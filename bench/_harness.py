"""What the performance benchmarks share about processes: spawned children that are always stopped,
what a child measures and sends back, and the machine's facts. Their command line and printing
are in ``bench._cli``."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import platform
import queue
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from multiprocessing.context import SpawnProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as MpEvent
from types import FrameType
from typing import Any, Protocol, TypeVar

import redis

from actors.bus.local_server import LocalRedisServer
from actors.logging import configure_logging


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


@contextlib.contextmanager
def private_machine(
    ready_timeout: float, stop_timeout: float
) -> Iterator[tuple[LocalRedisServer, Children, dict[str, Any]]]:
    """A private redis-server, the children to spawn (all stopped first on exit) and the machine's
    facts: what every benchmark over Redis runs in."""
    with (
        LocalRedisServer() as server,
        Children(ready_timeout=ready_timeout, stop_timeout=stop_timeout) as children,
    ):
        yield server, children, machine_info(server)


def exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through the finally blocks that stop the children


# ---------------------------------------------------------------------------------------- in a child

_UUID = re.compile(r"urn:uuid:[0-9a-f-]+")


class LogCounter(logging.Handler):
    """Counts a child's warnings and errors by event (pykka's actor urns folded together)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.msg
        event = str(msg.get("event")) if isinstance(msg, dict) else record.getMessage()
        if isinstance(msg, dict) and "error" in msg:
            event = f"{event} [{msg['error']}]"
        self.counts[f"{record.levelname.lower()}: {_UUID.sub('urn:uuid:*', event)[:120]}"] += 1


def child_logging(verbose: bool) -> LogCounter:
    """A child's warnings and errors counted (and shown on stderr only when ``verbose``)."""
    configure_logging(level="WARNING")
    root = logging.getLogger()
    if not verbose:
        for handler in root.handlers:
            handler.setLevel(logging.CRITICAL + 1)
    counter = LogCounter()
    root.addHandler(counter)
    return counter


class _Closeable(Protocol):
    def close(self) -> object: ...


C = TypeVar("C", bound=_Closeable)


class ChildRun:
    """What a child measures (``out``) and the things it closes when done."""

    def __init__(self) -> None:
        self.out: dict[str, Any] = {}
        self.stack = contextlib.ExitStack()

    def closing(self, thing: C) -> C:
        """``thing`` closed when the child is done (the last one first)."""
        self.stack.callback(thing.close)
        return thing


@contextlib.contextmanager
def child_run(results: Queue[dict[str, Any]], *, verbose: bool) -> Iterator[ChildRun]:
    """The body of a child process: its measurements go to the parent on ``results`` with the
    error that ended it (if any) and the count of its warnings and errors."""
    counter = child_logging(verbose)
    run = ChildRun()
    try:
        with run.stack:
            yield run
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which records it
        run.out["error"] = repr(exc)
    run.out["log_counts"] = dict(counter.counts)
    results.put(run.out)


def wait_for_stop(stop: MpEvent) -> None:
    """Until the parent sets ``stop``, or dies without doing so."""
    parent = multiprocessing.parent_process()
    while not stop.wait(1.0):
        if parent is not None and not parent.is_alive():
            return


def child_result(results: Queue[dict[str, Any]], proc: SpawnProcess, timeout: float) -> dict[str, Any]:
    """The child's measurements; fails early if the child died without sending them."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return results.get(timeout=1.0)
        except queue.Empty:
            if not proc.is_alive():
                try:
                    return results.get(timeout=1.0)
                except queue.Empty:
                    raise BenchError(f"child {proc.name} exited ({proc.exitcode}) without results") from None
            if time.monotonic() > deadline:
                raise BenchError(f"child {proc.name} sent no results within {timeout:.0f}s") from None
