"""Cells: where a bound actor runs, its own pykka thread or a mailbox on the host's worker pool.

Both kinds run the same ``CellHooks`` (start, handle each batch, stop, report a death), so the
host does not care which one an actor has.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

import pykka

from actors.bus import Delivery
from actors.runtime._pool import CellDeadError, CellHooks, Mailbox, WorkerPool


class CellRef(Protocol):
    def tell(self, batch: list[Delivery]) -> None: ...

    def is_alive(self) -> bool: ...

    def stop(self, *, timeout: float | None) -> None: ...


class _ThreadCell(pykka.ThreadingActor):
    """The pykka actor around one ``Actor``: catches everything a handler raises."""

    def __init__(self, hooks: CellHooks) -> None:
        super().__init__()
        self.hooks = hooks

    def on_start(self) -> None:
        try:
            self.hooks.start()
        except Exception as exc:
            # pykka stops an actor whose on_start fails without calling on_failure
            self.hooks.on_death(exc)
            raise

    def on_receive(self, message: Any) -> Any:
        # The reader hands over all of a fetch's entries for this address at once: one handoff.
        self.hooks.handle(message, not self.actor_inbox.empty())
        return None

    def on_failure(self, exception_type: Any, exception_value: Any, tb: Any) -> None:
        self.hooks.on_death(exception_value)

    def on_stop(self) -> None:
        self.hooks.stop()


class OwnThread:
    """A ``CellRef`` for an actor on its own pykka thread."""

    def __init__(self, ref: pykka.ActorRef[Any]) -> None:
        self._ref = ref

    def tell(self, batch: list[Delivery]) -> None:
        try:
            self._ref.tell(batch)
        except pykka.ActorDeadError as exc:
            raise CellDeadError(str(exc)) from exc

    def is_alive(self) -> bool:
        return self._ref.is_alive()

    def stop(self, *, timeout: float | None) -> None:
        with contextlib.suppress(pykka.ActorDeadError):
            self._ref.stop(block=timeout is not None, timeout=timeout)


def start_cell(pool: WorkerPool | None, hooks: CellHooks) -> CellRef:
    """Start a cell: a mailbox on ``pool``, or with no pool a thread of its own."""
    if pool is None:
        return OwnThread(_ThreadCell.start(hooks))
    mailbox = Mailbox(pool, start=hooks.start, handle=hooks.handle, stop=hooks.stop, on_death=hooks.on_death)
    mailbox.begin()
    return mailbox
