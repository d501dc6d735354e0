"""The LLM gateway through litellm for real, with litellm's own ``mock_response`` (offline).

``scripted`` wraps ``litellm.completion``: each call takes the next scripted mock response and
goes through the real litellm code path; the wrapper records the keyword arguments litellm got.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from actors.bus import KeyLayout, MemoryTransport
from actors.llm import (
    STAGE_SETTINGS,
    Budget,
    DiskCache,
    GatewayConfig,
    LLMError,
    LLMGateway,
    Stage,
    StageSettings,
    TransportCache,
    UsageStats,
    extract_json,
    load_litellm,
    schema_prompt,
)
from tests.support.imports import modules_loaded_by

litellm = load_litellm()  # as the gateway imports it: offline, with the cost map litellm ships

# litellm's own response types trip a pydantic warning on first use; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

USER = [{"role": "user", "content": "Where is Lin Wei?"}]


class Frame(BaseModel):
    literal_need: str
    gap: float = Field(ge=0, le=1)


class Scripted:
    def __init__(self, real: Any) -> None:
        self.real = real
        self.responses: list[Any] = []
        self.calls: list[dict[str, Any]] = []

    def script(self, *responses: Any) -> None:
        self.responses.extend(responses)

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        assert self.responses, "unscripted model call"
        nxt = self.responses.pop(0)
        if nxt == "timeout":
            return self.real(**kwargs, mock_timeout=True)
        if nxt == "":  # litellm treats mock_response="" as no mock at all: build the empty answer
            nxt = litellm.ModelResponse(
                choices=[
                    {"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}
                ],
                model=kwargs["model"],
                usage={"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5},
            )
        return self.real(**kwargs, mock_response=nxt)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Scripted]:
    s = Scripted(litellm.completion)
    monkeypatch.setattr(litellm, "completion", s)
    yield s
    assert not s.responses, "scripted responses left unused"


def gateway(cache: Any = None, **overrides: Any) -> LLMGateway:
    config = {"model": "gpt-4o-mini", "timeout": 0.5, "max_retries": 2, "backoff": 0.001, **overrides}
    return LLMGateway(GatewayConfig(**config), cache=cache)


FRAME = {"literal_need": "Lin Wei's location", "gap": 0.6}


# -- stages ----------------------------------------------------------------------------------


def test_stage_settings_are_the_papers() -> None:
    # The paper's caps where A6 gives one; ours (documented in _stages) where it says "default".
    expected = {
        Stage.ACTION: (0.7, 256),
        Stage.PROBE_PLANNING: (0.2, 200),
        Stage.CONVERSATION: (0.8, 600),
        Stage.REFLECTION: (0.5, 400),
        Stage.IMPORTANCE: (0.1, 50),
        Stage.INTENT: (0.1, 400),
        Stage.JUDGE: (0.1, 600),
        Stage.ANSWER: (0.7, 400),
        Stage.USER: (0.0, 300),
    }
    assert {s: (v.temperature, v.max_tokens) for s, v in STAGE_SETTINGS.items()} == expected


@pytest.mark.parametrize("stage", list(Stage))
def test_stage_settings_reach_litellm(scripted: Scripted, stage: Stage) -> None:
    scripted.script("ok")
    gateway().complete(stage, USER)
    (call,) = scripted.calls
    assert call["temperature"] == STAGE_SETTINGS[stage].temperature
    assert call.get("max_tokens") == STAGE_SETTINGS[stage].max_tokens
    assert call["timeout"] == 0.5
    assert call["num_retries"] == 0  # the gateway retries, litellm must not
    assert call["messages"] == USER


def test_overrides_and_per_call_settings_win(scripted: Scripted) -> None:
    scripted.script("a", "b")
    gw = gateway(stage_overrides={Stage.ANSWER: StageSettings(0.3, 77)}, seed=7)
    gw.complete(Stage.ANSWER, USER)
    gw.complete(Stage.ANSWER, USER, settings=StageSettings(0.1))
    first, second = scripted.calls
    assert (first["temperature"], first["max_tokens"], first["seed"]) == (0.3, 77, 7)
    # A call's settings without a cap keep the stage's: no request goes uncapped.
    assert (second["temperature"], second.get("max_tokens")) == (0.1, 77)


def test_endpoint_and_key_travel_with_the_call_not_globally(scripted: Scripted) -> None:
    scripted.script("ok")
    gateway(model="openai/local", api_base="http://127.0.0.1:9/v1", api_key="sk-test").complete(
        Stage.ACTION, USER
    )
    (call,) = scripted.calls
    assert (call["model"], call["api_base"], call["api_key"]) == (
        "openai/local",
        "http://127.0.0.1:9/v1",
        "sk-test",
    )
    assert litellm.api_base is None
    assert litellm.api_key is None


# -- complete --------------------------------------------------------------------------------


def test_complete_returns_text_tokens_and_cost(scripted: Scripted) -> None:
    scripted.script("She is at the cafe.")
    done = gateway().complete(Stage.ANSWER, USER, actor="env")
    assert done.text == "She is at the cafe."
    assert (done.cached, done.attempts) == (False, 1)
    assert done.prompt_tokens > 0 and done.completion_tokens > 0
    assert done.cost_usd > 0  # gpt-4o-mini is in litellm's cost map
    assert done.latency_s >= 0


def test_an_unpriced_model_costs_zero(scripted: Scripted) -> None:
    scripted.script("ok")
    assert gateway(model="openai/my-local-model").complete(Stage.ACTION, USER).cost_usd == 0.0


def test_an_empty_answer_is_an_error_not_a_default(scripted: Scripted) -> None:
    scripted.script("")
    gw = gateway()
    with pytest.raises(LLMError) as err:
        gw.complete(Stage.ACTION, USER)
    assert err.value.reason == "empty"
    assert gw.usage.total().failures == 1


# -- retries ---------------------------------------------------------------------------------


def test_a_rate_limit_is_retried(scripted: Scripted) -> None:
    scripted.script("litellm.RateLimitError", "litellm.InternalServerError", "fine")
    gw = gateway()
    done = gw.complete(Stage.ACTION, USER)
    assert (done.text, done.attempts) == ("fine", 3)
    total = gw.usage.total()
    assert (total.calls, total.retries, total.failures) == (3, 2, 0)


def test_retries_are_bounded_and_end_in_a_typed_error(scripted: Scripted) -> None:
    scripted.script("timeout", "timeout")
    gw = gateway(max_retries=1, timeout=0.05)  # litellm's mock timeout waits out the timeout
    with pytest.raises(LLMError) as err:
        gw.complete(Stage.INTENT, USER, actor="env")
    assert (err.value.reason, err.value.attempts, err.value.stage) == ("timeout", 2, Stage.INTENT)
    assert gw.usage.by_actor()["env"].failures == 1


def test_a_client_error_is_not_retried(scripted: Scripted) -> None:
    scripted.script("litellm.ContextWindowExceededError")
    gw = gateway()
    with pytest.raises(LLMError) as err:
        gw.complete(Stage.ACTION, USER)
    assert (err.value.reason, err.value.attempts) == ("context_overflow", 1)
    assert len(scripted.calls) == 1


def test_backoff_is_exponential_and_capped() -> None:
    config = GatewayConfig(model="m", backoff=0.5, max_backoff=3.0)
    assert [config.delay_before_retry(i) for i in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]


# -- structured ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        json.dumps(FRAME),
        f"```json\n{json.dumps(FRAME, indent=2)}\n```",
        f"Sure! Here is the frame:\n```\n{json.dumps(FRAME)}\n```\nHope this helps.",
        f"The frame {{as asked}} is {json.dumps(FRAME)} -- done.",
    ],
    ids=["plain", "fenced", "fenced-in-prose", "prose"],
)
def test_structured_parses_json_in_any_wrapping(scripted: Scripted, answer: str) -> None:
    scripted.script(answer)
    result = gateway().structured(Stage.INTENT, USER, Frame)
    assert result.value == Frame(**FRAME)
    assert not result.repaired
    assert len(scripted.calls) == 1


def test_one_repair_shows_the_validation_error(scripted: Scripted) -> None:
    scripted.script('{"literal_need": "where", "gap": 3}', json.dumps(FRAME))
    gw = gateway()
    result = gw.structured(Stage.INTENT, USER, Frame, actor="env")
    assert result.value == Frame(**FRAME)
    assert result.repaired
    assert result.completion.attempts == 2
    repair_messages = scripted.calls[1]["messages"]
    assert repair_messages[: len(USER)] == USER
    assert repair_messages[-2] == {"role": "assistant", "content": '{"literal_need": "where", "gap": 3}'}
    assert (
        "gap" in repair_messages[-1]["content"]
        and "less than or equal to 1" in repair_messages[-1]["content"]
    )
    total = gw.usage.total()
    assert (total.calls, total.repairs, total.failures) == (2, 1, 0)


@pytest.mark.parametrize(
    ("first", "second", "reason"),
    [
        ('{"gap": 0.5}', '{"literal_need": "x"}', "invalid_schema"),
        ("I think she is busy", "still no json {", "invalid_json"),
        ("", "", "empty"),
    ],
)
def test_a_failed_repair_raises(scripted: Scripted, first: str, second: str, reason: str) -> None:
    scripted.script(first, second)
    gw = gateway()
    with pytest.raises(LLMError) as err:
        gw.structured(Stage.JUDGE, USER, Frame)
    assert err.value.reason == reason
    assert err.value.attempts == 2
    assert len(scripted.calls) == 2  # exactly one repair
    total = gw.usage.total()
    assert (total.repairs, total.failures) == (1, 1)


def test_schema_prompt_names_the_fields() -> None:
    prompt = schema_prompt(Frame)
    assert "literal_need" in prompt and "gap" in prompt


def test_extract_json_prefers_the_whole_then_fences_then_the_first_object() -> None:
    assert extract_json('{"a": 1}') == {"a": 1}
    # A raw newline inside a string (as gemma-3-270m wrote one under llama.cpp's JSON grammar).
    assert extract_json('{ "action": "call", "reason": "she is busy.\n" }')["reason"] == "she is busy.\n"
    assert extract_json('x ```json\n{"a": 2}\n``` y {"a": 3}') == {"a": 2}
    assert extract_json('a {b} then {"a": 4} and {"a": 5}') == {"a": 4}
    with pytest.raises(ValueError):
        extract_json("no json at all")


# -- cache -----------------------------------------------------------------------------------


def test_disk_cache_answers_a_second_identical_call_without_the_model(
    scripted: Scripted, tmp_path: Path
) -> None:
    scripted.script("She is at the cafe.")
    gw = gateway(cache=DiskCache(tmp_path / "cache"))
    first = gw.complete(Stage.ANSWER, USER, actor="env")
    second = gw.complete(Stage.ANSWER, USER, actor="env")
    assert len(scripted.calls) == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.text == first.text
    assert (second.attempts, second.cost_usd) == (0, 0.0)
    assert second.prompt_tokens == first.prompt_tokens
    total = gw.usage.total()
    assert (total.calls, total.cache_hits) == (1, 1)
    # A new gateway on the same directory (a rerun) makes no call either.
    assert gateway(cache=DiskCache(tmp_path / "cache")).complete(Stage.ANSWER, USER).cached
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def test_the_cache_key_covers_messages_settings_and_model(scripted: Scripted, tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)
    scripted.script("a", "b", "c", "d")
    gateway(cache).complete(Stage.ANSWER, USER)
    gateway(cache).complete(Stage.ANSWER, [{"role": "user", "content": "Where is Zhang Hao?"}])
    gateway(cache).complete(Stage.ACTION, USER, settings=StageSettings(0.0))
    gateway(cache, model="gpt-4o").complete(Stage.ANSWER, USER)
    assert len(scripted.calls) == 4
    # Same settings (temperature and output cap) under another stage: same request, same answer.
    assert gateway(cache).complete(Stage.ACTION, USER, settings=StageSettings(0.7, 400)).cached


def test_a_corrupt_cache_entry_is_a_miss(scripted: Scripted, tmp_path: Path) -> None:
    scripted.script("first", "second")
    gw = gateway(cache=DiskCache(tmp_path))
    gw.complete(Stage.ANSWER, USER)
    (entry,) = tmp_path.rglob("*.json")
    entry.write_text("{torn")
    assert gw.complete(Stage.ANSWER, USER).text == "second"


def test_transport_cache_on_the_memory_transport(scripted: Scripted) -> None:
    transport = MemoryTransport()
    scripted.script('{"literal_need": "where", "gap": 7}', json.dumps(FRAME))
    cache = TransportCache(transport, "town-1")
    gw = gateway(cache=cache)
    first = gw.structured(Stage.INTENT, USER, Frame, actor="env")
    again = gateway(cache=TransportCache(transport, "town-1")).structured(Stage.INTENT, USER, Frame)
    assert len(scripted.calls) == 2  # the first run's call and its repair; the rerun made none
    assert again.value == first.value == Frame(**FRAME)
    assert again.completion.cached and again.repaired
    # Entries are kv keys inside the namespace's hash tag; another namespace does not see them.
    assert cache.key("abc") == KeyLayout("town-1").kv("llm-cache:abc") == "auratown:{town-1}:kv:llm-cache:abc"
    scripted.script(json.dumps(FRAME))
    assert (
        not gateway(cache=TransportCache(transport, "town-2"))
        .structured(Stage.INTENT, USER, Frame)
        .completion.cached
    )


def test_structured_and_text_answers_are_cached_apart(scripted: Scripted, tmp_path: Path) -> None:
    scripted.script(json.dumps(FRAME), json.dumps(FRAME))
    gw = gateway(cache=DiskCache(tmp_path))
    gw.complete(Stage.INTENT, USER)
    assert not gw.structured(Stage.INTENT, USER, Frame).completion.cached
    assert gw.structured(Stage.INTENT, USER, Frame).completion.cached


# -- usage -----------------------------------------------------------------------------------


def test_usage_is_accounted_per_actor_per_stage_and_in_total(scripted: Scripted) -> None:
    scripted.script("a", "b", "c")
    gw = gateway()
    gw.complete(Stage.ACTION, USER, actor="Lin Wei")
    gw.complete(Stage.REFLECTION, USER, actor="Lin Wei")
    gw.complete(Stage.ACTION, USER, actor="Zhang Hao")
    by_actor, by_stage, total = gw.usage.by_actor(), gw.usage.by_stage(), gw.usage.total()
    assert by_actor["Lin Wei"].calls == 2 and by_actor["Zhang Hao"].calls == 1
    assert by_stage[Stage.ACTION].calls == 2 and by_stage[Stage.REFLECTION].calls == 1
    assert total.calls == 3
    assert total.prompt_tokens == sum(s.prompt_tokens for s in by_actor.values()) > 0
    assert total.completion_tokens == sum(s.completion_tokens for s in by_stage.values()) > 0
    assert total.cost_usd == pytest.approx(sum(s.cost_usd for s in by_actor.values()))
    assert total.cost_usd > 0
    assert json.dumps(gw.usage.to_dict())  # a manifest can carry it


def test_record_fallback_is_counted() -> None:
    gw = gateway()
    gw.record_fallback(Stage.INTENT, "env", "timeout")
    gw.record_fallback(Stage.INTENT, "env", "invalid_json")
    assert gw.usage.total().fallbacks == 2
    assert gw.usage.by_actor()["env"].fallbacks == 2
    assert gw.usage.by_stage()[Stage.INTENT].fallbacks == 2
    assert [r.reason for r in gw.usage.fallback_records()] == ["timeout", "invalid_json"]


def test_the_ledger_is_thread_safe() -> None:
    gw = gateway()
    one = UsageStats(calls=1, prompt_tokens=3, cost_usd=0.5)

    def work(actor: str) -> None:
        for _ in range(500):
            gw.usage.add(Stage.ACTION, actor, one)

    threads = [threading.Thread(target=work, args=(f"a{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert gw.usage.total().calls == 4000
    assert gw.usage.total().prompt_tokens == 12000
    assert all(s.calls == 500 for s in gw.usage.by_actor().values())


def test_config_describe_never_shows_the_key() -> None:
    described = GatewayConfig(model="gpt-4o-mini", api_key="sk-secret").describe()
    assert "sk-secret" not in json.dumps(described)
    assert described["stages"]["probe_planning"] == {"temperature": 0.2, "max_tokens": 200}


def test_importing_the_gateway_loads_neither_litellm_nor_pydantic() -> None:
    assert modules_loaded_by("import actors.llm", ("litellm", "pydantic", "openai")) == []


def test_an_episode_gateway_pool_caps_every_stage_answer() -> None:
    from actors.episodes import GatewayPool

    config = GatewayPool(max_tokens=100).get("openai/local").config
    assert config.max_tokens_for(Stage.ANSWER) == 100  # was the provider's default
    assert config.max_tokens_for(Stage.IMPORTANCE) == 100  # one meaning: every stage's cap
    assert config.settings_for(Stage.ANSWER).temperature == STAGE_SETTINGS[Stage.ANSWER].temperature
    assert GatewayPool().get("openai/local").config.max_tokens_for(Stage.ANSWER) == 400


# -- deadlines, budgets, prose (issue 13) ----------------------------------------------------


def test_a_request_that_never_returns_is_given_up_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even a client that ignores its timeout (a server trickling bytes) costs one deadline."""
    release = threading.Event()

    def stuck(**kwargs: Any) -> Any:
        release.wait(30)
        raise RuntimeError("released")

    monkeypatch.setattr(litellm, "completion", stuck)
    monkeypatch.setattr("actors.llm._gateway.DEADLINE_GRACE", 0.05)
    gw = gateway(timeout=0.2, max_retries=0)
    started = time.monotonic()
    try:
        with pytest.raises(LLMError) as err:
            gw.complete(Stage.ANSWER, USER, actor="env")
    finally:
        release.set()
    assert time.monotonic() - started < 2.0
    assert (err.value.reason, err.value.attempts) == ("timeout", 1)
    assert gw.usage.total().calls == 1 and gw.usage.total().failures == 1


