"""The redis transport across real OS processes: asks, crashes, poison input, graceful shutdown."""

from __future__ import annotations

import signal
import uuid

import msgpack
import pytest
import redis

from actors.bus import FIELD, Bus
from actors.bus._redis import RedisTransport
from actors.bus.local_server import LocalRedisServer
from actors.runtime import Host, HostConfig
from messages import Ping, Pong, decode, envelope_to_dict
from tests.conftest import Processes, needs_tls_server, wait_until
from tests.support.actors import Echo
from tests.support.messages import GetTotal, Incr, Total, Work


@pytest.fixture
def rbus(redis_url: str, namespace: str) -> Bus:
    b = Bus(RedisTransport(redis_url), namespace)
    yield b  # type: ignore[misc]
    b.close()
    b.transport.close()


def hosting(bus: Bus, address: str) -> list[str]:
    """Ids of live processes that host ``address``, from their presence records."""
    return [p.process_id for p in bus.processes() if p.alive and address in p.info.get("addresses", [])]


def test_ask_and_reply_between_two_processes(
    rbus: Bus, redis_url: str, namespace: str, processes: Processes
) -> None:
    worker = processes.start(redis_url, namespace, "echo")
    (pid,) = wait_until(lambda: hosting(rbus, "echo"), what="the echo worker's presence")
    replies = [rbus.ask("echo", Ping(seq=i, body="across"), timeout=10) for i in range(20)]
    assert replies == [Pong(seq=i, body="across", responder=pid) for i in range(20)]
    assert pid != rbus.process_id
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=20) == 0
    assert not hosting(rbus, "echo")


def test_kill_9_mid_handler_hands_the_message_to_another_consumer_once(
    rbus: Bus, redis_url: str, namespace: str, processes: Processes
) -> None:
    first = processes.start(redis_url, namespace, "counter", "--visibility", "1.0")
    wait_until(lambda: hosting(rbus, "counter"), what="the first counter worker")
    env = rbus.tell("counter", Incr(n=7, hold=True))
    started = rbus.keys.kv(f"started:{env.id}")
    wait_until(lambda: rbus.transport.get(started), what="the handler to start in the first worker")
    first.kill()  # SIGKILL in the middle of the handler
    first.wait(timeout=10)
    rbus.transport.set(rbus.keys.kv(f"release:{env.id}"), b"go")  # the next attempt may finish
    second = processes.start(redis_url, namespace, "counter", "--visibility", "1.0")
    total = wait_until(
        lambda: (t := rbus.ask("counter", GetTotal(), timeout=10)) and isinstance(t, Total) and t.total and t,
        timeout=30,
        what="the reclaimed message to be applied",
    )
    assert total.total == 7
    assert total.applied == [env.id]
    assert rbus.transport.pending(rbus.keys.inbox("counter"), "inbox") == []
    # a second full check after more traffic: the effect is still counted once
    rbus.tell("counter", Incr(n=1))
    wait_until(lambda: getattr(rbus.ask("counter", GetTotal(), timeout=10), "total", 0) == 8, what="total 8")
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=20) == 0


def test_poison_entries_are_dead_lettered_while_the_consumer_keeps_serving(
    rbus: Bus, redis_url: str, namespace: str, processes: Processes
) -> None:
    processes.start(redis_url, namespace, "echo")
    wait_until(lambda: hosting(rbus, "echo"), what="the echo worker")
    good = envelope_to_dict(rbus.envelope("echo", Ping(seq=1)))
    raw = redis.Redis.from_url(redis_url)
    inbox = rbus.keys.inbox("echo")
    poison = {
        "malformed": b"\x00\xc1 this is not msgpack",
        "unknown_type": msgpack.packb({**good, "type": "nobody.knows"}),
        "unsupported_version": msgpack.packb({**good, "version": 99}),
        "invalid_payload": msgpack.packb({**good, "payload": {"seq": "NaN-ish"}}),
    }
    for data in poison.values():
        raw.xadd(inbox, {FIELD: data})
    raw.xadd(inbox, {"not-m": b"x"})  # an entry without the message field
    assert rbus.ask("echo", Ping(seq=2, body="still here"), timeout=10) == Pong(
        seq=2, body="still here", responder=hosting(rbus, "echo")[0]
    )
    dls = wait_until(lambda: len(rbus.dead_letters()) == 5 and rbus.dead_letters(), what="five dead letters")
    by_reason = {d.reason: d for d in dls}
    assert set(by_reason) == {"malformed", "unknown_type", "unsupported_version", "invalid_payload"}
    assert sum(d.reason == "malformed" for d in dls) == 2
    for reason, data in poison.items():
        assert any(d.reason == reason and d.data == data for d in dls), reason
    assert all(d.detail for d in dls)
    assert rbus.transport.pending(inbox, "inbox") == []
    raw.close()


