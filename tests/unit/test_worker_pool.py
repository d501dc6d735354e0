"""Pooled actors' mailboxes and the worker pool, without a bus."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from actors.runtime import CellDeadError
from actors.runtime._pool import Mailbox, WorkerPool
from tests.conftest import wait_until


class Recorder:
    """Callbacks of one mailbox, recording what ran and whether two ran at once."""

    def __init__(self, name: str, log: list[tuple[str, Any]], lock: threading.Lock) -> None:
        self.name, self.log, self.lock = name, log, lock
        self.running = 0
        self.overlap = False
        self.died: list[BaseException] = []

    def _enter(self) -> None:
        with self.lock:
            self.running += 1
            self.overlap |= self.running > 1

    def _leave(self) -> None:
        with self.lock:
            self.running -= 1

    def start(self) -> None:
        self.log.append((self.name, "start"))

    def handle(self, batch: list[Any], more: bool) -> None:
        self._enter()
        try:
            for item in batch:
                if item == "crash":
                    raise SystemExit("crash")
                self.log.append((self.name, item))
        finally:
            self._leave()

    def stop(self) -> None:
        self.log.append((self.name, "stop"))

    def mailbox(self, pool: WorkerPool, throughput: int = 8) -> Mailbox:
        return Mailbox(
            pool,
            start=self.start,
            handle=self.handle,
            stop=self.stop,
            on_death=self.died.append,
            throughput=throughput,
        )


@pytest.fixture
def pool() -> Any:
    p = WorkerPool(4, name="test-pool")
    yield p
    p.stop()


def test_one_mailbox_runs_in_order_and_never_on_two_workers_at_once(pool: WorkerPool) -> None:
    log: list[tuple[str, Any]] = []
    rec = Recorder("a", log, threading.Lock())
    box = rec.mailbox(pool, throughput=1)
    box.begin()
    for i in range(300):
        box.tell([i])  # type: ignore[list-item]
    box.stop(timeout=10)
    assert log == [("a", "start"), *[("a", i) for i in range(300)], ("a", "stop")]
    assert not rec.overlap and not box.is_alive()


def test_many_mailboxes_share_the_pool_threads_only(pool: WorkerPool) -> None:
    lock = threading.Lock()
    threads: set[str] = set()
    log: list[tuple[str, Any]] = []
    recs = [Recorder(f"m{i}", log, lock) for i in range(50)]
    boxes = []
    for rec in recs:
        orig = rec.handle

        def handle(batch: list[Any], more: bool, orig: Any = orig) -> None:
            with lock:
                threads.add(threading.current_thread().name)
            orig(batch, more)

        rec.handle = handle  # type: ignore[method-assign]
        boxes.append(rec.mailbox(pool))
    for box in boxes:
        box.begin()
        box.tell([1])  # type: ignore[list-item]
    for box in boxes:
        box.stop(timeout=10)
    assert sorted(log, key=repr) == sorted(
        [(r.name, x) for r in recs for x in ("start", 1, "stop")], key=repr
    )
    assert threads and threads <= {f"test-pool-{i}" for i in range(pool.size)}


def test_a_long_mailbox_does_not_starve_another_on_a_single_worker() -> None:
    pool = WorkerPool(1, name="single")
    try:
        log: list[tuple[str, Any]] = []
        lock = threading.Lock()
        gate = threading.Event()
        a, b = Recorder("a", log, lock), Recorder("b", log, lock)
        box_a, box_b = a.mailbox(pool, throughput=2), b.mailbox(pool, throughput=2)
        orig = a.handle

        def gated(batch: list[Any], more: bool) -> None:
            gate.wait(10)  # hold the only worker until b has queued its message
            orig(batch, more)

        a.handle = gated  # type: ignore[method-assign]
        for i in range(10):
            box_a.tell([i])  # type: ignore[list-item]
        box_b.tell(["b"])  # type: ignore[list-item]
        gate.set()
        box_a.stop(timeout=10)
        box_b.stop(timeout=10)
        order = [x for name, x in log if x not in ("start", "stop")]
        assert order.index("b") < order.index(9)  # b ran between a's turns, not after all of a
        assert [x for x in order if x != "b"] == list(range(10))
    finally:
        pool.stop()


def test_a_crash_ends_the_mailbox_and_reports_to_the_supervisor(pool: WorkerPool) -> None:
    log: list[tuple[str, Any]] = []
    rec = Recorder("a", log, threading.Lock())
    box = rec.mailbox(pool)
    box.tell(["crash"])  # type: ignore[list-item]
    wait_until(lambda: rec.died, what="the death report")
    assert isinstance(rec.died[0], SystemExit) and not box.is_alive()
    with pytest.raises(CellDeadError):
        box.tell([1])  # type: ignore[list-item]
    assert ("a", "stop") not in log


def test_a_failing_start_is_a_death_and_no_message_runs() -> None:
    pool = WorkerPool(1, name="p")
    try:
        died: list[BaseException] = []
        ran: list[Any] = []

        def start() -> None:
            raise RuntimeError("cannot load state")

        box = Mailbox(
            pool,
            start=start,
            handle=lambda batch, more: ran.append(batch),
            stop=lambda: None,
            on_death=died.append,
        )
        box.begin()
        wait_until(lambda: died, what="the failed start to be reported")
        assert isinstance(died[0], RuntimeError) and ran == [] and not box.is_alive()
    finally:
        pool.stop()


def test_a_pool_needs_a_thread() -> None:
    with pytest.raises(ValueError, match="at least one thread"):
        WorkerPool(0, name="none")
