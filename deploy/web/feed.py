"""What the live view shows, kept current from the bus.

``TownFeed`` tails the world's topics (``town.ticks``, ``town.events``) and the registry's
``registry.audit`` with plain stream reads (no consumer group: it neither holds back the topics'
trimming nor takes messages from anyone), and asks ``world`` and ``clock`` for the town's state
after each tick (at most ``max_refresh_rate`` times a second, and every ``refresh_interval``
seconds regardless, so pauses and speed changes show). Every change bumps a sequence number that
HTTP handlers wait on (``wait``), so Server-Sent Events streams wake exactly when there is news.

Only this module's threads touch the bus: HTTP handler threads read the cached, already
serialised views.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from actors.bus import AskTimeoutError, Bus, RemoteError
from actors.bus._transport import StreamEntry
from actors.roles.registry import AUDIT_TOPIC
from actors.town import EVENTS_TOPIC, TICKS_TOPIC
from actors.town.clock import CLOCK
from messages import Envelope
from messages.probes import AuditRecord
from messages.town import (
    ClockStatus,
    GetClockStatus,
    GetTownState,
    TickCompleted,
    TownEvent,
    TownStateView,
)
from world import TownDefinition, sim_time

log = structlog.get_logger("auratown.web")

_BATCH = 500


@dataclass(frozen=True)
class Item:
    """One feed line (an event or an audited probe call) with the sequence number it arrived at."""

    seq: int
    data: dict[str, Any]


def town_json(definition: TownDefinition) -> dict[str, Any]:
    """The town's fixed facts the map needs: grid, locations, agents (public profile only)."""
    return {
        "name": definition.name,
        "width": definition.width,
        "height": definition.height,
        "locations": [
            {
                "name": loc.name,
                "type": loc.type,
                "x": loc.x,
                "y": loc.y,
                "width": loc.width,
                "height": loc.height,
                "owner": loc.owner,
                "description": loc.description,
                "opening_hours": list(loc.opening_hours) if loc.opening_hours else None,
            }
            for loc in definition.locations
        ],
        "agents": [
            {"name": a.name, "slug": a.slug, "age": a.age, "occupation": a.occupation, "home": a.home}
            for a in definition.agents
        ],
    }


def public_state(state: dict[str, Any]) -> dict[str, Any]:
    """The operator's state view with every agent's private state removed."""
    out = dict(state)
    out["agents"] = [{**a, "private": None} for a in state.get("agents", [])]
    return out


