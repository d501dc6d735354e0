"""LLM minds for town agents, for real through litellm against a local OpenAI-compatible stub.

A valid answer is what the agent does; an invalid, failed or late one falls back to the schedule
mind's answer (or the memory heuristics, or the templated lines), recorded by the gateway and
counted on the agent's state: never a crash, never a silent default.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.bus import Bus
from actors.llm import LLMGateway, Stage
from actors.runtime import Host, HostConfig
from actors.town import (
    TICKS_TOPIC,
    LLMMindSettings,
    TownClient,
    TownConfig,
    agent_address,
    embedded_town,
    ensure_config,
    llm_mind_factory,
    spawn_town,
)
from messages.town import Decision, GetMindState, InjectEvent, MindStateData, TickCompleted
from tests.conftest import wait_until
from tests.support.openai_stub import OpenAIStub, Reply, http_error, json_reply, ok, slow
from tests.support.topics import topic_messages
from world import AgentMindState, MemoryStream, Town, TownDefinition, parse_town
from world.memory import importance

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

ANN = agent_address("ann")


def gateway(stub: OpenAIStub, **overrides: Any) -> LLMGateway:
    return LLMGateway(stub.config(**{"timeout": 5.0, "max_retries": 1, **overrides}))


def only(*stages: Stage) -> LLMMindSettings:
    return LLMMindSettings(stages=frozenset(stages))


def tea_town(*, ben: bool = False) -> TownDefinition:
    """A cafe X, Ann's home Y next to it and a square; Ann (and Ben, both living at X) take tea at X."""
    locations = [
        {"name": "X", "type": "cafe", "x": 0, "y": 0, "width": 3, "height": 3, "capacity": 8},
        {"name": "Y", "type": "home", "x": 4, "y": 0, "width": 3, "height": 3, "capacity": 4},
        {"name": "Square", "type": "square", "x": 0, "y": 4, "width": 7, "height": 3, "capacity": 40},
    ]
    tea = [{"start": "06:00", "location": "X", "action": "having tea"}]
    agents = [
        {
            "name": "Ann Lee",
            "age": 30,
            "home": "X" if ben else "Y",
            "interests": ["tea", "birds"],
            "unspoken_goal": "open a bookshop",
            "schedule": [
                {
                    "start": "06:00",
                    "location": "X",
                    "action": "having tea",
                    "alternatives": [{"location": "Square", "action": "stretching"}],
                }
            ],
        }
    ]
    if ben:
        agents.append({"name": "Ben Hu", "age": 41, "home": "X", "interests": ["birds"], "schedule": tea})
    definition = parse_town(
        {"name": "Tea", "width": 12, "height": 12, "locations": locations, "agents": agents}
    )
    assert definition.agents[0].slug == "ann-lee"
    return definition


def ann(town: Town) -> AgentMindState:
    return town.mind_states["ann-lee"]


def reasons(gw: LLMGateway) -> list[tuple[str, str, str]]:
    return [(str(r.stage), r.actor, r.reason) for r in gw.usage.fallback_records()]


# ---------------------------------------------------------------- action choice


def test_a_valid_choice_is_what_the_agent_does(stub: OpenAIStub) -> None:
    gw = gateway(stub)
    town = Town(tea_town(), seed=1, mind_factory=llm_mind_factory(gw, only(Stage.ACTION)))
    stub.script(json_reply({"location": "square", "action": "feeding the pigeons", "reason": "sunny"}))
    report = town.step()[0]
    assert report.missed == []
    decision = ann(town).last_decision
    assert decision == Decision(tick=0, action="feeding the pigeons", target="Square", mind="llm")
    town.step(3)  # the same slot of the day: the choice holds without asking again
    agent = town.state.agents["ann-lee"]
    assert (agent.location, agent.action) == ("Square", "feeding the pigeons")
    assert stub.request_count == 1
    (request,) = stub.requests
    assert request["temperature"] == 0.7  # the paper's action stage
    prompt = request["messages"][-1]["content"]
    assert "Plausible now:" in prompt  # the slot's activity, its alternative, home
    for option in ("having tea at X", "stretching at Square", "resting at home at Y"):
        assert option in prompt
    assert "Square (square)" in prompt  # the town's real places are listed
    assert "bookshop" not in json.dumps(request)  # the unspoken goal never reaches a prompt
    assert ann(town).fallbacks == {}
    assert gw.usage.total().fallbacks == 0


def schedule_twin(town: Town, ticks: int) -> Town:
    twin = Town(town.definition, seed=town.seed)
    twin.step(ticks)
    return twin


def test_an_unknown_place_falls_back_to_the_schedule_and_is_counted(stub: OpenAIStub) -> None:
    gw = gateway(stub)
    town = Town(tea_town(), seed=1, mind_factory=llm_mind_factory(gw, only(Stage.ACTION)))
    stub.script(json_reply({"location": "The Moon", "action": "flying"}))
    report = town.step()[0]
    assert report.missed == []  # the agent answered: with its schedule
    decision = ann(town).last_decision
    assert decision is not None and decision.mind == "llm-fallback"
    assert report.digest == schedule_twin(town, 1).digest()  # exactly the schedule town
    assert ann(town).fallbacks == {"action": 1}
    assert reasons(gw) == [("action", "agent.ann-lee", "invalid_location")]
    assert gw.usage.by_actor()["agent.ann-lee"].fallbacks == 1
    assert stub.request_count == 1  # an invalid place is not "repaired": it is not a format error


