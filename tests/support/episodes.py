"""Running ``bench episodes`` from tests and reading its run directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BAKERY = ROOT / "bench" / "episodes" / "data" / "ines_calder"
"""The bundled persona whose episodes the run tests use."""
PIBENCH_DEMO = ROOT / "tests" / "fixtures" / "pibench" / "data" / "pibench_demo"
"""The published pi-Bench demo episode (its tasks, tools, seed and scorers)."""


def bench_episodes_on_stub(api_base: str, out: Path, *more: str) -> list[str]:
    """The arguments of ``auratown bench episodes`` over the pi-Bench demo, once, the built-in
    assistant only, with its models and judges at the OpenAI stub ``api_base``."""
    return [
        "bench", "episodes", "--tasks", str(PIBENCH_DEMO), "--runs", "1", "--assistants", "builtin",
        "--no-ablation", "--model", "openai/stub-assistant", "--judge-model", "openai/stub-judge",
        "--api-base", api_base, "--out", str(out), "--quiet", *more,
    ]  # fmt: skip


@dataclass(frozen=True)
class EpisodesRun:
    """``auratown bench episodes`` over the bakery persona (once, the built-in assistant only)
    running as a process of its own."""

    command: list[str]
    process: subprocess.Popen[bytes]
    record: Path
    """The record of the run's one unit."""

    def finished(self) -> int:
        return finished_sessions(self.record)


def start_bench_episodes(redis_url: str, out: Path, *more: str, stderr: int) -> EpisodesRun:
    """The bakery run on the bus at ``redis_url`` into ``out`` (``more``: further options); its
    standard output dropped."""
    command = [
        sys.executable, "-m", "deploy.cli", "--log-level", "warning", "bench", "episodes",
        "--tasks", str(BAKERY), "--runs", "1", "--assistants", "builtin", "--no-ablation",
        "--bus", redis_url, *more, "--out", str(out), "--quiet",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=ROOT, env={**os.environ}, stdout=subprocess.DEVNULL, stderr=stderr
    )
    return EpisodesRun(command, process, out / "units" / "bakery_owner.builtin.r1.jsonl")


def finished_sessions(record: Path) -> int:
    """Sessions a unit's record (``units/KEY.jsonl``) reports finished so far."""
    if not record.exists():
        return 0
    return sum('"event": "finished"' in line for line in record.read_text().splitlines())


def tasks_finished_once(record: Path, tasks: int) -> list[str]:
    """The tasks a unit's record finished, checked: each of the ``tasks`` exactly once, and the
    unit never reset (its state survived whatever stopped it)."""
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    done = [line["task_id"] for line in lines if line["event"] == "finished"]
    assert len(done) == len(set(done)) == tasks  # nothing finished twice, nothing lost
    assert not any(line["event"] == "reset" for line in lines)  # the state survived in Redis
    return done
