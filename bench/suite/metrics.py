"""Per-condition metrics and paired comparisons over per-cell benchmark records.

A *cell* is one (query, seed, condition) run. Metrics follow the AURA paper: FA = 0.7 P + 0.3 C
(Section 5.1), strict precision / hallucination % / perfect % from claim counts (Appendix A9),
forbidden-tool violation % (Appendix A10 privacy slice), probes per query, latency (Table 13).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from bench.suite.datasets import released_cells
from bench.suite.stats import (
    BootstrapResult,
    PearsonResult,
    TTestResult,
    WilcoxonResult,
    cluster_bootstrap_diff,
    mean,
    paired_t,
    pearson,
    wilcoxon,
)
from messages.aura import CONDITIONS

__all__ = [
    "FA_COMPLETENESS_WEIGHT",
    "FA_PRECISION_WEIGHT",
    "CellRecord",
    "ConditionSummary",
    "PairedComparison",
    "gap_probe_correlation",
    "paired_comparison",
    "paper_cells",
    "summarize",
    "summarize_all",
    "to_cell",
]

FA_PRECISION_WEIGHT = 0.7
FA_COMPLETENESS_WEIGHT = 0.3

QueryId = int | str


@dataclass(frozen=True)
class CellRecord:
    """One (query, seed, condition) result.

    ``scores`` holds the judge's numbers by name (e.g. ``implicit_score``, ``literal_score``,
    ``precision``, ``completeness``). Claim counts are None when the judge is not claim-level.
    """

    query_id: QueryId
    seed: int
    condition: str
    scores: Mapping[str, float] = field(default_factory=dict)
    probes: int = 0
    tools_called: tuple[str, ...] = ()
    forbidden_violations: tuple[str, ...] = ()
    latency: float = 0.0
    tokens: int = 0
    fallbacks: int = 0
    disclosure: float = 0.0
    correct: int | None = None
    contradicted: int | None = None
    unverifiable: int | None = None
    gap: float | None = None
    scene: str = ""
    subcategory: str = ""


_CELL_FIELDS = frozenset(CellRecord.__dataclass_fields__)


def to_cell(record: CellRecord | Mapping[str, Any]) -> CellRecord:
    """Accept a CellRecord or a dict with CellRecord's field names (unknown keys are ignored)."""
    if isinstance(record, CellRecord):
        return record
    kwargs = {k: v for k, v in record.items() if k in _CELL_FIELDS}
    for key in ("tools_called", "forbidden_violations"):
        if key in kwargs:
            kwargs[key] = tuple(kwargs[key])
    if "scores" in kwargs:
        kwargs["scores"] = dict(kwargs["scores"])
    return CellRecord(**kwargs)


def condition_order(condition: str) -> tuple[int, str]:
    """The paper's order of conditions (unknown ones last, by name): the sort key of every table."""
    return (CONDITIONS.index(condition) if condition in CONDITIONS else len(CONDITIONS), condition)


def _mean_or_none(xs: Sequence[float]) -> float | None:
    return mean(xs) if xs else None


def _pct(hits: int, total: int) -> float | None:
    return 100.0 * hits / total if total else None


@dataclass(frozen=True)
class ConditionSummary:
    condition: str
    n_cells: int
    n_queries: int
    mean_scores: Mapping[str, float]  # mean over cells carrying that score
    fa: float | None  # mean over cells of 0.7 * precision + 0.3 * completeness
    strict_precision: float | None  # mean of correct / (correct + contradicted), cells with such claims
    recall: float | None  # mean of correct / all claims, cells with >= 1 claim
    hallucination_pct: float | None  # % of claim-judged cells with >= 1 contradicted claim
    perfect_pct: float | None  # % of claim-judged cells with 0 contradicted and >= 1 correct
    violation_pct: float  # % of cells with >= 1 forbidden-tool call
    probes_per_query: float
    disclosure: float  # mean disclosure per cell
    latency_median: float
    latency_mean: float
    tokens_mean: float
    fallbacks: int  # total over cells


def summarize(cells: Iterable[CellRecord | Mapping[str, Any]], condition: str) -> ConditionSummary:
    """Aggregate the cells of one condition (cells of other conditions are ignored)."""
    mine = [c for c in map(to_cell, cells) if c.condition == condition]
    if not mine:
        raise ValueError(f"no cells for condition {condition!r}")
    score_names = sorted({k for c in mine for k in c.scores})
    mean_scores = {k: mean([c.scores[k] for c in mine if k in c.scores]) for k in score_names}
    fa_vals = [
        FA_PRECISION_WEIGHT * c.scores["precision"] + FA_COMPLETENESS_WEIGHT * c.scores["completeness"]
        for c in mine
        if "precision" in c.scores and "completeness" in c.scores
    ]
    judged = [c for c in mine if c.correct is not None and c.contradicted is not None]
    strict = [
        c.correct / (c.correct + c.contradicted)
        for c in judged
        if c.correct is not None and c.contradicted is not None and c.correct + c.contradicted > 0
    ]
    recall: list[float] = []
    for c in judged:
        assert c.correct is not None and c.contradicted is not None
        total = c.correct + c.contradicted + (c.unverifiable or 0)
        if total > 0:
            recall.append(c.correct / total)
    halluc = sum(1 for c in judged if (c.contradicted or 0) >= 1)
    perfect = sum(1 for c in judged if c.contradicted == 0 and (c.correct or 0) >= 1)
    latencies = [c.latency for c in mine]
    return ConditionSummary(
        condition=condition,
        n_cells=len(mine),
        n_queries=len({c.query_id for c in mine}),
        mean_scores=mean_scores,
        fa=_mean_or_none(fa_vals),
        strict_precision=_mean_or_none(strict),
        recall=_mean_or_none(recall),
        hallucination_pct=_pct(halluc, len(judged)),
        perfect_pct=_pct(perfect, len(judged)),
        violation_pct=100.0 * sum(1 for c in mine if c.forbidden_violations) / len(mine),
        probes_per_query=mean([float(c.probes) for c in mine]),
        disclosure=mean([c.disclosure for c in mine]),
        latency_median=statistics.median(latencies),
        latency_mean=mean(latencies),
        tokens_mean=mean([float(c.tokens) for c in mine]),
        fallbacks=sum(c.fallbacks for c in mine),
    )


