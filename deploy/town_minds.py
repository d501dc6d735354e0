"""The town agents' minds for ``auratown run`` and ``daemon``: the seeded schedule (the default), or
a model through one LLM gateway (``--mind llm``); and, after a run, what the model did for them:
questions answered by the model and fallen back, by stage, reason and agent."""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from deploy.commands import UserError

if TYPE_CHECKING:
    from actors.bus import Bus
    from actors.town import LLMMinds
    from world import TownDefinition

MIND_STAGES = ("action", "importance", "reflection", "conversation")
"""In the order of a turn: the action, then the memory hooks; conversations are the world's."""


@dataclass(frozen=True)
class ModelMinds:
    """The minds of ``--mind llm`` and what ``spawn_town`` takes of them."""

    minds: LLMMinds

    def spawn_options(self) -> dict[str, Any]:
        return {"mind_factory": self.minds, "dialogue": self.minds.dialogue}


def model_minds(args: argparse.Namespace, bus: Bus, cache_dir: Path | None = None) -> ModelMinds | None:
    """None for the schedule mind; else the model's minds (``--model``, ``--api-base``), caching its
    answers in ``cache_dir``, else on the bus (in Redis with ``--redis``, shared by the processes)."""
    if args.mind != "llm":
        return None
    if not args.model:
        raise UserError("--mind llm needs --model (a litellm model string)")
    from actors.llm import DiskCache, GatewayPool, TransportCache, load_litellm
    from actors.town import llm_mind_factory

    cache = DiskCache(cache_dir) if cache_dir is not None else TransportCache(bus.transport, bus.namespace)
    # The pool's gateway: the settings' deadlines and limits (--llm-timeout, --max-tokens, ...).
    pool = GatewayPool(api_base=args.api_base, cache=cache, settings=args.settings)
    gateway = pool.get(args.model)
    # Imported now (seconds): not out of the first tick's decision time.
    load_litellm()
    return ModelMinds(llm_mind_factory(gateway))


def worker_threads(requested: int | None, minds: ModelMinds | None, agents_hosted: int) -> int:
    """Threads the host shares among its actors: 4 by default; an agent waiting on its model holds
    a worker, so with model minds one per agent hosted here."""
    if requested:
        return requested
    return max(4, agents_hosted) if minds is not None else 4


# ---------------------------------------------------------------- what the model did


class Figures(BaseModel):
    model_config = ConfigDict(frozen=True)

    answered: int = 0
    """Questions the model answered and the mind used."""
    fallbacks: int = 0
    """Questions answered by the deterministic default instead (each recorded with its reason)."""

    @property
    def asked(self) -> int:
        return self.answered + self.fallbacks

    def share(self) -> str:
        return f"{100 * self.answered / self.asked:.0f}%" if self.asked else "-"


class MindReport(BaseModel):
    """A run's model figures (``--json``: ``minds``)."""

    model_config = ConfigDict(frozen=True)

    model: str
    api_base: str | None
    requests: int
    """Requests sent to the model: retries and repair calls included."""
    retries: int
    repairs: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    waited_s: float
    """Time spent waiting on the model, summed over concurrent calls."""
    still_running: int
    """Calls the minds stopped waiting for (at their deadline) that had not finished at the end."""
    total: Figures
    by_stage: dict[str, Figures]
    by_reason: dict[str, int]
    """Fallbacks by reason, most frequent first."""
    by_agent: dict[str, Figures]
    """By agent name: its own questions (action, importance, reflection); conversations are the
    world's, counted by stage only."""


def mind_report(minds: LLMMinds, definition: TownDefinition) -> MindReport:
    from actors.town import agent_address

    gateway = minds.gateway
    answered: Counter[tuple[str, str]] = Counter(
        {(str(stage), actor): n for (stage, actor), n in minds.answers.counts().items()}
    )
    fallen: Counter[tuple[str, str]] = Counter()
    reasons: Counter[str] = Counter()
    for record in gateway.usage.fallback_records():
        fallen[(str(record.stage), record.actor)] += 1
        reasons[record.reason] += 1

    def figures(stages: tuple[str, ...], actors: set[str] | None = None) -> Figures:
        def count(c: Counter[tuple[str, str]]) -> int:
            return sum(n for (s, a), n in c.items() if s in stages and (actors is None or a in actors))

        return Figures(answered=count(answered), fallbacks=count(fallen))

    total = gateway.usage.total()
    return MindReport(
        model=gateway.config.model,
        api_base=gateway.config.api_base,
        requests=total.calls,
        retries=total.retries,
        repairs=total.repairs,
        cache_hits=total.cache_hits,
        prompt_tokens=total.prompt_tokens,
        completion_tokens=total.completion_tokens,
        waited_s=round(total.latency_s, 3),
        still_running=minds.calls_in_flight,
        total=figures(MIND_STAGES),
        by_stage={s: figures((s,)) for s in MIND_STAGES},
        by_reason=dict(reasons.most_common()),
        by_agent={p.name: figures(MIND_STAGES[:3], {agent_address(p.slug)}) for p in definition.agents},
    )


def report_lines(report: MindReport) -> list[str]:
    """The run's closing block for ``--mind llm``."""
    where = f" at {report.api_base}" if report.api_base else ""
    lines = [
        f"minds: {report.model}{where}",
        f"  model requests {report.requests} (retries {report.retries}, repairs {report.repairs}, "
        f"cache hits {report.cache_hits}), tokens {report.prompt_tokens}+{report.completion_tokens}, "
        f"waited {report.waited_s:.1f}s",
        f"  {'':<14}{'asked':>7}{'model':>7}{'fallback':>10}{'by model':>10}",
    ]

    def row(label: str, f: Figures) -> str:
        return f"  {label:<14}{f.asked:>7}{f.answered:>7}{f.fallbacks:>10}{f.share():>10}"

    lines += [row(stage, f) for stage, f in report.by_stage.items()]
    lines.append(row("all", report.total))
    reasons = ", ".join(f"{r} {n}" for r, n in report.by_reason.items()) or "none"
    lines.append(f"  fallbacks by reason: {reasons}")
    lines.append("  by agent (action, importance, reflection):")
    lines += [row(f"  {name}", f) for name, f in report.by_agent.items()]
    if report.still_running:
        lines.append(f"  calls still running at the end (answered too late): {report.still_running}")
    return lines
