"""Where the gateway sends its calls and how hard it tries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from actors.llm._stages import STAGE_SETTINGS, Stage, StageSettings

DEFAULT_MAX_TOKENS = 512
"""A stage with no cap anywhere (none has: every ``STAGE_SETTINGS`` entry sets one)."""


@dataclass(frozen=True)
class GatewayConfig:
    model: str
    """Any litellm model string, e.g. ``gpt-4o-mini`` or ``openai/NAME`` with ``api_base``."""
    api_base: str | None = None
    api_key: str | None = None
    timeout: float = 30.0
    """Seconds one model request may take before it counts as a (retried) timeout."""
    max_retries: int = 2
    """Extra attempts after a transient failure (timeout, 429, 5xx, connection)."""
    backoff: float = 0.5
    """Seconds before the first retry; doubled for each further one."""
    stage_overrides: Mapping[Stage, StageSettings] = field(default_factory=dict)
    seed: int | None = None
    """Passed to providers that accept it; best effort, so reruns rely on the cache instead."""
    max_backoff: float = 30.0
    stage_budget: float | None = None
    """Seconds one gateway call (a stage: its retries, backoff and repair call) may take in all;
    None: room for each of them at its full deadline. Each request's deadline is cut to what is
    left of it."""
    stage_calls: int | None = None
    """Requests one gateway call may send; None: ``max_retries + 2`` (the retries and a repair)."""
    unit_budget: float | None = None
    """Seconds every stage of one unit of work (a question, an assistant turn, a reflection) may
    take together (``MeteredCalls``); None: ``4 * timeout``."""
    unit_calls: int | None = 24
    """Requests one unit of work may send in all; None: no limit."""
    max_tokens: int | None = None
    """Output-token cap of every stage, overriding each stage's own (``--max-tokens``); None: each
    stage's cap (``STAGE_SETTINGS`` or ``stage_overrides``)."""
    context_window: int | None = None
    """Tokens the model reads and writes in all (prompt + answer); None: litellm's model info, and
    no trimming for a model it does not know (set it for a local model: its server's context size)."""
    structured_output: bool | None = None
    """Send structured stages' JSON Schema as ``response_format``; None: when litellm says the model
    supports it, and always for an OpenAI-compatible server at ``api_base``."""

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model must be a litellm model string")
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.backoff < 0 or self.max_backoff < 0:
            raise ValueError("backoff must be >= 0")
        for name in ("stage_budget", "unit_budget"):
            value = getattr(self, name)
            if value is not None and not 0 < value < float("inf"):
                raise ValueError(f"{name} must be positive and finite, got {value}")
        for name in ("stage_calls", "unit_calls", "max_tokens", "context_window"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")

    def stage_limits(self) -> tuple[float, int]:
        """(seconds, requests) of one gateway call."""
        if self.stage_budget is not None:
            seconds = self.stage_budget
        else:  # room for every retry and the repair call at their full deadline, and the backoff
            waits = sum(self.delay_before_retry(n) for n in range(1, self.max_retries + 1))
            seconds = (self.max_retries + 2) * (self.timeout + 0.5) + waits  # 0.5: a request's overhead
        calls = self.stage_calls if self.stage_calls is not None else self.max_retries + 2
        return seconds, calls

    def unit_limits(self) -> tuple[float, int | None]:
        """(seconds, requests) of one unit of work."""
        return (self.unit_budget if self.unit_budget is not None else 4 * self.timeout), self.unit_calls

    def settings_for(self, stage: Stage) -> StageSettings:
        return self.stage_overrides.get(stage) or STAGE_SETTINGS[stage]

    def max_tokens_for(self, stage: Stage, settings: StageSettings | None = None) -> int:
        """The output cap a request of ``stage`` carries: the global one, else the call's settings',
        else the stage's (``settings_for``), else its default; never none."""
        own = settings.max_tokens if settings else None
        for cap in (self.max_tokens, own, self.settings_for(stage).max_tokens):
            if cap is not None:
                return cap
        return STAGE_SETTINGS[stage].max_tokens or DEFAULT_MAX_TOKENS

    def delay_before_retry(self, retry: int) -> float:
        """Exponential backoff: ``backoff * 2**(retry - 1)`` seconds before retry 1, 2, ..."""
        return float(min(self.max_backoff, self.backoff * 2 ** max(0, retry - 1)))

    def describe(self) -> dict[str, Any]:
        """The configuration for a run manifest; never the API key."""
        return {
            "model": self.model,
            "api_base": self.api_base,
            "timeout": self.timeout,
            "max_tokens": self.max_tokens,
            "context_window": self.context_window,
            "structured_output": self.structured_output,
            "max_retries": self.max_retries,
            "backoff": self.backoff,
            "seed": self.seed,
            "stage_budget": self.stage_limits()[0],
            "stage_calls": self.stage_limits()[1],
            "unit_budget": self.unit_limits()[0],
            "unit_calls": self.unit_calls,
            "stages": {
                str(s): {"temperature": st.temperature, "max_tokens": self.max_tokens_for(s)}
                for s in Stage
                for st in (self.settings_for(s),)
            },
        }
