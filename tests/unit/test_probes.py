"""The probe registries, pure: every tool on an AURA v2 scene and on a live town, the release's
names, JSON schemas, the allow/deny policy (a denied tool never runs), privacy of the public
tools, bad arguments, unknown tools and names, audits."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from actors.town import embedded_town
from messages import decode, encode
from messages.probes import (
    ProbeCall,
    ProbeOutcome,
    ProbePolicy,
    ProbeResult,
    ProbeScene,
    SceneAgent,
    ToolList,
    ToolSpecData,
)
from messages.town import InjectEvent
from tests.conftest import aura_release_json
from world import Town
from world.plans import day_plan
from world.probes import (
    ProbeRegistry,
    SceneError,
    ToolSpec,
    agent_state_registry,
    agent_state_tools,
    environment_registry,
    environment_tools,
    registry,
    scene_from_aura_v2,
    scene_from_town,
    scene_time,
)

ENV_NAMES = {
    "world.time": "get_time",
    "world.location": "get_location",
    "world.nearby_agents": "get_nearby_agents",
    "world.agents_summary": "get_all_agents",
    "memory.recent": "get_recent_memories",
    "world.events_recent": "get_recent_events",
    "agent.plan": "get_agent_plan",
    "world.location_info": "get_location_info",
}
AGENT_NAMES = {
    "agent.all": "get_all_agents",
    "agent.nearby": "get_nearby_agents",
    "agent.plan_of": "get_agent_plan",
    "agent.private_state": "get_agent_private_state",
    "agent.belief_about": "get_agent_belief_about",
}
PRIVATE_KEYS = {"availability", "emotional_state", "unspoken_goal", "rule", "private", "beliefs", "belief"}


def v2() -> Any:
    """The release's implicit-intent v2 set (tests that read it are marked ``aura_release``)."""
    return aura_release_json("implicit_intent_queries_v2_AB.json")


def v2_scene(scene_id: str = "A_cafe_morning", asker: str | None = None) -> ProbeScene:
    return scene_from_aura_v2(v2()["scenes"][scene_id], scene_id=scene_id, asker=asker)


@pytest.fixture(scope="module")
def town() -> Town:
    """15:30 on day 0: Zhang Hao and Wang Jun at the library have talked and hold beliefs about
    each other; an announcement was made at the cafe."""
    t = Town(embedded_town(), seed=42)
    t.step(9)
    t.inject(InjectEvent(kind="announcement", description="poetry night at seven", location="Sunrise Cafe"))
    t.step(11)
    return t


@pytest.fixture(scope="module")
def live(town: Town) -> ProbeScene:
    return scene_from_town(town.definition, town.state, town.mind_states, "Zhang Hao")


# ---------------------------------------------------------------- scenes


@pytest.mark.aura_release
def test_a_v2_scene_keeps_public_private_and_beliefs_apart() -> None:
    a = v2_scene()
    assert (a.time, a.day, a.source) == ("10:15", 0, "aura_v2:A_cafe_morning")
    assert set(a.agents) == {"Lin Wei", "Zhang Hao", "Chen Mei", "Wang Jun"}
    lin = a.agents["Lin Wei"]
    assert (lin.location, lin.action) == ("Sunrise Cafe", "serving customers")
    assert lin.private is not None and lin.private.unspoken_goal == "hosting a small poetry reading tonight"
    assert lin.beliefs["Chen Mei"].availability == "do_not_disturb"
    # The release's v2 plan tool leaked the unspoken goal; here a plan is the public activity only.
    assert [p.model_dump() for p in lin.plan] == [
        {"time": "10:15", "location": "Sunrise Cafe", "action": "serving customers"}
    ]
    assert set(a.locations) == {"Sunrise Cafe", "Town Library"}
    assert v2_scene("B_library_afternoon").time == "14:30"


@pytest.mark.aura_release
def test_a_v2_scene_can_take_its_places_from_a_town_map() -> None:
    scene = scene_from_aura_v2(v2()["scenes"]["A_cafe_morning"], definition=embedded_town())
    cafe = scene.locations["Sunrise Cafe"]
    assert (cafe.type, cafe.open_now) == ("cafe", True)
    assert len(scene.locations) == len(embedded_town().locations)


