"""The probe registry actor on the bus (memory and a real Redis): inline scenes, the live town
(the world's scene, the agent's memories), the audit topic, and denied calls that never run."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from actors.bus import Bus
from actors.roles.registry import AUDIT_TOPIC, REGISTRY, RegistryActor
from actors.runtime import Host, HostConfig
from actors.town import TownClient, embedded_town
from messages.probes import (
    AuditRecord,
    GetProbeScene,
    ListTools,
    ProbeCall,
    ProbePolicy,
    ProbeResult,
    ProbeScene,
    ProbeSceneData,
    ToolList,
)
from messages.town import Rejected
from tests.conftest import aura_release_json, wait_until
from tests.support.topics import topic_messages
from tests.support.town import running_town
from world import Town
from world.probes import ProbeRegistry, ToolSpec, agent_state_registry, scene_from_aura_v2

TOWN_ROLES = ("clock", "world", "agents")


def scene_a() -> ProbeScene:
    """The release's v2 scene A (its tests are marked ``aura_release``)."""
    v2 = aura_release_json("implicit_intent_queries_v2_AB.json")
    return scene_from_aura_v2(v2["scenes"]["A_cafe_morning"], scene_id="A_cafe_morning")


@contextmanager
def hosted(bus: Bus, registry: RegistryActor, *, town: bool = False) -> Iterator[TownClient]:
    """A host with ``registry`` at ``registry`` and, if asked, the town's clock, world and agents."""
    if town:
        with running_town(bus, roles=TOWN_ROLES, actors={REGISTRY: lambda: registry}) as client:
            yield client
        return
    with Host(bus, HostConfig(block_ms=50, drain_timeout=5), name="registry-test") as host:
        host.spawn(lambda: registry, REGISTRY)
        yield TownClient(bus, timeout=20)


def audits(bus: Bus) -> list[AuditRecord]:
    return topic_messages(bus, AUDIT_TOPIC, AuditRecord)


def probe(bus: Bus, **fields: Any) -> ProbeResult:
    reply = bus.ask(REGISTRY, ProbeCall(**fields), timeout=20)
    assert isinstance(reply, ProbeResult), reply
    return reply


def spied_registry() -> tuple[ProbeRegistry, list[str]]:
    """The agent-state registry, its tools recording each execution (the host runs in-process)."""
    ran: list[str] = []
    base = agent_state_registry()

    def wrap(spec: ToolSpec[Any]) -> ToolSpec[Any]:
        def run(scene: ProbeScene, ctx: Any, args: Any) -> dict[str, Any]:
            ran.append(spec.name)
            return spec.run(scene, ctx, args)

        return dataclasses.replace(spec, run=run)

    return ProbeRegistry("agent_state", [wrap(s) for s in base.specs()]), ran


@pytest.mark.aura_release
def test_a_call_with_an_inline_scene_is_answered_and_audited(bus: Bus) -> None:
    with hosted(bus, RegistryActor()):
        out = probe(
            bus,
            tool="get_agent_private_state",
            args={"agent_name": "Lin Wei"},
            caller="env:Zhang Hao",
            registry="agent_state",
            scene=scene_a(),
        )
        assert out.status == "ok" and out.tool == "agent.private_state"
        assert out.result == {
            "agent": "Lin Wei",
            "availability": "busy",
            "emotional_state": "cheerful",
            "unspoken_goal": "hosting a small poetry reading tonight",
        }
        env_out = probe(bus, tool="world.location", caller="env", asker="Chen Mei", scene=scene_a())
        assert env_out.result is not None and env_out.result["location"] == "Sunrise Cafe"
        listed = bus.ask(REGISTRY, ListTools(registry="environment"), timeout=20)
        assert isinstance(listed, ToolList) and len(listed.allowed) == 8
        seen = wait_until(lambda: audits(bus) if len(audits(bus)) >= 2 else None, what="two audits")
    assert [a.model_dump() for a in seen] == [out.audit.model_dump(), env_out.audit.model_dump()]
    assert seen[0].caller == "env:Zhang Hao" and seen[0].disclosure == 3 and seen[0].result_chars > 0


