"""A run directory of episodes: the manifest, one record per unit (``units/KEY.jsonl``: a typed
line per session started and finished, appended as it happens, so an interrupted run resumes),
and the per-turn traces (``traces/KEY.jsonl``: every turn, tool call, intent status and grade)."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.episodes.loader import LoadedTask
from bench.rundir import (
    Manifest,
    RecordFile,
    RunDir,
    SessionFinishedLine,
    SessionStartedLine,
    UnitLine,
    UnitResetLine,
    append_lines,
    read_unit_line,
)
from messages.episodes import SessionEnded, SessionGrade


@dataclass(frozen=True)
class UnitStep:
    """What resuming a unit needs of a line of its record: its event, task and clock (a worker
    keeps these, not the whole lines, in Redis)."""

    event: str
    task_id: str | None = None
    clock: float | None = None

    @classmethod
    def of(cls, line: UnitLine) -> UnitStep:
        if isinstance(line, SessionFinishedLine):
            return cls(line.event, line.task_id, line.clock)
        if isinstance(line, SessionStartedLine):
            return cls(line.event, line.task_id)
        return cls(line.event)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UnitStep:
        clock = data.get("clock")
        task = data.get("task_id")
        return cls(
            str(data.get("event", "")),
            str(task) if task is not None else None,
            float(clock) if clock is not None else None,
        )

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.event}
        if self.task_id is not None:
            out["task_id"] = self.task_id
        if self.clock is not None:
            out["clock"] = self.clock
        return out


class UnitProgress:
    """Where a unit is: its steps since the last reset (a reset starts the unit over)."""

    def __init__(self, steps: Iterable[UnitStep]) -> None:
        every = list(steps)
        resets = [i for i, step in enumerate(every) if step.event == "reset"]
        self.current = every[resets[-1] + 1 :] if resets else every

    def _finished(self) -> list[UnitStep]:
        return [s for s in self.current if s.event == "finished"]

    def finished_tasks(self) -> set[str]:
        return {str(s.task_id) for s in self._finished()}

    def started(self, task_id: str) -> bool:
        return any(s.event == "started" and s.task_id == task_id for s in self.current)

    def last_task(self) -> str | None:
        finished = self._finished()
        return finished[-1].task_id if finished else None

    def last_clock(self) -> float:
        finished = self._finished()
        return float(finished[-1].clock or 0.0) if finished else 0.0


class UnitRecord(ABC):
    """A unit's record as the runner reads and writes it: in the run directory's files
    (``UnitFiles``) or, on a worker, published for the coordinator to write."""

    @abstractmethod
    def progress(self) -> UnitProgress: ...

    @abstractmethod
    def write(self, line: UnitLine, trace: Sequence[Mapping[str, Any]] = ()) -> None:
        """Record ``line`` and its trace lines (the trace first: a finished line has its trace)."""

    def finished_tasks(self) -> set[str]:
        return self.progress().finished_tasks()

    def started(self, task_id: str) -> bool:
        return self.progress().started(task_id)

    def last_task(self) -> str | None:
        return self.progress().last_task()

    def last_clock(self) -> float:
        return self.progress().last_clock()

    def mark_started(self, task_id: str) -> None:
        self.write(SessionStartedLine(task_id=task_id))

    def reset(self) -> None:
        self.write(UnitResetLine(), [{"type": "reset"}])

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
        """Record a graded session; ``reflection``: the built-in assistant's end-of-session
        reflection (its usage and fallbacks, already counted in the session's ``assistant_usage``),
        or why it is missing; ``reruns``: times the app backend died during the session."""
        extra: dict[str, Any] = {}
        if reflection is not None:
            extra["reflection"] = dict(reflection)
        if reruns:
            extra["backend_reruns"] = reruns  # absent when none, as it always was
        line = SessionFinishedLine(
            task_id=task.task.task_id,
            depends_on=tuple(task.depends_on),
            task_type=task.task.task_type,
            clock=clock,
            session=ended,
            grade=grade,
            **extra,
        )
        self.write(line, trace_lines(ended, grade))


class UnitFiles(UnitRecord):
    """A unit's record in the run directory: ``units/KEY.jsonl`` and ``traces/KEY.jsonl``."""

    def __init__(self, path: Path, trace_path: Path) -> None:
        self.path = path
        self.trace_path = trace_path
        self.lines = RecordFile(path, read_unit_line)
        self._lock = threading.Lock()

    def steps(self) -> list[UnitStep]:
        return [UnitStep.of(line) for line in self.lines]

    def progress(self) -> UnitProgress:
        return UnitProgress(self.steps())

    def finished(self) -> list[SessionFinishedLine]:
        """The unit's finished sessions since its last reset (the last line of a task wins)."""
        by_task: dict[str, SessionFinishedLine] = {}
        for line in self.lines:
            if isinstance(line, SessionFinishedLine):
                by_task[line.task_id] = line
            elif isinstance(line, UnitResetLine):
                by_task.clear()
        return list(by_task.values())

    def write(self, line: UnitLine, trace: Sequence[Mapping[str, Any]] = ()) -> None:
        with self._lock:
            if trace:
                append_lines(self.trace_path, trace)
            self.lines.append([line])


class EpisodeRunDir(RunDir):
    """A run of episodes: its manifest, ``units/`` and ``traces/``."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.units_dir = path / "units"
        self.traces_dir = path / "traces"

    def create(self, manifest: Manifest[Any]) -> None:
        super().create(manifest)
        self.units_dir.mkdir(exist_ok=True)
        self.traces_dir.mkdir(exist_ok=True)

    def unit(self, key: str) -> UnitFiles:
        return UnitFiles(self.units_dir / f"{key}.jsonl", self.traces_dir / f"{key}.jsonl")

    def unit_records(self) -> dict[str, list[SessionFinishedLine]]:
        """Every unit's finished sessions, by unit key."""
        return {path.stem: self.unit(path.stem).finished() for path in sorted(self.units_dir.glob("*.jsonl"))}


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
