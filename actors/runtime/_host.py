"""A host process: actors bound to bus addresses, fed by one reader per consumer group.

The core loop is small: a reader pulls entries and hands each actor its batch; the actor's handler
runs in the actor's own thread (or a pooled mailbox, ``Actor.pooled``); its effects and the
acknowledgement are committed together; ``stop`` hands back unstarted work, drains the running
handlers and stops the actors; ``run_until_signal`` does that on SIGTERM/SIGINT.

Everything around it is middleware (``actors.runtime._middleware``, after Dramatiq's worker), in
this order: ``Supervision`` (restart a dead actor, give up on one that keeps dying),
``Presence`` (heartbeats, claim renewal, reclaim and take-over of dead consumers' entries),
``Trimming``, ``DeadLetters``, ``Retries``, then the caller's own, then ``HostMetrics`` (handler
timings), closest to the handler. A caller adds middleware with
``Host(bus, config, middleware=[...])``: subclasses of ``Middleware`` overriding the hooks they
need (``before_process_message``, ``after_process_message``, ``reject_message``, ...).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType

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
from actors.runtime._cells import CellRef, start_cell
from actors.runtime._committer import Committer
from actors.runtime._config import HostConfig
from actors.runtime._dead_letters import DeadLetters
from actors.runtime._host_metrics import HostMetrics
from actors.runtime._in_flight import UNFINISHED, InFlight, Phase
from actors.runtime._middleware import Middleware, MiddlewareChain, Rejected
from actors.runtime._pool import CellDeadError, CellHooks, WorkerPool
from actors.runtime._presence import Presence
from actors.runtime._retries import Retries
from actors.runtime._supervision import Supervision
from actors.runtime._trimming import Trimming
from actors.runtime.metrics import HandlerLatency
from messages import EncodeError

log = structlog.get_logger("auratown.runtime")

ActorFactory = Callable[[], Actor]


class ActorCrashedError(Exception):
    """A handler raised a BaseException: the actor is stopped and its supervisor restarts it."""


class HostError(RuntimeError):
    """Misuse of a host (spawning an address twice, starting twice)."""


@dataclass
class _Binding:
    address: str
    factory: ActorFactory
    topics: tuple[str, ...]
    pooled: bool = False
    subscriptions: list[Subscription] = field(default_factory=list)
    ref: CellRef | None = None
    given_up: bool = False


def default_middleware() -> list[Middleware]:
    """The middleware every host runs before the caller's own (``HostMetrics`` comes after it)."""
    return [Supervision(), Presence(), Trimming(), DeadLetters(), Retries()]


