"""The LLM judges of pi-Bench episodes, for real through litellm against a local OpenAI-compatible
stub: strict YES/NO reading, unreadable answers asked again fresh with backoff, failures counted,
never passed nor failed: a session ends in error and a grade is left out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.episodes.judges import LLMIntentJudge, LLMRubricJudge
from actors.llm import LLMGateway
from actors.llm._cache import DiskCache
from messages.episodes import CriterionSpec, GradingSpec, SessionEnded, TurnRecord
from tests.support.openai_stub import OpenAIStub, http_error, ok
from world.episodes.grading import RuleRun, grade_session
from world.episodes.protocol import SessionTracker, VerbatimUserVoice, assess_reply

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

BUDGET = "Keep the budget under 250 dollars"
REVIEW = "Send the draft to Priya for review"
NAMING = "Name the file 2024-05-01_tea.md"


def gateway(stub: OpenAIStub, **config: Any) -> LLMGateway:
    return LLMGateway(stub.config(**{"timeout": 2.0, "max_retries": 0, **config}))


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


def test_an_unreadable_answer_is_asked_again_fresh_and_the_cache_keeps_the_readable_one(
    stub: OpenAIStub, tmp_path: Path
) -> None:
    # First answer: c1 readable, c2 missing; the retry (not served from the cache) is read whole.
    stub.script(ok(decisions("YES")), ok(decisions("NO", "YES")))
    slept: list[float] = []
    cache = DiskCache(tmp_path)
    judge = LLMIntentJudge(LLMGateway(gateway(stub).config, cache), delays=(0.25, 0.5))
    judge.caller.sleep = slept.append
    verdicts = judge.completion("reply", {}, [BUDGET, REVIEW])
    assert [(v.yes, v.failed) for v in verdicts] == [(False, False), (True, False)]
    assert stub.request_count == 2 and slept == [0.25] and judge.caller.retries == 1
    # The cache holds the answer that was read, not the garbled one: a rerun asks nobody.
    stub.script()
    again = LLMIntentJudge(LLMGateway(gateway(stub).config, cache), delays=())
    assert [v.yes for v in again.completion("reply", {}, [BUDGET, REVIEW])] == [False, True]
    assert stub.request_count == 2


def test_answers_still_unreadable_after_every_retry_are_failures_never_passes(stub: OpenAIStub) -> None:
    # c1 echoes the template, c2 is missing; then the provider refuses twice (400).
    stub.script(ok(decisions("YES or NO")), http_error(400, "bad request"), http_error(400, "bad request"))
    slept: list[float] = []
    judge = LLMIntentJudge(gateway(stub), delays=(0.1, 0.2))
    judge.caller.sleep = slept.append
    verdicts = judge.completion("reply", {}, [BUDGET, REVIEW])
    assert [(v.yes, v.failed) for v in verdicts] == [(False, True), (False, True)]
    assert "after 3 attempts" in verdicts[0].reason and slept == [0.1, 0.2]
    assert judge.gateway.usage.total().failures == 2
    assert judge.completion("reply", {}, []) == [] and stub.request_count == 3  # nothing to judge: no call


def test_the_rubric_judge_reads_scores(stub: OpenAIStub) -> None:
    stub.script(ok(decisions("NO", "YES", tag="score")))
    judge = LLMRubricJudge(gateway(stub), actor="grader")
    verdicts = judge.judge([BUDGET], "<turn>history</turn>", ["First", "Second"])
    assert [v.yes for v in verdicts] == [False, True] and not any(v.failed for v in verdicts)
    prompt = prompt_of(stub, 0)
    assert "You are a strict evaluator." in prompt and "c1. First\nc2. Second" in prompt
    assert "<history>\n<turn>history</turn>\n</history>" in prompt


def test_a_session_turn_runs_on_the_llm_judges_and_the_user_speaks_the_intents_verbatim(
    stub: OpenAIStub,
) -> None:
    gw = gateway(stub)
    judge, voice = LLMIntentJudge(gw, delays=()), VerbatimUserVoice()
    tracker = SessionTracker.for_intents([BUDGET, REVIEW, NAMING])
    # Stage 1: budget YES, the others NO; stage 2 on the two left: none; the user provides one.
    stub.script(ok(decisions("YES", "NO", "NO")), ok(decisions("NO", "NO")))
    outcome = assess_reply(
        tracker, turn=1, reply="Kept under 250 dollars.", files={}, judge=judge, voice=voice, max_turns=4
    )
    assert outcome.kind == "provide" and outcome.provided == 1 and outcome.message == REVIEW
    assert [(r.status, r.judge) for r in tracker.results()] == [
        ("completed", "llm"),
        ("provided", "llm"),
        ("open", "llm"),
    ]
    # Stage 2's prompt only listed the intents still open after stage 1.
    assert BUDGET not in prompt_of(stub, 1) and NAMING in prompt_of(stub, 1)
    # Turn 2: the judge's answer cannot be read (no retries left): the session ends in error,
    # and the intent keeps its status: neither a YES nor a NO was read.
    stub.script(ok("<c1><decision>perhaps</decision></c1>"))
    final = assess_reply(
        tracker, turn=2, reply="Saved as 2024-05-01_tea.md.", files={}, judge=judge, voice=voice, max_turns=4
    )
    assert final.done and final.reason == "error" and final.judge_failures == 1
    assert tracker.results()[2].status == "open" and tracker.results()[2].judge_failures == 1


def test_grading_with_the_llm_rubric_judge_leaves_an_unreadable_grade_out(stub: OpenAIStub) -> None:
    answer = decisions("YES", tag="score") + "<c2><score>perhaps</score></c2>"
    stub.script(ok(answer), ok(answer))
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
        rubric=LLMRubricJudge(gateway(stub), delays=()),
        rule_runner=lambda source, histories: [RuleRun(None, "unused") for _ in histories],
    )
    # The whole-session verdict and the one turn's verdict (pi-Bench's reading) both came back
    # with c2 unreadable: no verdict of that answer is taken, neither reading's COMP counts, and
    # the grade says why.
    assert [(c.passed, c.passed_faithful, c.error is None) for c in grade.criteria] == [
        (False, False, False),
        (False, False, False),
    ]
    assert grade.comp is None and grade.comp_faithful is None and grade.judge_failures == 4
    assert grade.excluded == "the rubric judge answered nothing readable"
    assert "Kept under 250 dollars." in prompt_of(stub, 0)
