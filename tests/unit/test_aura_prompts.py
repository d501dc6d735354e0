"""The LLM backend's prompts: lean (the scene once, tool purposes not schemas, the planner without
the whole scene, the answer with the trace summary), and each stage still spells out the JSON its
backend parses."""

from __future__ import annotations

from typing import Any

import pytest

from actors.aura import _prompts as prompts
from actors.aura._llm_backend import CritiqueOut, IntentOut, PlanListOut, PlanOut
from messages.aura import IntentFrame, ProbeStep
from tests.conftest import aura_release_json
from world.aura import AnswerRequest, PlanRequest, RegistryProbes, SceneView, ToolInfo, scene_view, summarise
from world.probes import agent_state_registry, scene_from_aura_v2

pytestmark = pytest.mark.aura_release  # every test reads the release's cafe scene

QUERY = "Where's Lin Wei?"
FRAME = IntentFrame(
    literal_need="Lin Wei's location",
    implicit_needs=("whether Lin Wei is free to talk",),
    gap=0.6,
    recommended_probes=("agent.private_state",),
    alert=True,
    rationale="where-is usually means is-she-free",
    subject="Lin Wei",
)
STEP = ProbeStep(
    step=1,
    tool="agent.private_state",
    args={"agent_name": "Lin Wei"},
    status="ok",
    result={"agent": "Lin Wei", "availability": "busy", "emotional_state": "cheerful"},
)


@pytest.fixture(scope="module")
def cafe() -> tuple[SceneView, list[ToolInfo]]:
    data: dict[str, Any] = aura_release_json("implicit_intent_queries_v2_AB.json")
    scene = scene_from_aura_v2(data["scenes"]["A_cafe_morning"], scene_id="A")
    tools = RegistryProbes(agent_state_registry(), scene, "env:the user").tools()
    return scene_view(scene, "the user", QUERY), tools


def _user(messages: list[dict[str, str]]) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def _system(messages: list[dict[str, str]]) -> str:
    return next(m["content"] for m in messages if m["role"] == "system")


def test_every_stage_spells_out_the_json_its_backend_parses(cafe: tuple[SceneView, list[ToolInfo]]) -> None:
    view, tools = cafe
    request = AnswerRequest(QUERY, view, FRAME, (STEP,), summarise([STEP]), None)
    for messages, model in (
        (prompts.intent_messages(QUERY, view, tools), IntentOut),
        (prompts.plan_messages(PlanRequest(QUERY, view, tuple(tools), (), 3, FRAME)), PlanOut),
        (prompts.plan_all_messages(QUERY, view, tools, 3), PlanListOut),
        (prompts.critique_messages(request, "She is at the cafe."), CritiqueOut),
    ):
        system = _system(messages)
        assert "ONE JSON object" in system
        assert all(f'"{field}"' in system for field in model.model_fields), (model.__name__, system)


def test_the_scene_is_packed_once_grouped_by_place(cafe: tuple[SceneView, list[ToolInfo]]) -> None:
    view, tools = cafe
    request = AnswerRequest(QUERY, view, FRAME, (STEP,), summarise([STEP]), None)
    for messages in (prompts.intent_messages(QUERY, view, tools), prompts.answer_messages(request)):
        user = _user(messages)
        for agent in view.agents:
            assert user.count(f"{agent.name} ({agent.action})") == 1
        places = {a.location for a in view.agents}
        assert sum(line.split(":")[0] in places for line in user.splitlines()) == len(places)
        assert "None" not in user and "[]" not in user and "unknown" not in user


def test_the_intent_prompt_lists_tool_purposes_and_inline_examples_not_schemas(
    cafe: tuple[SceneView, list[ToolInfo]],
) -> None:
    view, tools = cafe
    user = _user(prompts.intent_messages(QUERY, view, tools))
    for tool in tools:
        assert f"- {tool.name}: {tool.description}" in user
    assert "properties" not in user and "agent_name" not in user  # no schema, no arguments
    for example in prompts.FEW_SHOT:
        assert f'"{example["query"]}" {example["frame"]["gap"]} -> ' in user  # in its rubric tier
    assert user.rstrip().endswith(f"Question: {QUERY}")


def test_a_framed_planner_sees_its_needs_shortlist_and_trace_not_the_scene(
    cafe: tuple[SceneView, list[ToolInfo]],
) -> None:
    view, tools = cafe
    user = _user(prompts.plan_messages(PlanRequest(QUERY, view, tuple(tools), (STEP,), 2, FRAME)))
    assert view.summary not in user and FRAME.rationale not in user
    assert all(a.action not in user for a in view.agents)  # who is where, not what they do
    assert "Sunrise Cafe: Lin Wei, Zhang Hao, Chen Mei" in user
    assert "whether Lin Wei is free to talk" in user
    assert "Shortlisted tools: agent.private_state(agent_name)" in user
    assert "agent.belief_about" not in user
    assert summarise([STEP]) in user and "{" not in user  # the summary, not the raw result
    assert "Steps left: 2" in user


def test_a_planner_without_a_frame_sees_every_tool_with_its_purpose(
    cafe: tuple[SceneView, list[ToolInfo]],
) -> None:
    view, tools = cafe
    user = _user(prompts.plan_messages(PlanRequest(QUERY, view, tuple(tools), (), 3, None)))
    assert all(f"{t.name}(" in user and t.description in user for t in tools)
    assert all(f"{a.name} ({a.action})" in user for a in view.agents)
    assert view.summary not in user and "Observed: nothing yet" in user


def test_the_answer_carries_the_trace_summary_and_the_heads_up(
    cafe: tuple[SceneView, list[ToolInfo]],
) -> None:
    view, _ = cafe
    alert = "Heads-up: Lin Wei is busy right now."
    user = _user(
        prompts.answer_messages(AnswerRequest(QUERY, view, FRAME, (STEP,), summarise([STEP]), alert))
    )
    assert summarise([STEP]) in user and repr(STEP.result) not in user
    assert f"Open with: {alert}" in user and user.rstrip().endswith(f"Question: {QUERY}")
    bare = _user(prompts.answer_messages(AnswerRequest(QUERY, view, FRAME, (), "", None)))
    assert "whether Lin Wei is free to talk" in bare  # without a heads-up, the implicit needs
    vanilla = _user(
        prompts.answer_messages(AnswerRequest(QUERY, view, None, (), "", None, packed_scene=False))
    )
    assert vanilla == f"Question: {QUERY}"
