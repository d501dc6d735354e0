"""Figure 2 Pareto PNGs (pure-Python rasteriser) and the Table 13 latency table."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

from bench.suite.latency import latency_table
from bench.suite.plots import PALETTE, pareto_plots, pareto_table, write_png


def _png(path: Path) -> tuple[int, int, bytes]:
    """(width, height, raw RGB rows without filter bytes) of an 8-bit RGB, filter-0 PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body)
        chunks.append((kind, body))
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    width, height, depth, color_type, _, _, _ = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, color_type) == (8, 2)
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    stride = 1 + width * 3
    assert len(raw) == height * stride
    assert all(raw[y * stride] == 0 for y in range(height))
    rgb = b"".join(raw[y * stride + 1 : (y + 1) * stride] for y in range(height))
    return width, height, rgb


def _at(width: int, rgb: bytes, x: int, y: int) -> tuple[int, int, int]:
    i = (y * width + x) * 3
    return (rgb[i], rgb[i + 1], rgb[i + 2])


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


def test_write_png_round_trips(tmp_path: Path) -> None:
    pixels = bytes([255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9])
    write_png(tmp_path / "a.png", 2, 2, pixels)
    assert _png(tmp_path / "a.png") == (2, 2, pixels)


def test_pareto_plots_draw_each_condition_at_its_pixel(tmp_path: Path) -> None:
    records = [
        _rec("react", 0.5, 0),
        _rec("aura_intent", 0.8, 2, ("agent.private_state",)),
        _rec("aura_intent", 0.8, 2),
        {"condition": "literal", "ok": False, "cell": "f"},  # failed cells are not plotted
    ]
    paths = pareto_plots(records, tmp_path, backend="builtin")
    assert [p.name for p in paths] == ["pareto_probes.png", "pareto_violations.png"]
    # Plot area x 80..610, y 50..420 (y axis 0..1 for unit scores).
    # Probes panel: x range 0..2.5 (2 * 1.1 = 2.2, rounded up to the 0.5 step).
    w, h, rgb = _png(paths[0])
    assert (w, h) == (640, 480)
    assert _at(w, rgb, 80 + round(2 / 2.5 * 530), 420 - round(0.8 * 370)) == PALETTE[1]  # aura_intent
    assert _at(w, rgb, 80, 420 - round(0.5 * 370)) == PALETTE[0]  # react, at x = 0
    assert _at(w, rgb, 300, 300) == (255, 255, 255)
    # Violations panel: aura_intent at 50 %, x range 0..60 (55 rounded up to the 10 step).
    w, h, rgb = _png(paths[1])
    assert _at(w, rgb, 80 + round(50 / 60 * 530), 420 - round(0.8 * 370)) == PALETTE[1]
    assert _at(w, rgb, 80, 420 - round(0.5 * 370)) == PALETTE[0]


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
