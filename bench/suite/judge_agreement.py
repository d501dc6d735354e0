"""Does the deterministic implicit judge agree with the paper's judge where it was not fitted?

The paper's released implicit-intent v2 cells (three seeds x five conditions x 50 queries, each a gpt-4o-mini
answer scored by the paper's gpt-4o-mini judge) are split by seed: the judge's constants (``JudgeParams``:
the partial-credit score and the need-engagement threshold) are fitted on one seed's cells, and the other
seeds' cells are its held-out figures. For each slice the report gives implicit binary agreement (both >= 0.5
after banding the paper's score, ``Agreement``), binary and 3-band kappa, binary agreement per subcategory,
and per condition the mean implicit score by ours and by the paper's judge, and their difference.

    python -m bench.suite.judge_agreement [--results PATH] [--queries PATH] [--fit-seed 42]

The data are external (the AURA paper's release); by default they are read from $AURATOWN_AURA_DATA,
else ../shared/data/aura next to the repository. Exit status: 0 when every held-out target passes,
1 when one fails, 2 when data are missing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bench.suite.datasets import AURA_RELEASE, ImplicitQuery, ImplicitScene, read_v2, released_cells
from bench.suite.judges import Agreement, Assessment, ImplicitIntentJudge, JudgeParams, band
from bench.suite.stats import mean

DATA = AURA_RELEASE
RESULTS = DATA / "rq_intent_v2_multiseed_AB.json"
QUERIES = DATA / "implicit_intent_queries_v2_AB.json"
WHERE = (
    "the AURA paper's release (github.com/innovation64/AURA, paper_supplementary: "
    "benchmarks/implicit_intent_queries_v2.json and results/rq_intent_v2_multiseed.json, scenes A and B)"
)

# The acceptance targets, checked on the held-out seeds.
MIN_BINARY = 0.88
MIN_BINARY_KAPPA = 0.65
MIN_SUBCATEGORY_BINARY = 0.75
MAX_MEAN_DIFF = 0.05

# The grid the need-engagement threshold is fitted on, and the grid of the paper's judge's scores.
ENGAGE_GRID = tuple(round(0.05 * i, 2) for i in range(0, 11))
PAPER_STEP = 0.2


@dataclass(frozen=True)
class Cell:
    """One released cell: a model answer to a query and the paper's judge's scores of it."""

    seed: str
    condition: str
    query: ImplicitQuery
    scene: ImplicitScene
    answer: str
    paper_implicit: float
    paper_literal: float


def load_cells(results_path: str | Path, queries_path: str | Path) -> list[Cell]:
    """Every cell of an rq_intent_v2 multiseed file (seed -> condition -> cells), with its query and scene."""
    queries, scenes = read_v2(queries_path)
    cells: list[Cell] = []
    for c in released_cells(results_path):
        q = queries[c.query_id]
        literal, implicit = c.judged()
        cells.append(Cell(c.seed, c.condition, q, scenes[q.scene], c.answer, implicit, literal))
    return cells


# -- one slice ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SliceReport:
    """Agreement of the deterministic judge with the paper's on one set of cells."""

    name: str
    cells: int
    failures: int
    implicit: Agreement
    literal: Agreement
    by_subcategory: dict[str, Agreement]  # implicit agreement per subcategory
    means: dict[str, tuple[float, float]]  # condition -> (paper's mean implicit, ours)

    def mean_diff(self, condition: str) -> float:
        paper, ours = self.means[condition]
        return ours - paper

    def targets(self) -> list[tuple[str, float, bool]]:
        """(target, measured value, met) for each acceptance target."""
        out = [
            (f"binary agreement >= {MIN_BINARY}", self.implicit.binary, self.implicit.binary >= MIN_BINARY),
            (
                f"binary kappa >= {MIN_BINARY_KAPPA}",
                self.implicit.binary_kappa,
                self.implicit.binary_kappa >= MIN_BINARY_KAPPA,
            ),
        ]
        for sub, agr in self.by_subcategory.items():
            out.append(
                (
                    f"{sub} binary >= {MIN_SUBCATEGORY_BINARY}",
                    agr.binary,
                    agr.binary >= MIN_SUBCATEGORY_BINARY,
                )
            )
        for cond in self.means:
            d = self.mean_diff(cond)
            out.append((f"{cond} |mean diff| <= {MAX_MEAN_DIFF}", d, abs(d) <= MAX_MEAN_DIFF + 1e-9))
        return out

    @property
    def passed(self) -> bool:
        return all(ok for _, _, ok in self.targets())