def test_a_call_without_a_scene_reads_the_live_town(bus: Bus) -> None:
    reference = Town(embedded_town(), seed=42)
    reference.step(20)  # the actor town is the pure town tick for tick
    with hosted(bus, RegistryActor(), town=True) as client:
        client.step(20, wait=120)
        here = probe(bus, tool="get_location", caller="env", asker="Zhang Hao")
        assert here.status == "ok" and here.result is not None
        assert here.result["location"] == "Town Library"
        assert [a["name"] for a in here.result["agents_here"]] == ["Wang Jun"]
        # Memories come from the agent's own actor.
        memories = probe(bus, tool="memory.recent", args={"limit": 4}, caller="Zhang Hao")
        assert memories.status == "ok" and memories.result is not None
        expected = [i.text for i in reference.mind_states["zhang-hao"].memory.items[-4:]]
        assert [m["text"] for m in memories.result["memories"]] == expected
        truth = client.state("wang-jun", private=True).agents[0].private
        private = probe(
            bus, tool="agent.private_state", args={"agent_name": "wang"}, caller="env", registry="agent_state"
        )
        assert private.result is not None and truth is not None
        assert (private.result["availability"], private.result["rule"]) == (truth.availability, truth.rule)
        unknown = probe(bus, tool="agent.plan_of", args={"agent_name": "Nobody"}, registry="agent_state")
        assert unknown.status == "not_found" and "Lin Wei" in (unknown.error or "")
        # The world's scene is public unless the private part is asked for.
        public = bus.ask("world", GetProbeScene(asker="zhang-hao"), timeout=20)
        assert isinstance(public, ProbeSceneData) and not public.scene.has_private
        assert public.scene.asker == "Zhang Hao" and public.scene.time == "15:30"
        full = bus.ask("world", GetProbeScene(include_private=True), timeout=20)
        assert isinstance(full, ProbeSceneData) and full.scene.has_private
        refused = bus.ask("world", GetProbeScene(asker="Nobody"), timeout=20)
        assert isinstance(refused, Rejected) and "Nobody" in refused.reason


@pytest.mark.aura_release
def test_a_denied_call_is_audited_and_never_executed(bus: Bus) -> None:
    reg, ran = spied_registry()
    policy = ProbePolicy(deny=("agent.private_state",))
    actor = RegistryActor(registries={"agent_state": reg.with_policy(policy)}, timeout=1.0)
    with hosted(bus, actor):  # no town at all: a call that ran would have to read it
        denied = probe(
            bus,
            tool="get_agent_private_state",
            args={"agent_name": "Lin Wei"},
            caller="env",
            registry="agent_state",
        )
        assert denied.status == "denied" and denied.result is None and denied.disclosure == 0
        assert "agent.private_state" in (denied.error or "")
        # A query's forbidden tools narrow the registry's policy for one call.
        forbidden = probe(
            bus,
            tool="agent.belief_about",
            args={"believer": "Lin Wei", "target": "Zhang Hao"},
            registry="agent_state",
            scene=scene_a(),
            policy=ProbePolicy(deny=("get_agent_belief_about",)),
        )
        assert forbidden.status == "denied"
        assert ran == []
        allowed = probe(
            bus,
            tool="agent.all",
            registry="agent_state",
            scene=scene_a(),
            policy=ProbePolicy(deny=("*belief*",)),
        )
        assert allowed.status == "ok" and ran == ["agent.all"]
        # Without a scene and without a town, an allowed call is reported, not left hanging.
        lost = probe(bus, tool="agent.all", registry="agent_state")
        assert lost.status == "unavailable" and "did not answer" in (lost.error or "")
        seen = wait_until(lambda: audits(bus) if len(audits(bus)) >= 4 else None, what="four audits")
    assert [(a.tool, a.status) for a in seen] == [
        ("agent.private_state", "denied"),
        ("agent.belief_about", "denied"),
        ("agent.all", "ok"),
        ("agent.all", "unavailable"),
    ]
    assert seen[0].requested == "get_agent_private_state" and seen[0].args == {"agent_name": "Lin Wei"}
    assert (seen[0].result_chars, seen[0].disclosure) == (0, 0)
    assert ran == ["agent.all"]


@pytest.mark.parametrize("registry", ["environment", "agent_state"])
def test_listing_tools_reports_what_the_policy_allows(bus: Bus, registry: Any) -> None:
    actor = RegistryActor({"environment": ProbePolicy(allow=("world.*",)), "agent_state": ProbePolicy()})
    with hosted(bus, actor):
        listed = bus.ask(
            REGISTRY, ListTools(registry=registry, policy=ProbePolicy(deny=("*private*",))), timeout=20
        )
    assert isinstance(listed, ToolList)
    if registry == "environment":
        assert listed.allowed == [s.name for s in listed.specs if s.name.startswith("world.")]
    else:
        assert "agent.private_state" not in listed.allowed and len(listed.allowed) == 4
    assert [f["function"]["name"] for f in listed.functions] == [
        next(s.aliases[0] for s in listed.specs if s.name == n) for n in listed.allowed
    ]