def test_a_spent_unit_budget_sends_nothing_and_says_so(scripted: Scripted) -> None:
    gw = gateway()
    unit = Budget(60.0, calls=1)
    scripted.script("ok")
    gw.complete(Stage.ANSWER, USER, budget=unit)
    with pytest.raises(LLMError) as err:
        gw.complete(Stage.ANSWER, USER, budget=unit, actor="env")
    assert (err.value.reason, err.value.attempts) == ("budget", 0)
    assert len(scripted.calls) == 1
    assert gw.usage.by_actor()["env"].failures == 1 and gw.usage.by_actor()["env"].calls == 0


def test_the_stage_budget_bounds_retries_in_time_and_calls(scripted: Scripted) -> None:
    scripted.script("litellm.RateLimitError", "litellm.RateLimitError")
    gw = gateway(max_retries=5, stage_calls=2)
    with pytest.raises(LLMError) as err:
        gw.complete(Stage.ANSWER, USER)
    assert (err.value.reason, err.value.attempts) == ("rate_limited", 2)  # the last failure's reason
    assert gw.usage.total().calls == 2  # failed requests are counted


def test_a_budget_is_shared_down_its_chain() -> None:
    unit = Budget(None, calls=2)
    stage = unit.child(None, calls=5)
    assert stage.take_call() and stage.take_call() and not stage.take_call()
    assert unit.calls_left() == 0
    with pytest.raises(ValueError, match="positive and finite"):
        Budget(float("inf"))


