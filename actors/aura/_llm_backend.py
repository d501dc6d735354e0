"""The model-backed pipeline backend: every judgement call through the LLM gateway, each one
falling back to the offline rules on failure, visibly (recorded on the answer and counted)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from actors.aura import _prompts as prompts
from actors.llm import LLMError, LLMGateway, MeteredCalls, Stage
from messages.aura import IntentFrame
from world.aura import (
    AnswerRequest,
    Critique,
    OfflineBackend,
    PlanDecision,
    PlanRequest,
    SceneView,
    ToolInfo,
)

T = TypeVar("T", bound=BaseModel)


class IntentOut(BaseModel):
    literal_need: str
    implicit_needs: list[str] = []
    gap: float = Field(ge=0.0, le=1.0)
    recommended_probes: list[str] = []
    alert: bool = False
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    rationale: str = ""


class PlanOut(BaseModel):
    action: Literal["call", "stop"]
    tool: str | None = None
    args: dict[str, Any] = {}
    reason: str = ""


class PlanListOut(BaseModel):
    steps: list[PlanOut] = []


class CritiqueOut(BaseModel):
    ok: bool
    note: str = ""


class LLMBackend(MeteredCalls):
    def __init__(self, gateway: LLMGateway, *, actor: str = "env", budget_s: float | None = None) -> None:
        """One query's backend: ``budget_s`` seconds for all its model calls (None: the gateway's
        unit budget)."""
        super().__init__(gateway, actor=actor, budget_s=budget_s)
        self.name = f"llm:{gateway.config.model}"
        self._offline = OfflineBackend()

    def infer_intent(self, query: str, view: SceneView, tools: Sequence[ToolInfo]) -> IntentFrame:
        subject = self._offline.infer_intent(query, view, tools)
        try:
            out = self._structured(Stage.INTENT, prompts.intent_messages(query, view, tools), IntentOut)
        except LLMError as exc:
            self._fallback(Stage.INTENT, exc)
            return subject.model_copy(update={"fallback": exc.reason})
        return IntentFrame(
            literal_need=out.literal_need,
            implicit_needs=tuple(out.implicit_needs),
            gap=out.gap,
            recommended_probes=tuple(out.recommended_probes),  # whitelisted by the pipeline
            alert=out.alert,
            confidence=out.confidence,
            rationale=out.rationale,
            subject=subject.subject,
            backend="llm",
        )

    def plan_step(self, request: PlanRequest) -> PlanDecision:
        try:
            out = self._structured(Stage.PROBE_PLANNING, prompts.plan_messages(request), PlanOut)
        except LLMError as exc:
            self._fallback(Stage.PROBE_PLANNING, exc)
            return self._offline.plan_step(request)
        names = {t.name for t in request.tools} | {a for t in request.tools for a in t.aliases}
        if out.action == "call" and out.tool not in names:
            return PlanDecision("stop", reason=f"the planner named a tool the registry lacks: {out.tool!r}")
        return PlanDecision(out.action, out.tool, dict(out.args), out.reason)

    def plan_calls(
        self, query: str, view: SceneView, tools: Sequence[ToolInfo], budget: int
    ) -> list[PlanDecision]:
        try:
            out = self._structured(
                Stage.PROBE_PLANNING, prompts.plan_all_messages(query, view, tools, budget), PlanListOut
            )
        except LLMError as exc:
            self._fallback(Stage.PROBE_PLANNING, exc)
            return self._offline.plan_calls(query, view, tools, budget)
        names = {t.name for t in tools} | {a for t in tools for a in t.aliases}
        return [PlanDecision("call", s.tool, dict(s.args), s.reason) for s in out.steps if s.tool in names]

    def answer(self, request: AnswerRequest) -> str:
        # A prose stage: JSON or code is repaired once, then falls back (never shown as the answer).
        try:
            text = self._complete(Stage.ANSWER, prompts.answer_messages(request), prose=True)
        except LLMError as exc:
            self._fallback(Stage.ANSWER, exc)
            return self._offline.answer(request)
        text = text.strip()
        if not text:
            self._unusable(Stage.ANSWER, LLMError(Stage.ANSWER, "empty", "the model answered nothing", 0))
            return self._offline.answer(request)
        if request.alert and not text.startswith("Heads-up"):
            text = f"{request.alert} {text}"  # the heads-up opens the answer, whatever the model wrote
        return text

    def critique(self, request: AnswerRequest, answer: str) -> Critique:
        try:
            out = self._structured(Stage.REFLECTION, prompts.critique_messages(request, answer), CritiqueOut)
        except LLMError as exc:
            self._fallback(Stage.REFLECTION, exc)
            return self._offline.critique(request, answer)
        return Critique(out.ok, out.note)
