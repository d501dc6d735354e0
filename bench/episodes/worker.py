"""A worker process of ``auratown bench episodes --workers N``: runs its share of the units over
the shared Redis, appending to the same run directory (each unit has files of its own)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from actors.logging import configure_logging
from bench.episodes.command import BUNDLED, EpisodeUsageError, load_all, run_units_here
from bench.episodes.plan import parse_assistants, plan_units
from bench.episodes.store import EpisodeRunDir


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.episodes.worker")
    p.add_argument("--out", required=True)
    p.add_argument("--bus", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--units", required=True, help="comma-separated unit keys")
    p.add_argument("--args", required=True, help="the run's options as JSON")
    ns = p.parse_args(argv)
    configure_logging("console", "warning")
    opts = argparse.Namespace(**json.loads(ns.args))
    opts.cache_dir = Path(opts.cache_dir) if opts.cache_dir else None
    try:
        episodes = load_all(Path(opts.tasks) if opts.tasks else BUNDLED)
        plan = plan_units(
            episodes, parse_assistants(opts.assistants), opts.runs, ablation=not opts.no_ablation
        )
    except (EpisodeUsageError, ValueError) as exc:
        print(f"episode worker: {exc}", file=sys.stderr)
        return 2
    wanted = set(ns.units.split(","))
    units = [u for u in plan if u.key in wanted]
    run_units_here(opts, EpisodeRunDir(Path(ns.out)), ns.namespace, units, bus_url=ns.bus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
