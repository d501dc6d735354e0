"""The two Pareto panels of the paper's Figure 2 as PNG files, plus the same numbers as markdown.

Panel 1: score vs probes per query; panel 2: score vs forbidden-tool violation %. One labelled point
per condition. The score is FA when the cells carry an ``fa`` score or ``precision`` + ``completeness``
(factual / privacy suites), else the mean ``implicit_score`` (implicit-intent suites).

matplotlib is used when importable; otherwise a small pure-Python rasteriser (zlib + struct PNG, a
5x7 bitmap font) draws the plots so the project needs no plotting dependency.
"""

from __future__ import annotations

import importlib
import itertools
import math
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bench.suite.metrics import CellRecord, ConditionSummary, condition_order, summarize_all, to_cell

__all__ = [
    "PANELS",
    "Canvas",
    "Frame",
    "ParetoPoint",
    "pareto_plots",
    "pareto_points",
    "pareto_table",
    "write_png",
]

Backend = Literal["auto", "builtin", "matplotlib"]
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


def _frontier(points: Sequence[ParetoPoint], axis: Axis) -> set[str]:
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
    on_probes, on_viol = _frontier(points, "probes_per_query"), _frontier(points, "violation_pct")
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


# --------------------------------------------------------------------------- PNG + raster


def write_png(path: Path, width: int, height: int, rgb: bytes | bytearray) -> None:
    """An 8-bit RGB PNG (filter 0 on every row)."""
    if len(rgb) != width * height * 3:
        raise ValueError("pixel buffer does not match width * height * 3")
    stride = width * 3
    raw = b"".join(b"\x00" + bytes(rgb[y * stride : (y + 1) * stride]) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


# 5x7 glyphs, one 5-bit row per entry (bit 4 = leftmost column). Lowercase is drawn as uppercase.
_FONT: dict[str, tuple[int, ...]] = {
    " ": (0, 0, 0, 0, 0, 0, 0),
    "0": (0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E),
    "1": (0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E),
    "2": (0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F),
    "3": (0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E),
    "4": (0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02),
    "5": (0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E),
    "6": (0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E),
    "7": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08),
    "8": (0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E),
    "9": (0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C),
    "A": (0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11),
    "B": (0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E),
    "C": (0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E),
    "D": (0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C),
    "E": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F),
    "F": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10),
    "G": (0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F),
    "H": (0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11),
    "I": (0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E),
    "J": (0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C),
    "K": (0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11),
    "L": (0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F),
    "M": (0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11),
    "N": (0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11),
    "O": (0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E),
    "P": (0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10),
    "Q": (0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D),
    "R": (0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11),
    "S": (0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E),
    "T": (0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04),
    "U": (0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E),
    "V": (0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04),
    "W": (0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A),
    "X": (0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11),
    "Y": (0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04),
    "Z": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F),
    ".": (0, 0, 0, 0, 0, 0x0C, 0x0C),
    ",": (0, 0, 0, 0, 0x0C, 0x04, 0x08),
    ":": (0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0),
    "-": (0, 0, 0, 0x1F, 0, 0, 0),
    "+": (0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0),
    "=": (0, 0, 0x1F, 0, 0x1F, 0, 0),
    "_": (0, 0, 0, 0, 0, 0, 0x1F),
    "%": (0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03),
    "/": (0, 0x01, 0x02, 0x04, 0x08, 0x10, 0),
    "(": (0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02),
    ")": (0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08),
    "?": (0x0E, 0x11, 0x01, 0x02, 0x04, 0, 0x04),
}
GLYPH_ADVANCE = 6  # 5 columns + 1 column of spacing, at scale 1

Color = tuple[int, int, int]
WHITE: Color = (255, 255, 255)
BLACK: Color = (0, 0, 0)
GRID: Color = (225, 225, 225)
TEXT: Color = (40, 40, 40)
FRONTIER: Color = (150, 150, 150)
PALETTE: tuple[Color, ...] = (
    (31, 119, 180),
    (214, 39, 40),
    (44, 160, 44),
    (255, 127, 14),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (23, 190, 207),
)


