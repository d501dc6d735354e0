"""The bus: typed messages over a transport, with asks, retries and dead letters.

Delivery is at-least-once. An entry is acknowledged in the same atomic commit that applies the
effects of its handler (outgoing messages, actor state), and that commit applies nothing if the
entry was already acknowledged by another consumer: a message redelivered after a crash has its
effect exactly once.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import hmac
import json
import math
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar, overload

import structlog

from actors.bus._delivery import Delivery, Subscription
from actors.bus._errors import AskTimeoutError, BusClosedError, RemoteError, UnexpectedReplyError
from actors.bus._keys import (
    INBOX_GROUP,
    KeyLayout,
    check_address,
    control_address,
    reply_address,
    reply_to_problem,
)
from actors.bus._transport import Ack, Commit, CommitResult, StreamEntry, Transport
from actors.ids import new_id, new_process_id
from messages import (
    REGISTRY,
    DecodeError,
    EncodeError,
    Envelope,
    ErrorReply,
    MalformedEnvelopeError,
    Message,
    MessageRegistry,
    decode,
    encode,
    read_header,
)

if TYPE_CHECKING:
    from actors.settings import Settings

log = structlog.get_logger("auratown.bus")

M = TypeVar("M", bound=Message)
"""The message type an ask expects back (``Bus.ask(..., expect=M)`` returns an ``M``)."""

FIELD = "m"
"""The single field of a message entry: the encoded envelope."""

DEFAULT_MAX_ATTEMPTS = 5

READ_BATCH_MAX = 32
"""Most entries one ``fetch`` takes, whatever count is asked for (or one per stream, if it reads
more streams than that: XREADGROUP's COUNT is per stream). With every entry at its decoding limits
(``messages.DEFAULT_LIMITS``: 4 MiB raw, at most ~8 MiB once decoded, ~20 MiB while one is being
decoded) a full batch holds at most 32 x 12 + 20 = 404 MiB (docs/protocol.md, section 3)."""


@dataclass(frozen=True)
class Outgoing:
    """A message a handler produced, sent when its commit is applied."""

    stream: str
    envelope: Envelope


@dataclass(frozen=True)
class DeadLetterPolicy:
    """How much of a dead letter is kept, and for how long (``AURATOWN_DLQ_*`` by default:
    ``from_settings``)."""

    max_len: int = 10_000
    """Dead letters kept at most; the oldest beyond are dropped (counted)."""
    max_age: float | None = 7 * 86_400.0
    """Seconds a dead letter is kept (None: no age limit); older ones are dropped (counted)."""
    max_data: int = 16 * 1024
    """Bytes of the original entry kept; a longer one keeps its first bytes, size and SHA-256."""

    def __post_init__(self) -> None:
        if self.max_len < 1 or self.max_data < 0 or (self.max_age is not None and not self.max_age > 0):
            raise ValueError(f"invalid dead-letter policy {self}")

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> DeadLetterPolicy:
        """From the settings' ``dlq_*`` fields (``AURATOWN_DLQ_MAX_LEN``, ``AURATOWN_DLQ_MAX_AGE``
        in seconds, 0 or inf: no age limit, and ``AURATOWN_DLQ_MAX_BYTES``); None: read them now."""
        if settings is None:
            from actors.settings import load_settings

            settings = load_settings()
        age = settings.dlq_max_age
        return cls(
            max_len=settings.dlq_max_len,
            max_age=age if age > 0 and math.isfinite(age) else None,
            max_data=settings.dlq_max_bytes,
        )


_SUMMARY_FIELDS = ("type", "version", "id", "sender", "recipient", "reply_to", "correlation_id", "attempt")
_SUMMARY_CHARS = 200


def _clip(text: str, limit: int) -> bytes:
    return text.encode(errors="replace")[:limit]


def _summary_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int):
        return value if not isinstance(value, int) or abs(value) < 2**63 else str(value)[:40]
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value[:_SUMMARY_CHARS]
    return f"<{type(value).__name__}>"


def dead_letter_summary(header: Mapping[str, Any]) -> str:
    """A bounded JSON summary of an envelope header (at most ~2 KB, never the payload)."""
    return json.dumps(
        {k: _summary_value(header[k]) for k in _SUMMARY_FIELDS if k in header}, ensure_ascii=False
    )


def dead_letter_mac(secret: bytes, stream: str, fields: Mapping[str, bytes]) -> str:
    """HMAC-SHA256 over a dead-letter record (every field but ``mac``, and the stream it is in)."""
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    for part in (
        stream.encode(),
        *(x for k in sorted(fields) if k != "mac" for x in (k.encode(), fields[k])),
    ):
        mac.update(len(part).to_bytes(8, "big"))
        mac.update(part)
    return mac.hexdigest()


@dataclass(frozen=True)
class DeadLetter:
    """An entry of a dead-letter stream."""

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
    size: int = 0
    """Bytes of the original entry (``data`` holds at most the policy's ``max_data`` of them)."""
    sha256: str = ""
    summary: str = ""
    verified: bool = False
    """Signed by the runtime with the namespace's dead-letter secret: its fields are the runtime's."""

    @property
    def truncated(self) -> bool:
        return len(self.data) < self.size

    @classmethod
    def from_entry(cls, entry: StreamEntry, secret: bytes | None = None) -> DeadLetter:
        f = entry.fields

        def s(name: str) -> str:
            return f.get(name, b"").decode(errors="replace")

        def number(name: str, kind: Callable[[str], Any], default: Any) -> Any:
            try:
                return kind(s(name) or default)
            except ValueError:
                return default

        mac = f.get("mac", b"").decode(errors="replace")
        verified = bool(secret and mac and hmac.compare_digest(mac, dead_letter_mac(secret, entry.stream, f)))
        data = f.get("data", b"")
        return cls(
            entry_id=entry.entry_id,
            reason=s("reason"),
            detail=s("detail"),
            source_stream=s("stream"),
            source_entry_id=s("entry_id"),
            group=s("group"),
            consumer=s("consumer"),
            attempts=number("attempts", int, 0),
            message_id=s("message_id"),
            message_type=s("type"),
            data=data,
            wall_time=number("wall_time", float, 0.0),
            size=max(number("size", int, len(data)), len(data)),
            sha256=s("sha256"),
            summary=s("summary"),
            verified=verified,
        )


class ReplyAddressError(DecodeError):
    """An ask whose ``reply_to`` the receiving address may not answer at (not the asker's own
    reply stream): dead-lettered before any handler runs, and nothing is written there."""

    reason = "bad_reply_to"


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
        dead_letter_policy: DeadLetterPolicy | None = None,
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
        self.dead_letter_policy = dead_letter_policy or DeadLetterPolicy.from_settings()
        # An attached agent's transport names its ACL identity: its dead letters go to its own
        # stream (it may not write the runtime's) and are not signed (it cannot read the secret).
        identity = getattr(transport, "identity", None)
        self.dead_letter_identity: str | None = identity if isinstance(identity, str) else None
        self.dead_letter_stream = (
            self.keys.agent_dead_letters(identity) if isinstance(identity, str) else self.keys.dead_letters
        )
        self._dead_letter_aged_at = -math.inf
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

    @overload
    def ask(
        self, recipient: str, payload: Message, *, timeout: float = ..., expect: None = ..., **kw: Any
    ) -> Message: ...

    @overload
    def ask(
        self, recipient: str, payload: Message, *, timeout: float = ..., expect: type[M], **kw: Any
    ) -> M: ...

    def ask(
        self,
        recipient: str,
        payload: Message,
        *,
        timeout: float = 10.0,
        expect: type[Message] | None = None,
        **kw: Any,
    ) -> Message:
        """Request/response: the reply's payload, or ``AskTimeoutError`` / ``RemoteError``.

        With ``expect``, the reply is that type (typed so) or ``UnexpectedReplyError`` is raised,
        carrying the reply (a refusal such as ``Rejected`` can then still be read)."""
        reply = self.ask_envelope(recipient, payload, timeout=timeout, **kw).payload
        if expect is not None and not isinstance(reply, expect):
            raise UnexpectedReplyError(recipient, expect.message_type or expect.__qualname__, reply)
        return reply

    def reply_envelope(self, request: Envelope, payload: Message, *, sender: str = "") -> Outgoing:
        """The answer to ``request``, routed to its reply address."""
        if request.reply_to is None:
            raise ValueError(f"{request.type} {request.id} has no reply_to: it was not an ask")
        problem = reply_to_problem(sender, request.reply_to)
        if problem is not None:  # the reader refuses such a request first: this is a second guard
            raise ReplyAddressError(problem)
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
                block_ms = self._listen_block_ms()
                entries = self.transport.read(stream, last, count=READ_BATCH_MAX, block_ms=block_ms)
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
        """Decode an entry read in a group; an undecodable one carries its typed error (reason).

        An entry is exactly one field ``m``: a missing ``m`` or any other field is ``malformed``
        (the bytes of ``m``, if any, are kept for the dead letter)."""
        data = entry.fields.get(FIELD)
        extra = sorted(k for k in entry.fields if k != FIELD)
        if data is None or extra:
            names = ", ".join(repr(k[:40]) for k in extra[:5]) + (" ..." if len(extra) > 5 else "")
            what = f"entry has no {FIELD!r} field" if data is None else f"entry has fields beside {FIELD!r}"
            error = MalformedEnvelopeError(f"{what}: [{names}]")
            return Delivery(sub, entry.entry_id, data or b"", entry.deliveries, None, error)
        try:
            env = decode(data, self.registry)
        except DecodeError as exc:
            return Delivery(sub, entry.entry_id, data, entry.deliveries, None, exc)
        return self._guard_reply_to(Delivery(sub, entry.entry_id, data, entry.deliveries, env, None))

    def _guard_reply_to(self, d: Delivery) -> Delivery:
        """An ask that names a ``reply_to`` its receiver may not answer at becomes an error
        delivery (dead-lettered unhandled): its sender cannot borrow the receiver's rights to
        write into an inbox or another identity's reply stream."""
        env = d.envelope
        if env is None or env.reply_to is None or d.subscription.control:
            return d
        problem = reply_to_problem(d.address, env.reply_to)
        if problem is None:
            return d
        self.count("refused_reply_to")
        return replace(d, error=ReplyAddressError(problem))

    def fetch(self, subs: Sequence[Subscription], *, count: int, block_ms: int | None) -> list[Delivery]:
        """New entries of subscriptions that share one group, for this process's consumer: at most
        ``READ_BATCH_MAX`` of them whatever ``count`` asks for (or one per stream, if there are
        more streams than that), so a batch of maximal entries stays within its memory budget."""
        if not subs:
            return []
        count = max(1, min(count, READ_BATCH_MAX) // len({s.stream for s in subs}))
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
        # A reclaim is a read like any other: its batch is bounded the same way.
        entries = self.transport.claim_idle(
            sub.stream, sub.group, self.process_id, min_idle_ms=min_idle_ms, count=min(count, READ_BATCH_MAX)
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
        """Move an entry to the dead-letter stream with its reason and (bounded) original bytes.

        The record keeps at most ``dead_letter_policy.max_data`` bytes of the entry, its size and
        SHA-256, and a bounded summary of its header: never an expanded form of its payload. The
        runtime signs it (``dead_letter_mac``) so ``dlq list``/``replay`` can tell its records from
        any other. If it was an ask, the asker gets an ``ErrorReply`` at once instead of a timeout
        (at its own reply stream only). Old dead letters beyond the policy are then dropped.
        """
        env = delivery.envelope
        header = self._dead_letter_header(delivery)
        record = self._dead_letter_record(delivery, reason, detail, header)
        adds: list[tuple[str, dict[str, bytes]]] = [(self.dead_letter_stream, record)]
        reply_to = header.get("reply_to")
        corr = header.get("correlation_id")
        if isinstance(reply_to, str) and isinstance(corr, str) and reply_to and len(corr) <= _SUMMARY_CHARS:
            problem = reply_to_problem(delivery.address, reply_to)
            if problem is not None:
                log.warning("dead letter's asker not told", problem=problem)
            else:
                try:
                    err = self.envelope(
                        reply_to,
                        ErrorReply(
                            reason=reason[:64],
                            detail=detail[:2000],
                            request_type=str(header.get("type", ""))[:_SUMMARY_CHARS] or None,
                        ),
                        correlation_id=corr,
                        causation=env,
                    )
                    adds.append((self.keys.inbox(reply_to), {FIELD: encode(err)}))
                except (ValueError, EncodeError) as exc:  # no answer can be made: the dead letter still is
                    log.warning("dead letter's asker not told", error=repr(exc)[:500])
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
            try:
                self.trim_dead_letters()
            except Exception as exc:  # noqa: BLE001 - retention is retried with the next dead letter
                log.warning("could not apply the dead-letter retention", error=repr(exc))
        return result

    def _dead_letter_header(self, d: Delivery) -> dict[str, Any]:
        """The envelope header of a dead-lettered entry, read without expanding its payload."""
        env = d.envelope
        if env is not None:
            return {k: getattr(env, k) for k in _SUMMARY_FIELDS}
        if d.error is not None and d.error.header:
            return dict(d.error.header)
        if len(d.data) <= self.dead_letter_policy.max_data:
            return read_header(d.data)
        return {}  # too big to read again here: its size and digest describe it

    def _dead_letter_record(
        self, d: Delivery, reason: str, detail: str, header: Mapping[str, Any]
    ) -> dict[str, bytes]:
        data = d.data
        record = {
            "reason": _clip(reason, 64),
            "detail": _clip(detail, 8192),
            "stream": d.stream.encode(),
            "entry_id": d.entry_id.encode(),
            "group": d.group.encode(),
            "consumer": self.process_id.encode(),
            "attempts": str(d.attempt).encode()[:24],
            "message_id": _clip(str(header.get("id", "")), _SUMMARY_CHARS),
            "type": _clip(str(header.get("type", "")), _SUMMARY_CHARS),
            "summary": _clip(dead_letter_summary(header), 4096),
            "size": str(len(data)).encode(),
            "sha256": hashlib.sha256(data).hexdigest().encode(),
            "data": data[: self.dead_letter_policy.max_data],
            "wall_time": repr(self.clock()).encode(),
        }
        secret = self._dead_letter_secret(create=True)
        if secret is not None:
            record["mac"] = dead_letter_mac(secret, self.dead_letter_stream, record).encode()
        return record

    def _dead_letter_secret(self, *, create: bool) -> bytes | None:
        """The namespace's signing secret (a key only the runtime's Redis user can read); None for
        an attached agent, or when reading and no dead letter was ever signed."""
        if self.dead_letter_identity is not None:
            return None
        key = self.keys.dead_letter_secret
        secret = self.transport.get(key)
        if secret is None and create:
            self.transport.set_if_absent(key, secrets.token_hex(32).encode())
            secret = self.transport.get(key)
        return secret

    def dead_letters(self, count: int | None = None) -> list[DeadLetter]:
        """This bus's dead letters, oldest first; ``verified`` tells the runtime's signed ones."""
        secret = self._dead_letter_secret(create=False)
        entries = self.transport.range(self.dead_letter_stream, count=count)
        return [DeadLetter.from_entry(e, secret) for e in entries]

    def trim_dead_letters(self) -> dict[str, int]:
        """Apply the retention policy: drop dead letters older than ``max_age`` (checked at most
        every tenth of it, or second) and the oldest beyond ``max_len``; counted in ``stats`` as
        ``dead_letters_dropped_age`` / ``dead_letters_dropped_length``."""
        stream, policy = self.dead_letter_stream, self.dead_letter_policy
        dropped = {"age": 0, "length": 0}
        now = self.clock()
        if policy.max_age is not None and now - self._dead_letter_aged_at >= min(1.0, policy.max_age / 10):
            self._dead_letter_aged_at = now
            cutoff = now - policy.max_age
            while True:
                head = self.transport.range(stream, count=1 if not dropped["age"] else 64)
                old: list[str] = []
                for e in head:  # up to the first young one: dead letters are appended in time order
                    if DeadLetter.from_entry(e).wall_time >= cutoff:
                        break
                    old.append(e.entry_id)
                if not old:
                    break
                self.transport.delete_entries(stream, old)
                dropped["age"] += len(old)
                if len(old) < len(head):
                    break
        excess = self.transport.length(stream) - policy.max_len
        if excess > 0:
            doomed = [e.entry_id for e in self.transport.range(stream, count=excess)]
            for i in range(0, len(doomed), 1000):
                self.transport.delete_entries(stream, doomed[i : i + 1000])
            dropped["length"] = len(doomed)
        for cause, n in dropped.items():
            if n:
                self.count(f"dead_letters_dropped_{cause}", n)
                log.info("dead letters dropped by retention", cause=cause, n=n, stream=stream)
        return dropped

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
