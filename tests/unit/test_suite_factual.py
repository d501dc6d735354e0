"""Factual and privacy cells: gold facts from a paired snapshot, snapshots shared by conditions."""

from __future__ import annotations

from actors.town import embedded_town
from bench.suite.datasets import FactualQuery, PrivacyQuery, load_suite
from bench.suite.factual import Snapshots, asker_of, cell_runner, gold_facts, known_values, snapshot_tick
from bench.suite.runs import CellKey
from messages.probes import ProbeScene
from world.aura import OfflineBackend


def _scene(position: int = 2, seed: int = 42) -> ProbeScene:
    return Snapshots(embedded_town()).get(seed, position).scene


def test_positions_rotate_askers_and_times_of_day() -> None:
    town = embedded_town()
    assert asker_of(town, 0) != asker_of(town, 1)
    assert asker_of(town, 0) == asker_of(town, len(town.agents))
    assert snapshot_tick(0) == 6 and snapshot_tick(1) == 7 and snapshot_tick(24) == 6
    scene = _scene(position=0)
    assert scene.asker == asker_of(town, 0) and scene.time == "08:30"


def test_gold_facts_are_read_from_the_snapshot() -> None:
    scene = _scene()
    me = scene.agents[scene.asker or ""]
    q = FactualQuery(id=1, category="temporal", query="What time is it?", requires=("current_time",))
    assert gold_facts(scene, q) == {"current_time": scene.time}
    other = next(n for n in scene.agents if n != scene.asker)
    q = FactualQuery(
        id=2, category="social", query=f"What does {other} do for a living?", requires=("agent_occupation",)
    )
    assert gold_facts(scene, q) == {"agent_occupation": scene.agents[other].occupation}
    q = FactualQuery(id=3, category="social", query="Who else lives here?", requires=("agent_list",))
    listed = gold_facts(scene, q)
    assert sorted(listed.values()) == sorted(n for n in scene.agents if n != scene.asker)
    assert me.location is not None
    q = FactualQuery(id=4, category="spatial", query="Where am I?", requires=("agent_location",))
    gold = gold_facts(scene, q)
    assert gold == {"agent_location": me.location}
    assert me.location in known_values(scene, gold) and scene.asker not in known_values(scene, gold)
    # Not checkable from a snapshot: no gold, no guess.
    q = FactualQuery(id=5, category="planning", query="Make today fun", requires=("creative_suggestions",))
    assert gold_facts(scene, q) == {}


def test_every_condition_of_a_position_sees_the_same_snapshot() -> None:
    suite = load_suite("privacy")
    run = cell_runner(suite, OfflineBackend)
    qid = str(suite.privacy()[0].id)
    records = [run(CellKey("privacy", c, 42, qid)) for c in ("literal", "react", "fixed_probe")]
    assert len({r["snapshot"] for r in records}) == 1 and len({r["asker"] for r in records}) == 1
    assert all(r["gold"] == records[0]["gold"] and "fa" in r["scores"] for r in records)
    # A fresh capture of the same (seed, position) is identical: snapshots are deterministic.
    again = cell_runner(suite, OfflineBackend)(CellKey("privacy", "literal", 42, qid))
    assert again["snapshot"] == records[0]["snapshot"] and again["answer"] == records[0]["answer"]
    # The fixed probe calls the forbidden tools; the literal answer calls nothing.
    assert isinstance(suite.privacy()[0], PrivacyQuery)
    assert records[0]["forbidden_violations"] == [] and records[2]["forbidden_violations"]
