"""The AURA pipeline offline: IntentFrame, budget, Explore, conditions, heads-up (no model, no bus)."""

from __future__ import annotations

from typing import Any

import pytest

from actors.town import embedded_town
from messages.aura import CONDITIONS, DIAGNOSTIC_CONDITIONS, GoldLabels, IntentFrame
from messages.probes import ProbePolicy, ProbeScene
from tests.conftest import aura_release_json
from world import Town
from world.aura import (
    OfflineBackend,
    RegistryProbes,
    ToolInfo,
    UnknownConditionError,
    answer_query,
    budget_for_gap,
    scene_view,
    whitelist,
)
from world.probes import agent_state_registry, environment_registry, scene_from_aura_v2, scene_from_town

USER = "the user"


def v2() -> dict[str, Any]:
    data: dict[str, Any] = aura_release_json("implicit_intent_queries_v2_AB.json")
    return data


@pytest.fixture(scope="module")
def cafe() -> ProbeScene:
    return scene_from_aura_v2(v2()["scenes"]["A_cafe_morning"], scene_id="A_cafe_morning")


def run(
    scene: ProbeScene,
    query: str,
    condition: str = "aura_intent",
    *,
    policy: ProbePolicy | None = None,
    gold: GoldLabels | None = None,
    asker: str = USER,
    registry: Any = None,
) -> Any:
    reg = registry or agent_state_registry()
    if policy is not None:
        reg = reg.with_policy(policy)
    probes = RegistryProbes(reg, scene, f"env:{asker}", asker=None)
    answer = answer_query(
        query, asker, condition, scene_view(scene, asker, query), probes, OfflineBackend(), gold=gold
    )
    return answer, probes


@pytest.mark.parametrize(
    ("gap", "max_steps", "budget"),
    [
        (0.0, 3, 0),
        (0.19, 3, 0),
        (0.2, 3, 1),
        (0.45, 3, 2),
        (0.6, 3, 3),
        (0.79, 10, 3),
        (0.8, 10, 5),
        (1.0, 3, 3),
        (1.0, 0, 0),
    ],
)
def test_the_gap_sets_a_budget_ceiling_truncated_by_max_steps(
    gap: float, max_steps: int, budget: int
) -> None:
    assert budget_for_gap(gap, max_steps) == budget


@pytest.mark.aura_release
def test_where_is_lin_wei_answers_her_location_with_a_heads_up_that_she_is_busy(cafe: ProbeScene) -> None:
    answer, _ = run(cafe, "Where's Lin Wei?")
    assert (
        cafe.agents["Lin Wei"].private is not None and cafe.agents["Lin Wei"].private.availability == "busy"
    )
    assert "Sunrise Cafe" in answer.text
    assert answer.text.startswith("Heads-up: Lin Wei is busy")
    assert answer.alerts and answer.frame is not None and answer.frame.gap >= 0.6
    assert [s.tool for s in answer.trace] == ["agent.private_state"]  # one targeted probe, then stop
    assert answer.budget == 3 and len(answer.trace) < answer.budget  # the budget is a ceiling


@pytest.mark.aura_release
@pytest.mark.parametrize("query", ["Where is Bob?", "Is Bob Smith free right now?", "who's Bob?"])
def test_a_question_about_someone_the_town_does_not_have_says_so(cafe: ProbeScene, query: str) -> None:
    answer, _ = run(cafe, query)
    assert answer.text.startswith("There is no one called Bob")
    assert "Lin Wei" in answer.text  # the people it does have


@pytest.mark.aura_release
@pytest.mark.parametrize(
    "query", ["Is it raining?", "Where is Lin Wei?", "Is Tuesday market day?", "Is Mr Lin free?"]
)
def test_words_that_are_not_strangers_are_not_taken_for_them(cafe: ProbeScene, query: str) -> None:
    answer, _ = run(cafe, query)
    assert "There is no one called" not in answer.text


@pytest.mark.aura_release
def test_no_heads_up_when_the_subject_is_free(cafe: ProbeScene) -> None:
    free = cafe.model_copy(deep=True)
    private = free.agents["Lin Wei"].private
    assert private is not None
    free.agents["Lin Wei"] = free.agents["Lin Wei"].model_copy(
        update={
            "private": private.model_copy(update={"availability": "available", "emotional_state": "relaxed"})
        }
    )
    answer, _ = run(free, "Where's Lin Wei?")
    assert "Sunrise Cafe" in answer.text and not answer.alerts and "Heads-up" not in answer.text


@pytest.mark.aura_release
def test_the_literal_condition_answers_from_the_scene_alone(cafe: ProbeScene) -> None:
    answer, probes = run(cafe, "Where's Lin Wei?", "literal")
    assert "Sunrise Cafe" in answer.text and not answer.trace and not probes.outcomes
    assert "busy" not in answer.text  # private state is never in the scene


@pytest.mark.aura_release
def test_a_denied_tool_is_never_executed_and_the_planner_never_sees_it(cafe: ProbeScene) -> None:
    answer, probes = run(cafe, "Where's Lin Wei?", policy=ProbePolicy(deny=("agent.private_*",)))
    assert all(o.tool != "agent.private_state" for o in probes.outcomes)
    assert "busy" not in answer.text and not answer.alerts


