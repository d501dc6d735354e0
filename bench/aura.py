"""AURA benchmark: per-query latency of the offline environment-agent pipeline, embedded and over
the Redis bus, and the prompt tokens per query that each condition would send to a model.

The queries (external data, read by path from ``../shared/data/aura``, never copied):

* ``implicit_v2``: the AURA release's implicit-intent v2 queries, scenes A and B (50), each
  against its own scene snapshot (``scene_from_aura_v2``) with the agent-state registry, asked by
  "the user" (as the release does);
* ``factual``: the 50 ``chat_queries.json`` factual queries against the live embedded AURATown
  (``embedded_town()``, seed 42, after 12 ticks: 11:30 on day 0) with the environment registry,
  asked by the first agent of the town the query does not name.

``--queries N`` takes the first N queries of each set.

Latency, offline backend (``OfflineBackend``: heuristic IntentInferrer, rule planner, template
answers), ``time.perf_counter`` around each query:

* ``embedded``: in this process, per query ``scene_view`` (Sense, Scene, Memory) + ``RegistryProbes``
  over the in-process registry + ``answer_query``, for every deployable condition (not the two
  diagnostics). The scenes are built once beforehand (the town's build time is printed apart).
  A few queries of each set are first answered untimed under every condition (warm-up); then
  every query is timed ``--repeats`` times, the conditions interleaved query by query so that a
  noisy moment of the machine hits them all alike.
* ``redis``: a spawned child hosts a whole town on one ``Host`` over a ``RedisTransport`` to a
  private ``redis-server`` (``LocalRedisServer``, never the machine's default port): the clock,
  world, agents, ``registry`` (``RegistryActor``) and ``env`` (``EnvActor``) roles of
  ``spawn_town``. This process steps it to the same tick as the embedded town (their digests are
  compared), then sends ``AskQuery`` to ``env`` and waits for the ``AnswerData``: an implicit-v2
  query carries its scene inline; a factual query carries none, so ``env`` asks ``world`` for the
  live scene and every probe makes ``registry`` read the live town (and an agent's memories).
  Timed from sending the ask to decoding the reply (warm-up and interleaving as embedded).
  The answers are compared word for word with the embedded ones: the same pipeline on the same
  scene (inline, or the live town at the same digest, with the asker's memories read from its
  agent actor) must answer the same; any difference is listed.

Prompt tokens per query: every deployable condition is rerun with a recording backend that answers
like ``OfflineBackend`` and, at each judgement call, builds the very messages ``LLMBackend``
would send there (``actors.aura._prompts``: intent, one planner prompt per Explore step, the
Plan-and-Solve plan, the answer, Reflexion's critique), so the planner and answer prompts carry the
offline run's actual probe trace. A model would choose other probes and stop elsewhere: these are
what the offline decisions would cost, not a model run. The ``pack_all`` baseline is one answer
prompt carrying the whole ``ProbeScene`` serialised as JSON (every agent's public and private
state, beliefs and plan, every agent's memories, the events and places), like the paper's
stuff-everything estimate (Figure 8: about 2,050 prompt tokens per query; AURA 1,010-1,170).
Tokens are counted with ``litellm.token_counter(model="gpt-4o-mini", messages=...)`` (its bundled
o200k_base tokenizer; no network); if that fails, len(text) / 4, and the output says so.

The targets, printed as PASS/FAIL and in the JSON's ``checks``: the offline ``aura_intent``
answers in under 50 ms median, embedded (over both query sets); and, with a model, ``aura_intent``
sends at most 1,170 prompt tokens per implicit-v2 query over all its calls (the top of Figure 8's
1,010-1,170; counted as above, so the offline run's trace decides how many planner calls a query
makes). Results and machine info are written as JSON (``bench/results/aura.json`` by default).

Run::

    python -m bench.aura                      # all 100 queries, about a minute on a 2-core machine
    python -m bench.aura --quick              # smoke run: 10 queries per set, one pass
    python -m bench.aura --queries 20 --out /tmp/aura.json
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.context import SpawnProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from typing import Any

import redis

from actors.aura import _prompts as prompts
from actors.bus import AskTimeoutError, Bus, RemoteError
from actors.bus._redis import RedisTransport
from actors.llm import load_litellm
from actors.runtime import Host, HostConfig
from actors.town import TownClient, TownConfig, TownRequestError, embedded_town, ensure_config, spawn_town
from bench._cli import BenchParams, BenchParser, Scale, begin, params_from
from bench._harness import BenchError, Children, child_result, child_run, private_machine, wait_for_stop
from bench._output import finish, num, results_json, table, verdict
from bench.progress import Progress
from bench.suite.datasets import AURA_RELEASE, Suite, SuiteFileError, load_suite
from messages.aura import (
    CONDITIONS,
    DIAGNOSTIC_CONDITIONS,
    AnswerData,
    AskQuery,
    IntentFrame,
    UsageSummary,
)
from messages.probes import ProbeScene, RegistryName
from world import Town
from world.aura import (
    AnswerRequest,
    Backend,
    Critique,
    OfflineBackend,
    PlanDecision,
    PlanRequest,
    RegistryProbes,
    SceneView,
    ToolInfo,
    answer_query,
    scene_view,
)
from world.probes import ProbeRegistry, agent_state_registry, environment_registry, scene_from_aura_v2
from world.probes import scene_from_town as build_town_scene

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = AURA_RELEASE

SETS = ("implicit_v2", "factual")
CONDITIONS_TIMED: tuple[str, ...] = tuple(c for c in CONDITIONS if c not in DIAGNOSTIC_CONDITIONS)
"""Every deployable condition; the diagnostics read gold labels, which no timing needs."""
BUS_CONDITIONS = ("literal", "react", "plan_and_solve", "fixed_probe", "aura_gap_routed", "aura_intent")
AURA_CONDITIONS = ("aura_no_probe", "aura_full", "aura_gap_routed", "aura_intent")
V2_ASKER = "the user"
TOWN_SEED = 42
TOWN_TICKS = 12
"""Ticks the live town runs first (0..11): its scene is then 11:30 on day 0, a morning of memories."""

REPEATS = Scale(3, quick=1)
BUS_REPEATS = Scale(2, quick=1)
QUERIES = Scale(None, quick=10)
"""Of each set: None, all."""
WARMUP_QUERIES = 3
"""Queries of each set answered untimed under every condition before timing (embedded and bus)."""

TARGET_CONDITION = "aura_intent"
TARGET_MS = 50.0
"""The offline aura_intent must answer in under this median, embedded."""

TOKEN_MODEL = "gpt-4o-mini"
PAPER_PACK_ALL = 2050
PAPER_AURA = (1010, 1170)
"""The paper's Figure 8 estimates (prompt tokens per query, from its own AURATown prompt log)."""
TOKEN_TARGET = PAPER_AURA[1]
TOKEN_TARGET_SET = "implicit_v2"
"""``aura_intent`` must send at most ``TOKEN_TARGET`` prompt tokens per query of this set."""
PACK_ALL = "pack_all"

