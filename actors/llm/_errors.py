"""The one error the gateway raises, and how a provider's exception maps onto it."""

from __future__ import annotations

import importlib
from typing import Any, Literal

from actors.llm._stages import Stage

ErrorReason = Literal[
    "timeout",
    "rate_limited",
    "http_error",
    "empty",
    "invalid_json",
    "invalid_schema",
    "invalid_text",
    "connection",
    "budget",
    "unavailable",
]
"""``invalid_text``: a stage that expects prose got JSON (or code) instead; ``budget``: the stage
or its unit of work ran out of time or requests (nothing more was sent); ``unavailable``: an
earlier stage of the same unit found the model not answering at all (nothing was sent)."""

TRANSIENT_REASONS: frozenset[str] = frozenset({"timeout", "rate_limited", "connection"})


class LLMError(Exception):
    """A model call that gave no usable answer, after the retries and the repair it was due."""

    def __init__(self, stage: Stage, reason: ErrorReason, detail: str = "", attempts: int = 0) -> None:
        super().__init__(f"{stage}: {reason}: {detail}" if detail else f"{stage}: {reason}")
        self.stage = stage
        self.reason: ErrorReason = reason
        self.detail = detail
        self.attempts = attempts


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def classify(exc: BaseException) -> tuple[ErrorReason, bool, str]:
    """(reason, transient, detail) of an exception raised by ``litellm.completion``.

    Transient: timeouts, 429, 5xx and connection failures; they are retried. Any other 4xx is
    the request's fault and retrying it would only spend money.
    """
    openai: Any = importlib.import_module("openai")  # loaded with litellm; mypy need not analyse it

    detail = f"{type(exc).__name__}: {exc}"[:500]
    # litellm reports a refused connection as a 500 whose cause is the connection error: look
    # down the chain before trusting the status code.
    for link in _chain(exc):
        if isinstance(link, openai.APITimeoutError | TimeoutError):
            return "timeout", True, detail
        if isinstance(link, openai.APIConnectionError | ConnectionError):
            return "connection", True, detail
    status = getattr(exc, "status_code", None)
    if status == 429:
        return "rate_limited", True, detail
    if status == 408:
        return "timeout", True, detail
    if isinstance(status, int) and status >= 500:
        return "http_error", True, detail
    return "http_error", False, detail