@pytest.mark.parametrize(
    ("text", "hhmm"),
    [
        ("Sunrise Cafe, 10:15 AM.", "10:15"),
        ("2:30 PM", "14:30"),
        ("12:05 am", "00:05"),
        ("at 18:45", "18:45"),
    ],
)
def test_scene_time_reads_12_and_24_hour_clocks(text: str, hhmm: str) -> None:
    assert scene_time(text) == hhmm


@pytest.mark.aura_release
def test_bad_v2_scenes_are_refused_with_a_reason() -> None:
    base = v2()["scenes"]["A_cafe_morning"]
    with pytest.raises(SceneError, match="no 'private_state'"):
        scene_from_aura_v2({k: v for k, v in base.items() if k != "private_state"})
    with pytest.raises(SceneError, match="no time"):
        scene_from_aura_v2({**base, "summary": "Sunrise Cafe, morning."})
    assert scene_from_aura_v2({**base, "summary": "morning"}, time="09:00").time == "09:00"
    with pytest.raises(SceneError, match="not in public_state"):
        scene_from_aura_v2({**base, "private_state": {**base["private_state"], "Bob": {}}})
    with pytest.raises(SceneError, match="asker"):
        scene_from_aura_v2(base, asker="Bob")
    assert scene_from_aura_v2(base, asker="zhang hao").asker == "Zhang Hao"


def test_a_live_scene_is_the_town_at_its_last_tick(town: Town, live: ProbeScene) -> None:
    assert (live.time, live.day, live.asker) == ("15:30", 0, "Zhang Hao")
    assert live.source == "town:AURATown@20"
    assert "Zhang Hao is at Town Library with Wang Jun" in live.summary
    zhang = live.agents["Zhang Hao"]
    state = town.state.agents["zhang-hao"]
    assert (zhang.slug, zhang.location, zhang.action) == ("zhang-hao", state.location, state.action)
    assert zhang.private is not None and zhang.private.availability == state.private.availability
    assert set(zhang.beliefs) == {"Wang Jun"}  # named by name, not slug
    assert [(p.time, p.location, p.action) for p in zhang.plan] == [
        (f"{m // 60:02d}:{m % 60:02d}", a.location, a.action)
        for m, a in day_plan(town.definition.agent("zhang-hao"), 0, 42)
    ]
    assert [e.kind for e in live.events] == ["announcement", "conversation"]
    assert sorted(live.events[1].participants) == ["Wang Jun", "Zhang Hao"]  # names, not slugs
    assert len(live.memories["Zhang Hao"]) == len(town.mind_states["zhang-hao"].memory.items)
    assert scene_from_town(town.definition, town.state).memories == {}
    with pytest.raises(SceneError, match="no agent named 'Nobody'"):
        scene_from_town(town.definition, town.state, None, "Nobody")


def test_the_public_scene_has_no_private_facts_or_beliefs(live: ProbeScene) -> None:
    assert live.has_private
    public = live.public()
    assert not public.has_private
    assert all(a.private is None and a.beliefs == {} for a in public.agents.values())
    assert public.memories == live.memories and public.events == live.events


# ---------------------------------------------------------------- the registries


def test_the_two_registries_are_disjoint_and_named_as_the_paper_and_the_release() -> None:
    env, agents = environment_registry(), agent_state_registry()
    assert {s.name: s.aliases for s in env.specs()} == {k: (v,) for k, v in ENV_NAMES.items()}
    assert {s.name: s.aliases for s in agents.specs()} == {k: (v,) for k, v in AGENT_NAMES.items()}
    assert not {s.name for s in env.specs()} & {s.name for s in agents.specs()}
    assert all(s.registry == "environment" for s in env.specs())
    assert all(s.registry == "agent_state" for s in agents.specs())
    # No tool object is shared: each registry runs its own implementation.
    assert not {id(s.run) for s in env.specs()} & {id(s.run) for s in agents.specs()}
    assert env.resolve("agent.private_state") is None and agents.resolve("world.time") is None


