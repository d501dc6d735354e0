"""Presence: the process announces itself, keeps its claims, and takes over the work of the dead.

Every ``heartbeat_every`` seconds the host's presence key is written again (name, machine, pid,
addresses, entries in hand; it expires after five missed beats), and its reply lane kept. The
entries it works on are renewed every third of the visibility timeout, so nobody reclaims them;
the entries another consumer left unrenewed that long are reclaimed. A consumer known to be dead
is taken over at once instead: this machine's process whose pid ended (the host's own
predecessor, killed and restarted), or one whose presence expired after two heartbeats; once
nothing of its is left, its consumer names and presence are removed.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from actors.runtime._middleware import Middleware

if TYPE_CHECKING:
    from actors.runtime._host import Host

log = structlog.get_logger("auratown.runtime")

_LIVE_HERE: set[str] = set()
"""Process ids of the hosts running in this OS process (a test may run several): another process
id announced with this pid is an earlier incarnation, not a sibling."""
_LIVE_HERE_LOCK = threading.Lock()
ORPHAN_IDLE_MS = 2000
"""An entry pending under this host's own name, idle this long and not in its hands, is orphaned."""
PENDING_PAGE = 1000
"""Pending entries looked at per stream and round of take-over."""


def pid_gone(pid: object) -> bool:
    """The process ``pid`` of this machine has ended (or is a zombie nobody reaped yet)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # someone else's process: alive as far as we can tell
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


class Presence(Middleware):
    def __init__(self) -> None:
        self._next_at: dict[str, float] = {}

    def before_host_boot(self, host: Host) -> None:
        with _LIVE_HERE_LOCK:
            _LIVE_HERE.add(host.bus.process_id)
        self._next_at = {"renew": 0.0, "heartbeat": 0.0, "sweep": 0.0, "reclaim": 0.0}
        self.heartbeat(host)

    def after_actor_spawned(self, host: Host, address: str) -> None:
        if host.started:
            self.heartbeat(host)  # announce the new address now, not a heartbeat later

    def after_host_shutdown(self, host: Host) -> None:
        with _LIVE_HERE_LOCK:
            _LIVE_HERE.discard(host.bus.process_id)
        try:
            host.bus.leave()
        except Exception as exc:  # noqa: BLE001 - presence expires by itself
            log.warning("could not remove presence", error=repr(exc))

    def maintain(self, host: Host) -> None:
        cfg = host.config
        now = time.monotonic()
        if self._due("renew", now, cfg.renew_every):
            host.bus.renew(host.deliveries_in_hand())
        if self._due("heartbeat", now, cfg.heartbeat_every):
            self.heartbeat(host)
            host.bus.sweep_reply_lanes()
            self.take_over(host)
        if self._due("sweep", now, cfg.heartbeat_every * 5):
            host.bus.sweep_dead_processes()
        if self._due("reclaim", now, cfg.reclaim_every):
            self.reclaim(host)

    def _due(self, step: str, now: float, every: float) -> bool:
        if now < self._next_at.get(step, 0.0):
            return False
        self._next_at[step] = now + every
        return True

    def heartbeat(self, host: Host) -> None:
        ttl = int(host.config.heartbeat_every * 5 * 1000)
        bus = host.bus
        bus.heartbeat(
            {
                "name": host.name,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "started": host.started_at,
                "addresses": host.addresses,
                "in_flight": host.in_flight(),
            },
            ttl_ms=ttl,
        )
        reply_stream = bus.keys.inbox(bus.reply_address)
        if bus.transport.exists(reply_stream):
            bus.transport.expire(reply_stream, ttl * 60)

    def dead_consumers(self, host: Host) -> dict[str, tuple[int, bool]]:
        """Consumers known to be dead, each with the idle time (ms) its entries need before they
        are taken: 0 for a process of this machine that has ended (this host's own predecessor,
        killed and restarted: its pid is gone, or it is this very pid under another process id),
        two heartbeats for one whose presence expired (another machine's); and whether it read
        nothing this host does not read (so this host may forget it once it took over)."""
        me, here = host.bus.process_id, socket.gethostname()
        with _LIVE_HERE_LOCK:
            siblings = set(_LIVE_HERE)
        ours = set(host.addresses)
        dead: dict[str, tuple[int, bool]] = {}
        for p in host.bus.processes():
            if p.process_id == me or p.process_id in siblings:
                continue
            pid = p.info.get("pid")
            covered = set(p.info.get("addresses", ())) <= ours
            if p.info.get("host") == here and (pid == os.getpid() or pid_gone(pid)):
                dead[p.process_id] = (0, covered)
            elif not p.alive:
                dead[p.process_id] = (int(host.config.heartbeat_every * 2 * 1000), covered)
        return dead

    def take_over(self, host: Host) -> None:
        """Claim at once what dead consumers left pending, instead of waiting out the visibility
        timeout; then forget them (presence, consumer names) once nothing of theirs is left.

        Entries pending under this host's own name that it is not working on are taken again too:
        Redis restarted from an AOF that ends before their acknowledgement (a lost tail) shows
        them pending, and nobody else would look at them before the visibility timeout."""
        dead = self.dead_consumers(host)
        if host.stopping:
            return
        bus = host.bus
        me = bus.process_id
        left: set[str] = set()
        for sub in host.subscriptions():
            rows = bus.transport.pending(sub.stream, sub.group, count=PENDING_PAGE)
            theirs = [r for r in rows if r.consumer in dead]
            ready = [r.entry_id for r in theirs if r.idle_ms >= dead[r.consumer][0]]
            left.update(r.consumer for r in theirs if r.idle_ms < dead[r.consumer][0])
            orphans = [r for r in rows if r.consumer == me and r.idle_ms >= ORPHAN_IDLE_MS]
            ready += [r.entry_id for r in orphans if not host.working_on(sub.stream, r.entry_id)]
            room = host.config.max_in_flight - host.in_flight()
            if len(ready) > room or len(rows) >= PENDING_PAGE:
                left.update(dead)  # more than this round can hold: the next one goes on
                ready = ready[: max(0, room)]
            if ready:
                entries = bus.transport.claim(sub.stream, sub.group, me, ready)
                bus.count("taken_over", len(entries))
                log.warning(
                    "took over pending entries nobody works on",
                    stream=sub.stream,
                    n=len(entries),
                    consumers=sorted({r.consumer for r in rows if r.entry_id in ready}),
                )
                host.dispatch([bus.to_delivery(sub, e) for e in entries])
        done = {p for p in set(dead) - left if dead[p][1]}
        for process_id in done:
            for sub in host.subscriptions():
                bus.transport.delete_consumer(sub.stream, sub.group, process_id)
            bus.transport.delete(bus.keys.alive(process_id))
        if done:
            bus.sweep_dead_processes()

    def reclaim(self, host: Host) -> None:
        """Take the entries other consumers left unrenewed for the visibility timeout."""
        min_idle = int(host.config.visibility_timeout * 1000)
        for sub in host.subscriptions():
            if host.stopping:
                return
            room = host.config.max_in_flight - host.in_flight()
            if room <= 0:
                return
            host.dispatch(host.bus.reclaim(sub, min_idle_ms=min_idle, count=min(room, 100)))