@pytest.mark.aura_release
@pytest.mark.parametrize("condition", CONDITIONS)
def test_every_condition_answers_and_only_diagnostics_read_gold(cafe: ProbeScene, condition: str) -> None:
    query = "Is now a good time to invite Lin Wei for coffee?"
    gold = GoldLabels(
        subcategory="appropriateness",
        implicit_need="Is Lin Wei free for coffee?",
        required_tools=("get_agent_private_state",),
    )
    with_gold, _ = run(cafe, query, condition, gold=gold)
    without, _ = run(cafe, query, condition)
    assert with_gold.text and with_gold.condition == condition
    if condition in DIAGNOSTIC_CONDITIONS:
        assert with_gold.diagnostics, "a diagnostic says what it read"
    else:
        assert not with_gold.diagnostics
        assert with_gold.model_dump() == without.model_dump()  # the gold labels changed nothing


@pytest.mark.aura_release
def test_oracle_intent_uses_the_gold_tools(cafe: ProbeScene) -> None:
    gold = GoldLabels(
        implicit_need="Does Zhang Hao think Chen Mei is free?", required_tools=("get_agent_belief_about",)
    )
    answer, _ = run(cafe, "Does Zhang Hao think Chen Mei is free to talk?", "oracle_intent", gold=gold)
    assert answer.frame is not None and answer.frame.backend == "oracle"
    assert answer.frame.recommended_probes == ("agent.belief_about",)
    assert [s.tool for s in answer.trace][:1] == ["agent.belief_about"]


@pytest.mark.aura_release
def test_a_second_order_question_is_answered_by_the_belief_not_the_truth(cafe: ProbeScene) -> None:
    # Zhang Hao believes Chen Mei is available (she is do_not_disturb): the belief is the answer,
    # and reading her private state would disclose what was never asked (the paper's rule).
    answer, probes = run(cafe, "Does Zhang Hao think Chen Mei is free to talk?")
    assert [s.tool for s in answer.trace] == ["agent.belief_about"]
    assert all(o.tool != "agent.private_state" for o in probes.outcomes)
    assert "Zhang Hao thinks Chen Mei is available" in answer.text
    assert "disturb" not in answer.text and not answer.alerts


@pytest.mark.aura_release
def test_fixed_probe_calls_every_tool_it_can_fill(cafe: ProbeScene) -> None:
    _, probes = run(cafe, "Where's Lin Wei?", "fixed_probe")
    assert {o.tool for o in probes.outcomes} >= {"agent.private_state", "agent.all"}


@pytest.mark.aura_release
def test_aura_no_probe_infers_a_frame_but_calls_nothing(cafe: ProbeScene) -> None:
    answer, probes = run(cafe, "Where's Lin Wei?", "aura_no_probe")
    assert answer.frame is not None and answer.budget == 0 and not probes.outcomes


@pytest.mark.aura_release
def test_an_unknown_condition_is_refused(cafe: ProbeScene) -> None:
    with pytest.raises(UnknownConditionError, match="unknown condition 'magic'"):
        run(cafe, "Where's Lin Wei?", "magic")


def test_recommended_probes_are_whitelisted_against_the_live_registry() -> None:
    tools = [ToolInfo("agent.private_state", "", {}, True, ("get_agent_private_state",))]
    frame = IntentFrame(
        literal_need="x",
        gap=0.7,
        recommended_probes=("get_agent_private_state", "web.search", "agent.private_state"),
    )
    assert whitelist(frame, tools).recommended_probes == ("agent.private_state",)


def test_the_live_town_answer_matches_the_town_state() -> None:
    definition = embedded_town()
    town = Town(definition, seed=0)
    town.step(9)
    scene = scene_from_town(definition, town.state, town.mind_states, asker="Zhang Hao")
    lin = scene.agents["Lin Wei"]
    answer, _ = run(scene, "Where is Lin Wei?", asker="Zhang Hao")
    assert lin.location is not None and lin.location in answer.text
    assert lin.private is not None
    busy = lin.private.availability not in ("available", "free", "open_to_chat", "idle", "relaxed")
    assert bool(answer.alerts) == busy


def test_the_environment_registry_answers_factual_questions() -> None:
    definition = embedded_town()
    town = Town(definition, seed=0)
    town.step(9)
    scene = scene_from_town(definition, town.state, town.mind_states, asker="Zhang Hao")
    answer, _ = run(scene, "What time is it?", registry=environment_registry(), asker="Zhang Hao")
    assert scene.time in answer.text
    assert answer.frame is not None and answer.frame.gap < 0.2 and answer.budget == 0


@pytest.mark.aura_release
def test_the_few_shot_examples_are_not_benchmark_queries() -> None:
    from actors.aura._prompts import FEW_SHOT

    queries: set[str] = set()
    for name in (
        "chat_queries.json",
        "privacy_distractor_queries.json",
        "implicit_intent_queries.json",
        "implicit_intent_queries_v2_AB.json",
    ):
        data = aura_release_json(name)
        queries |= {q["query"].strip().lower() for q in data["queries"]}
    assert len(queries) > 100
    for example in FEW_SHOT:
        assert str(example["query"]).strip().lower() not in queries