@pytest.mark.parametrize(
    ("reg", "alias", "canonical"),
    [("environment", v, k) for k, v in ENV_NAMES.items()]
    + [("agent_state", v, k) for k, v in AGENT_NAMES.items()],
)
def test_release_names_resolve_to_the_paper_names(reg: Any, alias: str, canonical: str) -> None:
    r = registry(reg)
    spec = r.resolve(alias)
    assert spec is not None and spec.name == canonical
    assert r.resolve(canonical) is spec and r.resolve(f"  {canonical.upper()} ") is spec


@pytest.mark.aura_release
def test_every_tool_name_in_the_benchmark_files_is_known() -> None:
    names: set[str] = set()
    for q in v2()["queries"]:
        names.update(q["gold_required_tools"], q["forbidden_tools"])
    assert all(agent_state_registry().resolve(n) for n in names), names
    privacy = aura_release_json("privacy_distractor_queries.json")
    factual = set(privacy["moderate_default_forbidden"])
    for q in privacy["queries"]:
        factual.update(q["allowed_tools"], q["forbidden_tools"])
    assert all(environment_registry().resolve(n) for n in factual), factual


@pytest.mark.aura_release
def test_calling_by_alias_or_by_paper_name_gives_the_same_answer() -> None:
    scene = v2_scene(asker="Zhang Hao")
    for reg in (environment_registry(), agent_state_registry()):
        for spec in reg.specs():
            args = {"agent_name": "Lin Wei"} if "agent_name" in spec.args_model.model_fields else {}
            if spec.name == "agent.belief_about":
                args = {"believer": "Chen Mei", "target": "Lin Wei"}
            by_name = reg.call(scene, "t", spec.name, args)
            by_alias = reg.call(scene, "t", spec.aliases[0], args)
            assert by_name.status == by_alias.status == "ok", (spec.name, by_name.error)
            assert by_name.result == by_alias.result
            assert (by_alias.tool, by_alias.requested) == (spec.name, spec.aliases[0])


def test_function_schemas_are_valid_openai_tools_with_typed_arguments() -> None:
    for reg in (environment_registry(), agent_state_registry()):
        schemas = reg.function_schemas()
        assert len(schemas) == len(reg.specs())
        for entry, spec in zip(schemas, reg.specs(), strict=True):
            fn = entry["function"]
            assert entry["type"] == "function"
            assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", fn["name"]) and fn["name"] == spec.aliases[0]
            assert spec.name in fn["description"]
            params = fn["parameters"]
            assert params["type"] == "object" and params["additionalProperties"] is False
            assert "title" not in params
    by_name = {s.name: s.parameters() for s in [*environment_tools(), *agent_state_tools()]}
    assert by_name["world.time"]["properties"] == {}
    assert by_name["world.nearby_agents"]["properties"]["limit"]["minimum"] == 1
    assert by_name["world.location_info"].get("required") is None  # default: the asker's place
    assert by_name["agent.private_state"]["required"] == ["agent_name"]
    assert by_name["agent.belief_about"]["required"] == ["believer", "target"]


def test_tool_descriptions_travel_as_messages() -> None:
    listed = agent_state_registry(ProbePolicy(deny=("agent.private_state",))).tool_list()
    assert isinstance(listed, ToolList)
    assert listed.allowed == ["agent.all", "agent.nearby", "agent.plan_of", "agent.belief_about"]
    assert [f["function"]["name"] for f in listed.functions] == [
        "get_all_agents",
        "get_nearby_agents",
        "get_agent_plan",
        "get_agent_belief_about",
    ]
    assert len(listed.specs) == 5 and all(isinstance(s, ToolSpecData) for s in listed.specs)
    private = next(s for s in listed.specs if s.name == "agent.private_state")
    assert private.private and private.aliases == ["get_agent_private_state"]
    assert private.parameters["required"] == ["agent_name"]


def test_disclosure_costs_rank_private_above_public() -> None:
    costs = {s.name: s.disclosure for s in [*environment_tools(), *agent_state_tools()]}
    assert costs["world.time"] == costs["world.location"] == costs["world.location_info"] == 0
    assert costs["memory.recent"] == 2 and costs["agent.plan"] == costs["agent.plan_of"] == 1
    assert costs["agent.private_state"] > costs["agent.belief_about"] > costs["agent.plan_of"]
    private = [s for s in agent_state_tools() if s.private]
    assert {s.name for s in private} == {"agent.private_state", "agent.belief_about"}
    assert min(s.disclosure for s in private) > max(
        s.disclosure
        for s in [*environment_tools(), *agent_state_tools()]
        if not s.private and s.name != "memory.recent"
    )