def text_width(text: str, scale: int = 1) -> int:
    return len(text) * GLYPH_ADVANCE * scale


class Canvas:
    """An RGB raster with just enough primitives for a scatter plot."""

    def __init__(self, width: int, height: int, background: Color = WHITE) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def set(self, x: int, y: int, color: Color) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            i = (y * self.width + x) * 3
            self.pixels[i : i + 3] = bytes(color)

    def get(self, x: int, y: int) -> Color:
        i = (y * self.width + x) * 3
        return (self.pixels[i], self.pixels[i + 1], self.pixels[i + 2])

    def line(self, x0: int, y0: int, x1: int, y1: int, color: Color) -> None:
        """Bresenham, any direction."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.set(x0, y0, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def disc(self, cx: int, cy: int, radius: int, color: Color) -> None:
        for y in range(-radius, radius + 1):
            for x in range(-radius, radius + 1):
                if x * x + y * y <= radius * radius:
                    self.set(cx + x, cy + y, color)

    def text(
        self, x: int, y: int, text: str, color: Color = TEXT, *, scale: int = 1, vertical: bool = False
    ) -> None:
        """(x, y) = top-left of horizontal text; for vertical text (reading bottom to top) the
        bottom-left corner."""
        for n, ch in enumerate(text.upper()):
            glyph = _FONT.get(ch, _FONT["?"])
            for row, bits in enumerate(glyph):
                for col in range(5):
                    if not bits & (0x10 >> col):
                        continue
                    along, across = n * GLYPH_ADVANCE + col, row
                    for i in range(scale):
                        for j in range(scale):
                            if vertical:
                                self.set(x + across * scale + j, y - along * scale - i, color)
                            else:
                                self.set(x + along * scale + i, y + across * scale + j, color)


# --------------------------------------------------------------------------- axes


def _nice_step(span: float, target_ticks: int = 5) -> float:
    raw = span / target_ticks
    power = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= m * power + 1e-12:
            return m * power
    return 10.0 * power


def axis_range(values: Sequence[float], unit_interval: bool = False) -> tuple[float, float, float]:
    """(low, high, tick step). Starts at 0; [0, 1] for scores that fit it; else 10% headroom."""
    top = max(values, default=0.0)
    if unit_interval and top <= 1.0 and min(values, default=0.0) >= 0.0:
        return 0.0, 1.0, 0.2
    if top <= 0:
        return 0.0, 1.0, 0.2
    step = _nice_step(top * 1.1)
    return 0.0, math.ceil(top * 1.1 / step - 1e-9) * step, step


@dataclass(frozen=True)
class Frame:
    """Plot area geometry: data coordinates -> pixel coordinates."""

    x_range: tuple[float, float]
    y_range: tuple[float, float]
    left: int = 80
    right: int = 610
    top: int = 50
    bottom: int = 420

    def pixel(self, x: float, y: float) -> tuple[int, int]:
        (x0, x1), (y0, y1) = self.x_range, self.y_range
        px = self.left + (x - x0) / (x1 - x0) * (self.right - self.left)
        py = self.bottom - (y - y0) / (y1 - y0) * (self.bottom - self.top)
        return round(px), round(py)


WIDTH, HEIGHT = 640, 480
DOT_RADIUS = 5


def _ticks(low: float, high: float, step: float) -> list[float]:
    return [low + i * step for i in range(round((high - low) / step) + 1)]


def _fmt(value: float, step: float) -> str:
    decimals = 0 if step >= 1 and float(step).is_integer() else max(0, -math.floor(math.log10(step)) + 1)
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _draw_builtin(
    path: Path,
    pts: Sequence[tuple[str, float, float]],
    frontier: set[str],
    *,
    title: str,
    x_label: str,
    y_label: str,
) -> None:
    xs, ys = [p[1] for p in pts], [p[2] for p in pts]
    x_lo, x_hi, x_step = axis_range(xs)
    y_lo, y_hi, y_step = axis_range(ys, unit_interval=True)
    frame = Frame((x_lo, x_hi), (y_lo, y_hi))
    c = Canvas(WIDTH, HEIGHT)
    for v in _ticks(x_lo, x_hi, x_step):
        px, _ = frame.pixel(v, y_lo)
        c.line(px, frame.top, px, frame.bottom, GRID)
        c.line(px, frame.bottom, px, frame.bottom + 4, BLACK)
        label = _fmt(v, x_step)
        c.text(px - text_width(label) // 2, frame.bottom + 8, label)
    for v in _ticks(y_lo, y_hi, y_step):
        _, py = frame.pixel(x_lo, v)
        c.line(frame.left, py, frame.right, py, GRID)
        c.line(frame.left - 4, py, frame.left, py, BLACK)
        label = _fmt(v, y_step)
        c.text(frame.left - 8 - text_width(label), py - 3, label)
    c.line(frame.left, frame.bottom, frame.right, frame.bottom, BLACK)
    c.line(frame.left, frame.top, frame.left, frame.bottom, BLACK)
    c.text((WIDTH - text_width(title, 2)) // 2, 16, title, scale=2)
    c.text((frame.left + frame.right - text_width(x_label, 2)) // 2, frame.bottom + 26, x_label, scale=2)
    c.text(14, (frame.top + frame.bottom + text_width(y_label, 2)) // 2, y_label, scale=2, vertical=True)
    # Frontier first so the dots sit on top of it.
    front = sorted((frame.pixel(x, y) for name, x, y in pts if name in frontier), key=lambda p: (p[0], -p[1]))
    for (ax, ay), (bx, by) in itertools.pairwise(front):
        c.line(ax, ay, bx, by, FRONTIER)
    for n, (name, x, y) in enumerate(pts):
        px, py = frame.pixel(x, y)
        color = PALETTE[n % len(PALETTE)]
        c.disc(px, py, DOT_RADIUS, color)
        lx = px + DOT_RADIUS + 4
        if lx + text_width(name) > WIDTH - 2:
            lx = px - DOT_RADIUS - 4 - text_width(name)
        c.text(lx, py - 3, name, color)
    write_png(path, c.width, c.height, c.pixels)


def _draw_matplotlib(
    path: Path,
    pts: Sequence[tuple[str, float, float]],
    frontier: set[str],
    *,
    title: str,
    x_label: str,
    y_label: str,
) -> None:
    matplotlib: Any = importlib.import_module("matplotlib")
    matplotlib.use("Agg")  # headless: never open a window
    plt: Any = importlib.import_module("matplotlib.pyplot")
    fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
    front = sorted((x, y) for name, x, y in pts if name in frontier)
    if len(front) > 1:
        ax.plot([p[0] for p in front], [p[1] for p in front], color="0.6", zorder=1)
    for name, x, y in pts:
        ax.scatter([x], [y], zorder=2)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_title(title)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _has_matplotlib() -> bool:
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        return False
    return True


def pareto_plots(
    records: Sequence[Mapping[str, Any]], out_dir: Path, backend: Backend = "auto"
) -> list[Path]:
    """Write ``pareto_probes.png`` and ``pareto_violations.png`` into ``out_dir``; returns their paths.

    Nothing is written (and [] returned) when no condition has the score. ``backend="builtin"`` forces
    the pure-Python rasteriser (deterministic pixels, used by the tests).
    """
    label, points = pareto_points(records)
    scored = [p for p in points if p.score is not None]
    if not scored:
        return []
    draw = (
        _draw_matplotlib
        if backend == "matplotlib" or (backend == "auto" and _has_matplotlib())
        else _draw_builtin
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for filename, axis, x_label in PANELS:
        pts = [(p.condition, float(getattr(p, axis)), float(p.score or 0.0)) for p in scored]
        title = f"{label} vs {x_label}"
        path = out_dir / filename
        draw(path, pts, _frontier(scored, axis), title=title, x_label=x_label, y_label=label)
        paths.append(path)
    return paths
