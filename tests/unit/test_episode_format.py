"""pi-Bench's task and episode files: strict models, the loader (staging as pi-Bench stages a task,
tools.yaml, seed.yaml, profile.yaml), the linter, session/grading specs."""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from actors.episodes.rule_scorer import run_rule_scorer
from bench.episodes.loader import (
    LintIssue,
    LoadedEpisode,
    bare_tool_name,
    find_episodes,
    lint_episode,
    load_episode,
)
from messages.episodes import ToolRecord, UserTurn
from messages.probes import ToolList
from world.episodes.apps import EnvState, EpisodeTools, new_state
from world.episodes.apps.seed import seed_apps
from world.episodes.assistant.oracle import play_turn
from world.episodes.assistant.ports import record_of
from world.episodes.scoring import turn_history
from world.episodes.tasks import (
    TaskFile,
    TaskFormatError,
    grading_spec,
    opens_at,
    parse_episode,
    parse_task,
    session_spec,
    task_problems,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pibench"
DEMO = FIXTURES / "data" / "pibench_demo"
SKILL_TEXT = "skills/reading-planner/SKILL.md"
SKILL_ICON = "skills/reading-planner/icon.png"
SCORER_KEYS = [
    "used amazon__place_order successfully",
    "recovered placed order_id",
    "show_order confirms target product",
    "show_order confirms ordered_quantity == 2",
]
SERVED = EpisodeTools().names()
"""What ``bench episodes --lint`` passes: every tool our registry serves."""
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGM4UWUDAAOMAX/xY119AAAAAElFTkSuQmCC"
)
"""A 1x1 PNG: bytes that are not UTF-8 (0x89 cannot start a character)."""


def task_data(task_id: str | int = "t1", **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schema_version": "v2",
        "task_id": task_id,
        "user_id": "u1",
        "environment_id": "env",
        "title": f"Task {task_id}",
        "description": "Write the weekly summary.",
        "task_type": "short_term_independent",
        "trigger": {"type": "user"},
        "intent": {
            "initial_input": "Please summarise notes.md for me.",
            "hidden_intent": [{"content": "Keep it under 200 words."}],
        },
        "objectives": {"checklist": [{"criterion": "The summary is under 200 words."}]},
    }
    data.update(changes)
    return data


def write_episode(
    base: Path,
    tasks: list[dict[str, Any]],
    *,
    depends: dict[str, list[str]] | None = None,
    files: Mapping[str, bytes | str] | None = None,
    listed: list[str] | None = None,
) -> Path:
    """Persona ``u1``'s directory where pi-Bench reads it, ``base/data/u1``: episode.yaml, each
    task's task.yaml, and extra files (path -> content)."""
    root = base / "data" / "u1"
    depends = depends or {}
    ids = listed if listed is not None else [t["task_id"] for t in tasks]
    episode = {
        "schema_version": "v2",
        "episode_id": "ep1",
        "user_id": "u1",
        "tasks": [{"task_id": tid, "depends_on": depends.get(tid, [])} for tid in ids],
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / "episode.yaml").write_text(yaml.safe_dump(episode), encoding="utf-8")
    for task in tasks:
        task_dir = root / "tasks" / str(task["task_id"])
        task_dir.mkdir(parents=True, exist_ok=True)
        (task_dir / "task.yaml").write_text(yaml.safe_dump(task, sort_keys=False), encoding="utf-8")
    for rel, content in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def issues_at(issues: list[LintIssue], field: str) -> list[LintIssue]:
    return [i for i in issues if i.field == field]


def only_issue(issues: list[LintIssue], field: str, severity: str = "error") -> LintIssue:
    found = [i for i in issues_at(issues, field) if i.severity == severity]
    assert len(found) == 1, (field, issues)
    return found[0]


def warnings(issues: list[LintIssue]) -> list[str]:
    return [f"{Path(i.file).name}: {i.field}: {i.message}" for i in issues if i.severity == "warning"]


# ---------------------------------------------------------------- the fixture, in pi-Bench's layout


@pytest.fixture(scope="module")
def demo() -> LoadedEpisode:
    return load_episode(DEMO)


def test_fixture_episode_is_found_and_loads_in_episode_order(demo: LoadedEpisode) -> None:
    assert find_episodes(FIXTURES) == [DEMO]
    assert demo.episode.episode_id == "pibench_demo_episode"
    assert demo.episode.runtime == {"docker_image_id": "pibench-demo:latest"}
    assert [t.task.task_id for t in demo.tasks] == ["order_coffee_dripper", "survey_recent_papers"]
    assert all(t.depends_on == () for t in demo.tasks)
    assert demo.task("survey_recent_papers").directory == DEMO / "tasks" / "survey_recent_papers"
    with pytest.raises(KeyError):
        demo.task("nope")


def test_fixture_persona_files_are_read_and_profile_is_staged_nowhere(demo: LoadedEpisode) -> None:
    # tools.yaml: the names as written, in order (pi-Bench's bare <app>__<api> form).
    assert demo.offered is not None
    assert demo.offered[:2] == ("amazon__login", "amazon__search_products")
    assert {"amazon__place_order", "amazon__show_order", "gmail__send_email"} <= set(demo.offered)
    assert len(demo.offered) == len(set(demo.offered)) == 13
    # seed.yaml: the persona's world.
    assert demo.seed is not None and demo.seed.start_time == "2025-05-05T09:00:00"
    assert [p.email for p in demo.seed.people] == ["mina.okafor@example.com", "theo.brandt@example.com"]
    assert demo.seed.people[0].phone_number == "5550104477"
    assert demo.seed.people[1].accounts == {"gmail": None}  # the list form: an untold password
    assert [p["product_id"] for p in demo.seed.apps["amazon"]["products"]] == [1578, 1579, 1580]
    # profile.yaml: read (its user_id is the sender id), never a workspace file.
    assert demo.profile is not None and demo.profile["user_id"] == "pibench_demo"
    for task in demo.tasks:
        staged = [*task.assets, *task.binaries]
        assert not any(Path(p).name in ("profile.yaml", "tools.yaml", "seed.yaml") for p in staged)
        assert not any(p.startswith("scripts/") for p in staged)


def test_fixture_survey_task_reads_objectives_fields_and_assets(demo: LoadedEpisode) -> None:
    survey = demo.task("survey_recent_papers")
    task = survey.task
    assert task.title == "Survey Recent Papers on a User-Specified Research Topic"
    assert task.task_type == "long_term" and not task.is_environment
    assert len(task.hidden_intents) == 6
    assert task.hidden_intents[1] == "Recommend around 3 papers rather than producing a long survey."
    assert len(task.checklist) == 6 and {c.weight for c in task.checklist} == {1.0}
    # pi-Bench keeps files_read under objectives; parsed, it is the task's own field.
    assert task.files_read == ("reading_plan.md",)
    assert task.objectives.files_read is None
    assert set(survey.assets) == {"accepted_papers_2025.md", SKILL_TEXT}
    assert set(survey.binaries) == {SKILL_ICON}
    text = (DEMO / "tasks" / "survey_recent_papers" / "accepted_papers_2025.md").read_text()
    assert survey.assets["accepted_papers_2025.md"] == text
    assert survey.rule_scorer is None and survey.rule_scorer_path is None
    assert task.metadata == {"category": "A", "source": "pi-Bench Appendix G example, placeholders invented"}


