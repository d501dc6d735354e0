"""``auratown bench aura`` and ``auratown report``: run a suite into a run directory, report it."""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bench.progress import Progress
from bench.rundir import DataRef, RunDirError, SuiteConfig, SuiteManifest, git_commit
from bench.suite import factual, implicit
from bench.suite.cells import Answerer
from bench.suite.datasets import Suite, SuiteError, load_suite
from bench.suite.report import write_report
from bench.suite.runs import CellRunDir, plan_cells, run_cells
from bench.suite.workers import BusWorkers, registry_for
from messages.aura import CONDITIONS
from world.aura import Backend

if TYPE_CHECKING:
    from actors.llm import LLMGateway

ROOT = Path(__file__).resolve().parents[2]
IMPLICIT_SUITES = ("implicit-v1", "implicit-v2", "phrasing", "phrasing-dev", "phrasing-test")
FACTUAL_SUITES = ("factual", "privacy")


class BenchUsageError(ValueError):
    """A bad benchmark request, explained in one line."""


def _conditions(text: str | None) -> list[str]:
    if not text:
        return list(CONDITIONS)
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in CONDITIONS]
    if unknown:
        raise BenchUsageError(
            f"unknown condition(s) {', '.join(unknown)}: choose from {', '.join(CONDITIONS)}"
        )
    return chosen


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise BenchUsageError(f"--seeds takes comma-separated whole numbers, not {text!r}") from None
    if not seeds:
        raise BenchUsageError("--seeds needs at least one seed")
    return seeds


def run_aura(args: argparse.Namespace) -> tuple[Path, str]:
    """Run (or resume) the suite, or several (``--suite a,b,c``: one run directory each under
    ``--out``, and one table comparing them); returns the run directory and its report."""
    names = [n.strip() for n in str(args.suite).split(",") if n.strip()]
    if len(names) > 1:
        return _run_several(args, names)
    if args.suite not in (*FACTUAL_SUITES, *IMPLICIT_SUITES):
        raise BenchUsageError(
            f"unknown suite {args.suite!r}: choose from {', '.join((*FACTUAL_SUITES, *IMPLICIT_SUITES))}"
        )
    try:
        suite = load_suite(args.suite, args.data)
    except SuiteError as exc:
        raise BenchUsageError(str(exc)) from None
    conditions = _conditions(args.conditions)
    seeds = _seeds(args.seeds)
    out = Path(args.out) if args.out else Path("runs") / f"{args.suite}-{time.strftime('%Y%m%d-%H%M%S')}"
    from actors.aura import reader_from_setting

    try:
        reader = reader_from_setting(getattr(args, "reader", None))
    except Exception as exc:  # noqa: BLE001 - an unknown or unavailable reader, in one line
        raise BenchUsageError(str(exc)) from None
    config = SuiteConfig(
        intent_reader=reader.name,
        suite=args.suite,
        data=DataRef.of(suite.source),
        bundled=suite.bundled,
        conditions=tuple(conditions),
        seeds=tuple(seeds),
        model=args.model,
        judge_model=args.judge_model,
        explore_max_steps=args.max_steps,
    )
    manifest = SuiteManifest(
        config=config,
        git_commit=git_commit(ROOT),
        started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        python=platform.python_version(),
        note="offline backends are deterministic: every seed repeats the same answers"
        if not args.model
        else "seeds vary only what the model samples; the response cache makes reruns identical",
    )
    run = CellRunDir(out)
    try:
        run.create(manifest)
    except RunDirError as exc:
        raise BenchUsageError(str(exc)) from None
    from actors.aura import make_backend_factory

    factory = make_backend_factory(
        args.model,
        api_base=args.api_base,
        cache_dir=args.cache_dir,
        reader=reader,
        settings=getattr(args, "settings", None),
    )

    def backends() -> Backend:  # one backend per cell
        return factory(None)

    workers_here = args.workers
    answer = None
    bus_workers: BusWorkers | None = None
    remote = getattr(args, "remote_workers", None)
    if remote is not None and not args.bus:
        raise BenchUsageError("--remote-workers answers cells over Redis: give --bus URL")
    if args.bus:
        # Cells answered by N worker processes' env actors over the bus (started here, or already
        # serving namespace `remote`); this process only sends the queries and judges.
        bus_workers = BusWorkers(
            args.bus,
            remote or f"bench:{out.name}",
            0 if remote else args.workers,
            model=args.model,
            api_base=args.api_base,
            cache_dir=args.cache_dir,
            settings=getattr(args, "settings", None),
        )
        try:
            answer = bus_workers.start(registry_for(args.suite))
        except RuntimeError as exc:
            bus_workers.stop()
            raise BenchUsageError(str(exc)) from None
        workers_here = bus_workers.concurrency  # two asks in flight per worker keep every one busy
    try:
        return _run(args, suite, run, out, conditions, seeds, backends, answer, workers_here)
    finally:
        if bus_workers is not None:
            bus_workers.stop()


