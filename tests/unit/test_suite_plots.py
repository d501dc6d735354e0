"""Figure 2's Pareto table and PNGs (matplotlib), and the Table 13 latency table."""

from __future__ import annotations

import itertools
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
from matplotlib.text import Text

from bench.suite.latency import latency_table
from bench.suite.plots import (
    PANELS,
    PLOTS_HOWTO,
    MatplotlibMissingError,
    frontier,
    pareto_figure,
    pareto_plots,
    pareto_points,
    pareto_table,
)


def _png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the IHDR of a PNG file."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _rec(cond: str, score: float, probes: int, violations: tuple[str, ...] = (), **kw: Any) -> dict[str, Any]:
    return {
        "cell": f"{cond}-{score}-{probes}-{len(violations)}",
        "query_id": 1,
        "seed": 0,
        "condition": cond,
        "ok": True,
        "scores": {"implicit_score": score, "literal_score": 1.0},
        "probes": probes,
        "forbidden_violations": list(violations),
        "fallbacks": ["x"],
        "latency": 0.01,
        **kw,
    }


def test_pareto_plots_write_both_panels_as_png(tmp_path: Path) -> None:
    records = [
        _rec("react", 0.5, 0),
        _rec("aura_intent", 0.8, 2, ("agent.private_state",)),
        _rec("aura_intent", 0.8, 2),
        {"condition": "literal", "ok": False, "cell": "f"},  # failed cells are not plotted
    ]
    paths = pareto_plots(records, tmp_path)
    assert [p.name for p in paths] == [name for name, _, _ in PANELS]
    for path in paths:
        assert _png_size(path) == (1100, 605) and path.stat().st_size > 10_000


def _crowded() -> list[dict[str, Any]]:
    """Thirteen conditions, several on the very same point: labels beside the points would overlap."""
    conditions = [
        *("vanilla", "literal", "react", "reflexion", "plan_and_solve", "fixed_probe", "aura_no_probe"),
        *("aura_full", "aura_gap_routed", "aura_intent", "fixed_private", "oracle_intent", "static_context"),
    ]
    return [_rec(c, 0.8 if "aura" in c else 0.35, 1 + n % 2) for n, c in enumerate(conditions)]


@pytest.mark.parametrize(("axis", "x_label"), [(axis, label) for _, axis, label in PANELS])
def test_no_two_texts_of_a_panel_overlap(axis: Any, x_label: str) -> None:
    label, points = pareto_points(_crowded())
    fig = pareto_figure(points, frontier(points, axis), axis, x_label=x_label, y_label=label)
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    fig.draw(renderer)
    found = {id(t): t for t in fig.findobj(Text) if isinstance(t, Text)}  # an artist may be reached twice
    texts = [t for t in found.values() if t.get_visible() and t.get_text()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    keyed = [text for text, _ in boxes if text.startswith(tuple(p.condition for p in points))]
    assert len(keyed) == len(points)  # every condition named once, with its numbers
    assert sum(" *  (" in k for k in keyed) == len(frontier(points, axis)) > 0
    overlapping = [
        (a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2) if box_a.overlaps(box_b)
    ]
    assert overlapping == []
    assert all(float(t.get_fontsize()) >= 9 for t in texts)


def test_without_matplotlib_no_png_and_the_error_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib...` raises ImportError
    with pytest.raises(MatplotlibMissingError, match=PLOTS_HOWTO.replace("[", r"\[").replace("]", r"\]")):
        pareto_plots([_rec("react", 0.5, 0)], tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_pareto_table_uses_fa_when_cells_have_precision() -> None:
    records = [
        _rec("react", 0.2, 1, scores={"precision": 1.0, "completeness": 0.5}),
        _rec("aura_intent", 0.9, 3, ("x",), scores={"precision": 0.5, "completeness": 1.0}),
    ]
    lines = pareto_table(records).splitlines()
    assert "| FA |" in lines[0]
    assert lines[2] == "| react | 1 | 0.850 | 1.00 | 0.0 | * | * |"
    assert lines[3] == "| aura_intent | 1 | 0.650 | 3.00 | 100.0 |  |  |"


def test_pareto_table_falls_back_to_implicit_score() -> None:
    table = pareto_table([_rec("react", 0.5, 0), _rec("aura_intent", 0.8, 2)])
    assert "| implicit score |" in table.splitlines()[0]
    assert "| aura_intent | 1 | 0.800 | 2.00 | 0.0 | * | * |" in table


def test_no_scores_no_plots(tmp_path: Path) -> None:
    assert pareto_plots([{"condition": "react", "ok": False, "cell": "x"}], tmp_path) == []


def test_latency_table_by_hand() -> None:
    records = [
        {"condition": "aura_intent", "ok": True, "latency": 0.010, "probes": 2},
        {"condition": "aura_intent", "ok": True, "latency": 0.030, "probes": 3},
        {"condition": "aura_intent", "ok": True, "latency": 0.050, "probes": 4},
        {"condition": "aura_intent", "ok": False, "latency": 9.0, "probes": 0},
        {"condition": "react", "ok": True, "latency": 0.002, "probes": 1},
        {"condition": "react", "ok": True, "latency": 0.006, "probes": 0},
        {"condition": "literal", "ok": False, "latency": 1.0, "probes": 0},
    ]
    lines = latency_table(records).splitlines()
    assert lines[0] == "| condition | cells | latency ms (median / mean) | probes/q | failed |"
    # The paper's condition order: literal, react, ..., aura_intent.
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| literal", "| react", "| aura_intent"]
    assert lines[2] == "| literal | 0 | - | - | 1 |"
    assert lines[3] == "| react | 2 | 4.00 / 4.00 | 0.50 | 0 |"
    assert lines[4] == "| aura_intent | 3 | 30.00 / 30.00 | 3.00 | 1 |"
