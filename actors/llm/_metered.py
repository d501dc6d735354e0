"""Model calls of one unit of work (a query, an assistant turn) and what they cost, for the
``UsageSummary`` a reply carries. The gateway's ledger keeps the totals; this keeps one unit's."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from actors.llm._budget import Budget
from actors.llm._errors import LLMError
from actors.llm._gateway import Completion, LLMGateway, Structured
from actors.llm._stages import Stage

if TYPE_CHECKING:  # importing the gateway stays cheap: pydantic loads on first use
    from pydantic import BaseModel

    from messages.aura import UsageSummary

T = TypeVar("T", bound="BaseModel")


class MeteredCalls:
    """Calls ``gateway`` as ``actor`` and remembers each answer, failure and fallback until
    ``reset``. Subclassed by model-backed backends (the AURA pipeline's, the assistant's).

    Each unit (from one ``reset`` to the next) has a ``Budget`` of time and requests
    (``GatewayConfig.unit_limits``, or ``budget_s``/``budget_calls``) that every stage of it
    draws from: a model that never answers costs the unit that long at most, then every further
    stage falls back at once, recorded. A stage that found the model not answering at all (timed
    out or unreachable after its retries) has the unit's later stages fall back without a call."""

    def __init__(
        self,
        gateway: LLMGateway,
        *,
        actor: str,
        budget_s: float | None = None,
        budget_calls: int | None = None,
    ) -> None:
        self.gateway = gateway
        self.actor = actor
        seconds, calls = gateway.config.unit_limits()
        self.budget_s = budget_s if budget_s is not None else seconds
        self.budget_calls = budget_calls if budget_calls is not None else calls
        self.budget = Budget(self.budget_s, self.budget_calls)
        self._unreachable: str | None = None
        self._completions: list[Completion] = []
        self._fallbacks: list[str] = []
        self._answered: list[str] = []
        self._failed_attempts = 0
        """Requests behind calls that gave no usable answer."""
        self._failed_tokens = (0, 0)
        """(prompt, completion) tokens of those calls, as their ``LLMError`` carries them."""

    def reset(self) -> None:
        """A new unit of work: its usage starts at zero and its budget in full."""
        self._completions, self._fallbacks, self._answered, self._failed_attempts = [], [], [], 0
        self._failed_tokens = (0, 0)
        self.budget = Budget(self.budget_s, self.budget_calls)
        self._unreachable = None

    def usage(self) -> UsageSummary:
        from messages.aura import UsageSummary

        done = self._completions
        return UsageSummary(
            model_calls=sum(c.attempts for c in done) + self._failed_attempts,
            cache_hits=sum(c.cached for c in done),
            prompt_tokens=sum(c.prompt_tokens for c in done) + self._failed_tokens[0],
            completion_tokens=sum(c.completion_tokens for c in done) + self._failed_tokens[1],
            cost_usd=sum(c.cost_usd for c in done),
            fallbacks=tuple(self._fallbacks),
            answered=tuple(self._answered),
        )

    def _check_reachable(self, stage: Stage) -> None:
        if self._unreachable is not None:
            raise LLMError(stage, "unavailable", f"an earlier stage of this unit: {self._unreachable}", 0)

    def _structured(self, stage: Stage, messages: list[dict[str, str]], schema: type[T]) -> T:
        self._check_reachable(stage)
        out: Structured[T] = self.gateway.structured(
            stage, messages, schema, actor=self.actor, budget=self.budget
        )
        self._completions.append(out.completion)
        self._answered.append(stage.value)
        return out.value

    def _complete(self, stage: Stage, messages: list[dict[str, str]], *, prose: bool = True) -> str:
        """A prose answer (JSON or code is repaired once, else LLMError("invalid_text"))."""
        self._check_reachable(stage)
        done = self.gateway.complete(stage, messages, actor=self.actor, budget=self.budget, prose=prose)
        self._completions.append(done)
        self._answered.append(stage.value)
        return done.text

    def _unusable(self, stage: Stage, exc: LLMError) -> None:
        """The caller cannot use the answer the model just gave for ``stage`` (e.g. empty): not
        answered after all, a fallback."""
        if self._answered and self._answered[-1] == stage.value:
            self._answered.pop()
        self._fallback(stage, exc)

    def _fallback(self, stage: Stage, exc: LLMError) -> None:
        """The caller answers offline instead: counted on the gateway and on this unit, never silent."""
        self._failed_attempts += exc.attempts
        prompt, completion = self._failed_tokens
        self._failed_tokens = (prompt + exc.prompt_tokens, completion + exc.completion_tokens)
        if exc.reason in ("timeout", "connection", "credentials") and self._unreachable is None:
            self._unreachable = f"{exc.stage.value}: {exc.reason}"
        self.gateway.record_fallback(stage, self.actor, exc.reason, exc.detail)
        self._fallbacks.append(f"{stage.value}: {exc.reason}")
