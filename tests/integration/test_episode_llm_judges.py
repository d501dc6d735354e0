"""The LLM judges and the LLM user voice of pi-Bench episodes, for real through litellm against a
local OpenAI-compatible stub: strict YES/NO reading, failures counted and never passed, the
user's words falling back to the template visibly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from actors.episodes.judges import LLMIntentJudge, LLMRubricJudge, LLMUserVoice
from actors.llm import GatewayConfig, LLMGateway, Stage
from messages.episodes import CriterionSpec, GradingSpec, SessionEnded, TurnRecord
from tests.support.openai_stub import OpenAIStub, http_error, ok
from world.episodes.grading import RuleRun, grade_session
from world.episodes.protocol import SessionTracker, assess_reply

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

BUDGET = "Keep the budget under 250 dollars"
REVIEW = "Send the draft to Priya for review"
NAMING = "Name the file 2024-05-01_tea.md"


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as s:
        yield s


def gateway(stub: OpenAIStub, **config: Any) -> LLMGateway:
    settings: dict[str, Any] = {
        "model": "openai/stub-model",
        "api_base": stub.url,
        "api_key": "sk-stub",
        "timeout": 2.0,
        "max_retries": 0,
        "backoff": 0.001,
        **config,
    }
    return LLMGateway(GatewayConfig(**settings))


def decisions(*values: str, tag: str = "decision") -> str:
    return "".join(
        f"<c{n}>\n<content>\nwhatever\n</content>\n<{tag}>\n{v}\n</{tag}>\n</c{n}>\n"
        for n, v in enumerate(values, start=1)
    )


def prompt_of(stub: OpenAIStub, n: int) -> str:
    return str(stub.requests[n]["messages"][-1]["content"])


def test_the_intent_judge_sends_the_papers_prompts_and_reads_yes_and_no(stub: OpenAIStub) -> None:
    stub.script(ok(decisions("YES", "NO")), ok(decisions("NO")))
    judge = LLMIntentJudge(gateway(stub), actor="user.ep")
    done = judge.completion("I kept it under 250 dollars.", {"plan.md": "tea plan"}, [BUDGET, REVIEW])
    assert [(v.yes, v.failed) for v in done] == [(True, False), (False, False)]
    asked = judge.clarification("Who reviews it?", [REVIEW])
    assert [(v.yes, v.failed) for v in asked] == [(False, False)]

    first, second = prompt_of(stub, 0), prompt_of(stub, 1)
    assert "## Hidden Intent Status Snapshot" in first and '<file path="plan.md">\ntea plan\n</file>' in first
    assert f"<c2>\n<content>\n{REVIEW}\n</content>\n<decision>\nYES or NO\n</decision>\n</c2>" in first
    assert "## Hidden Intents Still Not Provided" in second and "Who reviews it?" in second
    assert all(r["temperature"] == 0.1 for r in stub.requests)  # the judge stage
    assert judge.gateway.usage.by_actor()["user.ep"].calls == 2


def test_unreadable_answers_and_failed_calls_are_failures_never_passes(stub: OpenAIStub) -> None:
    # c1 echoes the template, c2 is missing; then the provider refuses the request (400).
    stub.script(ok(decisions("YES or NO")), http_error(400, "bad request"))
    judge = LLMIntentJudge(gateway(stub))
    verdicts = judge.completion("reply", {}, [BUDGET, REVIEW])
    assert [(v.yes, v.failed) for v in verdicts] == [(False, True), (False, True)]
    refused = judge.clarification("reply", [BUDGET, REVIEW])
    assert all(v.failed and not v.yes for v in refused)
    assert refused[0].reason == "judge call failed: http_error"
    assert judge.gateway.usage.total().failures == 1
    assert judge.completion("reply", {}, []) == [] and stub.request_count == 2  # nothing to judge: no call


def test_the_rubric_judge_reads_scores(stub: OpenAIStub) -> None:
    stub.script(ok(decisions("NO", "YES", tag="score")))
    judge = LLMRubricJudge(gateway(stub), actor="grader")
    verdicts = judge.judge([BUDGET], "<turn>history</turn>", ["First", "Second"])
    assert [v.yes for v in verdicts] == [False, True] and not any(v.failed for v in verdicts)
    prompt = prompt_of(stub, 0)
    assert "You are a strict evaluator." in prompt and "c1. First\nc2. Second" in prompt
    assert "<history>\n<turn>history</turn>\n</history>" in prompt


def test_the_user_voice_words_the_message_and_falls_back_visibly(stub: OpenAIStub) -> None:
    stub.script(ok('"Please keep it under 250 dollars."'), http_error(500), http_error(400))
    gw = gateway(stub)
    voice = LLMUserVoice(gw, actor="user.ep")
    assert voice.answer("What budget?", [BUDGET]) == "Please keep it under 250 dollars."
    request = stub.requests[0]
    assert request["temperature"] == 0.0  # the user stage
    assert request["messages"][0]["role"] == "system" and BUDGET in request["messages"][1]["content"]
    # A 500 (not retried: max_retries=0) and then a 400: the template speaks, and it is recorded.
    assert voice.provide("Done.", REVIEW) == "One more thing: Send the draft to Priya for review."
    assert (
        voice.answer("What budget?", [BUDGET])
        == "To answer your question: Keep the budget under 250 dollars."
    )
    records = gw.usage.fallback_records()
    assert [(r.stage, r.actor, r.reason) for r in records] == [
        (Stage.USER, "user.ep", "http_error"),
        (Stage.USER, "user.ep", "http_error"),
    ]
    assert gw.usage.total().fallbacks == 2


def test_a_session_turn_runs_on_the_llm_judges(stub: OpenAIStub) -> None:
    gw = gateway(stub)
    judge, voice = LLMIntentJudge(gw), LLMUserVoice(gw)
    tracker = SessionTracker.for_intents([BUDGET, REVIEW, NAMING])
    # Stage 1: budget YES, the others NO; stage 2 on the two left: none; the user provides one.
    stub.script(
        ok(decisions("YES", "NO", "NO")), ok(decisions("NO", "garbled")), ok("Also send it to Priya.")
    )
    outcome = assess_reply(
        tracker, turn=1, reply="Kept under 250 dollars.", files={}, judge=judge, voice=voice, max_turns=4
    )
    assert outcome.kind == "provide" and outcome.provided == 1 and outcome.message == "Also send it to Priya."
    assert outcome.judge_failures == 1
    assert [(r.status, r.judge, r.judge_failures) for r in tracker.results()] == [
        ("completed", "llm", 0),
        ("provided", "llm", 0),
        ("open", "llm", 1),
    ]
    # Stage 2's prompt only listed the intents still open after stage 1.
    assert BUDGET not in prompt_of(stub, 1) and NAMING in prompt_of(stub, 1)
    # Turn 2: the naming intent is met; every intent is terminal and the assistant replied: done.
    stub.script(ok(decisions("YES")))
    final = assess_reply(
        tracker, turn=2, reply="Saved as 2024-05-01_tea.md.", files={}, judge=judge, voice=voice, max_turns=4
    )
    assert final.done and final.reason == "complete" and stub.pending == 0


def test_grading_with_the_llm_rubric_judge(stub: OpenAIStub) -> None:
    stub.script(ok(decisions("YES", tag="score") + "<c2><score>perhaps</score></c2>"))
    spec = GradingSpec(
        task_id="t",
        hidden_intents=(BUDGET,),
        checklist=(
            CriterionSpec(criterion="Budget respected", weight=3),
            CriterionSpec(criterion="Draft sent"),
        ),
    )
    session = SessionEnded(
        episode_id="ep",
        task_id="t",
        reason="complete",
        turns=(TurnRecord(turn=1, role="assistant", text="Kept under 250 dollars."),),
    )
    grade = grade_session(
        spec,
        session,
        [],
        None,
        {},
        rubric=LLMRubricJudge(gateway(stub)),
        rule_runner=lambda source, history: RuleRun(None, "unused"),
    )
    assert [(c.passed, c.error is None) for c in grade.criteria] == [(True, True), (False, False)]
    assert grade.comp == pytest.approx(3 / 4) and grade.judge_failures == 1
    assert "Kept under 250 dollars." in prompt_of(stub, 0)