READY_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0
ASK_TIMEOUT = 30.0
TOWN_STEP_TIMEOUT = 120.0


class DataMissingError(BenchError):
    """The AURA release's query files are not where they are read from."""


# ---------------------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class Query:
    set: str
    id: int
    text: str
    asker: str
    scene: ProbeScene
    registry: RegistryName
    category: str
    live: bool
    """True: over the bus, ``env`` reads the live town instead of an inline scene."""

    @property
    def key(self) -> str:
        return f"{self.set}:{self.id}"

    def ask(self, condition: str) -> AskQuery:
        return AskQuery.model_validate(
            {
                "query": self.text,
                "asker": self.asker,
                "condition": condition,
                "registry": self.registry,
                "scene": None if self.live else self.scene,
            }
        )


@dataclass
class Workload:
    queries: list[Query]
    town_scene: ProbeScene
    town_digest: str
    town_build_ms: float
    """Building the 5-agent town, running its ticks and turning it into a ``ProbeScene``."""
    files: dict[str, str]

    def of(self, name: str) -> list[Query]:
        return [q for q in self.queries if q.set == name]


def _release_suites(data_dir: Path) -> tuple[Suite, Suite]:
    """The release's implicit-intent v2 and factual sets, read by the suite's one loader."""
    try:
        return load_suite("implicit-v2", data_dir), load_suite("factual", data_dir)
    except SuiteFileError as exc:
        raise DataMissingError(
            f"AURA benchmark data not found: {exc}. This benchmark reads the AURA release's query files "
            f"by path from {data_dir} (external data, never copied into the repo); put them there or "
            "pass --data DIR."
        ) from None


def _factual_asker(text: str, names: Sequence[str]) -> str:
    """The first agent the query does not name (a query about Lin Wei is not asked by her)."""
    low = text.lower()
    for name in names:
        if name.lower() not in low and name.split()[0].lower() not in low:
            return name
    return names[0]


def load_workload(data_dir: Path, per_set: int | None = None, ticks: int = TOWN_TICKS) -> Workload:
    """Both query sets, the first ``per_set`` of each (None: all), with their scenes."""
    v2, chat = _release_suites(data_dir)
    # Short scene ids (A, B) as the benchmark's recorded figures had them: a scene's id is in the
    # ProbeScene that pack_all serialises whole, so a longer one would shift its token count.
    scenes = {
        key: scene_from_aura_v2(scene.as_v2(), scene_id=key.split("_", 1)[0])
        for key, scene in v2.scenes.items()
    }
    t0 = time.perf_counter()
    town = Town(embedded_town(), seed=TOWN_SEED)
    reports = town.step(ticks)
    town_scene = build_town_scene(town.definition, town.state, town.mind_states)
    build_ms = (time.perf_counter() - t0) * 1000
    names = [a.name for a in town.definition.agents]
    queries = [
        Query("implicit_v2", q.id, q.query, V2_ASKER, scenes[q.scene], "agent_state", q.subcategory, False)
        for q in v2.implicit()[:per_set]
    ]
    queries += [
        Query(
            "factual",
            q.id,
            q.query,
            _factual_asker(q.query, names),
            town_scene,
            "environment",
            q.category,
            live=True,
        )
        for q in chat.factual()[:per_set]
    ]
    if not queries:
        raise BenchError("no queries selected")
    return Workload(
        queries,
        town_scene,
        reports[-1].digest if reports else "",
        build_ms,
        {"implicit_v2": str(v2.source), "factual": str(chat.source)},
    )


