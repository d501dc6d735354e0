"""Reading an episode run directory from tests."""

from __future__ import annotations

from pathlib import Path


def finished_sessions(record: Path) -> int:
    """Sessions a unit's record (``units/KEY.jsonl``) reports finished so far."""
    if not record.exists():
        return 0
    return sum('"event": "finished"' in line for line in record.read_text().splitlines())
