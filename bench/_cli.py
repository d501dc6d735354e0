"""The command line of a performance benchmark (``python -m bench.<name>``): its sizes with their
``--quick`` values, ``--out`` and ``--quick``, and its start. What it prints is ``bench._output``."""

from __future__ import annotations

import argparse
import dataclasses
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from actors.logging import configure_logging
from bench._harness import exit_on_sigterm
from bench._output import finish

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


class _Measured(Protocol):
    elapsed_s: float
    children: dict[str, int | None]

    def to_json(self) -> dict[str, Any]: ...


B = TypeVar("B", bound=BenchParams)
R = TypeVar("R", bound=_Measured)


def bench_main(
    argv: list[str] | None,
    parse: Callable[[list[str] | None], B],
    run: Callable[[B], R],
    sections: Sequence[Callable[[R], str]],
) -> int:
    """A benchmark over child processes from start to end: its command line, its run, then its
    report's sections printed and its results written (``bench._output.finish``)."""
    params = begin(parse, argv)
    report = run(params)
    texts = [section(report) for section in sections]
    finish(report, Path(params.out), texts, elapsed_s=report.elapsed_s, children=report.children)
    return 0
