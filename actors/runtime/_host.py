"""A host process: pykka actors bound to bus addresses, fed by one reader per consumer group.

The reader pulls entries, dead-letters what cannot be decoded, and hands the rest to the local
actor of the entry's address. The actor's handler runs in the actor's own thread; its effects and
the acknowledgement are committed together. A maintenance thread renews the claim on entries
still being worked on, reclaims entries that dead consumers left pending, announces the process's
presence, restarts dead actors and trims acknowledged entries.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

import pykka
import structlog

from actors.bus import (
    INBOX_GROUP,
    Ack,
    Bus,
    Commit,
    CommitResult,
    Delivery,
    Subscription,
)
from actors.runtime._actor import Actor, Context, PermanentError
from actors.runtime._committer import Committer
from actors.runtime._pool import CellDeadError, Mailbox, WorkerPool
from actors.runtime._scheduler import Scheduler
from actors.runtime.metrics import HandlerLatency
from messages import EncodeError

log = structlog.get_logger("auratown.runtime")

ActorFactory = Callable[[], Actor]

_LIVE_HERE: set[str] = set()
"""Process ids of the hosts running in this OS process (a test may run several): another process
id announced with this pid is an earlier incarnation, not a sibling."""
_LIVE_HERE_LOCK = threading.Lock()
ORPHAN_IDLE_MS = 2000
"""An entry pending under this host's own name, idle this long and not in its hands, is orphaned."""


def _pid_gone(pid: object) -> bool:
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


class ActorCrashedError(Exception):
    """A handler raised a BaseException: the actor is stopped and its supervisor restarts it."""


class HostError(RuntimeError):
    """Misuse of a host (spawning an address twice, starting twice)."""


class _Phase(Enum):
    QUEUED = "queued"
    RUNNING = "running"
    CANCELLED = "cancelled"
    RETRY_WAIT = "retry_wait"
    COMMITTING = "committing"


@dataclass
class _InFlight:
    delivery: Delivery
    phase: _Phase = _Phase.QUEUED


class _CellRef(Protocol):
    """Where a bound actor runs: its own pykka thread, or a mailbox on the host's worker pool."""

    def tell(self, batch: list[Delivery]) -> None: ...

    def is_alive(self) -> bool: ...

    def stop(self, *, timeout: float | None) -> None: ...


@dataclass
class _Binding:
    address: str
    factory: ActorFactory
    topics: tuple[str, ...]
    pooled: bool = False
    subscriptions: list[Subscription] = field(default_factory=list)
    ref: _CellRef | None = None
    restarts: collections.deque[float] = field(default_factory=collections.deque)
    given_up: bool = False


@dataclass(frozen=True)
class HostConfig:
    fetch_count: int = 64
    block_ms: int = 250
    max_in_flight: int = 256
    """Entries this process holds at once; more would starve other processes of the same address."""
    visibility_timeout: float = 30.0
    """Seconds an entry may stay unrenewed before another process reclaims it."""
    heartbeat_every: float = 2.0
    drain_timeout: float = 10.0
    retry_backoff: float = 0.05
    retry_backoff_max: float = 5.0
    restart_limit: int = 5
    restart_window: float = 60.0
    trim_every: float = 30.0
    pool_size: int = 4
    """Worker threads shared by the pooled actors (``Actor.pooled``). Handlers that wait on the
    network (model calls) want more; CPU-bound ones gain nothing beyond a few, with the GIL."""

    @property
    def renew_every(self) -> float:
        return self.visibility_timeout / 3

    @property
    def reclaim_every(self) -> float:
        return max(0.05, self.visibility_timeout / 2)


class _Cell(pykka.ThreadingActor):
    """The pykka actor around one ``Actor``: catches everything a handler raises."""

    def __init__(self, host: Host, binding: _Binding) -> None:
        super().__init__()
        self.host = host
        self.binding = binding
        self.actor = binding.factory()

    def on_start(self) -> None:
        try:
            self.host._start_actor(self.actor, self.binding)
        except Exception as exc:
            # pykka stops an actor whose on_start fails without calling on_failure
            self.host._actor_died(self.binding, exc)
            raise

    def on_receive(self, message: Any) -> Any:
        # The reader hands over all of a fetch's entries for this address at once: one handoff.
        self.host._run_batch(self.actor, self.binding, message, more=not self.actor_inbox.empty())
        return None

    def on_failure(self, exception_type: Any, exception_value: Any, tb: Any) -> None:
        self.host._actor_died(self.binding, exception_value)

    def on_stop(self) -> None:
        self.actor.on_stop()