def test_fixture_skills_are_staged_into_every_task_byte_for_byte(demo: LoadedEpisode) -> None:
    icon = (DEMO / SKILL_ICON).read_bytes()
    assert icon.startswith(b"\x89PNG")  # not UTF-8: a binary asset
    for task in demo.tasks:
        assert task.assets[SKILL_TEXT] == (DEMO / SKILL_TEXT).read_text(encoding="utf-8")
        assert base64.b64decode(task.binaries[SKILL_ICON], validate=True) == icon
        assert SKILL_ICON not in task.assets and SKILL_TEXT not in task.binaries


def test_fixture_shopping_task_resolves_scorer_from_repo_root(demo: LoadedEpisode) -> None:
    shop = demo.task("order_coffee_dripper")
    assert shop.task.task_type == "val"  # pi-Bench's own data has val and test
    # tools_evaluation_path is relative to pi-Bench's repository root (data/<user>/scripts/...).
    assert shop.task.tools_evaluation_path == "data/pibench_demo/scripts/order_coffee_dripper.py"
    assert shop.rule_scorer_path is not None
    assert shop.rule_scorer_path.resolve() == DEMO / "scripts" / "order_coffee_dripper.py"
    assert shop.rule_scorer == (DEMO / "scripts" / "order_coffee_dripper.py").read_text()
    assert "TARGET_PRODUCT_ID = 1578" in shop.rule_scorer
    assert set(shop.assets) == {SKILL_TEXT}  # no asset of its own: only the persona's skills
    assert [(t.name, t.call, t.result) for t in shop.task.tools] == [
        ("mcp_appworld_amazon__place_order", ("payment_card_id", "address_id"), ("response.order_id",)),
        ("mcp_appworld_amazon__show_order", ("order_id",), ("response.order_items",)),
    ]
    assert len(shop.task.extensions.oracle) == 1


def _run_scorer(source: str, history: list[dict[str, Any]]) -> dict[str, int]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "order_coffee_dripper.py", "exec"), namespace)
    scores: dict[str, int] = namespace["score"](history)
    return scores


def test_fixture_scorer_credits_only_the_appworld_surface(demo: LoadedEpisode) -> None:
    source = demo.task("order_coffee_dripper").rule_scorer
    assert source is not None
    place: dict[str, Any] = {
        "tool_name": "mcp_appworld_amazon__place_order",
        "call": {"access_token": "tok", "payment_card_id": 1, "address_id": 1},
        "result": {"response": {"message": "Successfully placed the order.", "order_id": 4102}},
    }
    show: dict[str, Any] = {
        "tool_name": "mcp_appworld_amazon__show_order",
        "call": {"access_token": "tok", "order_id": 4102},
        "result": {
            "response": {"order_id": 4102, "order_items": [{"product_id": 1578, "ordered_quantity": 2}]}
        },
    }
    assert _run_scorer(source, []) == dict.fromkeys(SCORER_KEYS, 0)
    assert _run_scorer(source, [place, show]) == dict.fromkeys(SCORER_KEYS, 1)
    # The scorer strips the prefix itself, as pi-Bench's scripts do.
    bare = [{**place, "tool_name": "amazon__place_order"}, {**show, "tool_name": "amazon__show_order"}]
    assert _run_scorer(source, bare) == dict.fromkeys(SCORER_KEYS, 1)
    # No access token in the call: not AppWorld's surface, not credited.
    no_token = copy.deepcopy(place)
    del no_token["call"]["access_token"]
    assert _run_scorer(source, [no_token])["used amazon__place_order successfully"] == 0
    # A refusal ({"response": {"message"}}) carries no order id.
    refused = {**place, "result": {"response": {"message": "The cart is empty, so can't place the order."}}}
    assert _run_scorer(source, [refused]) == dict.fromkeys(SCORER_KEYS, 0)
    # Looking at the old order (4101, one dripper) after placing 4102 confirms nothing.
    old = copy.deepcopy(show)
    old["result"]["response"] = {
        "order_id": 4101,
        "order_items": [{"product_id": 1578, "ordered_quantity": 1}],
    }
    assert _run_scorer(source, [place, old])["show_order confirms target product"] == 0
    one = copy.deepcopy(show)
    one["result"]["response"]["order_items"][0]["ordered_quantity"] = 1
    scores = _run_scorer(source, [place, one])
    assert scores["show_order confirms target product"] == 1
    assert scores["show_order confirms ordered_quantity == 2"] == 0


class _Port:
    """The episode's tools in process, every call recorded under turn 1."""

    def __init__(self, tools: EpisodeTools, state: EnvState) -> None:
        self.registry = tools
        self.state = state

    def call(self, tool: str, args: Mapping[str, Any]) -> ToolRecord:
        outcome, self.state = self.registry.call(self.state, "assistant.demo", tool, args)
        return record_of(outcome).model_copy(update={"turn": 1})

    def tools(self) -> ToolList:
        return self.registry.tool_list()


def test_fixture_gold_path_runs_on_its_world_and_passes_its_scorer(demo: LoadedEpisode) -> None:
    """tools.yaml, seed.yaml, the task's gold path and its scorer agree with one another."""
    assert demo.seed is not None
    shop = demo.task("order_coffee_dripper")
    port = _Port(
        EpisodeTools(offered=demo.offered), new_state(seed_apps(demo.seed), start_time=demo.seed.start_time)
    )
    turn = UserTurn(
        episode_id="ep", task_id=shop.task.task_id, user_id="pibench_demo", turn=1, kind="request",
        text=str(shop.task.intent.initial_input), reply_to="user.ep",
    )  # fmt: skip
    reply = play_turn(shop.task.extensions.oracle, turn, port, {})
    assert reply.error is None
    assert [r.status for r in reply.tool_records] == ["ok"] * 7, reply.tool_records
    assert "order id is 4102" in reply.text  # after the seeded order 4101
    allowed = {t.name for t in shop.task.tools}
    records = turn_history(list(reply.tool_records), 1, allowed)
    assert [r["tool_name"] for r in records] == sorted(allowed)
    assert shop.rule_scorer is not None
    keys, scored = run_rule_scorer(shop.rule_scorer, [[], records])
    assert keys.scores == dict.fromkeys(SCORER_KEYS, 0)
    assert scored.scores == dict.fromkeys(SCORER_KEYS, 1)


def test_fixture_lints_without_errors_or_unexpected_warnings() -> None:
    issues = lint_episode(DEMO, SERVED)
    assert [i for i in issues if i.severity == "error"] == []
    assert warnings(issues) == []


