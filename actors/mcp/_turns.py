"""The episode turn protocol's assistant side, for an MCP client: what the simulated user sends to
the assistant's address waits here until the client asks for it (``next_turn``).

``TurnBridge`` hosts an actor at the assistant's address (``agent.mcp``) that puts every
``UserTurn`` and ``EndSession`` into a ``TurnInbox``, oldest first. The handler returns at once,
so the message is acknowledged when it is in the inbox: if this process dies, what it held is
lost with the MCP client's connection, and the runner's session timeout ends the session.
A redelivered message (the same envelope id) is put in once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
from collections.abc import Callable

import anyio

from actors.attach import Agent
from actors.bus import Bus
from actors.runtime import Context, HostConfig
from messages.episodes import EndSession, UserTurn

SessionItem = UserTurn | EndSession
_SEEN = 4096
"""Envelope ids remembered to recognise a redelivery (far more than a session's turns)."""


class TurnInbox:
    """A thread-safe FIFO of what the user sent, awaited from the MCP server's event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: collections.deque[SessionItem] = collections.deque()
        self._seen: collections.deque[str] = collections.deque(maxlen=_SEEN)
        self._wakers: set[Callable[[], None]] = set()

    def put(self, item: SessionItem, *, message_id: str = "") -> bool:
        """Queue ``item`` (any thread); False for a redelivery of a message already queued."""
        with self._lock:
            if message_id:
                if message_id in self._seen:
                    return False
                self._seen.append(message_id)
            self._items.append(item)
            wakers = list(self._wakers)
        for wake in wakers:
            wake()
        return True

    def pop(self) -> SessionItem | None:
        with self._lock:
            return self._items.popleft() if self._items else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    async def next(self, timeout: float) -> SessionItem | None:
        """The oldest item, waiting up to ``timeout`` seconds for one; None at the deadline.

        Taken on the event loop, never in a thread: a waiter the client abandoned takes nothing.
        """
        loop = asyncio.get_running_loop()
        arrived = asyncio.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
                loop.call_soon_threadsafe(arrived.set)

        with self._lock:
            self._wakers.add(wake)  # before looking, so an item put in between wakes us
        try:
            with anyio.move_on_after(timeout):
                while True:
                    item = self.pop()
                    if item is not None:
                        return item
                    await arrived.wait()
                    arrived.clear()
            return None
        finally:
            with self._lock:
                self._wakers.discard(wake)


class TurnBridge:
    """The assistant's bus address, served by an actor that feeds ``inbox``."""

    def __init__(self, bus: Bus, address: str, *, config: HostConfig | None = None) -> None:
        self.address = address
        self.inbox = TurnInbox()
        self.agent = Agent(None, bus.namespace, address, bus=bus, config=config, name=f"mcp-{address}")
        inbox = self.inbox

        def receive(ctx: Context, msg: UserTurn | EndSession) -> None:
            inbox.put(msg, message_id=ctx.envelope.id)

        self.agent.on(UserTurn, EndSession)(receive)

    def start(self) -> TurnBridge:
        self.agent.start()
        return self

    def close(self) -> None:
        self.agent.close()
