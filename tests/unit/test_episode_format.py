"""pi-Bench's task and episode files: strict models, the loader, the linter, session/grading specs."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.episodes.loader import (
    LintIssue,
    LoadedEpisode,
    bare_tool_name,
    find_episodes,
    lint_episode,
    load_episode,
)
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

KNOWN_TOOLS = frozenset(
    {
        "read_file",
        "write_file",
        "ask_user",
        "mcp_appworld_amazon__search_products",
        "mcp_appworld_amazon__add_product_to_cart",
        "mcp_appworld_amazon__place_order",
        "mcp_appworld_amazon__show_order",
        "mcp_appworld_gmail__send_email",
    }
)


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
    root: Path,
    tasks: list[dict[str, Any]],
    *,
    depends: dict[str, list[str]] | None = None,
    files: Mapping[str, bytes | str] | None = None,
    listed: list[str] | None = None,
) -> Path:
    """An episode directory: episode.yaml, each task's task.yaml, and extra files (path -> content)."""
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


# ---------------------------------------------------------------- the published layout, unchanged


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
    assert set(survey.assets) == {"accepted_papers_2025.md"}
    assert "Drift-Aware Entropy Minimization" in survey.assets["accepted_papers_2025.md"]
    assert survey.rule_scorer is None and survey.rule_scorer_path is None
    assert task.metadata == {"category": "A", "source": "pi-Bench Appendix G example, placeholders invented"}


def test_fixture_shopping_task_resolves_scorer_from_repo_root(demo: LoadedEpisode) -> None:
    shop = demo.task("order_coffee_dripper")
    # tools_evaluation_path is relative to pi-Bench's repository root (data/<user>/tasks/...).
    assert shop.task.tools_evaluation_path == "data/pibench_demo/tasks/order_coffee_dripper/tools_eval.py"
    assert shop.rule_scorer_path is not None
    assert shop.rule_scorer_path.resolve() == (DEMO / "tasks" / "order_coffee_dripper" / "tools_eval.py")
    assert shop.rule_scorer is not None and "TARGET_PRODUCT_ID = 1578" in shop.rule_scorer
    assert shop.assets == {}  # the scorer and task.yaml are not workspace files
    (tool,) = shop.task.tools
    assert (tool.name, tool.call, tool.result) == (
        "mcp_appworld_amazon__show_order",
        ("order_id",),
        ("response.order_items",),
    )


def test_fixture_scorer_is_the_papers_c6_evaluator(demo: LoadedEpisode) -> None:
    source = demo.task("order_coffee_dripper").rule_scorer
    assert source is not None
    namespace: dict[str, Any] = {}
    exec(compile(source, "tools_eval.py", "exec"), namespace)
    place = {
        "tool_name": "mcp_appworld_amazon__place_order",
        "call": {"payment_card_id": 1, "address_id": 2},
        "result": {"response": {"order_id": 901}},
    }
    show: dict[str, Any] = {
        "tool_name": "mcp_appworld_amazon__show_order",
        "call": {"order_id": 901},
        "result": {
            "response": {"order_id": 901, "order_items": [{"product_id": 1578, "ordered_quantity": 2}]}
        },
    }
    assert set(namespace["score"]([place, show]).values()) == {1}
    one = copy.deepcopy(show)
    one["result"]["response"]["order_items"][0]["ordered_quantity"] = 1
    scores = namespace["score"]([place, one])
    assert scores["show_order confirms target product"] == 1
    assert scores["show_order confirms ordered_quantity == 2"] == 0


def test_fixture_lints_clean(demo: LoadedEpisode) -> None:
    assert lint_episode(DEMO, KNOWN_TOOLS) == []


