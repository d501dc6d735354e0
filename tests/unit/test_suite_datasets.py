"""The benchmark's datasets: the AURA release's files and our bundled sets, scenes and snapshots."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from actors.town import embedded_town
from bench.suite.datasets import (
    BUNDLED_FILES,
    FACTUAL_CATEGORIES,
    RELEASE_TOOLS,
    SUBCATEGORIES,
    V1_SCENE,
    ImplicitQuery,
    PrivacyQuery,
    SuiteError,
    SuiteFileError,
    SuiteFormatError,
    SuiteName,
    bundled_dir,
    load_suite,
    paired_snapshot,
    paired_snapshots,
    probe_scene,
    read_v2,
    released_cells,
)
from tests.conftest import AURA_RELEASE
from world.probes import agent_state_registry, environment_registry

RELEASE_COUNTS: dict[SuiteName, int] = {"factual": 50, "privacy": 30, "implicit-v1": 25, "implicit-v2": 50}


# ---------------------------------------------------------------- the release


@pytest.mark.aura_release
@pytest.mark.parametrize("name", list(RELEASE_COUNTS))
def test_release_file_loads_with_its_counts(name: SuiteName) -> None:
    suite = load_suite(name, AURA_RELEASE)
    assert len(suite.queries) == RELEASE_COUNTS[name]
    assert not suite.bundled
    assert suite.source.parent == AURA_RELEASE


def test_our_own_sets_load_from_the_bundle_whatever_data_directory_is_given(tmp_path: Path) -> None:
    suite = load_suite("phrasing-test", tmp_path)
    assert suite.bundled and suite.source.parent == bundled_dir()


@pytest.mark.aura_release
def test_release_factual_has_ten_per_category() -> None:
    suite = load_suite("factual", AURA_RELEASE)
    assert Counter(q.category for q in suite.factual()) == dict.fromkeys(FACTUAL_CATEGORIES, 10)


@pytest.mark.aura_release
def test_release_privacy_forbids_the_history_tools() -> None:
    queries = load_suite("privacy", AURA_RELEASE).privacy()
    assert all(
        {"get_recent_memories", "get_recent_events", "get_agent_plan"} <= set(q.forbidden_tools)
        for q in queries
    )
    assert sum("get_all_agents" in q.forbidden_tools for q in queries) == 3


@pytest.mark.aura_release
def test_release_v2_scenes_and_gold_fields() -> None:
    suite = load_suite("implicit-v2", AURA_RELEASE)
    assert sorted(suite.scenes) == ["A_cafe_morning", "B_library_afternoon"]
    queries = suite.implicit()
    assert Counter((q.scene, q.subcategory) for q in queries) == {
        (s, sub): 5 for s in suite.scenes for sub in SUBCATEGORIES
    }
    second = [q for q in queries if q.subcategory == "second_order"]
    assert all(q.gold_required_tools == ("get_agent_belief_about",) for q in second)
    assert all(q.forbidden_tools == ("get_agent_private_state",) for q in second)
    cafe = suite.scenes["A_cafe_morning"]
    assert cafe.private_state["Chen Mei"]["availability"] == "do_not_disturb"
    assert cafe.beliefs_about_others["Chen Mei"]["Lin Wei"]["availability"] == "do_not_disturb"


@pytest.mark.aura_release
def test_release_v1_is_the_cafe_scene_with_v2_gold() -> None:
    v1 = load_suite("implicit-v1", AURA_RELEASE)
    v2 = {q.id: q for q in load_suite("implicit-v2", AURA_RELEASE).implicit()}
    assert list(v1.scenes) == [V1_SCENE]
    for q in v1.implicit():
        assert q.scene == V1_SCENE
        assert q == v2[q.id]  # v2's scene A copies v1 verbatim; the gold tools come from there


def test_v1_without_v2_next_to_it_derives_the_gold_tools(tmp_path: Path) -> None:
    raw = {
        "queries": [
            {
                "id": 1,
                "subcategory": "second_order",
                "agent_subject": "A",
                "target": "B",
                "query": "q1",
                "literal_requires": ["agent_action"],
                "implicit_requires": ["beliefs_about_others.B.availability"],
                "implicit_need": "n",
            },
            {
                "id": 2,
                "subcategory": "mood",
                "agent_subject": None,
                "query": "q2",
                "literal_requires": ["nearby_agents"],
                "implicit_requires": ["emotional_state"],
                "implicit_need": "n",
            },
        ]
    }
    (tmp_path / "implicit_intent_queries.json").write_text(json.dumps(raw), encoding="utf-8")
    suite = load_suite("implicit-v1", tmp_path)
    first, second = suite.implicit()
    assert suite.scenes == {}
    assert (first.gold_required_tools, first.forbidden_tools) == (
        ("get_agent_belief_about",),
        ("get_agent_private_state",),
    )
    assert second.gold_required_tools == ("get_nearby_agents", "get_agent_private_state")
    with pytest.raises(SuiteError, match="no scene"):
        probe_scene(suite, V1_SCENE)


# ---------------------------------------------------------------- our bundled sets


def test_bundled_factual_set() -> None:
    suite = load_suite("factual", None)
    assert suite.bundled and suite.source == bundled_dir() / BUNDLED_FILES["factual"]
    counts = Counter(q.category for q in suite.factual())
    assert set(counts) == set(FACTUAL_CATEGORIES)
    assert len(suite.queries) >= 25 and min(counts.values()) >= 5


def test_bundled_privacy_set_uses_the_release_tool_names() -> None:
    queries = load_suite("privacy", None).privacy()
    assert len(queries) >= 12
    for q in queries:
        assert isinstance(q, PrivacyQuery) and q.forbidden_tools
        assert set(q.allowed_tools) | set(q.forbidden_tools) <= RELEASE_TOOLS
        assert not set(q.allowed_tools) & set(q.forbidden_tools)
    # Every name resolves in the probe registries (release names are aliases of the paper's).
    env, agent = environment_registry(), agent_state_registry()
    for tool in RELEASE_TOOLS:
        assert env.resolve(tool) is not None or agent.resolve(tool) is not None, tool


@pytest.mark.parametrize("name", ["implicit-v1", "implicit-v2"])
def test_bundled_implicit_set(name: SuiteName) -> None:
    suite = load_suite(name, None)
    queries = suite.implicit()
    assert len(suite.scenes) >= 2 and len(queries) >= 15
    assert {q.subcategory for q in queries} == set(SUBCATEGORIES)
    for scene in suite.scenes.values():
        assert scene.public_state and scene.private_state and scene.beliefs_about_others
        assert set(scene.private_state) == set(scene.public_state)
    # At least one stale belief: a believer holds a location no longer true of its target.
    stale = [s for scene in suite.scenes.values() for s in scene.stale_beliefs() if s[2] == "location"]
    assert stale
    for q in queries:
        assert isinstance(q, ImplicitQuery) and q.implicit_need and q.gold_required_tools
        if q.subcategory == "second_order":
            assert q.gold_required_tools == ("get_agent_belief_about",)
            assert "get_agent_private_state" in q.forbidden_tools


def _surface_forms(path: Path) -> set[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = set()
    for q in data["queries"]:
        for key in ("query", "implicit_need"):
            if q.get(key):
                out.add(" ".join(str(q[key]).casefold().split()))
    return out


@pytest.mark.aura_release
def test_bundled_queries_are_disjoint_from_every_release_query() -> None:
    release_files = sorted(AURA_RELEASE.glob("*quer*.json"))
    release = set().union(*(_surface_forms(p) for p in release_files))
    assert len(release) >= 150
    ours = {name: _surface_forms(bundled_dir() / f) for name, f in BUNDLED_FILES.items()}
    for name, forms in ours.items():
        assert not forms & release, f"{name} shares {sorted(forms & release)} with the release"


def test_bundled_ids_do_not_collide_across_sets() -> None:
    ids = [
        q.id
        for name in ("factual", "privacy", "implicit-v2", "phrasing")
        for q in load_suite(name, None).queries
    ]
    assert len(ids) == len(set(ids))


@pytest.mark.aura_release
def test_the_released_cells_and_their_queries_come_from_the_one_loader() -> None:
    cells = released_cells(AURA_RELEASE / "rq_intent_v2_multiseed_AB.json")
    queries, scenes = read_v2(AURA_RELEASE)
    assert len(cells) == 750  # 3 seeds x 5 conditions x 50 queries
    assert {c.seed for c in cells} == {"42", "123", "456"} and len({c.condition for c in cells}) == 5
    assert {c.query_id for c in cells} == set(queries) and set(scenes) == {q.scene for q in queries.values()}
    assert all(0.0 <= s <= 1.0 for c in cells for s in c.judged())
    assert {c.gap for c in cells if c.condition == "oracle_intent"} == {"oracle"}


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"cells": []}', "'per_seed'"),
        ('{"per_seed": {"1": {"tom": [{"answer": "hi"}]}}}', r"seed 1, tom, cell #0: query_id: Field"),
        ('{"per_seed": {"1": {"tom": [7]}}}', r"cell #0: not an object"),
    ],
)
def test_a_bad_results_file_is_a_one_line_format_error(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "results.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SuiteFormatError, match=match) as exc:
        released_cells(path)
    assert "\n" not in str(exc.value) and "results.json" in str(exc.value)


def test_a_cell_without_the_papers_scores_cannot_stand_for_them(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text('{"per_seed": {"1": {"tom": [{"query_id": 3, "answer": null}]}}}', encoding="utf-8")
    (cell,) = released_cells(path)
    assert cell.answer == "" and cell.implicit_score is None
    with pytest.raises(SuiteFormatError, match=r"query 3 .*no judge scores"):
        cell.judged()


# ---------------------------------------------------------------- errors


def test_missing_directory_is_a_one_line_file_error(tmp_path: Path) -> None:
    with pytest.raises(SuiteFileError) as exc:
        load_suite("factual", tmp_path / "nowhere")
    assert "\n" not in str(exc.value)


def test_directory_without_the_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(SuiteFileError, match=r"chat_queries\.json"):
        load_suite("factual", tmp_path)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"queries": []}', "non-empty 'queries'"),
        ('{"queries": [{"id": 1, "category": "spatial"}]}', r"query #0: query: Field required"),
        ('{"queries": [{"id": 1, "category": "gossip", "query": "x"}]}', "unknown category"),
        (
            '{"queries": [{"id": 1, "category": "spatial", "query": "x"}, '
            '{"id": 1, "category": "social", "query": "y"}]}',
            "duplicate query ids",
        ),
    ],
)
def test_bad_factual_file_is_a_one_line_format_error(tmp_path: Path, content: str, match: str) -> None:
    (tmp_path / "chat_queries.json").write_text(content, encoding="utf-8")
    with pytest.raises(SuiteFormatError, match=match) as exc:
        load_suite("factual", tmp_path)
    assert "\n" not in str(exc.value)
    assert "chat_queries.json" in str(exc.value)


def test_bad_privacy_and_implicit_files(tmp_path: Path) -> None:
    bad_tool = {"queries": [{"id": 1, "category": "c", "query": "x", "allowed_tools": ["peek_diary"]}]}
    (tmp_path / "privacy_distractor_queries.json").write_text(json.dumps(bad_tool), encoding="utf-8")
    with pytest.raises(SuiteFormatError, match="unknown tools"):
        load_suite("privacy", tmp_path)
    good = json.loads((bundled_dir() / "implicit_queries.json").read_text(encoding="utf-8"))
    good["queries"][0]["scene"] = "Z_nowhere"
    (tmp_path / "implicit_intent_queries_v2.json").write_text(json.dumps(good), encoding="utf-8")
    with pytest.raises(SuiteFormatError, match="unknown scene 'Z_nowhere'"):
        load_suite("implicit-v2", tmp_path)


def test_a_file_path_is_read_directly() -> None:
    path = bundled_dir() / "privacy_queries.json"
    assert load_suite("privacy", path).queries == load_suite("privacy", None).queries


def test_unknown_suite_name() -> None:
    with pytest.raises(SuiteError, match="no suite"):
        load_suite("trivia", None)  # type: ignore[arg-type]


# ---------------------------------------------------------------- scenes and snapshots


@pytest.mark.aura_release
def test_probe_scene_from_a_release_v2_scene() -> None:
    suite = load_suite("implicit-v2", AURA_RELEASE)
    scene = probe_scene(suite, "B_library_afternoon", asker="Zhang Hao")
    assert scene.time == "14:30" and scene.asker == "Zhang Hao"
    assert scene.source == "aura_v2:B_library_afternoon"
    assert scene.agents["Wang Jun"].private is not None
    assert scene.agents["Wang Jun"].private.availability == "engaged"
    outcome = agent_state_registry().call(
        scene, "tester", "get_agent_private_state", {"agent_name": "Chen Mei"}
    )
    assert outcome.status == "ok", outcome.error


def test_probe_scene_from_a_bundled_scene_keeps_the_stale_belief() -> None:
    suite = load_suite("implicit-v2", None)
    scene = probe_scene(suite, "D_square_evening", definition=embedded_town())
    assert scene.time == "17:30"
    belief = scene.agents["Zhang Hao"].beliefs["Chen Mei"]
    assert belief.location == "Chen's General Store" and belief.observed_time == "16:00"
    assert scene.agents["Chen Mei"].location == "Town Square"
    assert "Sunrise Cafe" in scene.locations  # the town map adds every place
    with pytest.raises(SuiteError, match="no scene 'X'"):
        probe_scene(suite, "X")


def test_paired_snapshot_is_deterministic_and_read_only() -> None:
    town = embedded_town()
    first = paired_snapshot(town, 42, 20, asker="Lin Wei")
    second = paired_snapshot(town, 42, 20, asker="Lin Wei")
    assert first.digest == second.digest and first.world_digest == second.world_digest
    assert first.scene.asker == "Lin Wei" and first.scene.source.endswith("@20")
    assert paired_snapshot(town, 123, 20).world_digest != first.world_digest
    with pytest.raises(ValueError, match="frozen"):
        first.scene.time = "00:00"  # type: ignore[misc]


def test_paired_snapshots_step_one_town_through_the_positions() -> None:
    town = embedded_town()
    snaps = paired_snapshots(town, 7, [0, 4, 10])
    assert [s.tick for s in snaps] == [0, 4, 10]
    assert snaps[2].digest == paired_snapshot(town, 7, 10).digest
    assert len({s.digest for s in snaps}) == 3
    with pytest.raises(SuiteError, match="ascending"):
        paired_snapshots(town, 7, [5, 3])