class _OwnThread:
    """A ``_CellRef`` for an actor on its own pykka thread."""

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


class Host:
    """Runs actors bound to bus addresses in this process."""

    def __init__(self, bus: Bus, config: HostConfig | None = None, *, name: str = "host") -> None:
        self.bus = bus
        self.config = config or HostConfig()
        self.name = name
        self._bindings: dict[str, _Binding] = {}
        self._groups: dict[str, list[Subscription]] | None = None
        self._in_flight: dict[tuple[str, str], _InFlight] = {}
        self._cv = threading.Condition()
        self._stopping = threading.Event()
        self._started = False
        self._readers: dict[str, threading.Thread] = {}
        self._maintenance: threading.Thread | None = None
        self._wake_maintenance = threading.Event()
        self._to_restart: set[str] = set()
        self._scheduler: Scheduler | None = None
        self._committer: Committer | None = None
        self._readers_waiting = 0
        self._batch_room = min(self.config.fetch_count, max(1, self.config.max_in_flight // 2))
        self._control = bus.subscribe_control()
        self._pool = WorkerPool(self.config.pool_size, name=f"actors-{name}")
        self.handler_latency = HandlerLatency()
        self.started_at = time.time()

    # ------------------------------------------------------------------ setup

    @property
    def addresses(self) -> list[str]:
        return sorted(self._bindings)

    def spawn(
        self,
        factory: ActorFactory | type[Actor],
        address: str,
        *,
        topics: tuple[str, ...] | None = None,
        pooled: bool | None = None,
    ) -> None:
        """Bind a new actor (made by ``factory``) to ``address``; it starts reading at once if running.

        ``topics`` and ``pooled`` default to the actor class's own (for a class given as the
        factory; for another factory, to none and to its own thread).
        """
        if address in self._bindings:
            raise HostError(f"address {address!r} is already hosted here")
        actor_class = factory if isinstance(factory, type) and issubclass(factory, Actor) else None
        if topics is None:
            topics = actor_class.topics if actor_class is not None else ()
        if pooled is None:
            pooled = actor_class.pooled if actor_class is not None else False
        binding = _Binding(address, factory, tuple(topics), pooled=pooled)
        binding.subscriptions.append(self.bus.subscribe_inbox(address))
        for topic in binding.topics:
            binding.subscriptions.append(self.bus.subscribe_topic(topic, address))
        binding.ref = self._start_cell(binding)
        with self._cv:
            self._bindings[address] = binding
            self._groups = None
        if self._started:
            self._ensure_readers()
            self._wake_inbox_reader()
            self._heartbeat()

    def start(self) -> Host:
        if self._started:
            raise HostError("host already started")
        self._started = True
        self._scheduler = Scheduler(f"retries-{self.bus.process_id}")
        if self.bus.transport.batches_commits:
            self._committer = Committer(self.bus, self._finish, name=f"committer-{self.name}")
        with _LIVE_HERE_LOCK:
            _LIVE_HERE.add(self.bus.process_id)
        self._heartbeat()
        self._ensure_readers()
        self._maintenance = threading.Thread(
            target=self._maintain, name=f"maintenance-{self.name}", daemon=True
        )
        self._maintenance.start()
        log.info("host started", process_id=self.bus.process_id, addresses=self.addresses)
        return self

    def __enter__(self) -> Host:
        return self.start() if not self._started else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ reading

    def _subscriptions_by_group(self) -> dict[str, list[Subscription]]:
        """Built again only when the bindings change: a reader asks before every fetch."""
        with self._cv:
            if self._groups is None:
                groups: dict[str, list[Subscription]] = {INBOX_GROUP: [self._control]}
                for b in self._bindings.values():
                    if not b.given_up:
                        for sub in b.subscriptions:
                            groups.setdefault(sub.group, []).append(sub)
                self._groups = groups
            return self._groups

    def _ensure_readers(self) -> None:
        for group in self._subscriptions_by_group():
            if group not in self._readers:
                t = threading.Thread(target=self._read, args=(group,), name=f"reader-{group}", daemon=True)
                self._readers[group] = t
                t.start()

    def _wake_inbox_reader(self) -> None:
        self.bus.transport.add(self._control.stream, {"wake": b"1"})

    def _capacity(self) -> int:
        """Room for a whole batch: a reader woken for every finished message would read one
        entry per round trip once the window is full."""
        cfg = self.config
        with self._cv:
            while not self._stopping.is_set() and cfg.max_in_flight - len(self._in_flight) < self._batch_room:
                self._readers_waiting += 1
                try:
                    self._cv.wait(0.5)
                finally:
                    self._readers_waiting -= 1
            return cfg.max_in_flight - len(self._in_flight)

    def _read(self, group: str) -> None:
        while not self._stopping.is_set():
            capacity = self._capacity()
            if self._stopping.is_set():
                return
            subs = self._subscriptions_by_group().get(group, [])
            try:
                deliveries = self.bus.fetch(
                    subs, count=min(capacity, self.config.fetch_count), block_ms=self.config.block_ms
                )
            except Exception as exc:  # noqa: BLE001 - the reader outlives a broken connection
                if self._stopping.is_set():
                    return
                log.error("reader fetch failed; retrying", group=group, error=repr(exc))
                self._stopping.wait(0.5)
                continue
            self._dispatch(deliveries)

    def _dispatch(self, deliveries: list[Delivery]) -> None:
        """Route fetched entries: dead-letter the undecodable, hand each actor its batch."""
        batches: dict[str, list[Delivery]] = {}
        for d in deliveries:
            if d.subscription.control:
                # A wake-up, not a message: acknowledged, never dispatched.
                self.bus.transport.commit(Commit(ack=Ack(d.stream, d.group, d.entry_id)))
            elif d.error is not None:
                self.bus.dead_letter(d, d.error.reason, d.error.detail)
            elif d.attempt > self.bus.max_attempts:
                self.bus.dead_letter(
                    d, "max_attempts", f"delivered {d.attempt} times without being acknowledged"
                )
            else:
                batches.setdefault(d.address, []).append(d)
        if not batches:
            return
        send: list[tuple[_Binding, list[Delivery]]] = []
        back: list[Delivery] = []
        with self._cv:
            for address, batch in batches.items():
                binding = self._bindings.get(address)
                if binding is None or binding.given_up or binding.ref is None or self._stopping.is_set():
                    back.extend(batch)
                    continue
                fresh = [d for d in batch if d.key not in self._in_flight]  # not our own reclaimed entry
                for d in fresh:
                    self._in_flight[d.key] = _InFlight(d)
                if fresh:
                    send.append((binding, fresh))
        for d in back:
            self.bus.hand_back(d)
        for binding, batch in send:
            assert binding.ref is not None
            try:
                binding.ref.tell(batch)
            except CellDeadError:
                # Stays queued in flight: the supervisor's restart dispatches it to the new actor.
                log.info("actor died before its deliveries reached it", actor=binding.address)

    # ------------------------------------------------------------------ handling (actor thread)

    def _start_cell(self, binding: _Binding) -> _CellRef:
        if not binding.pooled:
            return _OwnThread(_Cell.start(self, binding))
        actor = binding.factory()
        mailbox = Mailbox(
            self._pool,
            start=lambda: self._start_actor(actor, binding),
            handle=lambda batch, more: self._run_batch(actor, binding, batch, more=more),
            stop=actor.on_stop,
            on_death=lambda exc: self._actor_died(binding, exc),
        )
        mailbox.begin()
        return mailbox

    def _start_actor(self, actor: Actor, binding: _Binding) -> None:
        actor.load_state(self.bus.load_state(binding.address))
        actor.on_start(binding.address, self.bus)

    def _run_batch(self, actor: Actor, binding: _Binding, batch: list[Delivery], *, more: bool) -> None:
        last = len(batch) - 1
        for i, d in enumerate(batch):
            self._run(actor, binding, d, backlog=i < last or more)

    def _begin(self, d: Delivery) -> bool:
        with self._cv:
            item = self._in_flight.get(d.key)
            if item is None or item.phase is not _Phase.QUEUED:
                return False
            item.phase = _Phase.RUNNING
            return True

    def _finish(self, d: Delivery) -> None:
        with self._cv:
            self._in_flight.pop(d.key, None)
            # Wake waiters only when it matters: a reader needs a batch's room, a drain needs empty.
            if self._stopping.is_set() or (
                self._readers_waiting and self.config.max_in_flight - len(self._in_flight) >= self._batch_room
            ):
                self._cv.notify_all()

    def _run(self, actor: Actor, binding: _Binding, d: Delivery, *, backlog: bool = False) -> None:
        if not self._begin(d):
            return
        env = d.envelope
        assert env is not None
        address = binding.address
        finished = True
        with structlog.contextvars.bound_contextvars(
            message_id=env.id,
            correlation_id=env.correlation_id,
            actor=address,
            sim_time=env.sim_time,
            message_type=env.type,
            attempt=d.attempt,
        ):
            try:
                if env.deadline is not None and self.bus.clock() > env.deadline:
                    # Nobody waits for the answer any more: acknowledge without running the handler.
                    self.bus.count("expired")
                    self.bus.complete(d)
                    log.info("message expired before handling")
                    return
                ctx = Context(self.bus, address, env)
                started = time.perf_counter()
                try:
                    try:
                        result = actor.dispatch(ctx, env.payload)
                    finally:
                        self.handler_latency.observe(type(actor).__name__, time.perf_counter() - started)
                except PermanentError as exc:
                    self._reload(actor, address)
                    self.bus.dead_letter(d, exc.reason, f"{type(exc).__name__}: {exc}")
                    return
                except Exception as exc:
                    log.error("handler failed", error=repr(exc), exc_info=True)
                    self._reload(actor, address)
                    finished = self._failed(d, exc)
                    return
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:
                    log.error("handler raised a BaseException; stopping the actor", error=repr(exc))
                    finished = self._failed(d, exc)
                    raise ActorCrashedError(f"{address}: {exc!r}") from exc
                if result is not None and env.reply_to is not None and not ctx.replied:
                    ctx.reply(result)
                try:
                    finished = self._commit(actor, address, d, ctx, backlog=backlog)
                except EncodeError as exc:
                    # What the handler produced cannot go on the wire (e.g. an integer beyond 64
                    # bits it accepted as a numeric string): a poison message, not an actor crash
                    # that would come back with every redelivery until the actor is given up.
                    self._reload(actor, address)
                    self.bus.dead_letter(d, "unencodable", f"{type(exc).__name__}: {exc}")
            finally:
                if finished:
                    self._finish(d)

    def _reload(self, actor: Actor, address: str) -> None:
        """A failed handler may have changed the actor's state half-way: go back to the stored one."""
        if type(actor).save_state is not Actor.save_state:  # a stateful actor
            try:
                actor.load_state(self.bus.load_state(address))
            except Exception as exc:  # noqa: BLE001 - the retry reloads again
                log.error("could not reload state after a failure", error=repr(exc))

    def _commit(self, actor: Actor, address: str, d: Delivery, ctx: Context, *, backlog: bool) -> bool:
        """Acknowledge with the handler's effects; returns False if the committer finishes it.

        With messages waiting, here or at other actors of this host, commits go to the committer
        (many per round trip: a thousand actors with one message each must not make a thousand
        round trips from a thousand threads). When the host is idle, the actor commits itself (one
        fewer thread hop), which keeps the order since nothing is queued.
        """
        state = actor.save_state()
        commit = self.bus.completion(d, ctx.outgoing, state=state, dedupe=actor.idempotent)
        if self._committer is None or (not backlog and self._committer.idle and self._alone(d)):
            outcome = self.bus.apply(commit, d, sent=len(ctx.outgoing))
            finished = True
        else:
            with self._cv:
                item = self._in_flight.get(d.key)
                if item is not None:
                    item.phase = _Phase.COMMITTING
            future = self._committer.submit(commit, d, sent=len(ctx.outgoing))
            finished = False
            if state is None:
                return finished  # a stateless actor need not wait: go on with the next message
            try:
                outcome = future.result()
            except Exception:  # noqa: BLE001 - unknown whether it applied: trust only the store
                outcome = CommitResult.STALE
        if outcome is not CommitResult.APPLIED and state is not None:
            # Our in-memory state ran ahead of what was committed: take the stored one.
            actor.load_state(self.bus.load_state(address))
        return finished

    def _alone(self, d: Delivery) -> bool:
        """``d`` is the only delivery this host is working on."""
        with self._cv:
            return len(self._in_flight) <= 1

    def _failed(self, d: Delivery, exc: BaseException) -> bool:
        """Retry later or dead-letter; returns False while a retry is pending (still in flight)."""
        detail = f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exception(exc)[-3:])
        if d.attempt >= self.bus.max_attempts:
            self.bus.dead_letter(d, "handler_error", detail)
            return True
        delay = min(self.config.retry_backoff_max, self.config.retry_backoff * 2 ** (d.attempt - 1))
        with self._cv:
            item = self._in_flight.get(d.key)
            if item is not None:
                item.phase = _Phase.RETRY_WAIT
        assert self._scheduler is not None

        def requeue() -> None:
            try:
                self.bus.requeue(d)
            finally:
                self._finish(d)

        self._scheduler.call_later(delay, requeue)
        return False

    # ------------------------------------------------------------------ supervision

    def _actor_died(self, binding: _Binding, exc: BaseException | None) -> None:
        if self._stopping.is_set():
            return
        log.error("actor died", actor=binding.address, error=repr(exc))
        with self._cv:
            self._to_restart.add(binding.address)
        self._wake_maintenance.set()

    def _restart(self, address: str) -> None:
        with self._cv:
            binding = self._bindings.get(address)
        if binding is None or self._stopping.is_set():
            return
        now = time.monotonic()
        while binding.restarts and now - binding.restarts[0] > self.config.restart_window:
            binding.restarts.popleft()
        if len(binding.restarts) >= self.config.restart_limit:
            self._give_up(binding)
            return
        binding.restarts.append(now)
        binding.ref = self._start_cell(binding)
        with self._cv:
            again = [
                i
                for i in self._in_flight.values()
                if i.delivery.address == address and i.phase in (_Phase.QUEUED, _Phase.RUNNING)
            ]
            for item in again:
                item.phase = _Phase.QUEUED
        if again:
            try:
                binding.ref.tell([item.delivery for item in again])
            except CellDeadError:
                log.info("restarted actor died before its deliveries reached it", actor=address)
        self.bus.count("restarts")
        log.warning("actor restarted", actor=address, restarts=len(binding.restarts), redispatched=len(again))

    def _give_up(self, binding: _Binding) -> None:
        with self._cv:
            binding.given_up = True
            self._groups = None
        log.error(
            "actor keeps dying; no more restarts, its messages are handed back",
            actor=binding.address,
            limit=self.config.restart_limit,
            window=self.config.restart_window,
        )
        with self._cv:
            back = [
                i
                for i in self._in_flight.values()
                if i.delivery.address == binding.address and i.phase in (_Phase.QUEUED, _Phase.RUNNING)
            ]
            for item in back:
                item.phase = _Phase.CANCELLED
        for item in back:
            self.bus.hand_back(item.delivery)
            self._finish(item.delivery)
        self.bus.count("gave_up")

    def alive(self, address: str) -> bool:
        b = self._bindings.get(address)
        return bool(b and b.ref and b.ref.is_alive())

    # ------------------------------------------------------------------ maintenance

    def _heartbeat(self) -> None:
        ttl = int(self.config.heartbeat_every * 5 * 1000)
        self.bus.heartbeat(
            {
                "name": self.name,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "started": self.started_at,
                "addresses": self.addresses,
                "in_flight": len(self._in_flight),
            },
            ttl_ms=ttl,
        )
        reply_stream = self.bus.keys.inbox(self.bus.reply_address)
        if self.bus.transport.exists(reply_stream):
            self.bus.transport.expire(reply_stream, ttl * 60)

    def _maintain(self) -> None:
        cfg = self.config
        next_at = {
            "renew": 0.0,
            "reclaim": 0.0,
            "heartbeat": 0.0,
            "sweep": 0.0,
            "trim": time.monotonic() + cfg.trim_every,
        }
        while not self._stopping.is_set():
            self._wake_maintenance.wait(0.1)
            self._wake_maintenance.clear()
            if self._stopping.is_set():
                return
            try:
                self._maintain_once(next_at)
            except Exception as exc:  # noqa: BLE001 - maintenance must outlive a Redis hiccup
                log.error("maintenance step failed", error=repr(exc))

    def _maintain_once(self, next_at: dict[str, float]) -> None:
        cfg = self.config
        with self._cv:
            restart = list(self._to_restart)
            self._to_restart.clear()
        for address in restart:
            self._restart(address)
        now = time.monotonic()
        if now >= next_at["renew"]:
            next_at["renew"] = now + cfg.renew_every
            with self._cv:
                held = [i.delivery for i in self._in_flight.values() if i.phase is not _Phase.CANCELLED]
            self.bus.renew(held)
        if now >= next_at["heartbeat"]:
            next_at["heartbeat"] = now + cfg.heartbeat_every
            self._heartbeat()
            self.bus.sweep_reply_lanes()
            self._take_over()
        if now >= next_at["sweep"]:
            next_at["sweep"] = now + cfg.heartbeat_every * 5
            self.bus.sweep_dead_processes()
        if now >= next_at["reclaim"]:
            next_at["reclaim"] = now + cfg.reclaim_every
            self._reclaim()
        if now >= next_at["trim"]:
            next_at["trim"] = now + cfg.trim_every
            for subs in self._subscriptions_by_group().values():
                for sub in subs:
                    self.bus.transport.trim_acknowledged(sub.stream)
            self.bus.trim_dead_letters()  # their retention by age, with no new dead letter too

    # ------------------------------------------------------------------ takeover

    def _dead_consumers(self) -> dict[str, tuple[int, bool]]:
        """Consumers known to be dead, each with the idle time (ms) its entries need before they
        are taken: 0 for a process of this machine that has ended (this host's own predecessor,
        killed and restarted: its pid is gone, or it is this very pid under another process id),
        two heartbeats for one whose presence expired (another machine's); and whether it read
        nothing this host does not read (so this host may forget it once it took over)."""
        me, here = self.bus.process_id, socket.gethostname()
        with _LIVE_HERE_LOCK:
            siblings = set(_LIVE_HERE)
        ours = set(self.addresses)
        dead: dict[str, tuple[int, bool]] = {}
        for p in self.bus.processes():
            if p.process_id == me or p.process_id in siblings:
                continue
            pid = p.info.get("pid")
            covered = set(p.info.get("addresses", ())) <= ours
            if p.info.get("host") == here and (pid == os.getpid() or _pid_gone(pid)):
                dead[p.process_id] = (0, covered)
            elif not p.alive:
                dead[p.process_id] = (int(self.config.heartbeat_every * 2 * 1000), covered)
        return dead

    def _take_over(self) -> None:
        """Claim at once what dead consumers left pending, instead of waiting out the visibility
        timeout; then forget them (presence, consumer names) once nothing of theirs is left.

        Entries pending under this host's own name that it is not working on are taken again too:
        Redis restarted from an AOF that ends before their acknowledgement (a lost tail) shows
        them pending, and nobody else would look at them before the visibility timeout."""
        dead = self._dead_consumers()
        if self._stopping.is_set():
            return
        me = self.bus.process_id
        left: set[str] = set()
        for sub in self.subscriptions():
            rows = self.bus.transport.pending(sub.stream, sub.group, count=1000)
            theirs = [r for r in rows if r.consumer in dead]
            ready = [r.entry_id for r in theirs if r.idle_ms >= dead[r.consumer][0]]
            left.update(r.consumer for r in theirs if r.idle_ms < dead[r.consumer][0])
            mine = [r for r in rows if r.consumer == me and r.idle_ms >= ORPHAN_IDLE_MS]
            if mine:
                with self._cv:
                    ready += [r.entry_id for r in mine if (sub.stream, r.entry_id) not in self._in_flight]
            room = self.config.max_in_flight - self.in_flight()
            if len(ready) > room or len(rows) >= 1000:
                left.update(dead)  # more than this round can hold: the next one goes on
                ready = ready[: max(0, room)]
            if ready:
                entries = self.bus.transport.claim(sub.stream, sub.group, self.bus.process_id, ready)
                self.bus.count("taken_over", len(entries))
                log.warning(
                    "took over pending entries nobody works on",
                    stream=sub.stream,
                    n=len(entries),
                    consumers=sorted({r.consumer for r in rows if r.entry_id in ready}),
                )
                self._dispatch([self.bus.to_delivery(sub, e) for e in entries])
        done = {p for p in set(dead) - left if dead[p][1]}
        for process_id in done:
            for sub in self.subscriptions():
                self.bus.transport.delete_consumer(sub.stream, sub.group, process_id)
            self.bus.transport.delete(self.bus.keys.alive(process_id))
        if done:
            self.bus.sweep_dead_processes()

    def _reclaim(self) -> None:
        min_idle = int(self.config.visibility_timeout * 1000)
        for subs in self._subscriptions_by_group().values():
            for sub in subs:
                if sub.control or self._stopping.is_set():
                    continue
                room = self.config.max_in_flight - len(self._in_flight)
                if room <= 0:
                    return
                self._dispatch(self.bus.reclaim(sub, min_idle_ms=min_idle, count=min(room, 100)))

    # ------------------------------------------------------------------ shutdown

    def subscriptions(self) -> list[Subscription]:
        """The streams this host reads in consumer groups (its control stream left out)."""
        return [s for subs in self._subscriptions_by_group().values() for s in subs if not s.control]

    def in_flight(self) -> int:
        with self._cv:
            return len(self._in_flight)

    def stop(self, drain_timeout: float | None = None) -> bool:
        """Stop reading, hand back unstarted work, drain running handlers, stop actors.

        Returns True if every handler finished in time; otherwise the unfinished entries stay
        pending under this process and another one reclaims them after the visibility timeout.
        """
        if self._stopping.is_set():
            return True
        timeout = self.config.drain_timeout if drain_timeout is None else drain_timeout
        deadline = time.monotonic() + timeout
        self._stopping.set()
        with self._cv:
            self._cv.notify_all()
        if self._started:
            self._wake_inbox_reader()
        for t in self._readers.values():
            t.join(timeout=max(1.0, self.config.block_ms / 1000 * 4))
        with self._cv:
            queued = [i for i in self._in_flight.values() if i.phase is _Phase.QUEUED]
            for item in queued:
                item.phase = _Phase.CANCELLED
        for item in queued:
            try:
                self.bus.hand_back(item.delivery)
            except Exception as exc:  # noqa: BLE001 - left pending, reclaimed later
                log.error("could not hand back an entry", error=repr(exc), entry=item.delivery.entry_id)
            self._finish(item.delivery)
        if self._scheduler is not None:
            self._scheduler.flush_and_stop()
        with self._cv:
            while True:
                running = [
                    i for i in self._in_flight.values() if i.phase in (_Phase.RUNNING, _Phase.COMMITTING)
                ]
                remaining = deadline - time.monotonic()
                if not running or remaining <= 0:
                    break
                self._cv.wait(remaining)
        drained = not running
        if not drained:
            log.warning(
                "drain deadline passed; unfinished entries stay pending for another process",
                unfinished=[i.delivery.describe() for i in running],
            )
        if self._committer is not None:
            self._committer.stop()
        for b in list(self._bindings.values()):
            if b.ref is not None and b.ref.is_alive():
                try:
                    b.ref.stop(timeout=max(0.1, deadline - time.monotonic()) if drained else None)
                except pykka.Timeout:
                    log.warning("actor did not stop in time", actor=b.address)
        self._pool.stop(timeout=max(0.1, deadline - time.monotonic()))
        if self._maintenance is not None:
            self._wake_maintenance.set()
            self._maintenance.join(timeout=2.0)
        with _LIVE_HERE_LOCK:
            _LIVE_HERE.discard(self.bus.process_id)
        try:
            self.bus.leave()
            self.bus.transport.delete(self._control.stream)
        except Exception as exc:  # noqa: BLE001 - presence expires by itself
            log.warning("could not remove presence", error=repr(exc))
        log.info("host stopped", drained=drained, stats=dict(self.bus.stats))
        return drained

    def run_until_signal(self, signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)) -> bool:
        """Start (if needed), serve until SIGTERM/SIGINT, then stop gracefully."""
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            log.info("signal received; stopping", signal=signum)
            stop.set()

        previous = {s: signal.signal(s, on_signal) for s in signals}
        try:
            if not self._started:
                self.start()
            while not stop.wait(0.5):
                pass
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        return self.stop()