Scorer = Callable[[Cell], tuple[float, float] | None]  # (literal, implicit), None for a judge failure


def evaluate(name: str, cells: Sequence[Cell], scorer: Scorer) -> SliceReport:
    """Score every cell and compare with the paper's judge. Failed cells are counted and left out."""
    scored: list[tuple[Cell, float, float]] = []
    failures = 0
    for cell in cells:
        result = scorer(cell)
        if result is None:
            failures += 1
            continue
        scored.append((cell, *result))
    subs = sorted({c.query.subcategory for c, _, _ in scored})
    conditions = list(dict.fromkeys(c.condition for c, _, _ in scored))
    means: dict[str, tuple[float, float]] = {}
    for cond in conditions:
        mine = [(c.paper_implicit, imp) for c, _, imp in scored if c.condition == cond]
        means[cond] = (mean([p for p, _ in mine]), mean([o for _, o in mine]))
    return SliceReport(
        name=name,
        cells=len(cells),
        failures=failures,
        implicit=Agreement.of([(c.paper_implicit, imp) for c, _, imp in scored]),
        literal=Agreement.of([(c.paper_literal, lit) for c, lit, _ in scored]),
        by_subcategory={
            s: Agreement.of([(c.paper_implicit, imp) for c, _, imp in scored if c.query.subcategory == s])
            for s in subs
        },
        means=means,
    )


# -- fitting ------------------------------------------------------------------------------------------


class _Assessed:
    """Each cell assessed once (an assessment does not depend on the fitted constants), then scored under any
    ``JudgeParams``. A cell the judge cannot assess (empty answer, crash) is a failure under every params."""

    def __init__(self, cells: Iterable[Cell], base: JudgeParams | None = None) -> None:
        judge = ImplicitIntentJudge(base)
        self.assessed: dict[int, Assessment | None] = {}
        for cell in cells:
            a: Assessment | None = None
            if cell.answer.strip():
                try:
                    a = judge.assess(cell.query, cell.scene, cell.answer)
                except Exception:  # noqa: BLE001 - as ImplicitIntentJudge.judge: a counted failure
                    a = None
            self.assessed[id(cell)] = a

    def scorer(self, params: JudgeParams) -> Scorer:
        judge = ImplicitIntentJudge(params)

        def score(cell: Cell) -> tuple[float, float] | None:
            a = self.assessed[id(cell)]
            return None if a is None else judge.score(cell.query, a)

        return score


def fit_partial(cells: Sequence[Cell]) -> float:
    """The paper's judge's partial credit: the mean of its scores that band to partial (0.3..0.7), on the
    paper's own grid of 0.2 steps."""
    partial = [c.paper_implicit for c in cells if band(c.paper_implicit) == 0.5]
    if not partial:
        return JudgeParams().partial
    return round(round(mean(partial) / PAPER_STEP) * PAPER_STEP, 2)


def fit(
    cells: Sequence[Cell], base: JudgeParams | None = None, assessed: _Assessed | None = None
) -> JudgeParams:
    """Fit ``partial`` (above) and ``engage`` on ``cells``: the threshold of the grid whose per-condition
    means come closest to the paper's (smallest largest |difference|), ties broken by 3-band agreement."""
    params = replace(base or JudgeParams(), partial=fit_partial(cells))
    assessed = assessed or _Assessed(cells, params)
    best: tuple[float, float, float] | None = None
    for engage in ENGAGE_GRID:
        report = evaluate("fit", cells, assessed.scorer(replace(params, engage=engage)))
        worst = max(abs(report.mean_diff(c)) for c in report.means)
        key = (round(worst, 9), -report.implicit.exact, engage)
        if best is None or key < best:
            best = key
    assert best is not None
    return replace(params, engage=best[2])


