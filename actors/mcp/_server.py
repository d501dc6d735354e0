"""``EpisodeMcpServer``: an episode's tools over MCP, and (with a ``TurnBridge``) the episode turn
protocol as two more tools, so that any MCP client can be the assistant under test.

Fixed mode serves one registry's tools. Bridge mode serves the tools of the registry the current
turn names (``UserTurn.tools``) plus ``next_turn`` and ``reply``; when a turn of another unit
names another registry, the tool list changes and the server says so: ``notifications/
tools/list_changed`` on every handshake-era connection, and a ``ToolsListChanged`` event on the
``subscriptions/listen`` streams of 2026-07-28 clients.

Built on the SDK's low-level ``Server``: the tools are not Python functions but whatever the
registry lists, each with its own JSON Schema, and they change at run time.
"""

from __future__ import annotations

import collections
import contextlib
import math
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import structlog
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from actors.bus import Bus
from actors.mcp._registry import RegistryClient, RegistryUnavailable, Unanswered
from actors.mcp._tools import ServedTools, call_result, json_result, tool_error
from actors.mcp._turns import TurnBridge
from messages.episodes import AssistantReply, EndSession, ToolRecord, UserTurn
from messages.probes import ProbeResult
from world.episodes.assistant import failed_record, record_of

log = structlog.get_logger("auratown.mcp")

NEXT_TURN = "next_turn"
REPLY = "reply"
MAX_WAIT = 120.0
"""Seconds ``next_turn`` waits at most: within the read timeouts of MCP clients (the SDK's: 300 s);
a client that wants longer calls it again."""
DEFAULT_WAIT = 30.0
_LEGACY_SESSIONS = 256
"""Handshake-era connections told of tool list changes at most (the oldest are forgotten)."""
_NOTIFY_TIMEOUT = 2.0

INSTRUCTIONS = """\
You are the assistant under test in an episode of pi-Bench tasks. Loop: call next_turn (it waits \
for the user's next message and returns task_id, turn, kind, text, trigger, sim_time; \
{"ended": task_id} when a session is over; {"waiting": true} when nothing came in time), do the work \
with the other tools, then call reply with your answer to that turn. The tools are those of the \
current turn's episode: the list changes when a new episode starts."""

BRIDGE_TOOLS = (
    types.Tool(
        name=NEXT_TURN,
        description="Wait for the user's next turn (or the end of the session) and return it.",
        input_schema={
            "type": "object",
            "properties": {
                "timeout_seconds": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": MAX_WAIT,
                    "default": DEFAULT_WAIT,
                    "description": 'Seconds to wait; then the answer is {"waiting": true}.',
                }
            },
            "additionalProperties": False,
        },
    ),
    types.Tool(
        name=REPLY,
        description="Send your answer to the turn next_turn gave you (once per turn).",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string", "description": "What you say to the user."}},
            "required": ["text"],
            "additionalProperties": False,
        },
    ),
)


