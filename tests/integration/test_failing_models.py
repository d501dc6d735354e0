"""Models that fail (issue 13, defect 8), for real through litellm against the local OpenAI-
compatible stub, in child processes as a user runs them: a model that never answers, answers
429/500, or answers garbage. Every request has a deadline and every stage and question a budget;
nothing the model says that does not parse into what a stage expects is shown or sent; every
request made is counted; a session that cannot finish is recorded as failed and the run goes on."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import auratown
from tests.support.episodes import bench_episodes_on_stub
from tests.support.openai_stub import (
    GARBAGE,
    OpenAIStub,
    Reply,
    always,
    garbage,
    hang,
)

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

UNIT = "pibench_demo_episode.builtin.r1"
ASK_MODEL_TIMEOUT = 1.0
ASK_MODEL_BUDGET = 3.0
ASK_BOUND_S = 20.0
"""The wall time ``auratown ask`` may take against a model that never answers, process start and
litellm's import included: the question's model budget (3 s) plus a request's grace, with room."""
STAGES = ("intent", "probe_planning", "answer")


def _ask(stub: OpenAIStub, *extra: str) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    r = auratown(
        "ask", "Where is Zhang Hao?", "--as", "Lin Wei", "--tick", "5", "--json",
        "--model", "openai/stub-model", "--api-base", stub.url, *extra,
        env_extra={"OPENAI_API_KEY": "sk-stub"}, timeout=120,
    )  # fmt: skip
    wall = time.monotonic() - started
    assert r.returncode == 0, r.stderr[-3000:]
    answer: dict[str, Any] = json.loads(r.stdout)
    return answer, wall


def test_ask_against_a_model_that_never_answers_answers_in_seconds_with_fallbacks() -> None:
    with OpenAIStub(responder=always(hang())) as stub:
        answer, wall = _ask(
            stub, "--model-timeout", str(ASK_MODEL_TIMEOUT), "--model-budget", str(ASK_MODEL_BUDGET)
        )
        made = stub.request_count
    usage = answer["usage"]
    print(
        f"FAULT FIGURES ask_always_timeout wall_s={wall:.2f} bound_s={ASK_BOUND_S} "
        f"model_timeout_s={ASK_MODEL_TIMEOUT} model_budget_s={ASK_MODEL_BUDGET} "
        f"calls_made={made} calls_counted={usage['model_calls']} fallbacks={len(usage['fallbacks'])} "
        f"(before: 462 s, 15 calls made, failed ones uncounted)"
    )
    assert wall < ASK_BOUND_S
    assert made >= 1 and usage["model_calls"] == made  # every request counted, none answered
    # Every stage fell back to the offline rules, each one recorded with its reason.
    assert {f.split(":")[0] for f in usage["fallbacks"]} >= set(STAGES)
    # The first stage timed out; the question's later stages sent nothing more.
    assert usage["fallbacks"][0] == "intent: timeout"
    assert all(f.split(": ")[1] == "unavailable" for f in usage["fallbacks"][1:]), usage
    assert answer["frame"]["backend"] == "heuristic" and answer["frame"]["fallback"] == "timeout"
    assert answer["text"].strip() and "{" not in answer["text"]


def test_ask_never_prints_garbage_as_the_answer_and_counts_every_call() -> None:
    """(429, 500 and each kind of garbage stage by stage: tests/integration/test_aura_llm.py.)"""
    with OpenAIStub(responder=always(garbage())) as stub:
        answer, _ = _ask(stub)
        made = stub.request_count
    usage = answer["usage"]
    assert made > 1 and usage["model_calls"] == made, (made, usage)
    assert {f.split(":")[0] for f in usage["fallbacks"]} >= set(STAGES)
    assert GARBAGE not in answer["text"] and not answer["text"].lstrip().startswith("{")
    # Repaired once, then each stage fell back to its offline rules, recorded.
    assert "answer: invalid_text" in usage["fallbacks"] and "intent: invalid_json" in usage["fallbacks"]


def _units(out: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (out / "units" / f"{UNIT}.jsonl").read_text().splitlines()]
    return [line for line in lines if line.get("event") == "finished"]


def _hang_but_grade(request: dict[str, Any]) -> Reply:
    """The assistant's and the simulated user's model never answers; the rubric grader's does (NO
    to everything), so grading is quick."""
    if "<score>" in json.dumps(request.get("messages", [])):
        return Reply(content="".join(f"<c{n}><score>NO</score></c{n}>" for n in range(1, 41)))
    return hang()


