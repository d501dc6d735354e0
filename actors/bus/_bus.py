"""The bus: typed messages over a transport, with asks, retries and dead letters.

Delivery is at-least-once. An entry is acknowledged in the same atomic commit that applies the
effects of its handler (outgoing messages, actor state), and that commit applies nothing if the
entry was already acknowledged by another consumer: a message redelivered after a crash has its
effect exactly once.
"""

from __future__ import annotations

import functools
import heapq
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from typing import Any

import structlog

from actors.bus._delivery import Delivery, Subscription
from actors.bus._errors import AskTimeoutError, BusClosedError, RemoteError
from actors.bus._keys import INBOX_GROUP, KeyLayout, check_address, control_address, reply_address
from actors.bus._transport import Ack, Commit, CommitResult, StreamEntry, Transport
from actors.ids import new_id, new_process_id
from messages import (
    REGISTRY,
    DecodeError,
    Envelope,
    ErrorReply,
    MalformedEnvelopeError,
    Message,
    MessageRegistry,
    decode,
    encode,
    read_header,
)

log = structlog.get_logger("auratown.bus")

FIELD = "m"
"""The single field of a message entry: the encoded envelope."""

DEFAULT_MAX_ATTEMPTS = 5


@dataclass(frozen=True)
class Outgoing:
    """A message a handler produced, sent when its commit is applied."""

    stream: str
    envelope: Envelope


@dataclass(frozen=True)
class DeadLetter:
    """An entry of the dead-letter stream."""

    entry_id: str
    reason: str
    detail: str
    source_stream: str
    source_entry_id: str
    group: str
    consumer: str
    attempts: int
    message_id: str
    message_type: str
    data: bytes
    wall_time: float

    @classmethod
    def from_entry(cls, entry: StreamEntry) -> DeadLetter:
        f = entry.fields

        def s(name: str) -> str:
            return f.get(name, b"").decode(errors="replace")

        return cls(
            entry_id=entry.entry_id,
            reason=s("reason"),
            detail=s("detail"),
            source_stream=s("stream"),
            source_entry_id=s("entry_id"),
            group=s("group"),
            consumer=s("consumer"),
            attempts=int(s("attempts") or 0),
            message_id=s("message_id"),
            message_type=s("type"),
            data=f.get("data", b""),
            wall_time=float(s("wall_time") or 0.0),
        )


_LANE_TTL_MS = 3_600_000
_LANE_SWEEP_INLINE = 1024


@dataclass
class _ReplyLane:
    """One thread's private reply stream for synchronous asks."""

    address: str
    stream: str
    last_id: str = "0-0"
    unswept: int = 0


@dataclass(frozen=True)
class _PendingAsk:
    future: Future[Envelope]
    recipient: str
    message_type: str
    timeout: float
    deadline: float


@dataclass(frozen=True)
class ProcessInfo:
    process_id: str
    alive: bool
    info: dict[str, Any]


def _settle(
    fut: Future[Envelope], *, result: Envelope | None = None, error: BaseException | None = None
) -> bool:
    """Resolve a future unless it is already done (the asker may have given up); True if it was."""
    try:
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(result)  # type: ignore[arg-type]
    except InvalidStateError:
        return False
    return True


