"""``auratown bench aura`` and ``auratown report`` (the work is in ``bench.suite``)."""

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


def report(args: argparse.Namespace) -> int:
    from bench.suite.report import write_report

    try:
        print(write_report(args.run_dir))
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    return 0
