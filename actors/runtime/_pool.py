"""Pooled actors: many actors share a few worker threads instead of one thread each.

An actor on its own pykka thread costs a thread, and a wake-up and a GIL hand-over per message.
Two thousand town agents with one Perception each per tick made a host spend more CPU in the
kernel, switching threads, than in the handlers (``bench/town.py``). A pooled actor has a mailbox
instead: a worker takes the mailbox and drains it, so the actor's messages are still handled one
at a time and in order, but a handful of threads serve every pooled actor of the host.
"""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import structlog

from actors.bus import Delivery

log = structlog.get_logger("auratown.runtime")


class CellDeadError(Exception):
    """The actor behind a cell is not running (it died, or was stopped)."""


class Runnable(Protocol):
    def run(self) -> None: ...


class WorkerPool:
    """A fixed number of worker threads taking runnable mailboxes from one shared queue.

    The threads start with the first submitted mailbox, so a host without pooled actors has none.
    """

    def __init__(self, size: int, *, name: str) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one thread")
        self.size = size
        self.name = name
        self._ready: queue.SimpleQueue[Runnable | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._stopped = False

    def submit(self, item: Runnable) -> None:
        if not self._threads:
            self._start()
        self._ready.put(item)

    def _start(self) -> None:
        with self._lock:
            if self._threads or self._stopped:
                return
            for i in range(self.size):
                t = threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
                self._threads.append(t)
                t.start()

    def _work(self) -> None:
        while True:
            item = self._ready.get()
            if item is None:
                return
            try:
                item.run()
            except Exception as exc:
                log.error("pooled mailbox failed outside a handler", error=repr(exc), exc_info=True)

    def stop(self, timeout: float = 5.0) -> None:
        """End the threads once the mailboxes already queued have run."""
        with self._lock:
            self._stopped = True
            threads = list(self._threads)
        for _ in threads:
            self._ready.put(None)
        for t in threads:
            t.join(timeout=timeout)


@dataclass(frozen=True)
class CellHooks:
    """What a cell runs for its actor: ``start`` before the first batch, ``handle`` per batch (with
    whether more are queued behind it), ``stop`` after the last; ``on_death`` is told when any of
    them raised and the cell ended."""

    start: Callable[[], None]
    handle: Callable[[list[Delivery], bool], None]
    stop: Callable[[], None]
    on_death: Callable[[BaseException], None]


_STOP = object()


class Mailbox:
    """The queue of one pooled actor, run by whichever worker takes it.

    ``handle`` gets one batch at a time, with whether more are queued behind it; ``start`` runs
    before the first batch and ``stop`` after the last. An exception from any of them ends the
    mailbox (``on_death`` is told), like an actor thread that dies: what is still queued is
    dropped here, and the host re-dispatches it to the restarted actor.
    """

    def __init__(
        self,
        pool: WorkerPool,
        *,
        start: Callable[[], None],
        handle: Callable[[list[Delivery], bool], None],
        stop: Callable[[], None],
        on_death: Callable[[BaseException], None],
        throughput: int = 8,
    ) -> None:
        self._pool = pool
        self._hooks = CellHooks(start=start, handle=handle, stop=stop, on_death=on_death)
        self._throughput = throughput
        """Batches handled per turn before the worker goes on to other mailboxes (fairness)."""
        self._queue: collections.deque[object] = collections.deque()
        self._lock = threading.Lock()
        self._scheduled = False
        self._started = False
        self._alive = True
        self._stopped = threading.Event()

    def begin(self) -> None:
        """Run ``start`` now, before any message arrives, as an actor thread would."""
        with self._lock:
            if self._scheduled:
                return
            self._scheduled = True
        self._pool.submit(self)

    def tell(self, batch: list[Delivery]) -> None:
        self._put(batch)

    def is_alive(self) -> bool:
        return self._alive

    def stop(self, *, timeout: float | None) -> None:
        """Queue the stop behind what is queued; with a timeout, wait that long for it."""
        try:
            self._put(_STOP)
        except CellDeadError:
            return
        if timeout is not None:
            self._stopped.wait(timeout)

    def _put(self, item: object) -> None:
        with self._lock:
            if not self._alive:
                raise CellDeadError("the actor is not running")
            self._queue.append(item)
            if self._scheduled:
                return
            self._scheduled = True
        self._pool.submit(self)

    def run(self) -> None:
        try:
            if not self._started:
                self._started = True
                self._hooks.start()
            for _ in range(self._throughput):
                with self._lock:
                    if not self._queue:
                        self._scheduled = False
                        return
                    item = self._queue.popleft()
                    more = bool(self._queue)
                if item is _STOP:
                    try:
                        self._hooks.stop()
                    finally:
                        self._end()
                    return
                self._hooks.handle(item, more)  # type: ignore[arg-type]
        except BaseException as exc:  # noqa: BLE001 - reported to the supervisor, like a dead thread
            self._end()
            self._hooks.on_death(exc)
            return
        self._pool.submit(self)  # more is queued: back of the line, after the other mailboxes

    def _end(self) -> None:
        with self._lock:
            self._alive = False
            self._scheduled = False
            self._queue.clear()
        self._stopped.set()