def registries() -> dict[RegistryName, ProbeRegistry]:
    return {"agent_state": agent_state_registry(), "environment": environment_registry()}


def answer_embedded(
    query: Query,
    condition: str,
    regs: Mapping[RegistryName, ProbeRegistry],
    backend: Backend | None = None,
) -> AnswerData:
    """One query as ``EnvActor`` answers it, with the registry in process instead of on the bus."""
    view = scene_view(query.scene, query.asker, query.text)
    probes = RegistryProbes(regs[query.registry], query.scene, f"env:{view.asker}", asker=view.asker)
    chosen = backend if backend is not None else OfflineBackend()
    return answer_query(query.text, view.asker, condition, view, probes, chosen)


# ---------------------------------------------------------------------------------------- latency


def stats(values: Sequence[float]) -> dict[str, float | int | None]:
    """n, median, p90 (inclusive quantiles) and mean of ``values``; None when there are none."""
    if not values:
        return {"n": 0, "median": None, "p90": None, "mean": None, "max": None}
    p90 = statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]
    return {
        "n": len(values),
        "median": statistics.median(values),
        "p90": p90,
        "mean": statistics.fmean(values),
        "max": max(values),
    }


@dataclass
class Timing:
    """Per-query milliseconds of one condition in one mode, by query set."""

    condition: str
    samples: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in SETS})
    probes: list[int] = field(default_factory=list)
    alerts: int = 0
    answers: dict[str, str] = field(default_factory=dict)
    """Answer text by query key (from the last pass)."""
    errors: list[str] = field(default_factory=list)

    def all(self) -> list[float]:
        return [v for s in SETS for v in self.samples[s]]

    def summary(self, which: str | None = None) -> dict[str, float | int | None]:
        return stats(self.all() if which is None else self.samples[which])

    def to_json(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "all": self.summary(),
            **{s: self.summary(s) for s in SETS},
            "probes_per_query": statistics.fmean(self.probes) if self.probes else None,
            "alerts": self.alerts,
            "errors": self.errors[:20],
            "error_count": len(self.errors),
        }


def _warmup_set(queries: Sequence[Query]) -> list[Query]:
    return [q for s in SETS for q in [q for q in queries if q.set == s][:WARMUP_QUERIES]]


Answerer = Callable[[Query, str], AnswerData | str]
"""(query, condition) -> the answer, or why there is none."""


def measure(
    answer: Answerer,
    workload: Workload,
    conditions: Sequence[str],
    repeats: int,
    progress: ProgressFactory | None = None,
) -> list[Timing]:
    """Every query under every condition, ``repeats`` times, after a warm-up. The conditions are
    interleaved query by query, so that a noisy moment of the machine hits them all alike.
    ``progress(total)`` shows the answers as they come (none by default)."""
    timings = {c: Timing(c) for c in conditions}
    for q in _warmup_set(workload.queries):
        for condition in conditions:
            answer(q, condition)
    shown = (progress or _unseen)(repeats * len(workload.queries) * len(conditions)).start()
    for rep in range(repeats):
        t_pass = time.monotonic()
        for q in workload.queries:
            for condition in conditions:
                timing = timings[condition]
                t0 = time.perf_counter()
                reply = answer(q, condition)
                elapsed = (time.perf_counter() - t0) * 1000
                shown.advance(ok=not isinstance(reply, str))
                if isinstance(reply, str):
                    timing.errors.append(reply)
                    continue
                timing.samples[q.set].append(elapsed)
                if rep == repeats - 1:
                    timing.probes.append(len(reply.trace))
                    timing.alerts += bool(reply.alerts)
                    timing.answers[q.key] = reply.text
        took = time.monotonic() - t_pass
        medians = "; ".join(
            f"{c} median so far {num(timings[c].summary()['median'], '.2f')} ms"
            for c in conditions
            if c == TARGET_CONDITION
        )
        shown.say(
            f"{shown.desc}: pass {rep + 1}/{repeats}: {len(workload.queries)} queries x {len(conditions)} "
            f"conditions in {took:.1f}s{'; ' + medians if medians else ''}"
        )
    shown.close()
    return list(timings.values())


ProgressFactory = Callable[[int], Progress]
"""(answers to come) -> the display that counts them."""


def _unseen(total: int) -> Progress:
    return Progress(total, desc="", unit="answer", quiet=True)


def bench_embedded(
    workload: Workload, conditions: Sequence[str], repeats: int, progress: ProgressFactory | None = None
) -> list[Timing]:
    regs = registries()
    return measure(lambda q, c: answer_embedded(q, c, regs), workload, conditions, repeats, progress)


# ---------------------------------------------------------------------------------------- bus


@dataclass(frozen=True)
class HostSpec:
    url: str
    namespace: str
    verbose: bool


def _town_host_child(spec: HostSpec, stop: MpEvent, results: Queue[dict[str, Any]], ready: MpEvent) -> None:
    """Host the whole town (clock, world, agents, registry, env; offline backends) until ``stop``."""
    with child_run(results, verbose=spec.verbose) as child:
        transport = child.closing(RedisTransport(spec.url))
        bus = child.closing(Bus(transport, spec.namespace))
        config, _ = ensure_config(
            bus,
            TownConfig(
                definition=embedded_town(),
                seed=TOWN_SEED,
                ticks_per_second=0.0,
                start_paused=True,
                decision_timeout=ASK_TIMEOUT,
            ),
        )
        host = Host(bus, HostConfig(), name="bench-aura")
        child.out["actors"] = spawn_town(host, config)
        host.start()
        ready.set()
        wait_for_stop(stop)
        host.stop()
        child.out["bus_stats"] = dict(bus.stats)


