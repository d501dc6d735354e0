"""Hostile input written straight into a running host's inbox by an agent's own ACL user: the
expansion bombs of issue 13 (4.8 MB of 5 million empty arrays, ~350 MB once built) and every
envelope the protocol calls malformed although msgpack reads it (``format`` 1.0 or true, NaN and
infinite times, an absurd deadline, ``attempt = 2^63-1``, an extra field beside ``m`` or in the
envelope). Each is dead-lettered with its reason, the host's memory stays flat, valid traffic
interleaved with them is served. Prints ``FAULT FIGURES`` (``pytest -rP``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgpack
import pytest
import redis

from actors.bus import FIELD, Bus
from actors.bus._redis import RedisTransport
from deploy.acl_command import agent_acl_line
from messages import DEFAULT_LIMITS, Ping, Pong, envelope_to_dict
from tests.conftest import ROOT, Processes, wait_until
from tests.support.fuzz import BOMB_KINDS, STRICT_CASES, FuzzEntry, bomb, strict_entry

pytestmark = pytest.mark.redis

EMPTY_ARRAY_BOMBS = 4
"""The issue's bomb, this many times (before the fix each cost the consumer ~350 MB)."""
RSS_GROWTH_LIMIT_MB = 150
BOMB_LIMIT = {
    "empty_arrays": "max_entry_bytes",
    "nested_arrays": "max_objects",
    "deep_nesting": "max_depth",
    "wide_map": "max_map_len",
    "long_string": "max_str_len",
    "ext_type": "max_ext_len",
}
assert set(BOMB_LIMIT) == set(BOMB_KINDS)


def figures(name: str, **values: Any) -> None:
    print(f"FAULT FIGURES {name}: " + json.dumps(values, sort_keys=True))


def _vm_kb(pid: int, field: str) -> int:
    """``VmHWM`` (peak RSS) or ``VmRSS`` of a live process, in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def _as_user(url: str, user: str, password: str) -> str:
    parts = urlsplit(url)
    netloc = f"{user}:{password}@{parts.hostname}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


_DECODE_ONE = """
import sys, tracemalloc, msgpack
from messages import DecodeError, decode
from tests.support.fuzz import bomb
from tests.unit.test_codec import envelope
from messages import Ping, envelope_to_dict
data = bomb("empty_arrays", envelope_to_dict(envelope(Ping(seq=1)))).fields["m"]
tracemalloc.start()  # the bytes built while decoding, whatever the process's earlier peak
try:
    if sys.argv[1] == "unbounded":  # what decode() did before: msgpack's default limits
        built = msgpack.unpackb(data, raw=False)
    else:
        decode(data)
except (DecodeError, ValueError) as exc:
    pass