# ---------------------------------------------------------------- the environment tools


def ok(outcome: ProbeOutcome) -> dict[str, Any]:
    assert outcome.status == "ok", outcome.error
    assert outcome.result is not None
    return outcome.result


@pytest.mark.aura_release
def test_environment_tools_on_a_v2_scene() -> None:
    scene, env = v2_scene(), environment_registry()

    def call(tool: str, **args: Any) -> dict[str, Any]:
        return ok(env.call(scene, "env", tool, args, asker="Zhang Hao"))

    assert call("world.time") == {"time": "10:15", "day": 0, "part_of_day": "morning"}
    here = call("world.location")
    assert (here["agent"], here["location"], here["action"]) == (
        "Zhang Hao",
        "Sunrise Cafe",
        "reading a novel",
    )
    assert here["agents_here"] == [
        {"name": "Lin Wei", "action": "serving customers"},
        {"name": "Chen Mei", "action": "writing in a notebook"},
    ]
    near = call("world.nearby_agents", limit=1)
    assert (len(near["agents"]), near["count"]) == (1, 2)
    everyone = call("world.agents_summary", limit=3)
    assert (len(everyone["agents"]), everyone["count"]) == (3, 4)
    assert everyone["agents"][0] == {
        "name": "Lin Wei",
        "location": "Sunrise Cafe",
        "action": "serving customers",
    }
    assert call("memory.recent") == {"agent": "Zhang Hao", "memories": [], "count": 0}
    assert call("world.events_recent") == {"events": [], "count": 0}
    plan = call("agent.plan")
    assert plan["current"] == {"time": "10:15", "location": "Sunrise Cafe", "action": "reading a novel"}
    library = call("world.location_info", location="the library")
    assert library["location"] == "Town Library"
    assert library["agents"] == [{"name": "Wang Jun", "action": "studying"}]
    assert call("world.location_info")["location"] == "Sunrise Cafe"  # default: the asker's place


def test_environment_tools_on_a_live_town(town: Town, live: ProbeScene) -> None:
    env = environment_registry()

    def call(tool: str, **args: Any) -> dict[str, Any]:
        return ok(env.call(live, "env", tool, args))  # the scene's asker: Zhang Hao

    assert call("get_time") == {"time": "15:30", "day": 0, "part_of_day": "afternoon"}
    here = call("get_location")
    assert here["location"] == "Town Library" and here["place"]["type"] == "library"
    assert here["place"]["open_now"] is True
    assert [a["name"] for a in here["agents_here"]] == ["Wang Jun"]
    assert call("get_nearby_agents")["agents"] == [
        {"name": "Wang Jun", "action": town.state.agents["wang-jun"].action}
    ]
    summary = call("get_all_agents")
    assert [a["name"] for a in summary["agents"]] == [a.name for a in town.state.agents.values()]
    memories = call("get_recent_memories", limit=3)
    items = town.mind_states["zhang-hao"].memory.items
    assert [m["text"] for m in memories["memories"]] == [i.text for i in items[-3:]]  # newest last
    assert memories["count"] == len(items)
    events = call("get_recent_events", limit=1)
    assert events["count"] == 2 and events["events"][0]["kind"] == "conversation"
    plan = call("get_agent_plan")
    assert plan["agent"] == "Zhang Hao" and plan["current"]["location"] == "Town Library"
    cafe = call("get_location_info", location="sunrise cafe")
    assert cafe["place"]["opening_hours"] == ["07:00", "21:00"]
    assert [a["name"] for a in cafe["agents"]] == [
        a.name for a in town.state.agents.values() if a.location == "Sunrise Cafe"
    ]