def test_a_verb_before_a_quantity_names_no_record_but_an_id_does(tmp_path: Path) -> None:
    task = task_data()
    task["intent"]["hidden_intent"] = [{"content": "Order 2 drippers so that there is a spare one."}]
    root = write_episode(tmp_path / "ep", [task])
    assert warnings(lint_episode(root, SERVED)) == []
    task["intent"]["hidden_intent"] = [{"content": "Add playlist ID: 31 and product #4 to the note."}]
    root = write_episode(tmp_path / "ep2", [task])
    found = warnings(lint_episode(root, SERVED))
    assert any("no playlist with id 31" in w for w in found)
    assert any("no product with id 4" in w for w in found)


def test_session_and_grading_specs_of_fixture(demo: LoadedEpisode) -> None:
    survey = demo.task("survey_recent_papers").task
    spec = session_spec(survey, "ep-run-1", sim_time=90.0)
    assert spec.episode_id == "ep-run-1" and spec.task_id == "survey_recent_papers"
    assert spec.user_id == "pibench_demo" and spec.title == survey.title
    assert spec.initial_input == survey.intent.initial_input  # verbatim, as pi-Bench sends it
    assert spec.initial_input.startswith("I wrote a local file at accepted_papers_2025.md")
    assert spec.trigger.source == "user" and spec.trigger.payload is None
    assert spec.hidden_intents == survey.hidden_intents
    assert spec.files_read == ("reading_plan.md",)
    assert spec.sim_time == 90.0 and spec.max_turns == 30  # pi-Bench's BenchmarkRunner.max_turns

    shop = demo.task("order_coffee_dripper")
    grading = grading_spec(
        shop.task, rule_scorer=shop.rule_scorer, rule_scorer_path=str(shop.rule_scorer_path)
    )
    assert grading.task_id == "order_coffee_dripper"
    assert grading.checklist == ()
    assert grading.rule_scorer == shop.rule_scorer
    assert grading.rule_scorer_path is not None and grading.rule_scorer_path.endswith(
        "order_coffee_dripper.py"
    )
    assert [(t.tool_name, t.call, t.result) for t in grading.tools] == [
        ("mcp_appworld_amazon__place_order", ("payment_card_id", "address_id"), ("response.order_id",)),
        ("mcp_appworld_amazon__show_order", ("order_id",), ("response.order_items",)),
    ]
    survey_grading = grading_spec(survey, rule_scorer=None, rule_scorer_path=None)
    assert [c.criterion for c in survey_grading.checklist] == [c.criterion for c in survey.checklist]
    assert survey_grading.hidden_intents == survey.hidden_intents
    assert survey_grading.files_read == ("reading_plan.md",)


# ---------------------------------------------------------------- models and specs


def test_environment_trigger_with_json_payload_is_sent_as_its_json_text() -> None:
    payload = {"event": "order_delayed", "order_id": 901, "eta_days": 4}
    task = parse_task(
        task_data(
            trigger={"type": "env"},
            intent={"initial_input": payload, "hidden_intent": [{"content": "Email the buyer."}]},
            metadata={"at_minutes": 240, "max_turns": 5, "owner": "kept"},
        ),
        where="t.yaml",
    )
    assert task.is_environment
    spec = session_spec(task, "ep", sim_time=240.0)
    assert spec.trigger.source == "webhook" and spec.trigger.payload == payload
    # No label: the JSON text itself, keys in the order written.
    assert spec.initial_input == '{"event": "order_delayed", "order_id": 901, "eta_days": 4}'
    assert spec.max_turns == 5
    assert task.metadata["owner"] == "kept"
    assert task.extensions.at_minutes == 240.0


def test_an_environment_triggers_text_is_sent_verbatim() -> None:
    text = '{"due": ["water the plants"]}\n'
    task = parse_task(
        task_data(
            trigger={"type": "environment"},
            intent={"initial_input": text, "hidden_intent": []},
            metadata={"trigger_source": "heartbeat"},
        ),
        where="t.yaml",
    )
    spec = session_spec(task, "ep", sim_time=0.0)
    assert spec.trigger.source == "heartbeat"
    assert spec.trigger.payload == {"due": ["water the plants"]}
    assert spec.initial_input == text  # the trailing newline too
    request = "  Please book the usual table.\n\nThanks!\n"
    user_task = parse_task(task_data(intent={"initial_input": request}), where="t")
    assert session_spec(user_task, "ep", sim_time=0.0).initial_input == request
    # pi-Bench's own spellings of the two trigger kinds are accepted too.
    assert parse_task(task_data(trigger={"type": "environmental_signal"}), where="t").is_environment
    assert not parse_task(task_data(trigger={"type": "user_query"}), where="t").is_environment


@pytest.mark.parametrize("task_type", ["val", "test", "long_term", "someday, maybe"])
def test_task_type_is_any_non_blank_text(task_type: str) -> None:
    assert parse_task(task_data(task_type=task_type), where="t").task_type == task_type


@pytest.mark.parametrize(("task_type", "message"), [("  ", "pattern"), ("", "at least 1"), (None, "string")])
def test_a_blank_task_type_is_refused(task_type: Any, message: str) -> None:
    task, problems = task_problems(task_data(task_type=task_type))
    assert task is None
    assert [p.field for p in problems] == ["task_type"] and message in problems[0].message
    data = task_data()
    del data["task_type"]
    assert task_problems(data)[1][0].message == "missing required field"


def test_opens_at_never_goes_back_in_time() -> None:
    task = parse_task(task_data(metadata={"at_minutes": 120}), where="t")
    assert opens_at(task, 30.0) == 120.0
    assert opens_at(task, 200.0) == 200.0
    assert opens_at(parse_task(task_data(), where="t"), 15.0) == 15.0


def test_parse_task_tolerates_published_quirks() -> None:
    data = task_data(task_id=7, files_read=None, tools=None, metadata=None)
    data["intent"]["hidden_intent"] = [{"content": "Keep it short.", "status": "not_provided"}]
    data["tools"] = [{"amazon__show_order": None, "call": ["order_id"]}]
    task = parse_task(data, where="t.yaml")
    assert task.task_id == "7"
    assert task.files_read == () and task.metadata == {}
    assert (task.tools[0].name, task.tools[0].call, task.tools[0].result) == (
        "amazon__show_order",
        ("order_id",),
        (),
    )


def test_metadata_oracle_is_the_gold_path() -> None:
    oracle = [
        {"calls": [{"tool": "read_file", "args": {"path": "a.md"}, "save": "a"}], "reply": "Read {a.path}"}
    ]
    task = parse_task(task_data(metadata={"oracle": oracle}), where="t")
    (turn,) = task.extensions.oracle
    assert turn.reply == "Read {a.path}" and turn.calls[0].tool == "read_file" and turn.calls[0].save == "a"
    _, problems = task_problems(task_data(metadata={"oracle": [{"calls": []}]}))
    assert [p.field for p in problems] == ["metadata.oracle[0].reply"]


