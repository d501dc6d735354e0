"""``--metrics-port`` and ``--metrics-host``: the Prometheus metrics of ``auratown daemon`` and
``auratown worker``.

With the live view (``daemon --http``), its server answers them: ``/metrics`` on the page's
address for operators, and ``--metrics-port`` as a second address of that same server, without a
token (``deploy/web/command.py``). Without the live view, ``--metrics-port`` is a listener of its
own (prometheus_client's). Either way it listens on ``--metrics-host``, loopback unless the user
says otherwise: whoever reaches the address reads the metrics.

Only argparse and the standard library at the top: ``auratown --help`` stays fast.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from deploy import arguments

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from actors.runtime.metrics import MetricsServer

LOOPBACK = "127.0.0.1"


def add_metrics_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--metrics-port",
        type=arguments.non_negative_int,
        default=None,
        metavar="P",
        help="serve Prometheus metrics at /metrics on port P of --metrics-host, without a token "
        "(0: a free port); with --http, the live view's server listens there too",
    )
    p.add_argument(
        "--metrics-host",
        default=LOOPBACK,
        metavar="ADDR",
        help="the address --metrics-port listens on; it has no token, so anything but loopback "
        "exposes it (default: %(default)s)",
    )


def metrics_address(args: argparse.Namespace) -> tuple[str, int] | None:
    """(host, port) for ``--metrics-port``, or None when it was not given."""
    port: int | None = getattr(args, "metrics_port", None)
    return None if port is None else (getattr(args, "metrics_host", LOOPBACK), port)


def serve_metrics_from_args(args: argparse.Namespace, registry: CollectorRegistry) -> MetricsServer | None:
    """``--metrics-port`` without the live view: a listener of its own answering scrapes of
    ``registry`` (and say where); None when the option was not given."""
    address = metrics_address(args)
    if address is None:
        return None
    from actors.runtime.metrics import serve_metrics
    from deploy.commands import UserError

    try:
        server = serve_metrics(registry, address[1], host=address[0])
    except OSError as exc:
        raise UserError(f"cannot serve metrics on port {address[1]}: {exc.strerror}") from None
    print(f"metrics on {server.url}", flush=True)
    return server