@pytest.mark.aura_release
def test_self_referential_tools_need_an_asker() -> None:
    scene, env = v2_scene(), environment_registry()
    out = env.call(scene, "env", "world.location")
    assert out.status == "not_found" and "give the asker" in (out.error or "")
    assert env.call(scene, "Chen Mei", "world.location").result["location"] == "Sunrise Cafe"  # type: ignore[index]
    assert ok(env.call(scene, "env", "world.time"))["time"] == "10:15"  # needs nobody
    bad = env.call(scene, "env", "agent.plan", asker="Bob")
    assert bad.status == "not_found" and "Bob" in (bad.error or "")


# ---------------------------------------------------------------- the agent-state tools


@pytest.mark.aura_release
def test_agent_state_tools_on_a_v2_scene() -> None:
    scene, reg = v2_scene("A_cafe_morning"), agent_state_registry()

    def call(tool: str, **args: Any) -> dict[str, Any]:
        return ok(reg.call(scene, "env", tool, args))

    assert call("get_all_agents")["count"] == 4
    assert [a["name"] for a in call("get_nearby_agents", location="Town Library")["agents"]] == ["Wang Jun"]
    assert call("get_nearby_agents")["location"] == "Sunrise Cafe"  # no asker: where most agents are
    plan = call("get_agent_plan", agent_name="Lin Wei")
    assert "poetry" not in json.dumps(plan)  # never the unspoken goal
    assert call("get_agent_private_state", agent_name="lin") == {
        "agent": "Lin Wei",
        "availability": "busy",
        "emotional_state": "cheerful",
        "unspoken_goal": "hosting a small poetry reading tonight",
    }
    # Second order: Chen Mei's belief about Lin Wei differs from Lin Wei's truth.
    assert call("get_agent_belief_about", believer="Chen Mei", target="Lin Wei") == {
        "believer": "Chen Mei",
        "target": "Lin Wei",
        "belief": {"availability": "do_not_disturb", "emotional_state": "stressed"},
    }
    b = v2_scene("B_library_afternoon")
    assert (
        ok(reg.call(b, "env", "agent.private_state", {"agent": "Chen Mei"}))["availability"] == "open_to_chat"
    )


def test_agent_state_tools_on_a_live_town(town: Town, live: ProbeScene) -> None:
    reg = agent_state_registry()
    wang = town.state.agents["wang-jun"]
    state = ok(reg.call(live, "env", "agent.private_state", {"agent_name": "wang-jun"}))
    assert state["availability"] == wang.private.availability and state["rule"] == wang.private.rule
    belief = ok(reg.call(live, "env", "agent.belief_about", {"believer": "Zhang Hao", "target": "Wang"}))
    assert belief["belief"]["location"] == "Town Library" and belief["belief"]["observed_time"] == "15:30"
    none = reg.call(live, "env", "agent.belief_about", {"believer": "Lin Wei", "target": "Zhang Hao"})
    assert none.status == "not_found" and none.error == "Lin Wei has no belief recorded about Zhang Hao"
    near = ok(reg.call(live, "env", "agent.nearby", {}))  # the asker's place
    assert near["location"] == "Town Library" and near["count"] == 2


@pytest.mark.aura_release
def test_private_tools_on_a_public_scene_find_nothing() -> None:
    out = agent_state_registry().call(
        v2_scene().public(), "env", "agent.private_state", {"agent_name": "Lin Wei"}
    )
    assert out.status == "not_found" and "no private state is recorded for Lin Wei" in (out.error or "")


# ---------------------------------------------------------------- names


def test_names_are_matched_forgivingly_but_never_guessed() -> None:
    scene = ProbeScene(
        time="09:00",
        agents={n: SceneAgent(name=n, location="Town Park") for n in ("Chen Mei", "Chen Wu", "Lin Wei")},
        locations={},
    )
    reg = agent_state_registry()
    for name in ("LIN WEI", "lin", "Wei", " 'Lin Wei' ", "Lin Wei's"):
        assert ok(reg.call(scene, "env", "agent.plan_of", {"agent_name": name}))["agent"] == "Lin Wei"
    ambiguous = reg.call(scene, "env", "agent.plan_of", {"agent_name": "Chen"})
    assert ambiguous.status == "not_found" and "ambiguous" in (ambiguous.error or "")
    assert "Chen Mei" in (ambiguous.error or "") and "Chen Wu" in (ambiguous.error or "")
    unknown = reg.call(scene, "env", "agent.plan_of", {"agent_name": "Bob"})
    assert unknown.error == "no agent named 'Bob' in this scene (agents: Chen Mei, Chen Wu, Lin Wei)"