@dataclass
class BusRun:
    timings: list[Timing] = field(default_factory=list)
    town_digest_match: bool | None = None
    town_step_s: float | None = None
    same_answers: dict[str, list[int]] = field(default_factory=dict)
    """Per set: [answers identical to the embedded ones, answers compared]."""
    differing: list[str] = field(default_factory=list)
    """"condition set:id" of each answer that is not the embedded one."""
    child: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def find(self, condition: str) -> Timing | None:
        return next((t for t in self.timings if t.condition == condition), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "timings": [t.to_json() for t in self.timings],
            "town_digest_match": self.town_digest_match,
            "town_step_s": self.town_step_s,
            "same_answers_as_embedded": self.same_answers,
            "differing_answers": self.differing,
            "child": self.child,
            "error": self.error,
        }


def _ask_once(bus: Bus, query: Query, condition: str) -> AnswerData | str:
    try:
        reply = bus.ask("env", query.ask(condition), timeout=ASK_TIMEOUT)
    except (AskTimeoutError, RemoteError) as exc:
        return f"{query.key}: {type(exc).__name__}: {exc}"
    if not isinstance(reply, AnswerData):
        return f"{query.key}: env answered {reply.message_type}"
    return reply


def bench_bus(
    server_url: str,
    workload: Workload,
    conditions: Sequence[str],
    repeats: int,
    children: Children,
    *,
    verbose: bool = False,
    progress: ProgressFactory | None = None,
) -> BusRun:
    result = BusRun()
    namespace = f"bench:aura:{uuid.uuid4().hex[:8]}"
    transport = RedisTransport(server_url)
    bus = Bus(transport, namespace)
    results, stop = children.queue(), children.event()
    proc: SpawnProcess | None = None
    try:
        proc = children.start(
            "aura-town", _town_host_child, HostSpec(server_url, namespace, verbose), stop, results
        )
        client = TownClient(bus, timeout=ASK_TIMEOUT)
        t0 = time.perf_counter()
        client.step(TOWN_TICKS, wait=TOWN_STEP_TIMEOUT)
        result.town_step_s = time.perf_counter() - t0
        result.town_digest_match = client.state().digest == workload.town_digest
        result.timings = measure(lambda q, c: _ask_once(bus, q, c), workload, conditions, repeats, progress)
        stop.set()
        result.child = child_result(results, proc, STOP_TIMEOUT)
        children.join(proc)
    except (BenchError, TownRequestError, AskTimeoutError, RemoteError, redis.RedisError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        if proc is not None and proc.is_alive():
            stop.set()
            with contextlib.suppress(BenchError):
                result.child = child_result(results, proc, STOP_TIMEOUT)
    finally:
        if proc is not None:
            children.stop(proc)
        bus.close()
        transport.close()
    return result


def compare_answers(embedded: Sequence[Timing], bus: BusRun, workload: Workload) -> None:
    """Per set: how many bus answers are word for word the embedded ones (same condition, query)."""
    bus.same_answers = {s: [0, 0] for s in SETS}
    bus.differing = []
    by_condition = {t.condition: t for t in embedded}
    for timing in bus.timings:
        ref = by_condition.get(timing.condition)
        if ref is None:
            continue
        for q in workload.queries:
            if q.key in timing.answers and q.key in ref.answers:
                same = timing.answers[q.key] == ref.answers[q.key]
                bus.same_answers[q.set][0] += same
                bus.same_answers[q.set][1] += 1
                if not same:
                    bus.differing.append(f"{timing.condition} {q.key}")


# ---------------------------------------------------------------------------------------- tokens


Messages = list[dict[str, str]]


class PromptRecorder:
    """A backend that decides like ``OfflineBackend`` and records, at each judgement call, the
    messages ``LLMBackend`` would send to the model there (same prompt builders, same order)."""

    name = "offline"

    def __init__(self) -> None:
        self.offline = OfflineBackend()
        self.prompts: list[tuple[str, Messages]] = []

    def infer_intent(self, query: str, view: SceneView, tools: Sequence[ToolInfo]) -> IntentFrame:
        self.prompts.append(("intent", prompts.intent_messages(query, view, tools)))
        return self.offline.infer_intent(query, view, tools)

    def plan_step(self, request: PlanRequest) -> PlanDecision:
        self.prompts.append(("planning", prompts.plan_messages(request)))
        return self.offline.plan_step(request)

    def plan_calls(
        self, query: str, view: SceneView, tools: Sequence[ToolInfo], budget: int
    ) -> list[PlanDecision]:
        self.prompts.append(("plan_all", prompts.plan_all_messages(query, view, tools, budget)))
        return self.offline.plan_calls(query, view, tools, budget)

    def answer(self, request: AnswerRequest) -> str:
        self.prompts.append(("answer", prompts.answer_messages(request)))
        return self.offline.answer(request)

    def critique(self, request: AnswerRequest, answer: str) -> Critique:
        self.prompts.append(("critique", prompts.critique_messages(request, answer)))
        return self.offline.critique(request, answer)

    def usage(self) -> UsageSummary:
        return self.offline.usage()


STAGES = ("intent", "planning", "plan_all", "answer", "critique")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def pack_all_sections(scene: ProbeScene) -> dict[str, str]:
    """The whole scene as the stuff-everything prompt would carry it, in Figure 8's parts."""
    data = scene.model_dump(mode="json", exclude_none=True)
    agents: dict[str, dict[str, Any]] = data["agents"]
    public = {n: {k: v for k, v in a.items() if k not in ("private", "beliefs")} for n, a in agents.items()}
    private = {n: {k: a[k] for k in ("private", "beliefs") if a.get(k)} for n, a in agents.items()}
    return {
        "scene": "Scene: "
        + _dump({k: data[k] for k in ("time", "day", "summary", "locations") if k in data}),
        "public": "Every agent's public state and plan: " + _dump(public),
        "private": "Every agent's private state and beliefs: " + _dump(private),
        "memories_events": "Recent events and every agent's memories: "
        + _dump({"events": data.get("events", []), "memories": data.get("memories", {})}),
    }


def pack_all_messages(query: Query) -> Messages:
    sections = pack_all_sections(query.scene)
    user = "\n\n".join([*sections.values(), f"You are {query.asker}. User's question: {query.text}"])
    return [{"role": "system", "content": prompts.SYSTEM_ANSWER}, {"role": "user", "content": user}]


class TokenCounter:
    """``litellm.token_counter`` for ``TOKEN_MODEL``, memoised; len(text) / 4 if litellm cannot count."""

    def __init__(self, model: str = TOKEN_MODEL) -> None:
        self.model = model
        self.method = f"litellm.token_counter(model={model!r})"
        self.fallback_reason: str | None = None
        self._count: Callable[..., int] | None = None
        self._memo: dict[str, int] = {}
        try:
            litellm: Any = load_litellm()  # offline: the cost map shipped with litellm
            count: Callable[..., int] = litellm.token_counter
            count(model=model, messages=[{"role": "user", "content": "Where is Lin Wei?"}])
            self._count = count
            encoding = _encoding_name(model)
            if encoding:
                self.method += f", {encoding} (bundled with litellm)"
        except Exception as exc:  # noqa: BLE001 - any failure means the fallback, said out loud
            self.fallback_reason = f"{type(exc).__name__}: {exc}"
            self.method = "len(text) / 4 (litellm.token_counter unavailable)"

    def messages(self, messages: Messages) -> int:
        key = hashlib.sha256(_dump(messages).encode()).hexdigest()
        if key not in self._memo:
            if self._count is not None:
                self._memo[key] = int(self._count(model=self.model, messages=messages))
            else:
                self._memo[key] = round(sum(len(m["content"]) for m in messages) / 4)
        return self._memo[key]

    def text(self, text: str) -> int:
        return self.messages([{"role": "user", "content": text}])


def _encoding_name(model: str) -> str | None:
    try:
        module: Any = importlib.import_module("litellm.litellm_core_utils.token_counter")
        return str(module.openai_tokenizer_encoding_name(model))
    except Exception:  # noqa: BLE001 - only a label for the output
        return None


@dataclass
class TokenRow:
    """Prompt tokens per query of one condition (or the pack-all baseline)."""

    condition: str
    per_query: dict[str, list[int]] = field(default_factory=lambda: {s: [] for s in SETS})
    calls: list[int] = field(default_factory=list)
    largest: list[int] = field(default_factory=list)
    by_stage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STAGES, 0))
    sections: dict[str, int] = field(default_factory=dict)
    """pack_all only: tokens of each part, summed over the queries."""

    def add(self, query: Query, counted: Sequence[tuple[str, int]]) -> None:
        self.per_query[query.set].append(sum(n for _, n in counted))
        self.calls.append(len(counted))
        self.largest.append(max((n for _, n in counted), default=0))
        for stage, n in counted:
            self.by_stage[stage] = self.by_stage.get(stage, 0) + n

    @property
    def queries(self) -> int:
        return len(self.calls)

    def mean(self, which: str | None = None) -> float | None:
        values = [v for s in SETS for v in self.per_query[s]] if which is None else self.per_query[which]
        return statistics.fmean(values) if values else None

    def stage_mean(self, stage: str) -> float | None:
        return self.by_stage.get(stage, 0) / self.queries if self.queries else None

    def to_json(self) -> dict[str, Any]:
        n = self.queries
        return {
            "condition": self.condition,
            "queries": n,
            "prompt_tokens_per_query": {"all": self.mean(), **{s: self.mean(s) for s in SETS}},
            "calls_per_query": statistics.fmean(self.calls) if self.calls else None,
            "largest_prompt_mean": statistics.fmean(self.largest) if self.largest else None,
            "by_stage_per_query": {k: v / n for k, v in self.by_stage.items()} if n else {},
            "sections_per_query": {k: v / n for k, v in self.sections.items()} if n else {},
        }


