"""The benchmark judges: deterministic implicit-intent and factual judges, the LLM judge through a local
stub, counted failures, and agreement with the paper's own judge on its released answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.llm import GatewayConfig, LLMGateway
from bench.suite.datasets import ImplicitQuery, ImplicitScene, read_v2
from bench.suite.judges import (
    FactualClaimJudge,
    ImplicitIntentJudge,
    JudgeFailure,
    JudgeScore,
    JudgeTally,
    LLMFactualJudge,
    LLMImplicitJudge,
    band,
    cohen_kappa,
    judge_agreement,
)
from tests.conftest import AURA_RELEASE
from tests.support.openai_stub import OpenAIStub, json_reply, ok

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

QUERIES = AURA_RELEASE / "implicit_intent_queries_v2_AB.json"
RESULTS = AURA_RELEASE / "rq_intent_v2_multiseed_AB.json"
V2 = tuple[dict[int, ImplicitQuery], dict[str, ImplicitScene]]


@pytest.fixture(scope="module")
def v2() -> V2:
    return read_v2(QUERIES)


def score(v2: V2, qid: int, answer: str) -> JudgeScore:
    queries, scenes = v2
    query = queries[qid]
    result = ImplicitIntentJudge().judge(query, scenes[query.scene], answer)
    assert isinstance(result, JudgeScore), result
    return result


@pytest.mark.aura_release
def test_surfacing_the_implicit_need_scores_and_literal_only_does_not(v2: V2) -> None:
    # 103: "Is Chen Mei at the community garden?" -> she is at the cafe, do_not_disturb; the need is whether
    # it is a good moment to catch her: the state and the answer to that need earn full credit.
    full = score(
        v2,
        103,
        "No, Chen Mei is at the Sunrise Cafe, and she'd prefer not to be disturbed: not a good moment.",
    )
    assert (full.literal_score, full.implicit_score) == (1.0, 1.0)
    state_only = score(v2, 103, "No, Chen Mei is at the Sunrise Cafe, and she'd prefer not to be disturbed.")
    assert state_only.implicit_score == 0.6
    literal_only = score(v2, 103, "No, Chen Mei is at the Sunrise Cafe right now.")
    assert (literal_only.literal_score, literal_only.implicit_score) == (1.0, 0.0)
    # 101 needs availability and emotional state: one of two is partial credit.
    half = score(v2, 101, "Lin Wei is at the Sunrise Cafe; she is busy serving customers.")
    assert (half.literal_score, half.implicit_score) == (1.0, 0.6)
    both = score(v2, 101, "Lin Wei is at the cafe. She's busy but in a cheerful mood, so not free to chat.")
    assert both.implicit_score == 1.0


@pytest.mark.aura_release
def test_negation_and_goal_words(v2: V2) -> None:
    # 204: Chen Mei is open_to_chat; saying she is "not available" does not surface it.
    assert score(v2, 204, "No, Chen Mei is not available this afternoon.").implicit_score == 0.0
    assert score(v2, 204, "Yes, she is watering the beds and open to a chat.").implicit_score == 0.6
    walk_over = "Yes, she is watering the beds and open to a chat: walk over to the garden, you'll find her."
    assert score(v2, 204, walk_over).implicit_score == 1.0
    # 116: the unspoken goal "hosting a small poetry reading tonight", matched by its content words.
    assert score(v2, 116, "She serves customers and is hosting a poetry reading.").implicit_score == 1.0
    assert score(v2, 116, "She is serving customers at the cafe.").implicit_score == 0.0


@pytest.mark.aura_release
def test_second_order_rewards_the_belief_not_the_truth(v2: V2) -> None:
    # 125: Lin Wei believes Chen Mei is do_not_disturb (ground truth is do_not_disturb too);
    # 221: Wang Jun believes Zhang Hao is "available"; the truth is do_not_disturb.
    belief = score(v2, 221, "Yes: Wang Jun thinks Zhang Hao is available for a coffee break.")
    assert belief.implicit_score == 1.0
    truth = score(v2, 221, "Zhang Hao is absorbed in his manuscript and should not be disturbed.")
    assert truth.implicit_score == 0.0
    assert "truth do_not_disturb stated" in truth.rationale
    # 224: Chen Mei imagines Zhang Hao "calm"; he is really absorbed.
    assert score(v2, 224, "Chen Mei imagines he is feeling calm.").implicit_score == 1.0
    assert score(v2, 224, "He is absorbed in his translation.").implicit_score == 0.0


@pytest.mark.aura_release
def test_a_refusal_echoing_the_question_scores_nothing(v2: V2) -> None:
    refusal = score(
        v2,
        223,
        "The scene does not provide any information, so I cannot determine if Lin Wei assumes "
        "Chen Mei is open to chat.",
    )
    assert (refusal.literal_score, refusal.implicit_score) == (0.0, 0.0)


@pytest.mark.aura_release
def test_a_failing_judge_is_counted_never_passed(v2: V2) -> None:
    queries, scenes = v2
    judge = ImplicitIntentJudge()
    tally = JudgeTally()
    empty = judge.judge(queries[101], scenes["A_cafe_morning"], "   ")
    assert isinstance(empty, JudgeFailure) and empty.reason == "empty_answer"
    # A scene the loader would refuse (built unvalidated): the judge's crash is a counted failure.
    broken = ImplicitScene.model_construct(public_state={"Lin Wei": None}, private_state={}, summary="")
    crashed = judge.judge(queries[101], broken, "Lin Wei is at the cafe.")
    assert isinstance(crashed, JudgeFailure) and crashed.reason == "judge_error"
    for result in (empty, crashed, score(v2, 101, "Lin Wei is busy at the cafe.")):
        tally.add(result)
    assert (tally.scored, tally.failed, dict(tally.failures)) == (1, 2, {"empty_answer": 1, "judge_error": 1})


def test_factual_claims_are_classified() -> None:
    gold = {"lin_wei_location": "Sunrise Cafe", "time": "10:15 AM"}
    judge = FactualClaimJudge(known_values=["Sunrise Cafe", "Town Library", "Community Garden"])
    result = judge.judge(gold, "Lin Wei is at the Sunrise Cafe. It is 10:15 am. She likes poetry.")
    assert not isinstance(result, JudgeFailure)
    assert [c.label for c in result.claims] == ["CORRECT", "CORRECT", "UNVERIFIABLE"]
    assert (result.precision, result.completeness, result.fa) == (1.0, 1.0, 1.0)
    assert result.perfect and not result.hallucinated

    wrong = judge.judge(gold, "Lin Wei is at the Town Library. It is 2:30 PM.")
    assert not isinstance(wrong, JudgeFailure)
    assert [c.label for c in wrong.claims] == ["CONTRADICTED", "CONTRADICTED"]
    assert (wrong.precision, wrong.completeness, wrong.fa) == (0.0, 0.0, 0.0)

    mixed = judge.judge(gold, "Lin Wei is at the Sunrise Cafe! The time is 11:00.")
    assert not isinstance(mixed, JudgeFailure)
    assert (mixed.correct, mixed.contradicted, mixed.strict_precision) == (1, 1, 0.5)
    assert mixed.completeness == 0.5 and mixed.fa == pytest.approx(0.7 * 0.5 + 0.3 * 0.5)

    vague = judge.judge(gold, "She is somewhere in town.")
    assert not isinstance(vague, JudgeFailure)
    assert vague.strict_precision is None and vague.fa == 0.0  # excluded from strict precision
    assert isinstance(judge.judge(gold, ""), JudgeFailure)


def llm_judge(stub: OpenAIStub) -> LLMImplicitJudge:
    config = GatewayConfig(
        model="openai/stub-model",
        api_base=stub.url,
        api_key="sk-stub",
        timeout=2.0,
        max_retries=0,
        backoff=0.0,
    )
    return LLMImplicitJudge(LLMGateway(config))


@pytest.mark.aura_release
def test_llm_judge_through_the_stub(stub: OpenAIStub, v2: V2) -> None:
    queries, scenes = v2
    judge = llm_judge(stub)
    stub.script(json_reply({"literal_score": 1.0, "implicit_score": 0.6, "rationale": "mentions busy"}))
    result = judge.judge(queries[121], scenes["A_cafe_morning"], "Lin Wei thinks he is available.")
    assert result == JudgeScore(literal_score=1.0, implicit_score=0.6, rationale="mentions busy")
    request = stub.requests[0]
    assert request["temperature"] == 0.1  # Stage.JUDGE
    prompt = request["messages"][1]["content"]
    assert "Does Lin Wei think Zhang Hao is free" in prompt and "beliefs_about_others" in prompt
    assert "recorded belief" in request["messages"][0]["content"]

    tally = JudgeTally()
    stub.script(ok("a fine answer"), ok('{"literal_score": 3, "implicit_score": 0, "rationale": ""}'))
    failed = judge.judge(queries[121], scenes["A_cafe_morning"], "Lin Wei thinks he is available.")
    assert isinstance(failed, JudgeFailure) and failed.reason == "llm_invalid_schema"
    tally.add(result)
    tally.add(failed)
    assert (tally.scored, tally.failed) == (1, 1)
    assert judge.gateway.usage.total().failures == 1


def llm_factual_judge(stub: OpenAIStub) -> LLMFactualJudge:
    return LLMFactualJudge(llm_judge(stub).gateway)


def test_llm_factual_judge_through_the_stub(stub: OpenAIStub) -> None:
    judge = llm_factual_judge(stub)
    gold = {"location": "Sunrise Cafe", "time": "10:15 AM"}
    stub.script(
        json_reply(
            {
                "claims": [
                    {"text": "You are at the Sunrise Cafe.", "label": "CORRECT"},
                    {"text": "It is 11 AM.", "label": "CONTRADICTED"},
                    {"text": "It is sunny.", "label": "UNVERIFIABLE"},
                    {"text": "Lin Wei is serving.", "label": "CORRECT"},
                    {"text": "The cafe is full.", "label": "CORRECT"},
                ],
                "completeness": 0.5,
            }
        )
    )
    result = judge.judge(gold, "You are at the Sunrise Cafe. It is 11 AM. ...", (), "Where am I?")
    assert not isinstance(result, JudgeFailure), result
    assert (result.correct, result.contradicted, result.unverifiable) == (3, 1, 1)
    assert result.precision == result.strict_precision == 0.75 and result.completeness == 0.5
    assert result.fa == pytest.approx(0.7 * 0.75 + 0.3 * 0.5) and result.hallucinated
    assert [c.label for c in result.claims][:2] == ["CORRECT", "CONTRADICTED"]
    request = stub.requests[0]
    assert request["temperature"] == 0.1  # Stage.JUDGE
    prompt = request["messages"][1]["content"]
    assert "Where am I?" in prompt and "Sunrise Cafe" in prompt and "10:15 AM" in prompt
    assert "You are at the Sunrise Cafe. It is 11 AM." in prompt
    assert "CONTRADICTED" in request["messages"][0]["content"]

    # Nothing verifiable: no strict precision (excluded), P counts 0 in FA.
    stub.script(json_reply({"claims": [{"text": "Nice day.", "label": "UNVERIFIABLE"}], "completeness": 0}))
    vague = judge.judge(gold, "Nice day.", (), "Where am I?")
    assert not isinstance(vague, JudgeFailure)
    assert vague.strict_precision is None and vague.fa == 0.0 and not vague.hallucinated


def test_llm_factual_judge_invalid_twice_is_a_counted_failure(stub: OpenAIStub) -> None:
    judge = llm_factual_judge(stub)
    gold = {"location": "Sunrise Cafe"}
    tally = JudgeTally()
    stub.script(
        ok("the answer is fine"),
        json_reply({"claims": [{"text": "x", "label": "TRUE"}], "completeness": 0.7}),
    )
    failed = judge.judge(gold, "You are at the cafe.", (), "Where am I?")
    assert isinstance(failed, JudgeFailure) and failed.reason == "llm_invalid_schema"
    assert stub.request_count == 2  # one repair call, then give up
    tally.add(failed)
    # An unscripted request (HTTP 400) also fails, never passes; an empty answer is not sent at all.
    assert isinstance(judge.judge(gold, "You are at the cafe.", (), "Where am I?"), JudgeFailure)
    assert isinstance(judge.judge(gold, "  ", (), "Where am I?"), JudgeFailure)
    assert (tally.scored, tally.failed) == (0, 1)
    assert judge.gateway.usage.total().failures >= 2


def test_band_and_kappa() -> None:
    assert [band(x) for x in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)] == [0.0, 0.0, 0.5, 0.5, 1.0, 1.0]
    assert cohen_kappa([(1, 1), (0, 0)]) == 1.0
    # Hand-computed: po = 0.5, pe = 0.5 -> kappa 0.
    assert cohen_kappa([(1, 1), (1, 0), (0, 1), (0, 0)]) == 0.0


@pytest.mark.aura_release
def test_agreement_with_the_papers_judge() -> None:
    report = judge_agreement(Path(RESULTS), Path(QUERIES))
    assert (report.cells, report.failures) == (750, 0)
    assert set(report.by_subcategory) == {
        "availability",
        "mood",
        "appropriateness",
        "latent_goal",
        "second_order",
    }
    assert sum(report.implicit.confusion.values()) == 750
    assert all(i.n == 150 and lit.n == 150 for i, lit in report.by_subcategory.values())
    # Measured (all three seeds): implicit binary 0.959 (kappa 0.833), exact 0.744; literal exact 0.937,
    # binary 0.959. The held-out split (fit on seed 42) is in test_suite_judge_agreement.py.
    assert report.implicit.binary >= 0.94 and report.implicit.binary_kappa >= 0.80
    assert report.implicit.exact >= 0.70
    assert report.literal.exact >= 0.91 and report.literal.binary >= 0.93
    assert "implicit confusion" in report.format()
