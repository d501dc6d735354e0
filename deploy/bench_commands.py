"""``auratown bench aura|episodes`` and ``auratown report`` (the work is in ``bench.suite`` and
``bench.episodes``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from deploy.commands import UserError


def _print_run(
    run: Callable[[argparse.Namespace], tuple[Path, str]],
    usage_error: type[Exception],
    args: argparse.Namespace,
) -> int:
    """Run a benchmark and print its summary; its usage error is a one-line CLI error."""
    try:
        _, text = run(args)
    except usage_error as exc:
        raise UserError(str(exc)) from None
    print(text)
    return 0


def bench(args: argparse.Namespace) -> int:
    from bench.suite.command import BenchUsageError, run_aura

    return _print_run(run_aura, BenchUsageError, args)


def episodes(args: argparse.Namespace) -> int:
    from bench.episodes.command import BUNDLED, EpisodeUsageError, lint, run_episodes

    if args.lint:
        status, text = lint(Path(args.tasks) if args.tasks else BUNDLED)
        if status == 2:
            raise UserError(text)
        print(text)
        return status
    return _print_run(run_episodes, EpisodeUsageError, args)


def report(args: argparse.Namespace) -> int:
    from bench.suite.report import write_report

    try:
        if (args.run_dir / "units").is_dir():
            from bench.episodes.report import write_summary

            print(write_summary(args.run_dir))
            return 0
        print(write_report(args.run_dir))
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    return 0