class Host:
    """Runs actors bound to bus addresses in this process."""

    def __init__(
        self,
        bus: Bus,
        config: HostConfig | None = None,
        *,
        name: str = "host",
        middleware: Sequence[Middleware] = (),
    ) -> None:
        self.bus = bus
        self.config = config or HostConfig()
        self.name = name
        self.middleware = MiddlewareChain([*default_middleware(), *middleware, HostMetrics()])
        self._bindings: dict[str, _Binding] = {}
        self._groups: dict[str, list[Subscription]] | None = None
        self._in_flight = InFlight(
            self.config.max_in_flight, min(self.config.fetch_count, max(1, self.config.max_in_flight // 2))
        )
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._started = False
        self._readers: dict[str, threading.Thread] = {}
        self._maintenance: threading.Thread | None = None
        self._wake_maintenance = threading.Event()
        self._committer: Committer | None = None
        self._control = bus.subscribe_control()
        self._pool = WorkerPool(self.config.pool_size, name=f"actors-{name}")
        self.handler_latency = HandlerLatency()
        self.started_at = time.time()

    # ------------------------------------------------------------------ setup

    @property
    def addresses(self) -> list[str]:
        return sorted(self._bindings)

    @property
    def started(self) -> bool:
        return self._started

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

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
        with self._lock:
            self._bindings[address] = binding
            self._groups = None
        if self._started:
            self._ensure_readers()
            self._wake_inbox_reader()
        self.middleware.after(lambda m: m.after_actor_spawned(self, address))

    def start(self) -> Host:
        if self._started:
            raise HostError("host already started")
        self._started = True
        if self.bus.transport.batches_commits:
            self._committer = Committer(self.bus, self._in_flight.finish, name=f"committer-{self.name}")
        self.middleware.before(lambda m: m.before_host_boot(self))
        self._ensure_readers()
        self._maintenance = threading.Thread(
            target=self._maintain, name=f"maintenance-{self.name}", daemon=True
        )
        self._maintenance.start()
        self.middleware.after(lambda m: m.after_host_boot(self))
        log.info("host started", process_id=self.bus.process_id, addresses=self.addresses)
        return self

    def __enter__(self) -> Host:
        return self.start() if not self._started else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ reading

    def _subscriptions_by_group(self) -> dict[str, list[Subscription]]:
        """Built again only when the bindings change: a reader asks before every fetch."""
        with self._lock:
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

    def _read(self, group: str) -> None:
        while not self._stopping.is_set():
            capacity = self._in_flight.room(self._stopping.is_set)
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
            self.dispatch(deliveries)

    def dispatch(self, deliveries: list[Delivery]) -> None:
        """Route entries this host claimed (fetched, reclaimed, taken over) to their actors'
        cells, after ``before_dispatch_message``; what no actor here takes is handed back."""
        batches: dict[str, list[Delivery]] = {}
        for d in deliveries:
            if d.subscription.control:
                # A wake-up, not a message: acknowledged, never dispatched.
                self.bus.transport.commit(Commit(ack=Ack(d.stream, d.group, d.entry_id)))
                continue
            if self._admitted(d):
                batches.setdefault(d.address, []).append(d)
        if not batches:
            return
        send: list[tuple[_Binding, list[Delivery]]] = []
        back: list[Delivery] = []
        with self._lock:  # the actor is not given up between the look and the admission
            for address, batch in batches.items():
                binding = self._bindings.get(address)
                if binding is None or binding.given_up or binding.ref is None or self._stopping.is_set():
                    back.extend(batch)
                    continue
                fresh = self._in_flight.admit(batch)
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

    def _admitted(self, d: Delivery) -> bool:
        """No middleware rejected ``d`` (those rejected are settled here)."""
        try:
            self.middleware.before_dispatch_message(self, d)
        except Rejected as rejected:
            self.reject(d, rejected.reason, rejected.detail)
            return False
        return True

    # ------------------------------------------------------------------ handling (actor thread)

    def _start_cell(self, binding: _Binding) -> CellRef:
        actor = binding.factory()
        hooks = CellHooks(
            start=lambda: self._start_actor(actor, binding),
            handle=lambda batch, more: self._run_batch(actor, binding, batch, more=more),
            stop=actor.on_stop,
            on_death=lambda exc: self._actor_died(binding, exc),
        )
        return start_cell(self._pool if binding.pooled else None, hooks)

    def _start_actor(self, actor: Actor, binding: _Binding) -> None:
        actor.load_state(self.bus.load_state(binding.address))
        actor.on_start(binding.address, self.bus)

    def _run_batch(self, actor: Actor, binding: _Binding, batch: list[Delivery], *, more: bool) -> None:
        last = len(batch) - 1
        for i, d in enumerate(batch):
            self._run(actor, binding, d, backlog=i < last or more)

    def _run(self, actor: Actor, binding: _Binding, d: Delivery, *, backlog: bool = False) -> None:
        if not self._in_flight.begin(d):
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
                    self.bus.complete(d)
                    log.info("message expired before handling")
                    self.middleware.after(lambda m: m.after_skip_message(self, d))
                    return
                ctx = Context(self.bus, address, env)
                self.middleware.before_process_message(self, actor, d)
                try:
                    result = actor.dispatch(ctx, env.payload)
                except BaseException as exc:
                    finished = self._handler_failed(actor, address, d, exc)
                    if isinstance(exc, Exception):
                        return
                    raise ActorCrashedError(f"{address}: {exc!r}") from exc
                self.middleware.after_process_message(self, actor, d, exception=None)
                if result is not None and env.reply_to is not None and not ctx.replied:
                    ctx.reply(result)
                try:
                    finished = self._commit(actor, address, d, ctx, backlog=backlog)
                except EncodeError as exc:
                    # What the handler produced cannot go on the wire (e.g. an integer beyond 64
                    # bits it accepted as a numeric string): a poison message, not an actor crash
                    # that would come back with every redelivery until the actor is given up.
                    self._reload(actor, address)
                    self.reject(d, "unencodable", f"{type(exc).__name__}: {exc}")
            finally:
                if finished:
                    self._in_flight.finish(d)

    def _handler_failed(self, actor: Actor, address: str, d: Delivery, exc: BaseException) -> bool:
        """After a handler raised: the middleware decides (retry, reject); a ``PermanentError`` is
        rejected with its reason. Returns False while a middleware holds the delivery."""
        if isinstance(exc, KeyboardInterrupt):
            self.middleware.after_process_message(self, actor, d, exception=exc)
            raise exc
        if isinstance(exc, PermanentError):
            pass
        elif isinstance(exc, Exception):
            log.error("handler failed", error=repr(exc), exc_info=True)
        else:
            log.error("handler raised a BaseException; stopping the actor", error=repr(exc))
        self.middleware.after_process_message(self, actor, d, exception=exc)
        if isinstance(exc, Exception):
            self._reload(actor, address)
        if isinstance(exc, PermanentError):
            self.reject(d, exc.reason, f"{type(exc).__name__}: {exc}")
        return self._in_flight.phase(d) is not Phase.HELD

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
        if self._committer is None or (not backlog and self._committer.idle and len(self._in_flight) <= 1):
            outcome = self.bus.apply(commit, d, sent=len(ctx.outgoing))
            finished = True
        else:
            self._in_flight.set_phase(d, Phase.COMMITTING)
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

    # ------------------------------------------------------------------ for middleware

    def hold(self, d: Delivery) -> None:
        """Keep ``d`` in flight after its handler failed, until ``release``: a drain waits for it
        and presence renews its claim. Call from ``after_process_message``."""
        self._in_flight.set_phase(d, Phase.HELD)

    def release(self, d: Delivery) -> None:
        """``d`` is settled (acknowledged, requeued, dead-lettered): it leaves the host's hands."""
        self._in_flight.finish(d)

    def reject(self, d: Delivery, reason: str, detail: str) -> None:
        """``d`` will never be handled: the middleware's ``reject_message`` settles it."""
        self.middleware.before(lambda m: m.reject_message(self, d, reason, detail))

    def wake_maintenance(self) -> None:
        """Run the middleware's ``maintain`` now rather than at the next tick."""
        self._wake_maintenance.set()

    def working_on(self, stream: str, entry_id: str) -> bool:
        """The entry is in this host's hands (queued, running, held or committing)."""
        return self._in_flight.holds((stream, entry_id))

    def deliveries_in_hand(self) -> list[Delivery]:
        """The deliveries this host holds and has not handed back: their claims must be renewed."""
        return self._in_flight.claimed()

    def restart_actor(self, address: str) -> int:
        """Start a new actor at ``address`` in place of the dead one, and give it what the dead one
        was given and had not finished; returns how many deliveries that was."""
        binding = self._bindings[address]
        binding.ref = self._start_cell(binding)
        again = self._in_flight.move(Phase.QUEUED, phases=UNFINISHED, address=address)
        if again:
            try:
                binding.ref.tell(again)
            except CellDeadError:
                log.info("restarted actor died before its deliveries reached it", actor=address)
        return len(again)

    def retire_actor(self, address: str) -> None:
        """Read no more for ``address`` and hand back what its actor was given and had not finished."""
        with self._lock:
            self._bindings[address].given_up = True
            self._groups = None
        for d in self._in_flight.move(Phase.CANCELLED, phases=UNFINISHED, address=address):
            self.bus.hand_back(d)
            self._in_flight.finish(d)

    def _actor_died(self, binding: _Binding, exc: BaseException | None) -> None:
        if self._stopping.is_set():
            return
        self.middleware.after(lambda m: m.after_actor_died(self, binding.address, exc))

    def alive(self, address: str) -> bool:
        b = self._bindings.get(address)
        return bool(b and b.ref and b.ref.is_alive())

    # ------------------------------------------------------------------ maintenance

    def _maintain(self) -> None:
        while not self._stopping.is_set():
            self._wake_maintenance.wait(0.1)
            self._wake_maintenance.clear()
            if self._stopping.is_set():
                return
            self.middleware.maintain(self)

    # ------------------------------------------------------------------ shutdown

    def subscriptions(self, *, control: bool = False) -> list[Subscription]:
        """The streams this host reads in consumer groups (its control stream too if ``control``)."""
        return [
            s for subs in self._subscriptions_by_group().values() for s in subs if control or not s.control
        ]

    def in_flight(self) -> int:
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
        self._in_flight.close()
        if self._started:
            self._wake_inbox_reader()
        for t in self._readers.values():
            t.join(timeout=max(1.0, self.config.block_ms / 1000 * 4))
        self._hand_back_queued()
        self.middleware.after(lambda m: m.after_reading_stopped(self))
        drained = self._drain(deadline)
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
        self.middleware.after(lambda m: m.after_host_shutdown(self))
        try:
            self.bus.transport.delete(self._control.stream)
        except Exception as exc:  # noqa: BLE001 - an empty stream left behind
            log.warning("could not remove the control stream", error=repr(exc))
        log.info("host stopped", drained=drained, stats=dict(self.bus.stats))
        return drained

    def _hand_back_queued(self) -> None:
        for d in self._in_flight.move(Phase.CANCELLED, phases=(Phase.QUEUED,)):
            try:
                self.bus.hand_back(d)
            except Exception as exc:  # noqa: BLE001 - left pending, reclaimed later
                log.error("could not hand back an entry", error=repr(exc), entry=d.entry_id)
            self._in_flight.finish(d)

    def _drain(self, deadline: float) -> bool:
        """Wait until no handler runs or commits, at most until ``deadline``."""
        unfinished = self._in_flight.drain(deadline)
        if unfinished:
            log.warning(
                "drain deadline passed; unfinished entries stay pending for another process",
                unfinished=[d.describe() for d in unfinished],
            )
        return not unfinished

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
