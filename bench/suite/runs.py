"""A benchmark run on disk: cells appended to JSONL as they finish, a manifest, and resume.

A cell is one (suite, condition, seed, query) answer. A run directory (``bench.rundir``) holds
``cells.jsonl`` (one ``CellResult`` per finished cell, appended and flushed as each finishes, so a
killed run loses at most the cells in flight) and ``manifest.json`` (a ``SuiteManifest``: config,
seeds, models, git commit). Running again over the same directory skips every cell already
recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.progress import Progress
from bench.rundir import CellResult, RecordFile, RunDir

CELLS = "cells.jsonl"


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


class CellRunDir(RunDir):
    """A suite's run: its manifest and ``cells.jsonl``."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.cells_path = path / CELLS
        self._cells = RecordFile(self.cells_path, CellResult.read)

    def cells(self) -> Iterator[CellResult]:
        """Finished cells. A last line cut short by a kill is ignored (its cell runs again)."""
        return iter(self._cells)

    def done(self) -> set[str]:
        """Cells finished successfully. A failed cell stays in the file (and in the counts of its
        run) but runs again on resume; readers take the last record of a cell."""
        latest = {c.cell: c.ok for c in self.cells()}
        return {cell for cell, ok in latest.items() if ok}

    def append(self, record: CellResult) -> None:
        self._cells.append([record])


CellFn = Callable[[CellKey], Mapping[str, Any]]


def run_cells(
    run: CellRunDir,
    cells: Iterable[CellKey],
    execute: CellFn,
    *,
    workers: int = 1,
    progress: Progress | None = None,
) -> tuple[int, int]:
    """Run every cell not yet recorded, ``workers`` at a time; returns (ran, skipped).

    ``execute`` returns the cell's record; an exception (or a record that is not a ``CellResult``)
    is recorded as a failed cell (with its error) rather than lost, and counted; a resumed run
    tries it again.
    """
    planned = list(cells)
    done = run.done()
    todo = [c for c in planned if c.id not in done]
    if progress is not None:
        progress.start(done=len(planned) - len(todo))
    ran = 0
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    interrupted = True
    try:
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
                where = {"cell": key.id, **asdict(key)}
                try:
                    record = CellResult.model_validate({**fut.result(), "ok": True, **where})
                except Exception as exc:  # noqa: BLE001 - a failed cell is a result, not a crash
                    error = f"{type(exc).__name__}: {exc}"
                    record = CellResult.model_validate({"ok": False, "error": error, **where})
                run.append(record)
                ran += 1
                if progress is not None:
                    progress.advance(record.ok)
                nxt = next(queue, None)
                if nxt is not None:
                    pending[pool.submit(execute, nxt)] = nxt
        interrupted = False
    finally:
        # Interrupted (Ctrl-C): queued cells are dropped and running ones are not waited for (a
        # model call may take minutes); what finished is already in cells.jsonl for a resume.
        pool.shutdown(wait=not interrupted, cancel_futures=interrupted)
    return ran, len(planned) - len(todo)
