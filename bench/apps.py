"""``python -m bench.apps``: the time of one episode tool call on each app backend, side by side.

The same persona world (a bundled persona's seed) is served by two episode registries in one
process, one on our built-in apps and one on AppWorld's own (its service process, installed by
``auratown appworld install``). The same scripted calls (logins, searches, reads, and writes: a
cart, an order, a mail, a task) go to each, interleaved call by call so both see the same machine
load, as ``ProbeCall`` asks over the in-process bus: what an assistant's call costs, registry,
policy, audit and history included. Prints p50/p99 per backend, reads and writes apart, and their
ratio; every call must answer ``ok``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._cli import begin
from bench.episodes.command import BUNDLED
from bench.episodes.loader import load_episode
from bench.suite.stats import quantile

PERSONA = "ines_calder"
EMAIL = "ines@hollowoak.example"
PASSWORDS = {"amazon": "KraftBox!18", "gmail": "OakCrumb-22", "todoist": "RotaTues-77"}

Call = tuple[str, Callable[[dict[str, str]], dict[str, Any]], bool]
"""(tool, arguments from the access tokens, whether it writes)."""


def _script(round_no: int) -> list[Call]:
    def tok(app: str) -> Callable[[dict[str, str]], dict[str, Any]]:
        return lambda t: {"access_token": t[app]}

    return [
        ("mcp_appworld_amazon__search_products", lambda t: {"query": "pastry box"}, False),
        ("mcp_appworld_amazon__show_product", lambda t: {"product_id": 4101}, False),
        ("mcp_appworld_amazon__show_cart", tok("amazon"), False),
        ("mcp_appworld_amazon__show_payment_cards", tok("amazon"), False),
        ("mcp_appworld_gmail__show_inbox_threads", tok("gmail"), False),
        ("mcp_appworld_todoist__show_projects", tok("todoist"), False),
        (
            "mcp_appworld_amazon__add_product_to_cart",
            lambda t: {"access_token": t["amazon"], "product_id": 4101, "quantity": 1},
            True,
        ),
        (
            "mcp_appworld_todoist__create_task",
            lambda t: {"access_token": t["todoist"], "project_id": 6101, "title": f"bench task {round_no}"},
            True,
        ),
        (
            "mcp_appworld_gmail__send_email",
            lambda t: {
                "access_token": t["gmail"],
                "email_addresses": ["dario.brandt@example.com"],
                "subject": f"bench {round_no}",
                "body": "a measured mail",
            },
            True,
        ),
        ("mcp_appworld_amazon__clear_cart", tok("amazon"), True),
    ]


def measure(rounds: int, appworld_home: Path | None) -> dict[str, dict[str, list[float]]]:
    from actors.appworld import AppWorldApps, AppWorldInstall, AppWorldService, default_home
    from actors.bus import Bus, MemoryTransport
    from actors.episodes import EpisodeRegistryActor
    from actors.runtime import Host
    from messages.episodes import SeedWorkspace
    from messages.probes import ProbeCall, ProbeResult

    episode = load_episode(BUNDLED / PERSONA)
    install = AppWorldInstall(appworld_home or default_home()).require()
    transport = MemoryTransport()
    bus = Bus(transport, "bench.apps")
    service = AppWorldService(install).start()
    host = Host(bus, name="bench-apps")
    try:
        apps = AppWorldApps(service)
        host.spawn(lambda: EpisodeRegistryActor(seed=episode.seed), "registry.builtin")
        host.spawn(lambda: EpisodeRegistryActor(seed=episode.seed, apps=apps), "registry.appworld")
        host.start()
        backends = ("builtin", "appworld")
        tokens: dict[str, dict[str, str]] = {}
        for b in backends:
            bus.ask(f"registry.{b}", SeedWorkspace(task_id="bench", sim_time=60.0), timeout=60)
            tokens[b] = {}
            for app, password in PASSWORDS.items():
                reply = bus.ask(
                    f"registry.{b}",
                    ProbeCall(
                        registry="episode",
                        tool=f"mcp_appworld_{app}__login",
                        args={"username": EMAIL, "password": password},
                    ),
                    timeout=60,
                )
                assert isinstance(reply, ProbeResult) and reply.status == "ok", (b, app, reply)
                tokens[b][app] = str((reply.result or {})["response"]["access_token"])  # type: ignore[index,call-overload]
        times: dict[str, dict[str, list[float]]] = {b: {"read": [], "write": []} for b in backends}
        failures: list[str] = []
        for r in range(rounds):
            for tool, args_of, writes in _script(r):
                for b in backends if r % 2 == 0 else reversed(backends):
                    started = time.perf_counter()
                    reply = bus.ask(
                        f"registry.{b}",
                        ProbeCall(registry="episode", tool=tool, args=args_of(tokens[b])),
                        timeout=60,
                    )
                    times[b]["write" if writes else "read"].append(time.perf_counter() - started)
                    if not isinstance(reply, ProbeResult) or reply.status != "ok":
                        failures.append(
                            f"{b} {tool}: {getattr(reply, 'status', reply)} {getattr(reply, 'error', '')}"
                        )
        if failures:
            raise SystemExit("calls that did not answer ok:\n" + "\n".join(failures[:10]))
        return times
    finally:
        host.stop()
        service.stop()
        bus.close()


def report(times: dict[str, dict[str, list[float]]]) -> str:
    lines = [
        "| backend | calls | p50 ms | p99 ms | reads p50 | writes p50 | mean ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    p50 = {}
    for b, kinds in times.items():
        every = kinds["read"] + kinds["write"]
        p50[b] = statistics.median(every)
        lines.append(
            f"| {b} | {len(every)} | {1000 * p50[b]:.2f} | {1000 * quantile(every, 0.99):.2f} | "
            f"{1000 * statistics.median(kinds['read']):.2f} | "
            f"{1000 * statistics.median(kinds['write']):.2f} | {1000 * statistics.fmean(every):.2f} |"
        )
    if set(p50) == {"builtin", "appworld"}:
        lines.append(
            f"\nappworld / builtin p50 ratio: {p50['appworld'] / p50['builtin']:.1f}x (same run, interleaved)"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.apps", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="rounds of the 10-call script (default 30)")
    parser.add_argument(
        "--appworld-home", type=Path, default=None, help="AppWorld's install (default: the usual)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = begin(parse_args, argv)
    print(report(measure(args.rounds, args.appworld_home)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
