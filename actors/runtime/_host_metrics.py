"""Host metrics: the time each handler takes, per actor type, and the messages skipped as expired.

The timings go to the host's ``handler_latency`` (``actors.runtime.metrics`` renders it); the
counts to the bus's counters, beside its traffic. The host puts this middleware last, closest to
the handler, so a timing covers the handler alone and no other middleware's work.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from actors.bus import Delivery
from actors.runtime._actor import Actor
from actors.runtime._middleware import Middleware

if TYPE_CHECKING:
    from actors.runtime._host import Host


class HostMetrics(Middleware):
    def __init__(self) -> None:
        # One handler at a time per thread: a thread's start time is its running handler's.
        self._started = threading.local()

    def before_process_message(self, host: Host, actor: Actor, delivery: Delivery) -> None:
        self._started.at = time.perf_counter()

    def after_process_message(
        self, host: Host, actor: Actor, delivery: Delivery, *, exception: BaseException | None
    ) -> None:
        started: float | None = getattr(self._started, "at", None)
        if started is None:
            return
        self._started.at = None
        host.handler_latency.observe(type(actor).__name__, time.perf_counter() - started)

    def after_skip_message(self, host: Host, delivery: Delivery) -> None:
        host.bus.count("expired")
