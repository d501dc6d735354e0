"""Scale-out: AURA benchmark cells per second against the number of ``auratown worker`` processes.

``python -m bench.scale`` starts a private redis-server and an OpenAI-compatible stub model whose
every answer takes a FIXED latency (200 ms by default; a threading HTTP server in this process),
then, for each worker count N (1, 2, 4, 8), starts N ``auratown worker --roles registry,env``
processes with ``--model openai/stub``, waits until every one is up and has answered a warm-up
cell (process start-up and first imports are not timed), and times the same kind of cells that
``auratown bench aura --bus URL --workers N`` runs (the bundled implicit-v2 suite, one model call
per cell: the ``literal``, ``vanilla`` and ``static_context`` conditions), with the coordinator
keeping two cells in flight per worker. Each N gets a workload proportional to N (so every
measurement lasts about as long). It prints cells/s, the speed-up over one worker and the
verdict against the target speed-up of at least 0.8 x N, and checks that every N gave the same
answers as N = 1.

Model latency dominates a cell, so N workers overlap N waits: the speed-up stays near N until
the CPU (the workers' litellm and bus work, the coordinator's judging) runs out; on a 2-CPU
machine, that is what the 8-worker figure measures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

from actors.bus.local_server import LocalRedisServer
from bench._output import verdict
from bench.progress import Progress
from bench.rundir import Manifest, RunConfig
from bench.suite import implicit
from bench.suite.datasets import load_suite
from bench.suite.runs import CellKey, CellRunDir, plan_cells, run_cells
from bench.suite.workers import BusWorkers, registry_for
from world.aura import Backend

SUITE: Final = "implicit-v2"
CONDITIONS = ("literal", "vanilla", "static_context")
"""Conditions of one model call per cell: a cell costs one fixed latency plus our overhead."""
TARGET = 0.8
ANSWER = "Lin Wei is at the cafe right now, serving the morning rush; she seems busy but fine."


# ---------------------------------------------------------------- the stub model


class StubModel:
    """``POST /v1/chat/completions`` answered after exactly ``latency`` seconds, any number at once."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                with stub._lock:
                    stub.requests += 1
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                    n = stub.requests
                try:
                    time.sleep(stub.latency)  # the model "thinking": the fixed latency under test
                finally:
                    with stub._lock:
                        stub.in_flight -= 1
                body = json.dumps(
                    {
                        "id": f"chatcmpl-scale-{n}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": request.get("model", "stub"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": ANSWER},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="stub-model", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> StubModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


# ---------------------------------------------------------------- one measurement


@dataclass
class Point:
    workers: int
    cells: int
    seconds: float
    failed: int
    model_calls: int
    cpu_seconds: float
    """CPU time of this process (the coordinator) during the timed cells."""
    speedup: float = 0.0
    target: float = 0.0
    ok: bool = False
    answers: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def rate(self) -> float:
        return self.cells / self.seconds if self.seconds > 0 else 0.0


def _no_backend() -> Backend:
    raise AssertionError("cells are answered by the workers")


def _cells(query_ids: Sequence[str], count: int, first_seed: int) -> list[CellKey]:
    """``count`` distinct cells (query x condition x seed), seeds numbered from ``first_seed``."""
    seeds = list(range(first_seed, first_seed + count // (len(query_ids) * len(CONDITIONS)) + 1))
    return plan_cells(SUITE, list(CONDITIONS), seeds, list(query_ids))[:count]


class ScaleRun(RunConfig):
    """The run of one measured point (or of its warm-up)."""

    workers: int
    warmup: bool


def measure(
    url: str, stub: StubModel, workers: int, per_worker: int, out: Path, *, quiet: bool = False
) -> Point:
    suite = load_suite(SUITE, None)
    ids = [str(q.id) for q in suite.implicit()]
    pool = BusWorkers(url, f"scale.w{workers}", workers, model="openai/stub", api_base=stub.url)
    try:
        answer = pool.start(registry_for(SUITE))
        execute = implicit.cell_runner(suite, _no_backend, answer=answer)
        concurrency = pool.concurrency
        # Warm-up, not timed: every worker's first cell (imports, connections) and a steady queue.
        warm = CellRunDir(out / f"warmup-{workers}")
        warm.create(Manifest[ScaleRun](config=ScaleRun(workers=workers, warmup=True)))
        run_cells(warm, _cells(ids, 2 * concurrency, 10_000), execute, workers=concurrency)
        run = CellRunDir(out / f"workers-{workers}")
        run.create(Manifest[ScaleRun](config=ScaleRun(workers=workers, warmup=False)))
        cells = _cells(ids, per_worker * workers, 1)
        calls_before = stub.requests
        cpu_before = time.process_time()
        started = time.perf_counter()
        with Progress(len(cells), desc=f"{workers} worker(s)", unit="cell", quiet=quiet) as progress:
            ran, _ = run_cells(run, cells, execute, workers=concurrency, progress=progress)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu_before
        records = list(run.cells())
    finally:
        pool.stop()
    point = Point(
        workers=workers,
        cells=ran,
        seconds=seconds,
        failed=sum(1 for r in records if not r.ok),
        model_calls=stub.requests - calls_before,
        cpu_seconds=cpu,
        answers={r.cell: str(r.answer) for r in records},
    )
    progress.say(f"{workers} worker(s): {ran} cells in {seconds:.2f}s = {point.rate:.2f} cells/s")
    return point


# ---------------------------------------------------------------- the run


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", default="1,2,4,8", help="worker counts to measure (default: %(default)s)")
    p.add_argument("--latency", type=float, default=0.2, help="the stub model's seconds per call (0.2)")
    p.add_argument(
        "--cells-per-worker", type=int, default=24, help="timed cells per worker of each N (default 24)"
    )
    p.add_argument("--out", default=None, help="write the figures as JSON here")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    counts = [int(n) for n in args.workers.split(",") if n.strip()]
    os.environ.setdefault("OPENAI_API_KEY", "sk-scale-stub")  # litellm wants one; the stub ignores it
    points: list[Point] = []
    with (
        tempfile.TemporaryDirectory(prefix="auratown-scale-") as tmp,
        LocalRedisServer() as server,
        StubModel(args.latency) as stub,
    ):
        for n in counts:
            points.append(measure(server.url, stub, n, args.cells_per_worker, Path(tmp), quiet=args.quiet))
        max_in_flight = stub.max_in_flight
    base = next((p for p in points if p.workers == 1), points[0])
    base_rate = base.rate / base.workers
    for p in points:
        p.speedup = p.rate / base_rate if base_rate else 0.0
        p.target = TARGET * p.workers
        p.ok = p.speedup >= p.target and p.failed == 0
    same = all(p.answers[c] == base.answers[c] for p in points for c in p.answers if c in base.answers)
    return {
        "benchmark": "bench.scale",
        "params": {
            "suite": SUITE,
            "conditions": list(CONDITIONS),
            "latency_s": args.latency,
            "cells_per_worker": args.cells_per_worker,
            "workers": counts,
        },
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version()},
        "points": [
            {k: v for k, v in asdict(p).items() if k != "answers"} | {"cells_per_s": p.rate} for p in points
        ],
        "stub_max_concurrent_calls": max_in_flight,
        "same_answers": same,
        "pass": all(p.ok for p in points) and same,
    }


def format_report(result: dict[str, Any]) -> str:
    params = result["params"]
    lines = [
        f"Scale-out: {params['suite']} cells ({', '.join(params['conditions'])}), one stub model call "
        f"of {1000 * params['latency_s']:.0f} ms per cell, {result['machine']['cpu_count']} CPUs",
        "",
        "| workers | cells | seconds | cells/s | speed-up | target (0.8 x N) | verdict | coordinator CPU s |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for p in result["points"]:
        shown = verdict(p["ok"])
        if p["failed"]:
            shown += f" ({p['failed']} failed cells)"
        lines.append(
            f"| {p['workers']} | {p['cells']} | {p['seconds']:.2f} | {p['cells_per_s']:.2f} | "
            f"{p['speedup']:.2f} | {p['target']:.1f} | {shown} | {p['cpu_seconds']:.2f} |"
        )
    lines += [
        "",
        f"most model calls at once: {result['stub_max_concurrent_calls']}; "
        f"answers identical to 1 worker: {'yes' if result['same_answers'] else 'NO'}",
        f"verdict: {verdict(result['pass'])}: speed-up >= 0.8 x N for every N measured",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    print(format_report(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
