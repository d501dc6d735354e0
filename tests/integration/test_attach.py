"""Attaching agents of our own: the Python client (``actors.attach``, ``auratown attach``) and a Node.js
assistant that speaks the wire protocol of docs/protocol.md with nothing of ours but the document.

The Node agent (examples/node-assistant, ``npm ci`` from its committed lock file once per session)
takes the assistant's address in a pi-Bench episode run and completes every session, answers a
Python ask, dead-letters what it cannot handle, and asks a running daemon's probe registry.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from actors.attach import Agent, Context, HandlerSpecError, load_handler
from actors.bus import Bus, DeadLetter, MemoryTransport, RemoteError, open_transport
from actors.runtime import HostConfig
from messages import Envelope, ErrorReply, Message, Ping, Pong, decode, encode, envelope_to_dict
from messages.episodes import AssistantReply, EndSession, UserTurn
from messages.probes import ProbeCall
from tests.conftest import ROOT, Processes, auratown, wait_until
from tests.support.node import NodeAssistant, install_node_assistant

pytestmark = pytest.mark.redis

PIBENCH_DEMO = ROOT / "tests" / "fixtures" / "pibench" / "data" / "pibench_demo"
PROTOCOL = ROOT / "docs" / "protocol.md"


@pytest.fixture(scope="session")
def node_assistant(tmp_path_factory: pytest.TempPathFactory) -> NodeAssistant:
    return install_node_assistant(tmp_path_factory.mktemp("node-assistant"))


@pytest.fixture
def client(redis_url: str, namespace: str) -> Iterator[Bus]:
    transport = open_transport(redis_url)
    bus = Bus(transport, namespace)
    yield bus
    bus.close()
    transport.close()


def start_node(node: NodeAssistant, processes: Processes, log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("ab") as err:
        p = subprocess.Popen(node.command(*args), stdout=subprocess.DEVNULL, stderr=err)
    processes.procs.append(p)
    return p


def answers_ping(bus: Bus, address: str) -> Pong | None:
    try:
        reply = bus.ask(address, Ping(seq=1, body="are you there?"), timeout=1.0)
    except Exception:
        return None
    return reply if isinstance(reply, Pong) else None


def run_episodes(redis_url: str, namespace: str, address: str, out: Path) -> subprocess.CompletedProcess[str]:
    return auratown(
        "bench", "episodes", "--tasks", str(PIBENCH_DEMO), "--assistants", f"external:{address}",
        "--bus", redis_url, "--namespace", namespace, "--runs", "1", "--no-ablation", "--out", str(out),
        "--quiet", timeout=180,
    )  # fmt: skip


def finished_sessions(out: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted((out / "units").glob("*.jsonl")):
        rows += [r for r in map(json.loads, path.read_text().splitlines()) if r.get("event") == "finished"]
    return rows


def assistant_turns(out: Path) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for path in sorted((out / "traces").glob("*.jsonl")):
        turns += [
            t
            for t in map(json.loads, path.read_text().splitlines())
            if t.get("type") == "turn" and t.get("role") == "assistant"
        ]
    return turns


def assert_every_session_completed(out: Path, backend: str) -> list[dict[str, Any]]:
    tasks = sorted(p.name for p in (PIBENCH_DEMO / "tasks").iterdir() if p.is_dir())
    sessions = finished_sessions(out)
    assert sorted(s["task_id"] for s in sessions) == tasks
    assert all(s["session"]["reason"] == "complete" and s["session"]["error"] is None for s in sessions)
    turns = assistant_turns(out)
    assert {t["task_id"] for t in turns} == set(tasks)
    assert all(t["kind"] == backend for t in turns), {t["kind"] for t in turns}
    return turns


# ---------------------------------------------------------------- the Node.js assistant


@pytest.fixture
def node_agent(
    node_assistant: NodeAssistant,
    redis_url: str,
    client: Bus,
    processes: Processes,
    tmp_path: Path,
) -> Pong:
    """The Node agent serving ``agent.node``; its answer to a Python ask (it joined its inbox group)."""
    args = ("--redis", redis_url, "--namespace", client.namespace, "--address", "agent.node")
    start_node(node_assistant, processes, tmp_path / "node.log", *args)
    pong = wait_until(lambda: answers_ping(client, "agent.node"), timeout=30, what="the Node agent to answer")
    assert pong is not None
    return pong


def test_a_node_agent_takes_the_assistants_address_and_completes_every_session(
    node_agent: Pong, redis_url: str, namespace: str, client: Bus, tmp_path: Path
) -> None:
    pong = node_agent
    node_presence = [p for p in client.processes() if p.info.get("language") == "node"]
    assert [p.process_id for p in node_presence] == [pong.responder] and node_presence[0].alive

    out = tmp_path / "run"
    r = run_episodes(redis_url, namespace, "agent.node", out)
    assert r.returncode == 0, r.stderr[-3000:]
    turns = assert_every_session_completed(out, "node")
    # Each reply carries the tool call the agent made through the episode's registry (its own ask).
    assert all([c["tool_name"] for c in t["tools"]] == ["list_dir"] for t in turns)
    assert all(t["tools"][0]["status"] == "ok" for t in turns)
    assert client.dead_letters() == []  # EndSession and every turn were acknowledged, nothing refused


def test_the_node_agent_dead_letters_what_it_cannot_handle(node_agent: Pong, client: Bus) -> None:
    inbox = client.keys.inbox("agent.node")
    client.transport.add(inbox, {"m": b"\xc1 not msgpack"})
    client.tell("agent.node", Pong(seq=3))  # a type it has no handler for
    # An ask it cannot handle fails at once with the dead-letter reason, not at the deadline.
    with pytest.raises(RemoteError) as err:
        client.ask("agent.node", ProbeCall(tool="world.time"), timeout=20)
    assert err.value.reason == "unhandled_type"

    def three_letters() -> list[DeadLetter]:
        letters = client.dead_letters()
        return letters if len(letters) == 3 else []

    letters = wait_until(three_letters, what="3 dead letters")
    assert sorted(d.reason for d in letters) == ["malformed", "unhandled_type", "unhandled_type"]
    assert {d.message_type for d in letters} == {"", "sys.pong", "probe.call"}
    assert all(d.source_stream == inbox and d.group == "inbox" and d.data for d in letters)
    assert answers_ping(client, "agent.node") is not None  # still serving


def test_the_node_agent_asks_a_running_daemons_registry(
    node_assistant: NodeAssistant, redis_url: str, namespace: str, processes: Processes
) -> None:
    processes.start_module(
        "deploy.cli", "daemon", "--redis", redis_url, "--namespace", namespace, "--paused",
        "--roles", "clock,world,agents,registry",
    )  # fmt: skip
    r = subprocess.run(
        node_assistant.command("--redis", redis_url, "--namespace", namespace, "--address", "agent.node",
                               "--probe", "world.time", "--timeout", "60"),
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    answer = json.loads(r.stdout)
    assert answer["type"] == "probe.result" and answer["payload"]["status"] == "ok"
    assert answer["payload"]["tool"] == "world.time" and answer["payload"]["result"]


# ---------------------------------------------------------------- auratown attach (Python)

HANDLER = '''
from messages.episodes import AssistantReply, UserTurn


def answer(msg):
    """Every message sent to the address comes here; a returned message is the reply."""
    if isinstance(msg, UserTurn):
        text = f"Python here: on it ({msg.text[:40]})."
        return AssistantReply(task_id=msg.task_id, turn=msg.turn, text=text, backend="python-attach")
    return None  # EndSession, and anything else: acknowledged, nothing sent
'''


def test_auratown_attach_hosts_a_handler_function_until_sigterm(
    redis_url: str, namespace: str, client: Bus, processes: Processes, tmp_path: Path
) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "myagent.py").write_text(textwrap.dedent(HANDLER))
    attach = processes.start_module(
        "deploy.cli", "attach", "--as", "agent.py", "--handler", "myagent:answer", "--app-dir", str(app),
        "--redis", redis_url, "--namespace", namespace,
    )  # fmt: skip
    wait_until(
        lambda: any("agent.py" in p.info.get("addresses", ()) for p in client.processes()),
        timeout=30,
        what="the attached handler's presence",
    )
    out = tmp_path / "run"
    r = run_episodes(redis_url, namespace, "agent.py", out)
    assert r.returncode == 0, r.stderr[-3000:]
    assert_every_session_completed(out, "python-attach")
    assert client.dead_letters() == []

    attach.send_signal(signal.SIGTERM)
    assert attach.wait(timeout=30) == 0
    assert not any("agent.py" in p.info.get("addresses", ()) for p in client.processes())


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("nocolon", "expected MODULE:FUNCTION"),
        ("no_such_module_xyz:f", "cannot import"),
        ("json:nope", "no 'nope'"),
    ],
)
def test_auratown_attach_refuses_a_bad_handler_in_one_line(spec: str, expected: str, redis_url: str) -> None:
    r = auratown("attach", "--as", "agent.x", "--handler", spec, "--redis", redis_url, timeout=60)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and expected in r.stderr


# ---------------------------------------------------------------- the Python client (memory bus)


def _memory_bus() -> Bus:
    return Bus(MemoryTransport(), "attach-unit")


def test_agent_handlers_reply_to_asks_and_to_a_payloads_reply_address() -> None:
    bus = _memory_bus()
    agent = Agent(None, bus.namespace, "agent.mine", bus=bus, config=HostConfig(heartbeat_every=0.2))
    replies: list[AssistantReply] = []

    @agent.on(Ping)
    def ping(msg: Ping) -> Pong:
        return Pong(seq=msg.seq + 1, body=msg.body)

    @agent.on(UserTurn)
    def turn(ctx: Context, msg: UserTurn) -> AssistantReply:
        assert ctx.envelope.payload is msg and ctx.address == "agent.mine"
        return AssistantReply(task_id=msg.task_id, turn=msg.turn, text="noted")

    @agent.on(EndSession)
    def end(msg: EndSession) -> None:
        return None

    sink = Agent(None, bus.namespace, "user.sink", bus=bus)
    sink.on(AssistantReply)(replies.append)
    with agent, sink:
        assert bus.ask("agent.mine", Ping(seq=1, body="x"), timeout=5) == Pong(seq=2, body="x")
        bus.tell("agent.mine", UserTurn(episode_id="e", task_id="t", user_id="u", turn=1, kind="request",
                                        text="hi", reply_to="user.sink", session="nonce-1"))  # fmt: skip
        bus.tell("agent.mine", EndSession(episode_id="e", task_id="t", user_id="u"))
        wait_until(lambda: replies, what="the reply at the payload's reply_to")
        # The session nonce is echoed when the handler leaves it empty.
        assert replies == [AssistantReply(task_id="t", turn=1, text="noted", session="nonce-1")]
        wait_until(lambda: agent.host.in_flight() == 0, what="the end of the session to be acknowledged")
        assert bus.dead_letters() == []


def test_agent_catch_all_handler_and_dead_letters_like_a_built_in_actor() -> None:
    bus = _memory_bus()
    agent = Agent(
        None,
        bus.namespace,
        "agent.picky",
        bus=bus,
        config=HostConfig(retry_backoff=0.01, retry_backoff_max=0.02),
    )
    seen: list[str] = []

    @agent.on(Ping)
    def ping(msg: Ping) -> Pong:
        raise RuntimeError("boom")

    @agent.on(Message)
    def anything(msg: Message) -> None:
        seen.append(msg.message_type)

    with agent:
        bus.tell("agent.picky", Pong(seq=1))
        wait_until(lambda: seen == ["sys.pong"], what="the catch-all handler")
        with pytest.raises(RemoteError) as err:
            bus.ask("agent.picky", Ping(seq=1), timeout=10)
        assert err.value.reason == "handler_error"
    (letter,) = bus.dead_letters()
    assert letter.reason == "handler_error" and letter.attempts == bus.max_attempts


def test_agent_without_a_catch_all_dead_letters_unhandled_types() -> None:
    bus = _memory_bus()
    agent = Agent(None, bus.namespace, "agent.narrow", bus=bus)
    agent.on(Ping)(lambda msg: Pong(seq=msg.seq))
    with agent:
        with pytest.raises(RemoteError) as err:
            bus.ask("agent.narrow", ErrorReply(reason="x"), timeout=10)
        assert err.value.reason == "unhandled_type"


def test_load_handler_names_what_is_wrong() -> None:
    handler: object = load_handler("json:dumps")
    assert handler is json.dumps
    with pytest.raises(HandlerSpecError, match="not a function"):
        load_handler("sys:version")
    with pytest.raises(ValueError, match="no handlers"):
        _ = Agent(None, "ns", "agent.empty", bus=Bus(MemoryTransport(), "ns")).host


# ---------------------------------------------------------------- docs/protocol.md


def test_the_protocols_python_assistant_runs_as_written(
    redis_url: str, namespace: str, client: Bus, processes: Processes, tmp_path: Path
) -> None:
    (example,) = [
        b for b in re.findall(r"```python\n(.*?)```", PROTOCOL.read_text(), re.S) if "agent.run()" in b
    ]
    assert len(example.strip().splitlines()) <= 15
    script = example.replace('"redis://127.0.0.1:6379/0"', repr(redis_url)).replace(
        '"episodes.mine"', repr(namespace)
    )
    (tmp_path / "mine.py").write_text(script)
    with (tmp_path / "mine.log").open("ab") as err:
        p = subprocess.Popen(
            [sys.executable, str(tmp_path / "mine.py")], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    processes.procs.append(p)
    out = tmp_path / "run"
    r = run_episodes(redis_url, namespace, "agent.mine", out)
    assert r.returncode == 0, r.stderr[-3000:]
    assert_every_session_completed(out, "mine")
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 0


def _hex_block(title: str) -> bytes:
    text = PROTOCOL.read_text()
    match = re.search(rf"<!-- {re.escape(title)} -->\n```text\n(.*?)```", text, re.S)
    assert match, f"no hex block {title!r} in docs/protocol.md"
    # "0000: de 00 10 ...": an offset, then 16 bytes in hex
    return bytes.fromhex("".join(line.split(":", 1)[1] for line in match.group(1).strip().splitlines()))


def test_the_protocols_worked_example_bytes_decode_to_its_envelope() -> None:
    data = _hex_block("bytes: episode.user_turn")
    env = decode(data)
    assert isinstance(env, Envelope) and isinstance(env.payload, UserTurn)
    assert env.payload.reply_to == "user.demo.r1" and env.payload.session == "s-1"
    assert encode(env) == data  # Python writes these very bytes
    assert msgpack.unpackb(data) == envelope_to_dict(env)


def test_every_schema_the_protocol_cites_is_exported(tmp_path: Path) -> None:
    r = auratown("schema", "--out", str(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    cited = set(re.findall(r"`([a-z_]+(?:\.[a-z_]+)+\.v\d+\.json)`", PROTOCOL.read_text())) | {
        "envelope.json"
    }
    assert len(cited) >= 8
    missing = sorted(name for name in cited if not (tmp_path / name).exists())
    assert missing == [], missing


def test_the_protocol_documents_the_key_layout_the_bus_uses() -> None:
    from actors.bus import INBOX_GROUP, KeyLayout

    text = PROTOCOL.read_text()
    keys = KeyLayout("episodes.demo")
    for key in (keys.inbox("agent.node"), keys.topic("town.ticks"), keys.dead_letters, keys.presence,
                keys.alive("host-1-abc"), keys.inbox("_reply.host-1-abc")):  # fmt: skip
        assert f"`{key}`" in text, key
    assert f'"{INBOX_GROUP}"' in text
