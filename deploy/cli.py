"""The ``auratown`` command line.

Only argparse is imported at start-up; each command imports what it needs, so ``auratown --help``
and argument errors answer at once (litellm in particular is never imported here).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from deploy import commands

DEFAULT_NAMESPACE = "town:main"


class CLIError(Exception):
    """A problem with the user's input or environment, reported as one line (exit 2)."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value:g}")
    return value


def _bus_options(p: argparse.ArgumentParser, *, default_url: str | None) -> None:
    p.add_argument(
        "--redis",
        metavar="URL",
        default=default_url,
        help="bus URL: redis://, rediss://, unix:// (password or ACL user in the URL), or memory://"
        + (" (default: the in-process memory bus)" if default_url is None else ""),
    )
    p.add_argument(
        "--namespace", default=DEFAULT_NAMESPACE, help="town or episode namespace (default: %(default)s)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="auratown",
        description="AURA Town: an actor framework for situated and proactive LLM agents over Redis Streams.",
    )
    parser.add_argument("--log-format", choices=["console", "json"], default=None, help="log rendering")
    parser.add_argument("--log-level", default="WARNING", help="log level (default: %(default)s)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser(
        "run",
        help="start a host on the bus and check it end to end (embedded memory bus by default)",
        description="Start a host with the echo service, send it asks and a topic message, and print "
        "what the runtime measured. With --serve, keep serving until SIGTERM/SIGINT.",
    )
    _bus_options(run, default_url=None)
    run.add_argument("--asks", type=_positive_int, default=200, help="asks to send (default: %(default)s)")
    run.add_argument("--serve", action="store_true", help="keep serving the echo address until stopped")
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    run.set_defaults(func=commands.run)

    schema = sub.add_parser("schema", help="write the JSON Schema of the envelope and every message")
    schema.add_argument("--out", required=True, metavar="DIR", help="directory to write *.json into")
    schema.set_defaults(func=commands.schema)

    ping = sub.add_parser("ping", help="ask an address for a pong and print the round trip")
    _bus_options(ping, default_url="redis://127.0.0.1:6379/0")
    ping.add_argument("address", nargs="?", default="echo", help="address to ping (default: %(default)s)")
    ping.add_argument("--count", type=_positive_int, default=3)
    ping.add_argument("--timeout", type=_positive_float, default=5.0, help="seconds per ask")
    ping.set_defaults(func=commands.ping)

    procs = sub.add_parser("processes", help="list the processes present on a namespace")
    _bus_options(procs, default_url="redis://127.0.0.1:6379/0")
    procs.set_defaults(func=commands.processes)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from actors.logging import configure_logging

    configure_logging(args.log_format, args.log_level)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except commands.UserError as exc:
        print(f"auratown {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
