"""Every episode tool over MCP (``actors.mcp``, ``auratown mcp``), driven by real MCP clients of the
official SDK: tools listed with their JSON Schemas from a live episode registry, calls that go
through the registry (history, audit, policy), a whole episode session played by an MCP client as
the external assistant, the stdio transport, and the bearer token on HTTP.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from actors.bus import Bus
from actors.episodes import EpisodeRegistryActor
from actors.mcp import EpisodeMcpServer, HttpEndpoint, TurnBridge, TurnInbox, served_name
from actors.roles.registry import AUDIT_TOPIC
from actors.runtime import Host, HostConfig
from bench.episodes.loader import LoadedEpisode, load_episode
from messages.episodes import EndSession, GetToolHistory, ToolHistory, UserTurn
from messages.probes import AuditRecord, ProbePolicy
from tests.conftest import ROOT
from tests.support.programs import run_module
from tests.support.topics import topic_messages
from world.episodes.apps import EpisodeTools
from world.episodes.assistant.oracle import OracleTurn, fill

pytestmark = pytest.mark.redis

DEMO = ROOT / "tests" / "fixtures" / "pibench" / "data" / "pibench_demo"
REGISTRY = "registry.mcp-test"
DENIED = ProbePolicy(deny=("send_message",))
ASSISTANT = "agent.mcp"
TASK = "order_coffee_dripper"


@pytest.fixture(scope="module")
def demo() -> LoadedEpisode:
    return load_episode(DEMO)


@pytest.fixture
def registry(redis_bus: Bus, demo: LoadedEpisode) -> Iterator[str]:
    """The demo persona's episode registry (its seed, its tools.yaml), denying ``send_message``."""
    host = Host(redis_bus, HostConfig(block_ms=50), name="mcp-registry")
    host.spawn(lambda: EpisodeRegistryActor(DENIED, seed=demo.seed, offered=demo.offered), REGISTRY)
    host.start()
    yield REGISTRY
    host.stop(drain_timeout=5)


@pytest.fixture
def endpoint(redis_bus: Bus, registry: str) -> Iterator[HttpEndpoint]:
    """The registry's tools over streamable HTTP on a free loopback port."""
    server = EpisodeMcpServer(redis_bus, registry=registry, caller="mcp-tester", ask_timeout=10)
    http = HttpEndpoint(server, "127.0.0.1", 0).start()
    yield http
    http.stop()


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


def audits(bus: Bus) -> list[AuditRecord]:
    return topic_messages(bus, AUDIT_TOPIC, AuditRecord)


# ---------------------------------------------------------------- listing and calling


def test_the_registry_s_offered_and_allowed_tools_are_listed_with_their_json_schemas(
    endpoint: HttpEndpoint, demo: LoadedEpisode
) -> None:
    async def listed() -> list[types.Tool]:
        async with Client(endpoint.url) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in asyncio.run(listed())}
    expected = EpisodeTools(DENIED, offered=demo.offered).tool_list().functions
    by_name = {served_name(f["function"]["name"]): f["function"] for f in expected}
    assert set(tools) == set(by_name)
    # Apps on AppWorld's surface, as an MCP client naming this server "appworld" shows them.
    assert {"amazon__login", "amazon__place_order", "gmail__send_email", "read_file"} <= set(tools)
    assert not any(name.startswith("mcp_appworld_") for name in tools)
    # Only what tools.yaml offers (no spotify, no todoist) and what the policy allows.
    assert not any(name.startswith(("spotify__", "todoist__")) for name in tools)
    assert "send_message" not in tools
    for name, tool in tools.items():
        assert tool.input_schema == by_name[name]["parameters"]
        assert tool.description == by_name[name]["description"]
    login = tools["amazon__login"].input_schema
    assert login["type"] == "object" and set(login["required"]) == {"username", "password"}