def test_session_and_grading_specs_of_fixture(demo: LoadedEpisode) -> None:
    survey = demo.task("survey_recent_papers").task
    spec = session_spec(survey, "ep-run-1", sim_time=90.0)
    assert spec.episode_id == "ep-run-1" and spec.task_id == "survey_recent_papers"
    assert spec.user_id == "pibench_demo" and spec.title == survey.title
    assert spec.initial_input.startswith("I wrote a local file at accepted_papers_2025.md")
    assert spec.trigger.source == "user" and spec.trigger.payload is None
    assert spec.hidden_intents == survey.hidden_intents
    assert spec.files_read == ("reading_plan.md",)
    assert spec.sim_time == 90.0 and spec.max_turns == 12

    shop = demo.task("order_coffee_dripper")
    grading = grading_spec(
        shop.task, rule_scorer=shop.rule_scorer, rule_scorer_path=str(shop.rule_scorer_path)
    )
    assert grading.task_id == "order_coffee_dripper"
    assert grading.checklist == ()
    assert grading.rule_scorer == shop.rule_scorer
    assert grading.rule_scorer_path is not None and grading.rule_scorer_path.endswith("tools_eval.py")
    assert [(t.tool_name, t.call, t.result) for t in grading.tools] == [
        ("mcp_appworld_amazon__show_order", ("order_id",), ("response.order_items",))
    ]
    survey_grading = grading_spec(survey, rule_scorer=None, rule_scorer_path=None)
    assert [c.criterion for c in survey_grading.checklist] == [c.criterion for c in survey.checklist]
    assert survey_grading.hidden_intents == survey.hidden_intents
    assert survey_grading.files_read == ("reading_plan.md",)


# ---------------------------------------------------------------- models and specs


def test_environment_trigger_with_json_payload_becomes_structured_trigger() -> None:
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
    assert spec.initial_input == 'Webhook event: {"eta_days": 4, "event": "order_delayed", "order_id": 901}'
    assert spec.max_turns == 5
    assert task.metadata["owner"] == "kept"
    assert task.extensions.at_minutes == 240.0


def test_heartbeat_and_json_text_payload() -> None:
    task = parse_task(
        task_data(
            trigger={"type": "environment"},
            intent={"initial_input": '{"due": ["water the plants"]}\n', "hidden_intent": []},
            metadata={"trigger_source": "heartbeat"},
        ),
        where="t.yaml",
    )
    spec = session_spec(task, "ep", sim_time=0.0)
    assert spec.trigger.source == "heartbeat"
    assert spec.trigger.payload == {"due": ["water the plants"]}
    assert spec.initial_input == 'Heartbeat: {"due": ["water the plants"]}'
    # pi-Bench's own spellings of the two trigger kinds are accepted too.
    assert parse_task(task_data(trigger={"type": "environmental_signal"}), where="t").is_environment
    assert not parse_task(task_data(trigger={"type": "user_query"}), where="t").is_environment


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
    assert fields == ["schema_version", "task_type", "objectives.checklist[0].weight", "colour"]
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
    issues = lint_episode(root, KNOWN_TOOLS)
    ep_file = str(root / "episode.yaml")
    assert only_issue(issues, "tasks[0].depend_on").file == ep_file
    assert "did you mean 'depends_on'" in only_issue(issues, "tasks[0].depend_on").message
    assert only_issue(issues, "owner").file == ep_file
    # The episode's errors stop the reading there; fix them and the task's unknown keys show.
    episode["tasks"][0].pop("depend_on")
    episode.pop("owner")
    (root / "episode.yaml").write_text(yaml.safe_dump(episode))
    issues = lint_episode(root, KNOWN_TOOLS)
    task_file = str(root / "tasks" / "t1" / "task.yaml")
    hidden = only_issue(issues, "intent.hiden_intent")
    assert hidden.file == task_file and "did you mean 'hidden_intent'" in hidden.message
    assert "did you mean 'weight'" in only_issue(issues, "objectives.checklist[0].wieght").message


def test_dependency_order_checks(tmp_path: Path) -> None:
    tasks = [task_data(t) for t in ("a", "b", "c", "d")]
    depends = {"a": ["b"], "b": ["a", "b"], "c": ["zzz"], "d": ["a", "a"]}
    root = write_episode(tmp_path / "ep", tasks, depends=depends)
    issues = lint_episode(root, KNOWN_TOOLS)
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
    issues = lint_episode(root, KNOWN_TOOLS)
    missing = only_issue(issues, "tasks[1].task_id")
    assert missing.file == str(root / "episode.yaml")
    assert "no tasks/ghost/task.yaml" in missing.message
    stray = only_issue(issues, "task_id", "warning")
    assert stray.file == str(root / "tasks" / "stray" / "task.yaml")