def test_places_are_matched_by_distinctive_words(live: ProbeScene) -> None:
    env = environment_registry()
    assert (
        ok(env.call(live, "env", "world.location_info", {"location": "LIBRARY"}))["location"]
        == "Town Library"
    )
    garden = env.call(live, "env", "world.location_info", {"location": "garden"})
    assert garden.status == "not_found" and "Community Garden" in (garden.error or "")
    assert "ambiguous" in (garden.error or "")
    nowhere = env.call(live, "env", "world.location_info", {"location": "Atlantis"})
    assert nowhere.status == "not_found" and (nowhere.error or "").startswith("no location named 'Atlantis'")
    town_only = env.call(live, "env", "world.location_info", {"location": "town"})
    assert town_only.status == "not_found"  # "town" names no place in particular


# ---------------------------------------------------------------- policy


def spied(reg: ProbeRegistry, policy: ProbePolicy | None = None) -> tuple[ProbeRegistry, list[str]]:
    """The registry's tools wrapped to record every execution and the scene each one saw."""
    ran: list[str] = []

    def wrap(spec: ToolSpec[Any]) -> ToolSpec[Any]:
        def run(scene: ProbeScene, ctx: Any, args: Any) -> dict[str, Any]:
            ran.append(f"{spec.name}:{'full' if scene.has_private else 'public'}")
            return spec.run(scene, ctx, args)

        return dataclasses.replace(spec, run=run)

    return ProbeRegistry(reg.name, [wrap(s) for s in reg.specs()], policy or reg.policy), ran


@pytest.mark.aura_release
def test_a_denied_tool_is_refused_audited_and_never_executed() -> None:
    reg, ran = spied(agent_state_registry(), ProbePolicy(allow=("*",), deny=("agent.private_state",)))
    scene = v2_scene()
    for name in ("agent.private_state", "get_agent_private_state", "GET_AGENT_PRIVATE_STATE"):
        out = reg.call(scene, "env", name, {"agent_name": "Lin Wei"})
        assert out.status == "denied" and out.result is None
        assert "denied by the policy pattern 'agent.private_state'" in (out.error or "")
        assert (out.audit.status, out.audit.disclosure, out.audit.result_chars) == ("denied", 0, 0)
        assert out.audit.tool == "agent.private_state" and out.audit.requested == name
    # Refused before its arguments are even looked at.
    assert reg.call(scene, "env", "agent.private_state", {"bogus": 1}).status == "denied"
    assert ran == []
    # The positive control: the same spy does record a permitted call.
    assert reg.call(scene, "env", "agent.belief_about", {"believer": "Lin Wei", "target": "Zhang Hao"}).ok
    assert ran == ["agent.belief_about:full"]


@pytest.mark.aura_release
def test_deny_wins_over_allow_and_matches_aliases_too() -> None:
    scene = v2_scene()
    both = agent_state_registry(ProbePolicy(allow=("agent.*",), deny=("get_agent_private*",)))
    assert both.call(scene, "env", "agent.private_state", {"agent_name": "Lin Wei"}).status == "denied"
    assert both.call(scene, "env", "agent.plan_of", {"agent_name": "Lin Wei"}).ok
    by_alias = agent_state_registry(ProbePolicy(allow=("get_agent_*",)))
    assert by_alias.call(scene, "env", "agent.plan_of", {"agent_name": "Lin Wei"}).ok
    refused = by_alias.call(scene, "env", "agent.all", {})
    assert refused.status == "denied" and "not in the policy's allow list" in (refused.error or "")
    nothing = agent_state_registry(ProbePolicy(allow=()))
    assert all(nothing.call(scene, "env", s.name, {}).status == "denied" for s in nothing.specs())
    assert nothing.function_schemas() == []