def test_calls_go_through_the_registry_its_history_and_its_audit(
    endpoint: HttpEndpoint, redis_bus: Bus
) -> None:
    async def calls() -> dict[str, types.CallToolResult]:
        out: dict[str, types.CallToolResult] = {}
        async with Client(endpoint.url) as client:
            out["write"] = await client.call_tool("write_file", {"path": "notes/a.md", "content": "day one"})
            out["read"] = await client.call_tool("read_file", {"path": "notes/a.md"})
            out["login"] = await client.call_tool(
                "amazon__login", {"username": "mina.okafor@example.com", "password": "pour-over-2025"}
            )
            token = structured(out["login"])["response"]["access_token"]
            out["add"] = await client.call_tool(
                "amazon__add_product_to_cart", {"access_token": token, "product_id": 1578, "quantity": 2}
            )
            out["cart"] = await client.call_tool("amazon__show_cart", {"access_token": token})
            out["bad_args"] = await client.call_tool("write_file", {"path": "x.md"})
            out["unknown"] = await client.call_tool("teleport", {"to": "Lisbon"})
            out["denied"] = await client.call_tool("send_message", {"to": "Theo", "text": "hello"})
            out["refused"] = await client.call_tool("amazon__show_cart", {"access_token": "not-a-token"})
        return out

    out = asyncio.run(calls())
    assert structured(out["write"])["created"] is True and not out["write"].is_error
    assert "day one" in json.dumps(structured(out["read"]))
    assert json.loads(text(out["read"])) == structured(out["read"])
    cart = structured(out["cart"])["response"]
    assert [(i["product_id"], i["quantity"]) for i in cart["cart_items"]] == [(1578, 2)]
    for key, status in [("bad_args", "invalid_args"), ("unknown", "unknown_tool"), ("denied", "denied")]:
        result = out[key]
        assert result.is_error, key
        assert text(result).startswith(f"{status}: "), result
        assert structured(result)["status"] == status
    refused = out["refused"]
    assert refused.is_error and structured(refused)["status"] == "unauthorized"
    # The app's own refusal body comes with the error.
    assert "message" in structured(refused)["response"]
    assert '"response"' in text(refused)

    history = redis_bus.ask(REGISTRY, GetToolHistory(), timeout=10)
    assert isinstance(history, ToolHistory)
    assert [(r.tool_name, r.status) for r in history.records] == [
        ("write_file", "ok"),
        ("read_file", "ok"),
        ("mcp_appworld_amazon__login", "ok"),
        ("mcp_appworld_amazon__add_product_to_cart", "ok"),
        ("mcp_appworld_amazon__show_cart", "ok"),
        ("write_file", "invalid_args"),
        ("teleport", "unknown_tool"),
        ("send_message", "denied"),
        ("mcp_appworld_amazon__show_cart", "unauthorized"),
    ]
    added = history.records[3].call
    token = structured(out["login"])["response"]["access_token"]
    assert (added["access_token"], added["product_id"], added["quantity"]) == (token, 1578, 2)
    seen = audits(redis_bus)
    assert [a.tool for a in seen] == [r.tool_name for r in history.records]
    assert {a.caller for a in seen} == {"mcp-tester"}
    # The app tool was asked for by its published name, not the MCP one.
    assert seen[2].requested == "mcp_appworld_amazon__login"


def test_a_registry_that_does_not_answer_is_an_error_not_a_hung_client(redis_bus: Bus) -> None:
    server = EpisodeMcpServer(redis_bus, registry="registry.nobody", ask_timeout=0.3)
    http = HttpEndpoint(server, "127.0.0.1", 0).start()

    async def attempt() -> tuple[str, types.CallToolResult]:
        async with Client(http.url) as client:
            with pytest.raises(MCPError) as listing:
                await client.list_tools()
            return listing.value.message, await client.call_tool("read_file", {"path": "a.md"})

    try:
        why, result = asyncio.run(asyncio.wait_for(attempt(), 20))
    finally:
        http.stop()
    assert "registry.nobody did not list its tools within 0.3s" in why
    assert result.is_error and structured(result)["status"] == "unavailable"
    assert "did not answer within 0.3s" in text(result)


# ---------------------------------------------------------------- a whole session, MCP client as assistant


def test_the_turn_inbox_hands_out_in_order_wakes_a_waiter_and_takes_a_redelivery_once() -> None:
    inbox = TurnInbox()
    turn = UserTurn(
        episode_id="ep", task_id=TASK, user_id="u", turn=1, kind="request", text="hi", reply_to="user.ep"
    )
    end = EndSession(episode_id="ep", task_id=TASK, user_id="u")

    async def scenario() -> tuple[object, ...]:
        waiter = asyncio.ensure_future(inbox.next(10))
        assert await asyncio.to_thread(inbox.put, turn, message_id="m1")  # from another thread
        first = await waiter
        redelivered = inbox.put(turn, message_id="m1")
        inbox.put(end, message_id="m2")
        return first, redelivered, await inbox.next(0), await inbox.next(0)

    assert asyncio.run(scenario()) == (turn, False, end, None)


