"""One benchmark cell: a condition answers a query on a fixed scene, and what it did is recorded.

The scene is a frozen ``ProbeScene`` (an AURA v2 snapshot, or a paired snapshot of a live town
captured once per query and replayed to every condition), so every condition sees exactly the
same inputs. Gold labels reach the pipeline only for the diagnostic conditions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from actors.bus import Bus
from messages.aura import DIAGNOSTIC_CONDITIONS, AnswerData, AskQuery, GoldLabels
from messages.probes import ProbeScene
from world.aura import Backend, RegistryProbes, answer_query, scene_view
from world.probes import ProbeRegistry

USER = "the user"
"""The benchmarks' asker: a person outside the town, with no memories of their own."""


@dataclass(frozen=True)
class CellInput:
    query_id: str
    query: str
    scene: ProbeScene
    gold: GoldLabels
    forbidden_tools: tuple[str, ...] = ()
    asker: str = USER


def _canonical(registry: ProbeRegistry, names: Sequence[str]) -> set[str]:
    out = set()
    for name in names:
        spec = registry.resolve(name)
        out.add(spec.name if spec is not None else name)
    return out


def run_cell(
    cell: CellInput,
    condition: str,
    registry: ProbeRegistry,
    backend: Backend,
    *,
    explore_max_steps: int = 3,
) -> dict[str, Any]:
    """Answer ``cell`` under ``condition``; the record a run appends to its JSONL."""
    started = time.perf_counter()
    probes = RegistryProbes(registry, cell.scene, f"bench:{cell.asker}", asker=None)
    view = scene_view(cell.scene, cell.asker, cell.query)
    gold = cell.gold if condition in DIAGNOSTIC_CONDITIONS else None
    answer: AnswerData = answer_query(
        cell.query,
        cell.asker,
        condition,
        view,
        probes,
        backend,
        explore_max_steps=explore_max_steps,
        gold=gold,
    )
    return record_of(answer, cell, registry, time.perf_counter() - started)


Answerer = Callable[[CellInput, str, int], dict[str, Any]]
"""(cell, condition, explore_max_steps) -> the cell's record: in this process, or over the bus."""


def local_answerer(registry: ProbeRegistry, backends: Callable[[], Backend]) -> Answerer:
    def answer(cell: CellInput, condition: str, explore_max_steps: int) -> dict[str, Any]:
        return run_cell(cell, condition, registry, backends(), explore_max_steps=explore_max_steps)

    return answer


class BusAnswerer:
    """Cells answered by the ``env`` actors of worker processes: an ``AskQuery`` with the cell's
    frozen scene inline (and the gold labels only for a diagnostic condition)."""

    def __init__(
        self, bus: Bus, registry: ProbeRegistry, *, model: str | None = None, timeout: float = 120.0
    ) -> None:
        self.bus = bus
        self.registry = registry
        self.model = model
        self.timeout = timeout

    def __call__(self, cell: CellInput, condition: str, explore_max_steps: int) -> dict[str, Any]:
        started = time.perf_counter()
        reply = self.bus.ask(
            "env",
            AskQuery(
                query=cell.query,
                asker=cell.asker,
                condition=condition,  # type: ignore[arg-type]
                explore_max_steps=explore_max_steps,
                registry=self.registry.name,  # type: ignore[arg-type]  # a town registry
                scene=cell.scene,
                gold=cell.gold if condition in DIAGNOSTIC_CONDITIONS else None,
                model=self.model,
            ),
            timeout=self.timeout,
        )
        if not isinstance(reply, AnswerData):
            raise RuntimeError(f"env answered {type(reply).__name__}: {getattr(reply, 'reason', '')}")
        return record_of(reply, cell, self.registry, time.perf_counter() - started)


def record_of(answer: AnswerData, cell: CellInput, registry: ProbeRegistry, latency: float) -> dict[str, Any]:
    """A cell's record from an answer that came back over the bus (its trace carries the probes)."""
    called = [s.tool for s in answer.trace]
    executed = [s.tool for s in answer.trace if s.status not in ("denied", "unknown_tool", "invalid_args")]
    forbidden = _canonical(registry, cell.forbidden_tools)
    required = _canonical(registry, cell.gold.required_tools)
    return {
        "query_id": cell.query_id,
        "query": cell.query,
        "answer": answer.text,
        "alerts": list(answer.alerts),
        "gap": answer.frame.gap if answer.frame else None,
        "budget": answer.budget,
        "probes": len(called),
        "tools_called": called,
        "forbidden_violations": sorted({t for t in executed if t in forbidden}),
        "gold_tools_hit": sorted({t for t in called if t in required}),
        "disclosure": sum(s.disclosure for s in answer.trace),
        "latency": latency,
        "backend": answer.backend,
        "usage": answer.usage.model_dump(mode="json"),
        "fallbacks": list(answer.usage.fallbacks),
        "diagnostics": list(answer.diagnostics),
        "trace": [s.model_dump(mode="json") for s in answer.trace],
    }
