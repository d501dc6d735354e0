"""A run directory of episodes: the manifest, one record per unit (``units/KEY.jsonl``: a line per
session started and finished, appended as it happens, so an interrupted run resumes), and the
per-turn traces (``traces/KEY.jsonl``: every turn, tool call, intent status and grade)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.episodes.loader import LoadedTask
from messages.episodes import SessionEnded, SessionGrade

MANIFEST = "manifest.json"


class RunDirError(ValueError):
    pass


def read_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The lines of a JSONL record; a last line cut short by a kill is not one."""
    if not path.exists():
        return
    with path.open() as f:
        for line in f:
            if not line.endswith("\n"):
                return  # cut short by a kill: that step runs again
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def append_lines(path: Path, lines: Sequence[Mapping[str, Any]]) -> None:
    text = "".join(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n" for line in lines)
    with path.open("a") as f:
        f.write(text)
        f.flush()


def finished_since_reset(lines: Iterable[Mapping[str, Any]]) -> set[str]:
    """Task ids of a unit's record finished since its last reset."""
    done: set[str] = set()
    for line in lines:
        if line.get("event") == "reset":
            done = set()
        elif line.get("event") == "finished":
            done.add(str(line["task_id"]))
    return done


def finished_line(
    task: LoadedTask,
    ended: SessionEnded,
    grade: SessionGrade,
    clock: float,
    *,
    reflection: Mapping[str, Any] | None = None,
    reruns: int = 0,
) -> dict[str, Any]:
    """The ``finished`` line of ``units/KEY.jsonl``; ``reflection``: the built-in assistant's
    end-of-session reflection (its usage and fallbacks, already counted in the session's
    ``assistant_usage``), or why it is missing."""
    line = {
        "event": "finished",
        "task_id": task.task.task_id,
        "depends_on": list(task.depends_on),
        "task_type": task.task.task_type,
        "clock": clock,
        "session": ended.model_dump(mode="json"),
        "grade": grade.model_dump(mode="json"),
    }
    if reflection is not None:
        line["reflection"] = dict(reflection)
    if reruns:
        # The app backend (AppWorld's process) died during the session this many times.
        line["backend_reruns"] = reruns
    return line


def _repair_tail(path: Path) -> None:
    if path.exists():
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            with path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)


class EpisodeRunDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.units_dir = path / "units"
        self.traces_dir = path / "traces"

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    def create(self, manifest: Mapping[str, Any]) -> None:
        """Start or continue a run; a run with another configuration is refused (resuming it
        would mix two experiments)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.units_dir.mkdir(exist_ok=True)
        self.traces_dir.mkdir(exist_ok=True)
        if self.manifest_path.exists():
            old = json.loads(self.manifest_path.read_text())
            if old.get("config") != manifest.get("config"):
                raise RunDirError(
                    f"{self.path} holds a run with another configuration; use a new --out "
                    f"(theirs: {json.dumps(old.get('config'), sort_keys=True)})"
                )
            return
        self.write_manifest(manifest)

    def manifest(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.manifest_path.read_text())
        return data

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        tmp = self.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, self.manifest_path)

    def unit(self, key: str) -> UnitRecord:
        return UnitRecord(self.units_dir / f"{key}.jsonl", self.traces_dir / f"{key}.jsonl")

    def unit_records(self) -> dict[str, list[dict[str, Any]]]:
        """Every unit's finished sessions, by unit key (the last record of a task wins)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for path in sorted(self.units_dir.glob("*.jsonl")):
            by_task: dict[str, dict[str, Any]] = {}
            for line in read_lines(path):
                if line.get("event") == "finished":
                    by_task[str(line["task_id"])] = line
                elif line.get("event") == "reset":
                    by_task.clear()
            out[path.stem] = list(by_task.values())
        return out


class UnitRecord:
    def __init__(self, path: Path, trace_path: Path) -> None:
        self.path = path
        self.trace_path = trace_path
        self._lock = threading.Lock()
        _repair_tail(path)
        _repair_tail(trace_path)

    def _events(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for line in read_lines(self.path):
            if line.get("event") == "reset":
                events = []
            else:
                events.append(line)
        return events

    def finished_tasks(self) -> set[str]:
        return {str(e["task_id"]) for e in self._events() if e.get("event") == "finished"}

    def started(self, task_id: str) -> bool:
        return any(e.get("event") == "started" and e.get("task_id") == task_id for e in self._events())

    def last_task(self) -> str | None:
        finished = [e for e in self._events() if e.get("event") == "finished"]
        return str(finished[-1]["task_id"]) if finished else None

    def last_clock(self) -> float:
        finished = [e for e in self._events() if e.get("event") == "finished"]
        return float(finished[-1].get("clock", 0.0)) if finished else 0.0

    def _append(self, path: Path, lines: Sequence[Mapping[str, Any]]) -> None:
        with self._lock:
            append_lines(path, lines)

    def mark_started(self, task_id: str) -> None:
        self._append(self.path, [{"event": "started", "task_id": task_id}])

    def reset(self) -> None:
        self._append(self.path, [{"event": "reset"}])
        self._append(self.trace_path, [{"type": "reset"}])

    def finish(
        self,
        task: LoadedTask,
        ended: SessionEnded,
        grade: SessionGrade,
        clock: float,
        *,
        reflection: Mapping[str, Any] | None = None,
        reruns: int = 0,
    ) -> None:
        self._append(self.trace_path, trace_lines(ended, grade))
        line = finished_line(task, ended, grade, clock, reflection=reflection, reruns=reruns)
        self._append(self.path, [line])


def trace_lines(ended: SessionEnded, grade: SessionGrade) -> list[dict[str, Any]]:
    """One line per turn, per intent's final status and one for the grade."""
    base = {"episode": ended.episode_id, "task_id": ended.task_id}
    lines: list[dict[str, Any]] = []
    for t in ended.turns:
        lines.append(
            {
                **base,
                "type": "turn",
                "turn": t.turn,
                "role": t.role,
                "kind": t.kind,
                "text": t.text,
                "sim_time": t.sim_time,
                "tools": [r.model_dump(mode="json") for r in t.tool_records],
                "frame": t.frame.model_dump(mode="json") if t.frame is not None else None,
            }
        )
    for i in ended.intents:
        lines.append({**base, "type": "intent", **i.model_dump(mode="json")})
    lines.append(
        {
            **base,
            "type": "grade",
            "end_reason": ended.reason,
            "comp": grade.comp,
            "comp_faithful": grade.comp_faithful,
            "criteria": [c.model_dump(mode="json") for c in grade.criteria],
            "grader_errors": list(grade.grader_errors),
        }
    )
    return lines