@pytest.mark.parametrize(
    ("replies", "reason", "requests"),
    [
        ((http_error(429), http_error(429)), "rate_limited", 2),  # retried once, then given up
        ((http_error(400, "bad request"),), "http_error", 1),  # a client error is not retried
        ((ok("I think I'll go out."), ok("still no JSON")), "invalid_json", 2),  # one repair
        ((json_reply({"location": "X"}), json_reply({"where": "X"})), "invalid_schema", 2),
    ],
)
def test_a_failing_model_still_gives_a_valid_decision(
    stub: OpenAIStub, replies: tuple[Reply, ...], reason: str, requests: int
) -> None:
    gw = gateway(stub)
    town = Town(tea_town(), seed=1, mind_factory=llm_mind_factory(gw, only(Stage.ACTION)))
    stub.script(*replies)
    report = town.step()[0]
    twin = schedule_twin(town, 1)
    assert report.missed == [] and report.digest == twin.digest()
    decision, scheduled = ann(town).last_decision, ann(twin).last_decision
    assert decision is not None and scheduled is not None
    assert (decision.action, decision.target, decision.mind) == (
        scheduled.action,
        scheduled.target,
        "llm-fallback",
    )
    assert ann(town).fallbacks == {"action": 1}
    assert reasons(gw) == [("action", "agent.ann-lee", reason)]
    assert stub.request_count == requests
    assert gw.usage.total().failures == 1


def test_a_failed_slot_is_asked_again_next_tick_and_news_reopens_a_chosen_one(stub: OpenAIStub) -> None:
    gw = gateway(stub)
    town = Town(tea_town(), seed=1, mind_factory=llm_mind_factory(gw, only(Stage.ACTION)))
    stub.script(http_error(400), json_reply({"location": "Y", "action": "reading"}))
    town.step(2)
    assert ann(town).last_decision == Decision(tick=1, action="reading", target="Y", mind="llm")
    assert ann(town).fallbacks == {"action": 1}
    town.inject(InjectEvent(kind="celebration", description="a street festival begins"))
    stub.script(json_reply({"location": "Square", "action": "joining the festival"}))
    town.step()
    assert ann(town).last_decision == Decision(
        tick=2, action="joining the festival", target="Square", mind="llm"
    )
    assert "street festival" in stub.requests[-1]["messages"][-1]["content"]


# ---------------------------------------------------------------- importance and reflection


def test_importance_is_rated_by_the_model_with_a_visible_fallback(stub: OpenAIStub) -> None:
    gw = gateway(stub)
    town = Town(tea_town(), seed=1, mind_factory=llm_mind_factory(gw, only(Stage.IMPORTANCE)))
    stub.script(json_reply({"scores": [7, 2]}))  # tick 0: the day's plan and the first observation
    town.step()
    items = ann(town).memory.items
    assert [(m.kind, m.importance) for m in items] == [("plan", 7), ("observation", 2)]
    request = stub.requests[0]
    assert (request["temperature"], request["max_tokens"]) == (0.1, 50)
    assert "poignancy" in request["messages"][-1]["content"]
    stub.script(json_reply({"scores": [9, 9, 9]}))  # tick 1 adds one memory: a wrong count
    town.step()
    last = ann(town).memory.items[-1]
    assert last.importance == importance(last.text)  # the keyword heuristic, and counted
    assert ann(town).fallbacks == {"importance": 1}
    assert reasons(gw) == [("importance", "agent.ann-lee", "wrong_count")]


def test_reflections_are_written_by_the_model_with_a_visible_fallback(stub: OpenAIStub) -> None:
    gw = gateway(stub)
    d = tea_town()
    minds = {"ann-lee": AgentMindState(slug="ann-lee", memory=MemoryStream(reflection_every=2))}
    town = Town(d, seed=1, mind_factory=llm_mind_factory(gw, only(Stage.REFLECTION)), minds=minds)
    stub.script(ok("  I start every day\nwith tea at X, and I like it. "))
    town.step(2)  # the second observation triggers a reflection
    (reflection,) = [m for m in ann(town).memory.items if m.kind == "reflection"]
    assert reflection.text == "Reflection: I start every day with tea at X, and I like it."
    request = stub.requests[0]
    assert request["temperature"] == 0.5
    assert "06:00 at Y: sleeping" in request["messages"][-1]["content"]
    stub.script(http_error(429), http_error(429))
    town.step(2)
    second = [m for m in ann(town).memory.items if m.kind == "reflection"][-1]
    assert second.text.startswith("Reflection: lately I have mostly been at")  # the heuristic
    assert ann(town).fallbacks == {"reflection": 1}
    assert reasons(gw) == [("reflection", "agent.ann-lee", "rate_limited")]


# ---------------------------------------------------------------- conversations