def test_parse_errors_are_one_line_with_file_and_dotted_field() -> None:
    data = task_data()
    data["intent"]["hidden_intent"] = [{"content": "ok"}, {"content": "   "}]
    with pytest.raises(TaskFormatError) as caught:
        parse_task(data, where="tasks/t1/task.yaml")
    err = caught.value
    assert (err.file, err.field) == ("tasks/t1/task.yaml", "intent.hidden_intent[1].content")
    assert str(err).startswith("tasks/t1/task.yaml: intent.hidden_intent[1].content: ")
    assert "\n" not in str(err)

    with pytest.raises(TaskFormatError, match=r"^episode.yaml: tasks: missing required field$"):
        parse_episode({"episode_id": "e", "user_id": "u"}, where="episode.yaml")
    with pytest.raises(TaskFormatError, match=r"^x.yaml: \(file\): expected a mapping"):
        parse_task(["not", "a", "mapping"], where="x.yaml")  # type: ignore[arg-type]


def test_task_problems_lists_every_bad_field() -> None:
    data = task_data(schema_version="v1", task_type="someday", colour="blue")
    data["objectives"]["checklist"] = [{"criterion": "x", "weight": 0}]
    task, problems = task_problems(data)
    assert task is None
    fields = [p.field for p in problems]
    assert fields == ["schema_version", "objectives.checklist[0].weight", "colour"]  # task_type is free
    assert "unknown key 'colour'" in problems[-1].message


# ---------------------------------------------------------------- the linter: each check


def test_unknown_keys_anywhere_with_suggestions(tmp_path: Path) -> None:
    task = task_data()
    task["intent"]["hiden_intent"] = task["intent"].pop("hidden_intent")
    task["objectives"]["checklist"][0]["wieght"] = 2
    root = write_episode(tmp_path / "ep", [task])
    episode = yaml.safe_load((root / "episode.yaml").read_text())
    episode["tasks"][0]["depend_on"] = []
    episode["owner"] = "x"
    (root / "episode.yaml").write_text(yaml.safe_dump(episode))
    issues = lint_episode(root, SERVED)
    ep_file = str(root / "episode.yaml")
    assert only_issue(issues, "tasks[0].depend_on").file == ep_file
    assert "did you mean 'depends_on'" in only_issue(issues, "tasks[0].depend_on").message
    assert only_issue(issues, "owner").file == ep_file
    # The episode's errors stop the reading there; fix them and the task's unknown keys show.
    episode["tasks"][0].pop("depend_on")
    episode.pop("owner")
    (root / "episode.yaml").write_text(yaml.safe_dump(episode))
    issues = lint_episode(root, SERVED)
    task_file = str(root / "tasks" / "t1" / "task.yaml")
    hidden = only_issue(issues, "intent.hiden_intent")
    assert hidden.file == task_file and "did you mean 'hidden_intent'" in hidden.message
    assert "did you mean 'weight'" in only_issue(issues, "objectives.checklist[0].wieght").message


def test_dependency_order_checks(tmp_path: Path) -> None:
    tasks = [task_data(t) for t in ("a", "b", "c", "d")]
    depends = {"a": ["b"], "b": ["a", "b"], "c": ["zzz"], "d": ["a", "a"]}
    root = write_episode(tmp_path / "ep", tasks, depends=depends)
    issues = lint_episode(root, SERVED)
    assert "comes later" in only_issue(issues, "tasks[0].depends_on[0]").message
    assert "depends on itself" in only_issue(issues, "tasks[1].depends_on[1]").message
    assert "unknown task 'zzz'" in only_issue(issues, "tasks[2].depends_on[0]").message
    assert "listed twice" in only_issue(issues, "tasks[3].depends_on[1]", "warning").message
    assert only_issue(issues, "tasks").message == "dependency cycle a -> b -> a"
    assert issues_at(issues, "tasks[1].depends_on[0]") == []  # b after a is fine
    assert all(i.file == str(root / "episode.yaml") for i in issues)
    with pytest.raises(TaskFormatError, match=r"episode.yaml: tasks\[0\].depends_on\[0\]: 'b' comes later"):
        load_episode(root)


def test_listed_task_without_task_file_and_unlisted_task_dir(tmp_path: Path) -> None:
    root = write_episode(tmp_path / "ep", [task_data("a"), task_data("stray")], listed=["a", "ghost"])
    issues = lint_episode(root, SERVED)
    missing = only_issue(issues, "tasks[1].task_id")
    assert missing.file == str(root / "episode.yaml")
    assert "no tasks/ghost/task.yaml" in missing.message
    stray = only_issue(issues, "task_id", "warning")
    assert stray.file == str(root / "tasks" / "stray" / "task.yaml")


def test_a_persona_directory_is_named_after_its_user(tmp_path: Path) -> None:
    root = write_episode(tmp_path / "ep", [task_data()])
    assert lint_episode(root, SERVED) == []
    moved = root.rename(root.parent / "someone")
    issue = only_issue(lint_episode(moved, SERVED), "user_id", "warning")
    assert issue.file == str(moved / "episode.yaml")
    assert issue.message.startswith("pi-Bench reads persona 'u1' from data/u1/")
    assert load_episode(moved).episode.user_id == "u1"  # a warning only


def test_task_and_user_id_mismatches(tmp_path: Path) -> None:
    task = task_data("a", user_id="someone_else")
    root = write_episode(tmp_path / "ep", [task])
    (root / "tasks" / "a").rename(root / "tasks" / "b")
    episode = yaml.safe_load((root / "episode.yaml").read_text())
    episode["tasks"][0]["task_id"] = "b"
    (root / "episode.yaml").write_text(yaml.safe_dump(episode))
    issues = lint_episode(root, SERVED)
    task_file = str(root / "tasks" / "b" / "task.yaml")
    assert only_issue(issues, "task_id").file == task_file
    assert "'someone_else'" in only_issue(issues, "user_id").message


def shop_task(tools: list[dict[str, Any]], **changes: Any) -> dict[str, Any]:
    return task_data(objectives={"checklist": [], "tools": tools}, **changes)


def scored_shop_episode(
    where: Path, tools: list[dict[str, Any]], scorer: str, tools_yaml: str | None = None
) -> Path:
    """An episode of one shop task listing ``tools``, scored by ``scorer`` (``scripts/score.py``);
    with ``tools_yaml``, its persona offers the tools that names."""
    files = {"scripts/score.py": scorer} | ({} if tools_yaml is None else {"tools.yaml": tools_yaml})
    return write_episode(where, [shop_task(tools, tools_evaluation_path="scripts/score.py")], files=files)


