"""The base class of actor roles, and the context a handler works through."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, ClassVar, Generic, TypeVar, overload

from pydantic import BaseModel

from actors.bus import Bus, Outgoing
from messages import Envelope, Message, Ping, Pong

H = TypeVar("H", bound=Callable[..., Any])
S = TypeVar("S", bound=BaseModel)
M = TypeVar("M", bound=Message)


class PermanentError(Exception):
    """Raised by a handler for a message that can never succeed: dead-lettered at once, no retry."""

    reason = "rejected"


class UnhandledMessageError(PermanentError):
    reason = "unhandled_type"


def on(*types: type[Message]) -> Callable[[H], H]:
    """Mark a method as the handler of the given message types: ``@on(Tick)``."""
    if not types:
        raise TypeError("@on needs at least one message type")

    def mark(fn: H) -> H:
        fn._handles = types  # type: ignore[attr-defined]
        return fn

    return mark


class Context:
    """What a handler may do: send (when its commit is applied), ask (now), read its envelope.

    ``tell``, ``publish`` and ``reply`` are buffered and sent atomically with the acknowledgement
    of the message being handled, so a handler that fails or a process that dies sends nothing.
    ``ask`` goes out at once, since the handler waits for its answer.
    """

    def __init__(self, bus: Bus, address: str, envelope: Envelope) -> None:
        self.bus = bus
        self.address = address
        self.envelope = envelope
        self.outgoing: list[Outgoing] = []
        self.replied = False

    @property
    def sim_time(self) -> float | None:
        return self.envelope.sim_time

    def tell(self, recipient: str, payload: Message, **kw: Any) -> Envelope:
        env = self.bus.envelope(recipient, payload, sender=self.address, causation=self.envelope, **kw)
        self.outgoing.append(Outgoing(self.bus.keys.inbox(recipient), env))
        return env

    def publish(self, topic: str, payload: Message, **kw: Any) -> Envelope:
        env = self.bus.envelope(topic, payload, sender=self.address, causation=self.envelope, **kw)
        self.outgoing.append(Outgoing(self.bus.keys.topic(topic), env))
        return env

    def reply(self, payload: Message) -> Envelope:
        out = self.bus.reply_envelope(self.envelope, payload, sender=self.address)
        self.outgoing.append(out)
        self.replied = True
        return out.envelope

    @overload
    def ask(self, recipient: str, payload: Message, *, expect: None = ..., **kw: Any) -> Message: ...
    @overload
    def ask(self, recipient: str, payload: Message, *, expect: type[M], **kw: Any) -> M: ...
    def ask(
        self, recipient: str, payload: Message, *, expect: type[Message] | None = None, **kw: Any
    ) -> Message:
        """``Bus.ask`` (``timeout``, 10 s by default, and the rest) from this handler: its sender and
        causation; with ``expect``, typed."""
        return self.bus.ask(
            recipient, payload, expect=expect, sender=self.address, causation=self.envelope, **kw
        )

    def ask_many(
        self, requests: Sequence[tuple[str, Message]], *, timeout: float, **kw: Any
    ) -> list[Future[Envelope]]:
        """Scatter asks in one round trip (e.g. the world asking every agent for its decision)."""
        return self.bus.ask_many(
            requests, timeout=timeout, sender=self.address, causation=self.envelope, **kw
        )

    def ask_async(self, recipient: str, payload: Message, *, timeout: float, **kw: Any) -> Future[Envelope]:
        return self.bus.ask_async(
            recipient, payload, timeout=timeout, sender=self.address, causation=self.envelope, **kw
        )


class Actor:
    """An actor role. Keep it thin: decode, call pure code, send the results.

    Handlers are methods marked ``@on(MessageType)`` taking ``(ctx, message)``; a handler's return
    value, if it is a message and the request was an ask, is the reply. An actor that keeps state
    across messages overrides ``save_state``/``load_state`` (or uses ``StatefulActor``): the state
    is stored atomically with each acknowledgement and restored on restart.
    """

    topics: ClassVar[tuple[str, ...]] = ()
    """Topics this actor subscribes to, each read in a group named after its address."""
    idempotent: ClassVar[bool] = False
    """Remember processed message ids and skip a message seen before (state-changing actors)."""
    pooled: ClassVar[bool] = False
    """Run on the host's shared worker pool instead of an own thread: for actors that come in
    hundreds or thousands (town agents). Messages are still handled one at a time, in order."""
    _handlers: ClassVar[dict[type[Message], str]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        table: dict[type[Message], str] = {}
        for klass in reversed(cls.__mro__):
            for name, attr in vars(klass).items():
                for t in getattr(attr, "_handles", ()):
                    table[t] = name
        cls._handlers = table

    def on_start(self, address: str, bus: Bus) -> None:
        """Called in the actor's thread before its first message."""

    def on_stop(self) -> None:
        """Called in the actor's thread when it stops."""

    def save_state(self) -> bytes | None:
        """The state to store with each acknowledgement, or None for a stateless actor."""
        return None

    def load_state(self, data: bytes | None) -> None:
        """Restore from stored state (None: nothing stored yet, start fresh)."""

    def dispatch(self, ctx: Context, message: Message) -> Message | None:
        for klass in type(message).__mro__:
            name = self._handlers.get(klass)  # type: ignore[call-overload]
            if name is not None:
                result: Message | None = getattr(self, name)(ctx, message)
                return result
        if isinstance(message, Ping):
            # Every actor answers the liveness probe (`auratown ping ADDRESS`) unless it handles it.
            return Pong(seq=message.seq, body=message.body, responder=ctx.bus.process_id)
        raise UnhandledMessageError(f"{type(self).__name__} has no handler for {message.message_type}")


class StatefulActor(Actor, Generic[S]):
    """An actor whose state is a pydantic model, persisted with every acknowledgement."""

    idempotent = True
    state_model: ClassVar[type[BaseModel]]

    def __init__(self) -> None:
        self.state: S = self.initial_state()

    def initial_state(self) -> S:
        return self.state_model()  # type: ignore[return-value]

    def save_state(self) -> bytes | None:
        return self.state.model_dump_json().encode()

    def load_state(self, data: bytes | None) -> None:
        self.state = (
            self.initial_state() if data is None else self.state_model.model_validate_json(data)  # type: ignore[assignment]
        )