def test_conversations_are_worded_by_the_model_or_keep_their_template(stub: OpenAIStub) -> None:
    gw = gateway(stub)
    d = tea_town(ben=True)
    minds = llm_mind_factory(gw, only(Stage.CONVERSATION))
    town = Town(d, seed=5, dialogue=minds.dialogue)
    reference = Town(d, seed=5)
    good = {
        "lines": [
            {"speaker": "Ann", "text": "Did you see the herons this morning?"},
            {"speaker": "Ben Hu", "text": "Two of them, by the river."},
            {"speaker": "Ann Lee", "text": "We should count them on Sunday."},
        ]
    }
    stub.script(json_reply(good), json_reply({"lines": [{"speaker": "Carl", "text": "Hi"}] * 2}))
    while len(town.state.conversations) < 2:
        town.step()
        reference.step()
        assert town.tick < 60
    first, second = town.state.conversations
    ref_first, ref_second = reference.state.conversations
    assert (first.tick, first.topic, first.participants) == (
        ref_first.tick,
        ref_first.topic,
        ref_first.participants,
    )
    assert first.lines == (
        "Ann Lee: Did you see the herons this morning?",
        "Ben Hu: Two of them, by the river.",
        "Ann Lee: We should count them on Sunday.",
    )
    assert second == ref_second  # an unknown speaker: the templated lines, and counted
    assert reasons(gw) == [("conversation", "agent.ann-lee", "invalid_speaker")]
    prompt = stub.requests[0]["messages"][-1]["content"]
    opener = d.agent(first.participants[0]).name
    assert f"about {first.topic}" in prompt and f"{opener} speaks first" in prompt
    assert "bookshop" not in json.dumps(stub.requests)  # unspoken goals stay private
    assert stub.requests[0]["temperature"] == 0.8 and stub.requests[0]["max_tokens"] == 600
    town.step()  # the participants remember what was said
    remembered = [m.text for m in ann(town).memory.items if m.kind == "conversation"]
    assert any("herons" in text for text in remembered)


# ---------------------------------------------------------------- the actor town


def ask_mind(bus: Bus, slug: str) -> AgentMindState:
    reply = bus.ask(agent_address(slug), GetMindState(), timeout=10)
    assert isinstance(reply, MindStateData)
    return AgentMindState.model_validate_json(reply.data)


def completions(bus: Bus) -> list[TickCompleted]:
    return topic_messages(bus, TICKS_TOPIC, TickCompleted)


def test_actor_town_with_llm_minds_keeps_the_schedule_in_time_when_slow_and_chooses_when_fast(
    bus: Bus, stub: OpenAIStub
) -> None:
    definition = embedded_town()
    slugs = definition.slugs
    gw = gateway(stub, max_retries=0)
    # The minds give up 1 s before the world does: room for a loaded test machine.
    minds = llm_mind_factory(gw, LLMMindSettings(stages=frozenset({Stage.ACTION}), deadline_margin=1.0))
    config, _ = ensure_config(
        bus,
        TownConfig(
            definition=definition, seed=42, ticks_per_second=0.0, start_paused=True, decision_timeout=2.5
        ),
    )
    host = Host(bus, HostConfig(block_ms=50, pool_size=len(slugs)), name="llm-town")
    spawn_town(host, config, roles=("clock", "world", "agents"), mind_factory=minds, dialogue=minds.dialogue)
    host.start()
    try:
        client = TownClient(bus, timeout=20)
        # A model slower than the world waits: every agent answers in time, with its schedule.
        late_answer = json.dumps({"location": "Temple", "action": "too late"})
        stub.script(*[slow(late_answer, hold=3.0)] * len(slugs))
        client.step(1, wait=30)
        (done,) = completions(bus)
        assert done.missed == ()  # nobody missed the world's deadline...
        assert done.digest == Town(definition, seed=42).step(1)[0].digest  # ...and it is the schedule town
        late = gw.usage.fallback_records()
        assert sorted(r.actor for r in late) == sorted(agent_address(s) for s in slugs)
        assert {(r.stage, r.reason) for r in late} == {(Stage.ACTION, "deadline")}
        for slug in slugs:
            mind = ask_mind(bus, slug)
            assert mind.fallbacks == {"action": 1}
            assert mind.last_decision is not None and mind.last_decision.mind == "llm-fallback"
        # The late answers still arrive and are accounted (then dropped: their tick is gone).
        wait_until(lambda: minds.calls_in_flight == 0, timeout=10, what="the late answers")
        assert gw.usage.total().calls == len(slugs)

        stub.script(*[json_reply({"location": "Town Park", "action": "taking a walk"})] * len(slugs))
        client.step(1, wait=30)
        assert [c.missed for c in completions(bus)] == [(), ()]
        assert {a.target for a in client.state().agents} == {"Town Park"}
        for slug in slugs:
            mind = ask_mind(bus, slug)
            assert mind.last_decision == Decision(
                tick=1, action="taking a walk", target="Town Park", mind="llm"
            )
            assert mind.fallbacks == {"action": 1}
    finally:
        host.stop(drain_timeout=5)