def test_tool_names_in_a_tools_list_are_matched_prefix_tolerantly_and_only_warned(tmp_path: Path) -> None:
    tools = [
        {"mcp_appworld_amazon__show_order": {"call": ["order_id"]}},
        {"appworld_amazon__place_order": {"result": ["response.order_id"]}},
        {"mcp_amazon__add_product_to_cart": {"call": ["product_id"]}},
        {"read_file": {"call": ["path"]}},
        {"teleport": {"call": ["where"]}},
    ]
    root = write_episode(tmp_path / "ep", [shop_task(tools)])
    issues = lint_episode(root, SERVED)
    assert [i for i in issues if i.severity == "error"] == []
    assert issues_at(issues, "objectives.tools[0].mcp_appworld_amazon__show_order") == []
    assert issues_at(issues, "objectives.tools[3].read_file") == []  # nanobot's own name, bare
    unknown = only_issue(issues, "objectives.tools[4].teleport", "warning")
    assert unknown.message == "unknown tool 'teleport'"
    assert bare_tool_name("mcp_appworld_amazon__show_order") == "amazon__show_order"
    assert bare_tool_name("appworld_amazon__show_order") == bare_tool_name("mcp_amazon__show_order")
    assert bare_tool_name("read_file") == "read_file"
    # Loading does not know the tool names: it does not check them.
    assert load_episode(root).tasks[0].task.tools[4].name == "teleport"


def test_an_unprefixed_app_name_in_a_tools_list_never_matches_a_record(tmp_path: Path) -> None:
    tools = [
        {"amazon__place_order": {"call": ["address_id"]}},
        {"appworld_amazon__show_order": {"call": ["order_id"]}},
        {"mcp_appworld_amazon__show_cart": {"call": ["access_token"]}},
    ]
    root = write_episode(tmp_path / "ep", [shop_task(tools)])
    issues = lint_episode(root, SERVED)
    bare = only_issue(issues, "objectives.tools[0].amazon__place_order", "warning")
    assert "pi-Bench matches recorded names exactly" in bare.message
    assert "recorded as mcp_appworld_amazon__place_order, never as 'amazon__place_order'" in bare.message
    assert "never as 'appworld_amazon__show_order'" in (
        only_issue(issues, "objectives.tools[1].appworld_amazon__show_order", "warning").message
    )
    assert issues_at(issues, "objectives.tools[2].mcp_appworld_amazon__show_cart") == []
    assert load_episode(root).tasks[0].task.tools[0].name == "amazon__place_order"  # a warning only


def test_tools_yaml_decides_which_app_tools_a_task_can_use(tmp_path: Path) -> None:
    scorer = (
        "def score(tools_history):\n"
        "    names = {r['tool_name'] for r in tools_history}\n"
        "    return {'ordered': int('mcp_appworld_amazon__place_order' in names),\n"
        "            'carted': int('mcp_appworld_amazon__show_cart' in names)}\n"
    )
    tools = [
        {"mcp_appworld_amazon__place_order": {"call": ["address_id"]}},
        {"mcp_appworld_amazon__show_cart": {"call": ["access_token"]}},
        {"read_file": {"call": ["path"]}},
    ]
    tools_yaml = "tool_names:\n  - amazon__login\n  - amazon__place_order\n"
    root = scored_shop_episode(tmp_path / "ep", tools, scorer, tools_yaml)
    issues = lint_episode(root, SERVED)
    not_offered = only_issue(issues, "objectives.tools[1].mcp_appworld_amazon__show_cart", "warning")
    assert (
        not_offered.message == "'mcp_appworld_amazon__show_cart': the persona's tools.yaml does not offer it"
    )
    assert issues_at(issues, "objectives.tools[0].mcp_appworld_amazon__place_order") == []
    assert issues_at(issues, "objectives.tools[2].read_file") == []  # workspace tools are always offered
    in_scorer = only_issue(issues, "score", "warning")
    assert in_scorer.file == str(root / "scripts" / "score.py")
    assert "'mcp_appworld_amazon__show_cart': the persona's tools.yaml does not offer it" in in_scorer.message
    loaded = load_episode(root)
    assert loaded.offered == ("amazon__login", "amazon__place_order")
    # Without tools.yaml every tool we serve is offered.
    (root / "tools.yaml").unlink()
    assert [i for i in lint_episode(root, SERVED) if "offer" in i.message] == []
    assert load_episode(root).offered is None


def test_a_tool_only_appworld_serves_is_a_warning(tmp_path: Path) -> None:
    tools = [{"mcp_appworld_file_system__show_file": {"call": ["file_path"]}}]
    scorer = (
        "def score(h):\n"
        "    return {'returned': int(any(r['tool_name'] == 'amazon__initiate_return' for r in h))}\n"
    )
    tools_yaml = "tool_names: [file_system__show_file, amazon__initiate_return]\n"
    root = scored_shop_episode(tmp_path / "ep", tools, scorer, tools_yaml)
    issues = lint_episode(root, SERVED)
    listed = only_issue(issues, "objectives.tools[0].mcp_appworld_file_system__show_file", "warning")
    assert listed.message.endswith(
        "not served by the built-in apps (--apps appworld serves AppWorld's APIs, if it has it)"
    )
    scored = only_issue(issues, "score", "warning")
    assert "'amazon__initiate_return': not served by the built-in apps" in scored.message
    # tools.yaml itself names each offered tool the built-in apps do not serve.
    offered = [i for i in issues if i.file == str(root / "tools.yaml")]
    assert [(i.field, i.severity) for i in offered] == [
        ("tool_names[0]", "warning"),
        ("tool_names[1]", "warning"),
    ]
    assert "'file_system__show_file' is not served by the built-in apps" in offered[0].message
    assert [i for i in issues if i.severity == "error"] == []
    assert load_episode(root).offered == ("file_system__show_file", "amazon__initiate_return")


def test_a_scorer_only_sees_the_tools_its_task_lists(tmp_path: Path) -> None:
    scorer = (
        "def score(tools_history):\n"
        "    names = [r['tool_name'] for r in tools_history]\n"
        "    return {'shown': int('mcp_appworld_amazon__show_order' in names),\n"
        "            'mailed': int('mcp_appworld_gmail__send_email' in names)}\n"
    )
    root = scored_shop_episode(
        tmp_path / "ep", [{"mcp_appworld_amazon__show_order": {"call": ["order_id"]}}], scorer
    )
    issue = only_issue(lint_episode(root, SERVED), "score", "warning")
    assert issue.file == str(root / "scripts" / "score.py")
    assert (
        "the scorer looks for 'mcp_appworld_gmail__send_email', which task t1's tools list does not name"
        in issue.message
    )
    # With no tools list pi-Bench passes the scorer every call: nothing to warn about.
    unlisted = task_data(tools_evaluation_path="scripts/s.py")
    root = write_episode(tmp_path / "ep2", [unlisted], files={"scripts/s.py": scorer})
    assert issues_at(lint_episode(root, SERVED), "score") == []


def test_prefix_strings_in_a_scorer_are_no_tool_names(tmp_path: Path) -> None:
    # pi-Bench's scripts strip the prefix themselves; neither the prefix nor a key naming a tool
    # inside a sentence is a tool the scorer looks for.
    scorer = (
        "PREFIXES = ('mcp_appworld_', 'appworld_', 'mcp_')\n"
        "def _norm(name):\n"
        "    return str(name).removeprefix('mcp_appworld_')\n"
        "def score(tools_history):\n"
        "    names = {_norm(r.get('tool_name')) for r in tools_history}\n"
        "    return {'used amazon__place_order successfully': int('amazon__place_order' in names),\n"
        "            'mcp_appworld_ calls': len(names) > 0}\n"
    )
    tools = [{"mcp_appworld_amazon__place_order": {"call": ["address_id"]}}]
    assert lint_episode(scored_shop_episode(tmp_path / "ep", tools, scorer), SERVED) == []


