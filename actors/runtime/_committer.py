"""Write-behind commits: one thread applies the commits of every local actor in pipelines.

An actor hands over its commit and goes on with its next message; the committer sends all queued
commits in one round trip. Each commit stays atomic and acknowledgement-gated on its own, and
commits are applied in the order they were submitted, so per-actor order is kept.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import structlog

from actors.bus import Bus, Commit, CommitResult, Delivery

log = structlog.get_logger("auratown.runtime")


@dataclass
class _Item:
    commit: Commit
    delivery: Delivery
    sent: int
    result: Future[CommitResult] = field(default_factory=Future)


class Committer:
    def __init__(
        self, bus: Bus, on_done: Callable[[Delivery], None], *, max_batch: int = 256, name: str = "committer"
    ) -> None:
        self._bus = bus
        self._on_done = on_done
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._pending = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, commit: Commit, delivery: Delivery, *, sent: int) -> Future[CommitResult]:
        item = _Item(commit, delivery, sent)
        with self._lock:
            self._pending += 1
        self._queue.put(item)
        return item.result

    @property
    def idle(self) -> bool:
        """Nothing submitted is still unapplied: a commit made directly now keeps the order."""
        with self._lock:
            return self._pending == 0

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < self._max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            self._apply(batch)
            if stop:
                return

    def _apply(self, batch: list[_Item]) -> None:
        try:
            self._apply_batch(batch)
        finally:
            with self._lock:
                self._pending -= len(batch)

    def _apply_batch(self, batch: list[_Item]) -> None:
        try:
            results = self._bus.transport.commit_many([i.commit for i in batch])
        except Exception as exc:  # noqa: BLE001 - entries stay pending and are redelivered later
            self._bus.count("commit_failures", len(batch))
            log.error(
                "commit failed; the entries stay pending and will be redelivered",
                error=repr(exc),
                n=len(batch),
            )
            for item in batch:
                item.result.set_exception(exc)
                self._on_done(item.delivery)
            return
        for item, result in zip(batch, results, strict=True):
            self._bus.record(result, item.delivery, sent=item.sent, commit=item.commit)
            item.result.set_result(result)
            self._on_done(item.delivery)

    def stop(self) -> None:
        """Apply everything submitted so far, then end the thread."""
        self._queue.put(None)
        self._thread.join(timeout=30)