def count_tokens(workload: Workload, conditions: Sequence[str], counter: TokenCounter) -> list[TokenRow]:
    """Prompt tokens per query for each condition (from the offline run's decisions and trace),
    then the pack-all baseline."""
    regs = registries()
    rows = []
    for condition in conditions:
        tokens = TokenRow(condition)
        for q in workload.queries:
            recorder = PromptRecorder()
            answer_embedded(q, condition, regs, backend=recorder)
            tokens.add(q, [(stage, counter.messages(m)) for stage, m in recorder.prompts])
        rows.append(tokens)
    pack = TokenRow(PACK_ALL)
    for q in workload.queries:
        pack.add(q, [("answer", counter.messages(pack_all_messages(q)))])
        for part, text in pack_all_sections(q.scene).items():
            pack.sections[part] = pack.sections.get(part, 0) + counter.text(text)
    pack.sections["system"] = pack.queries * counter.text(prompts.SYSTEM_ANSWER)
    rows.append(pack)
    return rows


# ---------------------------------------------------------------------------------------- report


@dataclass
class Params(BenchParams):
    queries: int | None
    repeats: int
    bus_repeats: int
    conditions: list[str]
    bus_conditions: list[str]
    data: str
    skip_bus: bool
    verbose: bool
    quiet: bool = False