class _EpisodeServer(Server[Any]):
    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        # The tool list changes in bridge mode: every transport's handshake says it may.
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class EpisodeMcpServer:
    """Serves a registry's tools (``registry``) or, with ``bridge``, the current turn's."""

    def __init__(
        self,
        bus: Bus,
        *,
        registry: str | None = None,
        bridge: TurnBridge | None = None,
        caller: str | None = None,
        ask_timeout: float = 30.0,
        name: str = "auratown-episode",
    ) -> None:
        if (registry is None) == (bridge is None):
            raise ValueError("serve either a fixed registry or a turn bridge")
        self.bus = bus
        self.bridge = bridge
        self.caller = caller or (bridge.address if bridge is not None else "mcp")
        self.registry = registry
        """The registry whose tools are served: fixed, or the current turn's (None before one)."""
        self.client = RegistryClient(bus, caller=self.caller, timeout=ask_timeout)
        self.turn: UserTurn | None = None
        """The turn handed out by ``next_turn`` and not replied to yet."""
        self.records: list[ToolRecord] = []
        """The calls made since that turn was handed out (the reply's ``tool_records``)."""
        self.events = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.events)
        self._legacy: collections.OrderedDict[int, ServerSession] = collections.OrderedDict()
        self.server = _EpisodeServer(
            name,
            version="1",
            instructions=INSTRUCTIONS if bridge is not None else None,
            get_tool_input_schema=self._cached_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=self.listen,
        )
        self.server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._initialized
        )

    # ---------------------------------------------------------------- listing

    async def _listing(self, address: str) -> ServedTools:
        return await anyio.to_thread.run_sync(self.client.tools, address)

    def _cached_schema(self, name: str) -> dict[str, Any] | None:
        # Mcp-Param header checks (2026-07-28) read schemas here; unknown: the check is skipped.
        for tool in BRIDGE_TOOLS if self.bridge is not None else ():
            if tool.name == name:
                return tool.input_schema
        listing = self.client.cached(self.registry) if self.registry else None
        return listing.schema(name) if listing is not None else None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = list(BRIDGE_TOOLS) if self.bridge is not None else []
        address = self.registry
        if address is not None:
            try:
                listing = await self._listing(address)
            except RegistryUnavailable as exc:
                raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
            own = {t.name for t in tools}
            tools += [t for t in listing.tools if t.name not in own]
        return types.ListToolsResult(tools=tools)

    # ---------------------------------------------------------------- calling

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        args = dict(params.arguments or {})
        if self.bridge is not None and params.name == NEXT_TURN:
            return await self._next_turn(self.bridge, args)
        if self.bridge is not None and params.name == REPLY:
            return await self._reply(self.bridge, args)
        address = self.registry
        if address is None:
            return tool_error(
                "unavailable", "no episode yet: call next_turn first (the turn brings its episode's tools)"
            )
        try:
            listing = self.client.cached(address) or await self._listing(address)
        except RegistryUnavailable:
            listing = ServedTools()  # the call itself says whether the registry answers
        tool = listing.registry_name(params.name)
        turn = self.turn
        try:
            outcome = await anyio.to_thread.run_sync(self.client.call, address, tool, args)
        except ValidationError as exc:
            error = f"arguments are not plain JSON: {exc.errors()[0].get('msg', exc)}"
            outcome = Unanswered("invalid_args", error)
        if isinstance(outcome, ProbeResult):
            if turn is not None and turn is self.turn:
                self.records.append(record_of(outcome, task_id=turn.task_id))
            return call_result(outcome)
        if turn is not None and turn is self.turn:
            self.records.append(
                failed_record(tool, args, outcome.status, outcome.error, task_id=turn.task_id)
            )
        log.warning("registry call unanswered", registry=address, tool=tool, error=outcome.error)
        return tool_error(outcome.status, outcome.error)

    # ---------------------------------------------------------------- the turn protocol

    async def _next_turn(self, bridge: TurnBridge, args: dict[str, Any]) -> types.CallToolResult:
        wait = args.get("timeout_seconds", DEFAULT_WAIT)
        extra = sorted(set(args) - {"timeout_seconds"})
        if extra or isinstance(wait, bool) or not isinstance(wait, int | float) or not math.isfinite(wait):
            why = f"unknown argument {extra[0]!r}" if extra else "timeout_seconds must be a number"
            return tool_error("invalid_args", why)
        item = await bridge.inbox.next(min(max(float(wait), 0.0), MAX_WAIT))
        if item is None:
            return json_result({"waiting": True})
        if isinstance(item, EndSession):
            if self.turn is not None and self.turn.task_id == item.task_id:
                self.turn, self.records = None, []
            return json_result({"ended": item.task_id})
        self.turn, self.records = item, []
        address = item.tools or f"registry.{item.episode_id}"
        if address != self.registry:
            self.registry = address
            await self._tools_changed()
        return json_result(
            {
                "task_id": item.task_id,
                "turn": item.turn,
                "kind": item.kind,
                "text": item.text,
                "trigger": item.trigger.model_dump(mode="json") if item.trigger is not None else None,
                "sim_time": item.sim_time,
            }
        )

    async def _reply(self, bridge: TurnBridge, args: dict[str, Any]) -> types.CallToolResult:
        text = args.get("text")
        extra = sorted(set(args) - {"text"})
        if extra or not isinstance(text, str):
            why = f"unknown argument {extra[0]!r}" if extra else "text must be a string"
            return tool_error("invalid_args", why)
        turn = self.turn
        if turn is None:
            return tool_error("failed", "no turn is waiting for a reply: call next_turn first")
        reply = AssistantReply(
            task_id=turn.task_id,
            turn=turn.turn,
            text=text,
            tool_records=tuple(self.records),
            backend="mcp",
            session=turn.session,
        )
        await anyio.to_thread.run_sync(
            lambda: self.bus.tell(turn.reply_to, reply, sender=bridge.address, sim_time=turn.sim_time)
        )
        if self.turn is turn:
            self.turn, self.records = None, []
        return json_result({"sent": True, "task_id": turn.task_id, "turn": turn.turn})

    # ---------------------------------------------------------------- tool list changes

    async def _initialized(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        """A handshake-era connection: told when the tool list changes (its standalone channel)."""
        self._legacy[id(ctx.session)] = ctx.session
        while len(self._legacy) > _LEGACY_SESSIONS:
            self._legacy.popitem(last=False)

    async def _tools_changed(self) -> None:
        log.info("tool list changed", registry=self.registry)
        await self.events.publish(ToolsListChanged())
        for key, session in list(self._legacy.items()):
            sent = False
            with contextlib.suppress(Exception), anyio.move_on_after(_NOTIFY_TIMEOUT):
                await session.send_tool_list_changed()
                sent = True
            if not sent:  # a closed connection: forget it
                self._legacy.pop(key, None)

    def close(self) -> None:
        """End the open ``subscriptions/listen`` streams gracefully."""
        self.listen.close()
