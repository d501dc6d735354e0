"""Markdown tables of a run directory: per condition, by scene and subcategory, paired tests."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.rundir import SuiteManifest
from bench.suite.latency import latency_table
from bench.suite.metrics import (
    CellRecord,
    condition_order,
    gap_probe_correlation,
    paired_comparison,
    summarize_all,
    to_cell,
)
from bench.suite.plots import MatplotlibMissingError, pareto_plots, pareto_table
from bench.suite.runs import CellRunDir
from bench.suite.stats import mean


def latest_cells(run: CellRunDir) -> list[dict[str, Any]]:
    """The last record of every cell (a resumed run may have retried a failed one), as the lines
    of its file (the tables read them by key)."""
    latest: dict[str, dict[str, Any]] = {}
    for record in run.cells():
        latest[record.cell] = record.line()
    return list(latest.values())


def as_metrics_cell(record: Mapping[str, Any]) -> CellRecord:
    usage = record.get("usage") or {}
    return to_cell(
        {
            **record,
            "fallbacks": len(record.get("fallbacks") or ()),
            "tokens": int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)),
        }
    )


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def condition_table(records: Sequence[Mapping[str, Any]]) -> str:
    ok = [r for r in records if r.get("ok")]
    summaries = summarize_all(as_metrics_cell(r) for r in ok)
    failures: dict[str, int] = {}
    for r in ok:
        if r.get("judge_failure"):
            failures[str(r["condition"])] = failures.get(str(r["condition"]), 0) + 1
    lines = [
        "| condition | cells | literal | implicit | probes/q | violation % | disclosure | latency ms "
        "(median / mean) | fallbacks | judge failures |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for cond, s in sorted(summaries.items(), key=lambda kv: condition_order(kv[0])):
        lines.append(
            f"| {cond} | {s.n_cells} | {_f(s.mean_scores.get('literal_score'))} | "
            f"{_f(s.mean_scores.get('implicit_score'))} | {s.probes_per_query:.2f} | {s.violation_pct:.1f} | "
            f"{s.disclosure:.2f} | {s.latency_median * 1000:.2f} / {s.latency_mean * 1000:.2f} | "
            f"{s.fallbacks} | {failures.get(cond, 0)} |"
        )
    return "\n".join(lines)


def breakdown_table(records: Sequence[Mapping[str, Any]], key: str, score: str = "implicit_score") -> str:
    """Mean ``score`` per condition (rows) and ``key`` value (columns: scene or subcategory)."""
    ok = [r for r in records if r.get("ok") and score in (r.get("scores") or {})]
    columns = sorted({str(r.get(key, "")) for r in ok})
    conditions = sorted({str(r["condition"]) for r in ok}, key=condition_order)
    lines = [
        f"| condition | overall | {' | '.join(columns)} |",
        "| --- | ---: |" + " ---: |" * len(columns),
    ]
    for cond in conditions:
        mine = [r for r in ok if r["condition"] == cond]
        cells = [_f(mean([r["scores"][score] for r in mine]))]
        for col in columns:
            vals = [r["scores"][score] for r in mine if str(r.get(key, "")) == col]
            cells.append(_f(mean(vals)) if vals else "-")
        lines.append(f"| {cond} | {' | '.join(cells)} |")
    return "\n".join(lines)


def paired_table(records: Sequence[Mapping[str, Any]], pairs: Iterable[tuple[str, str]]) -> str:
    cells = [as_metrics_cell(r) for r in records if r.get("ok") and r.get("scores")]
    present = {c.condition for c in cells}
    lines = [
        "| a vs b (implicit, query level) | n | mean a | mean b | diff | t p | Wilcoxon p "
        "| 95% CI (cluster bootstrap) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for a, b in pairs:
        if a not in present or b not in present:
            continue
        try:
            c = paired_comparison(cells, a, b, score="implicit_score", level="query")
        except ValueError as exc:  # a small or partial run: too few queries both conditions answered
            lines.append(f"| {a} vs {b} | - | - | - | - | - | - | {exc} |")
            continue
        lines.append(
            f"| {a} vs {b} | {c.n} | {c.mean_a:.3f} | {c.mean_b:.3f} | {c.mean_diff:+.3f} | "
            f"{c.t_test.p:.4f} | {c.wilcoxon.p:.4f} | [{c.bootstrap.low:+.3f}, {c.bootstrap.high:+.3f}] |"
        )
    return "\n".join(lines)


def _judged(records: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, int]]:
    ok = [r for r in records if r.get("ok")]
    failures: dict[str, int] = {}
    for r in ok:
        if r.get("judge_failure"):
            failures[str(r["condition"])] = failures.get(str(r["condition"]), 0) + 1
    summaries = summarize_all(as_metrics_cell(r) for r in ok)
    return dict(sorted(summaries.items(), key=lambda kv: condition_order(kv[0]))), failures


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def factual_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The shape of the paper's Table 1: FA, strict precision, hallucination %, perfect %, probes per
    query, forbidden-tool violation %, latency. Unjudged cells (no checkable gold, or a judge that
    did not answer) carry no score and are counted apart."""
    summaries, failures = _judged(records)
    lines = [
        "| condition | cells | unjudged | FA | strict precision | hallucination % | perfect % | probes/q "
        "| violation % | latency ms (median / mean) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for cond, s in summaries.items():
        lines.append(
            f"| {cond} | {s.n_cells} | {failures.get(cond, 0)} | {_f(s.fa)} | {_f(s.strict_precision)} | "
            f"{_pct(s.hallucination_pct)} | {_pct(s.perfect_pct)} | {s.probes_per_query:.2f} | "
            f"{s.violation_pct:.1f} | {s.latency_median * 1000:.2f} / {s.latency_mean * 1000:.2f} |"
        )
    return "\n".join(lines)


def privacy_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The shape of the paper's Table 12: FA and forbidden-tool violation % on the privacy slice."""
    summaries, failures = _judged(records)
    lines = [
        "| condition | cells | unjudged | FA | forbidden-tool violation % | probes/q | disclosure |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for cond, s in summaries.items():
        lines.append(
            f"| {cond} | {s.n_cells} | {failures.get(cond, 0)} | {_f(s.fa)} | {s.violation_pct:.1f} | "
            f"{s.probes_per_query:.2f} | {s.disclosure:.2f} |"
        )
    return "\n".join(lines)


def category_table(records: Sequence[Mapping[str, Any]]) -> str:
    """FA per condition (rows) and query category (columns)."""
    ok = [r for r in records if r.get("ok") and "fa" in (r.get("scores") or {})]
    columns = sorted({str(r.get("category", "")) for r in ok})
    conditions = sorted({str(r["condition"]) for r in ok}, key=condition_order)
    lines = [f"| condition | overall | {' | '.join(columns)} |", "| --- | ---: |" + " ---: |" * len(columns)]
    for cond in conditions:
        mine = [r for r in ok if r["condition"] == cond]
        cells = [_f(mean([r["scores"]["fa"] for r in mine]))]
        for col in columns:
            vals = [r["scores"]["fa"] for r in mine if str(r.get("category", "")) == col]
            cells.append(_f(mean(vals)) if vals else "-")
        lines.append(f"| {cond} | {' | '.join(cells)} |")
    return "\n".join(lines)


def gap_table(records: Sequence[Mapping[str, Any]]) -> str:
    """Pearson r between the IntentFrame's gap and the probes issued (paper, A2.1), per condition
    that infers a gap."""
    cells = [as_metrics_cell(r) for r in records if r.get("ok")]
    with_gap = sorted({c.condition for c in cells if c.gap is not None}, key=condition_order)
    lines = ["| condition | n | r (gap, probes) | p |", "| --- | ---: | ---: | ---: |"]
    for cond in with_gap:
        try:
            r = gap_probe_correlation(cells, cond)
        except ValueError as exc:  # fewer than three cells with a gap
            lines.append(f"| {cond} | - | - | {exc} |")
            continue
        lines.append(f"| {cond} | {r.n} | {_f(r.statistic)} | {_f(r.p, 4)} |")
    return "\n".join(lines)


def run_totals(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What a run cost and how often it fell back: cells, failures, model calls, cache hits."""
    usage = [r.get("usage") or {} for r in records if r.get("ok")]
    return {
        "cells": len(records),
        "failed_cells": sum(not r.get("ok") for r in records),
        "judge_failures": sum(bool(r.get("judge_failure")) for r in records),
        "model_calls": sum(int(u.get("model_calls", 0)) for u in usage),
        "cache_hits": sum(int(u.get("cache_hits", 0)) for u in usage),
        "prompt_tokens": sum(int(u.get("prompt_tokens", 0)) for u in usage),
        "completion_tokens": sum(int(u.get("completion_tokens", 0)) for u in usage),
        "fallbacks": sum(len(r.get("fallbacks") or ()) for r in records),
    }


def _pareto_figures(records: Sequence[Mapping[str, Any]], run_dir: Path) -> str:
    """The PNGs' links, or the one line saying how to get them."""
    try:
        plots = pareto_plots(records, run_dir)
    except MatplotlibMissingError as exc:
        return f"\n\nNo Pareto PNGs: {exc}."
    return "".join(f"\n\n![{p.stem}]({p.name})" for p in plots)


PAIRS = (("aura_intent", "react"), ("aura_intent", "literal"), ("aura_intent", "plan_and_solve"))


def write_report(run_dir: Path) -> str:
    """``report.md`` of a run (tables by its suite); returns its text."""
    run = CellRunDir(run_dir)
    if not run.manifest_path.exists():
        raise FileNotFoundError(f"{run_dir} is not a run directory (no {run.manifest_path.name})")
    manifest = run.manifest(SuiteManifest)
    records = latest_cells(run)
    failed = sum(not r.get("ok") for r in records)
    config = manifest.config
    suite = config.suite
    head = [
        f"# {suite} ({len(records)} cells, {failed} failed)",
        f"Backend: {config.model or 'offline'}; "
        f"judge: {config.judge_model or 'deterministic'}; "
        f"seeds {list(config.seeds)}; git {manifest.git_commit}",
    ]
    totals = run_totals(records)
    (run_dir / "totals.json").write_text(json.dumps(totals, indent=2, sort_keys=True) + "\n")
    # The manifest carries them too (cache hits, fallbacks): its config is what resume compares.
    run.write_manifest(manifest.model_copy(update={"totals": totals}))
    head.append("Totals: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in totals.items()))
    if suite == "factual":
        body = [
            "## Factual accuracy (Table 1)\n\n" + factual_table(records),
            "## FA by category\n\n" + category_table(records),
        ]
    elif suite == "privacy":
        body = [
            "## Privacy slice (Table 12)\n\n" + privacy_table(records),
            "## Factual accuracy on the privacy slice\n\n" + factual_table(records),
        ]
    else:
        body = [
            "## Per condition\n\n" + condition_table(records),
            "## Implicit score by scene\n\n" + breakdown_table(records, "scene"),
            "## Implicit score by subcategory\n\n" + breakdown_table(records, "subcategory"),
            "## Paired tests\n\n" + paired_table(records, PAIRS),
            "## Gap vs probes\n\n" + gap_table(records),
        ]
    body += [
        "## Latency (Table 13)\n\n" + latency_table(records),
        "## Pareto (Figure 2)\n\n" + pareto_table(records) + _pareto_figures(records, run_dir),
    ]
    text = "\n\n".join([*head, *body])
    (run_dir / "report.md").write_text(text + "\n")
    return text
