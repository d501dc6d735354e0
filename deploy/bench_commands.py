"""``auratown bench aura|episodes`` and ``auratown report`` (the work is in ``bench.suite`` and
``bench.episodes``)."""

from __future__ import annotations

import argparse

from deploy.commands import UserError


def bench(args: argparse.Namespace) -> int:
    from bench.suite.command import BenchUsageError, run_aura

    try:
        _, text = run_aura(args)
    except BenchUsageError as exc:
        raise UserError(str(exc)) from None
    print(text)
    return 0


def episodes(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bench.episodes.command import BUNDLED, EpisodeUsageError, lint, run_episodes

    if args.lint:
        status, text = lint(Path(args.tasks) if args.tasks else BUNDLED)
        if status == 2:
            raise UserError(text)
        print(text)
        return status
    try:
        _, text = run_episodes(args)
    except EpisodeUsageError as exc:
        raise UserError(str(exc)) from None
    print(text)
    return 0


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
