"""Running ``bench episodes`` from tests and reading its run directory."""

from __future__ import annotations

import sys
from pathlib import Path

BAKERY = Path(__file__).resolve().parents[2] / "bench" / "episodes" / "data" / "ines_calder"
"""The bundled persona whose episodes the run tests use."""


def bench_episodes_command(redis_url: str, out: Path, *more: str) -> list[str]:
    """``auratown bench episodes`` over the bakery persona, once, the built-in assistant only."""
    return [
        sys.executable, "-m", "deploy.cli", "--log-level", "warning", "bench", "episodes",
        "--tasks", str(BAKERY), "--runs", "1", "--assistants", "builtin", "--no-ablation",
        "--bus", redis_url, *more, "--out", str(out), "--quiet",
    ]  # fmt: skip


def finished_sessions(record: Path) -> int:
    """Sessions a unit's record (``units/KEY.jsonl``) reports finished so far."""
    if not record.exists():
        return 0
    return sum('"event": "finished"' in line for line in record.read_text().splitlines())
