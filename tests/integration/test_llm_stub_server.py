"""The gateway against a local OpenAI-compatible server (``openai/<model>`` + ``api_base``).

Every scripted failure ends in a parsed result, a repaired one, a retried success or a typed
LLMError: never a crash and never a silent default.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from actors.bus import MemoryTransport
from actors.llm import DiskCache, GatewayConfig, LLMError, LLMGateway, Stage, TransportCache
from tests.support.openai_stub import OpenAIStub, empty_body, http_error, json_reply, ok, slow

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

USER = [{"role": "user", "content": "Where is Lin Wei? Answer as JSON."}]
FRAME = {"literal_need": "Lin Wei's location", "gap": 0.6}
TIMEOUT = 0.3


class Frame(BaseModel):
    literal_need: str
    gap: float = Field(ge=0, le=1)


def gateway(stub: OpenAIStub, cache: Any = None, **overrides: Any) -> LLMGateway:
    settings: dict[str, Any] = {"timeout": TIMEOUT, "max_retries": 2, "backoff": 0.005, **overrides}
    return LLMGateway(stub.config(**settings), cache=cache)


def test_valid_json_is_parsed_and_stage_settings_reach_the_wire(stub: OpenAIStub) -> None:
    stub.script(json_reply(FRAME), ok("7"))
    gw = gateway(stub)
    result = gw.structured(Stage.INTENT, USER, Frame, actor="env")
    assert result.value == Frame(**FRAME)
    assert not result.repaired
    assert gw.complete(Stage.IMPORTANCE, USER, actor="Lin Wei").text == "7"
    intent, importance = stub.requests
    assert stub.paths == ["/v1/chat/completions"] * 2
    assert (intent["model"], intent["temperature"], intent.get("max_tokens")) == ("stub-model", 0.1, 400)
    assert (importance["temperature"], importance["max_tokens"]) == (0.1, 50)
    assert intent["messages"] == USER
    total = gw.usage.total()
    assert (total.calls, total.failures, total.cost_usd) == (2, 0, 0.0)  # a local model costs nothing
    assert total.prompt_tokens > 0 and total.completion_tokens > 0


def test_invalid_json_is_repaired(stub: OpenAIStub) -> None:
    stub.script(ok("She is probably at the cafe, I think."), json_reply(FRAME))
    gw = gateway(stub)
    result = gw.structured(Stage.INTENT, USER, Frame)
    assert result.repaired and result.value == Frame(**FRAME)
    assert stub.request_count == 2
    repair = stub.requests[1]["messages"]
    assert repair[-2]["content"] == "She is probably at the cafe, I think."
    assert "no JSON object" in repair[-1]["content"]
    assert gw.usage.total().repairs == 1


def test_an_empty_answer_is_repaired(stub: OpenAIStub) -> None:
    stub.script(ok(""), json_reply(FRAME))
    result = gateway(stub).structured(Stage.INTENT, USER, Frame)
    assert result.repaired and result.value == Frame(**FRAME)


def test_invalid_json_twice_is_a_typed_error(stub: OpenAIStub) -> None:
    stub.script(ok("not json"), ok('{"literal_need": "x", "gap": 2}'))
    gw = gateway(stub)
    with pytest.raises(LLMError) as err:
        gw.structured(Stage.INTENT, USER, Frame, actor="env")
    assert err.value.reason == "invalid_schema"
    assert stub.request_count == 2
    assert gw.usage.by_actor()["env"].failures == 1


@pytest.mark.parametrize(
    ("failure", "reason"), [(http_error(429), "rate_limited"), (http_error(500), "http_error")]
)
def test_a_transient_http_error_is_retried(stub: OpenAIStub, failure: Any, reason: str) -> None:
    stub.script(failure, json_reply(FRAME))
    gw = gateway(stub)
    result = gw.structured(Stage.INTENT, USER, Frame)
    assert result.value == Frame(**FRAME)
    assert result.completion.attempts == 2
    assert stub.request_count == 2
    total = gw.usage.total()
    assert (total.calls, total.retries, total.failures) == (2, 1, 0)


def test_rate_limits_beyond_the_retries_are_a_typed_error(stub: OpenAIStub) -> None:
    stub.script(http_error(429), http_error(429), http_error(429))
    with pytest.raises(LLMError) as err:
        gateway(stub).complete(Stage.ACTION, USER)
    assert (err.value.reason, err.value.attempts) == ("rate_limited", 3)
    assert stub.request_count == 3


def test_an_empty_body_is_retried(stub: OpenAIStub) -> None:
    stub.script(empty_body(), json_reply(FRAME))
    result = gateway(stub).structured(Stage.INTENT, USER, Frame)
    assert result.value == Frame(**FRAME)
    assert result.completion.attempts == 2


def test_empty_bodies_end_in_a_typed_error(stub: OpenAIStub) -> None:
    stub.script(empty_body(), empty_body())
    with pytest.raises(LLMError) as err:
        gateway(stub, max_retries=1).complete(Stage.ACTION, USER)
    assert err.value.attempts == 2
    assert stub.request_count == 2


def test_a_slow_answer_times_out_and_is_retried(stub: OpenAIStub) -> None:
    stub.script(slow(), ok("in time"))
    done = gateway(stub).complete(Stage.ACTION, USER)
    assert (done.text, done.attempts) == ("in time", 2)


def test_timeouts_are_retried_then_fail_with_reason_timeout(stub: OpenAIStub) -> None:
    stub.script(slow(), slow(), slow())
    gw = gateway(stub)
    started = time.monotonic()
    with pytest.raises(LLMError) as err:
        gw.complete(Stage.ACTION, USER, actor="Lin Wei")
    assert (err.value.reason, err.value.attempts) == ("timeout", 3)
    assert stub.request_count == 3
    assert time.monotonic() - started < 3 * TIMEOUT + 2.0  # each attempt was cut at the timeout
    assert gw.usage.by_actor()["Lin Wei"].failures == 1


def test_a_client_error_is_not_retried(stub: OpenAIStub) -> None:
    stub.script(http_error(400, "bad request"), ok("never sent"))
    with pytest.raises(LLMError) as err:
        gateway(stub).complete(Stage.ACTION, USER)
    assert (err.value.reason, err.value.attempts) == ("http_error", 1)
    assert stub.request_count == 1
    assert stub.pending == 1


def test_a_connection_failure_is_a_typed_error() -> None:
    with OpenAIStub() as gone:
        url = gone.url
    gw = LLMGateway(
        GatewayConfig(model="openai/stub-model", api_base=url, api_key="sk", timeout=TIMEOUT, backoff=0)
    )
    with pytest.raises(LLMError) as err:
        gw.complete(Stage.ACTION, USER)
    assert (err.value.reason, err.value.attempts) == ("connection", 3)


def test_the_cache_makes_a_second_identical_run_call_no_model(stub: OpenAIStub, tmp_path: Path) -> None:
    def run(cache: Any) -> tuple[Frame, str]:
        gw = gateway(stub, cache=cache)
        frame = gw.structured(Stage.INTENT, USER, Frame, actor="env").value
        text = gw.complete(Stage.ANSWER, USER, actor="env").text
        return frame, text

    stub.script(http_error(429), ok("no json"), json_reply(FRAME), ok("She is at the cafe."))
    first = run(DiskCache(tmp_path))
    assert stub.request_count == 4
    assert run(DiskCache(tmp_path)) == first
    assert stub.request_count == 4  # the rerun made no model call

    transport = MemoryTransport()
    stub.script(json_reply(FRAME), ok("She is at the cafe."))
    assert run(TransportCache(transport, "town")) == first
    calls = stub.request_count
    gw = gateway(stub, cache=TransportCache(transport, "town"))
    assert gw.structured(Stage.INTENT, USER, Frame).completion.cached
    assert gw.complete(Stage.ANSWER, USER).cached
    assert stub.request_count == calls
    assert gw.usage.total().cache_hits == 2
    assert gw.usage.total().calls == 0
    assert json.dumps(gw.usage.to_dict())
