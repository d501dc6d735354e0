"""The LLM gateway: every model call of every actor, through litellm.

Per-stage sampling settings and output caps (paper, Appendix A6), prompts fitted to the model's
context window, JSON answers (constrained by a JSON Schema ``response_format`` where the provider
takes one) validated into pydantic models with one repair attempt (prose stages refuse JSON the
same way), answers carrying chat-template scaffolding (``world.scaffolding``) refused, retries
with backoff for transient failures, a deadline on every request and a budget of time and
requests on every stage and every unit of work, per-actor and per-stage usage accounting, and a
content-addressed response cache on disk or on the bus transport.
Importing this package is cheap: litellm (and pydantic) load on the first call.
"""

from actors.llm._budget import Budget
from actors.llm._cache import DiskCache, ResponseCache, TransportCache, cache_key
from actors.llm._config import GatewayConfig
from actors.llm._errors import ErrorReason, LLMError
from actors.llm._gateway import Completion, LLMGateway, Structured, finish_requests, load_litellm
from actors.llm._json import extract_json, schema_prompt
from actors.llm._metered import MeteredCalls
from actors.llm._pool import GatewayPool
from actors.llm._stages import STAGE_SETTINGS, Stage, StageSettings
from actors.llm._usage import FallbackRecord, UsageLedger, UsageStats

__all__ = [
    "STAGE_SETTINGS",
    "Budget",
    "Completion",
    "DiskCache",
    "ErrorReason",
    "FallbackRecord",
    "GatewayConfig",
    "GatewayPool",
    "LLMError",
    "LLMGateway",
    "MeteredCalls",
    "ResponseCache",
    "Stage",
    "StageSettings",
    "Structured",
    "TransportCache",
    "UsageLedger",
    "UsageStats",
    "cache_key",
    "extract_json",
    "finish_requests",
    "load_litellm",
    "schema_prompt",
]