def test_a_scorer_inside_the_task_directory_is_staged_and_warned(tmp_path: Path) -> None:
    scorer = "def score(tools_history):\n    return {'ok': 1}\n"
    files = {"tasks/t1/evaluate.py": scorer, "tasks/t1/notes.md": "hello"}
    root = write_episode(tmp_path / "ep", [task_data(tools_evaluation_path="evaluate.py")], files=files)
    loaded = load_episode(root).tasks[0]
    assert loaded.rule_scorer == scorer
    # pi-Bench stages every file of the task directory: the scorer lands in the workspace.
    assert loaded.assets == {"evaluate.py": scorer, "notes.md": "hello"}
    warning = only_issue(lint_episode(root, SERVED), "(asset)", "warning")
    assert warning.file == str(root / "tasks" / "t1" / "evaluate.py")
    assert "keep scorers in the persona's scripts/" in warning.message
    # The same scorer in scripts/: no warning, nothing staged.
    files = {"scripts/evaluate.py": scorer, "tasks/t1/notes.md": "hello"}
    root = write_episode(
        tmp_path / "ep2", [task_data(tools_evaluation_path="scripts/evaluate.py")], files=files
    )
    assert load_episode(root).tasks[0].assets == {"notes.md": "hello"}
    assert lint_episode(root, SERVED) == []


SEED = """\
people:
  - {first_name: Ana, last_name: Ruiz, email: ana.ruiz@example.com, phone_number: "5550001111",
     accounts: {amazon: pw, phone: pw, gmail: pw}}
  - {first_name: Ben, email: ben@example.com, accounts: [gmail]}
apps:
  amazon:
    products: [{product_id: 7, name: Kettle, price: 40.0}]
  spotify:
    songs: [{song_id: 3, title: Low Harbors}]
"""


def test_records_the_loaded_world_lacks_are_warnings(tmp_path: Path) -> None:
    task = task_data(metadata={"app_state": {"amazon": {"products": [{"product_id": 8, "name": "Mug"}]}}})
    task["intent"]["hidden_intent"] = [
        {"content": "Mail ana.ruiz@example.com and BEN@example.com, not zoe@example.com."},
        {"content": "Text 5550001111 and 5559998888, never 555-000-1111."},
        {"content": "Compare product 7, product #8 and product id 9; play song 3 and song 4."},
    ]
    scorer = (
        "TARGET_PRODUCT_ID = 7\n"
        "EXPECTED_SONG_ID = 5\n"
        "GOLD_WIDGET_ID = 12\n"
        "def _seen(item, playlist_id):\n"
        "    return item['song_id'] == 3 or item.product_id != 7 or playlist_id in [31, 33]\n"
        "def score(tools_history):\n"
        "    want = {'product_id': 10, 'song_id': 3, 'to': 'cy@example.com'}\n"
        "    return {'found': int(bool(tools_history) and bool(want))}\n"
    )
    root = write_episode(
        tmp_path / "ep",
        [{**task, "tools_evaluation_path": "scripts/s.py"}],
        files={"seed.yaml": SEED, "scripts/s.py": scorer},
    )
    issues = lint_episode(root, SERVED)
    assert sorted(warnings(issues)) == sorted(
        [
            "task.yaml: intent: no person with email zoe@example.com in the loaded world",
            "task.yaml: intent: no phone user with number 5559998888 in the loaded world",
            "task.yaml: intent: no product with id 9 in the loaded world",
            "task.yaml: intent: no song with id 4 in the loaded world",
            "s.py: score: no person with email cy@example.com in the loaded world",
            "s.py: score: no product with id 10 in the loaded world",
            "s.py: score: no song with id 5 in the loaded world",
            "s.py: score: no playlist with id 31 in the loaded world",
            "s.py: score: no playlist with id 33 in the loaded world",
        ]
    )
    assert [i for i in issues if i.severity == "error"] == []
    assert load_episode(root).seed is not None  # the data still loads


def test_records_without_a_seed_are_all_missing(tmp_path: Path) -> None:
    task = task_data()
    task["intent"]["hidden_intent"] = [{"content": "Reply to ana.ruiz@example.com about order 901."}]
    root = write_episode(tmp_path / "ep", [task])
    assert sorted(warnings(lint_episode(root, SERVED))) == [
        "task.yaml: intent: no order with id 901 in the loaded world",
        "task.yaml: intent: no person with email ana.ruiz@example.com in the loaded world",
    ]


def test_app_state_of_an_app_nobody_serves_is_a_warning(tmp_path: Path) -> None:
    task = task_data(metadata={"app_state": {"weather": {"forecasts": [{"forecast_id": 1}]}}})
    root = write_episode(tmp_path / "ep", [task])
    issue = only_issue(lint_episode(root, SERVED), "metadata.app_state.weather", "warning")
    assert issue.message.startswith("no app 'weather'; apps: amazon, gmail, phone, simple_note")


TOOLS_YAML_ERRORS = [
    ("tool_names: amazon__login\n", "tool_names", "expected a list of tool names"),
    ("tool_names: [amazon__login, '  ']\n", "tool_names", "expected a list of tool names"),
    ("tool_names: [amazon__login, 3]\n", "tool_names", "expected a list of tool names"),
    ("{}\n", "tool_names", "expected a list of tool names"),
    ("- amazon__login\n- Amazon Login\n", "tool_names[1]", "'Amazon Login' is not an app tool name"),
    ("tool_names: [read_file]\n", "tool_names[0]", "'read_file' is not an app tool name"),
    ("tool_names: [amazon__login\n", "(file)", "not valid YAML: line"),
]
SEED_YAML_ERRORS = [
    ("start_time: '5 May'\n", "start_time", "write the time as YYYY-MM-DDTHH:MM:SS"),
    ("people:\n  - {first_name: A, email: nope}\n", "people[0].email", "pattern"),
    ("people:\n  - {email: a@b.c}\n", "people[0].first_name", "missing required field"),
    (
        "people:\n  - {first_name: A, email: a@b.c, user_id: 0}\n",
        "people[0].user_id",
        "greater than or equal to 1",
    ),
    ("people:\n  - {first_name: A, email: a@b.c, accounts: 3}\n", "people[0].accounts", "dictionary"),
    ("people:\n  - {first_name: A, email: a@b.c, emial: x}\n", "people[0].emial", "unknown key 'emial'"),
    ("apps:\n  amazon: [1]\n", "apps.amazon", "valid dictionary"),
    ("apps:\n  amazon: {products: [{price: .nan}]}\n", "apps", "apps.amazon is not JSON data"),
    ("colour: blue\n", "colour", "unknown key 'colour'; known here: apps, people, start_time"),
    ("- a\n", "(file)", "expected a mapping with people and apps"),
    ("people: [\n", "(file)", "not valid YAML: line 2"),
]


