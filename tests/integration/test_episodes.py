"""Proactive-assistant episodes on a real bus: the simulated user's protocol with a scripted
assistant, the grader's handling of broken rule scorers, and whole runs through the CLI (the
bundled set over Redis, pi-Bench's published layout, an external assistant, worker processes,
resume after a kill, the LLM path through litellm)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from actors.bus import Bus
from actors.episodes import GRADER, EpisodeRegistryActor, GraderActor, SimulatedUserActor
from actors.runtime import Actor, Context, Host, on
from messages.episodes import (
    EPISODE_EVENTS,
    AssistantReply,
    GradeSession,
    GradingSpec,
    IntentStatusChanged,
    SeedWorkspace,
    SessionEnded,
    SessionGrade,
    SessionSpec,
    SessionStarted,
    StartSession,
    TurnRecorded,
    UserTurn,
)
from tests.conftest import ROOT, Processes, auratown, wait_until
from tests.support.episodes import bench_episodes_on_stub, start_bench_episodes, tasks_finished_once
from tests.support.openai_stub import OpenAIStub, Reply, json_reply, ok
from tests.support.topics import topic_messages

pytestmark = pytest.mark.redis

PUBLISHED = ROOT / "tests" / "fixtures" / "pibench" / "data" / "pibench_demo"


class ScriptedAssistant(Actor):
    """Replies with the next line of its script, whatever the user says."""

    def __init__(self, script: list[str]) -> None:
        self.script = script

    @on(UserTurn)
    def turn(self, ctx: Context, msg: UserTurn) -> None:
        text = self.script[min(msg.turn, len(self.script)) - 1]
        ctx.tell(
            msg.reply_to, AssistantReply(task_id=msg.task_id, turn=msg.turn, text=text, session=msg.session)
        )


class Sink(Actor):
    def __init__(self, out: queue.Queue[SessionEnded]) -> None:
        self.out = out

    @on(SessionEnded)
    def ended(self, ctx: Context, msg: SessionEnded) -> None:
        self.out.put(msg)


@contextmanager
def session_host(bus: Bus, script: list[str]) -> Iterator[queue.Queue[SessionEnded]]:
    ended: queue.Queue[SessionEnded] = queue.Queue()
    host = Host(bus, name="episode-test")
    host.spawn(EpisodeRegistryActor, "registry.ep")
    host.spawn(SimulatedUserActor, "user.ep")
    host.spawn(lambda: ScriptedAssistant(script), "assistant.ep")
    host.spawn(lambda: Sink(ended), "sink")
    host.start()
    try:
        yield ended
    finally:
        host.stop()


def test_a_scripted_assistant_earns_each_terminal_status(bus: Bus) -> None:
    intents = (
        "Convert every temperature in the report to Celsius",
        "Send the finished summary to Priya by email",
        "Keep the summary under 200 words",
    )
    script = [
        # Completes the first intent, asks a targeted question about the second: completed, inferred.
        "I converted every temperature in the report to Celsius. Should I send the finished summary "
        "to Priya by email?",
        # Nothing about the third, no question: the user has to provide it.
        "Done, the summary is ready.",
        "Trimmed it.",
    ]
    spec = SessionSpec(
        episode_id="ep",
        task_id="t1",
        user_id="u1",
        initial_input="Summarise the weather report.",
        hidden_intents=intents,
    )
    with session_host(bus, script) as ended:
        bus.ask("registry.ep", SeedWorkspace(task_id="t1"), timeout=10)
        started = bus.ask(
            "user.ep", StartSession(spec=spec, report_to="sink", assistant="assistant.ep"), timeout=10
        )
        assert isinstance(started, SessionStarted) and started.accepted
        result = ended.get(timeout=30)
    assert result.reason == "complete"
    assert [i.status for i in result.intents] == ["completed", "inferred", "provided"]
    assert [i.turn for i in result.intents] == [1, 1, 2]
    user_turns = [t for t in result.turns if t.role == "user"]
    assert [t.kind for t in user_turns] == ["request", "answer", "provide"]
    assert "Priya" in user_turns[1].text and "200 words" in user_turns[2].text
    # The session ends only once the assistant has replied after the last intent was provided.
    assert result.turns[-1].role == "assistant" and result.turns[-1].text == "Trimmed it."
    # Every status change and every turn was published as a typed event as it happened.
    changes = topic_messages(bus, EPISODE_EVENTS, IntentStatusChanged)
    assert [(c.intent.index, c.intent.status) for c in changes] == [
        (0, "completed"),
        (1, "inferred"),
        (2, "provided"),
    ]
    recorded = topic_messages(bus, EPISODE_EVENTS, TurnRecorded)
    assert [r.record for r in recorded] == list(result.turns)
    assert topic_messages(bus, EPISODE_EVENTS, SessionEnded) == [result]


def test_the_turn_limit_ends_a_session_with_intents_left_open(bus: Bus) -> None:
    spec = SessionSpec(
        episode_id="ep",
        task_id="t2",
        user_id="u1",
        initial_input="Plan the trip.",
        hidden_intents=("Book the night train to Vienna", "Keep the budget under 300 euros", "Travel in May"),
        max_turns=2,
    )
    with session_host(bus, ["Working on it."]) as ended:
        bus.ask("registry.ep", SeedWorkspace(task_id="t2"), timeout=10)
        bus.ask("user.ep", StartSession(spec=spec, report_to="sink", assistant="assistant.ep"), timeout=10)
        result = ended.get(timeout=30)
    assert result.reason == "max_turns"
    assert [i.status for i in result.intents] == ["provided", "open", "open"]


CRASHING = "def score(tools_history):\n    raise RuntimeError('scorer bug')\n"
GARBAGE = "def score(tools_history):\n    return {'placed the order': 'yes please'}\n"
GOOD = (
    "def score(tools_history):\n"
    "    names = [t.get('tool_name') for t in tools_history]\n"
    "    return {'placed the order': int('mcp_appworld_amazon__place_order' in names)}\n"
)


@pytest.mark.parametrize(
    ("source", "error"), [(CRASHING, "RuntimeError"), (GARBAGE, "yes please"), (GOOD, None)]
)
def test_a_broken_rule_scorer_is_a_grader_error_not_a_score(bus: Bus, source: str, error: str | None) -> None:
    host = Host(bus, name="grader-test")
    host.spawn(GraderActor, GRADER)
    host.start()
    try:
        session = SessionEnded(episode_id="ep", task_id="t", reason="complete")
        spec = GradingSpec(task_id="t", rule_scorer=source, rule_scorer_path="tasks/t/evaluate.py")
        grade = bus.ask(GRADER, GradeSession(spec=spec, session=session), timeout=60)
    finally:
        host.stop()
    assert isinstance(grade, SessionGrade)
    if error is None:
        assert grade.grader_errors == () and grade.comp == 0.0
        assert [c.criterion for c in grade.criteria] == ["placed the order"]
    else:
        assert grade.grader_errors and any(error in e for e in grade.grader_errors)
        assert all(not c.passed and not c.passed_faithful for c in grade.criteria)
        assert grade.comp == 0.0


# ---------------------------------------------------------------- whole runs through the CLI


def _summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return data


def _trace(out: Path) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for path in sorted((out / "traces").glob("*.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines()]
    return lines


def test_the_bundled_episodes_run_offline_end_to_end_over_redis(redis_url: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = auratown(
        "bench", "episodes", "--bus", redis_url, "--runs", "1", "--out", str(out), "--quiet", timeout=600
    )
    assert r.returncode == 0, r.stderr[-3000:]
    summary = _summary(out)
    assert (
        summary["units_complete"] == summary["units_planned"] == 16
    )  # 2 personas x 2 assistants x (1 + 3 alone)
    assert summary["grader_errors"] == [] and summary["judge_failures"] == 0
    assert set(summary["end_reasons"]) == {"complete"}
    table = summary["table"]
    assert set(table) == {"builtin", "builtin+intent"}
    for row in table.values():
        for metric in ("proc", "comp", "comp_faithful"):
            assert 0.0 <= row["average"][metric]["mean"] <= 1.0
        assert set(row["episodes"]) == {"bakery_owner", "cycling_coordinator"}
        assert sum(row["status_share"].values()) == pytest.approx(1.0)
    assert set(summary["ablation"]) == {"builtin", "builtin+intent"}
    assert "| builtin+intent |" in r.stdout and "Table 1" in r.stdout
    trace = _trace(out)
    turns = [t for t in trace if t["type"] == "turn"]
    # Environment triggers open sessions; the IntentFrame assistant records its frame, the plain one none.
    assert any(t["role"] == "user" and t["kind"] == "trigger" for t in turns)
    assert all(t["frame"] is None for t in turns if ".builtin.r1" in t["episode"])
    assert any(t["frame"] is not None for t in turns if ".builtin-intent." in t["episode"])
    grades = [t for t in trace if t["type"] == "grade"]
    sources = {c["source"] for g in grades for c in g["criteria"]}
    assert sources == {"rubric", "rule", "state"}
    # App tools really ran against the episode's registry.
    tools = {c["tool_name"] for t in turns for c in t["tools"]}
    assert any(name.startswith("mcp_appworld_") for name in tools)


def test_a_task_directory_in_pi_bench_layout_runs_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = (
        "bench", "episodes", "--tasks", str(PUBLISHED), "--runs", "1", "--assistants", "builtin",
        "--no-ablation",
    )  # fmt: skip
    quiet = auratown(*args, "--out", str(tmp_path / "quiet"), "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == ""
    r = auratown(*args, "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    # Progress on stderr, which is not a terminal here: plain lines (no "\r"), the figures, and what
    # goes on inside the unit.
    progress = [line for line in r.stderr.splitlines() if line.startswith("episodes: ")]
    assert "\r" not in r.stderr and progress[0] == "episodes: 0/1 (0%) [00:00<?, ?unit/s]"
    assert progress[1] == "episodes: pibench_demo_episode.builtin.r1: started"
    assert progress[-1].startswith("episodes: 1/1 (100%) [") and "unit/s" in progress[-1]
    unit = _summary(out)["units"]["pibench_demo_episode.builtin.r1"]
    assert unit["sessions"] == 2 and set(unit["tasks"]) == {"survey_recent_papers", "order_coffee_dripper"}
    grade = next(t for t in _trace(out) if t["type"] == "grade" and t["task_id"] == "order_coffee_dripper")
    # The paper's own C.6 scorer ran on our tool history: its four keys are checklist items.
    rules = [c["criterion"] for c in grade["criteria"] if c["source"] == "rule"]
    assert "used amazon__place_order successfully" in rules and len(rules) == 4
    assert grade["grader_errors"] == []


def test_lint_lists_every_problem_with_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "ep"
    (bad / "tasks" / "a").mkdir(parents=True)
    (bad / "episode.yaml").write_text(
        "schema_version: v2\nepisode_id: ep\nuser_id: u\ntasks:\n  - task_id: a\n    depends_on: [b]\n"
    )
    (bad / "tasks" / "a" / "task.yaml").write_text(
        "schema_version: v2\ntask_id: a\nuser_id: u\nenvironment_id: e\ntitle: t\ndescription: d\n"
        "task_type: short_term_independent\ntrigger: {type: enviroment}\n"
        "intent: {initial_input: hi, hidden_intent: [{content: Use metric units please}]}\n"
        "objectives: {checklist: [{criterion: uses metric units}]}\ncolour: blue\n"
    )
    r = auratown("bench", "episodes", "--tasks", str(bad), "--lint")
    assert r.returncode == 1
    assert "trigger.type" in r.stdout and "colour" in r.stdout and "depends_on" in r.stdout
    run = auratown("bench", "episodes", "--tasks", str(bad), "--out", str(tmp_path / "out"))
    assert (
        run.returncode == 2
        and len(run.stderr.strip().splitlines()) == 1
        and "episode.yaml: tasks[0].depends_on[0]" in run.stderr
    )
    assert "--lint" in run.stderr


def test_an_external_process_takes_the_assistants_address(
    redis_url: str, tmp_path: Path, processes: Processes
) -> None:
    ns = "episodes.external-test"
    processes.start_module("tests.support.external_assistant", redis_url, ns, "agent.outside")
    out = tmp_path / "run"
    r = auratown(
        "bench", "episodes", "--tasks", str(PUBLISHED), "--runs", "1",
        "--assistants", "external:agent.outside", "--no-ablation", "--bus", redis_url,
        "--namespace", ns, "--out", str(out), "--quiet", "--max-turns", "8",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    turns = [t for t in _trace(out) if t["type"] == "turn" and t["role"] == "assistant"]
    assert turns and all(t["kind"] == "external" for t in turns)
    assert all(t["tools"][0]["tool_name"] == "write_file" for t in turns)


def test_units_spread_over_worker_processes_and_repeat(redis_url: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = auratown(
        "bench", "episodes", "--tasks", str(PUBLISHED), "--runs", "2", "--workers", "2", "--assistants",
        "builtin", "--no-ablation", "--bus", redis_url, "--out", str(out), "--quiet", timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    summary = _summary(out)
    assert summary["units_complete"] == 2
    avg = summary["table"]["builtin"]["average"]
    # Two repetitions of a deterministic run: the same figures, a standard deviation of zero.
    assert avg["proc"]["n"] == 2 and avg["proc"]["std"] == 0.0 and avg["comp"]["std"] == 0.0


def test_an_interrupted_episode_resumes_where_it_stopped(redis_url: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run = start_bench_episodes(redis_url, out, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: run.finished() >= 3, timeout=120, what="three finished sessions")
    finally:
        run.process.send_signal(signal.SIGKILL)
        run.process.wait(timeout=30)
    before = run.finished()
    assert before < 10, "the run finished before it could be interrupted"
    r = auratown(*run.command[3:], timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = _summary(out)
    assert summary["units_complete"] == 1
    tasks_finished_once(run.record, 10)


def _llm_responder(request: dict[str, Any]) -> Reply:
    """A model that follows the assistant's JSON step format and answers every judge with prose."""
    text = json.dumps(request.get("messages", []))
    if "<decision>" in text or "<score>" in text:
        return ok("I think the assistant did fine overall.")  # no XML blocks: unreadable, never a pass
    if '"notes"' in text:
        return json_reply({"notes": []})
    return json_reply(
        {
            "thought": "answer directly",
            "action": "reply",
            "args": {},
            "reply": "Here is a first draft of the work.",
        }
    )


