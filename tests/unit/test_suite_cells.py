"""One benchmark cell on a v2 scene: what it records, and that only diagnostics see gold."""

from __future__ import annotations

from typing import Any

import pytest

from bench.suite.cells import CellInput, run_cell
from messages.aura import CONDITIONS, DIAGNOSTIC_CONDITIONS, GoldLabels
from tests.conftest import aura_release_json
from world.aura import OfflineBackend
from world.probes import agent_state_registry, scene_from_aura_v2

pytestmark = pytest.mark.aura_release  # every cell is a query of the release's v2 set


def v2() -> dict[str, Any]:
    data: dict[str, Any] = aura_release_json("implicit_intent_queries_v2_AB.json")
    return data


def cell(query_id: int) -> CellInput:
    q = next(q for q in v2()["queries"] if q["id"] == query_id)
    scene = scene_from_aura_v2(v2()["scenes"][q["scene"]], scene_id=q["scene"])
    gold = GoldLabels(
        subcategory=q["subcategory"],
        implicit_need=q["implicit_need"],
        required_tools=tuple(q["gold_required_tools"]),
    )
    return CellInput(str(q["id"]), q["query"], scene, gold, tuple(q["forbidden_tools"]))


def test_a_cell_records_the_answer_the_probes_and_the_gold_tools_hit() -> None:
    record = run_cell(cell(101), "aura_intent", agent_state_registry(), OfflineBackend())
    assert record["query"] == "Where's Lin Wei?" and "Sunrise Cafe" in record["answer"]
    assert record["tools_called"] == ["agent.private_state"] and record["probes"] == 1
    assert record["gold_tools_hit"] == ["agent.private_state"]  # release name resolved
    assert record["forbidden_violations"] == [] and record["disclosure"] > 0
    assert record["alerts"] and record["gap"] == 0.6 and record["latency"] > 0


def test_forbidden_tools_called_are_violations() -> None:
    forbidding = next(q for q in v2()["queries"] if q["forbidden_tools"])
    c = cell(forbidding["id"])
    record = run_cell(c, "fixed_probe", agent_state_registry(), OfflineBackend())
    forbidden = {agent_state_registry().resolve(t).name for t in c.forbidden_tools}  # type: ignore[union-attr]
    assert set(record["forbidden_violations"]) == forbidden & set(record["tools_called"])
    assert record["forbidden_violations"]  # fixed_probe calls every tool


def test_every_condition_runs_and_only_diagnostics_read_gold() -> None:
    for condition in CONDITIONS:
        record = run_cell(cell(101), condition, agent_state_registry(), OfflineBackend())
        assert record["answer"]
        assert bool(record["diagnostics"]) == (condition in DIAGNOSTIC_CONDITIONS)
