"""Latency per condition in the shape of the paper's Table 13 (wall clock per query, probe count)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from bench.suite.metrics import condition_order
from bench.suite.stats import mean

__all__ = ["latency_table"]


def latency_table(records: Sequence[Mapping[str, Any]]) -> str:
    """Per condition: cells, latency median / mean in ms, mean probes per query.

    Only ``ok`` records count (a failed cell's time says nothing about answering); records carry
    ``latency`` in seconds. Failed cells are counted in their own column so they are not hidden.
    """
    by_cond: dict[str, list[Mapping[str, Any]]] = {}
    failed: dict[str, int] = {}
    for r in records:
        cond = str(r["condition"])
        if r.get("ok"):
            by_cond.setdefault(cond, []).append(r)
        else:
            failed[cond] = failed.get(cond, 0) + 1
    lines = [
        "| condition | cells | latency ms (median / mean) | probes/q | failed |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for cond in sorted(set(by_cond) | set(failed), key=condition_order):
        mine = by_cond.get(cond, [])
        if mine:
            lat = [float(r.get("latency", 0.0)) * 1000.0 for r in mine]
            timing = f"{statistics.median(lat):.2f} / {mean(lat):.2f}"
            probes = f"{mean([float(r.get('probes', 0)) for r in mine]):.2f}"
        else:
            timing, probes = "-", "-"
        lines.append(f"| {cond} | {len(mine)} | {timing} | {probes} | {failed.get(cond, 0)} |")
    return "\n".join(lines)