class TownFeed:
    """The live view's data: the town, its latest state, recent events and probe calls."""

    def __init__(
        self,
        bus: Bus,
        definition: TownDefinition,
        *,
        keep_events: int = 200,
        keep_audit: int = 200,
        refresh_interval: float = 2.0,
        max_refresh_rate: float = 10.0,
        ask_timeout: float = 5.0,
    ) -> None:
        self.bus = bus
        self.definition = definition
        self.town = town_json(definition)
        self.refresh_interval = refresh_interval
        self.min_refresh_gap = 1.0 / max_refresh_rate
        self.ask_timeout = ask_timeout
        self._cond = threading.Condition()
        self._seq = 0
        self._events: deque[Item] = deque(maxlen=keep_events)
        self._event_ids: set[int] = set()
        self._audit: deque[Item] = deque(maxlen=keep_audit)
        self._state: dict[str, Any] | None = None
        self._state_json: tuple[bytes, bytes] | None = None  # (public, operator)
        self._clock: dict[str, Any] | None = None
        self._last_tick: dict[str, Any] | None = None
        self._errors: dict[str, str] = {}
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._next_clock_ask = 0.0

    # ------------------------------------------------------------------ life cycle

    def start(self) -> TownFeed:
        tails: list[tuple[str, Callable[[Envelope], None]]] = [
            (TICKS_TOPIC, self._on_tick),
            (EVENTS_TOPIC, self._on_event),
            (AUDIT_TOPIC, self._on_audit),
        ]
        for topic, handler in tails:
            self._spawn(f"live-view-{topic}", functools.partial(self._tail, topic, handler))
        self._spawn("live-view-state", self._refresher)
        return self

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._dirty.set()
        with self._cond:
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    # ------------------------------------------------------------------ reading (HTTP threads)

    @property
    def seq(self) -> int:
        with self._cond:
            return self._seq

    def wait(self, after: int, timeout: float) -> int:
        """Block until the sequence number passes ``after`` (or the timeout, or stop); return it."""
        with self._cond:
            self._cond.wait_for(lambda: self._seq > after or self._stop.is_set(), timeout)
            return self._seq

    def state_json(self, *, operator: bool) -> bytes:
        with self._cond:
            cached = self._state_json
            extra = {"clock": self._clock, "last_tick": self._last_tick, "errors": dict(self._errors)}
        if cached is None:
            return _dumps({"operator": operator, **extra, "state": None})
        body = cached[1] if operator else cached[0]
        # The state is serialised once per change; the envelope around it is small.
        head = _dumps({"operator": operator, **extra})
        return head[:-1] + b',"state":' + body + b"}"

    def events(self, after: int = 0, limit: int | None = None) -> list[Item]:
        with self._cond:
            items = [i for i in self._events if i.seq > after]
        return items[-limit:] if limit else items

    def audit(self, after: int = 0, limit: int | None = None) -> list[Item]:
        with self._cond:
            items = [i for i in self._audit if i.seq > after]
        return items[-limit:] if limit else items

    def status(self) -> dict[str, Any]:
        with self._cond:
            return {
                "seq": self._seq,
                "tick": self._state["tick"] if self._state else None,
                "events": len(self._events),
                "audit": len(self._audit),
                "errors": dict(self._errors),
            }

    # ------------------------------------------------------------------ updating (feed threads)

    def _bump(self) -> int:
        """Caller holds ``_cond``."""
        self._seq += 1
        self._cond.notify_all()
        return self._seq

    def _tail(self, topic: str, handler: Callable[[Envelope], None]) -> None:
        """Read ``topic`` from its start (the backlog, of which only the last entries are
        decoded), then follow it; on a transport error, wait and carry on where it was."""
        stream = self.bus.keys.topic(topic)
        last = "0-0"
        backlog: deque[StreamEntry] | None = deque(maxlen=max(self._events.maxlen or 0, 200))
        backoff = 0.2
        while not self._stop.is_set():
            try:
                entries = self.bus.transport.read(
                    stream, last, count=_BATCH, block_ms=None if backlog is not None else 500
                )
            except Exception as exc:  # noqa: BLE001 - a Redis restart, a dropped connection: retry
                self._error(topic, f"{type(exc).__name__}: {exc}")
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            backoff = 0.2
            self._error(topic, None)
            if entries:
                last = entries[-1].entry_id
            if backlog is not None:
                backlog.extend(entries)
                if len(entries) == _BATCH:
                    continue
                entries, backlog = list(backlog), None  # caught up: decode what is kept
            for entry in entries:
                env = self.bus.decode_entry(entry)
                if env is not None:
                    try:
                        handler(env)
                    except Exception:  # a bad payload must not stop the feed
                        log.exception("live view could not use an entry", topic=topic)

    def _on_tick(self, env: Envelope) -> None:
        if not isinstance(env.payload, TickCompleted):
            return
        tick = env.payload
        with self._cond:
            if self._last_tick is None or tick.tick >= self._last_tick["tick"]:
                self._last_tick = {
                    "tick": tick.tick,
                    "day": tick.day,
                    "time": tick.time,
                    "missed": list(tick.missed),
                    "conversations": tick.conversations,
                    "events": len(tick.events),
                    "wall_time": env.wall_time,
                }
                self._bump()
        self._dirty.set()

    def _on_event(self, env: Envelope) -> None:
        if not isinstance(env.payload, TownEvent):
            return
        event = env.payload
        with self._cond:
            if event.id in self._event_ids:
                return  # announced again (a tick taken over after a crash)
            if len(self._events) == self._events.maxlen:
                self._event_ids.discard(self._events[0].data["id"])
            self._event_ids.add(event.id)
            t = sim_time(event.tick)
            data = {**event.model_dump(mode="json"), "day": t.day, "time": t.hhmm, "wall_time": env.wall_time}
            self._events.append(Item(self._seq + 1, data))
            self._bump()
        self._dirty.set()

    def _on_audit(self, env: Envelope) -> None:
        if not isinstance(env.payload, AuditRecord):
            return
        data = {**env.payload.model_dump(mode="json"), "wall_time": env.wall_time, "sender": env.sender}
        with self._cond:
            self._audit.append(Item(self._seq + 1, data))
            self._bump()

    def _error(self, source: str, error: str | None) -> None:
        with self._cond:
            if self._errors.get(source) == error:
                return
            if error is None:
                self._errors.pop(source, None)
            else:
                log.warning("live view source failing", source=source, error=error)
                self._errors[source] = error
            self._bump()

    def _refresher(self) -> None:
        while not self._stop.is_set():
            self._dirty.wait(self.refresh_interval)
            self._dirty.clear()
            if self._stop.is_set():
                return
            started = time.monotonic()
            self.refresh()
            # Coalesce bursts (a town stepping at full speed): at most max_refresh_rate asks a second.
            self._stop.wait(max(0.0, self.min_refresh_gap - (time.monotonic() - started)))

    def refresh(self) -> None:
        """Ask the world (and, now and then, the clock) for the current state."""
        changed = False
        try:
            reply = self.bus.ask(
                "world", GetTownState(include_private=True, events=0), timeout=self.ask_timeout
            )
        except (AskTimeoutError, RemoteError) as exc:
            self._error("world", str(exc))
        except Exception as exc:  # noqa: BLE001 - a broken connection: the next refresh tries again
            self._error("world", f"{type(exc).__name__}: {exc}")
        else:
            if isinstance(reply, TownStateView):
                self._error("world", None)
                state = reply.model_dump(mode="json")
                del state["events"]
                with self._cond:
                    if state != self._state:
                        self._state = state
                        self._state_json = (_dumps(public_state(state)), _dumps(state))
                        changed = True
        now = time.monotonic()
        if now >= self._next_clock_ask:
            self._next_clock_ask = now + self.refresh_interval
            try:
                status = self.bus.ask(CLOCK, GetClockStatus(), timeout=min(2.0, self.ask_timeout))
            except Exception as exc:  # noqa: BLE001 - as for the world
                # No clock hosted anywhere (a town split by role): ask again much later.
                self._next_clock_ask = now + 10 * self.refresh_interval
                self._error("clock", f"{type(exc).__name__}: {exc}")
            else:
                if isinstance(status, ClockStatus):
                    self._error("clock", None)
                    clock = status.model_dump(mode="json")
                    with self._cond:
                        if clock != self._clock:
                            self._clock = clock
                            changed = True
        if changed:
            with self._cond:
                self._bump()

    def request_refresh(self) -> None:
        self._dirty.set()


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
