"""``auratown mcp``: serve an episode's tools over MCP, and be the assistant's address for any MCP client.

Only argparse and the standard library are imported at module level (``auratown --help`` stays fast).
"""

from __future__ import annotations

import argparse
import sys

from deploy import arguments

DEFAULT_HTTP = ("127.0.0.1", 8765)
_SDK = frozenset({"mcp", "mcp_types", "anyio", "uvicorn", "starlette", "httpx2", "sse_starlette"})
"""What the ``mcp`` extra brings: missing, the command says which extra to install."""


def _options(p: arguments.Parser) -> None:
    arguments.add_redis_option(p, flag="--bus", what="the run's Redis: redis://, rediss://, unix://")
    arguments.add_namespace_option(p, what="the run's namespace (episodes.<run>)", required=True)
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument(
        "--assistant", metavar="ADDRESS", help="the assistant's address to serve, e.g. agent.mcp"
    )
    who.add_argument("--registry", metavar="ADDRESS", help="serve this episode registry's tools only")
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--http",
        type=arguments.listen_address,
        default=None,
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp (default: 127.0.0.1:8765; port 0: a free one)",
    )
    how.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout")
    p.add_setting(
        "--token",
        field="mcp_token",
        help="HTTP: require Authorization: Bearer TOKEN on every request (default: %(default)s, which "
        "keeps it out of the process list); needed to listen on anything but loopback",
    )
    p.add_argument(
        "--caller",
        default=None,
        metavar="NAME",
        help="who calls, as audited (default: the assistant, or mcp)",
    )
    p.add_argument(
        "--ask-timeout",
        type=arguments.positive_seconds,
        default=30.0,
        metavar="S",
        help="seconds a registry has to answer a call; then the call is a tool error (default: %(default)s)",
    )


def serve(args: argparse.Namespace) -> int:
    from actors.bus import InvalidNameError, check_address
    from deploy.commands import UserError, open_bus

    try:
        import anyio

        from actors.mcp import (
            EpisodeMcpServer,
            HttpEndpoint,
            InsecureBindError,
            TurnBridge,
            check_bind,
            serve_stdio,
        )
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in _SDK:
            raise
        raise UserError(f"auratown mcp needs the MCP SDK ({exc.name}): pip install 'auratown[mcp]'") from None

    token: str | None = args.token or None
    host, port = args.http or DEFAULT_HTTP
    try:
        for address in (args.assistant, args.registry):
            if address is not None:
                check_address(address)
        if not args.stdio:
            check_bind(host, token)
    except (InvalidNameError, InsecureBindError) as exc:
        raise UserError(str(exc)) from None
    with open_bus(args.bus, args.namespace, args.settings) as bus:
        bridge = TurnBridge(bus, args.assistant) if args.assistant else None
        server = EpisodeMcpServer(
            bus, registry=args.registry, bridge=bridge, caller=args.caller, ask_timeout=args.ask_timeout
        )
        what = f"the assistant {args.assistant}" if bridge else f"the tools of {args.registry}"
        try:
            if args.stdio:
                if bridge is not None:
                    bridge.start()
                print(f"MCP: {what} on stdio (namespace {args.namespace})", file=sys.stderr, flush=True)
                anyio.run(serve_stdio, server)
                return 0
            try:
                endpoint = HttpEndpoint(server, host, port, token=token)
            except OSError as exc:
                raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
            if bridge is not None:
                bridge.start()
            auth = "bearer token required" if token else "no token"
            print(
                f"MCP: {what} at {endpoint.url} ({auth}; namespace {args.namespace}); Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )
            endpoint.run()
        finally:
            if bridge is not None:
                bridge.close()
    return 0


COMMAND = arguments.Command(
    name="mcp",
    run=serve,
    summary="serve an episode's tools over MCP (HTTP or stdio), as the assistant or for one registry",
    description="With --assistant ADDRESS, take the assistant's address of an episode run (`auratown "
    "bench episodes --assistants external:ADDRESS`) and give any MCP client the episode turn "
    "protocol as tools (next_turn, reply) beside the current turn's episode tools. With --registry "
    "ADDRESS, serve that episode registry's tools only. Every call goes through the registry "
    "(policy, audit, history). HTTP listens on 127.0.0.1 unless told otherwise; anything else "
    "needs a token. See docs/protocol.md.",
    options=_options,
)
