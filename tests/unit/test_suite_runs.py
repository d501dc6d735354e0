"""Benchmark runs on disk: JSONL as cells finish, resume, a killed run, the manifest."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from bench.progress import Progress
from bench.rundir import DataRef, RunDirError, SuiteConfig, SuiteManifest
from bench.suite.runs import CellKey, CellRunDir, plan_cells, run_cells
from tests.conftest import ROOT, wait_until

KEYS = plan_cells("implicit-v2", ["literal", "aura_intent"], [42, 123], ["101", "102", "103"])


def manifest(suite: str = "implicit-v2", seeds: tuple[int, ...] = (42,)) -> SuiteManifest:
    config = SuiteConfig(
        intent_reader="cue",
        suite=suite,
        data=DataRef(path="/data/release.json", sha256="0" * 64),
        bundled=False,
        conditions=("literal", "aura_intent"),
        seeds=seeds,
        model=None,
        judge_model=None,
        explore_max_steps=3,
    )
    return SuiteManifest(config=config)


def answer(key: CellKey) -> dict[str, Any]:
    return {"answer": f"{key.condition}:{key.query_id}", "probes": len(key.condition) % 3}


def test_cells_are_planned_query_major() -> None:
    assert len(KEYS) == 12 and len(set(KEYS)) == 12
    assert [k.query_id for k in KEYS[:4]] == ["101"] * 4


def test_a_run_appends_every_cell_and_a_rerun_recomputes_nothing(tmp_path: Path) -> None:
    run = CellRunDir(tmp_path / "run")
    run.create(manifest())
    ran, skipped = run_cells(run, KEYS, answer, workers=3)
    assert (ran, skipped) == (12, 0)
    lines = run.cells_path.read_text().splitlines()
    assert len(lines) == 12 and {json.loads(line)["cell"] for line in lines} == {k.id for k in KEYS}
    calls: list[CellKey] = []
    lock = threading.Lock()

    def counted(key: CellKey) -> dict[str, Any]:
        with lock:
            calls.append(key)
        return answer(key)

    out = io.StringIO()
    progress = Progress(len(KEYS), desc="cells", unit="cell", stream=out)
    assert run_cells(run, KEYS, counted, workers=3, progress=progress) == (0, 12)
    assert calls == [] and "cells: 12/12 (100%)" in out.getvalue()


def test_a_failed_cell_is_recorded_and_retried_on_resume(tmp_path: Path) -> None:
    run = CellRunDir(tmp_path)
    run.create(manifest())

    def flaky(key: CellKey) -> dict[str, Any]:
        if key.query_id == "102":
            raise TimeoutError("model did not answer")
        return answer(key)

    assert run_cells(run, KEYS, flaky, workers=2) == (12, 0)
    failed = [c for c in run.cells() if not c.ok]
    assert len(failed) == 4 and all("TimeoutError: model did not answer" in str(c.error) for c in failed)
    assert run_cells(run, KEYS, answer, workers=2) == (4, 8)  # only the failed ones again
    assert len(run.done()) == 12


def test_a_line_cut_short_by_a_kill_is_ignored_and_repaired(tmp_path: Path) -> None:
    run = CellRunDir(tmp_path)
    run.create(manifest())
    run_cells(run, KEYS[:3], answer)
    with run.cells_path.open("a") as f:
        f.write('{"cell": "implicit-v2/literal/42/1')  # the process died mid-line
    assert run.done() == {k.id for k in KEYS[:3]}
    assert run_cells(run, KEYS, answer) == (9, 3)
    records = [json.loads(line) for line in run.cells_path.read_text().splitlines()]
    assert len(records) == 12  # the partial line is gone, every line is whole JSON


def test_resuming_a_killed_run_recomputes_nothing_finished(tmp_path: Path) -> None:
    keys = plan_cells("factual", ["literal"], [1], [str(i) for i in range(200)])
    script = f"""
import threading
from pathlib import Path
from bench.suite.runs import CellRunDir, plan_cells, run_cells
from tests.unit.test_suite_runs import manifest
keys = plan_cells("factual", ["literal"], [1], [str(i) for i in range(200)])
run = CellRunDir(Path({str(tmp_path)!r}))
run.create(manifest("factual"))
run_cells(run, keys, lambda k: threading.Event().wait(0.02) or {{"answer": k.query_id}}, workers=2)
"""
    child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    run = CellRunDir(tmp_path)
    try:
        wait_until(lambda: len(run.done()) >= 20, timeout=60, what="the child to finish some cells")
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finished = run.done()
    assert 20 <= len(finished) < 200
    again: list[str] = []
    lock = threading.Lock()

    def counted(key: CellKey) -> dict[str, Any]:
        with lock:
            again.append(key.id)
        return {"answer": key.query_id}

    run.create(manifest("factual"))
    ran, skipped = run_cells(run, keys, counted, workers=4)
    assert skipped == len(finished) and ran == 200 - len(finished)
    assert not set(again) & finished  # nothing finished was computed again
    assert run.done() == {k.id for k in keys}


def test_a_different_configuration_cannot_resume_a_run(tmp_path: Path) -> None:
    run = CellRunDir(tmp_path)
    run.create(manifest(seeds=(42,)))
    run.create(manifest(seeds=(42,)))  # the same: fine
    with pytest.raises(RunDirError, match=r"another configuration \(seeds: \[42\] -> \[1\]\)"):
        run.create(manifest(seeds=(1,)))


def test_a_record_that_is_not_a_cell_is_a_failed_cell(tmp_path: Path) -> None:
    run = CellRunDir(tmp_path)
    run.create(manifest())
    assert run_cells(run, KEYS[:1], lambda key: {"probes": "many"}) == (1, 0)
    [cell] = run.cells()
    assert not cell.ok and "probes" in str(cell.error) and cell.cell == KEYS[0].id
