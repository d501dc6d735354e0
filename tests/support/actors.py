"""Actors used by the tests and by the worker process."""

from __future__ import annotations

import threading
from collections import Counter
from typing import ClassVar

from pydantic import BaseModel

from actors.bus import Bus
from actors.roles import EchoActor as Echo
from actors.runtime import Actor, Context, PermanentError, StatefulActor, on
from tests.support.messages import Done, Flaky, GetTotal, Incr, Total, Work

# Echo is re-exported for the tests: the real role, not a copy.
__all__ = ["CounterState", "Counter_", "Echo", "FlakyActor", "Slow"]


class CounterState(BaseModel):
    total: int = 0
    applied: list[str] = []


class Counter_(StatefulActor[CounterState]):
    """Adds to a total persisted with each acknowledgement; can hold inside a handler."""

    state_model = CounterState
    hold_key: ClassVar[str] = "hold"

    def on_start(self, address: str, bus: Bus) -> None:
        self.bus = bus

    @on(Incr)
    def incr(self, ctx: Context, msg: Incr) -> None:
        if msg.hold:
            keys = self.bus.keys
            self.bus.transport.set(keys.kv(f"started:{ctx.envelope.id}"), self.bus.process_id.encode())
            release = keys.kv(f"release:{ctx.envelope.id}")
            while self.bus.transport.get(release) is None:
                threading.Event().wait(0.01)  # a handler doing long work; the test kills us meanwhile
        self.state.total += msg.n
        self.state.applied.append(ctx.envelope.id)

    @on(GetTotal)
    def get_total(self, ctx: Context, msg: GetTotal) -> Total:
        return Total(total=self.state.total, applied=list(self.state.applied))


class Slow(Actor):
    """Works ``seconds`` on each message, then reports to the ``collector`` address."""

    @on(Work)
    def work(self, ctx: Context, msg: Work) -> None:
        threading.Event().wait(msg.seconds)
        ctx.tell("collector", Done(seq=msg.seq, by=ctx.bus.process_id))


class FlakyActor(Actor):
    """Fails the first ``fail_times`` attempts of each key, then succeeds and reports Done."""

    attempts: ClassVar[Counter[str]] = Counter()

    @on(Flaky)
    def flaky(self, ctx: Context, msg: Flaky) -> None:
        FlakyActor.attempts[msg.key] += 1
        if FlakyActor.attempts[msg.key] <= msg.fail_times:
            if msg.crash:
                raise SystemExit(f"crash {msg.key}")
            raise RuntimeError(f"transient failure {FlakyActor.attempts[msg.key]} of {msg.key}")
        ctx.tell("collector", Done(seq=FlakyActor.attempts[msg.key], by=msg.key))

    @on(Work)
    def reject(self, ctx: Context, msg: Work) -> None:
        raise PermanentError(f"work {msg.seq} can never succeed here")