def summarize_all(cells: Iterable[CellRecord | Mapping[str, Any]]) -> dict[str, ConditionSummary]:
    """One summary per condition, in first-seen order."""
    all_cells = [to_cell(c) for c in cells]
    conditions = list(dict.fromkeys(c.condition for c in all_cells))
    return {cond: summarize(all_cells, cond) for cond in conditions}


# --------------------------------------------------------------------------- paired comparisons

Level = Literal["query", "query_seed"]


class PairedComparison(BaseModel):
    """Two conditions compared on the units both ran: means, and the three tests of the paper."""

    model_config = ConfigDict(frozen=True)

    condition_a: str
    condition_b: str
    score: str
    level: Level
    n: int  # paired units (queries, or query-seed cells)
    mean_a: float
    mean_b: float
    mean_diff: float  # a - b
    t_test: TTestResult
    wilcoxon: WilcoxonResult
    bootstrap: BootstrapResult  # clusters = query ids at either level


def _score_of(cell: CellRecord, score: str) -> float:
    if score == "probes":
        return float(cell.probes)
    return cell.scores[score]


def paired_comparison(
    cells: Iterable[CellRecord | Mapping[str, Any]],
    condition_a: str,
    condition_b: str,
    *,
    score: str,
    level: Level = "query",
    n_boot: int = 2000,
    seed: int = 0,
) -> PairedComparison:
    """Compare two conditions on units present in both.

    level="query": each query's score is its mean over seeds; level="query_seed": one unit per
    (query, seed) cell. The bootstrap resamples query ids in both cases.
    """
    units: dict[str, dict[tuple[QueryId, int], list[float]]] = {condition_a: {}, condition_b: {}}
    for c in map(to_cell, cells):
        if c.condition in units and (score == "probes" or score in c.scores):
            key = (c.query_id, c.seed if level == "query_seed" else 0)
            units[c.condition].setdefault(key, []).append(_score_of(c, score))
    keys = [k for k in units[condition_a] if k in units[condition_b]]
    if len(keys) < 2:
        raise ValueError("need at least two paired units")
    a = [mean(units[condition_a][k]) for k in keys]
    b = [mean(units[condition_b][k]) for k in keys]
    return PairedComparison(
        condition_a=condition_a,
        condition_b=condition_b,
        score=score,
        level=level,
        n=len(keys),
        mean_a=mean(a),
        mean_b=mean(b),
        mean_diff=mean([x - y for x, y in zip(a, b, strict=True)]),
        t_test=paired_t(a, b),
        wilcoxon=wilcoxon(a, b),
        bootstrap=cluster_bootstrap_diff(a, b, [k[0] for k in keys], n_boot=n_boot, seed=seed),
    )


def gap_probe_correlation(cells: Iterable[CellRecord | Mapping[str, Any]], condition: str) -> PearsonResult:
    """Pearson r between the inferred gap and the realised probe count (paper Section A2.1)."""
    pairs = [
        (c.gap, float(c.probes))
        for c in map(to_cell, cells)
        if c.condition == condition and c.gap is not None and math.isfinite(c.gap)
    ]
    return pearson([g for g, _ in pairs], [p for _, p in pairs])


# --------------------------------------------------------------------------- the paper's release


def _float_or_none(value: Any) -> float | None:
    # The release stores gap as a float (tom), None (no IntentFrame) or the string "oracle".
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def paper_cells(path: str | Path) -> list[CellRecord]:
    """Cells of the paper's rq_intent_v2 multi-seed release, in file order (seed, condition, cell).

    Latency/probes/tools come from the record; the release has no token counts, fallbacks or
    disclosure, so those stay 0.
    """
    return [
        CellRecord(
            query_id=c.query_id,
            seed=int(c.seed),
            condition=c.condition,
            scores={
                name: score
                for name, score in (("implicit_score", c.implicit_score), ("literal_score", c.literal_score))
                if score is not None
            },
            probes=c.probes,
            tools_called=c.tools_called,
            forbidden_violations=c.forbidden_violations,
            latency=c.latency,
            gap=_float_or_none(c.gap),
            scene=c.scene,
            subcategory=c.subcategory,
        )
        for c in released_cells(path)
    ]