def test_graceful_shutdown_with_messages_in_flight_loses_none(
    rbus: Bus, redis_url: str, namespace: str, processes: Processes
) -> None:
    first = processes.start(redis_url, namespace, "slow", "--drain", "5")
    wait_until(lambda: hosting(rbus, "slow"), what="the first slow worker")
    n = 30
    for i in range(n):
        rbus.tell("slow", Work(seq=i, seconds=0.05))
    collector = rbus.keys.inbox("collector")
    wait_until(lambda: rbus.transport.length(collector) >= 3, what="some work to finish")
    first.send_signal(signal.SIGTERM)  # most messages are still queued or running
    assert first.wait(timeout=30) == 0
    done_early = rbus.transport.length(collector)
    assert done_early < n, "the shutdown came too late to test anything"
    processes.start(redis_url, namespace, "slow")
    wait_until(lambda: rbus.transport.length(collector) >= n, timeout=60, what="every message to be done")
    seqs = [decode(e.fields[FIELD]).payload.seq for e in rbus.transport.range(collector)]  # type: ignore[attr-defined]
    assert sorted(seqs) == list(range(n))  # every one, each once
    assert rbus.transport.pending(rbus.keys.inbox("slow"), "inbox") == []
    assert rbus.dead_letters() == []


def test_a_killed_process_disappears_from_presence(
    rbus: Bus, redis_url: str, namespace: str, processes: Processes
) -> None:
    worker = processes.start(redis_url, namespace, "echo")
    (pid,) = wait_until(lambda: hosting(rbus, "echo"), what="presence")
    worker.kill()
    worker.wait(timeout=10)
    wait_until(
        lambda: not any(p.alive for p in rbus.processes() if p.process_id == pid),
        timeout=10,
        what="the heartbeat to expire",
    )
    assert pid in rbus.sweep_dead_processes()
    assert all(p.process_id != pid for p in rbus.processes())


def test_every_key_of_a_namespace_carries_its_hash_tag(rbus: Bus, redis_url: str, namespace: str) -> None:
    with Host(rbus, HostConfig(heartbeat_every=0.2)) as host:
        host.spawn(Echo, "echo")
        rbus.ask("echo", Ping(), timeout=5)
        rbus.ask_async("echo", Ping(), timeout=5).result(timeout=5)
        rbus.tell("nobody-home", Ping())
        rbus.publish("town.events", Ping())
        raw = redis.Redis.from_url(redis_url)
        keys = [k.decode() for k in raw.scan_iter(match=f"*{namespace}*")]
        raw.close()
    assert len(keys) >= 5
    assert all(f"{{{namespace}}}" in k for k in keys), keys


@pytest.fixture(scope="module")
def secured_server() -> LocalRedisServer:
    server = LocalRedisServer(password="s3cret-pw", unix_socket=True).start()
    client = redis.Redis.from_url(server.url)
    client.execute_command("ACL", "SETUSER", "agent", "on", ">agent-pw", "~*", "&*", "+@all")
    client.close()
    yield server  # type: ignore[misc]
    server.stop()


@pytest.mark.parametrize("kind", ["password", "unix_password", "acl_user"])
def test_redis_urls_with_passwords_sockets_and_acl_users(secured_server: LocalRedisServer, kind: str) -> None:
    urls = {
        "password": secured_server.url,
        "unix_password": secured_server.socket_url,
        "acl_user": f"redis://agent:agent-pw@127.0.0.1:{secured_server.port}/0",
    }
    transport = RedisTransport(urls[kind])
    bus = Bus(transport, f"url-{uuid.uuid4().hex[:6]}")
    try:
        with Host(bus) as host:
            host.spawn(Echo, "echo")
            assert bus.ask("echo", Ping(seq=3), timeout=5) == Pong(seq=3, responder=bus.process_id)
        assert "s3cret-pw" not in transport.url and "agent-pw" not in transport.url
    finally:
        bus.close()
        transport.close()


def test_rediss_tls_end_to_end() -> None:
    needs_tls_server()
    server = LocalRedisServer(tls=True, password="tls-pw").start()
    try:
        assert server.url.startswith("rediss://")
        transport = RedisTransport(server.url)
        bus = Bus(transport, "tls-test")
        with Host(bus) as host:
            host.spawn(Echo, "echo")
            assert bus.ask("echo", Ping(seq=9), timeout=5) == Pong(seq=9, responder=bus.process_id)
        bus.close()
        transport.close()
        plain = redis.Redis(host="127.0.0.1", port=server.port, password="tls-pw", socket_timeout=2)
        with pytest.raises(redis.ConnectionError):
            plain.ping()  # the TLS port does not speak plain text
        plain.close()
    finally:
        server.stop()


def test_a_wrong_password_is_a_clear_error(secured_server: LocalRedisServer) -> None:
    transport = RedisTransport(f"redis://:wrong@127.0.0.1:{secured_server.port}/0")
    with pytest.raises(redis.AuthenticationError):
        transport.ping()
    transport.close()