@dataclass
class Report:
    params: Params
    machine: dict[str, Any]
    workload: Workload
    embedded: list[Timing]
    bus: BusRun | None
    tokens: list[TokenRow]
    token_method: str
    token_fallback: str | None
    elapsed_s: float

    def embedded_for(self, condition: str) -> Timing | None:
        return next((t for t in self.embedded if t.condition == condition), None)

    def token_row(self, condition: str) -> TokenRow | None:
        return next((t for t in self.tokens if t.condition == condition), None)

    def checks(self) -> dict[str, dict[str, Any]]:
        timing = self.embedded_for(TARGET_CONDITION)
        median = None if timing is None else timing.summary()["median"]
        tokens = self.token_row(TARGET_CONDITION)
        per_query = None if tokens is None else tokens.mean(TOKEN_TARGET_SET)
        return {
            "aura_intent_median_embedded": {
                "value_ms": median,
                "target": f"offline {TARGET_CONDITION} median per query, embedded < {TARGET_MS:g} ms",
                "pass": None if median is None else median < TARGET_MS,
            },
            "aura_intent_prompt_tokens_v2": {
                "value_tokens": per_query,
                "target": f"{TARGET_CONDITION} prompt tokens per {TOKEN_TARGET_SET} query, all its calls, "
                f"<= {TOKEN_TARGET:,} ({TOKEN_MODEL})",
                "pass": None if per_query is None else per_query <= TOKEN_TARGET,
            },
        }

    def to_json(self) -> dict[str, Any]:
        w = self.workload
        figures = {
            "workload": {
                "files": w.files,
                "queries": {s: len(w.of(s)) for s in SETS},
                "town": {
                    "seed": TOWN_SEED,
                    "ticks": TOWN_TICKS,
                    "time": w.town_scene.time,
                    "day": w.town_scene.day,
                    "digest": w.town_digest,
                    "build_ms": w.town_build_ms,
                },
            },
            "latency_ms": {
                "embedded": [t.to_json() for t in self.embedded],
                "redis": None if self.bus is None else self.bus.to_json(),
            },
            "prompt_tokens": {
                "model": TOKEN_MODEL,
                "method": self.token_method,
                "fallback_reason": self.token_fallback,
                "rows": [t.to_json() for t in self.tokens],
                "paper_figure_8": {"pack_all": PAPER_PACK_ALL, "aura": list(PAPER_AURA)},
            },
            "checks": self.checks(),
        }
        return results_json("bench.aura", self.params, self.machine, figures, self.elapsed_s)


LATENCY_COLUMNS = (
    ("condition", -15),
    ("emb med", 7),
    ("emb p90", 7),
    ("emb mean", 8),
    ("v2 med", 6),
    ("fact med", 8),
    ("probes/q", 8),
    ("bus med", 7),
    ("bus p90", 7),
    ("bus mean", 8),
    ("bus v2", 6),
    ("bus fact", 8),
)

TOKEN_COLUMNS = (
    ("condition", -15),
    ("calls/q", 7),
    ("tokens/q", 8),
    ("v2", 6),
    ("factual", 7),
    ("largest", 7),
    ("intent", 6),
    ("planning", 8),
    ("plan_all", 8),
    ("answer", 6),
    ("critique", 8),
)


def _ms(summary: Mapping[str, float | int | None], key: str) -> str:
    value = summary.get(key)
    return num(None if value is None else float(value), ".2f")


def _latency_cells(t: Timing, b: Timing | None) -> list[str]:
    """A condition's times embedded (``t``) and over the bus (``b``, if it ran there)."""
    emb, bus_all = t.summary(), (b.summary() if b is not None else {})
    probes = num(statistics.fmean(t.probes) if t.probes else None, ".2f")
    return [
        t.condition,
        *(_ms(emb, stat) for stat in ("median", "p90", "mean")),
        *(_ms(t.summary(s), "median") for s in SETS),
        probes,
        *(_ms(bus_all, stat) for stat in ("median", "p90", "mean")),
        *(_ms(b.summary(s) if b else {}, "median") for s in SETS),
    ]


