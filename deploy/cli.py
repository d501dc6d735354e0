"""The ``auratown`` command line.

Every command is declared once, as an ``arguments.Command`` (its name, what runs it, its help and
options): the runtime's here, the town's in ``deploy.town_cli``, the benchmarks' in
``deploy.bench_cli``, the others' as ``COMMAND`` in their ``*_command`` module; ``COMMANDS`` lists
them all. Only argparse is imported to build the parser; each command imports what it needs, so
``auratown --help`` and argument errors answer at once (litellm in particular is never imported
here). ``main`` then reads the settings (every ``AURATOWN_*`` variable, ``actors.settings``) once,
fills the options' defaults from them and gives them to the command as ``args.settings``.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from deploy import (
    acl_command,
    appworld_command,
    arguments,
    attach_command,
    bench_cli,
    commands,
    dlq_command,
    mcp_command,
    town_cli,
    worker_command,
)
from deploy.web import command as web_command

if TYPE_CHECKING:
    from actors.settings import Settings


def _selfcheck_options(p: arguments.Parser) -> None:
    p.uses_settings(*arguments.DEAD_LETTER_SETTINGS)
    p.add_argument(
        "--asks", type=arguments.positive_int, default=200, help="asks to send (default: %(default)s)"
    )
    p.add_argument("--serve", action="store_true", help="keep serving the echo address until stopped")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


SELFCHECK = arguments.Command(
    name="selfcheck",
    run=commands.run,
    summary="start a host on the bus and check the runtime end to end (embedded memory bus by default)",
    description="Start a host with the echo service, send it asks and a topic message, and print what "
    "the runtime measured. With --serve, keep serving until SIGTERM/SIGINT.",
    bus="in-process",
    options=_selfcheck_options,
)


def _schema_options(p: arguments.Parser) -> None:
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write *.json into")


SCHEMA = arguments.Command(
    name="schema",
    run=commands.schema,
    summary="write the JSON Schema of the envelope and every message",
    options=_schema_options,
)


def _ping_options(p: arguments.Parser) -> None:
    p.add_argument("address", nargs="?", default="echo", help="address to ping (default: %(default)s)")
    p.add_argument("--count", type=arguments.positive_int, default=3)
    p.add_argument("--timeout", type=arguments.positive_seconds, default=5.0, help="seconds per ask")


PING = arguments.Command(
    name="ping",
    run=commands.ping,
    summary="ask an address for a pong and print the round trip",
    bus="redis",
    options=_ping_options,
)

PROCESSES = arguments.Command(
    name="processes",
    run=commands.processes,
    summary="list the processes present on a namespace",
    bus="redis",
)

COMMANDS: tuple[arguments.Command | arguments.CommandGroup, ...] = (
    SELFCHECK,
    *town_cli.COMMANDS,
    bench_cli.BENCH,
    bench_cli.REPORT,
    SCHEMA,
    PING,
    PROCESSES,
    attach_command.COMMAND,
    appworld_command.COMMAND,
    dlq_command.COMMAND,
    web_command.COMMAND,
    acl_command.COMMAND,
    worker_command.COMMAND,
    mcp_command.COMMAND,
)
"""Every ``auratown`` command, in the order its help lists them."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("auratown")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = arguments.Parser(
        prog="auratown",
        description="AURA Town: an actor framework for situated and proactive LLM agents over Redis Streams.",
        settings_fields=None,  # its help lists every AURATOWN_* variable
    )
    parser.add_argument("--version", action="version", version=f"auratown {_version()}")
    parser.add_setting(
        "--log-format",
        field="log_format",
        choices=("console", "json"),
        help="log rendering (default: %(default)s, else console on a terminal, else JSON lines)",
    )
    parser.add_setting(
        "--log-level",
        field="log_level",
        type=str.upper,
        metavar="LEVEL",
        choices=arguments.Choices("actors.settings", "LOG_LEVELS"),
        help="%(choices)s (default: %(default)s)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add_to(sub)
    return parser


def parse_args(argv: Sequence[str] | None = None, settings: Settings | None = None) -> argparse.Namespace:
    """The command line parsed, the defaults that are settings filled in from ``settings`` (None:
    read them now) and kept as ``args.settings``; ``SettingsError`` for a bad variable."""
    args = build_parser().parse_args(argv)
    if settings is None:
        from actors.settings import load_settings

        settings = load_settings()
    return arguments.apply_settings(args, settings)


def _interrupted() -> int:
    """Exit status 130 after Ctrl-C, at once: worker threads may still be waiting on a model call,
    and the interpreter would wait for them (minutes) before exiting; the OS closes their
    connections, so a model server stops generating for them."""
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()]
    if any(not t.daemon for t in others):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    return 130


def main(argv: Sequence[str] | None = None) -> int:
    from actors.settings import SettingsError

    try:
        args = parse_args(argv)
    except SettingsError as exc:
        print(f"auratown: error: {exc}", file=sys.stderr)
        return 2
    from actors.logging import configure_logging

    configure_logging(args.log_format, args.log_level, settings=args.settings)
    return _exiting(_run(args))


REQUESTS_GRACE_S = 3.0
"""Seconds an exiting command waits for the model requests it gave up on to end."""


def _exiting(status: int) -> int:
    """``status``, once the model requests given up on have ended; if some have not (a hosted
    provider's call, which only its own timeout ends), the process exits at once instead of
    shutting the interpreter down under them (a request thread frozen inside an import leaves
    litellm's finalizers waiting forever)."""
    gateway = sys.modules.get("actors.llm._gateway")
    if gateway is not None and gateway.finish_requests(REQUESTS_GRACE_S):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def _run(args: argparse.Namespace) -> int:
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except commands.UserError as exc:
        print(f"auratown {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        if str(exc):
            print(f"auratown {args.command}: {exc}", file=sys.stderr)
        return _interrupted()
    except BrokenPipeError:
        # The reader went away (``auratown ask ... | head``): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