def one_task_episode(tmp_path: Path) -> Path:
    """The demo episode with its order task alone (the one with a gold path): one short session."""
    root = tmp_path / "data" / "pibench_demo"  # the task names its scorer under data/pibench_demo/
    shutil.copytree(DEMO, root)
    shutil.rmtree(root / "tasks" / "survey_recent_papers")
    (root / "episode.yaml").write_text(
        "schema_version: v2\nepisode_id: pibench_demo_episode\nuser_id: pibench_demo\n"
        f"tasks:\n  - task_id: {TASK}\n    depends_on: []\n"
    )
    return root


class BenchRun(threading.Thread):
    """``auratown bench episodes`` in this process (``run_episodes``), its outcome kept."""

    def __init__(self, argv: list[str]) -> None:
        super().__init__(name="bench-episodes", daemon=True)
        self.argv = argv
        self.error: BaseException | None = None

    def run(self) -> None:
        from bench.episodes.command import run_episodes
        from deploy.cli import parse_args

        try:
            run_episodes(parse_args(self.argv))
        except BaseException as exc:
            self.error = exc


async def play_as_the_assistant(
    client: Client, scripts: dict[str, tuple[OracleTurn, ...]], tasks: int
) -> list[dict[str, Any]]:
    """The MCP client's loop: next_turn, the gold path's calls, reply, until every session ended."""
    seen: list[dict[str, Any]] = []
    saved: dict[str, Any] = {}
    ended = 0
    while ended < tasks:
        got = structured(await client.call_tool("next_turn", {"timeout_seconds": 20}))
        assert "waiting" not in got, "no turn came within 20 s"
        seen.append(got)
        if "ended" in got:
            ended += 1
            continue
        script = scripts[got["task_id"]]
        step = script[min(got["turn"], len(script)) - 1]
        if got["turn"] == 1:
            saved = {}
        if got["turn"] <= len(script):
            for call in step.calls:
                result = await client.call_tool(served_name(call.tool), fill(call.args, saved))
                assert not result.is_error, result
                if call.save is not None:
                    data = structured(result)
                    saved[call.save] = data.get("response", data)
        sent = structured(await client.call_tool("reply", {"text": str(fill(step.reply, saved))}))
        assert sent == {"sent": True, "task_id": got["task_id"], "turn": got["turn"]}
    return seen


