"""What a performance benchmark prints and writes: its timed steps, table cells and verdicts, its
report's sections, and the JSON results file."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")


def num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def row(cells: Sequence[str], columns: Sequence[tuple[str, int]]) -> str:
    """A table row; a negative column width means left-aligned."""
    return " | ".join(c.ljust(-w) if w < 0 else c.rjust(w) for c, (_, w) in zip(cells, columns, strict=True))


def table(columns: Sequence[tuple[str, int]], rows: Iterable[Sequence[str]]) -> list[str]:
    """A table's lines: its headings, a rule, then a line per row."""
    head = row([name for name, _ in columns], columns)
    return [head, "-" * len(head), *(row(cells, columns) for cells in rows)]


def verdict(passed: bool | None) -> str:
    return "n/a" if passed is None else "PASS" if passed else "FAIL"


class _Reportable(Protocol):
    def to_json(self) -> dict[str, Any]: ...


def results_json(
    benchmark: str,
    params: DataclassInstance,
    machine: Mapping[str, Any],
    figures: Mapping[str, Any],
    elapsed_s: float,
) -> dict[str, Any]:
    """A benchmark's JSON results: which, when, with what and where, then its figures."""
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    head = {
        "benchmark": benchmark,
        "timestamp": when,
        "params": dataclasses.asdict(params),
        "machine": machine,
    }
    return {**head, **figures, "elapsed_s": elapsed_s}


def write_json(report: _Reportable, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_json(), indent=2) + "\n")


def step(name: str, fn: Callable[[], T], detail: Callable[[T], str] | None = None) -> T:
    """Run one measurement, saying its name first and then how long it took (and ``detail``)."""
    print(f"  {name} ...", end=" ", flush=True)
    t0 = time.monotonic()
    result = fn()
    took = time.monotonic() - t0
    print(f"{took:.1f}s{f' ({detail(result)})' if detail is not None else ''}", flush=True)
    return result


def finish(
    report: _Reportable,
    out: Path,
    sections: Sequence[str],
    *,
    elapsed_s: float,
    children: Mapping[str, int | None] | None = None,
) -> None:
    """Print the report's sections (blank lines between them; an empty one is left out), warn of
    children that did not exit cleanly, write the JSON results and say where."""
    for section in sections:
        if section:
            print()
            print(section)
    unclean = [f"{name}={code}" for name, code in (children or {}).items() if code != 0]
    if unclean:
        print(f"warning: child processes did not exit cleanly: {', '.join(unclean)}")
    write_json(report, out)
    print(f"\nresults written to {out} ({elapsed_s:.1f}s)")
