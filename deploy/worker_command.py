"""``auratown worker``: host stateless roles that share work with every other worker through the
inbox consumer groups of one Redis (any number of processes, on any machines).

Roles: ``env`` (the AURA environment agent), ``registry`` (the probe registry), ``grader`` (the
episode grader) and ``episodes`` (whole episode units, ``RunUnit``; ``user`` is accepted for it,
since the simulated users run inside the units). Each role gets ``--pool-size`` lanes; a lane is
a host of its own (its own consumer in the group) that holds one message at a time, so a worker
never hoards entries another worker could be handling, and a role waiting on another (env asking
the registry) never blocks it.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from deploy import arguments
from deploy.commands import UserError
from deploy.metrics_options import add_metrics_options, serve_metrics_from_args

if TYPE_CHECKING:
    from actors.bus import Transport
    from actors.runtime import Actor, Host
    from actors.settings import Settings

ROLES = ("env", "registry", "grader", "episodes")
ALIASES = {"user": "episodes"}
DEFAULT_ROLES = "env,registry,grader,episodes"


def _options(p: arguments.Parser) -> None:
    arguments.add_redis_option(p, what="the shared Redis")
    arguments.add_namespace_option(p, what="namespace served")
    p.add_argument(
        "--roles", default=DEFAULT_ROLES, help=f"comma-separated: {', '.join(ROLES)} (default: all)"
    )
    arguments.add_model_options(p, model_help="env: default litellm model (default: offline)")
    p.add_setting(
        "--appworld-home",
        field="appworld_home",
        metavar="DIR",
        help="episodes: where AppWorld is installed, for units run with --apps appworld "
        "(default: %(default)s, else the user's data dir)",
    )
    p.add_argument(
        "--pool-size",
        type=arguments.positive_int,
        default=1,
        metavar="N",
        help="messages each role handles at once in this process (default: %(default)s)",
    )
    arguments.add_visibility_timeout_option(p)
    p.uses_settings(*arguments.DEAD_LETTER_SETTINGS, "intent_reader")
    add_metrics_options(p)


def add_remote_workers_option(bench: argparse.ArgumentParser) -> None:
    """``--remote-workers [NS]``, for ``bench aura`` and ``bench episodes``."""
    bench.add_argument(
        "--remote-workers",
        nargs="?",
        const=arguments.DEFAULT_NAMESPACE,
        default=None,
        metavar="NS",
        help="with --bus: send the work to `auratown worker` processes already serving namespace NS "
        f"there (default NS: {arguments.DEFAULT_NAMESPACE}) instead of starting --workers",
    )


def parse_roles(text: str) -> list[str]:
    roles: list[str] = []
    for raw in (r.strip() for r in text.split(",")):
        if not raw:
            continue
        role = ALIASES.get(raw, raw)
        if role not in ROLES:
            raise UserError(f"unknown role {raw!r}: choose from {', '.join(ROLES)}")
        if role not in roles:
            roles.append(role)
    if not roles:
        raise UserError("--roles needs at least one role")
    return roles


class Worker:
    """The hosts of one worker process: ``pool_size`` lanes per role."""

    def __init__(
        self,
        transport: Transport,
        namespace: str,
        roles: list[str],
        *,
        model: str | None = None,
        api_base: str | None = None,
        cache_dir: Path | None = None,
        pool_size: int = 1,
        visibility_timeout: float = 30.0,
        appworld_home: str | None = None,
        settings: Settings | None = None,
    ) -> None:
        """``settings``: the model deadlines and dead-letter retention (None: read them now)."""
        from actors.bus import Bus, DeadLetterPolicy
        from actors.runtime import HostConfig
        from actors.settings import load_settings

        self.transport = transport
        self.namespace = namespace
        self.roles = roles
        self.hosts: list[Host] = []
        self.service: Any = None
        self.settings = settings or load_settings()
        factories = self._factories(
            model=model,
            api_base=api_base,
            cache_dir=cache_dir,
            visibility_timeout=visibility_timeout,
            appworld_home=appworld_home,
        )
        config = HostConfig(
            fetch_count=1,
            max_in_flight=1,  # one message at a time per lane: the rest stay for other workers
            visibility_timeout=visibility_timeout,
            pool_size=1,
        )
        from actors.runtime import Host

        dead_letters = DeadLetterPolicy.from_settings(self.settings)
        for role in roles:
            address, factory = factories[role]
            for lane in range(pool_size):
                bus = Bus(transport, namespace, dead_letter_policy=dead_letters)
                host = Host(bus, config, name=f"worker[{role}#{lane}]")
                host.spawn(factory, address)
                self.hosts.append(host)

    def _factories(
        self,
        *,
        model: str | None,
        api_base: str | None,
        cache_dir: Path | None,
        visibility_timeout: float,
        appworld_home: str | None,
    ) -> dict[str, tuple[str, Callable[[], Actor]]]:
        from actors.aura import make_backend_factory
        from actors.episodes import GRADER, GatewayPool, GraderActor
        from actors.roles import ENV, REGISTRY, EnvActor, RegistryActor
        from actors.roles.episodes_worker import UNIT_WORKER, EpisodeUnitActor
        from actors.runtime import HostConfig

        out: dict[str, tuple[str, Callable[[], Actor]]] = {}
        if "env" in self.roles:
            backends = make_backend_factory(
                model, api_base=api_base, cache_dir=cache_dir, settings=self.settings
            )
            out["env"] = (ENV, lambda: EnvActor(backends))
        if "registry" in self.roles:
            out["registry"] = (REGISTRY, RegistryActor)
        if "grader" in self.roles:
            gateways = GatewayPool(api_base=api_base, cache_dir=cache_dir, settings=self.settings)
            out["grader"] = (GRADER, lambda: GraderActor(gateways))
        if "episodes" in self.roles:
            from bench.episodes.worker import UnitService

            # The units' own actors take the worker's visibility timeout too.
            unit_config = HostConfig(visibility_timeout=visibility_timeout)
            self.service = UnitService(
                self.transport, cache_dir=cache_dir, config=unit_config, appworld_home=appworld_home
            )
            service = self.service
            out["episodes"] = (UNIT_WORKER, lambda: EpisodeUnitActor(service.run))
        return out

    def start(self) -> Worker:
        for host in self.hosts:
            host.start()
        return self

    def stop(self) -> None:
        """Stop every lane at once (each drains its message within the host's deadline), then the
        episode units' hosts."""
        if self.service is not None:
            self.service.stopping.set()
        threads = [threading.Thread(target=h.stop, daemon=True) for h in self.hosts]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        if self.service is not None:
            self.service.stop()


def run(args: argparse.Namespace) -> int:
    from deploy.commands import open_bus

    roles = parse_roles(args.roles)
    with open_bus(args.redis, args.namespace, args.settings) as bus:  # checks the URL and that Redis answers
        transport = bus.transport
        worker = Worker(
            transport,
            args.namespace,
            roles,
            model=args.model,
            api_base=args.api_base,
            cache_dir=args.cache_dir,
            pool_size=args.pool_size,
            visibility_timeout=args.visibility_timeout,
            appworld_home=args.appworld_home,
            settings=args.settings,
        )
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        metrics = None
        try:
            if args.metrics_port is not None:  # listening before any lane takes a message
                from actors.runtime.metrics import HandlerLatency, metrics_registry

                latency = HandlerLatency()  # every lane's handlers, one histogram per actor type
                for host in worker.hosts:
                    host.handler_latency = latency
                metrics = serve_metrics_from_args(args, metrics_registry(worker.hosts))
            worker.start()
            print(
                f"worker {socket.gethostname()}:{os.getpid()} on {transport.url} namespace "
                f"{args.namespace}: hosting {', '.join(roles)} x{args.pool_size}; Ctrl-C to stop",
                flush=True,
            )
            while not stop.wait(0.5):
                pass
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            worker.stop()
            if metrics is not None:
                metrics.close()
    sys.stdout.flush()
    return 0


COMMAND = arguments.Command(
    name="worker",
    run=run,
    summary="host stateless roles (env, registry, grader, episodes) sharing work with other workers",
    description="Host the given roles until SIGTERM/SIGINT. Every worker on the same Redis and "
    "namespace competes for the roles' messages through consumer groups, so benchmark cells and "
    "episode units spread over all of them; a worker that dies leaves its unfinished messages to "
    "the others after --visibility-timeout seconds.",
    options=_options,
)
