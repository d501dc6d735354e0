"""``auratown appworld install|status|serve``: AppWorld's own venv, and its service by hand.

``install`` creates AppWorld's venv (default under the user's data directory), installs the pinned
``appworld`` and runs ``appworld install``; a second run does nothing. ``--data DIR`` records
AppWorld's downloaded data (``appworld download data``) so worlds start from it; without it,
worlds are built from seed files. ``status`` says what is installed. ``serve`` starts the
AppWorld service in the foreground (127.0.0.1, a free port unless ``--port``), seeded from a seed
file when given, until Ctrl-C: for trying AppWorld's APIs by hand.

Only argparse and the standard library are imported at the top: the CLI starts fast.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

from deploy import arguments
from deploy.commands import UserError


def _options(p: arguments.Parser) -> None:
    p.add_argument("action", choices=("install", "status", "serve"))
    p.add_setting("--home", field="appworld_home", metavar="DIR",
                  help="where AppWorld's venv lives (default: %(default)s, else "
                  "$XDG_DATA_HOME/auratown/appworld)")  # fmt: skip
    p.add_argument("--data", type=Path, default=None, metavar="DIR",
                   help="install: AppWorld's downloaded data root (with data/base_dbs)")  # fmt: skip
    p.add_argument("--python", default=None, help="install: the Python (>= 3.11) to build the venv with")
    p.add_argument("--force", action="store_true", help="install: reinstall even when installed")
    p.add_argument("--seed", type=Path, default=None, metavar="FILE",
                   help="serve: a seed file (world/episodes/apps/seed.py's format)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from actors.appworld import AppWorldInstall, AppWorldInstallError, default_home, install

    home = Path(args.home).expanduser() if args.home else default_home(args.settings)
    target = AppWorldInstall(home, args.data.expanduser().resolve() if args.data else None)
    try:
        if args.action == "install":
            install(target, python=args.python, force=args.force)
            return 0
        if args.action == "status":
            return _status(target)
        return _serve(target.require(), args.seed)
    except AppWorldInstallError as exc:
        raise UserError(str(exc)) from None


COMMAND = arguments.Command(
    name="appworld",
    run=run,
    summary="install AppWorld (the episodes' --apps appworld backend) in its own venv; status; serve",
    description="AppWorld pins pydantic < 2, so it gets a venv and a process of its own.",
    options=_options,
)


def _status(target: Any) -> int:
    record = target.recorded()
    if not target.ready():
        print(f"AppWorld: not installed at {target.home} (`auratown appworld install`)")
        return 1
    print(json.dumps({"home": str(target.home), "python": str(target.python), **(record or {})}, indent=2))
    return 0


def _serve(target: Any, seed_file: Path | None) -> int:
    from actors.appworld import AppWorldService, AppWorldServiceError, AppWorldUnavailable

    seed: dict[str, Any] | None = None
    if seed_file is not None:
        seed = _read_seed(seed_file)
    service = AppWorldService(target)
    try:
        service.start()
        if seed is not None:
            apps = service.seed(seed)
            records = sum(len(rows) for tables in apps.values() for rows in tables.values())
            print(f"seeded from {seed_file}: {records} records", file=sys.stderr)
        print(f"AppWorld service at {service.url} (pid {service.pid}); Ctrl-C stops it", flush=True)
        threading.Event().wait()
    except (AppWorldUnavailable, AppWorldServiceError) as exc:
        raise UserError(str(exc)) from None
    except KeyboardInterrupt:
        pass
    finally:
        service.stop()
    return 0


def _read_seed(path: Path) -> dict[str, Any]:
    import yaml
    from pydantic import ValidationError

    from world.episodes.apps.seed import WorldSeed

    try:
        raw = yaml.safe_load(path.read_text())
        return WorldSeed.model_validate(raw or {}).model_dump(mode="json")
    except OSError as exc:
        raise UserError(f"--seed {path}: {exc.strerror}") from None
    except (yaml.YAMLError, ValidationError) as exc:
        first = str(exc).strip().splitlines()
        raise UserError(f"--seed {path}: not a seed file: {' '.join(first[:3])}") from None
