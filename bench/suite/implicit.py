"""The implicit-intent suites (v1, v2) as benchmark cells: answer, then judge.

Each cell runs one condition on one query's frozen scene with the shared agent-state registry,
then the deterministic judge scores it from the gold fields (or the LLM judge, given a model).
A judge that gives no score records the failure: the cell has no score, never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.suite.cells import Answerer, CellInput, local_answerer
from bench.suite.datasets import ImplicitQuery, ImplicitScene, Suite, probe_scene
from bench.suite.judges import ImplicitIntentJudge, JudgeFailure
from bench.suite.runs import CellKey
from messages.aura import GoldLabels
from world.aura import Backend
from world.probes import ProbeRegistry, agent_state_registry

JudgeFn = Callable[[ImplicitQuery, ImplicitScene, str], Any]


@dataclass(frozen=True)
class _Prepared:
    cell: CellInput
    gold: ImplicitQuery
    scene: ImplicitScene
    scene_id: str
    subcategory: str


def prepare(suite: Suite) -> dict[str, _Prepared]:
    """Every query's inputs, built once: the scenes are shared by all its cells (read-only)."""
    scenes = suite.scenes
    probe_scenes = {sid: probe_scene(suite, sid) for sid in scenes}
    out: dict[str, _Prepared] = {}
    for q in suite.implicit():
        gold = GoldLabels(
            subcategory=q.subcategory,
            implicit_need=q.implicit_need,
            required_tools=tuple(q.gold_required_tools),
        )
        cell = CellInput(str(q.id), q.query, probe_scenes[q.scene], gold, tuple(q.forbidden_tools))
        out[str(q.id)] = _Prepared(cell, q, scenes[q.scene], q.scene, q.subcategory)
    return out


def cell_runner(
    suite: Suite,
    backends: Callable[[], Backend],
    *,
    judge: JudgeFn | None = None,
    registry: ProbeRegistry | None = None,
    explore_max_steps: int = 3,
    answer: Answerer | None = None,
) -> Callable[[CellKey], Mapping[str, Any]]:
    """What a run executes for each cell key of ``suite``."""
    prepared = prepare(suite)
    reg = registry or agent_state_registry()
    score = judge or ImplicitIntentJudge().judge
    ask = answer or local_answerer(reg, backends)

    def execute(key: CellKey) -> Mapping[str, Any]:
        p = prepared[key.query_id]
        record = dict(ask(p.cell, key.condition, explore_max_steps))
        verdict = score(p.gold, p.scene, record["answer"])
        record.update(scene=p.scene_id, subcategory=p.subcategory)
        if isinstance(verdict, JudgeFailure):
            record.update(scores={}, judge_failure=verdict.reason)
        else:
            record.update(
                scores={"literal_score": verdict.literal_score, "implicit_score": verdict.implicit_score},
                judge_rationale=verdict.rationale,
            )
        return record

    return execute
