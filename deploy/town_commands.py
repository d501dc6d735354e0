"""What the town commands do: ``auratown run``, ``daemon``, ``state``, ``step``, ``inject``, ``pause``,
``resume``, ``clock``, ``speed``, ``export`` and ``import`` (their options: ``deploy.town_cli``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deploy.commands import UserError, open_bus

if TYPE_CHECKING:
    from actors.bus import Bus
    from actors.town import TownClient, TownConfig
    from messages.town import AgentView, ClockStatus, TownStateView


def _proposed_config(args: argparse.Namespace) -> TownConfig:
    from actors.town import TownConfig, load_town
    from world import TownDefinitionError

    try:
        definition = load_town(args.town)
    except TownDefinitionError as exc:
        raise UserError(str(exc)) from None
    return TownConfig(
        definition=definition,
        seed=args.seed,
        decision_timeout=args.decision_timeout,
        ticks_per_second=getattr(args, "speed", 0.0),
        start_paused=getattr(args, "paused", True),
    )


@contextmanager
def _client(args: argparse.Namespace) -> Iterator[TownClient]:
    from actors.bus import AskTimeoutError, RemoteError
    from actors.town import TownClient, TownRequestError, stored_config

    with open_bus(args.redis, args.namespace, args.settings) as bus:
        if stored_config(bus) is None:
            raise UserError(
                f"no town on namespace {args.namespace!r} at {bus.transport.url}: start `auratown daemon`"
            )
        try:
            yield TownClient(bus, timeout=args.timeout)
        except TownRequestError as exc:
            raise UserError(str(exc)) from None
        except AskTimeoutError as exc:
            raise UserError(
                f"{exc}: is `auratown daemon` running for namespace {args.namespace!r}?"
            ) from None
        except RemoteError as exc:
            raise UserError(str(exc)) from None


def _print_json(model: Any) -> None:
    print(json.dumps(model.model_dump(mode="json"), indent=2, ensure_ascii=False))


def _moving(a: AgentView) -> bool:
    """On the way to the place of its current activity (``target``), perhaps passing another."""
    return a.target is not None and a.location != a.target


def _agent_line(a: AgentView) -> str:
    # A place someone only walks through is never shown as where they are.
    if _moving(a):
        where = f"passing {a.location}" if a.location else f"on the way to {a.target}"
    else:
        where = a.location or "-"
    line = f"  {a.name:<10} {where:<28} {a.action}"
    if a.nearby:
        line += f"  (with {', '.join(a.nearby)})"
    if a.private is not None:
        p = a.private
        line += f"\n  {'':<10} private: {p.availability}, {p.emotional_state}"
        line += f", goal: {p.unspoken_goal or '-'}  [rule {p.rule}]"
        for other, b in p.beliefs_about_others.items():
            line += (
                f"\n  {'':<10}   believes {other}: at {b.location or '?'}, {b.availability}, "
                f"{b.emotional_state} (seen tick {b.observed_tick})"
            )
    return line


def _brief(a: AgentView) -> str:
    """``Wang: walking to Community Garden, now passing AURA Academy``; ``Lin: serving lunch at
    Sunrise Cafe``: where someone is and where they are heading never read as one another."""
    if _moving(a):
        where = f", now passing {a.location}" if a.location else ""
    else:
        where = "" if a.location is None or a.location in a.action else f" at {a.location}"
    mood = f" ({a.private.availability}, {a.private.emotional_state})" if a.private else ""
    return f"{a.name.split()[0]}: {a.action}{where}{mood}"


def _print_state(view: TownStateView) -> None:
    print(f"{view.town} (seed {view.seed}) - day {view.day} {view.time}, next tick {view.tick}")
    for a in view.agents:
        print(_agent_line(a))
    if view.events:
        print("recent events:")
        for e in view.events:
            where = e.location or "town-wide"
            print(f"  #{e.id} tick {e.tick} [{e.source}] {e.kind} at {where}: {e.description}")


# ---------------------------------------------------------------- run and daemon


def run(args: argparse.Namespace) -> int:
    """Run the town for a number of ticks, all roles in this process, and print its day (and, with
    --mind llm, what the model did for the minds)."""
    from actors.runtime import Host, HostConfig
    from actors.town import TownClient, ensure_config, spawn_town
    from deploy.town_minds import mind_report, model_minds, report_lines, worker_threads

    proposed = _proposed_config(args).model_copy(update={"start_paused": True, "ticks_per_second": 0.0})
    with open_bus(args.redis, args.namespace, args.settings) as bus:
        config, created = ensure_config(bus, proposed)
        minds = model_minds(args, bus, cache_dir=args.cache_dir)
        threads = worker_threads(None, minds, len(config.definition.agents))
        host = Host(bus, HostConfig(pool_size=threads), name="auratown-run")
        spawn_town(host, config, **(minds.spawn_options() if minds else {}))
        host.start()
        try:
            client = TownClient(bus, timeout=max(10.0, config.decision_timeout * 4))
            start = client.status().completed + 1
            timeline = []
            # A tick waits up to --decision-timeout for the decisions, then for its conversations.
            tick_wait = 60.0 + 2 * config.decision_timeout
            for _ in range(args.ticks):
                client.step(1, wait=tick_wait)
                view = client.state(private=True, events=0)
                timeline.append(view)
                if not args.json:
                    print(f"day {view.day} {view.time}  " + "; ".join(_brief(a) for a in view.agents))
            final = client.state(private=True, events=10)
        finally:
            host.stop()
    report = None if minds is None else mind_report(minds.minds, config.definition)
    if args.json:
        out = {
            "town": config.definition.name,
            "seed": config.seed,
            "namespace": args.namespace,
            "first_tick": start,
            "ticks": args.ticks,
            "final": final.model_dump(mode="json"),
            "digests": [v.digest for v in timeline],
        }
        if report is not None:
            out["minds"] = report.model_dump(mode="json")
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print()
        _print_state(final)
        if not created:
            print(f"(continued the town stored on namespace {args.namespace!r})")
        if report is not None:
            print()
            print("\n".join(report_lines(report)))
    return 0


def daemon(args: argparse.Namespace) -> int:
    """Host the town's roles until SIGTERM/SIGINT; state persists in Redis across restarts."""
    from actors.aura import make_backend_factory
    from actors.llm import GatewayPool
    from actors.runtime import Host, HostConfig, freeze_heap
    from actors.town import ensure_config, spawn_town
    from deploy.acl_command import spawn_policy_registries
    from deploy.town_minds import model_minds, worker_threads

    roles = [r.strip() for r in args.roles.split(",") if r.strip()]
    agents = [a.strip() for a in args.agents.split(",")] if args.agents else None
    with open_bus(args.redis, args.namespace, args.settings) as bus:
        config, created = ensure_config(bus, _proposed_config(args))
        if not created and (config.seed != args.seed or args.town is not None):
            print(
                f"namespace {args.namespace!r} already holds {config.definition.name} "
                f"with seed {config.seed}; "
                "resuming it (the --seed/--town given are not used)",
                file=sys.stderr,
            )
        minds = model_minds(args, bus)
        # The model's usage, for --metrics-port.
        ledgers: dict[str, Any] = {} if minds is None else {"minds": minds.minds.gateway.usage}
        hosted = len(agents) if agents else len(config.definition.agents)
        pool_size = worker_threads(args.pool_size, minds, hosted)
        host_config = HostConfig(visibility_timeout=args.visibility_timeout, pool_size=pool_size)
        host = Host(bus, host_config, name=f"auratown-daemon[{','.join(roles)}]")
        try:
            env_gateways = GatewayPool(
                api_base=args.api_base,
                cache_dir=args.cache_dir,
                settings=args.settings,
            )
            backends = make_backend_factory(args.model, pool=env_gateways)
            by_identity = spawn_policy_registries(host, args, roles)  # registry:IDENT; first: checks the file
            options = minds.spawn_options() if minds else {}
            spawned = spawn_town(host, config, roles=roles, agents=agents, backends=backends, **options)
            spawned += by_identity
        except ValueError as exc:
            raise UserError(str(exc)) from None
        state = "new" if created else "resumed"
        print(
            f"{state} town {config.definition.name} (seed {config.seed}) on {bus.transport.url} "
            f"namespace {args.namespace}: hosting {', '.join(spawned)}; Ctrl-C to stop",
            flush=True,
        )
        from actors.runtime.metrics import metrics_registry
        from deploy.metrics_options import serve_metrics_from_args
        from deploy.web.command import start_from_args

        def all_ledgers() -> dict[str, Any]:
            # Read at each scrape: the env's gateways are made on first use of a model.
            return {**ledgers, **{f"env:{m}": gw.usage for m, gw in env_gateways.gateways.items()}}

        # --http: the live view, whose server answers the metrics too; else --metrics-port alone.
        # Both bind before any actor starts.
        metrics = metrics_registry(host, bus, all_ledgers)
        try:
            live = start_from_args(args, bus, config.definition, metrics=metrics)
            if live is None:
                serve_metrics_from_args(args, metrics)
        except UserError:
            host.stop()
            raise
        host.start()
        freeze_heap()  # the town's long-lived heap: full collections need not walk it again
        host.run_until_signal()
        if live is not None:
            live.stop()
    return 0


