"""Where the gateway sends its calls and how hard it tries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from actors.llm._stages import STAGE_SETTINGS, Stage, StageSettings


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

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model must be a litellm model string")
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.backoff < 0 or self.max_backoff < 0:
            raise ValueError("backoff must be >= 0")

    def settings_for(self, stage: Stage) -> StageSettings:
        return self.stage_overrides.get(stage) or STAGE_SETTINGS[stage]

    def delay_before_retry(self, retry: int) -> float:
        """Exponential backoff: ``backoff * 2**(retry - 1)`` seconds before retry 1, 2, ..."""
        return float(min(self.max_backoff, self.backoff * 2 ** max(0, retry - 1)))

    def describe(self) -> dict[str, Any]:
        """The configuration for a run manifest; never the API key."""
        return {
            "model": self.model,
            "api_base": self.api_base,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "backoff": self.backoff,
            "seed": self.seed,
            "stages": {
                str(s): {"temperature": st.temperature, "max_tokens": st.max_tokens}
                for s in Stage
                for st in (self.settings_for(s),)
            },
        }
