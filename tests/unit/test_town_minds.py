"""What ``auratown run --mind llm`` reports of its minds: the answers the minds used and the
gateway's fallbacks, by stage, reason and agent, as JSON figures and as the closing text block."""

from __future__ import annotations

from actors.llm import GatewayConfig, LLMGateway, Stage
from actors.town import agent_address, embedded_town, llm_mind_factory
from deploy.town_minds import Figures, mind_report, report_lines


def test_the_report_counts_answers_and_fallbacks_by_stage_reason_and_agent() -> None:
    definition = embedded_town()
    minds = llm_mind_factory(LLMGateway(GatewayConfig(model="openai/tiny", api_base="http://127.0.0.1:1/v1")))
    lin, wang = agent_address("lin-wei"), agent_address("wang-jun")
    for _ in range(3):
        minds.answers.add(Stage.ACTION, lin)
    minds.answers.add(Stage.CONVERSATION, lin)
    fallback = minds.gateway.record_fallback
    fallback(Stage.ACTION, wang, "deadline")
    fallback(Stage.IMPORTANCE, wang, "invalid_json")
    fallback(Stage.IMPORTANCE, lin, "invalid_json")
    fallback(Stage.CONVERSATION, wang, "rate_limited")

    report = mind_report(minds, definition)

    assert report.by_stage == {
        "action": Figures(answered=3, fallbacks=1),
        "importance": Figures(answered=0, fallbacks=2),
        "reflection": Figures(),
        "conversation": Figures(answered=1, fallbacks=1),
    }
    assert report.total == Figures(answered=4, fallbacks=4)
    assert report.by_reason == {"invalid_json": 2, "deadline": 1, "rate_limited": 1}
    # An agent's own questions only: the conversations are the world's.
    assert report.by_agent["Lin Wei"] == Figures(answered=3, fallbacks=1)
    assert report.by_agent["Wang Jun"] == Figures(answered=0, fallbacks=2)
    assert report.by_agent["Chen Mei"] == Figures()
    assert report.requests == 0 and report.still_running == 0

    text = "\n".join(report_lines(report))
    assert "minds: openai/tiny at http://127.0.0.1:1/v1" in text
    assert "  action              4      3         1       75%" in text
    assert "  reflection          0      0         0         -" in text
    assert "  all                 8      4         4       50%" in text
    assert "fallbacks by reason: invalid_json 2, deadline 1, rate_limited 1" in text
    assert "    Lin Wei           4      3         1       75%" in text