def test_task_and_user_id_mismatches(tmp_path: Path) -> None:
    task = task_data("a", user_id="someone_else")
    root = write_episode(tmp_path / "ep", [task])
    (root / "tasks" / "a").rename(root / "tasks" / "b")
    episode = yaml.safe_load((root / "episode.yaml").read_text())
    episode["tasks"][0]["task_id"] = "b"
    (root / "episode.yaml").write_text(yaml.safe_dump(episode))
    issues = lint_episode(root, KNOWN_TOOLS)
    task_file = str(root / "tasks" / "b" / "task.yaml")
    assert only_issue(issues, "task_id").file == task_file
    assert "'someone_else'" in only_issue(issues, "user_id").message


def test_unknown_tool_names_prefix_tolerant(tmp_path: Path) -> None:
    tools = [
        {"amazon__show_order": {"call": ["order_id"]}},
        {"appworld_amazon__place_order": {"result": ["response.order_id"]}},
        {"mcp_amazon__add_product_to_cart": {"call": ["product_id"]}},
        {"mcp_appworld_gmail__send_email": {"call": ["to"]}},
        {"mcp_appworld_amazon__show_ordr": {"call": ["order_id"]}},
    ]
    root = write_episode(tmp_path / "ep", [task_data(objectives={"checklist": [], "tools": tools})])
    issues = lint_episode(root, KNOWN_TOOLS)
    bad = only_issue(issues, "objectives.tools[4].mcp_appworld_amazon__show_ordr")
    assert "did you mean 'mcp_appworld_amazon__show_order'" in bad.message
    assert [i for i in issues if i.severity == "error"] == [bad]
    assert bare_tool_name("mcp_appworld_amazon__show_order") == bare_tool_name("amazon__show_order")
    # Loading does not know the tool names: it does not check them.
    assert load_episode(root).tasks[0].task.tools[4].name == "mcp_appworld_amazon__show_ordr"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (None, "no file 'evaluate.py'"),
        ("def grade(history):\n    return {}\n", "defines no top-level `def score(tools_history)`"),
        ("class S:\n    def score(self, h):\n        return {}\n", "defines no top-level"),
        ("def score(history:\n", "does not parse: line 1"),
        ("def score():\n    return {}\n", "score() takes no argument"),
    ],
)
def test_rule_scorer_checks(tmp_path: Path, source: str | None, expected: str) -> None:
    files = {} if source is None else {"tasks/t1/evaluate.py": source}
    task = task_data(tools_evaluation_path="evaluate.py")
    root = write_episode(tmp_path / "ep", [task], files=files)
    issue = only_issue(lint_episode(root, KNOWN_TOOLS), "tools_evaluation_path")
    assert issue.file == str(root / "tasks" / "t1" / "task.yaml")
    assert expected in issue.message
    with pytest.raises(TaskFormatError, match=r"task.yaml: tools_evaluation_path: "):
        load_episode(root)


def test_rule_scorer_found_beside_task_and_excluded_from_assets(tmp_path: Path) -> None:
    scorer = (
        "def score(tools_history):\n"
        "    seen = any(r['tool_name'] == 'mcp_appworld_amazon__plase_order' for r in tools_history)\n"
        "    return {'order placed': int(seen)}\n"
    )
    files = {"tasks/t1/evaluate.py": scorer, "tasks/t1/notes.md": "hello"}
    root = write_episode(tmp_path / "ep", [task_data(tools_evaluation_path="evaluate.py")], files=files)
    loaded = load_episode(root).tasks[0]
    assert loaded.rule_scorer == scorer
    assert set(loaded.assets) == {"notes.md"}
    # A tool name the scorer looks for that no tool publishes is worth a warning.
    warning = only_issue(lint_episode(root, KNOWN_TOOLS), "score", "warning")
    assert warning.file == str(root / "tasks" / "t1" / "evaluate.py")
    assert "'mcp_appworld_amazon__plase_order'" in warning.message