print(tracemalloc.get_traced_memory()[1])
"""


def _decode_rss_mb(mode: str) -> float:
    """Peak memory (MB) built by a fresh process decoding one bomb: unbounded (before) or now."""
    out = subprocess.run(
        [sys.executable, "-c", _DECODE_ONE, mode], cwd=ROOT, capture_output=True, check=True, timeout=60
    )
    return round(int(out.stdout.decode().split()[-1]) / 2**20, 1)


def test_bombs_and_malformed_envelopes_are_dead_lettered_with_their_reason(
    redis_url: str, namespace: str, processes: Processes, tmp_path: Path
) -> None:
    raw = redis.Redis.from_url(redis_url, socket_timeout=10)
    ident = f"mallory_{uuid.uuid4().hex[:6]}"
    rules = agent_acl_line(ident, namespace, "mallory-pw", sends=("echo",)).split()[2:]
    raw.execute_command("ACL", "SETUSER", ident, *rules)
    agent = redis.Redis.from_url(_as_user(redis_url, ident, "mallory-pw"), socket_timeout=10)
    with (tmp_path / "echo.log").open("wb") as log:
        worker = processes.start_module(
            "tests.support.worker", redis_url, namespace, "echo", stderr=log.fileno()
        )
    transport = RedisTransport(redis_url)
    bus = Bus(transport, namespace)
    inbox = bus.keys.inbox("echo")
    try:
        wait_until(
            lambda: any("echo" in p.info.get("addresses", ()) for p in bus.processes() if p.alive),
            timeout=30,
            what="the echo host",
        )
        assert bus.ask("echo", Ping(seq=0, body="warm"), timeout=30) == Pong(
            seq=0, body="warm", responder=_responder(bus)
        )
        rss_before_kb = _vm_kb(worker.pid, "VmHWM")
        # The attack, as the agent's ACL user writes it, with valid asks between the entries.
        template = envelope_to_dict(bus.envelope("echo", Ping(seq=1, body="t"), sender=ident))
        hostile: list[tuple[FuzzEntry, str]] = []
        for i, (field, value, words) in enumerate(STRICT_CASES):
            hostile.append((strict_entry({**template, "id": f"strict-{i}"}, field, value), words))
        for i, kind in enumerate([*["empty_arrays"] * EMPTY_ARRAY_BOMBS, *BOMB_KINDS[1:]]):
            hostile.append((bomb(kind, {**template, "id": f"bomb-{i}"}), BOMB_LIMIT[kind]))
        valid_m = _pack({**template, "id": "extra-1"})
        hostile.append((FuzzEntry("extra_entry_field", "malformed", {FIELD: valid_m, "x": b"1"}), "beside"))
        hostile.append((FuzzEntry("no_message_field", "malformed", {"x": valid_m}), "no 'm'"))
        started = time.monotonic()
        expected: dict[str, tuple[FuzzEntry, str]] = {}
        asks = 0
        for i, (entry, words) in enumerate(hostile):
            entry_id = agent.xadd(inbox, entry.fields)  # type: ignore[arg-type]
            expected[entry_id.decode()] = (entry, words)
            if i % 4 == 3:
                body = "v" * (3 * 2**20 if i == 3 else 100)  # a large message within the limit is valid
                reply = bus.ask("echo", Ping(seq=i, body=body), timeout=30)
                assert reply == Pong(seq=i, body=body, responder=_responder(bus))
                asks += 1
        wait_until(lambda: len(bus.dead_letters()) >= len(hostile), timeout=60, what="dead letters")
        elapsed = time.monotonic() - started
        for i in range(3):  # still served after all of it
            assert bus.ask("echo", Ping(seq=1000 + i), timeout=30) == Pong(
                seq=1000 + i, responder=_responder(bus)
            )
            asks += 1
        dead = {d.source_entry_id: d for d in bus.dead_letters() if d.source_stream == inbox}
        assert set(dead) == set(expected)  # each hostile entry dead-lettered, nothing valid was
        wrong = [
            (e.kind, e.reason, words, dead[i].reason, dead[i].detail[:120])
            for i, (e, words) in expected.items()
            if dead[i].reason != e.reason or words not in dead[i].detail
        ]
        assert not wrong, wrong
        assert not any("delivered" in d.detail for d in dead.values())
        assert transport.pending(inbox, "inbox") == []
        assert worker.poll() is None
        rss_after_kb = _vm_kb(worker.pid, "VmHWM")
        growth_mb = (rss_after_kb - rss_before_kb) / 1024
        assert growth_mb < RSS_GROWTH_LIMIT_MB, growth_mb
        before_fix_mb, after_fix_mb = _decode_rss_mb("unbounded"), _decode_rss_mb("bounded")
        assert after_fix_mb < 10, after_fix_mb  # the bytes are refused before anything is built
        assert before_fix_mb > 200, before_fix_mb  # what this test measures is the bomb's expansion
        figures(
            "hostile_input",
            entries=len(hostile),
            by_kind=dict(sorted(Counter(e.kind for e, _ in hostile).items())),
            dead_lettered_by_reason=dict(sorted(Counter(d.reason for d in dead.values()).items())),
            valid_asks_answered=asks,
            bytes_written=sum(len(v) for e, _ in hostile for v in e.fields.values()),
            consumer_peak_rss_mb={
                "before": round(rss_before_kb / 1024, 1),
                "after": round(rss_after_kb / 1024, 1),
            },
            one_bomb_decode_peak_traced_mb={"unbounded_msgpack": before_fix_mb, "now": after_fix_mb},
            max_entry_bytes=DEFAULT_LIMITS.max_entry_bytes,
            seconds=round(elapsed, 2),
        )
    finally:
        keys = list(raw.scan_iter(match=f"*{{{namespace}}}*"))
        if keys:
            raw.delete(*keys)
        raw.execute_command("ACL", "DELUSER", ident)
        agent.close()
        raw.close()
        bus.close()
        transport.close()


def _pack(wire: dict[str, Any]) -> bytes:
    packed: bytes = msgpack.packb(wire, use_bin_type=True)
    return packed


def _responder(bus: Bus) -> str:
    return next(p.process_id for p in bus.processes() if p.alive and "echo" in p.info.get("addresses", ()))