def test_the_llm_path_runs_through_litellm_and_unreadable_judges_never_pass(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with OpenAIStub(responder=_llm_responder) as stub:
        r = auratown(
            *bench_episodes_on_stub(stub.url, out, "--max-turns", "10"),
            env_extra={"OPENAI_API_KEY": "sk-test"},
            timeout=300,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        assert stub.request_count > 0
    summary = _summary(out)
    unit = summary["units"]["pibench_demo_episode.builtin.r1"]
    assert unit["model_calls"] > 0 and unit["tokens"] > 0
    # Every judge answer was unreadable, asked again and still unreadable: each session ended in
    # error at its first reply, counted, credited nothing and left out of every average.
    assert summary["judge_failures"] > 0
    assert unit["end_reasons"] == {"error": 2} and unit["errors"] == 2
    assert unit["statuses"].get("completed", 0) == unit["statuses"].get("inferred", 0) == 0
    assert unit["proc"] is None and unit["proc_faithful"] is None
    assert unit["comp"] is None and unit["comp_faithful"] is None
    assert len(summary["excluded"]) == 2
    replies = [t for t in _trace(out) if t["type"] == "turn" and t["role"] == "assistant"]
    assert all(t["kind"].startswith("llm:") for t in replies)


def test_a_heartbeat_delivers_each_due_scheduled_item_once(bus: Bus) -> None:
    from bench.episodes.runner import _due_items
    from messages.episodes import GetStateDiff, StateDiffData
    from messages.probes import ProbeCall, ProbeResult

    host = Host(bus, name="heartbeat-test")
    host.spawn(EpisodeRegistryActor, "registry.ep")
    host.start()
    try:
        bus.ask("registry.ep", SeedWorkspace(task_id="t1"), timeout=10)
        call = ProbeCall(
            registry="episode", tool="schedule_task", args={"text": "Call Dario", "at_minutes": 30}
        )
        made = bus.ask("registry.ep", call, timeout=10)
        assert isinstance(made, ProbeResult) and made.ok, made
        state = bus.ask("registry.ep", GetStateDiff(since=""), timeout=10)
        assert isinstance(state, StateDiffData)
        due = _due_items(state.state, 60.0, "t2")
        assert [i["text"] for i in due] == ["Call Dario"]
        # The heartbeat of t2 delivers it ...
        bus.ask(
            "registry.ep", SeedWorkspace(task_id="t2", sim_time=60.0, delivered=(due[0]["id"],)), timeout=10
        )
        after = bus.ask("registry.ep", GetStateDiff(since=""), timeout=10)
        assert isinstance(after, StateDiffData)
        # ... so t3's heartbeat does not deliver it again, while a rerun of t2 (after a crash) still gets it.
        assert _due_items(after.state, 120.0, "t3") == []
        assert [i["text"] for i in _due_items(after.state, 60.0, "t2")] == ["Call Dario"]
    finally:
        host.stop()


def test_the_registry_stages_binaries_offers_the_personas_tools_and_records_each_calls_turn(bus: Bus) -> None:
    import base64

    from messages.episodes import FilesData, GetToolHistory, ReadFiles, ToolHistory, TurnStarted
    from messages.probes import ListTools, ProbeCall, ProbeResult, ToolList
    from world.episodes.apps.seed import WorldSeed

    png = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0xFF, 0x10])
    seed = WorldSeed.model_validate(
        {"people": [{"first_name": "Ana", "email": "ana@example.com", "accounts": {"simple_note": "pw"}}]}
    )
    offered = ["simple_note__login", "simple_note__create_note", "gmail__show_starred_threads"]
    host = Host(bus, name="registry-test")
    host.spawn(lambda: EpisodeRegistryActor(seed=seed, offered=offered), "registry.ep")
    host.start()

    def call(tool: str, **args: Any) -> ProbeResult:
        result = bus.ask("registry.ep", ProbeCall(registry="episode", tool=tool, args=args), timeout=10)
        assert isinstance(result, ProbeResult)
        return result

    try:
        staged = SeedWorkspace(
            task_id="t1",
            files={"notes.md": "hi"},
            binaries={"skills/x/icon.png": base64.b64encode(png).decode()},
        )
        bus.ask("registry.ep", staged, timeout=10)
        listed = bus.ask("registry.ep", ListTools(registry="episode"), timeout=10)
        assert isinstance(listed, ToolList)
        apps = sorted(n for n in listed.allowed if n.startswith("mcp_appworld_"))
        assert apps == ["mcp_appworld_simple_note__create_note", "mcp_appworld_simple_note__login"]

        read = call("read_file", path="skills/x/icon.png")
        assert read.ok and read.result is not None and base64.b64decode(read.result["content"]) == png
        shown = bus.ask("registry.ep", ReadFiles(paths=("skills/x/icon.png",)), timeout=10)
        assert isinstance(shown, FilesData) and shown.files == {
            "skills/x/icon.png": "[binary file skills/x/icon.png: 11 bytes]"
        }

        bus.tell("registry.ep", TurnStarted(task_id="t1", turn=1))
        token = call("simple_note__login", username="ana@example.com", password="pw").result["response"]
        bus.tell("registry.ep", TurnStarted(task_id="t1", turn=2))
        made = call(
            "mcp_appworld_simple_note__create_note",
            access_token=token["access_token"],
            title="T",
            content="c",
        )
        assert made.ok and made.result is not None and "note_id" in made.result["response"]
        starred = call("gmail__show_starred_threads")  # offered, but only AppWorld serves it
        assert starred.status == "unknown_tool" and starred.result is None
        assert "AppWorld serves it" in (starred.error or "")
        refused = call("simple_note__create_note", access_token="nope", title="T2", content="c")
        assert refused.status == "unauthorized" and refused.result is not None
        assert "access token is missing, invalid or expired" in refused.result["response"]["message"]

        history = bus.ask("registry.ep", GetToolHistory(task_id="t1"), timeout=10)
        assert isinstance(history, ToolHistory)
        turns = [(r.tool_name, r.turn, r.status) for r in history.records if r.tool_name != "read_file"]
        assert turns == [
            ("mcp_appworld_simple_note__login", 1, "ok"),
            ("mcp_appworld_simple_note__create_note", 2, "ok"),
            ("gmail__show_starred_threads", 2, "unknown_tool"),
            ("mcp_appworld_simple_note__create_note", 2, "unauthorized"),
        ]
    finally:
        host.stop()


def test_a_rerun_resumes_given_other_paths_and_refuses_another_configuration(tmp_path: Path) -> None:
    """The same run asked for with the paths spelt otherwise (relative tasks, ``./`` and a trailing
    slash in ``--out``) resumes and runs nothing again; another configuration is refused in one line
    that names each field that differs."""
    out = tmp_path / "run"
    common = ("bench", "episodes", "--assistants", "builtin", "--no-ablation", "--quiet")
    first = auratown(*common, "--tasks", str(PUBLISHED), "--runs", "1", "--out", str(out), timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    record = out / "units" / "pibench_demo_episode.builtin.r1.jsonl"
    lines = record.read_text()
    again = auratown(
        *common, "--tasks", os.path.relpath(PUBLISHED, ROOT), "--runs", "1", "--out", f"{tmp_path}/./run/",
        timeout=300,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert record.read_text() == lines  # resumed: every session was already recorded
    other = auratown(*common, "--tasks", str(PUBLISHED), "--runs", "2", "--max-turns", "3", "--out", str(out))
    assert other.returncode == 2
    [error] = other.stderr.strip().splitlines()
    assert "runs: 1 -> 2" in error and "max_turns: None -> 3" in error and "tasks" not in error
