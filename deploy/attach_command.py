"""``auratown attach --as ADDRESS --handler module:function``: host one handler function at an address.

Only argparse and the standard library are imported at module level (``auratown --help`` stays fast).
"""

from __future__ import annotations

import argparse
import sys

from deploy import arguments


def _options(p: arguments.Parser) -> None:
    p.add_argument("--as", dest="address", required=True, metavar="ADDRESS", help="the address to serve")
    p.add_argument("--handler", required=True, metavar="MODULE:FUNCTION", help="e.g. myagent:answer")
    p.add_argument(
        "--app-dir",
        default=".",
        metavar="DIR",
        help="directory to import MODULE from, put first on sys.path (default: the current one)",
    )
    p.add_argument(
        "--topics",
        default="",
        metavar="NAMES",
        help="comma-separated topics to receive too (e.g. town.ticks)",
    )
    arguments.add_visibility_timeout_option(p, whose="this one's")
    p.uses_settings(*arguments.DEAD_LETTER_SETTINGS)


def attach(args: argparse.Namespace) -> int:
    from actors.attach import HandlerSpecError, load_handler
    from actors.attach._agent import Agent
    from actors.bus import InvalidNameError
    from actors.runtime import HostConfig
    from deploy.commands import UserError, open_bus
    from messages import Message

    try:
        handler = load_handler(args.handler, app_dir=args.app_dir)
    except HandlerSpecError as exc:
        raise UserError(str(exc)) from None
    topics = tuple(t.strip() for t in args.topics.split(",") if t.strip())
    with open_bus(args.redis, args.namespace, args.settings) as bus:
        try:
            agent = Agent(
                None,
                args.namespace,
                args.address,
                bus=bus,
                config=HostConfig(visibility_timeout=args.visibility_timeout),
                topics=topics,
            )
            agent.on(Message)(handler)
            agent.host  # noqa: B018 - binds the address (and topics) now, so a bad name fails here
        except InvalidNameError as exc:
            raise UserError(str(exc)) from None
        print(
            f"attached {args.handler} at {args.address!r} on {bus.transport.url} namespace "
            f"{args.namespace} (process {bus.process_id}); SIGTERM or Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )
        drained = agent.run()
    return 0 if drained else 1


COMMAND = arguments.Command(
    name="attach",
    run=attach,
    summary="host a handler function (message -> reply or None) at an address until SIGTERM",
    description="Attach a Python function to a running town or episode run: every message sent to "
    "ADDRESS is passed to FUNCTION (FUNCTION(message) or FUNCTION(ctx, message)); a returned message "
    "is the reply (to the ask's reply_to, else to the payload's reply_to, as an episode's UserTurn "
    "names). Acknowledgement, retries, dead letters and presence are the runtime's. See "
    "docs/protocol.md.",
    bus="redis",
    options=_options,
)
