"""``auratown daemon --http HOST:PORT [--operator-token T]`` and ``auratown view``: the live view.

Only argparse and the standard library at the top: ``auratown --help`` stays fast.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from deploy import arguments

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from actors.bus import Bus
    from deploy.web.server import LiveView
    from world import TownDefinition

_LIMITS = (
    ("--http-max-connections", 1024, "open connections at most; more are answered 503"),
    ("--http-max-requests", 16, "requests answered at once, one thread each; more: 503"),
    ("--http-max-streams", 32, "live event streams (open pages) at once; more: 503"),
)


def add_http_options(p: arguments.Parser) -> None:
    """``--http`` and the live view's token, limits and timeouts (``auratown daemon`` and ``view``)."""
    p.add_argument(
        "--http",
        type=arguments.listen_address,
        default=None,
        metavar="HOST:PORT",
        help="serve the live view (map, event feed, agents) here, e.g. 127.0.0.1:8080 (port 0: a free port)",
    )
    p.add_setting(
        "--operator-token",
        field="operator_token",
        metavar="TOKEN",
        help="live view: whoever opens it with ?token=TOKEN also sees private state and probe calls "
        "(default: %(default)s, which keeps it out of the process list); it also opens /metrics "
        "on the view (Authorization: Bearer TOKEN)",
    )
    for flag, default, what in _LIMITS:
        p.add_argument(flag, type=arguments.positive_int, default=default, metavar="N",
                       help=f"live view: {what} (default: %(default)s)")  # fmt: skip
    p.add_argument(
        "--http-idle-timeout",
        type=arguments.positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="live view: a connection that has not sent its whole request in this time is closed, and "
        "a write a client does not take in this time drops it (default: %(default)s)",
    )
    p.add_argument(
        "--operator-session",
        type=arguments.positive_int,
        default=8 * 3600,
        metavar="SECONDS",
        help="live view: the operator cookie expires after this long (default: %(default)s)",
    )


def start_from_args(
    args: argparse.Namespace,
    bus: Bus,
    definition: TownDefinition,
    *,
    metrics: CollectorRegistry | None = None,
) -> LiveView | None:
    """The daemon's hook: start the live view if ``--http`` was given (and say where); else None.

    ``metrics``: answered at ``/metrics`` to operators, and by the same server on ``--metrics-port``
    (``--metrics-host``) to anyone, when given: one server for the page and the scrapes."""
    address: tuple[str, int] | None = getattr(args, "http", None) or getattr(args, "http_default", None)
    if address is None:
        return None
    from deploy.commands import UserError
    from deploy.metrics_options import metrics_address
    from deploy.web.server import LiveViewConfig, Route, ScrapeAddressError, start_live_view

    routes: dict[str, Route] = {}
    scrape = None
    if metrics is not None:
        from actors.runtime.metrics import metrics_route

        routes["/metrics"] = metrics_route(metrics)
        scrape = metrics_address(args)
    token: str | None = getattr(args, "operator_token", None)
    limits = {field: getattr(args, option) for field, option in _CONFIG_OPTIONS if hasattr(args, option)}
    config = LiveViewConfig(
        host=address[0], port=address[1], operator_token=token, scrape_address=scrape, **limits
    )
    try:
        live = start_live_view(bus, definition, config, extra_routes=routes)
    except ScrapeAddressError as exc:
        assert scrape is not None  # only a scrape address raises it
        raise UserError(f"cannot serve metrics on port {scrape[1]}: {exc.strerror}") from None
    except OSError as exc:
        raise UserError(f"cannot serve the live view on {address[0]}:{address[1]}: {exc.strerror}") from None
    operators = "; operators: add ?token=<operator token>" if token else ""
    print(f"live view: {live.url}{operators}", flush=True)
    scrape_url = live.scrape_url("/metrics")
    if scrape_url is not None:
        print(f"metrics on {scrape_url}", flush=True)
    return live


_CONFIG_OPTIONS = (
    ("max_connections", "http_max_connections"),
    ("max_requests", "http_max_requests"),
    ("max_streams", "http_max_streams"),
    ("idle_timeout", "http_idle_timeout"),
    ("session_seconds", "operator_session"),
)
"""``LiveViewConfig``'s limits and the options that set them."""


def serve_view(args: argparse.Namespace) -> int:
    import signal
    import threading

    from actors.town import stored_config
    from deploy.commands import UserError, open_bus

    with open_bus(args.redis, args.namespace, args.settings) as bus:
        config = stored_config(bus)
        if config is None:
            raise UserError(
                f"no town on namespace {args.namespace!r} at {bus.transport.url}: start `auratown daemon`"
            )
        live = start_from_args(args, bus, config.definition)
        assert live is not None
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        try:
            while not stop.wait(0.5):
                pass
        finally:
            live.stop()
    return 0


def _view_options(view: arguments.Parser) -> None:
    """``auratown view`` serves where ``--http`` says, else on 127.0.0.1:8080 (``auratown daemon``
    takes ``add_http_options`` too, and serves only when ``--http`` is given)."""
    add_http_options(view)
    view.set_defaults(http_default=("127.0.0.1", 8080))


COMMAND = arguments.Command(
    name="view",
    run=serve_view,
    summary="serve the live view of a running town (hosts no actor)",
    description="Serve the live web view of the town on --redis/--namespace: the map with its agents moving, "
    "the event feed and every agent's public state; operators (--operator-token) also see private "
    "state and recent probe calls.",
    bus="redis",
    options=_view_options,
)