# -- the report ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeldOutReport:
    fit_seed: str
    params: JudgeParams
    fit: SliceReport
    held_out: SliceReport
    per_seed: list[SliceReport]

    def format(self) -> str:
        p = self.params
        slices = [self.fit, self.held_out, *self.per_seed]
        lines = [
            f"fitted on seed {self.fit_seed}: partial={p.partial:g}, engage={p.engage:g} "
            f"(goal_full={p.goal_full:g}, goal_part={p.goal_part:g} fixed)",
            "",
            "| slice | cells | failures | implicit binary | binary kappa | 3-band kappa | exact "
            "| literal binary |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for s in slices:
            i = s.implicit
            lines.append(
                f"| {s.name} | {s.cells} | {s.failures} | {i.binary:.3f} | {i.binary_kappa:.3f} "
                f"| {i.kappa:.3f} | {i.exact:.3f} | {s.literal.binary:.3f} |"
            )
        subs = list(self.held_out.by_subcategory)
        lines += ["", "implicit binary agreement per subcategory:"]
        lines.append("| slice | " + " | ".join(subs) + " |")
        lines.append("|---" * (len(subs) + 1) + "|")
        for s in slices:
            row = [f"{s.by_subcategory[x].binary:.3f}" if x in s.by_subcategory else "-" for x in subs]
            lines.append(f"| {s.name} | " + " | ".join(row) + " |")
        conds = list(self.held_out.means)
        lines += ["", "mean implicit score per condition, paper's judge / ours (ours - paper):"]
        lines.append("| slice | " + " | ".join(conds) + " |")
        lines.append("|---" * (len(conds) + 1) + "|")
        for s in slices:
            row = [
                f"{s.means[c][0]:.3f} / {s.means[c][1]:.3f} ({s.mean_diff(c):+.3f})" if c in s.means else "-"
                for c in conds
            ]
            lines.append(f"| {s.name} | " + " | ".join(row) + " |")
        lines += ["", f"held-out targets ({self.held_out.name}):"]
        for target, value, ok in self.held_out.targets():
            shown = f"{value:+.3f}" if "diff" in target else f"{value:.3f}"
            lines.append(f"  {'PASS' if ok else 'FAIL'}  {target}: {shown}")
        lines.append(f"held-out: {'PASS' if self.held_out.passed else 'FAIL'}")
        return "\n".join(lines)


def held_out_report(
    results_path: str | Path,
    queries_path: str | Path,
    fit_seed: str = "42",
    params: JudgeParams | None = None,
) -> HeldOutReport:
    """Fit the judge on ``fit_seed``'s cells (unless ``params`` are given) and measure it on every seed."""
    cells = load_cells(results_path, queries_path)
    seeds = list(dict.fromkeys(c.seed for c in cells))
    if fit_seed not in seeds:
        raise ValueError(f"seed {fit_seed} not in the results (seeds: {', '.join(seeds)})")
    fit_cells = [c for c in cells if c.seed == fit_seed]
    assessed = _Assessed(cells, params)
    fitted = params or fit(fit_cells, assessed=assessed)
    held = [c for c in cells if c.seed != fit_seed]
    scorer = assessed.scorer(fitted)
    others = [s for s in seeds if s != fit_seed]
    return HeldOutReport(
        fit_seed=fit_seed,
        params=fitted,
        fit=evaluate(f"fit {fit_seed}", fit_cells, scorer),
        held_out=evaluate("held-out " + "+".join(others), held, scorer),
        per_seed=[evaluate(f"seed {s}", [c for c in held if c.seed == s], scorer) for s in others],
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.suite.judge_agreement",
        description="Agreement of the deterministic implicit judge with the paper's judge, fitted on one "
        "seed and held out on the others.",
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="rq_intent_v2_multiseed_AB.json")
    parser.add_argument("--queries", type=Path, default=QUERIES, help="implicit_intent_queries_v2_AB.json")
    parser.add_argument("--fit-seed", default="42", help="the seed whose cells fit the judge (default 42)")
    args = parser.parse_args(argv)
    missing = [p for p in (args.results, args.queries) if not p.exists()]
    if missing:
        print(f"missing {', '.join(map(str, missing))}: get them from {WHERE}", file=sys.stderr)
        return 2
    report = held_out_report(args.results, args.queries, str(args.fit_seed))
    print(report.format())
    return 0 if report.held_out.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