def format_latency(report: Report) -> str:
    bus = report.bus
    lines = table(
        LATENCY_COLUMNS,
        (_latency_cells(t, bus.find(t.condition) if bus is not None else None) for t in report.embedded),
    )
    w, p = report.workload, report.params
    n = len(w.queries)
    lines.append(
        f"ms per query, offline backend; emb: embedded, {n} queries x {p.repeats} pass(es) per condition "
        f"({len(w.of('implicit_v2'))} implicit-intent v2 + {len(w.of('factual'))} factual); bus: AskQuery to "
        f"env over redis, {n} x {p.bus_repeats} pass(es); v2 / fact: median of that set alone; probes/q: "
        "probe calls per query"
    )
    lines.append(
        f"live town for the factual set: AURATown seed {TOWN_SEED} after {TOWN_TICKS} ticks "
        f"(day {w.town_scene.day}, {w.town_scene.time}); built in {w.town_build_ms:.1f} ms (not in the "
        "per-query times)"
    )
    return "\n".join(lines)


def _mean_num(values: Iterable[float]) -> float | None:
    vals = list(values)
    return statistics.fmean(vals) if vals else None


def _token_cells(t: TokenRow) -> list[str]:
    stages = ("intent", "planning", "plan_all", "answer", "critique")
    return [
        t.condition,
        num(_mean_num(t.calls), ".2f"),
        *(num(t.mean(which), ".0f") for which in (None, *SETS)),
        num(_mean_num(t.largest), ".0f"),
        *(num(t.stage_mean(s), ".0f") if t.by_stage.get(s) else "-" for s in stages),
    ]


def format_tokens(report: Report) -> str:
    lines = table(TOKEN_COLUMNS, (_token_cells(t) for t in report.tokens))
    lines.append(
        f"prompt tokens per query ({TOKEN_MODEL}; {report.token_method}); tokens/q: all of a query's model "
        "calls summed; largest: its largest single prompt; stage columns: tokens per query in that stage"
    )
    if report.token_fallback:
        lines.append(f"NOTE: token counts are estimates (len/4): litellm failed with {report.token_fallback}")
    pack = report.token_row(PACK_ALL)
    if pack is not None and pack.queries:
        parts = ", ".join(f"{k} {v / pack.queries:.0f}" for k, v in pack.sections.items())
        lines.append(f"pack_all parts per query: {parts}")
    return "\n".join(lines)


def _span(values: Sequence[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:,.0f}" if round(low) == round(high) else f"{low:,.0f}-{high:,.0f}"


def format_comparison(report: Report) -> str:
    pack = report.token_row(PACK_ALL)
    aura = [r for r in (report.token_row(c) for c in AURA_CONDITIONS) if r is not None and r.queries]
    lines = [
        f"paper, Figure 8 (its own prompts, gpt-4o-mini prompt log): pack all state ~{PAPER_PACK_ALL:,} "
        f"prompt tokens/query; AURA ~{PAPER_AURA[0]:,}-{PAPER_AURA[1]:,}",
    ]
    if pack is not None and pack.mean() is not None:
        lines.append(
            f"ours: pack all state {num(pack.mean(), ',.0f')} tokens/query (implicit v2 scenes "
            f"{num(pack.mean('implicit_v2'), ',.0f')}, live 5-agent town {num(pack.mean('factual'), ',.0f')})"
        )
    totals = [v for v in (r.mean() for r in aura) if v is not None]
    largest = [v for v in (_mean_num(r.largest) for r in aura) if v is not None]
    if totals and largest:
        lines.append(
            f"ours: AURA conditions ({', '.join(r.condition for r in aura)}) "
            f"{_span(totals)} tokens/query over all their calls; "
            f"largest single prompt {_span(largest)}"
        )
    for which, label in (("implicit_v2", "implicit v2 scenes"), ("factual", "live town")):
        per_set = [v for v in (r.mean(which) for r in aura) if v is not None]
        packed = None if pack is None else pack.mean(which)
        if per_set and packed is not None:
            verdict = (
                "fewer" if max(per_set) < packed else "more" if min(per_set) > packed else "about as many"
            )
            lines.append(
                f"ours, {label}: AURA {_span(per_set)} vs pack all {packed:,.0f} tokens/query: "
                f"AURA sends {verdict} prompt tokens there"
            )
    lines.append(
        "These are not the paper's numbers and are not meant to match: our prompts are this project's "
        "(actors/aura/_prompts.py), the planner and answer prompts carry the offline run's probe trace (a "
        "model would probe and stop differently), our sum counts every call of a query (intent, each "
        "planner step, answer) while the paper sketches the content of one, the implicit-v2 scenes carry "
        "no memories, and pack_all has no few-shot block (the paper's counts ~500 for system + few-shot)."
    )
    return "\n".join(lines)


def format_bus_notes(report: Report) -> str:
    bus = report.bus
    if bus is None:
        return "redis: skipped (--skip-bus)"
    lines = []
    if bus.error:
        lines.append(f"redis: ERROR {bus.error}")
    if bus.town_digest_match is not None:
        lines.append(
            f"redis: the child's town ran {TOWN_TICKS} ticks in {num(bus.town_step_s, '.2f')} s; "
            f"same digest as the embedded town: {'yes' if bus.town_digest_match else 'NO'}"
        )
    if bus.same_answers:
        parts = [
            f"{s} {bus.same_answers[s][0]}/{bus.same_answers[s][1]}" for s in SETS if bus.same_answers[s][1]
        ]
        lines.append("redis: answers word for word the embedded ones: " + ", ".join(parts))
    if bus.differing:
        queries = sorted({d.split(" ", 1)[1] for d in bus.differing})
        lines.append(
            f"redis: differing: {len(bus.differing)} answers to {', '.join(queries[:10])}"
            + (" ..." if len(queries) > 10 else "")
            + " (the embedded and the bus pipelines saw different scenes, memories or probe results)"
        )
    errors = [e for t in bus.timings for e in t.errors]
    if errors:
        lines.append(f"redis: {len(errors)} failed asks, e.g. {errors[0]}")
    for event, count in Counter(bus.child.get("log_counts", {})).most_common(5):
        lines.append(f"redis child: {count}x {event}")
    if "error" in bus.child:
        lines.append(f"redis child: ERROR {bus.child['error']}")
    return "\n".join(lines)


def format_checks(report: Report) -> str:
    checks = report.checks()
    chk, tok = checks["aura_intent_median_embedded"], checks["aura_intent_prompt_tokens_v2"]
    return (
        f"offline {TARGET_CONDITION}, embedded: median {num(chk['value_ms'], '.2f')} ms per query "
        f"(target < {TARGET_MS:g} ms)  {verdict(chk['pass'])}\n"
        f"{TARGET_CONDITION} prompt tokens per implicit-v2 query: {num(tok['value_tokens'], ',.0f')} "
        f"(target <= {TOKEN_TARGET:,}, Figure 8{'; len/4 estimate' if report.token_fallback else ''})  "
        f"{verdict(tok['pass'])}"
    )


# ---------------------------------------------------------------------------------------- main


def _conditions(text: str) -> list[str]:
    names = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in names if c not in CONDITIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown condition(s) {unknown}: choose from {', '.join(CONDITIONS)}"
        )
    return names


