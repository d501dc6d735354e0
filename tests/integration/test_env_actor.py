"""The environment agent on the bus: a live town, a fixed scene, and the registry actor between."""

from __future__ import annotations

from typing import Any

import pytest

from actors.bus import Bus
from actors.roles.registry import AUDIT_TOPIC
from actors.town import embedded_town
from messages.aura import AnswerData, AskQuery
from messages.probes import AuditRecord
from messages.town import GetMindState, MindStateData, Rejected
from tests.conftest import aura_release_json
from tests.integration.test_town_actors import running_town
from tests.support.topics import topic_messages
from world import AgentMindState, Town
from world.aura import OfflineBackend, RegistryProbes, answer_query, scene_view
from world.probes import agent_state_registry, scene_from_aura_v2, scene_from_town


def audits(bus: Bus) -> list[AuditRecord]:
    return topic_messages(bus, AUDIT_TOPIC, AuditRecord)


def test_env_answers_from_the_live_town_like_the_pure_pipeline(bus: Bus) -> None:
    with running_town(bus, seed=0) as client:
        client.step(5, wait=60)  # 08:00: Zhang Hao writes at his desk (deep focus)
        reply = bus.ask("env", AskQuery(query="Where is Zhang Hao?", asker="Lin Wei"), timeout=30)
    assert isinstance(reply, AnswerData)
    town = Town(embedded_town(), seed=0)
    town.step(5)
    scene = scene_from_town(town.definition, town.state, town.mind_states, asker="Lin Wei")
    zhang = scene.agents["Zhang Hao"]
    assert zhang.private is not None and zhang.private.availability == "do_not_disturb"
    assert zhang.location is not None and zhang.location in reply.text
    assert reply.text.startswith("Heads-up: Zhang Hao is not to be disturbed")
    probes = RegistryProbes(agent_state_registry(), scene, "env:Lin Wei", asker="Lin Wei")
    pure = answer_query(
        "Where is Zhang Hao?",
        "Lin Wei",
        "aura_intent",
        scene_view(scene, "Lin Wei", "Where is Zhang Hao?"),
        probes,
        OfflineBackend(),
    )
    assert reply.text == pure.text and reply.trace == pure.trace
    records = audits(bus)
    assert [r.tool for r in records] == [s.tool for s in reply.trace]
    assert all(r.caller == "env:Lin Wei" for r in records)


@pytest.mark.aura_release
def test_env_answers_on_a_fixed_scene_and_the_registry_audits_every_probe(bus: Bus) -> None:
    data: dict[str, Any] = aura_release_json("implicit_intent_queries_v2_AB.json")
    scene = scene_from_aura_v2(data["scenes"]["B_library_afternoon"], scene_id="B")
    with running_town(bus, seed=0) as _:
        reply = bus.ask(
            "env", AskQuery(query="Is Zhang Hao free to talk?", asker="the user", scene=scene), timeout=30
        )
        refused = bus.ask("env", AskQuery(query="Where is Lin Wei?", asker="Nobody"), timeout=30)
    assert isinstance(reply, AnswerData)
    assert "Town Library" in reply.text and reply.alerts  # do_not_disturb in scene B
    assert [s.tool for s in reply.trace] == ["agent.private_state"]
    assert [r.status for r in audits(bus)] == ["ok"]
    # an asker the town does not know still gets an answer: the scene is public, memories are empty
    assert isinstance(refused, AnswerData | Rejected)


def test_an_exchange_is_remembered_by_the_asker_unless_read_only(bus: Bus) -> None:
    with running_town(bus, seed=0) as client:
        client.step(5, wait=60)
        quiet = bus.ask("env", AskQuery(query="Where is Zhang Hao?", asker="Lin Wei"), timeout=30)
        loud = bus.ask(
            "env", AskQuery(query="How is Wang Jun?", asker="Lin Wei", read_only=False), timeout=30
        )
        client.step(1, wait=60)
        events = client.state(events=20).events
        mind = bus.ask("agent.lin-wei", GetMindState(), timeout=10)
    assert isinstance(quiet, AnswerData) and isinstance(loud, AnswerData)
    assistant = [e for e in events if e.kind == "assistant"]
    assert len(assistant) == 1 and "How is Wang Jun?" in assistant[0].description
    assert assistant[0].participants == ("lin-wei",)
    assert isinstance(mind, MindStateData)
    memories = [m.text for m in AgentMindState.model_validate_json(mind.data).memory.items]
    assert any("How is Wang Jun?" in m for m in memories)
    assert not any("Where is Zhang Hao?" in m for m in memories)