class Bus:
    """Typed messaging for one namespace (a town or an episode) over a transport."""

    def __init__(
        self,
        transport: Transport,
        namespace: str,
        *,
        process_id: str | None = None,
        registry: MessageRegistry = REGISTRY,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.transport = transport
        self.keys = KeyLayout(namespace)
        self.namespace = namespace
        self.process_id = process_id or new_process_id()
        self.registry = registry
        self.max_attempts = max_attempts
        self.clock = clock
        self.reply_address = reply_address(self.process_id)
        self.stats: Counter[str] = Counter()
        self.traffic: Counter[tuple[str, str]] = Counter()
        """Entries this process read (``"in"``) from and wrote (``"out"``) to each stream (metrics)."""
        self.dead_letter_reasons: Counter[str] = Counter()
        self._stats_lock = threading.Lock()
        self._pending_asks: dict[str, _PendingAsk] = {}
        # (deadline, correlation id) of every ask: the listener's wait and the expiry sweep look
        # at the earliest only (a scan of all would cost O(asks) per read: O(n^2) per scatter).
        self._ask_deadlines: list[tuple[float, str]] = []
        self._asks_lock = threading.Lock()
        self._listener: threading.Thread | None = None
        self._lanes = threading.local()
        self._lanes_by_stream: dict[str, _ReplyLane] = {}
        self._closed = threading.Event()

    # ------------------------------------------------------------------ sending

    def count(self, name: str, n: int = 1) -> None:
        with self._stats_lock:
            self.stats[name] += n

    def count_traffic(self, direction: str, streams: Iterable[str]) -> None:
        with self._stats_lock:
            for stream in streams:
                self.traffic[(direction, stream)] += 1

    def counters(self) -> tuple[Counter[str], Counter[tuple[str, str]], Counter[str]]:
        """Copies of ``stats``, ``traffic`` and ``dead_letter_reasons``, taken together."""
        with self._stats_lock:
            return Counter(self.stats), Counter(self.traffic), Counter(self.dead_letter_reasons)

    def envelope(
        self,
        recipient: str,
        payload: Message,
        *,
        sender: str = "",
        correlation_id: str | None = None,
        reply_to: str | None = None,
        causation: Envelope | None = None,
        sim_time: float | None = None,
        deadline: float | None = None,
        attempt: int = 1,
        trace: dict[str, str] | None = None,
    ) -> Envelope:
        """A new envelope; ``causation`` passes on its id, sim time and trace context."""
        if not payload.message_type:
            raise TypeError(f"{type(payload).__qualname__} is not a registered message model")
        if causation is not None:
            if sim_time is None:
                sim_time = causation.sim_time
            if trace is None:
                trace = dict(causation.trace)
        return Envelope(
            id=new_id(),
            sender=sender,
            recipient=recipient,
            namespace=self.namespace,
            wall_time=self.clock(),
            payload=payload,
            correlation_id=correlation_id,
            reply_to=reply_to,
            causation_id=causation.id if causation is not None else None,
            sim_time=sim_time,
            attempt=attempt,
            deadline=deadline,
            trace=trace or {},
        )

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise BusClosedError("the bus is closed")

    def send(self, stream: str, envelope: Envelope) -> Envelope:
        self._check_open()
        self.transport.add(stream, {FIELD: encode(envelope)})
        self.count("sent")
        self.count_traffic("out", (stream,))
        return envelope

    def tell(self, recipient: str, payload: Message, **kw: Any) -> Envelope:
        """Send ``payload`` to an address's inbox."""
        env = self.envelope(recipient, payload, **kw)
        return self.send(self.keys.inbox(recipient), env)

    def publish(self, topic: str, payload: Message, **kw: Any) -> Envelope:
        """Append ``payload`` to a topic; every subscribing group receives it once."""
        env = self.envelope(topic, payload, **kw)
        return self.send(self.keys.topic(topic), env)

    def ask_async(
        self, recipient: str, payload: Message, *, timeout: float, sender: str = "", **kw: Any
    ) -> Future[Envelope]:
        """Send a request; the future gets the reply envelope, ``AskTimeoutError`` or ``RemoteError``."""
        (fut,) = self.ask_many([(recipient, payload)], timeout=timeout, sender=sender, **kw)
        return fut

    def ask_many(
        self,
        requests: Sequence[tuple[str, Message]],
        *,
        timeout: float,
        sender: str = "",
        **kw: Any,
    ) -> list[Future[Envelope]]:
        """Scatter asks to many addresses in one round trip; one future per request, in order.

        Each future resolves like ``ask_async``'s: the reply envelope, ``AskTimeoutError`` or
        ``RemoteError``.
        """
        self._check_open()
        if not requests:
            return []
        self._ensure_listener()
        deadline = self.clock() + timeout
        futures: list[Future[Envelope]] = []
        entries: list[tuple[str, dict[str, bytes]]] = []
        corrs: list[str] = []
        for recipient, payload in requests:
            corr = new_id()
            env = self.envelope(
                recipient,
                payload,
                sender=sender,
                correlation_id=corr,
                reply_to=self.reply_address,
                deadline=deadline,
                **kw,
            )
            fut: Future[Envelope] = Future()
            pending = _PendingAsk(fut, recipient, payload.message_type, timeout, deadline)
            with self._asks_lock:
                self._pending_asks[corr] = pending
                heapq.heappush(self._ask_deadlines, (deadline, corr))
            fut.add_done_callback(functools.partial(self._forget_done, corr))
            futures.append(fut)
            corrs.append(corr)
            entries.append((self.keys.inbox(recipient), {FIELD: encode(env)}))
        try:
            self.transport.add_many(entries)
        except BaseException:
            for corr in corrs:
                self._forget_ask(corr)
            raise
        self.count("sent", len(entries))
        self.count_traffic("out", (stream for stream, _ in entries))
        return futures

    def ask_envelope(self, recipient: str, payload: Message, *, timeout: float = 10.0, **kw: Any) -> Envelope:
        """Synchronous ask: the calling thread reads its own reply stream (no thread hop)."""
        self._check_open()
        lane = self._thread_lane()
        corr = new_id()
        deadline = self.clock() + timeout
        env = self.envelope(
            recipient, payload, correlation_id=corr, reply_to=lane.address, deadline=deadline, **kw
        )
        self.send(self.keys.inbox(recipient), env)
        while True:
            remaining = deadline - self.clock()
            if remaining <= 0 or self._closed.is_set():
                self.count("ask_timeouts")
                raise AskTimeoutError(recipient, payload.message_type, timeout)
            entries = self.transport.read(
                lane.stream, lane.last_id, count=16, block_ms=max(1, min(int(remaining * 1000) + 1, 1000))
            )
            for entry in entries:
                lane.last_id = entry.entry_id
                lane.unswept += 1
                reply = self._decode_reply(entry)
                if reply is None or reply.correlation_id != corr:
                    if reply is not None:
                        self.count("late_replies")
                    continue
                if lane.unswept >= _LANE_SWEEP_INLINE:
                    self._sweep_lane(lane)  # a client with no host to sweep for it
                if isinstance(reply.payload, ErrorReply):
                    raise RemoteError(recipient, reply.payload.reason, reply.payload.detail)
                return reply

    def _thread_lane(self) -> _ReplyLane:
        lane: _ReplyLane | None = getattr(self._lanes, "lane", None)
        if lane is None:
            address = f"{self.reply_address}.t{threading.get_ident()}"
            lane = _ReplyLane(address, self.keys.inbox(address))
            self._lanes.lane = lane
            with self._asks_lock:
                self._lanes_by_stream[lane.stream] = lane
        return lane

    def sweep_reply_lanes(self) -> None:
        """Drop replies already read from every thread's lane (a host calls this periodically)."""
        with self._asks_lock:
            lanes = list(self._lanes_by_stream.values())
        for lane in lanes:
            if lane.unswept:
                self._sweep_lane(lane)

    def _sweep_lane(self, lane: _ReplyLane) -> None:
        # Entries already read are dropped in bulk; the TTL removes a dead process's lanes.
        self.transport.trim_before(lane.stream, lane.last_id, ttl_ms=_LANE_TTL_MS)
        lane.unswept = 0

    def ask(self, recipient: str, payload: Message, *, timeout: float = 10.0, **kw: Any) -> Message:
        """Request/response: the reply's payload, or ``AskTimeoutError`` / ``RemoteError``."""
        return self.ask_envelope(recipient, payload, timeout=timeout, **kw).payload

    def reply_envelope(self, request: Envelope, payload: Message, *, sender: str = "") -> Outgoing:
        """The answer to ``request``, routed to its reply address."""
        if request.reply_to is None:
            raise ValueError(f"{request.type} {request.id} has no reply_to: it was not an ask")
        env = self.envelope(
            request.reply_to,
            payload,
            sender=sender,
            correlation_id=request.correlation_id,
            causation=request,
        )
        return Outgoing(self.keys.inbox(request.reply_to), env)

    # ------------------------------------------------------------------ replies (asker side)

    def _forget_done(self, corr: str, _future: Future[Envelope]) -> None:
        self._forget_ask(corr)

    def _forget_ask(self, corr: str) -> None:
        with self._asks_lock:
            self._pending_asks.pop(corr, None)

    def _ensure_listener(self) -> None:
        if self._listener is not None:
            return
        with self._asks_lock:
            if self._listener is not None:
                return
            self._listener = threading.Thread(
                target=self._listen_replies, name=f"bus-replies-{self.process_id}", daemon=True
            )
            self._listener.start()

    def _listen_replies(self) -> None:
        stream = self.keys.inbox(self.reply_address)
        last = "0-0"
        while not self._closed.is_set():
            try:
                entries = self.transport.read(stream, last, count=256, block_ms=self._listen_block_ms())
            except Exception as exc:  # noqa: BLE001 - a broken connection must not end the listener
                if self._closed.is_set():
                    return
                log.warning("reply listener read failed; retrying", error=repr(exc))
                self._closed.wait(0.2)
                continue
            for entry in entries:
                last = entry.entry_id
                self._resolve_reply(entry)
            if entries:
                self.transport.delete_entries(stream, [e.entry_id for e in entries])
            self._expire_asks()

    def _listen_block_ms(self) -> int:
        with self._asks_lock:
            heap = self._ask_deadlines
            while heap and heap[0][1] not in self._pending_asks:
                heapq.heappop(heap)  # answered already
            if not heap:
                return 500
            wait = heap[0][0] - self.clock()
        return max(1, min(500, int(wait * 1000) + 1))

    def decode_entry(self, entry: StreamEntry) -> Envelope | None:
        """Decode a stream entry read outside a consumer group; None (logged) if it cannot be."""
        try:
            return decode(entry.fields.get(FIELD, b""), self.registry)
        except DecodeError as exc:
            log.warning("undecodable entry skipped", reason=exc.reason, stream=entry.stream)
            return None

    def _decode_reply(self, entry: StreamEntry) -> Envelope | None:
        try:
            return decode(entry.fields.get(FIELD, b""), self.registry)
        except DecodeError as exc:
            self.count("bad_replies")
            log.warning("undecodable reply dropped", reason=exc.reason, detail=exc.detail)
            return None

    def _resolve_reply(self, entry: StreamEntry) -> None:
        env = self._decode_reply(entry)
        if env is None:
            return
        with self._asks_lock:
            pending = self._pending_asks.get(env.correlation_id or "")
        if pending is None:
            self.count("late_replies")
            log.info("reply after its ask ended", correlation_id=env.correlation_id, type=env.type)
            return
        if isinstance(env.payload, ErrorReply):
            _settle(
                pending.future, error=RemoteError(pending.recipient, env.payload.reason, env.payload.detail)
            )
        else:
            _settle(pending.future, result=env)

    def _expire_asks(self) -> None:
        now = self.clock()
        expired: list[_PendingAsk] = []
        with self._asks_lock:
            heap = self._ask_deadlines
            while heap and heap[0][0] <= now:
                _, corr = heapq.heappop(heap)
                pending = self._pending_asks.get(corr)
                if pending is not None:
                    expired.append(pending)
        for p in expired:
            if _settle(p.future, error=AskTimeoutError(p.recipient, p.message_type, p.timeout)):
                self.count("ask_timeouts")

    # ------------------------------------------------------------------ receiving

    def subscribe_inbox(self, address: str) -> Subscription:
        """The inbox of ``address``, read from its first unacknowledged entry."""
        stream = self.keys.inbox(check_address(address))
        self.transport.ensure_group(stream, INBOX_GROUP, from_start=True)
        return Subscription(stream, INBOX_GROUP, address)

    def subscribe_control(self) -> Subscription:
        """This process's own wake-up inbox (its reader is woken by an entry written there)."""
        sub = self.subscribe_inbox(control_address(self.process_id))
        return Subscription(sub.stream, sub.group, sub.address, control=True)

    def subscribe_topic(self, topic: str, subscriber: str) -> Subscription:
        """A topic read by ``subscriber``'s own group, from now on."""
        stream = self.keys.topic(topic)
        self.transport.ensure_group(stream, check_address(subscriber), from_start=False)
        return Subscription(stream, subscriber, subscriber, topic=topic)

    def to_delivery(self, sub: Subscription, entry: StreamEntry) -> Delivery:
        data = entry.fields.get(FIELD)
        if data is None:
            return Delivery(
                sub,
                entry.entry_id,
                b"",
                entry.deliveries,
                None,
                MalformedEnvelopeError(f"entry has no {FIELD!r} field: {sorted(entry.fields)}"),
            )
        try:
            env = decode(data, self.registry)
        except DecodeError as exc:
            return Delivery(sub, entry.entry_id, data, entry.deliveries, None, exc)
        return Delivery(sub, entry.entry_id, data, entry.deliveries, env, None)

    def fetch(self, subs: Sequence[Subscription], *, count: int, block_ms: int | None) -> list[Delivery]:
        """New entries of subscriptions that share one group, for this process's consumer."""
        if not subs:
            return []
        group = subs[0].group
        by_stream = {s.stream: s for s in subs}
        entries = self.transport.read_group(
            group, self.process_id, list(by_stream), count=count, block_ms=block_ms
        )
        self.count("received", sum(not by_stream[e.stream].control for e in entries))
        self.count_traffic("in", (e.stream for e in entries if not by_stream[e.stream].control))
        return [self.to_delivery(by_stream[e.stream], e) for e in entries]

    def reclaim(self, sub: Subscription, *, min_idle_ms: int, count: int = 100) -> list[Delivery]:
        """Take over entries another (dead or stuck) consumer left pending too long."""
        entries = self.transport.claim_idle(
            sub.stream, sub.group, self.process_id, min_idle_ms=min_idle_ms, count=count
        )
        if entries:
            self.count("reclaimed", len(entries))
            log.info("reclaimed pending entries", stream=sub.stream, n=len(entries))
        return [self.to_delivery(sub, e) for e in entries]

    def renew(self, deliveries: Iterable[Delivery]) -> None:
        """Keep entries this process is still working on from being reclaimed."""
        by_stream: dict[tuple[str, str], list[str]] = {}
        for d in deliveries:
            by_stream.setdefault((d.stream, d.group), []).append(d.entry_id)
        for (stream, group), ids in by_stream.items():
            self.transport.renew(stream, group, self.process_id, ids)

    def _ack(self, d: Delivery) -> Ack:
        return Ack(d.stream, d.group, d.entry_id)

    def complete(
        self,
        delivery: Delivery,
        outgoing: Sequence[Outgoing] = (),
        *,
        state: bytes | None = None,
        dedupe: bool = False,
    ) -> CommitResult:
        """Acknowledge a handled entry and apply its effects, atomically."""
        commit = self.completion(delivery, outgoing, state=state, dedupe=dedupe)
        return self.apply(commit, delivery, sent=len(outgoing))

    def completion(
        self,
        delivery: Delivery,
        outgoing: Sequence[Outgoing] = (),
        *,
        state: bytes | None = None,
        dedupe: bool = False,
    ) -> Commit:
        """The commit that ``complete`` applies (for callers that batch commits)."""
        for o in outgoing:
            if not self.keys.owns(o.stream):
                raise ValueError(f"{o.stream!r} is outside namespace {self.namespace!r}")
        env = delivery.envelope
        return Commit(
            ack=self._ack(delivery),
            adds=tuple((o.stream, {FIELD: encode(o.envelope)}) for o in outgoing),
            state=(self.keys.state(delivery.address), state) if state is not None else None,
            dedupe=(self.keys.seen(delivery.address), env.id) if dedupe and env is not None else None,
        )

    def apply(self, commit: Commit, delivery: Delivery, *, sent: int = 0) -> CommitResult:
        result = self.transport.commit(commit)
        self.record(result, delivery, sent=sent, commit=commit)
        return result

    def record(
        self, result: CommitResult, delivery: Delivery, *, sent: int = 0, commit: Commit | None = None
    ) -> None:
        if result is CommitResult.APPLIED:
            self.count("acked")
            self.count("sent", sent)
            if commit is not None:
                self.count_traffic("out", (stream for stream, _ in commit.adds))
        elif result is CommitResult.STALE:
            self.count("stale")
            log.warning(
                "entry was committed by another consumer; effects dropped",
                stream=delivery.stream,
                entry_id=delivery.entry_id,
            )
        else:
            self.count("duplicates")
            log.info("duplicate message skipped", message=delivery.describe())

    def load_state(self, address: str) -> bytes | None:
        return self.transport.get(self.keys.state(address))

    def retry_stream(self, delivery: Delivery) -> str:
        """Where a retry of this delivery goes: its stream, or the subscriber's inbox for a topic."""
        sub = delivery.subscription
        return self.keys.inbox(sub.address) if sub.topic is not None else sub.stream

    def requeue(self, delivery: Delivery) -> CommitResult:
        """Put a failed message back with its attempt count raised."""
        env = delivery.envelope
        if env is None:
            raise ValueError("an undecodable entry is dead-lettered, never retried")
        again = env.model_copy(update={"attempt": delivery.attempt + 1})
        commit = Commit(
            ack=self._ack(delivery), adds=((self.retry_stream(delivery), {FIELD: encode(again)}),)
        )
        result = self.transport.commit(commit)
        if result is CommitResult.APPLIED:
            self.count("retried")
            self.count_traffic("out", (stream for stream, _ in commit.adds))
        return result

    def hand_back(self, delivery: Delivery) -> CommitResult:
        """Return an entry that was never started, unchanged, for another consumer (shutdown)."""
        commit = Commit(
            ack=self._ack(delivery), adds=((self.retry_stream(delivery), {FIELD: delivery.data}),)
        )
        result = self.transport.commit(commit)
        if result is CommitResult.APPLIED:
            self.count("handed_back")
            self.count_traffic("out", (stream for stream, _ in commit.adds))
        return result

    def dead_letter(self, delivery: Delivery, reason: str, detail: str) -> CommitResult:
        """Move an entry to the dead-letter stream with its reason and original bytes.

        If it was an ask, the asker gets an ``ErrorReply`` at once instead of a timeout.
        """
        env = delivery.envelope
        header: dict[str, Any] = read_header(delivery.data) if env is None else {}
        msg_id = env.id if env is not None else str(header.get("id", ""))
        msg_type = env.type if env is not None else str(header.get("type", ""))
        record = {
            "reason": reason.encode(),
            "detail": detail.encode(errors="replace")[:8192],
            "stream": delivery.stream.encode(),
            "entry_id": delivery.entry_id.encode(),
            "group": delivery.group.encode(),
            "consumer": self.process_id.encode(),
            "attempts": str(delivery.attempt).encode(),
            "message_id": msg_id.encode(errors="replace"),
            "type": msg_type.encode(errors="replace"),
            "data": delivery.data,
            "wall_time": repr(self.clock()).encode(),
        }
        adds: list[tuple[str, dict[str, bytes]]] = [(self.keys.dead_letters, record)]
        reply_to = env.reply_to if env is not None else header.get("reply_to")
        corr = env.correlation_id if env is not None else header.get("correlation_id")
        if isinstance(reply_to, str) and isinstance(corr, str) and reply_to:
            try:
                err = self.envelope(
                    reply_to,
                    ErrorReply(reason=reason, detail=detail[:2000], request_type=msg_type or None),
                    correlation_id=corr,
                    causation=env,
                )
                adds.append((self.keys.inbox(reply_to), {FIELD: encode(err)}))
            except ValueError:
                log.warning("dead letter's reply_to is not a valid address", reply_to=reply_to)
        result = self.transport.commit(Commit(ack=self._ack(delivery), adds=tuple(adds)))
        if result is CommitResult.APPLIED:
            self.count("dead_lettered")
            self.count_traffic("out", (stream for stream, _ in adds))
            with self._stats_lock:
                self.dead_letter_reasons[reason] += 1
            log.warning(
                "dead-lettered",
                reason=reason,
                detail=detail[:500],
                message=delivery.describe(),
                stream=delivery.stream,
            )
        return result

    def dead_letters(self, count: int | None = None) -> list[DeadLetter]:
        return [DeadLetter.from_entry(e) for e in self.transport.range(self.keys.dead_letters, count=count)]

    # ------------------------------------------------------------------ presence

    def heartbeat(self, info: dict[str, Any], *, ttl_ms: int) -> None:
        """Announce this process (visible in Redis) for ``ttl_ms`` more milliseconds."""
        payload = json.dumps({**info, "process_id": self.process_id, "heartbeat": self.clock()})
        self.transport.hset(self.keys.presence, self.process_id, payload.encode())
        self.transport.set(self.keys.alive(self.process_id), b"1", ttl_ms=ttl_ms)

    def processes(self) -> list[ProcessInfo]:
        out = []
        for pid, raw in sorted(self.transport.hgetall(self.keys.presence).items()):
            try:
                info = json.loads(raw)
            except ValueError:
                info = {"raw": raw.decode(errors="replace")}
            out.append(ProcessInfo(pid, self.transport.exists(self.keys.alive(pid)), info))
        return out

    def sweep_dead_processes(self) -> list[str]:
        """Forget processes whose heartbeat expired, and their reply streams."""
        gone = [p.process_id for p in self.processes() if not p.alive]
        for pid in gone:
            self.transport.hdel(self.keys.presence, pid)
            self.transport.delete(self.keys.inbox(reply_address(pid)))
        if gone:
            log.info("swept dead processes", processes=gone)
        return gone

    def leave(self) -> None:
        """Remove this process's presence and reply stream."""
        self.transport.hdel(self.keys.presence, self.process_id)
        with self._asks_lock:
            lanes = sorted(self._lanes_by_stream)
        self.transport.delete(self.keys.alive(self.process_id), self.keys.inbox(self.reply_address), *lanes)

    # ------------------------------------------------------------------ lifecycle

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        """Stop the reply listener and fail open asks; the transport stays open (caller's)."""
        if self._closed.is_set():
            return
        self._closed.set()
        with self._asks_lock:
            pending = list(self._pending_asks.values())
        for p in pending:
            _settle(p.future, error=BusClosedError("the bus was closed while waiting for a reply"))
        if self._listener is not None:
            self._listener.join(timeout=2.0)
