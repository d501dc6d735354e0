"""Per-query cost of the offline IntentInferrer with each social reader, side by side in one run.

For every query of the phrasing-robustness set (208, bundled) and, when found, the AURA release's
implicit-intent v2 queries (``../shared/data/aura``), times ``infer_intent`` (parse + reading +
frame) and the whole offline ``aura_intent`` answer (inference, probes, answer) with the cue reader
and with the embedding reader (the ``embed`` extra: all-MiniLM-L6-v2 on the CPU), interleaved query
by query. The model's load time is printed apart. Target: the whole offline aura_intent answer with
the embedding reader under 20 ms median per query. Also prints how often each reader's reading
matches the gold subcategory (people queries) on the set's dev and test halves.

Run::

    python -m bench.intent_reader            # about a minute on a 2-core machine
    python -m bench.intent_reader --repeats 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bench._output import verdict
from bench.suite.datasets import AURA_RELEASE, ImplicitQuery, Suite, SuiteError, load_suite, probe_scene
from world.aura import (
    CueReader,
    OfflineBackend,
    RegistryProbes,
    SocialReader,
    answer_query,
    infer_intent,
    parse_query,
    scene_view,
)
from world.aura._intent import social_reading
from world.probes import agent_state_registry

DEFAULT_DATA = AURA_RELEASE
TARGET_MS = 20.0
USER = "the user"


@dataclass(frozen=True)
class Item:
    suite: str
    query: ImplicitQuery
    scene: Any


def items(data: Path) -> list[Item]:
    out: list[Item] = []
    suites: list[tuple[str, Suite]] = [(n, load_suite(n)) for n in ("phrasing-dev", "phrasing-test")]  # type: ignore[arg-type]
    try:
        suites.append(("release-v2", load_suite("implicit-v2", data)))
    except SuiteError as exc:
        print(f"release v2 queries skipped: {exc}")
    for name, suite in suites:
        scenes = {sid: probe_scene(suite, sid) for sid in suite.scenes}
        out += [Item(name, q, scenes[q.scene]) for q in suite.implicit()]
    return out


def _ms(values: Sequence[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    median, mean = statistics.median(values), statistics.fmean(values)
    return f"median {median:6.2f} ms, p90 {p90:6.2f} ms, mean {mean:6.2f} ms"


def run(repeats: int, data: Path) -> int:
    from actors.aura import EmbeddingReader, EmbeddingUnavailableError

    work = items(data)
    started = time.perf_counter()
    try:
        embedding: SocialReader | None = EmbeddingReader()
        loaded = time.perf_counter() - started
        print(f"embedding reader: all-MiniLM-L6-v2 loaded in {loaded:.1f} s (not in the times)")
    except EmbeddingUnavailableError as exc:
        embedding = None
        print(f"embedding reader unavailable ({exc}); timing the cue reader only")
    readers: dict[str, SocialReader] = {"cues": CueReader()}
    if embedding is not None:
        readers["embedding"] = embedding
    registry = agent_state_registry()
    infer: dict[str, list[float]] = {n: [] for n in readers}
    whole: dict[str, list[float]] = {n: [] for n in readers}
    hits: dict[tuple[str, str], list[bool]] = {}

    def timed(fn: Callable[[], Any]) -> float:
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1000

    for item in work[:5]:  # warm-up, untimed
        for reader in readers.values():
            _answer(item, reader, registry)
    for _ in range(repeats):
        for item in work:
            view = scene_view(item.scene, USER, item.query.query)
            tools = RegistryProbes(registry, item.scene, "env", None).tools()
            for name, reader in readers.items():
                text = item.query.query
                infer[name].append(timed(partial(infer_intent, text, view, tools, reader)))
                whole[name].append(timed(partial(_answer, item, reader, registry)))
    for item in work:
        if item.query.agent_subject is None:
            continue
        view = scene_view(item.scene, USER, item.query.query)
        parse = parse_query(item.query.query, view)
        for name, reader in readers.items():
            kind = social_reading(item.query.query, parse, reader).kind if parse.people else "none"
            hits.setdefault((item.suite, name), []).append(kind == item.query.subcategory)
    print(f"\n{len(work)} queries x {repeats} pass(es), readers interleaved query by query")
    for name in readers:
        print(f"  {name:9} infer_intent: {_ms(infer[name])}")
        print(f"  {name:9} aura_intent answer (offline, whole): {_ms(whole[name])}")
    print("\nreading = gold subcategory (queries naming a person):")
    for (suite, name), got in sorted(hits.items()):
        print(f"  {suite:13} {name:9} {sum(got)}/{len(got)} = {sum(got) / len(got):.2f}")
    chosen = "embedding" if "embedding" in readers else "cues"
    median = statistics.median(whole[chosen])
    passed = median < TARGET_MS
    print(f"\noffline aura_intent with the {chosen} reader: median {median:.2f} ms per query", end="")
    print(f" (target < {TARGET_MS:g} ms)  {verdict(passed)}")
    return 0 if passed else 1


def _answer(item: Item, reader: SocialReader, registry: Any) -> Any:
    view = scene_view(item.scene, USER, item.query.query)
    probes = RegistryProbes(registry, item.scene, "env:user", asker=None)
    return answer_query(item.query.query, USER, "aura_intent", view, probes, OfflineBackend(reader))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.intent_reader", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed passes over every query (default 3)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the AURA release's data directory")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return run(args.repeats, args.data)


if __name__ == "__main__":
    sys.exit(main())