@pytest.mark.aura_release
def test_a_call_policy_narrows_the_registry_policy_but_never_widens_it() -> None:
    scene = v2_scene()
    reg, ran = spied(agent_state_registry(), ProbePolicy(deny=("*belief*",)))
    args = {"believer": "Lin Wei", "target": "Zhang Hao"}
    assert (
        reg.call(scene, "env", "agent.belief_about", args, policy=ProbePolicy(allow=("*",))).status
        == "denied"
    )
    forbidden = ProbePolicy(deny=("get_agent_private_state",))  # a v2 query's forbidden_tools
    assert (
        reg.call(scene, "env", "agent.private_state", {"agent_name": "Lin"}, policy=forbidden).status
        == "denied"
    )
    assert reg.call(scene, "env", "agent.private_state", {"agent_name": "Lin"}).ok
    assert ran == ["agent.private_state:full"]
    assert [s.name for s in reg.allowed_specs(forbidden)] == ["agent.all", "agent.nearby", "agent.plan_of"]


# ---------------------------------------------------------------- privacy


def leaves(value: Any) -> Iterator[tuple[str | None, Any]]:
    """(key, leaf) pairs of a JSON value; keys are also yielded as leaves of their own."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield None, k
            if isinstance(v, dict | list):
                yield from leaves(v)
            else:
                yield k, v
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v)
    else:
        yield None, value


def public_calls(scene: ProbeScene) -> Iterator[tuple[ProbeRegistry, str, dict[str, Any], str]]:
    """Every public tool with every sensible argument, from every agent's point of view."""
    for reg in (environment_registry(), agent_state_registry()):
        for spec in reg.specs():
            if spec.private:
                continue
            for asker in scene.agents:
                fields = spec.args_model.model_fields
                if "agent_name" in fields:
                    arg_sets = [{"agent_name": a} for a in scene.agents]
                elif "location" in fields:
                    arg_sets = [{}, *({"location": loc} for loc in scene.locations)]
                else:
                    arg_sets = [{}]
                for args in arg_sets:
                    yield reg, spec.name, args, asker


@pytest.mark.parametrize(
    "which",
    [
        pytest.param("A_cafe_morning", marks=pytest.mark.aura_release),
        pytest.param("B_library_afternoon", marks=pytest.mark.aura_release),
        "live",
    ],
)
def test_public_tools_never_return_a_private_field(which: str, live: ProbeScene) -> None:
    scene = live if which == "live" else v2_scene(which)
    public_leaves = {v for _, v in leaves(scene.public().model_dump(mode="json")) if isinstance(v, str)}
    goals, states = set(), set()
    for a in scene.agents.values():
        assert a.private is not None
        if a.private.unspoken_goal:
            goals.add(a.private.unspoken_goal)
        states.update((a.private.availability, a.private.emotional_state))
        for b in a.beliefs.values():
            states.update((b.availability, b.emotional_state))
    states -= public_leaves  # a value that is also public (an action, say) proves nothing
    assert goals and states
    calls = 0
    for reg, tool, args, asker in public_calls(scene):
        out = reg.call(scene, "probe-test", tool, args, asker=asker)
        # not_found: the asker's own place when it is between two places
        assert out.status in {"ok", "not_found"}, (tool, args, out.error)
        text = json.dumps(out.result) + (out.error or "")
        for key, leaf in leaves(out.result):
            assert key not in PRIVATE_KEYS, (tool, key)
            assert leaf not in states, (tool, key, leaf)
        assert not any(g in text for g in goals), (tool, args)
        calls += 1
    assert calls > 50


@pytest.mark.aura_release
def test_public_tools_run_on_the_public_scene_and_private_tools_on_the_full_one() -> None:
    scene = v2_scene(asker="Zhang Hao")
    for base in (environment_registry(), agent_state_registry()):
        reg, ran = spied(base)
        for spec in reg.specs():
            args = {"agent_name": "Lin Wei"} if "agent_name" in spec.args_model.model_fields else {}
            if spec.name == "agent.belief_about":
                args = {"believer": "Lin Wei", "target": "Zhang Hao"}
            assert reg.call(scene, "env", spec.name, args).ok
        assert ran == [f"{s.name}:{'full' if s.private else 'public'}" for s in reg.specs()]


# ---------------------------------------------------------------- mistakes