def test_files_read_provenance(tmp_path: Path) -> None:
    first = task_data("a")
    second = task_data(
        "b",
        files_read=["./data/prices.csv", "summary_week2.md", "mystery.txt", "outputs/plan.md"],
    )
    second["intent"]["hidden_intent"] = [{"content": "Save the result as summary_week2.md."}]
    second["objectives"]["checklist"] = [{"criterion": "outputs/plan.md lists three steps."}]
    files = {"tasks/a/workspace/data/prices.csv": "item,price\n"}
    root = write_episode(tmp_path / "ep", [first, second], files=files)
    issues = lint_episode(root, KNOWN_TOOLS)
    # an earlier task's asset, an output named in a hidden intent or checklist item: fine
    assert issues_at(issues, "files_read[0]") == []
    assert issues_at(issues, "files_read[1]") == []
    assert issues_at(issues, "files_read[3]") == []
    mystery = only_issue(issues, "files_read[2]", "warning")
    assert mystery.file == str(root / "tasks" / "b" / "task.yaml")
    assert "'mystery.txt'" in mystery.message
    assert load_episode(root).tasks[1].task.files_read[2] == "mystery.txt"  # a warning never blocks


def test_trigger_spelling_suggests_accepted_ones(tmp_path: Path) -> None:
    root = write_episode(tmp_path / "ep", [task_data(trigger={"type": "enviroment"})])
    issue = only_issue(lint_episode(root, KNOWN_TOOLS), "trigger.type")
    assert "did you mean 'environment'" in issue.message
    assert "accepted: user, user_query, env, environment, environmental_signal" in issue.message


def test_empty_hidden_intents_warn(tmp_path: Path) -> None:
    task = task_data()
    task["intent"]["hidden_intent"] = []
    root = write_episode(tmp_path / "ep", [task])
    issue = only_issue(lint_episode(root, KNOWN_TOOLS), "intent.hidden_intent", "warning")
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
    issue = only_issue(lint_episode(root, KNOWN_TOOLS), field)
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


def test_assets_strip_prefixes_skip_leftovers_and_placeholder_binary(tmp_path: Path) -> None:
    files: dict[str, bytes | str] = {
        "tasks/t1/assets/notes/today.md": "today",
        "tasks/t1/workspace/plan.txt": "plan",
        "tasks/t1/README.md": "readme",
        "tasks/t1/.history/turn_1.json": "{}",
        "tasks/t1/photo.png": b"\x89PNG\r\n\x1a\n\xff\xfe",
    }
    root = write_episode(tmp_path / "ep", [task_data()], files=files)
    assets = load_episode(root).tasks[0].assets
    assert set(assets) == {"notes/today.md", "plan.txt", "README.md", "photo.png"}
    assert assets["notes/today.md"] == "today"
    assert assets["photo.png"] == "[binary file photo.png: 10 bytes, not shown]\n"
    warning = only_issue(lint_episode(root, KNOWN_TOOLS), "(asset)", "warning")
    assert warning.file == str(root / "tasks" / "t1" / "photo.png")


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    root = write_episode(tmp_path / "ep", [task_data()])
    (root / "tasks" / "t1" / "task.yaml").write_text("title: [unclosed\ntask_id: t1\n")
    issue = only_issue(lint_episode(root, KNOWN_TOOLS), "(file)")
    assert "not valid YAML: line" in issue.message


def test_objectives_and_top_level_conflict(tmp_path: Path) -> None:
    task = task_data(files_read=["a.md"])
    task["objectives"]["files_read"] = ["b.md"]
    root = write_episode(tmp_path / "ep", [task])
    issue = only_issue(lint_episode(root, KNOWN_TOOLS), "objectives.files_read")
    assert "both" in issue.message


def test_lint_reports_problems_of_every_file_at_once(tmp_path: Path) -> None:
    bad_a = task_data("a", trigger={"type": "usr"})
    bad_b = task_data("b", task_type="forever")
    root = write_episode(tmp_path / "ep", [bad_a, bad_b], depends={"b": ["nope"]})
    issues = lint_episode(root, KNOWN_TOOLS)
    errors = [(Path(i.file).parent.name, i.field) for i in issues if i.severity == "error"]
    assert errors == [("ep", "tasks[1].depends_on[0]"), ("a", "trigger.type"), ("b", "task_type")]
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
    root = write_episode(tmp_path / "data" / "u1", [task_data(tools_evaluation_path="scorers/shop.py")])
    loaded = load_episode(root).tasks[0]
    assert loaded.rule_scorer_path is not None
    assert loaded.rule_scorer_path.resolve() == (tmp_path / "scorers" / "shop.py").resolve()
