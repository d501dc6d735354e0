"""The two Pareto panels of the paper's Figure 2 as PNG files, plus the same numbers as markdown.

Panel 1: score vs probes per query; panel 2: score vs forbidden-tool violation %. One labelled point
per condition. The score is FA when the cells carry an ``fa`` score or ``precision`` + ``completeness``
(factual / privacy suites), else the mean ``implicit_score`` (implicit-intent suites).

The PNGs are drawn by matplotlib (the ``plots`` extra, Agg backend: no display needed). Without it
no PNG is written and the report says how to get them; the table carries the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bench.suite.metrics import CellRecord, ConditionSummary, condition_order, summarize_all, to_cell

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "PANELS",
    "PLOTS_HOWTO",
    "MatplotlibMissingError",
    "ParetoPoint",
    "frontier",
    "pareto_figure",
    "pareto_plots",
    "pareto_points",
    "pareto_table",
]

Axis = Literal["probes_per_query", "violation_pct"]

# (file name, x attribute of ParetoPoint, x-axis label)
PANELS: tuple[tuple[str, Axis, str], ...] = (
    ("pareto_probes.png", "probes_per_query", "probes per query"),
    ("pareto_violations.png", "violation_pct", "forbidden-tool violation %"),
)


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class ParetoPoint:
    condition: str
    score: float | None  # None: the condition's cells lack the chosen score (not plotted)
    probes_per_query: float
    violation_pct: float
    n_cells: int


def _cell(record: Mapping[str, Any]) -> CellRecord:
    # Run records store the fallback list; metrics counts them (same as report.as_metrics_cell, which
    # is not imported here so report.py can import this module).
    return to_cell({**record, "fallbacks": len(record.get("fallbacks") or ())})


def _score(summaries: Mapping[str, ConditionSummary]) -> tuple[str, str]:
    """(score key, axis label): "fa" stored score, "fa" from precision/completeness, or implicit."""
    if any("fa" in s.mean_scores for s in summaries.values()):
        return "fa", "FA"
    if any(s.fa is not None for s in summaries.values()):
        return "fa_pc", "FA"
    return "implicit_score", "implicit score"


def pareto_points(records: Sequence[Mapping[str, Any]]) -> tuple[str, list[ParetoPoint]]:
    """(score label, one point per condition in the paper's order) over the ``ok`` records."""
    summaries = summarize_all(_cell(r) for r in records if r.get("ok"))
    key, label = _score(summaries)
    points = []
    for cond, s in sorted(summaries.items(), key=lambda kv: condition_order(kv[0])):
        score = s.fa if key == "fa_pc" else s.mean_scores.get(key)
        points.append(ParetoPoint(cond, score, s.probes_per_query, s.violation_pct, s.n_cells))
    return label, points


def frontier(points: Sequence[ParetoPoint], axis: Axis) -> set[str]:
    """Conditions not dominated (lower-or-equal x and higher-or-equal score, one strictly)."""
    scored = [p for p in points if p.score is not None]
    out = set()
    for p in scored:
        px, ps = getattr(p, axis), p.score
        assert ps is not None
        dominated = any(
            getattr(q, axis) <= px
            and q.score is not None
            and q.score >= ps
            and (getattr(q, axis) < px or q.score > ps)
            for q in scored
        )
        if not dominated:
            out.add(p.condition)
    return out


def pareto_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The plotted numbers; ``*`` marks a point on the Pareto frontier of that panel."""
    label, points = pareto_points(records)
    on_probes, on_viol = frontier(points, "probes_per_query"), frontier(points, "violation_pct")
    lines = [
        f"| condition | cells | {label} | probes/q | violation % "
        "| frontier (probes) | frontier (violations) |",
        "| --- | ---: | ---: | ---: | ---: | :---: | :---: |",
    ]
    for p in points:
        score = "-" if p.score is None else f"{p.score:.3f}"
        lines.append(
            f"| {p.condition} | {p.n_cells} | {score} | {p.probes_per_query:.2f} | {p.violation_pct:.1f} | "
            f"{'*' if p.condition in on_probes else ''} | {'*' if p.condition in on_viol else ''} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------- PNG (matplotlib)

PLOTS_HOWTO = "pip install 'auratown[plots]'"
"""How to get the PNGs, said where they would be."""

# A marker shape and a colour per condition, so that points that lie close together (or on each
# other) are told apart by the key rather than by labels beside them, which would overlap.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p", "d")
COLOURS = "tab10"
X_FORMATS: dict[Axis, str] = {"probes_per_query": ".2f", "violation_pct": ".1f"}
X_SPANS: dict[Axis, float] = {"probes_per_query": 1.0, "violation_pct": 10.0}
"""The least of each x axis shown from 0: points all at 0 sit at its left, not in a range around 0."""


class MatplotlibMissingError(RuntimeError):
    """matplotlib (the ``plots`` extra) is not installed: no PNG can be drawn."""

    def __init__(self) -> None:
        super().__init__(f"matplotlib is not installed (`{PLOTS_HOWTO}`)")


def _figure() -> Figure:
    """A figure drawn by Agg, outside pyplot: no window, no global figure registry."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise MatplotlibMissingError() from None
    fig = Figure(figsize=(10.0, 5.5), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def pareto_figure(
    points: Sequence[ParetoPoint],
    frontier: set[str],
    axis: Axis,
    *,
    x_label: str,
    y_label: str,
) -> Figure:
    """One panel: a marker per condition, the frontier dashed, and a key beside the plot that names
    every condition with its numbers (``*``: on the frontier)."""
    fig = _figure()  # first: it says how to get matplotlib when it is missing
    from matplotlib import colormaps

    ax = fig.add_subplot()
    ax.set_title(f"{y_label} vs {x_label}", fontsize=13)
    ax.set_xlabel(x_label, fontsize=11)
    ax.set_ylabel(y_label, fontsize=11)
    ax.grid(True, alpha=0.3)
    x_format = X_FORMATS[axis]
    front = sorted(
        {(float(getattr(p, axis)), float(p.score or 0.0)) for p in points if p.condition in frontier}
    )
    if len(front) > 1:
        xs, ys = zip(*front, strict=True)
        ax.plot(xs, ys, color="0.55", linestyle="--", linewidth=1.2, zorder=1, label="Pareto frontier")
    colours = colormaps[COLOURS]
    for n, p in enumerate(points):
        x, score = float(getattr(p, axis)), float(p.score or 0.0)
        star = " *" if p.condition in frontier else ""
        ax.scatter(
            [x],
            [score],
            marker=MARKERS[n % len(MARKERS)],
            s=80,
            color=colours(n % colours.N),
            edgecolors="black",
            linewidths=0.6,
            zorder=2,
            label=f"{p.condition}{star}  ({x:{x_format}}, {score:.3f})",
        )
    if all(0.0 <= float(p.score or 0.0) <= 1.0 for p in points):
        ax.set_ylim(-0.03, 1.03)
    right = max(X_SPANS[axis], 1.05 * max(float(getattr(p, axis)) for p in points))
    ax.set_xlim(-0.03 * right, right)  # counts and percentages: never below 0
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize=9,
        title=f"condition  ({x_label}, {y_label})\n* on the Pareto frontier",
        title_fontsize=9,
        alignment="left",
        frameon=False,
    )
    return fig


def pareto_plots(records: Sequence[Mapping[str, Any]], out_dir: Path) -> list[Path]:
    """Write ``pareto_probes.png`` and ``pareto_violations.png`` into ``out_dir``; returns their paths.

    Nothing is written (and [] returned) when no condition has the score; raises
    ``MatplotlibMissingError`` when matplotlib is not installed.
    """
    label, points = pareto_points(records)
    scored = [p for p in points if p.score is not None]
    if not scored:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for filename, axis, x_label in PANELS:
        path = out_dir / filename
        pareto_figure(scored, frontier(scored, axis), axis, x_label=x_label, y_label=label).savefig(path)
        paths.append(path)
    return paths