@pytest.mark.aura_release
@pytest.mark.parametrize(
    ("tool", "args", "fragment"),
    [
        ("world.nearby_agents", {"limit": 0}, "limit: Input should be greater than or equal to 1"),
        ("world.nearby_agents", {"limit": "many"}, "limit: Input should be a valid integer"),
        ("world.agents_summary", {"limit": 10_000}, "less than or equal to 200"),
        ("world.time", {"when": "now"}, "when: Extra inputs are not permitted"),
        ("world.location_info", {"location": ""}, "location: String should have at least 1 character"),
        ("world.events_recent", ["limit", 3], "must be an object"),
    ],
)
def test_invalid_arguments_are_refused_with_what_the_tool_takes(tool: str, args: Any, fragment: str) -> None:
    reg, ran = spied(environment_registry())
    out = reg.call(v2_scene(), "env", tool, args, asker="Zhang Hao")
    assert out.status == "invalid_args" and fragment in (out.error or ""), out.error
    assert out.result is None and out.disclosure == 0 and out.audit.status == "invalid_args"
    assert ran == []


@pytest.mark.aura_release
def test_agent_arguments_are_required_and_accept_the_releases_spelling() -> None:
    reg = agent_state_registry()
    missing = reg.call(v2_scene(), "env", "get_agent_private_state", {})
    assert missing.status == "invalid_args" and "it takes agent_name" in (missing.error or "")
    both = reg.call(v2_scene(), "env", "get_agent_belief_about", {"believer": "Lin Wei"})
    assert both.status == "invalid_args" and "target: Field required" in (both.error or "")
    assert reg.call(v2_scene(), "env", "get_agent_private_state", {"agent_name": "Lin Wei"}).ok
    assert (
        reg.call(v2_scene(), "env", "get_agent_private_state", {"limit": "5", "agent": "x"}).status
        == "invalid_args"
    )
    assert ok(environment_registry().call(v2_scene(), "env", "get_all_agents", {"limit": "2"}))["count"] == 4


@pytest.mark.aura_release
def test_an_unknown_tool_is_reported_with_the_tools_there_are() -> None:
    out = environment_registry().call(v2_scene(), "env", "get_agent_private_state", {"agent_name": "Lin Wei"})
    assert out.status == "unknown_tool" and out.tool == "get_agent_private_state"
    assert "world.time (get_time)" in (out.error or "")
    assert (out.audit.tool, out.audit.status, out.audit.disclosure) == (
        "get_agent_private_state",
        "unknown_tool",
        0,
    )


# ---------------------------------------------------------------- audits and messages


@pytest.mark.aura_release
def test_every_call_is_audited_with_caller_args_size_and_disclosure() -> None:
    reg, scene = agent_state_registry(), v2_scene()
    out = reg.call(
        scene, "env:Zhang Hao", "get_agent_private_state", {"agent_name": "lin"}, asker="Zhang Hao"
    )
    audit = out.audit
    assert (audit.caller, audit.registry, audit.tool, audit.requested, audit.status) == (
        "env:Zhang Hao",
        "agent_state",
        "agent.private_state",
        "get_agent_private_state",
        "ok",
    )
    assert audit.args == {"agent_name": "lin"} and audit.asker == "Zhang Hao"
    assert audit.result_chars == len(json.dumps(out.result, ensure_ascii=False, sort_keys=True))
    assert audit.disclosure == out.disclosure == 3
    missing = reg.call(scene, "env", "agent.private_state", {"agent_name": "Bob"})
    assert (missing.audit.status, missing.audit.disclosure, missing.audit.result_chars) == ("not_found", 3, 0)
    assert missing.audit.error == missing.error


@pytest.mark.aura_release
def test_outcomes_and_calls_round_trip_as_messages() -> None:
    from messages import Envelope

    scene = v2_scene()
    out = agent_state_registry().call(
        scene, "env", "agent.belief_about", {"believer": "Lin", "target": "Chen"}
    )
    result = ProbeResult.of(out)
    assert isinstance(result, ProbeOutcome) and result.result == out.result and result.audit == out.audit
    for payload in (result, ProbeCall(tool="get_time", args={"limit": 3}, scene=scene, policy=ProbePolicy())):
        env = Envelope(id="x", sender="a", recipient="b", namespace="n", wall_time=1.0, payload=payload)
        assert decode(encode(env)).payload == payload
