"""What a run of episodes consists of: units (one episode, one assistant, one repetition) in a
fixed order, and the without-history ablation units (a dependency group's last task, alone)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bench.episodes.loader import LoadedEpisode
from world.episodes.scoring import dependency_groups

ASSISTANTS = ("builtin", "builtin+intent")
"""The built-in assistant without and with the AURA IntentFrame step; ``oracle`` plays each task's
gold path (``metadata.oracle``); ``external:ADDRESS`` names an agent some other process hosts on
the run's namespace."""


class PlanError(ValueError):
    """A bad run request, explained in one line."""


@dataclass(frozen=True)
class AssistantChoice:
    name: str
    intent_step: bool = False
    oracle: bool = False
    external: str | None = None
    """The address of an externally hosted assistant."""


def parse_assistants(text: str) -> list[AssistantChoice]:
    choices: list[AssistantChoice] = []
    for raw in (t.strip() for t in text.split(",")):
        if not raw:
            continue
        if raw == "builtin":
            choices.append(AssistantChoice("builtin"))
        elif raw in ("builtin+intent", "intent"):
            choices.append(AssistantChoice("builtin+intent", intent_step=True))
        elif raw == "oracle":
            choices.append(AssistantChoice("oracle", oracle=True))
        elif raw.startswith("external:") and len(raw) > len("external:"):
            address = raw.split(":", 1)[1]
            choices.append(AssistantChoice(f"external:{address}", external=address))
        else:
            raise PlanError(
                f"unknown assistant {raw!r}: choose builtin, builtin+intent, oracle or external:ADDRESS"
            )
    if not choices:
        raise PlanError("--assistants needs at least one assistant")
    return choices


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


@dataclass(frozen=True)
class Unit:
    episode: LoadedEpisode = field(repr=False, compare=False)
    episode_id: str
    assistant: AssistantChoice
    run: int
    only: str | None = None
    """The without-history ablation: run this task alone (no earlier session, no earlier assets)."""

    @property
    def key(self) -> str:
        """Unique in a run; the suffix of the unit's actor addresses (``user.KEY``)."""
        base = f"{_slug(self.episode_id)}.{_slug(self.assistant.name)}.r{self.run}"
        return base if self.only is None else f"{base}.alone-{_slug(self.only)}"

    @property
    def task_ids(self) -> list[str]:
        if self.only is not None:
            return [self.only]
        return [t.task.task_id for t in self.episode.tasks]


def ablation_targets(episode: LoadedEpisode) -> list[str]:
    """The last task of every dependency group of two or more tasks (pi-Bench, Section 4.3)."""
    pairs = [(t.task.task_id, tuple(t.depends_on)) for t in episode.tasks]
    return [group[-1] for group in dependency_groups(pairs) if len(group) >= 2]


def plan_units(
    episodes: list[LoadedEpisode], assistants: list[AssistantChoice], runs: int, *, ablation: bool
) -> list[Unit]:
    units: list[Unit] = []
    for run in range(1, runs + 1):
        for choice in assistants:
            for ep in episodes:
                units.append(Unit(ep, ep.episode.episode_id, choice, run))
                if ablation:
                    units += [
                        Unit(ep, ep.episode.episode_id, choice, run, only=t) for t in ablation_targets(ep)
                    ]
    keys = [u.key for u in units]
    if len(set(keys)) != len(keys):
        raise PlanError("two episodes share an episode_id; give each a distinct one")
    return units