def test_an_mcp_client_plays_a_whole_session_as_the_external_assistant(
    tmp_path: Path, redis_url: str, namespace: str, redis_bus: Bus
) -> None:
    tasks_dir = one_task_episode(tmp_path)
    episode = load_episode(tasks_dir)
    scripts = {t.task.task_id: tuple(t.task.extensions.oracle) for t in episode.tasks}
    bridge = TurnBridge(redis_bus, ASSISTANT, config=HostConfig(block_ms=50)).start()
    server = EpisodeMcpServer(redis_bus, bridge=bridge, ask_timeout=10)
    http = HttpEndpoint(server, "127.0.0.1", 0).start()
    out = tmp_path / "run"
    run = BenchRun(
        ["bench", "episodes", "--tasks", str(tasks_dir), "--assistants", f"external:{ASSISTANT}",
         "--bus", redis_url, "--namespace", namespace, "--runs", "1", "--no-ablation",
         "--session-timeout", "60", "--out", str(out), "--quiet"]
    )  # fmt: skip
    notices: list[str] = []
    legacy_notice = asyncio.Event()

    async def noticed(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            notices.append("legacy")
            legacy_notice.set()

    async def session() -> tuple[list[str], list[str], list[dict[str, Any]], list[str]]:
        # The player speaks the handshake era (as most MCP clients today); a 2026-07-28 client
        # listens for the same change on subscriptions/listen.
        async with (
            Client(http.url, mode="legacy", message_handler=noticed) as player,
            Client(http.url) as modern,
        ):
            before = [t.name for t in (await player.list_tools()).tools]
            early = await player.call_tool("reply", {"text": "too early"})
            assert early.is_error and structured(early)["status"] == "failed"
            idle = await player.call_tool("next_turn", {"timeout_seconds": 0})
            assert structured(idle) == {"waiting": True}
            async with modern.listen(tools_list_changed=True) as events:
                run.start()
                seen = await play_as_the_assistant(player, scripts, len(scripts))
                async with asyncio.timeout(10):
                    async for _event in events:
                        notices.append("modern")
                        break
                    await legacy_notice.wait()  # on the standalone stream, beside the calls' answers
            after = [t.name for t in (await player.list_tools()).tools]
            return before, after, seen, notices

    try:
        before, after, seen, got_notices = asyncio.run(asyncio.wait_for(session(), 90))
        run.join(60)
    finally:
        http.stop()
        bridge.close()
    assert not run.is_alive() and run.error is None, run.error
    assert before == ["next_turn", "reply"]
    assert {"next_turn", "reply", "amazon__place_order", "read_file"} <= set(after)
    assert sorted(got_notices) == ["legacy", "modern"]
    assert [s.get("task_id", s.get("ended")) for s in seen] == [TASK, TASK]
    assert seen[0]["turn"] == 1 and seen[0]["kind"] == "request" and "dripper" in seen[0]["text"]
    assert seen[-1] == {"ended": TASK}

    # The session ended normally and was graded as the gold path deserves.
    summary = json.loads((out / "summary.json").read_text())
    key = f"pibench_demo_episode.external-{ASSISTANT}.r1"
    unit = summary["units"][key]
    assert unit["tasks"][TASK]["end"] == "complete" and unit["tasks"][TASK]["comp"] == 1.0
    trace = [json.loads(line) for line in (out / "traces" / f"{key}.jsonl").read_text().splitlines()]
    replies = [t for t in trace if t["type"] == "turn" and t["role"] == "assistant"]
    oracle_calls = [c.tool for c in scripts[TASK][0].calls]
    assert [r["kind"] for r in replies] == ["mcp"]
    assert [c["tool_name"] for c in replies[0]["tools"]] == oracle_calls
    grade = next(t for t in trace if t["type"] == "grade")
    assert all(c["passed"] for c in grade["criteria"] if c["source"] == "rule")

    # The registry's authoritative history holds the MCP calls (read back from its persisted state),
    # and each was audited under the assistant's address.
    host = Host(redis_bus, HostConfig(block_ms=50), name="history-reader")
    host.spawn(EpisodeRegistryActor, f"registry.{key}")
    host.start()
    try:
        history = redis_bus.ask(f"registry.{key}", GetToolHistory(task_id=TASK), timeout=10)
    finally:
        host.stop(drain_timeout=5)
    assert isinstance(history, ToolHistory)
    assert [(r.tool_name, r.status, r.turn) for r in history.records] == [(n, "ok", 1) for n in oracle_calls]
    by_assistant = [a.tool for a in audits(redis_bus) if a.caller == ASSISTANT]
    assert by_assistant == oracle_calls


# ---------------------------------------------------------------- stdio and the bearer token


def test_auratown_mcp_on_stdio_lists_and_calls_tools(
    registry: str, redis_url: str, namespace: str, redis_bus: Bus
) -> None:
    argv = ["-m", "deploy.cli", "mcp", "--bus", redis_url, "--namespace", namespace, "--registry", registry,
            "--stdio", "--caller", "stdio-client"]  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=argv, cwd=ROOT, env=dict(os.environ))

    async def use() -> tuple[list[str], types.CallToolResult]:
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, await client.call_tool("list_dir", {})

    names, listed = asyncio.run(asyncio.wait_for(use(), 60))
    assert "amazon__login" in names and "list_dir" in names
    assert not listed.is_error and "entries" in json.dumps(structured(listed))
    assert [(a.tool, a.caller) for a in audits(redis_bus)] == [("list_dir", "stdio-client")]


def test_listening_beyond_loopback_without_a_token_is_refused_in_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if k != "AURATOWN_MCP_TOKEN"}
    r = run_module(
        "deploy.cli", "mcp", "--bus", "redis://127.0.0.1:1/0", "--namespace", "ns",
        "--registry", "registry.x", "--http", "0.0.0.0:0", env=env, timeout=30,
    )  # fmt: skip
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "0.0.0.0 is reachable from other machines" in lines[0] and "--token" in lines[0]


def post_initialize(url: str, token: str | None) -> int:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
    ).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_with_a_token_every_request_needs_it(host: str, redis_bus: Bus, registry: str) -> None:
    server = EpisodeMcpServer(redis_bus, registry=registry)
    http = HttpEndpoint(server, host, 0, token="s3cret-token").start()
    url = f"http://127.0.0.1:{http.port}/mcp"

    async def with_token() -> list[str]:
        headers = {"Authorization": "Bearer s3cret-token"}
        async with (
            httpx2.AsyncClient(headers=headers) as http_client,
            Client(streamable_http_client(url, http_client=http_client)) as client,
        ):
            return [t.name for t in (await client.list_tools()).tools]

    try:
        statuses = [post_initialize(url, token) for token in (None, "wrong", "s3cret-token")]
        names = asyncio.run(asyncio.wait_for(with_token(), 30))
    finally:
        http.stop()
    assert statuses == [401, 401, 200]
    assert "amazon__login" in names