@pytest.mark.parametrize(
    ("name", "text", "field", "expected"),
    [("tools.yaml", *row) for row in TOOLS_YAML_ERRORS] + [("seed.yaml", *row) for row in SEED_YAML_ERRORS],
)
def test_yaml_errors_name_their_field(
    tmp_path: Path, name: str, text: str, field: str, expected: str
) -> None:
    root = write_episode(tmp_path / "ep", [task_data()], files={name: text})
    issue = only_issue(lint_episode(root, SERVED), field)
    assert issue.file == str(root / name)
    assert expected in issue.message
    with pytest.raises(TaskFormatError, match=re.escape(f"{name}: ")):
        load_episode(root)


def test_tools_yaml_in_either_published_form(tmp_path: Path) -> None:
    listed = write_episode(
        tmp_path / "a",
        [task_data()],
        files={"tools.yaml": "- amazon__login\n- amazon__login\n- gmail__login\n"},
    )
    assert load_episode(listed).offered == ("amazon__login", "gmail__login")  # duplicates once
    mapped = write_episode(
        tmp_path / "b", [task_data()], files={"tools.yaml": "tool_names: [spotify__login]\n"}
    )
    assert load_episode(mapped).offered == ("spotify__login",)


def test_profile_yaml_is_checked(tmp_path: Path) -> None:
    root = write_episode(
        tmp_path / "ep", [task_data()], files={"profile.yaml": "user_id: someone\nrole: x\n"}
    )
    issue = only_issue(lint_episode(root, SERVED), "user_id", "warning")
    assert issue.file == str(root / "profile.yaml") and "differs from the episode's 'u1'" in issue.message
    assert load_episode(root).profile == {"user_id": "someone", "role": "x"}
    (root / "profile.yaml").write_text("- not a mapping\n")
    assert only_issue(lint_episode(root, SERVED), "(file)").file == str(root / "profile.yaml")
    (root / "profile.yaml").unlink()
    assert load_episode(root).profile is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (None, "no file 'scripts/evaluate.py'"),
        ("def grade(history):\n    return {}\n", "defines no top-level `def score(tools_history)`"),
        ("class S:\n    def score(self, h):\n        return {}\n", "defines no top-level"),
        ("def score(history:\n", "does not parse: line 1"),
        ("def score():\n    return {}\n", "score() takes no argument"),
    ],
)
def test_rule_scorer_checks(tmp_path: Path, source: str | None, expected: str) -> None:
    files = {} if source is None else {"scripts/evaluate.py": source}
    task = task_data(tools_evaluation_path="scripts/evaluate.py")
    root = write_episode(tmp_path / "ep", [task], files=files)
    issue = only_issue(lint_episode(root, SERVED), "tools_evaluation_path")
    assert issue.file == str(root / "tasks" / "t1" / "task.yaml")
    assert expected in issue.message
    with pytest.raises(TaskFormatError, match=r"task.yaml: tools_evaluation_path: "):
        load_episode(root)


def test_files_read_provenance(tmp_path: Path) -> None:
    first = task_data("a")
    second = task_data(
        "b",
        files_read=[
            "./data/prices.csv",
            "summary_week2.md",
            "mystery.txt",
            "outputs/plan.md",
            "skills/x/y.md",
        ],
    )
    second["intent"]["hidden_intent"] = [{"content": "Save the result as summary_week2.md."}]
    second["objectives"]["checklist"] = [{"criterion": "outputs/plan.md lists three steps."}]
    files = {"tasks/a/data/prices.csv": "item,price\n", "skills/x/y.md": "a skill"}
    root = write_episode(tmp_path / "ep", [first, second], files=files)
    issues = lint_episode(root, SERVED)
    # an earlier task's asset, an output named in a hidden intent or checklist item, a skill: fine
    for index in (0, 1, 3, 4):
        assert issues_at(issues, f"files_read[{index}]") == []
    mystery = only_issue(issues, "files_read[2]", "warning")
    assert mystery.file == str(root / "tasks" / "b" / "task.yaml")
    assert "'mystery.txt'" in mystery.message
    assert load_episode(root).tasks[1].task.files_read[2] == "mystery.txt"  # a warning never blocks


def test_trigger_spelling_suggests_accepted_ones(tmp_path: Path) -> None:
    root = write_episode(tmp_path / "ep", [task_data(trigger={"type": "enviroment"})])
    issue = only_issue(lint_episode(root, SERVED), "trigger.type")
    assert "did you mean 'environment'" in issue.message
    assert "accepted: user, user_query, env, environment, environmental_signal" in issue.message


def test_empty_hidden_intents_warn(tmp_path: Path) -> None:
    task = task_data()
    task["intent"]["hidden_intent"] = []
    root = write_episode(tmp_path / "ep", [task])
    issue = only_issue(lint_episode(root, SERVED), "intent.hidden_intent", "warning")
    assert issue.file.endswith("task.yaml")
    assert load_episode(root).tasks[0].task.hidden_intents == ()


@pytest.mark.parametrize(
    ("metadata", "field", "expected"),
    [
        ({"at_minutes": -5}, "metadata.at_minutes", "greater than or equal to 0"),
        ({"trigger_source": "cron"}, "metadata.trigger_source", "'webhook' or 'heartbeat'"),
        ({"max_turns": 0}, "metadata.max_turns", "greater than or equal to 1"),
        ({"app_state": {"amazon": {"products": [5]}}}, "metadata.app_state.amazon.products[0]", "a record"),
        ({"app_state": {"amazon": [1]}}, "metadata.app_state.amazon", "valid dictionary"),
        (
            {"state_checks": [{"criterion": "c", "path": "apps.amazon.orders", "op": "equals", "value": 2}]},
            "metadata.state_checks[0].value",
            "{value: ...}",
        ),
        (
            {"state_checks": [{"criterion": "c", "path": "apps.amazon.orders", "op": "contains"}]},
            "metadata.state_checks[0].value",
            "needs a value",
        ),
        (
            {"state_checks": [{"criterion": "c", "path": "p", "opp": "exists"}]},
            "metadata.state_checks[0].opp",
            "",
        ),
    ],
)
def test_bad_metadata_extensions(tmp_path: Path, metadata: dict[str, Any], field: str, expected: str) -> None:
    root = write_episode(tmp_path / "ep", [task_data(metadata=metadata)])
    issue = only_issue(lint_episode(root, SERVED), field)
    assert expected in issue.message


def test_good_metadata_extensions_reach_specs() -> None:
    check = {"criterion": "An order exists", "path": "apps.amazon.orders", "op": "exists"}
    task = parse_task(
        task_data(
            metadata={"app_state": {"amazon": {"products": [{"product_id": 7}]}}, "state_checks": [check]}
        ),
        where="t",
    )
    assert task.extensions.app_state == {"amazon": {"products": [{"product_id": 7}]}}
    (state_check,) = grading_spec(task, rule_scorer=None, rule_scorer_path=None).state_checks
    assert (state_check.path, state_check.op) == ("apps.amazon.orders", "exists")


