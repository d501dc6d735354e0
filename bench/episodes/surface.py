"""Our built-in apps against AppWorld's own API docs, from the command line: every difference
``world.episodes.apps.appworld_api.parameter_mismatches`` finds (parameter names, JSON types,
required, defaults), one a line, and a count.

    python -m bench.episodes.surface --docs api_docs.json [--app amazon ...]
    python -m bench.episodes.surface --appworld [--app amazon ...]

``--docs`` reads AppWorld's standard docs (``appworld.api_docs.prepare_api_docs``, run in
AppWorld's own venv) as JSON: one list of every app's entries, or ``{app: [entries]}``.
``--appworld`` asks the AppWorld installed by ``auratown appworld install`` (its service, started
for the purpose). Exit 0 when there is no difference, 1 when there are, 2 with a one-line reason
when the docs cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from world.episodes.apps.appworld_api import ApiDocsError, parameter_mismatches, parse_api_docs
from world.episodes.apps.registry import ALL_TOOLS, APPS


class DocsUnreadable(Exception):
    """The docs could not be had; the message says why in one line."""


def _docs_from_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DocsUnreadable(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise DocsUnreadable(f"{path} is not JSON: {exc}") from None


def _docs_from_appworld() -> list[dict[str, Any]]:
    # Imported here: the service client is needed only with --appworld.
    from actors.appworld import AppWorldError, start_service

    try:
        with start_service() as service:
            return service.api_docs()
    except AppWorldError as exc:
        raise DocsUnreadable(str(exc)) from None


def _refuse(reason: str) -> int:
    # One line, whatever the reason quotes (a service's last log lines, say).
    print(f"surface: {' '.join(reason.split())}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.episodes.surface",
        description="Our built-in apps' tools against AppWorld's API docs.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--docs", type=Path, metavar="FILE", help="AppWorld's standard API docs as JSON")
    source.add_argument(
        "--appworld", action="store_true", help="read the docs from the installed AppWorld's service"
    )
    parser.add_argument(
        "--app", action="append", default=[], choices=APPS, help="only this app's tools (repeatable)"
    )
    ns = parser.parse_args(argv)
    try:
        raw = _docs_from_appworld() if ns.appworld else _docs_from_file(ns.docs)
    except DocsUnreadable as exc:
        return _refuse(str(exc))
    try:
        apis = parse_api_docs(raw)
    except ApiDocsError as exc:
        return _refuse(f"{'AppWorld' if ns.appworld else ns.docs}: {exc}")
    apps = sorted(ns.app or APPS)
    differences = parameter_mismatches(ALL_TOOLS, apis, apps=apps)
    for line in differences:
        print(line)
    tools = sum(1 for t in ALL_TOOLS if t.app in apps)
    print(f"{tools} app tools of {', '.join(apps)}: {len(differences)} differences from AppWorld's docs")
    return 1 if differences else 0


if __name__ == "__main__":
    from actors.logging import configure_logging

    # Logs (the AppWorld service's start) on stderr, warnings only: stdout is the differences.
    configure_logging(level="WARNING")
    sys.exit(main())
