"""``Agent``: host plain handler functions at a bus address, as a dynamic actor on a ``Host``.

The runtime does the work: the inbox's consumer group, acknowledgement in the same commit as the
handler's messages, retries with back-off, dead letters, presence heartbeats, reclaim of a dead
process's entries and a graceful drain on SIGTERM. This module only maps message types to
functions and routes what they return.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import structlog

from actors.bus import Bus, Transport, check_address, open_transport
from actors.bus._keys import identity_process_id
from actors.ids import new_process_id
from actors.runtime import Actor, Context, Host, HostConfig, UnhandledMessageError
from messages import Envelope, Message

log = structlog.get_logger("auratown.attach")

Handler = Callable[..., Message | None]
"""``handler(message)`` or ``handler(ctx, message)``: returns the reply, or None."""
H = TypeVar("H", bound=Handler)


class HandlerSpecError(ValueError):
    """A ``module:function`` that does not name a callable."""


def _wants_context(fn: Callable[..., Any]) -> bool:
    """True for ``fn(ctx, message)``, False for ``fn(message)``."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: give it the message only
        return False
    positional = [
        p
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    return len(positional) >= 2 or varargs


def _payload_reply_to(message: Message) -> str | None:
    """The reply address a message names in its payload (``UserTurn.reply_to``), if any."""
    target = getattr(message, "reply_to", None)
    return target if isinstance(target, str) and target else None


def _echo_session(request: Message, reply: Message) -> Message:
    """Copy the request's ``session`` nonce into a reply that left its own empty (episodes)."""
    session = getattr(request, "session", None)
    if (
        isinstance(session, str)
        and session
        and "session" in type(reply).model_fields
        and getattr(reply, "session", None) == ""
    ):
        return reply.model_copy(update={"session": session})
    return reply


class HandlerActor(Actor):
    """An actor whose handlers are plain functions, looked up by the message's type (and bases).

    Registering a handler for ``Message`` catches every type. A returned message is the reply:
    to the envelope's ``reply_to`` for an ask, else to the address the payload names in its own
    ``reply_to`` field (an episode's ``UserTurn``), with the request's ``session`` echoed.
    """

    def __init__(self, handlers: dict[type[Message], Handler]) -> None:
        self.handlers = handlers
        self._wants_ctx = {t: _wants_context(fn) for t, fn in handlers.items()}

    def dispatch(self, ctx: Context, message: Message) -> Message | None:
        for klass in type(message).__mro__:
            fn = self.handlers.get(klass)
            if fn is None:
                continue
            result = fn(ctx, message) if self._wants_ctx[klass] else fn(message)
            return self._route(ctx, message, result)
        raise UnhandledMessageError(f"{ctx.address} has no handler for {message.message_type}")

    @staticmethod
    def _route(ctx: Context, message: Message, result: Message | None) -> Message | None:
        if result is None:
            return None
        if not isinstance(result, Message) or not result.message_type:
            raise TypeError(f"a handler returned {type(result).__name__}, not a registered message or None")
        if ctx.envelope.reply_to is not None:
            return result  # an ask: the host replies (to reply_to, with its correlation id)
        target = _payload_reply_to(message)
        if target is not None:
            ctx.tell(target, _echo_session(message, result))
            return None
        ctx.bus.count("unrouted_replies")
        log.warning(
            "handler returned a message but the request names no reply address; dropped",
            request=message.message_type,
            reply=result.message_type,
        )
        return None


class Agent:
    """An external agent at ``address`` of ``namespace``: ``@agent.on(Type)`` handlers, then ``run()``.

    ``url`` is a bus URL (``redis://``, ``rediss://``, ``unix://``, ``memory://``); give ``bus``
    instead to share one (tests, several agents in one process). ``with Agent(...) as agent:``
    serves in the background for the block; ``agent.run()`` serves until SIGTERM/SIGINT.
    """

    def __init__(
        self,
        url: str | None,
        namespace: str,
        address: str,
        *,
        bus: Bus | None = None,
        config: HostConfig | None = None,
        name: str | None = None,
        topics: tuple[str, ...] = (),
        identity: str | None = None,
    ) -> None:
        """``identity``: the agent's Redis ACL user (``auratown acl --agent IDENT``). Its bus then
        commits without scripts and uses a process id under that identity, as its ACL requires
        (deploy/redis/README.md); its registry calls go to ``registry:IDENT``."""
        self.address = check_address(address)
        self.namespace = namespace
        self.identity = identity
        self._own_transport: Transport | None = None
        if bus is None:
            if identity is not None and url and url.startswith(("redis://", "rediss://", "unix://")):
                from actors.bus.restricted import RestrictedRedisTransport

                self._own_transport = RestrictedRedisTransport(url)
                bus = Bus(
                    self._own_transport, namespace, process_id=identity_process_id(identity, new_process_id())
                )
            else:
                self._own_transport = open_transport(url)
                bus = Bus(self._own_transport, namespace)
        elif bus.namespace != namespace:
            raise ValueError(f"the bus serves namespace {bus.namespace!r}, not {namespace!r}")
        self.bus = bus
        self.config = config or HostConfig()
        self.name = name or f"attach-{address}"
        self.topics = topics
        self.handlers: dict[type[Message], Handler] = {}
        self._host: Host | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ handlers

    def on(self, *types: type[Message]) -> Callable[[H], H]:
        """Register the decorated function for these message types (``Message``: every type)."""
        if not types:
            raise TypeError("agent.on needs at least one message type")
        for t in types:
            if not (isinstance(t, type) and issubclass(t, Message)):
                raise TypeError(f"{t!r} is not a message model")

        def register(fn: H) -> H:
            for t in types:
                self.handlers[t] = fn
            return fn

        return register

    # ------------------------------------------------------------------ sending (outside handlers)

    def tell(self, recipient: str, payload: Message, **kw: Any) -> Envelope:
        return self.bus.tell(recipient, payload, sender=self.address, **kw)

    def ask(self, recipient: str, payload: Message, *, timeout: float = 10.0) -> Message:
        return self.bus.ask(recipient, payload, timeout=timeout, sender=self.address)

    def publish(self, topic: str, payload: Message) -> Envelope:
        return self.bus.publish(topic, payload, sender=self.address)

    # ------------------------------------------------------------------ lifecycle

    @property
    def host(self) -> Host:
        """The host serving the agent (made on first use)."""
        with self._lock:
            if self._host is None:
                if not self.handlers:
                    raise ValueError(f"agent {self.address!r} has no handlers: use @agent.on(MessageType)")
                handlers = dict(self.handlers)
                host = Host(self.bus, self.config, name=self.name)
                host.spawn(lambda: HandlerActor(handlers), self.address, topics=self.topics)
                self._host = host
            return self._host

    def start(self) -> Agent:
        """Serve in background threads (returns at once)."""
        self.host.start()
        return self

    def run(self) -> bool:
        """Serve until SIGTERM/SIGINT, then drain and leave; True if every handler finished."""
        try:
            return self.host.run_until_signal()
        finally:
            self.close()

    def stop(self) -> bool:
        host = self._host
        return host.stop() if host is not None else True

    def close(self) -> None:
        """Stop serving and release the bus (and the transport this agent opened)."""
        self.stop()
        if self._own_transport is not None:
            self.bus.close()
            self._own_transport.close()
            self._own_transport = None

    def __enter__(self) -> Agent:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def load_handler(spec: str, *, app_dir: str | None = None) -> Handler:
    """The callable named by ``module:function`` (``function`` may be dotted: ``obj.method``)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise HandlerSpecError(f"handler {spec!r}: expected MODULE:FUNCTION, e.g. myagent:answer")
    if app_dir is not None:
        path = str(Path(app_dir).resolve())
        if path not in sys.path:
            sys.path.insert(0, path)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise HandlerSpecError(f"handler {spec!r}: cannot import {module_name!r}: {exc}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise HandlerSpecError(f"handler {spec!r}: {module_name} has no {attr!r}") from None
    if not callable(obj):
        raise HandlerSpecError(f"handler {spec!r}: {attr!r} is a {type(obj).__name__}, not a function")
    handler: Handler = obj
    return handler