# ---------------------------------------------------------------- staging, as pi-Bench stages a task


def test_assets_keep_their_paths_relative_to_the_task_directory(tmp_path: Path) -> None:
    files: dict[str, bytes | str] = {
        "tasks/t1/README.md": "readme",
        "tasks/t1/assets/notes/today.md": "today",  # no prefix is stripped
        "tasks/t1/workspace/plan.txt": "plan",
        "tasks/t1/data/2025/prices.csv": "item,price\n",
        "tasks/t1/data/task.yaml": "nested: kept",  # the blacklist is of top-level entries only
        "tasks/t1/.history/turn_1.json": "{}",
        "tasks/t1/.result": "x",
        "tasks/t1/.eval_result/score.json": "{}",
        "tasks/t1/__pycache__/x.cpython-311.pyc": b"\x00\x01",
        "tasks/t1/data/.DS_Store": b"\x00",
    }
    root = write_episode(tmp_path / "ep", [task_data()], files=files)
    loaded = load_episode(root).tasks[0]
    assert loaded.assets == {
        "README.md": "readme",
        "assets/notes/today.md": "today",
        "data/2025/prices.csv": "item,price\n",
        "data/task.yaml": "nested: kept",
        "workspace/plan.txt": "plan",
    }
    assert loaded.binaries == {}
    assert list(loaded.assets) == sorted(loaded.assets)


def test_binary_assets_survive_byte_for_byte(tmp_path: Path) -> None:
    blob = bytes(range(256)) * 3
    latin = "café".encode("latin-1")  # not UTF-8 either
    files = {"tasks/t1/photo.png": PNG, "tasks/t1/data/blob.bin": blob, "tasks/t1/old.txt": latin}
    root = write_episode(tmp_path / "ep", [task_data()], files=files)
    loaded = load_episode(root).tasks[0]
    assert set(loaded.binaries) == {"photo.png", "data/blob.bin", "old.txt"} and loaded.assets == {}
    for path, data in (("photo.png", PNG), ("data/blob.bin", blob), ("old.txt", latin)):
        assert base64.b64decode(loaded.binaries[path], validate=True) == data
    assert lint_episode(root, SERVED) == []  # a binary asset is no problem


def test_the_personas_skills_are_staged_into_every_task(tmp_path: Path) -> None:
    files: dict[str, bytes | str] = {
        "skills/summarise/SKILL.md": "# summarise",
        "skills/summarise/logo.png": PNG,
        "skills/summarise/refs/a.md": "ref",
        "tasks/a/notes.md": "a's notes",
    }
    root = write_episode(tmp_path / "ep", [task_data("a"), task_data("b")], files=files)
    first, second = load_episode(root).tasks
    for task in (first, second):
        assert {k: v for k, v in task.assets.items() if k.startswith("skills/")} == {
            "skills/summarise/SKILL.md": "# summarise",
            "skills/summarise/refs/a.md": "ref",
        }
        assert base64.b64decode(task.binaries["skills/summarise/logo.png"]) == PNG
    assert first.assets["notes.md"] == "a's notes" and "notes.md" not in second.assets
    without = write_episode(tmp_path / "ep2", [task_data()])
    assert load_episode(without).tasks[0].assets == {}


def test_the_personas_skills_replace_a_tasks_own_skills_directory(tmp_path: Path) -> None:
    files = {
        "skills/tips/SKILL.md": "persona",
        "tasks/t1/skills/tips/SKILL.md": "task",
        "tasks/t1/skills/extra.md": "task only",
    }
    root = write_episode(tmp_path / "ep", [task_data()], files=files)
    assets = load_episode(root).tasks[0].assets
    assert {k: v for k, v in assets.items() if k.startswith("skills/")} == {"skills/tips/SKILL.md": "persona"}


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    root = write_episode(tmp_path / "ep", [task_data()])
    (root / "tasks" / "t1" / "task.yaml").write_text("title: [unclosed\ntask_id: t1\n")
    issue = only_issue(lint_episode(root, SERVED), "(file)")
    assert "not valid YAML: line" in issue.message


def test_objectives_and_top_level_conflict(tmp_path: Path) -> None:
    task = task_data(files_read=["a.md"])
    task["objectives"]["files_read"] = ["b.md"]
    root = write_episode(tmp_path / "ep", [task])
    issue = only_issue(lint_episode(root, SERVED), "objectives.files_read")
    assert "both" in issue.message


def test_lint_reports_problems_of_every_file_at_once(tmp_path: Path) -> None:
    bad_a = task_data("a", trigger={"type": "usr"})
    bad_b = task_data("b", schema_version="v1")
    files = {"tools.yaml": "tool_names: nope\n", "seed.yaml": "people: 3\n"}
    root = write_episode(tmp_path / "ep", [bad_a, bad_b], depends={"b": ["nope"]}, files=files)
    issues = lint_episode(root, SERVED)
    errors = [(Path(i.file).name, i.field) for i in issues if i.severity == "error"]
    assert errors == [
        ("episode.yaml", "tasks[1].depends_on[0]"),
        ("tools.yaml", "tool_names"),
        ("seed.yaml", "people"),
        ("task.yaml", "trigger.type"),
        ("task.yaml", "schema_version"),
    ]
    with pytest.raises(TaskFormatError) as caught:
        load_episode(root)
    assert caught.value.field == "tasks[1].depends_on[0]"  # the first error only


def test_find_episodes(tmp_path: Path) -> None:
    second = write_episode(tmp_path / "suite" / "z_second", [task_data()])
    first = write_episode(tmp_path / "suite" / "a_first", [task_data()])
    assert find_episodes(tmp_path / "suite") == [first, second]
    assert find_episodes(first) == [first]
    (tmp_path / "no_episodes").mkdir()
    assert find_episodes(tmp_path / "no_episodes") == []
    with pytest.raises(TaskFormatError, match="no such directory"):
        find_episodes(tmp_path / "absent")


def test_task_file_model_round_trips_its_own_dump() -> None:
    task = parse_task(task_data(tools=[{"read_file": {"call": ["path"]}}]), where="t")
    assert TaskFile.model_validate(task.model_dump()) == task


def test_rule_scorer_path_relative_to_repository_root(tmp_path: Path) -> None:
    # pi-Bench resolves tools_evaluation_path against its repository root, above data/<user>/.
    (tmp_path / "scorers").mkdir()
    (tmp_path / "scorers" / "shop.py").write_text("def score(tools_history):\n    return {}\n")
    root = write_episode(tmp_path, [task_data(tools_evaluation_path="scorers/shop.py")])
    loaded = load_episode(root).tasks[0]
    assert loaded.rule_scorer_path is not None
    assert loaded.rule_scorer_path.resolve() == (tmp_path / "scorers" / "shop.py").resolve()