# ---------------------------------------------------------------- controls


def state(args: argparse.Namespace) -> int:
    with _client(args) as client:
        view = client.state(args.agent, private=args.private, events=args.events)
    if args.json:
        _print_json(view)
    else:
        _print_state(view)
    return 0


def step(args: argparse.Namespace) -> int:
    with _client(args) as client:
        status = client.step(args.count, wait=None if args.no_wait else args.wait)
    # The waited-for tick is reported as such: the clock may not have handled its completion yet.
    verb = "sent" if args.no_wait else "completed"
    print(f"{verb}: tick {status.target} (next {(status.target or 0) + 1})")
    return 0


def inject(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from messages.town import InjectEvent

    participants = tuple(p.strip() for p in args.participants.split(",")) if args.participants else ()
    try:
        event = InjectEvent(
            kind=args.kind, description=args.description, location=args.location, participants=participants
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        raise UserError(f"invalid event: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    with _client(args) as client:
        accepted = client.inject(event)
    e = accepted.event
    witnesses = ", ".join(accepted.witnesses) or "nobody"
    print(
        f"event #{e.id} logged at tick {e.tick}: {e.kind} at {e.location or 'town-wide'}; "
        f"perceived by {witnesses}"
    )
    return 0


def _clock_line(status: ClockStatus) -> str:
    speed = "max" if status.ticks_per_second == 0 else f"{status.ticks_per_second:g} ticks/s"
    return f"{'paused' if status.paused else 'running'} at {speed}; last completed tick {status.completed}"


def _clock_command(
    request: Callable[[TownClient, argparse.Namespace], ClockStatus],
) -> Callable[[argparse.Namespace], int]:
    """A command that makes one request of the town's clock and prints the clock's status after it."""

    def run(args: argparse.Namespace) -> int:
        with _client(args) as client:
            print(_clock_line(request(client, args)))
        return 0

    return run


pause = _clock_command(lambda client, _: client.pause())
resume = _clock_command(lambda client, _: client.resume())
speed = _clock_command(lambda client, args: client.set_speed(args.ticks_per_second))
clock_status = _clock_command(lambda client, _: client.status())


def export(args: argparse.Namespace) -> int:
    with _client(args) as client:
        snap = client.export(timeout=args.timeout * 6)
    data = snap.to_bytes()
    try:
        Path(args.file).write_bytes(data)
    except OSError as exc:
        raise UserError(f"cannot write {args.file}: {exc.strerror}") from None
    print(f"wrote {args.file}: {snap.definition.name} at tick {snap.world.tick}, {len(data)} bytes")
    return 0


def import_(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from actors.town import TownRequestError, import_snapshot
    from world import TownSnapshot

    try:
        snap = TownSnapshot.from_bytes(Path(args.file).read_bytes())
    except OSError as exc:
        raise UserError(f"cannot read {args.file}: {exc.strerror}") from None
    except (ValidationError, ValueError) as exc:
        raise UserError(f"{args.file} is not a town snapshot: {str(exc).splitlines()[0]}") from None
    with open_bus(args.redis, args.namespace, args.settings) as bus:
        _refuse_live_town(bus, args.namespace)
        try:
            import_snapshot(bus, snap)
        except TownRequestError as exc:
            raise UserError(str(exc)) from None
    print(
        f"imported {snap.definition.name} at tick {snap.world.tick} into namespace {args.namespace}; "
        f"start it with: auratown daemon --redis {args.redis} --namespace {args.namespace} "
        "(it starts paused: then `auratown resume` or `auratown step N`)"
    )
    return 0


def _refuse_live_town(bus: Bus, namespace: str) -> None:
    live = [p for p in bus.processes() if p.alive]
    if live:
        raise UserError(
            f"namespace {namespace!r} has {len(live)} live process(es); import into a new namespace"
        )
