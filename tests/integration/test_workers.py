"""Scale-out over ``auratown worker`` processes sharing one Redis: benchmark cells shared by two
workers (both work, answers identical to a local run), an episode unit run by a worker started
separately (``--remote-workers``), and a unit whose worker is killed taken over by another one
and resumed where it was."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, Processes, auratown, wait_until
from tests.support.episodes import start_bench_episodes, tasks_finished_once
from tests.support.openai_stub import OpenAIStub, Reply

pytestmark = pytest.mark.redis

PUBLISHED = ROOT / "tests" / "fixtures" / "pibench" / "data" / "pibench_demo"


def start_worker(
    processes: Processes, url: str, namespace: str, roles: str, log: Path, *extra: str
) -> subprocess.Popen[bytes]:
    """An ``auratown worker`` whose log (info level) goes to ``log``, once it serves its roles."""
    with log.open("ab") as f:
        proc = processes.start_module(
            "deploy.cli", "--log-level", "info", "worker", "--redis", url, "--namespace", namespace,
            "--roles", roles, *extra, stderr=f.fileno(),
        )  # fmt: skip
    lanes = len(roles.split(","))
    wait_until(
        lambda: proc.poll() is not None or log.read_text().count("host started") >= lanes,
        timeout=60,
        what="the worker's hosts to start",
    )
    assert proc.poll() is None, log.read_text()[-2000:]
    return proc


def answered(log: Path) -> int:
    return log.read_text().count("query answered")


@pytest.fixture
def stub_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    """A model that takes 50 ms per answer: one worker alone cannot keep up with the cells in flight."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIStub(responder=lambda request: Reply(content="Lin Wei is at the cafe.", hold=0.05)) as stub:
        yield stub


def _answers(out: Path) -> dict[str, Any]:
    cells = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    assert cells and all(c["ok"] for c in cells)
    return {c["cell"]: c["answer"] for c in cells}


def test_two_workers_share_the_cells_and_answer_as_a_local_run(
    redis_url: str, namespace: str, tmp_path: Path, processes: Processes, stub_model: OpenAIStub
) -> None:
    logs = [tmp_path / "worker-a.log", tmp_path / "worker-b.log"]
    for log in logs:  # remote workers use their own model endpoint
        start_worker(processes, redis_url, namespace, "registry,env", log, "--api-base", stub_model.url)
    common = [
        "bench", "aura", "--suite", "implicit-v2", "--conditions", "literal,vanilla", "--seeds", "42",
        "--model", "openai/stub", "--api-base", stub_model.url, "--quiet",
    ]  # fmt: skip
    local = auratown(*common, "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr[-2000:]
    remote = auratown(
        *common,
        "--bus",
        redis_url,
        "--remote-workers",
        namespace,
        "--out",
        str(tmp_path / "bus"),
        timeout=300,
    )
    assert remote.returncode == 0, remote.stderr[-2000:]
    answers = _answers(tmp_path / "bus")
    assert answers == _answers(tmp_path / "local") and len(answers) == 40
    per_worker = [answered(log) for log in logs]
    assert all(n > 0 for n in per_worker), per_worker  # both did some of the work
    assert sum(per_worker) == 40  # and each cell was answered once


def test_remote_workers_need_a_worker_present(redis_url: str, namespace: str, tmp_path: Path) -> None:
    r = auratown(
        "bench", "episodes", "--tasks", str(PUBLISHED), "--runs", "1", "--assistants", "builtin",
        "--no-ablation", "--bus", redis_url, "--remote-workers", namespace, "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert r.returncode == 2 and "no `auratown worker --roles episodes`" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    bad = auratown("worker", "--redis", redis_url, "--roles", "env,painter")
    assert bad.returncode == 2 and "unknown role 'painter'" in bad.stderr


def _summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return data


def test_an_episode_unit_completes_through_a_worker_started_separately(
    redis_url: str, namespace: str, tmp_path: Path, processes: Processes
) -> None:
    log = tmp_path / "worker.log"
    start_worker(processes, redis_url, namespace, "episodes", log)
    common = [
        "bench", "episodes", "--tasks", str(PUBLISHED), "--runs", "1", "--assistants", "builtin",
        "--no-ablation", "--quiet",
    ]  # fmt: skip
    out = tmp_path / "remote"
    r = auratown(*common, "--bus", redis_url, "--remote-workers", namespace, "--out", str(out), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    local = auratown(*common, "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr[-3000:]
    key = "pibench_demo_episode.builtin.r1"
    unit, expected = _summary(out)["units"][key], _summary(tmp_path / "local")["units"][key]
    assert unit["sessions"] == 2 and _summary(out)["units_complete"] == 1
    for figure in ("proc", "comp", "comp_faithful", "statuses", "tasks"):
        assert unit[figure] == expected[figure], figure
    assert "unit done" in log.read_text()  # the worker ran it, not the coordinator
    traces = (out / "traces" / f"{key}.jsonl").read_text().splitlines()
    assert sum(json.loads(line)["type"] == "grade" for line in traces) == 2


def test_a_unit_whose_worker_dies_is_taken_over_and_resumes(
    redis_url: str, namespace: str, tmp_path: Path, processes: Processes
) -> None:
    fast = ("--visibility-timeout", "2")
    first = start_worker(processes, redis_url, namespace, "episodes", tmp_path / "a.log", *fast)
    out = tmp_path / "run"
    run = start_bench_episodes(redis_url, out, "--remote-workers", namespace, stderr=subprocess.PIPE)
    coordinator = run.process
    try:
        wait_until(lambda: run.finished() >= 2, timeout=120, what="two finished sessions")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        before = run.finished()
        assert before < 10, "the unit finished before its worker could be killed"
        start_worker(processes, redis_url, namespace, "episodes", tmp_path / "b.log", *fast)
        _, err = coordinator.communicate(timeout=300)
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
            coordinator.wait(timeout=30)
    assert coordinator.returncode == 0, err.decode()[-3000:]
    assert "unit done" in (tmp_path / "b.log").read_text()  # the second worker finished it
    done = tasks_finished_once(run.record, 10)
    summary = _summary(out)
    assert summary["units_complete"] == 1 and summary["grader_errors"] == []
    grades = [
        json.loads(line)
        for line in (out / "traces" / "bakery_owner.builtin.r1.jsonl").read_text().splitlines()
        if json.loads(line)["type"] == "grade"
    ]
    assert sorted(g["task_id"] for g in grades) == sorted(done)
