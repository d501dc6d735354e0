"""Golden encoded messages: the bytes committed here must keep decoding to these envelopes.

When a model's schema version is bumped, keep its old fixture and ship an upcaster: the old bytes
must still decode (to the new model). Regenerate new fixtures with ``python -m tests.golden.cases``.
"""

from __future__ import annotations

from pathlib import Path

from messages import Envelope, ErrorReply, Ping, Pong, encode

HERE = Path(__file__).parent

_HEADER = dict(namespace="town:golden", wall_time=1766361600.25)

CASES: dict[str, Envelope] = {
    "sys.ping.v1.msgpack": Envelope(
        id="0123456789abcdef0123456789abcdef",
        sender="cli",
        recipient="echo",
        payload=Ping(seq=42, body="where is Lin Wei?"),
        correlation_id="corr-1",
        reply_to="_reply.host-1-abc.t1",
        deadline=1766361610.25,
        trace={"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
        **_HEADER,
    ),
    "sys.pong.v1.msgpack": Envelope(
        id="fedcba9876543210fedcba9876543210",
        sender="echo",
        recipient="_reply.host-1-abc.t1",
        payload=Pong(seq=42, body="where is Lin Wei?", responder="host-2-def"),
        correlation_id="corr-1",
        causation_id="0123456789abcdef0123456789abcdef",
        sim_time=390.0,
        attempt=2,
        **_HEADER,
    ),
    "sys.error.v1.msgpack": Envelope(
        id="00000000000000000000000000000001",
        sender="",
        recipient="_reply.host-1-abc",
        payload=ErrorReply(reason="handler_error", detail="RuntimeError: boom", request_type="sys.ping"),
        correlation_id="corr-2",
        **_HEADER,
    ),
}


def regenerate() -> None:
    for name, env in CASES.items():
        (HERE / name).write_bytes(encode(env))
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    regenerate()
