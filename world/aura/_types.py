"""What the pipeline stages exchange, independent of where the scene and the tools live."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from messages.aura import IntentFrame, ProbeStep, UsageSummary


@dataclass(frozen=True)
class PublicAgent:
    name: str
    location: str
    action: str


@dataclass(frozen=True)
class SceneView:
    """Sense + Scene + Memory: what every condition sees before any tool fires (the same for all)."""

    asker: str
    time: str
    day: int
    asker_location: str | None
    agents: tuple[PublicAgent, ...]
    nearby: tuple[str, ...]
    memories: tuple[str, ...]
    summary: str = ""
    locations: tuple[str, ...] = ()
    known: tuple[str, ...] = ()
    """Every agent of the town by name (who exists is public, even when out of sight)."""


@dataclass(frozen=True)
class ToolInfo:
    name: str
    description: str
    parameters: dict[str, Any]
    """The argument model's JSON Schema."""
    private: bool = False
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProbeReply:
    tool: str
    status: str
    result: dict[str, Any] | None
    error: str | None = None
    disclosure: int = 0


class ProbeClient(Protocol):
    """The probe registry as the pipeline sees it (in process, or the ``registry`` actor)."""

    def tools(self) -> Sequence[ToolInfo]: ...

    def call(self, tool: str, args: dict[str, Any]) -> ProbeReply: ...


@dataclass(frozen=True)
class PlanDecision:
    action: Literal["call", "stop"]
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


@dataclass(frozen=True)
class PlanRequest:
    query: str
    view: SceneView
    tools: tuple[ToolInfo, ...]
    trace: tuple[ProbeStep, ...]
    remaining: int
    frame: IntentFrame | None = None
    """The IntentFrame's hint (AURA conditions); None for conditions that plan from the query alone."""


@dataclass(frozen=True)
class AnswerRequest:
    query: str
    view: SceneView
    frame: IntentFrame | None
    trace: tuple[ProbeStep, ...]
    summary: str
    alert: str | None
    """The heads-up the answer must open with, if any."""
    packed_scene: bool = True
    """False for ``vanilla``: the model sees the query only."""
    note: str = ""
    """A reflection's note for a retry (reflexion)."""


@dataclass(frozen=True)
class Critique:
    ok: bool
    note: str = ""


class Backend(Protocol):
    """Where the pipeline's judgement calls come from: the offline rules or a model."""

    name: str

    def infer_intent(self, query: str, view: SceneView, tools: Sequence[ToolInfo]) -> IntentFrame: ...

    def plan_step(self, request: PlanRequest) -> PlanDecision: ...

    def plan_calls(
        self, query: str, view: SceneView, tools: Sequence[ToolInfo], budget: int
    ) -> list[PlanDecision]:
        """Plan-and-Solve's phase 1: the whole plan from the surface query, before executing."""
        ...

    def answer(self, request: AnswerRequest) -> str: ...

    def critique(self, request: AnswerRequest, answer: str) -> Critique:
        """Reflexion: is this answer grounded in what was observed? If not, a note for the retry."""
        ...

    def usage(self) -> UsageSummary:
        """What this backend's calls cost so far, with every stage that fell back to the offline
        rules (and why). One backend serves one query."""
        ...
