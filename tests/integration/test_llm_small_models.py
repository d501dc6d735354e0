"""Issue 19, the gateway: small local models behind an OpenAI-compatible server.

Real litellm calls against the local stub server (tests/support/openai_stub.py): output caps and
deadlines on every request, an abandoned request's connection closed, prompts fitted to the
context window, a JSON Schema ``response_format`` for structured stages (and the fallback when a
server refuses it), answers carrying chat-template scaffolding refused, and the tokens of every
call counted, failed ones included.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from pydantic import BaseModel, Field

from actors.llm import (
    GatewayConfig,
    LLMError,
    LLMGateway,
    MeteredCalls,
    Stage,
    StageSettings,
    load_litellm,
)
from actors.llm._gateway import DEADLINE_GRACE
from tests.support.openai_stub import (
    CONTEXT_OVERFLOW,
    OpenAIStub,
    hang,
    interrupted,
    json_reply,
    ok,
    trickled,
)

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

USER = [{"role": "user", "content": "Where is Lin Wei? Answer as JSON."}]
FRAME = {"literal_need": "Lin Wei's location", "gap": 0.6}
SYSTEM = (
    "You are AURA, the town's assistant. Answer the resident's question about the other residents "
    "in two sentences, using only the facts given."
)


class Frame(BaseModel):
    literal_need: str
    gap: float = Field(ge=0, le=1)


def gateway(stub: OpenAIStub, *, timeout: float = 2.0, max_retries: int = 0, **more: Any) -> LLMGateway:
    return LLMGateway(stub.config(timeout=timeout, max_retries=max_retries, **more))


# -- 1. output caps and abandoned requests -------------------------------------------------------


def test_every_stage_sends_an_output_cap_and_the_global_one_overrides_them(stub: OpenAIStub) -> None:
    stub.script(*(ok("fine") for _ in Stage))
    gw = gateway(stub)
    for stage in Stage:
        gw.complete(stage, USER)
    assert all(r["stream"] for r in stub.requests)  # streamed: a server stops when the client leaves
    caps = [r["max_tokens"] for r in stub.requests]
    assert all(isinstance(c, int) and c > 0 for c in caps), caps
    assert caps[list(Stage).index(Stage.IMPORTANCE)] == 50  # the paper's (Appendix A6)

    stub.script(ok("fine"), ok("fine"))
    capped = gateway(stub, max_tokens=64, stage_overrides={Stage.ANSWER: StageSettings(0.2, 900)})
    capped.complete(Stage.ANSWER, USER)
    capped.complete(Stage.CONVERSATION, USER, settings=StageSettings(0.1, 800))
    assert [r["max_tokens"] for r in stub.requests[-2:]] == [64, 64]
    assert capped.config.describe()["stages"]["answer"]["max_tokens"] == 64


@pytest.mark.parametrize("reply", [hang(), trickled("{}" + " " * 400, every=0.05)], ids=["silent", "slow"])
def test_an_abandoned_request_has_its_connection_closed(reply: Any) -> None:
    """A request given up on must not keep the server generating: the stub, which watches its
    connections as llama.cpp does, sees the client leave within the deadline and the grace."""
    timeout = 0.6
    with OpenAIStub(responder=lambda request: reply) as stub:
        gw = gateway(stub, timeout=timeout)
        load_litellm()  # its import (seconds, the first time) is no part of the request
        started = time.monotonic()
        with pytest.raises(LLMError) as err:
            gw.complete(Stage.ANSWER, USER)
        assert err.value.reason == "timeout"
        closed = stub.wait_disconnect(timeout=5.0)
        assert closed is not None, "the server never saw the client go"
        assert closed - started < timeout + DEADLINE_GRACE + 0.5


# -- 2. context --------------------------------------------------------------------------------------


def _conversation(turns: int) -> list[dict[str, str]]:
    history: list[dict[str, str]] = [{"role": "system", "content": SYSTEM}]
    for i in range(turns):
        history.append({"role": "user", "content": f"Question {i}: " + "what about the cafe today " * 6})
        history.append(
            {"role": "assistant", "content": f"Answer {i}: " + "the cafe is busy this morning " * 6}
        )
    history.append({"role": "user", "content": "And where is Lin Wei now?"})
    return history


def test_a_prompt_longer_than_the_context_window_is_trimmed_and_recorded(stub: OpenAIStub) -> None:
    stub.script(ok("At the cafe."))
    gw = gateway(stub, context_window=600)
    messages = _conversation(20)
    assert gw.count_tokens(messages) > 600
    assert gw.complete(Stage.ANSWER, messages).text == "At the cafe."
    (sent,) = stub.requests
    kept = sent["messages"]
    assert kept[0] == messages[0] and kept[-1] == messages[-1]  # system and the question stay
    assert len(kept) < len(messages)
    assert kept[1]["role"] == "user"  # what is left of the history still alternates from a user turn
    assert gw.count_tokens(kept) + sent["max_tokens"] <= 600
    assert gw.usage.total().trimmed == 1


def test_a_single_huge_message_is_shortened_in_its_middle(stub: OpenAIStub) -> None:
    stub.script(ok("ok"))
    gw = gateway(stub, context_window=500)
    text = "START " + "memory of the morning at the cafe. " * 300 + " END?"
    gw.complete(Stage.ANSWER, [{"role": "user", "content": text}])
    (sent,) = stub.requests
    content = sent["messages"][0]["content"]
    assert content.startswith("START") and content.endswith("END?") and "[...]" in content
    assert gw.usage.total().trimmed == 1


def test_a_prompt_that_fits_is_sent_as_is(stub: OpenAIStub) -> None:
    stub.script(ok("ok"))
    gw = gateway(stub, context_window=4096)
    gw.complete(Stage.ANSWER, _conversation(2))
    assert stub.requests[0]["messages"] == _conversation(2)
    assert gw.usage.total().trimmed == 0


def test_the_context_window_comes_from_litellm_for_a_known_model() -> None:
    gw = LLMGateway(GatewayConfig(model="gpt-4o-mini"))
    assert (gw.context_window() or 0) >= 100_000
    assert LLMGateway(GatewayConfig(model="openai/my-local-gguf")).context_window() is None
    assert (
        LLMGateway(GatewayConfig(model="openai/my-local-gguf", context_window=4096)).context_window() == 4096
    )


def test_an_overflow_the_server_reports_has_its_own_reason_in_one_line() -> None:
    with OpenAIStub(context_size=30) as stub:  # no context_window configured: the server refuses
        gw = gateway(stub)
        with pytest.raises(LLMError) as err:
            gw.complete(Stage.ANSWER, USER)
        assert err.value.reason == "context_overflow"
        assert CONTEXT_OVERFLOW in err.value.detail and "\n" not in err.value.detail
        assert stub.request_count == 1  # not retried: the same prompt would overflow again


# -- 3. structured output ------------------------------------------------------------------------


def test_structured_stages_send_the_json_schema(stub: OpenAIStub) -> None:
    stub.script(json_reply(FRAME))
    result = gateway(stub).structured(Stage.INTENT, USER, Frame)
    assert result.value == Frame.model_validate(FRAME)
    fmt = stub.requests[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Frame" and fmt["json_schema"]["strict"] is False
    assert fmt["json_schema"]["schema"] == Frame.model_json_schema()


def test_the_repair_call_sends_the_schema_too(stub: OpenAIStub) -> None:
    stub.script(ok("not json"), json_reply(FRAME))
    assert gateway(stub).structured(Stage.INTENT, USER, Frame).repaired
    assert all("response_format" in r for r in stub.requests)


def test_a_server_refusing_response_format_is_asked_again_without_it_and_remembered() -> None:
    with OpenAIStub(refuse_response_format=True) as stub:
        stub.script(json_reply(FRAME), json_reply(FRAME))
        gw = gateway(stub)
        first = gw.structured(Stage.INTENT, USER, Frame)
        assert first.value == Frame.model_validate(FRAME) and first.completion.attempts == 3
        gw.structured(Stage.INTENT, [{"role": "user", "content": "And Zhang Hao?"}], Frame)
        forms = [(r.get("response_format") or {}).get("type") for r in stub.requests]
        assert forms == ["json_schema", "json_object", None, None]  # each form once, then none
        assert gw.usage.total().failures == 0


def test_llama_cpp_pythons_server_gets_the_schema_in_its_own_form() -> None:
    """The README's local model server refuses json_schema with a 500 (not retried: it would
    refuse again) and takes ``{"type": "json_object", "schema": ...}``, remembered."""
    with OpenAIStub(refuse_response_format="json_schema") as stub:
        stub.script(json_reply(FRAME), json_reply(FRAME))
        gw = gateway(stub, max_retries=2)
        assert gw.structured(Stage.INTENT, USER, Frame).value == Frame.model_validate(FRAME)
        gw.structured(Stage.INTENT, [{"role": "user", "content": "And Zhang Hao?"}], Frame)
        forms = [(r.get("response_format") or {}).get("type") for r in stub.requests]
        assert forms == ["json_schema", "json_object", "json_object"]
        assert stub.requests[1]["response_format"]["schema"] == Frame.model_json_schema()


def test_structured_output_can_be_switched_off(stub: OpenAIStub) -> None:
    stub.script(json_reply(FRAME))
    gateway(stub, structured_output=False).structured(Stage.INTENT, USER, Frame)
    assert "response_format" not in stub.requests[0]


def test_a_prose_stage_sends_no_response_format(stub: OpenAIStub) -> None:
    stub.script(ok("She is at the cafe."))
    gateway(stub).complete(Stage.ANSWER, USER, prose=True)
    assert "response_format" not in stub.requests[0]


# -- 4. scaffolding --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "[INST] <<SYS>> You are a helpful assistant <</SYS>> Where is Lin Wei? [/INST]",
        "Lin Wei is at the cafe.</assistant_message>",
        "<start_of_turn>model\nLin Wei is at the cafe.<end_of_turn>",
        "<|im_start|>assistant\nLin Wei is at the cafe.<|im_end|>",
        "Lin Wei is at the cafe.\n### User: and Zhang Hao?",
        SYSTEM,
    ],
)
def test_an_answer_carrying_scaffolding_is_never_returned(stub: OpenAIStub, answer: str) -> None:
    stub.script(ok(answer))
    gw = gateway(stub)
    with pytest.raises(LLMError) as err:
        gw.complete(Stage.ANSWER, [{"role": "system", "content": SYSTEM}, *USER], prose=True)
    assert err.value.reason == "scaffolding"
    assert gw.usage.total().failures == 1


# The answer stage's request, as gemma-3-270m said it back on this machine (issue 19's check).
REQUEST = (
    "10:00, day 1. You are Zhang Hao.\nScene: AURATown, day 1, 10:00; 5 agents. Zhang Hao is on the "
    "way between two places (walking to Town Library).\nQuestion: Where is Lin Wei?"
)


def test_an_answer_that_says_the_request_back_is_refused_but_may_quote_a_later_turn(stub: OpenAIStub) -> None:
    # Said back loosely, as it was: another day, the town's name miscased, the rest its own.
    echo = REQUEST.replace("day 1", "day 2").replace("AURATown", "AURatown")
    echo = echo.replace("\nQuestion: Where is Lin Wei?", "\nbetween places: you (walking to Town Library)")
    stub.script(ok(echo))
    with pytest.raises(LLMError) as err:
        gateway(stub).complete(Stage.ANSWER, [{"role": "user", "content": REQUEST}], prose=True)
    assert (err.value.reason, err.value.detail) == ("scaffolding", "the answer carries 'echoed prompt'")
    # A later chat turn quoted word for word is an answer, not an echo.
    turn = "please send the croissant order to the cafe before noon on Saturday and copy Ana on it"
    chat = [{"role": "user", "content": REQUEST}, {"role": "assistant", "content": "ok"}]
    stub.script(ok(f"Done: you asked me to {turn}."))
    answer = gateway(stub).complete(Stage.ANSWER, [*chat, {"role": "user", "content": turn}], prose=True)
    assert answer.text.startswith("Done")


def test_an_answer_that_copies_a_labelled_line_of_the_request_is_refused(stub: OpenAIStub) -> None:
    # Said as it was: its own opening, then the request's scene line copied whole.
    said = "10:00, day 1. Wang Jun is at Sunrise Cafe, alone.\nScene: AURATown, day 1, 10:00; 5 agents."
    stub.script(ok(said), ok("Scene of the day: Wang Jun is at the Tea House."))
    with pytest.raises(LLMError) as err:
        gateway(stub).complete(Stage.ANSWER, [{"role": "user", "content": REQUEST}], prose=True)
    assert err.value.detail == "the answer carries \"the prompt's 'Scene:' line\""
    answer = gateway(stub).complete(Stage.ANSWER, [{"role": "user", "content": REQUEST}], prose=True)
    assert answer.text.startswith("Scene of the day")  # a label of its own is an answer


@pytest.mark.parametrize(
    ("said", "marker"),
    [
        # Said as they were: a memory line of the prompt, then a question of the model's own.
        ("- 08:30 at the street: walking to AURA Academy\nQuestion: What do you think? model", "Question:"),
        ("She walked.\n- 09:30 at the street: walking to AURA Academy", "- 09:30 at the street"),
    ],
)
def test_an_answer_that_writes_the_prompts_format_is_refused(
    stub: OpenAIStub, said: str, marker: str
) -> None:
    memories = "\nYour relevant memories:\n- 08:30 at the street: walking to AURA Academy"
    request = REQUEST.replace("\nQuestion:", memories + "\nQuestion:")
    stub.script(ok(said))
    with pytest.raises(LLMError) as err:
        gateway(stub).complete(Stage.ANSWER, [{"role": "user", "content": request}], prose=True)
    assert err.value.reason == "scaffolding" and marker in err.value.detail


def test_a_structured_value_carrying_scaffolding_is_refused(stub: OpenAIStub) -> None:
    stub.script(json_reply({"literal_need": "<|eot_id|><|start_header_id|>user", "gap": 0.2}))
    with pytest.raises(LLMError) as err:
        gateway(stub).structured(Stage.INTENT, USER, Frame)
    assert err.value.reason == "scaffolding" and "<|eot_id|>" in err.value.detail


def test_a_scaffolding_answer_is_a_recorded_fallback_with_its_tokens(stub: OpenAIStub) -> None:
    stub.script(ok("[INST] where is Lin Wei [/INST]"))
    gw = gateway(stub)
    unit = MeteredCalls(gw, actor="aura")
    with pytest.raises(LLMError) as err:
        unit._complete(Stage.ANSWER, USER)
    unit._fallback(Stage.ANSWER, err.value)
    usage = unit.usage()
    assert usage.fallbacks == ("answer: scaffolding",) and usage.answered == ()
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert [r.reason for r in gw.usage.fallback_records()] == ["scaffolding"]


# -- 5. usage of failed calls ----------------------------------------------------------------------


def test_a_call_that_times_out_counts_its_prompt_tokens() -> None:
    with OpenAIStub(responder=lambda request: hang()) as stub:
        gw = gateway(stub, timeout=0.3, max_retries=1, backoff=0.001)
        with pytest.raises(LLMError) as err:
            gw.complete(Stage.ANSWER, USER, actor="env")
        per_request = gw.count_tokens(USER)
        assert per_request > 0
        assert err.value.prompt_tokens == 2 * per_request  # two requests sent, none answered
        total = gw.usage.total()
        assert (total.calls, total.prompt_tokens, total.completion_tokens) == (2, 2 * per_request, 0)


def test_a_call_that_ends_invalid_counts_the_providers_tokens(stub: OpenAIStub) -> None:
    stub.script(ok("not json"), ok("still not json"))
    gw = gateway(stub)
    unit = MeteredCalls(gw, actor="aura")
    with pytest.raises(LLMError) as err:
        unit._structured(Stage.INTENT, USER, Frame)
    unit._fallback(Stage.INTENT, err.value)
    # The stub reports words as tokens: the completions are 2 and 3 words.
    assert err.value.completion_tokens == 5
    assert unit.usage().completion_tokens == 5 == gw.usage.total().completion_tokens
    assert unit.usage().prompt_tokens == err.value.prompt_tokens == gw.usage.total().prompt_tokens > 0


def test_a_retried_call_counts_the_failed_requests_prompt(stub: OpenAIStub) -> None:
    stub.script(hang(), ok("fine"))
    gw = gateway(stub, timeout=0.3, max_retries=1, backoff=0.001)
    done = gw.complete(Stage.ANSWER, USER)
    assert done.attempts == 2
    stub_words = sum(len(m["content"].split()) for m in USER)
    assert done.prompt_tokens == stub_words + gw.count_tokens(USER)


def test_usage_names_the_stages_the_model_answered(stub: OpenAIStub) -> None:
    stub.script(json_reply(FRAME), ok("She is at the cafe."), ok("Nothing to add."))
    unit = MeteredCalls(gateway(stub), actor="aura")
    unit._structured(Stage.INTENT, USER, Frame)
    unit._complete(Stage.ANSWER, USER)
    assert unit.usage().answered == ("intent", "answer")
    unit._complete(Stage.ANSWER, USER)  # an answer the caller cannot use is not answered after all
    unit._unusable(Stage.ANSWER, LLMError(Stage.ANSWER, "empty", "nothing", 0))
    usage = unit.usage()
    assert (usage.answered, usage.fallbacks) == (("intent", "answer"), ("answer: empty",))


# -- a stream the server cut short -----------------------------------------------------------------


def test_a_stream_cut_short_is_retried_and_its_part_never_used(stub: OpenAIStub) -> None:
    """llama-cpp-python's server ends a request's stream when another request arrives; litellm
    makes up a \"stop\" for it, so the part would pass for the answer."""
    stub.script(interrupted("She is at the"), ok("She is at the cafe."))
    answer = gateway(stub, max_retries=1).complete(Stage.ANSWER, USER, prose=True)
    assert answer.text == "She is at the cafe." and stub.request_count == 2


def test_a_model_whose_every_stream_is_cut_falls_back_saying_so(stub: OpenAIStub) -> None:
    stub.script(interrupted(json.dumps(FRAME)[:-3]), interrupted(json.dumps(FRAME)[:-3]))
    with pytest.raises(LLMError) as err:
        gateway(stub, max_retries=1).structured(Stage.INTENT, USER, Frame)
    assert err.value.reason == "connection" and "cut short" in err.value.detail
