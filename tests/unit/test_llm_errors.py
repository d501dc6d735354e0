"""A model call that retries cannot fix fails at once, with the provider's message in one line."""

from __future__ import annotations

import pytest

from actors.llm import GatewayConfig, LLMError, LLMGateway
from actors.llm._errors import classify, one_line
from actors.llm._stages import Stage


@pytest.mark.parametrize(
    ("model", "env"),
    [("openai/gpt-4o-mini", "OPENAI_API_KEY"), ("anthropic/claude-3-haiku-20240307", "ANTHROPIC_API_KEY")],
)
def test_no_credentials_fails_at_once_with_the_providers_message(
    model: str, env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # litellm refuses locally, before any request: no network is involved.
    monkeypatch.delenv(env, raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    gateway = LLMGateway(GatewayConfig(model=model, max_retries=5, backoff=1.0))
    with pytest.raises(LLMError) as caught:
        gateway.complete(Stage.ANSWER, [{"role": "user", "content": "hi"}])
    assert caught.value.reason == "credentials"
    assert caught.value.attempts == 1
    assert gateway.usage.total().retries == 0  # no retry, so no backoff was slept
    assert "\n" not in caught.value.detail and "key" in caught.value.detail.lower()


def test_a_status_litellm_gives_a_missing_key_does_not_make_it_transient() -> None:
    from actors.llm import load_litellm

    litellm = load_litellm()
    missing = litellm.InternalServerError(
        message="OpenAIException - Missing credentials. Please pass an `api_key`",
        llm_provider="openai",
        model="x",
    )
    assert classify(missing)[:2] == ("credentials", False)
    refused = litellm.AuthenticationError(
        message="Incorrect API key provided", llm_provider="openai", model="x"
    )
    assert classify(refused)[:2] == ("credentials", False)
    busy = litellm.InternalServerError(message="overloaded", llm_provider="openai", model="x")
    assert classify(busy)[:2] == ("http_error", True)


def test_one_line_drops_colour_codes_tracebacks_and_help_links() -> None:
    exc = RuntimeError(
        "\x1b[1;31mGive Feedback / Get Help: https://example\x1b[0m\n"
        "Missing Gemini API key.\nSet the GEMINI_API_KEY environment variable.\n"
        "Traceback (most recent call last):\n  File 'x.py', line 1\n    boom()\n"
    )
    assert (
        one_line(exc) == "RuntimeError: Missing Gemini API key. Set the GEMINI_API_KEY environment variable."
    )
