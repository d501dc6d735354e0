"""The echo role: answers ``sys.ping`` with ``sys.pong`` (health checks, latency probes)."""

from __future__ import annotations

from actors.runtime import Actor, Context, on
from messages import Ping, Pong


class EchoActor(Actor):
    @on(Ping)
    def ping(self, ctx: Context, msg: Ping) -> Pong:
        return Pong(seq=msg.seq, body=msg.body, responder=ctx.bus.process_id)
