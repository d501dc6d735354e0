"""Model calls of one unit of work (a query, an assistant turn) and what they cost, for the
``UsageSummary`` a reply carries. The gateway's ledger keeps the totals; this keeps one unit's."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from actors.llm._errors import LLMError
from actors.llm._gateway import Completion, LLMGateway, Structured
from actors.llm._stages import Stage

if TYPE_CHECKING:  # importing the gateway stays cheap: pydantic loads on first use
    from pydantic import BaseModel

    from messages.aura import UsageSummary

T = TypeVar("T", bound="BaseModel")


class MeteredCalls:
    """Calls ``gateway`` as ``actor`` and remembers each answer, failure and fallback until
    ``reset``. Subclassed by model-backed backends (the AURA pipeline's, the assistant's)."""

    def __init__(self, gateway: LLMGateway, *, actor: str) -> None:
        self.gateway = gateway
        self.actor = actor
        self._completions: list[Completion] = []
        self._fallbacks: list[str] = []
        self._failed_attempts = 0
        """Requests behind calls that gave no usable answer (their tokens are not known here)."""

    def reset(self) -> None:
        self._completions, self._fallbacks, self._failed_attempts = [], [], 0

    def usage(self) -> UsageSummary:
        from messages.aura import UsageSummary

        done = self._completions
        return UsageSummary(
            model_calls=sum(c.attempts for c in done) + self._failed_attempts,
            cache_hits=sum(c.cached for c in done),
            prompt_tokens=sum(c.prompt_tokens for c in done),
            completion_tokens=sum(c.completion_tokens for c in done),
            cost_usd=sum(c.cost_usd for c in done),
            fallbacks=tuple(self._fallbacks),
        )

    def _structured(self, stage: Stage, messages: list[dict[str, str]], schema: type[T]) -> T:
        out: Structured[T] = self.gateway.structured(stage, messages, schema, actor=self.actor)
        self._completions.append(out.completion)
        return out.value

    def _complete(self, stage: Stage, messages: list[dict[str, str]]) -> str:
        done = self.gateway.complete(stage, messages, actor=self.actor)
        self._completions.append(done)
        return done.text

    def _fallback(self, stage: Stage, exc: LLMError) -> None:
        """The caller answers offline instead: counted on the gateway and on this unit, never silent."""
        self._failed_attempts += exc.attempts
        self.gateway.record_fallback(stage, self.actor, exc.reason)
        self._fallbacks.append(f"{stage.value}: {exc.reason}")
