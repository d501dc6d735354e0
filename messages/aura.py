"""The AURA environment agent's contract: a query in, an answer with its IntentFrame, probe trace,
alerts and usage out (AURA Sections 3.2-3.3)."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from messages._base import Message
from messages._registry import message
from messages.probes import JsonObject, ProbeScene

Condition = Literal[
    "vanilla",
    "static_context",
    "literal",
    "react",
    "reflexion",
    "plan_and_solve",
    "fixed_probe",
    "aura_no_probe",
    "aura_full",
    "aura_gap_routed",
    "aura_intent",
    "fixed_private",
    "oracle_intent",
]
"""Every condition of the paper, selectable by name. The last two are diagnostics."""

CONDITIONS: tuple[str, ...] = get_args(Condition)
DIAGNOSTIC_CONDITIONS: tuple[str, ...] = ("fixed_private", "oracle_intent")

RegistryKind = Literal["environment", "agent_state"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class IntentFrame(_Frozen):
    """The IntentInferrer's estimate of what the asker really needs, made before any tool fires."""

    literal_need: str
    implicit_needs: tuple[str, ...] = ()
    gap: float = Field(ge=0.0, le=1.0)
    """0: the literal answer suffices; 1: the real need is orthogonal to the literal question."""
    recommended_probes: tuple[str, ...] = ()
    """Canonical names of tools in the live registry (anything else is dropped)."""
    alert: bool = False
    """Open the answer with a heads-up when the probes confirm the implicit need."""
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    rationale: str = ""
    subject: str | None = None
    """The agent the query is about, when there is one."""
    reading: str | None = None
    """The social reading the need was inferred from (availability, mood, appropriateness,
    latent_goal, second_order), when the inferrer names one."""
    subjects: tuple[str, ...] = ()
    """A question about a group or a place: the people it concerns (then ``subject`` is None)."""
    place: str | None = None
    """The place a group question names, if any."""
    target: str | None = None
    """In a second-order question ("does X think Y ..."), Y: whose real state the belief is
    checked against."""
    backend: Literal["heuristic", "llm", "oracle"] = "heuristic"
    fallback: str | None = None
    """Why the LLM backend was not used (the heuristic answered instead), if it was asked to be."""


class GoldLabels(_Frozen):
    """A benchmark query's gold fields. Only the diagnostic conditions may read them, and say so."""

    subcategory: str | None = None
    implicit_need: str | None = None
    required_tools: tuple[str, ...] = ()


class ProbeStep(_Frozen):
    step: int = Field(ge=1)
    tool: str
    args: JsonObject = {}
    status: str
    result: JsonObject | None = None
    error: str | None = None
    disclosure: int = Field(default=0, ge=0)
    reason: str = ""
    """Why the planner chose this call."""


class UsageSummary(_Frozen):
    model_calls: int = Field(default=0, ge=0)
    cache_hits: int = Field(default=0, ge=0)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0.0, le=1e9)
    fallbacks: tuple[str, ...] = ()
    """One entry per stage that fell back to its offline backend, with the reason."""
    answered: tuple[str, ...] = ()
    """One entry per stage whose model answer was used (its name), in order: with ``fallbacks``,
    the share of the work the model did."""


@message("aura.ask", 1)
class AskQuery(Message):
    """A user's question to the environment agent (address ``env``)."""

    query: str = Field(min_length=1, max_length=2000)
    asker: str = Field(min_length=1)
    condition: Condition = "aura_intent"
    explore_max_steps: int = Field(default=3, ge=0, le=10)
    registry: RegistryKind = "agent_state"
    read_only: bool = True
    """Write no memory and no event (benchmarks); otherwise the exchange is remembered."""
    scene: ProbeScene | None = None
    """A fixed scene (benchmarks); None: the live town's."""
    gold: GoldLabels | None = None
    model: str | None = None
    """A litellm model string for this query; None: the agent's configured backend."""


@message("aura.answer", 1)
class AnswerData(Message):
    text: str
    query: str
    asker: str
    condition: str
    frame: IntentFrame | None = None
    budget: int = Field(default=0, ge=0)
    trace: tuple[ProbeStep, ...] = ()
    summary: str = ""
    alerts: tuple[str, ...] = ()
    usage: UsageSummary = UsageSummary()
    backend: str = "offline"
    diagnostics: tuple[str, ...] = ()
    """What a diagnostic condition read that others may not (gold labels, unconditional access)."""
    scene_time: str = ""
