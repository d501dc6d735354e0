"""The command line and the printed output of a performance benchmark (``python -m bench.<name>``):
its options, its timed steps, table cells and verdicts, and the JSON results file."""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from actors.logging import configure_logging
from bench._harness import exit_on_sigterm

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
P = TypeVar("P", bound="DataclassInstance")


RESULTS = Path(__file__).resolve().parent / "results"
"""Where each benchmark writes its JSON results by default (``<name>.json``)."""


class Scale(NamedTuple):
    """A size of a benchmark run (messages, ticks, passes...): by default, and under ``--quick``."""

    default: Any
    quick: Any


@dataclasses.dataclass
class BenchParams:
    """What every benchmark's command line has: ``--quick`` and ``--out``."""

    quick: bool
    out: str


class BenchParser:
    """The command line of a performance benchmark: its description is the module docstring's first
    paragraph; sizes whose default depends on ``--quick``; then ``--out`` (the JSON results file)
    and ``--quick`` (a smoke run)."""

    def __init__(self, module: str, doc: str | None, *, quick: str) -> None:
        self.parser = argparse.ArgumentParser(
            prog=f"python -m {module}", description=(doc or "").split("\n\n")[0]
        )
        self.out = RESULTS / f"{module.rsplit('.', 1)[-1]}.json"
        self.quick = quick
        self._sized: dict[str, Scale] = {}

    def sized(
        self,
        flag: str,
        help: str,
        scale: Scale,
        *,
        type: Callable[[str], Any] = int,
        show: Callable[[Any], str] = str,
    ) -> None:
        """An option that, when not given, takes the scale's size (``--quick``'s under ``--quick``)."""
        shown = f"default {show(scale.default)}, quick {show(scale.quick)}"
        action = self.parser.add_argument(flag, type=type, default=None, help=f"{help} ({shown})")
        self._sized[action.dest] = scale

    def parse(self, argv: Sequence[str] | None) -> argparse.Namespace:
        self.parser.add_argument(
            "--out", default=str(self.out), help="JSON results file (default %(default)s)"
        )
        self.parser.add_argument("--quick", action="store_true", help=self.quick)
        args = self.parser.parse_args(argv)
        for dest, scale in self._sized.items():
            if getattr(args, dest) is None:
                setattr(args, dest, scale.quick if args.quick else scale.default)
        return args

    def error(self, message: str) -> None:
        self.parser.error(message)


def params_from(cls: type[P], args: argparse.Namespace) -> P:
    """The dataclass ``cls`` from the options of the same names."""
    return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})


def begin(parse: Callable[[list[str] | None], T], argv: list[str] | None) -> T:
    """A benchmark's start: warnings only in the log, its command line parsed, and SIGTERM turned
    into an exit that stops its children."""
    configure_logging(level="WARNING")
    params = parse(argv)
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    return params


# ---------------------------------------------------------------------------------------- printing


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
