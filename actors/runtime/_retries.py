"""Retries: a failed handler runs again after an exponential backoff, up to the bus's attempts.

The failed delivery stays in the host's hands (``host.hold``) while it waits, so a drain waits
for it and presence keeps renewing its claim; then it goes back on its stream as a new entry with
its attempt count raised (``Bus.requeue``). The last attempt's failure is rejected with its
traceback (reason ``handler_error``), which the dead-lettering middleware writes down.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING

from actors.bus import Delivery
from actors.runtime._actor import Actor, PermanentError
from actors.runtime._middleware import Middleware
from actors.runtime._scheduler import Scheduler

if TYPE_CHECKING:
    from actors.runtime._host import Host


def backoff(attempt: int, *, base: float, cap: float) -> float:
    """Seconds to wait before attempt ``attempt + 1``: ``base`` doubled per attempt, at most ``cap``."""
    return min(cap, base * 2.0 ** (attempt - 1))


def failure_detail(exc: BaseException) -> str:
    """The exception and the innermost frames of its traceback, for the dead letter."""
    return f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exception(exc)[-3:])


class Retries(Middleware):
    """Requeues a failed delivery after a backoff (``HostConfig.retry_backoff``/``_max``).

    A ``PermanentError`` is not retried (the host rejects it with its own reason), nor is a
    ``KeyboardInterrupt`` (the process is going down; the entry stays pending for another one).
    """

    def __init__(self) -> None:
        self._scheduler: Scheduler | None = None

    def before_host_boot(self, host: Host) -> None:
        self._scheduler = Scheduler(f"retries-{host.bus.process_id}")

    def after_reading_stopped(self, host: Host) -> None:
        # Requeue what waits now: another process handles it, and the drain need not wait.
        if self._scheduler is not None:
            self._scheduler.flush_and_stop()

    def after_process_message(
        self, host: Host, actor: Actor, delivery: Delivery, *, exception: BaseException | None
    ) -> None:
        if exception is None or isinstance(exception, PermanentError | KeyboardInterrupt):
            return
        if delivery.attempt >= host.bus.max_attempts:
            host.reject(delivery, "handler_error", failure_detail(exception))
            return
        assert self._scheduler is not None, "a host runs handlers only once started"
        cfg = host.config
        delay = backoff(delivery.attempt, base=cfg.retry_backoff, cap=cfg.retry_backoff_max)
        host.hold(delivery)

        def requeue() -> None:
            try:
                host.bus.requeue(delivery)
            finally:
                host.release(delivery)

        self._scheduler.call_later(delay, requeue)
