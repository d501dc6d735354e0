"""The AURA environment agent's pipeline as pure code: IntentFrame inference, the gap -> budget
map, the bounded Explore loop, the conditions of the paper, the offline answer (Sections 3.2-3.3).

Model calls come in through a ``Backend`` and tool calls through a ``ProbeClient``, both passed
in: this package does no I/O itself.
"""

from world.aura._answer import compose_answer, heads_up, summarise
from world.aura._explore import explore, fill_args, literal_candidates
from world.aura._intent import (
    BUDGETS,
    GAP_TIERS,
    CueReader,
    Reading,
    SocialReader,
    budget_for_gap,
    infer_intent,
    infer_intent_heuristic,
    whitelist,
)
from world.aura._pipeline import OfflineBackend, UnknownConditionError, answer_query
from world.aura._query import QueryParse, mentioned_agents, parse_query
from world.aura._scene import RegistryProbes, allowed_tools, reply_of, scene_view
from world.aura._types import (
    AnswerRequest,
    Backend,
    Critique,
    PlanDecision,
    PlanRequest,
    ProbeClient,
    ProbeReply,
    PublicAgent,
    SceneView,
    ToolInfo,
)

__all__ = [
    "BUDGETS",
    "GAP_TIERS",
    "AnswerRequest",
    "Backend",
    "Critique",
    "CueReader",
    "OfflineBackend",
    "PlanDecision",
    "PlanRequest",
    "ProbeClient",
    "ProbeReply",
    "PublicAgent",
    "QueryParse",
    "Reading",
    "RegistryProbes",
    "SceneView",
    "SocialReader",
    "ToolInfo",
    "UnknownConditionError",
    "allowed_tools",
    "answer_query",
    "budget_for_gap",
    "compose_answer",
    "explore",
    "fill_args",
    "heads_up",
    "infer_intent",
    "infer_intent_heuristic",
    "literal_candidates",
    "mentioned_agents",
    "parse_query",
    "reply_of",
    "scene_view",
    "summarise",
    "whitelist",
]