def test_bench_episodes_with_models_that_hang_records_failed_sessions_and_writes_its_summary(
    tmp_path: Path,
) -> None:
    """The assistant's model and the simulated user's judge never answer: the assistant replies
    (offline, recorded) before the session's timeout, and the user is still in its judge's calls
    when the runner's abort comes; the runner records each session as failed itself."""
    out = tmp_path / "run"
    env = {
        "OPENAI_API_KEY": "sk-stub",
        "AURATOWN_MODEL_TIMEOUT": "0.5",
        "AURATOWN_MODEL_STAGE_BUDGET": "0.6",
        "AURATOWN_MODEL_UNIT_BUDGET": "1",
    }
    started = time.monotonic()
    with OpenAIStub(responder=_hang_but_grade) as stub:
        r = auratown(
            *bench_episodes_on_stub(stub.url, out, "--max-turns", "3", "--session-timeout", "5"),
            env_extra=env,
            timeout=300,
        )
        made = stub.request_count
    wall = time.monotonic() - started
    assert r.returncode == 0, r.stderr[-3000:]
    assert "EpisodeRunError" not in r.stderr and "neither ended nor could be aborted" not in r.stderr
    summary = json.loads((out / "summary.json").read_text())
    unit = summary["units"][UNIT]
    finished = _units(out)
    print(
        f"FAULT FIGURES episodes_always_timeout wall_s={wall:.1f} sessions={unit['sessions']} "
        f"end_reasons={unit['end_reasons']} calls_made={made} calls_counted={unit['model_calls']}"
    )
    assert unit["sessions"] == 2 and summary["units_complete"] == 1
    # Failed sessions: counted as errors, left out of the averages; the runner's own record says why.
    assert unit["end_reasons"] == {"error": 2} and unit["errors"] == 2
    assert all("recorded as failed by the runner" in (f["session"]["error"] or "") for f in finished)
    assert unit["comp"] is None and unit["proc"] is None
    # Every request made is counted (the grader's too), failed or late.
    assert made > 0 and unit["model_calls"] == made
    # The assistant's reflection and its fallback reach the run directory (the last session's
    # after the runner let the busy user end it; the first's is counted with the next session).
    assert all("reflection" in f for f in finished)
    assert finished[-1]["reflection"]["usage"]["fallbacks"] == ["reflection: timeout"]
    assert unit["reflections"]["recorded"] >= 1 and unit["reflections"]["fallbacks"]
    assert any(x.startswith("reflection: ") for x in unit["fallbacks"])
    assert any(x.startswith("answer: ") for x in unit["fallbacks"])


def _garbage_assistant_judge_says_no(request: dict[str, Any]) -> Reply:
    text = json.dumps(request.get("messages", []))
    if "<decision>" in text:  # the simulated user's judges: every intent still open
        return Reply(content="".join(f"<c{n}><decision>NO</decision></c{n}>" for n in range(1, 21)))
    if "<score>" in text:  # the rubric grader
        return Reply(content="".join(f"<c{n}><score>NO</score></c{n}>" for n in range(1, 41)))
    return garbage()  # the assistant (its steps, its intent frame, its reflection)


def test_garbage_from_the_assistant_model_is_never_sent_and_provide_turns_are_the_intents(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    with OpenAIStub(responder=_garbage_assistant_judge_says_no) as stub:
        r = auratown(
            *bench_episodes_on_stub(stub.url, out, "--max-turns", "3"),
            env_extra={"OPENAI_API_KEY": "sk-stub"},
            timeout=300,
        )
        made = stub.request_count
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    unit = summary["units"][UNIT]
    assert unit["model_calls"] == made
    finished = _units(out)
    provided = 0
    for line in finished:
        session = line["session"]
        intents = {i["content"] for i in session["intents"]}
        for turn in session["turns"]:
            assert GARBAGE not in turn["text"], turn
            if turn["role"] == "assistant":
                assert turn["kind"].startswith("offline (fallback from llm:"), turn["kind"]
            if turn["role"] == "user" and turn["kind"] == "provide":
                provided += 1
                assert turn["text"] in intents  # verbatim: no model text reaches a provide turn
        # Each assistant turn fell back, recorded with its reason.
        assert "answer: invalid_json" in session["assistant_usage"]["fallbacks"]
        assert line["reflection"]["usage"]["fallbacks"] == ["reflection: invalid_json"]
    assert provided > 0
