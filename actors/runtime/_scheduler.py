"""A timer thread that runs callbacks later (retry backoff) and can run them all at once (shutdown)."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

import structlog

log = structlog.get_logger("auratown.runtime")


class Scheduler:
    def __init__(self, name: str = "scheduler") -> None:
        self._heap: list[tuple[float, int, Callable[[], object]]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._stopped = False
        self._flushed = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def call_later(self, delay: float, fn: Callable[[], object]) -> None:
        """Run ``fn`` after ``delay`` seconds; once flushed (``flush_and_stop``), at once: a retry
        scheduled by a handler that fails while the host drains is requeued, not dropped."""
        with self._cv:
            flushed = self._flushed
            if not flushed:
                heapq.heappush(self._heap, (time.monotonic() + delay, next(self._seq), fn))
                self._cv.notify()
        if flushed:
            self._run(fn)

    def __len__(self) -> int:
        with self._cv:
            return len(self._heap)

    def _run(self, fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - report and keep the timer alive
            log.error("scheduled call failed", error=repr(exc))

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._stopped and (not self._heap or self._heap[0][0] > time.monotonic()):
                    timeout = None if not self._heap else self._heap[0][0] - time.monotonic()
                    self._cv.wait(timeout)
                if self._stopped:
                    return
                _, _, fn = heapq.heappop(self._heap)
            self._run(fn)

    def stop(self) -> None:
        """Stop and drop pending callbacks."""
        with self._cv:
            self._stopped = True
            self._heap.clear()
            self._cv.notify()

    def flush_and_stop(self) -> int:
        """Run every pending callback now, then stop (a later ``call_later`` runs at once); returns
        how many ran."""
        with self._cv:
            self._stopped = self._flushed = True
            pending = [fn for _, _, fn in sorted(self._heap)]
            self._heap.clear()
            self._cv.notify()
        for fn in pending:
            self._run(fn)
        self._thread.join(timeout=2.0)
        return len(pending)
