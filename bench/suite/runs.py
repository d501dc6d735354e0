"""A benchmark run on disk: cells appended to JSONL as they finish, a manifest, and resume.

A cell is one (suite, condition, seed, query) answer. A run directory holds ``cells.jsonl`` (one
JSON object per finished cell, appended and flushed as each finishes, so a killed run loses at
most the cells in flight) and ``manifest.json`` (what was asked for: config, seeds, models, git
commit). Running again over the same directory skips every cell already recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from bench.progress import Progress

CELLS = "cells.jsonl"
MANIFEST = "manifest.json"


@dataclass(frozen=True, order=True)
class CellKey:
    suite: str
    condition: str
    seed: int
    query_id: str

    @property
    def id(self) -> str:
        return f"{self.suite}/{self.condition}/{self.seed}/{self.query_id}"


def plan_cells(
    suite: str, conditions: Sequence[str], seeds: Sequence[int], query_ids: Sequence[str]
) -> list[CellKey]:
    """Every cell of a run, query-major so that a partial run covers whole queries first."""
    return [CellKey(suite, c, s, q) for q in query_ids for s in seeds for c in conditions]


class RunDirError(ValueError):
    pass


class RunDir:
    """The files of one run. Appends are serialised by a lock: workers may finish at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cells_path = path / CELLS
        self.manifest_path = path / MANIFEST
        self._lock = threading.Lock()

    def create(self, manifest: Mapping[str, Any]) -> None:
        """Start or continue a run. A different configuration in an existing run is refused:
        resuming it would mix cells of two experiments."""
        self.path.mkdir(parents=True, exist_ok=True)
        if self.manifest_path.exists():
            old = json.loads(self.manifest_path.read_text())
            if old.get("config") != manifest.get("config"):
                raise RunDirError(
                    f"{self.path} holds a run with another configuration; use a new directory "
                    f"(theirs: {json.dumps(old.get('config'), sort_keys=True)})"
                )
            return
        tmp = self.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, self.manifest_path)

    def cells(self) -> Iterator[dict[str, Any]]:
        """Finished cells. A last line cut short by a kill is ignored (its cell runs again)."""
        if not self.cells_path.exists():
            return
        with self.cells_path.open() as f:
            for line in f:
                if not line.endswith("\n"):
                    return  # written partially: the process died mid-line
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue

    def done(self) -> set[str]:
        """Cells finished successfully. A failed cell stays in the file (and in the counts of its
        run) but runs again on resume; readers take the last record of a cell."""
        latest = {str(c["cell"]): bool(c.get("ok")) for c in self.cells() if "cell" in c}
        return {cell for cell, ok in latest.items() if ok}

    def _repair_tail(self) -> None:
        """Cut a partial last line so that the next append starts on a line of its own."""
        if not self.cells_path.exists():
            return
        data = self.cells_path.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.cells_path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def append(self, record: Mapping[str, Any], out: TextIO) -> None:
        line = json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n"
        with self._lock:
            out.write(line)
            out.flush()


CellFn = Callable[[CellKey], Mapping[str, Any]]


def run_cells(
    run: RunDir,
    cells: Iterable[CellKey],
    execute: CellFn,
    *,
    workers: int = 1,
    progress: Progress | None = None,
) -> tuple[int, int]:
    """Run every cell not yet recorded, ``workers`` at a time; returns (ran, skipped).

    ``execute`` returns the cell's record; an exception is recorded as a failed cell (with its
    error) rather than lost, and counted; a resumed run tries it again.
    """
    planned = list(cells)
    done = run.done()
    todo = [c for c in planned if c.id not in done]
    if progress is not None:
        progress.start(done=len(planned) - len(todo))
    run._repair_tail()
    ran = 0
    with run.cells_path.open("a") as out, ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        pending: dict[Future[Mapping[str, Any]], CellKey] = {}
        queue = iter(todo)
        for key in queue:
            pending[pool.submit(execute, key)] = key
            if len(pending) >= max(1, workers) * 2:
                break
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                key = pending.pop(fut)
                try:
                    record: dict[str, Any] = {**fut.result(), "ok": True}
                except Exception as exc:  # noqa: BLE001 - a failed cell is a result, not a crash
                    record = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                record.update(cell=key.id, **asdict(key))
                run.append(record, out)
                ran += 1
                if progress is not None:
                    progress.advance(bool(record["ok"]))
                nxt = next(queue, None)
                if nxt is not None:
                    pending[pool.submit(execute, nxt)] = nxt
    return ran, len(planned) - len(todo)


def git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
    except OSError:
        return None
    return out.stdout.strip() or None
