"""The run-directory module: versioned records, a torn tail, a bad record named, resume by content."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bench.rundir import (
    RECORD_VERSION,
    CellResult,
    DataRef,
    EpisodeConfig,
    EpisodeManifest,
    RecordError,
    RecordFile,
    ReflectionMissing,
    RunDir,
    RunDirError,
    SessionFinishedLine,
    SessionStartedLine,
    SuiteConfig,
    SuiteManifest,
    UnitResetLine,
    read_unit_line,
)
from messages.episodes import SessionEnded, SessionGrade

CELL: dict[str, Any] = {
    "cell": "s/literal/1/q1",
    "suite": "s",
    "condition": "literal",
    "seed": 1,
    "query_id": "q1",
    "ok": True,
}


def suite_config(data: Path, **changes: Any) -> SuiteConfig:
    fields: dict[str, Any] = {
        "intent_reader": "cue",
        "suite": "implicit-v2",
        "data": DataRef.of(data),
        "bundled": False,
        "conditions": ("literal", "aura_intent"),
        "seeds": (42,),
        "model": None,
        "judge_model": None,
        "explore_max_steps": 3,
    }
    return SuiteConfig(**(fields | changes))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "release.json"
    path.parent.mkdir()
    path.write_text('{"queries": []}\n')
    return path


# ---------------------------------------------------------------- versions


def test_a_record_is_written_with_the_current_version_and_only_the_fields_set(tmp_path: Path) -> None:
    cells = RecordFile(tmp_path / "cells.jsonl", CellResult.read)
    cells.append([CellResult.model_validate({**CELL, "answer": "hi", "gap": None})])
    [line] = (tmp_path / "cells.jsonl").read_text().splitlines()
    assert json.loads(line) == {**CELL, "answer": "hi", "gap": None, "version": RECORD_VERSION}
    [back] = cells
    assert back.answer == "hi" and back.version == RECORD_VERSION and back.line() == json.loads(line)


def test_a_record_without_a_version_reads_as_version_1(tmp_path: Path) -> None:
    (tmp_path / "cells.jsonl").write_text(json.dumps({**CELL, "probes": 2}) + "\n")
    [cell] = RecordFile(tmp_path / "cells.jsonl", CellResult.read)
    assert cell.version == 1 and cell.probes == 2
    assert read_unit_line({"event": "reset"}).version == 1


def test_a_record_from_a_newer_release_is_refused_by_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "cells.jsonl"
    path.write_text(json.dumps(CELL) + "\n" + json.dumps({**CELL, "version": RECORD_VERSION + 1}) + "\n")
    with pytest.raises(RecordError, match=rf"cells\.jsonl:2: version: .*record version {RECORD_VERSION + 1}"):
        list(RecordFile(path, CellResult.read))


def test_a_manifest_without_a_version_reads_as_version_1(tmp_path: Path, data: Path) -> None:
    stored = {"config": suite_config(data).model_dump(mode="json") | {"data": str(data)}, "git_commit": "abc"}
    (tmp_path / "manifest.json").write_text(json.dumps(stored))
    manifest = RunDir(tmp_path).manifest(SuiteManifest)
    assert manifest.version == 1 and manifest.config.data == DataRef(path=str(data), sha256=None)
    RunDir(tmp_path).create(SuiteManifest(config=suite_config(data)))  # the same data, at the same place


# ---------------------------------------------------------------- a kill, a bad line


def test_a_line_torn_by_a_kill_is_not_read_and_is_cut_before_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "units.jsonl"
    lines = RecordFile(path, read_unit_line)
    lines.append([SessionStartedLine(task_id="t1")])
    with path.open("a") as f:
        f.write('{"event": "finished", "task_id": "t1", "cl')  # the process died mid-line
    assert [type(line) for line in lines] == [SessionStartedLine]
    lines.append([UnitResetLine()])
    assert [json.loads(text)["event"] for text in path.read_text().splitlines()] == ["started", "reset"]


def test_a_bad_record_is_named_by_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "cells.jsonl"
    path.write_text(json.dumps(CELL) + "\n" + json.dumps({**CELL, "seed": "many"}) + "\n")
    with pytest.raises(RecordError, match=r"cells\.jsonl:2: seed: Input should be a valid integer"):
        list(RecordFile(path, CellResult.read))
    path.write_text(json.dumps(CELL) + "\n{not json}\n")
    with pytest.raises(RecordError, match=r"cells\.jsonl:2: not JSON"):
        list(RecordFile(path, CellResult.read))
    units = tmp_path / "units.jsonl"
    units.write_text('{"event": "paused"}\n')
    with pytest.raises(RecordError, match=r"units\.jsonl:1: .*'started', 'reset', 'finished'"):
        list(RecordFile(units, read_unit_line))


def test_a_finished_line_keeps_its_session_grade_and_reflection_typed(tmp_path: Path) -> None:
    ended = SessionEnded(episode_id="e", task_id="t1", reason="complete", sim_time=60.0)
    line = SessionFinishedLine.model_validate(
        {
            "task_id": "t1",
            "task_type": "plain",
            "clock": 60.0,
            "session": ended,
            "grade": SessionGrade(task_id="t1", comp=0.5),
            "reflection": {"missing": "not yet"},
        }
    )
    path = tmp_path / "units.jsonl"
    RecordFile(path, read_unit_line).append([line])
    [back] = RecordFile(path, read_unit_line)
    assert isinstance(back, SessionFinishedLine) and back.session == ended and back.grade.comp == 0.5
    assert isinstance(back.reflection, ReflectionMissing)
    written = json.loads(path.read_text())
    assert written["reflection"] == {"missing": "not yet"}  # one key: readers count by which
    assert "backend_reruns" not in written  # absent, as before, when none
    with pytest.raises(ValidationError):
        SessionFinishedLine.model_validate(line.line() | {"reflection": {"usage": None, "missing": "x"}})


# ---------------------------------------------------------------- resume compares by content


def test_resume_accepts_the_same_configuration_given_by_other_paths(
    tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    RunDir(Path("runs/x")).create(SuiteManifest(config=suite_config(Path("data/release.json"))))
    # ./runs/x/ and an absolute data path name the same run and the same data
    RunDir(Path("./runs/x/")).create(SuiteManifest(config=suite_config(data.resolve())))
    moved = tmp_path / "elsewhere.json"
    shutil.copy(data, moved)  # the same content at another place is the same data
    RunDir(tmp_path / "runs" / "x").create(SuiteManifest(config=suite_config(moved)))


def test_resume_refuses_another_configuration_naming_each_field(tmp_path: Path, data: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.create(SuiteManifest(config=suite_config(data)))
    before = DataRef.of(data)
    data.write_text('{"queries": [1]}\n')  # the data changed since the run began
    after = DataRef.of(data)
    with pytest.raises(RunDirError) as caught:
        run.create(SuiteManifest(config=suite_config(data, seeds=(42, 123), model="openai/x")))
    message = str(caught.value)
    assert "\n" not in message
    assert f"data: {before} -> {after}" in message
    assert "seeds: [42] -> [42, 123]" in message and "model: None -> 'openai/x'" in message
    assert "suite" not in message.split("(", 1)[1]  # only the fields that differ


def test_an_episode_run_compares_its_task_directories_by_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = tmp_path / "tasks"
    (tasks / "ep").mkdir(parents=True)
    (tasks / "ep" / "episode.yaml").write_text("episode_id: ep\n")

    def manifest(directory: Path) -> EpisodeManifest:
        config = EpisodeConfig(
            tasks=(DataRef.of(directory),),
            episodes=("ep",),
            assistants="builtin",
            runs=1,
            ablation=True,
            model=None,
            judge_model=None,
            max_turns=None,
            max_tokens=None,
        )
        return EpisodeManifest(config=config, namespace="episodes.run")

    run = RunDir(tmp_path / "run")
    run.create(manifest(tasks / "ep"))
    monkeypatch.chdir(tasks)
    run.create(manifest(Path("ep")))  # the same directory, given relative
    (tasks / "ep" / "episode.yaml").write_text("episode_id: ep\nnote: edited\n")
    edited = r"tasks: \[.*/tasks/ep \(sha256 (\w+)\)\] -> \[.*/tasks/ep \(sha256 (?!\1)\w+\)\]"
    with pytest.raises(RunDirError, match=edited):
        run.create(manifest(tasks / "ep"))


def test_a_manifest_that_could_not_be_read_back_is_never_written(tmp_path: Path, data: Path) -> None:
    run = RunDir(tmp_path / "run")
    manifest = SuiteManifest(config=suite_config(data))
    run.create(manifest)
    unread = manifest.model_copy(update={"totals": {"cells": "many"}})
    with pytest.raises(ValidationError, match="totals"), pytest.warns(UserWarning, match="serialized value"):
        run.write_manifest(unread)
    assert run.manifest(SuiteManifest) == manifest