def parse_args(argv: list[str] | None) -> Params:
    cli = BenchParser("bench.aura", __doc__, quick="10 queries per set, one pass: a smoke run")
    cli.sized(
        "--queries", "first N queries of each set", QUERIES, show=lambda n: "all" if n is None else str(n)
    )
    cli.sized("--repeats", "embedded passes", REPEATS)
    cli.sized("--bus-repeats", "passes over the bus", BUS_REPEATS)
    p = cli.parser
    p.add_argument(
        "--conditions",
        type=_conditions,
        default=list(CONDITIONS_TIMED),
        help="conditions timed embedded and counted (default: every deployable one)",
    )
    p.add_argument(
        "--bus-conditions",
        type=_conditions,
        default=list(BUS_CONDITIONS),
        help=f"conditions timed over the bus (default {','.join(BUS_CONDITIONS)})",
    )
    p.add_argument("--data", default=str(DEFAULT_DATA), help="the AURA data directory (default %(default)s)")
    p.add_argument("--skip-bus", action="store_true", help="embedded latency and tokens only")
    p.add_argument("--verbose", action="store_true", help="show the child's warnings and errors on stderr")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    a = cli.parse(argv)
    if (a.queries is not None and a.queries < 1) or a.repeats < 1 or a.bus_repeats < 1:
        cli.error("--queries, --repeats and --bus-repeats must be at least 1")
    return params_from(Params, a)


def _progress(params: Params, desc: str) -> ProgressFactory:
    return lambda total: Progress(total, desc=desc, unit="answer", quiet=params.quiet)


def run(params: Params) -> Report:
    started = time.monotonic()
    workload = load_workload(Path(params.data), params.queries)
    with private_machine(READY_TIMEOUT, STOP_TIMEOUT) as (server, children, machine):
        print(
            f"{len(workload.of('implicit_v2'))} implicit-intent v2 + {len(workload.of('factual'))} factual "
            f"queries; {machine['cpu_count']} CPUs; "
            f"redis-server {machine['redis_server_version']} on {server.url}",
            flush=True,
        )
        print("  embedded latency ...", flush=True)
        embedded = bench_embedded(workload, params.conditions, params.repeats, _progress(params, "embedded"))
        bus: BusRun | None = None
        if not params.skip_bus:
            print("  redis bus latency (town + registry + env in a child process) ...", flush=True)
            bus = bench_bus(
                server.url,
                workload,
                params.bus_conditions,
                params.bus_repeats,
                children,
                verbose=params.verbose,
                progress=_progress(params, "redis bus"),
            )
            compare_answers(embedded, bus, workload)
    print("  prompt tokens ...", flush=True)
    counter = TokenCounter()
    tokens = count_tokens(workload, params.conditions, counter)
    method, fallback, elapsed = counter.method, counter.fallback_reason, time.monotonic() - started
    return Report(params, machine, workload, embedded, bus, tokens, method, fallback, elapsed)


def main(argv: list[str] | None = None) -> int:
    params = begin(parse_args, argv)
    try:
        report = run(params)
    except DataMissingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sections = [format_latency, format_bus_notes, format_tokens, format_comparison, format_checks]
    finish(report, Path(params.out), [f(report) for f in sections], elapsed_s=report.elapsed_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
