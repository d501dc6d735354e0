"""A host process for multi-process tests: ``python -m tests.support.worker URL NS ROLE``."""

from __future__ import annotations

import argparse

from actors.bus import Bus, open_transport
from actors.logging import configure_logging
from actors.runtime import Host, HostConfig
from tests.support.actors import Counter_, Echo, Slow

ROLES = {"echo": (Echo, "echo"), "counter": (Counter_, "counter"), "slow": (Slow, "slow")}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("namespace")
    p.add_argument("role", choices=sorted(ROLES))
    p.add_argument("--visibility", type=float, default=30.0)
    p.add_argument("--drain", type=float, default=10.0)
    p.add_argument("--max-in-flight", type=int, default=1024)
    args = p.parse_args()
    configure_logging("json", "INFO")
    bus = Bus(open_transport(args.url), args.namespace)
    config = HostConfig(
        visibility_timeout=args.visibility,
        drain_timeout=args.drain,
        heartbeat_every=0.2,
        max_in_flight=args.max_in_flight,
    )
    host = Host(bus, config, name=args.role)
    cls, address = ROLES[args.role]
    host.spawn(cls, address)
    host.run_until_signal()
    bus.close()


if __name__ == "__main__":
    main()