@pytest.mark.parametrize(
    "answer",
    ["{not json, 'yes': YES ,,", '{"answer": "at home"}', '["at home"]', "```json\n{}\n```", "42"],
    ids=["invalid-json", "json-object", "json-array", "code-fence", "bare-json"],
)
def test_a_prose_stage_repairs_data_once_then_refuses_it(scripted: Scripted, answer: str) -> None:
    gw = gateway()
    scripted.script(answer, "He is at home, writing.")
    done = gw.complete(Stage.ANSWER, USER, prose=True)
    assert done.text == "He is at home, writing." and done.attempts == 2
    scripted.script(answer, answer)
    with pytest.raises(LLMError) as err:
        gw.complete(Stage.ANSWER, [{"role": "user", "content": "again"}], prose=True, actor="env")
    assert (err.value.reason, err.value.attempts) == ("invalid_text", 2)
    assert gw.usage.by_actor()["env"].calls == 2 and gw.usage.by_actor()["env"].failures == 1


def test_a_failed_repair_call_reports_the_attempts_of_both(scripted: Scripted) -> None:
    scripted.script("not json at all", "litellm.ContextWindowExceededError")
    gw = gateway()
    with pytest.raises(LLMError) as err:
        gw.structured(Stage.INTENT, USER, Frame)
    assert (err.value.reason, err.value.attempts) == ("context_overflow", 2)
    assert gw.usage.total().calls == 2
