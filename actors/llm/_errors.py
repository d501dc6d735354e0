"""The one error the gateway raises, and how a provider's exception maps onto it."""

from __future__ import annotations

import importlib
import re
from typing import Any, Literal

from actors.llm._stages import Stage

ErrorReason = Literal[
    "credentials",
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
    "context_overflow",
    "scaffolding",
]
"""``credentials``: the provider has no key (or refused it): retrying cannot help, so it fails at
once; ``invalid_text``: a stage that expects prose got JSON (or code) instead; ``budget``: the stage
or its unit of work ran out of time or requests (nothing more was sent); ``unavailable``: an
earlier stage of the same unit found the model not answering at all (nothing was sent);
``context_overflow``: the provider refused the prompt as longer than its context (after the
gateway's own trimming); ``scaffolding``: the answer carried chat-template or prompt text
(``has_scaffolding``), so it is no answer."""

TRANSIENT_REASONS: frozenset[str] = frozenset({"timeout", "rate_limited", "connection"})


class LLMError(Exception):
    """A model call that gave no usable answer, after the retries and the repair it was due."""

    def __init__(
        self,
        stage: Stage,
        reason: ErrorReason,
        detail: str = "",
        attempts: int = 0,
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> None:
        super().__init__(f"{stage}: {reason}: {detail}" if detail else f"{stage}: {reason}")
        self.stage = stage
        self.reason: ErrorReason = reason
        self.detail = detail
        self.attempts = attempts
        self.prompt_tokens = prompt_tokens
        """Tokens the failed call's requests cost: the provider's count when it answered, else
        the prompt counted locally, once per request sent."""
        self.completion_tokens = completion_tokens


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NO_CREDENTIALS = re.compile(
    r"missing (?:\w+ )?(?:credentials|api[ _]key)|no api key|api[ _]key (?:is )?(?:not set|missing|required)"
    r"|set the `?\w*API_KEY",
    re.IGNORECASE,
)


_NOISE = ("Provider List", "Give Feedback", "LiteLLM.Info")

_CONTEXT_OVERFLOW = re.compile(
    # OpenAI: "maximum context length is 8192 tokens"; llama.cpp: "the request exceeds the available
    # context size"; Anthropic: "prompt is too long"; others: "input is too long", "too many tokens".
    r"context (?:length|size|window)|(?:prompt|input|request|message)s? (?:is |are )?too long"
    r"|too many (?:input )?tokens|exceeds? (?:the )?(?:available |maximum )?context",
    re.IGNORECASE,
)


def one_line(exc: BaseException, limit: int = 300) -> str:
    """The provider's message in one line: its first sentence-bearing lines, without litellm's
    colour codes, tracebacks and help links."""
    text = _ANSI.sub("", str(exc))
    kept = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Traceback"):
            break  # what follows is litellm's traceback, not the provider's message
        if line and not line.startswith(_NOISE):
            kept.append(line)
    message = " ".join(" ".join(kept).split())
    return f"{type(exc).__name__}: {message}"[:limit]


def classify(exc: BaseException) -> tuple[ErrorReason, bool, str]:
    """(reason, transient, detail) of an exception raised by ``litellm.completion``.

    Transient: timeouts, 429, 5xx and connection failures; they are retried. Any other 4xx is
    the request's fault and retrying it would only spend money. Missing or refused credentials
    are never transient, whatever status litellm gives them (a missing OpenAI key is its 500, a
    missing Gemini key a connection error).
    """
    openai: Any = importlib.import_module("openai")  # loaded with litellm; mypy need not analyse it

    detail = one_line(exc)
    status = getattr(exc, "status_code", None)
    if status in (401, 403) or _NO_CREDENTIALS.search(str(exc)):
        return "credentials", False, detail
    # litellm reports a refused connection as a 500 whose cause is the connection error: look
    # down the chain before trusting the status code.
    for link in _chain(exc):
        if isinstance(link, openai.APITimeoutError | TimeoutError):
            return "timeout", True, detail
        if isinstance(link, openai.APIConnectionError | ConnectionError):
            return "connection", True, detail
    if any(type(link).__name__ == "ContextWindowExceededError" for link in _chain(exc)) or (
        status in (400, 413) and _CONTEXT_OVERFLOW.search(str(exc))
    ):
        return "context_overflow", False, detail
    if status == 429:
        return "rate_limited", True, detail
    if status == 408:
        return "timeout", True, detail
    if isinstance(status, int) and status >= 500:
        return "http_error", True, detail
    return "http_error", False, detail
