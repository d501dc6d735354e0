"""Middleware: the hooks a host calls around its core loop, after Dramatiq's worker middleware.

The host itself only reads, dispatches deliveries to actors, runs handlers, commits and drains.
Everything else (retries, dead letters, handler timings, supervision, presence, trimming) is a
``Middleware`` whose hooks the host calls at fixed points. Every hook here does nothing, so a
middleware overrides only the ones it needs.

``before_*`` hooks run in the middleware's order, ``after_*`` hooks in the reverse order, so the
last middleware sits closest to the handler (Dramatiq's order too). An exception from a hook
propagates as one from the host's own code would, except from ``maintain``, whose failures are
logged and retried on the next round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import structlog

from actors.bus import Delivery

if TYPE_CHECKING:
    from actors.runtime._actor import Actor
    from actors.runtime._host import Host

log = structlog.get_logger("auratown.runtime")


class Rejected(Exception):
    """Raised by ``before_dispatch_message``: the delivery can never be handled, for ``reason``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class Middleware:
    """Hooks around a host's core loop; each does nothing unless overridden.

    Message hooks get the ``Host`` (its bus, config, and the calls meant for middleware:
    ``hold``/``release``, ``reject``, ``dispatch``, ``wake_maintenance``), the ``Actor`` that
    handles the delivery, and the ``Delivery``.
    """

    # ---------------------------------------------------------------- lifecycle

    def before_host_boot(self, host: Host) -> None:
        """``Host.start``, before the readers start."""

    def after_host_boot(self, host: Host) -> None:
        """``Host.start``, once the readers and the maintenance thread run."""

    def after_actor_spawned(self, host: Host, address: str) -> None:
        """An actor was bound to ``address`` (``Host.spawn``), before the host started or after."""

    def after_reading_stopped(self, host: Host) -> None:
        """``Host.stop``: the readers ended and unstarted deliveries were handed back. Settle what
        this middleware holds now: the host waits for running handlers next."""

    def after_host_shutdown(self, host: Host) -> None:
        """``Host.stop``, once every actor and thread of the host has stopped."""

    # ---------------------------------------------------------------- messages

    def before_dispatch_message(self, host: Host, delivery: Delivery) -> None:
        """A reader fetched ``delivery`` (or presence took it over); raise ``Rejected`` to keep it
        from its actor and have it rejected instead."""

    def before_process_message(self, host: Host, actor: Actor, delivery: Delivery) -> None:
        """In the actor's thread, right before its handler runs."""

    def after_process_message(
        self, host: Host, actor: Actor, delivery: Delivery, *, exception: BaseException | None
    ) -> None:
        """In the actor's thread, once the handler returned (``exception`` None) or raised; before
        its effects and the acknowledgement are committed. A middleware that will settle a failed
        delivery later calls ``host.hold(delivery)`` here, and ``host.release`` when done."""

    def after_skip_message(self, host: Host, delivery: Delivery) -> None:
        """The delivery's deadline had passed: it was acknowledged without running its handler."""

    def reject_message(self, host: Host, delivery: Delivery, reason: str, detail: str) -> None:
        """The delivery will never be handled (undecodable, out of attempts, a permanent error,
        unencodable effects): the dead-lettering middleware acknowledges it into the dead-letter
        stream; others may watch."""

    # ---------------------------------------------------------------- actors and housekeeping

    def after_actor_died(self, host: Host, address: str, exception: BaseException | None) -> None:
        """The actor at ``address`` stopped with ``exception`` (its thread or mailbox is gone)."""

    def maintain(self, host: Host) -> None:
        """From the host's maintenance thread, every tenth of a second and when woken
        (``host.wake_maintenance``), while the host runs; keep your own timers."""


class MiddlewareChain:
    """The host's middleware in order. The host names the hook in a function of one middleware
    (``chain.before(lambda m: m.before_host_boot(host))``), so each call is type-checked."""

    def __init__(self, middleware: Sequence[Middleware]) -> None:
        self.middleware = tuple(middleware)
        self._reversed = tuple(reversed(self.middleware))
        # The per-message hooks call only the middleware that override them (most do not): they
        # run for every message, where a call and a closure per middleware cost throughput.
        self._dispatching = self._overriding("before_dispatch_message")
        self._processing = self._overriding("before_process_message")
        self._processed = tuple(reversed(self._overriding("after_process_message")))

    def _overriding(self, hook: str) -> tuple[Middleware, ...]:
        base = getattr(Middleware, hook)
        return tuple(m for m in self.middleware if getattr(type(m), hook) is not base)

    def before_dispatch_message(self, host: Host, delivery: Delivery) -> None:
        for m in self._dispatching:
            m.before_dispatch_message(host, delivery)

    def before_process_message(self, host: Host, actor: Actor, delivery: Delivery) -> None:
        for m in self._processing:
            m.before_process_message(host, actor, delivery)

    def after_process_message(
        self, host: Host, actor: Actor, delivery: Delivery, *, exception: BaseException | None
    ) -> None:
        for m in self._processed:
            m.after_process_message(host, actor, delivery, exception=exception)

    def before(self, hook: Callable[[Middleware], None]) -> None:
        """Call ``hook`` on each middleware in order: ``before_*`` hooks and ``reject_message``."""
        for m in self.middleware:
            hook(m)

    def after(self, hook: Callable[[Middleware], None]) -> None:
        """Call ``hook`` on each middleware in reverse order: ``after_*`` hooks."""
        for m in self._reversed:
            hook(m)

    def maintain(self, host: Host) -> None:
        for m in self.middleware:
            try:
                m.maintain(host)
            except Exception as exc:  # noqa: BLE001 - maintenance must outlive a Redis hiccup
                log.error("maintenance step failed", middleware=type(m).__name__, error=repr(exc))
