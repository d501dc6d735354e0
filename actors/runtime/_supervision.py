"""Supervision: an actor that died is restarted, and given up once it keeps dying.

A death is reported from the dying actor's own thread; the restart happens on the host's
maintenance thread. More than ``HostConfig.restart_limit`` restarts within ``restart_window``
seconds and the host stops reading for the actor and hands its messages back to the bus, for a
process whose actor works (or for the dead-lettering of an entry delivered too often).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from actors.runtime._middleware import Middleware

if TYPE_CHECKING:
    from actors.runtime._host import Host

log = structlog.get_logger("auratown.runtime")


class Supervision(Middleware):
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._to_restart: set[str] = set()
        self._restarts: dict[str, collections.deque[float]] = {}
        """When each actor was restarted, within the window."""

    def restarts(self, address: str) -> int:
        """Restarts of the actor at ``address`` within the current window."""
        with self._lock:
            return len(self._restarts.get(address, ()))

    def after_actor_died(self, host: Host, address: str, exception: BaseException | None) -> None:
        log.error("actor died", actor=address, error=repr(exception))
        with self._lock:
            self._to_restart.add(address)
        host.wake_maintenance()

    def maintain(self, host: Host) -> None:
        with self._lock:
            due = sorted(self._to_restart)
            self._to_restart.clear()
        for address in due:
            self._restart(host, address)

    def _restart(self, host: Host, address: str) -> None:
        if address not in host.addresses or host.stopping:
            return
        cfg = host.config
        now = self._clock()
        with self._lock:
            restarts = self._restarts.setdefault(address, collections.deque())
            while restarts and now - restarts[0] > cfg.restart_window:
                restarts.popleft()
            give_up = len(restarts) >= cfg.restart_limit
            if not give_up:
                restarts.append(now)
        if give_up:
            log.error(
                "actor keeps dying; no more restarts, its messages are handed back",
                actor=address,
                limit=cfg.restart_limit,
                window=cfg.restart_window,
            )
            host.retire_actor(address)
            host.bus.count("gave_up")
            return
        redispatched = host.restart_actor(address)
        host.bus.count("restarts")
        log.warning("actor restarted", actor=address, restarts=len(restarts), redispatched=redispatched)
