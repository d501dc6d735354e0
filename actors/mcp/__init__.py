"""Every tool of a running episode over MCP (the official ``mcp`` SDK), and the episode turn protocol
as MCP tools, so that any MCP client can be the assistant under test (``pip install auratown[mcp]``).

::

    from actors.mcp import EpisodeMcpServer, HttpEndpoint, TurnBridge

    bridge = TurnBridge(bus, "agent.mcp").start()        # receives the user's turns
    server = EpisodeMcpServer(bus, bridge=bridge)         # or registry="registry.<unit>"
    HttpEndpoint(server, "127.0.0.1", 8765).run()         # http://127.0.0.1:8765/mcp

``auratown mcp`` does the same from the command line; docs/protocol.md describes the surface.
"""

from actors.mcp._registry import RegistryClient, RegistryUnavailable
from actors.mcp._server import BRIDGE_TOOLS, MAX_WAIT, NEXT_TURN, REPLY, EpisodeMcpServer
from actors.mcp._tools import ServedTools, served_name, served_tools
from actors.mcp._transports import (
    MCP_PATH,
    BearerTokenGate,
    HttpEndpoint,
    InsecureBindError,
    check_bind,
    is_loopback,
    serve_stdio,
)
from actors.mcp._turns import TurnBridge, TurnInbox

__all__ = [
    "BRIDGE_TOOLS",
    "MAX_WAIT",
    "MCP_PATH",
    "NEXT_TURN",
    "REPLY",
    "BearerTokenGate",
    "EpisodeMcpServer",
    "HttpEndpoint",
    "InsecureBindError",
    "RegistryClient",
    "RegistryUnavailable",
    "ServedTools",
    "TurnBridge",
    "TurnInbox",
    "check_bind",
    "is_loopback",
    "serve_stdio",
    "served_name",
    "served_tools",
]
