"""Trimming: the streams a host reads lose their acknowledged entries, dead letters their old ones.

Every ``HostConfig.trim_every`` seconds (the first time one period after start-up). Dead letters
are kept by age (``Bus.trim_dead_letters``), so they are trimmed here too, also when no new dead
letter arrives to trigger it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from actors.runtime._middleware import Middleware

if TYPE_CHECKING:
    from actors.runtime._host import Host


class Trimming(Middleware):
    def __init__(self) -> None:
        self._next_at = 0.0

    def before_host_boot(self, host: Host) -> None:
        self._next_at = time.monotonic() + host.config.trim_every

    def maintain(self, host: Host) -> None:
        now = time.monotonic()
        if now < self._next_at:
            return
        self._next_at = now + host.config.trim_every
        for sub in host.subscriptions(control=True):
            host.bus.transport.trim_acknowledged(sub.stream)
        host.bus.trim_dead_letters()