def _judge_gateway(args: argparse.Namespace) -> LLMGateway:
    """The gateway of the LLM judge (``--judge-model``), sharing the answer cache directory if any."""
    from actors.llm import GatewayPool

    pool = GatewayPool(
        api_base=args.api_base, cache_dir=args.cache_dir, settings=getattr(args, "settings", None)
    )
    return pool.get(args.judge_model)


def _run(  # noqa: PLR0917 - the run's parts, decided by run_aura
    args: argparse.Namespace,
    suite: Suite,
    run: CellRunDir,
    out: Path,
    conditions: list[str],
    seeds: list[int],
    backends: Callable[[], Backend],
    answer: Answerer | None,
    workers: int,
) -> tuple[Path, str]:
    if args.suite in FACTUAL_SUITES:
        from bench.suite.judges import LLMFactualJudge

        factual_judge = LLMFactualJudge(_judge_gateway(args)).judge if args.judge_model else None
        execute = factual.cell_runner(
            suite, backends, judge=factual_judge, explore_max_steps=args.max_steps, answer=answer
        )
        ids = [str(q.id) for q in factual.queries(suite)]
    else:
        from bench.suite.judges import LLMImplicitJudge

        judge = LLMImplicitJudge(_judge_gateway(args)).judge if args.judge_model else None
        execute = implicit.cell_runner(
            suite, backends, judge=judge, explore_max_steps=args.max_steps, answer=answer
        )
        ids = [str(q.id) for q in suite.implicit()]
    cells = plan_cells(args.suite, conditions, seeds, ids)
    started = time.perf_counter()
    try:
        with Progress(len(cells), desc=args.suite, unit="cell", quiet=args.quiet) as progress:
            ran, skipped = run_cells(run, cells, execute, workers=workers, progress=progress)
    except KeyboardInterrupt:
        kept = len(run.done())
        raise RunInterrupted(
            f"interrupted: {kept} of {len(cells)} cells are in {out / 'cells.jsonl'}; "
            "the same command resumes from there"
        ) from None
    elapsed = time.perf_counter() - started
    report = write_report(out)
    summary = f"{ran} cells run, {skipped} resumed, in {elapsed:.1f}s; report: {out / 'report.md'}"
    return out, report + "\n\n" + summary


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: what was kept and how to go on (the CLI prints it and exits 130)."""


def _run_several(args: argparse.Namespace, names: list[str]) -> tuple[Path, str]:
    """Each suite into ``OUT/<suite>``, then one table of every condition across the suites."""
    unknown = [n for n in names if n not in (*FACTUAL_SUITES, *IMPLICIT_SUITES)]
    if unknown:
        known = ", ".join((*FACTUAL_SUITES, *IMPLICIT_SUITES))
        raise BenchUsageError(f"unknown suite(s) {', '.join(unknown)}: choose from {known}")
    if any(n in FACTUAL_SUITES for n in names):
        raise BenchUsageError("several suites in one run compare implicit-intent suites only")
    root = Path(args.out) if args.out else Path("runs") / f"compare-{time.strftime('%Y%m%d-%H%M%S')}"
    dirs: dict[str, Path] = {}
    for name in names:
        one = argparse.Namespace(**{**vars(args), "suite": name, "out": str(root / name)})
        dirs[name], _ = run_aura(one)
    table = comparison_table(dirs)
    (root / "comparison.md").write_text(table + "\n")
    return (
        root,
        table + f"\n\nruns: {', '.join(str(d) for d in dirs.values())}; table: {root / 'comparison.md'}",
    )


def comparison_table(dirs: dict[str, Path]) -> str:
    """Implicit score, probes per query and forbidden-tool violations of each condition, suite by
    suite (one column group per suite)."""
    from bench.suite.metrics import condition_order, summarize_all
    from bench.suite.report import as_metrics_cell, latest_cells

    summaries = {
        name: summarize_all(as_metrics_cell(r) for r in latest_cells(CellRunDir(d)))
        for name, d in dirs.items()
    }
    conditions = sorted(dict.fromkeys(c for s in summaries.values() for c in s), key=condition_order)
    head = "| condition | " + " | ".join(f"{n} implicit | {n} probes/q | {n} viol. %" for n in dirs) + " |"
    rule = "| --- |" + " ---: | ---: | ---: |" * len(dirs)
    rows = [head, rule]
    for c in conditions:
        cells = []
        for n in dirs:
            s = summaries[n].get(c)
            if s is None:
                cells += ["-", "-", "-"]
                continue
            implicit = s.mean_scores.get("implicit_score")
            cells += [
                f"{implicit:.3f}" if implicit is not None else "-",
                f"{s.probes_per_query:.2f}",
                f"{s.violation_pct:.1f}",
            ]
        rows.append(f"| {c} | " + " | ".join(cells) + " |")
    queries = ", ".join(f"{n}: {next(iter(s.values())).n_queries} queries" for n, s in summaries.items() if s)
    return "\n".join(rows) + f"\n\n{queries}"
