"""The summary of an episode run: pi-Bench's Table 1 (PROC / COMP per assistant, mean and standard
deviation over repetitions, per persona), the terminal-status distribution (Table 7), the
without-history ablation (Section 4.3), turns, tokens and every grader error and fallback.

Per unit, in two readings (``world.episodes.scoring`` documents both): ours, PROC
``episode_proc`` (dependency groups pooled, weighted by group size) and COMP the mean task COMP;
pi-Bench's, PROC and COMP the means over tasks with criteria weighted by dependency-group size
(``overall_aggregation.compute_weighted_overall_average``), a task's PROC adding its direct
dependencies' intents, COMP graded per turn. A session that ended in ``error`` and a grade left
out (``SessionGrade.excluded``) count in neither reading's averages; they are counted and listed.
A persona's figure for a repetition is its unit's; the average column is the mean over personas
of one repetition (pi-Bench's model average: personas unweighted); mean and standard deviation
(sample, n - 1) are then taken over repetitions.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from bench.suite.stats import Spread, spread
from messages.episodes import IntentResult
from world.episodes.scoring import (
    episode_comp,
    episode_proc,
    group_size,
    pibench_task_proc,
    task_proc,
    weighted_mean,
)

METRICS = ("proc", "comp", "proc_faithful", "comp_faithful", "turns_per_session")

SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def _ms(values: list[float]) -> dict[str, float | int | None] | None:
    """Mean, sample deviation (None for a single run) and n, as ``summary.json`` keeps them."""
    if not values:
        return None
    s = spread(values)
    return {"mean": s.mean, "std": s.sd, "n": s.n}


def _fmt(stat: dict[str, Any] | None) -> str:
    if stat is None:
        return "n/a"
    return Spread(stat["mean"], stat["std"], stat["n"]).format(scale=100)


def _intents(record: dict[str, Any]) -> list[IntentResult]:
    return [IntentResult.model_validate(i) for i in record["session"]["intents"]]


def _pibench(records: list[dict[str, Any]], intents: dict[str, list[IntentResult]]) -> tuple[Any, Any]:
    depends = {str(r["task_id"]): list(r.get("depends_on", ())) for r in records}
    scored = [r for r in records if r["grade"]["criteria"] and r["session"]["reason"] != "error"]
    proc = weighted_mean(
        (pibench_task_proc(str(r["task_id"]), intents, depends), group_size(str(r["task_id"]), depends))
        for r in scored
    )
    comp = weighted_mean(
        (r["grade"]["comp_faithful"], group_size(str(r["task_id"]), depends)) for r in scored
    )
    return proc, comp


def unit_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Scores of one unit from its finished sessions (in episode order)."""
    errored = [r for r in records if r["session"]["reason"] == "error"]
    intents = {r["task_id"]: _intents(r) for r in records if r["session"]["reason"] != "error"}
    tasks = [(str(r["task_id"]), tuple(r.get("depends_on", ()))) for r in records]
    grades = [r["grade"] for r in records]
    proc_faithful, comp_faithful = _pibench(records, intents)
    turns = [sum(1 for t in r["session"]["turns"] if t["role"] == "assistant") for r in records]
    statuses: Counter[str] = Counter(i.status for rows in intents.values() for i in rows)
    tokens = 0
    calls = 0
    fallbacks: list[str] = []
    for r in records:
        for part in (r["session"]["usage"], r["session"]["assistant_usage"], r["grade"]["usage"]):
            tokens += int(part["prompt_tokens"]) + int(part["completion_tokens"])
            calls += int(part["model_calls"])
            fallbacks += list(part.get("fallbacks", ()))
    reflections = [r["reflection"] for r in records if isinstance(r.get("reflection"), dict)]
    return {
        "sessions": len(records),
        "proc": episode_proc(tasks, intents),
        "comp": episode_comp(g["comp"] for g in grades),
        "proc_faithful": proc_faithful,
        "comp_faithful": comp_faithful,
        "errors": len(errored),
        "excluded": [f"{g['task_id']}: {g['excluded']}" for g in grades if g.get("excluded")],
        "turns_per_session": sum(turns) / len(turns) if turns else None,
        "statuses": dict(statuses),
        "end_reasons": dict(Counter(r["session"]["reason"] for r in records)),
        "grader_errors": [e for g in grades for e in g["grader_errors"]],
        "judge_failures": sum(int(g["judge_failures"]) for g in grades)
        + sum(i.judge_failures for rows in intents.values() for i in rows),
        "model_calls": calls,
        "tokens": tokens,
        "fallbacks": fallbacks,
        # The built-in assistant's end-of-session reflections (their calls are in model_calls,
        # with the session's assistant usage; a missing one came after its session was recorded).
        "reflections": {
            "recorded": sum(1 for x in reflections if "usage" in x),
            "missing": sum(1 for x in reflections if "missing" in x),
            "model_calls": sum(int(x["usage"]["model_calls"]) for x in reflections if "usage" in x),
            "fallbacks": [f for x in reflections if "usage" in x for f in x["usage"].get("fallbacks", ())],
        },
        "tasks": {
            r["task_id"]: {
                "proc": task_proc(intents.get(r["task_id"], [])),
                "comp": r["grade"]["comp"],
                "comp_faithful": r["grade"]["comp_faithful"],
                "turns": t,
                "end": r["session"]["reason"],
            }
            for r, t in zip(records, turns, strict=True)
        },
    }


def summarize(run_dir: Path) -> dict[str, Any]:
    from bench.episodes.store import EpisodeRunDir
    from bench.rundir import EpisodeManifest

    rd = EpisodeRunDir(run_dir)
    manifest = rd.manifest(EpisodeManifest).model_dump(mode="json")
    planned: list[str] = list(manifest.get("units", []))
    # The tables read a session's line by key, as it is in the file.
    records = {key: [line.line() for line in lines] for key, lines in rd.unit_records().items()}
    units = {key: unit_summary(records.get(key, [])) for key in planned}
    # unit key: EPISODE.ASSISTANT.rK[.alone-TASK]
    full: dict[str, dict[str, dict[int, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    alone: dict[str, dict[str, list[float | None]]] = defaultdict(lambda: defaultdict(list))
    with_history: dict[str, dict[str, list[float | None]]] = defaultdict(lambda: defaultdict(list))
    info: dict[str, dict[str, Any]] = manifest.get("unit_info", {})
    base_key = {(i["episode"], i["assistant"], i["run"]): k for k, i in info.items() if i.get("only") is None}
    for key, summary in units.items():
        about = info[key]
        episode, assistant, run = about["episode"], about["assistant"], int(about["run"])
        if about.get("only") is not None:
            task = next(iter(summary["tasks"]), None)
            if task is not None:
                alone[assistant]["proc"].append(summary["tasks"][task]["proc"])
                alone[assistant]["comp"].append(summary["tasks"][task]["comp"])
                full_key = base_key.get((episode, assistant, run), "")
                base = units.get(full_key, {}).get("tasks", {}).get(task)
                if base is not None:
                    with_history[assistant]["proc"].append(base["proc"])
                    with_history[assistant]["comp"].append(base["comp"])
            continue
        full[assistant][episode][run] = summary

    table: dict[str, Any] = {}
    for assistant, by_episode in full.items():
        runs = sorted({r for eps in by_episode.values() for r in eps})
        avg: dict[str, list[float]] = defaultdict(list)
        for run in runs:
            for metric in METRICS:
                vals = [
                    eps[run][metric]
                    for eps in by_episode.values()
                    if run in eps and eps[run][metric] is not None
                ]
                if vals:
                    avg[metric].append(sum(vals) / len(vals))
        statuses: Counter[str] = Counter()
        for eps in by_episode.values():
            for s in eps.values():
                statuses.update(s["statuses"])
        total = sum(statuses.values())
        table[assistant] = {
            "average": {m: _ms(v) for m, v in avg.items()},
            "episodes": {
                ep: {m: _ms([s[m] for s in eps.values() if s[m] is not None]) for m in METRICS}
                for ep, eps in sorted(by_episode.items())
            },
            "status_share": {k: statuses[k] / total for k in ("completed", "inferred", "provided", "open")}
            if total
            else {},
            "tokens": sum(s["tokens"] for eps in by_episode.values() for s in eps.values()),
            "model_calls": sum(s["model_calls"] for eps in by_episode.values() for s in eps.values()),
        }
    ablation = {
        a: {
            "with_history": {
                m: _ms([v for v in vals if v is not None]) for m, vals in with_history[a].items()
            },
            "without_history": {m: _ms([v for v in vals if v is not None]) for m, vals in alone[a].items()},
        }
        for a in alone
    }
    all_units = list(units.values())
    return {
        "manifest": {
            k: manifest.get(k) for k in ("benchmark", "config", "git_commit", "namespace", "started")
        },
        "units_planned": len(planned),
        "units_complete": sum(1 for k in planned if units[k]["sessions"] == _expected(k, manifest, records)),
        "table": table,
        "ablation": ablation,
        "grader_errors": [e for u in all_units for e in u["grader_errors"]],
        "excluded": [e for u in all_units for e in u["excluded"]],
        "judge_failures": sum(u["judge_failures"] for u in all_units),
        "fallbacks": [f for u in all_units for f in u["fallbacks"]],
        "end_reasons": dict(sum((Counter(u["end_reasons"]) for u in all_units), Counter())),
        "units": units,
    }


def _expected(key: str, manifest: dict[str, Any], records: dict[str, list[dict[str, Any]]]) -> int:
    counts = manifest.get("unit_sessions", {})
    return int(counts.get(key, len(records.get(key, []))))


def render(summary: dict[str, Any]) -> str:
    table = summary["table"]
    episodes = sorted({ep for t in table.values() for ep in t["episodes"]})
    cfg = summary["manifest"].get("config") or {}
    lines = [
        "# pi-Bench episodes",
        "",
        f"assistant model: {cfg.get('model') or 'offline'}; user and judges: "
        f"{cfg.get('judge_model') or 'deterministic'}; runs: {cfg.get('runs')}; "
        f"units complete: {summary['units_complete']}/{summary['units_planned']}",
        "",
        "## PROC / COMP (%), mean ± std over runs (Table 1; one run: its mean, n=1)",
        "",
        "pi-Bench's reading follows its code; ours beside it (README, pi-Bench episodes).",
        "",
        "| assistant | PROC (pi-Bench) | COMP (pi-Bench) | PROC (ours) | COMP (ours) | turns/session | "
        + " | ".join(f"{ep} PROC / COMP (pi-Bench)" for ep in episodes)
        + " |",
        "| --- | ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in episodes) + " |",
    ]
    for name, t in table.items():
        avg = t["average"]
        turns = avg.get("turns_per_session")
        cells = [
            f"{_fmt(t['episodes'][ep]['proc_faithful'])} / {_fmt(t['episodes'][ep]['comp_faithful'])}"
            if ep in t["episodes"]
            else "n/a"
            for ep in episodes
        ]
        turns_text = f"{turns['mean']:.2f}" if turns else "n/a"
        scores = " | ".join(_fmt(avg.get(m)) for m in ("proc_faithful", "comp_faithful", "proc", "comp"))
        lines.append(f"| {name} | {scores} | {turns_text} | " + " | ".join(cells) + " |")
    lines += ["", "## Terminal status of hidden intents (%, Table 7)", ""]
    lines += ["| assistant | completed | inferred | provided | open |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, t in table.items():
        s = t["status_share"]
        lines.append(
            f"| {name} | "
            + " | ".join(_pct(s.get(k)) for k in ("completed", "inferred", "provided", "open"))
            + " |"
        )
    if summary["ablation"]:
        lines += ["", "## Without history (each dependency group's last task alone, Section 4.3)", ""]
        lines += [
            "| assistant | PROC with | PROC without | COMP with | COMP without |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for name, a in summary["ablation"].items():
            w, wo = a["with_history"], a["without_history"]
            lines.append(
                f"| {name} | {_fmt(w.get('proc'))} | {_fmt(wo.get('proc'))} | {_fmt(w.get('comp'))} | "
                f"{_fmt(wo.get('comp'))} |"
            )
    lines += [
        "",
        f"grader errors: {len(summary['grader_errors'])}; judge failures: {summary['judge_failures']}; "
        f"left out of the averages: {len(summary['excluded'])}; "
        f"fallbacks: {len(summary['fallbacks'])}; session ends: "
        + ", ".join(f"{k} {v}" for k, v in sorted(summary["end_reasons"].items())),
    ]
    for e in summary["excluded"][:20]:
        lines.append(f"- left out: {e}")
    for e in summary["grader_errors"][:20]:
        lines.append(f"- grader error: {e}")
    return "\n".join(lines) + "\n"


def write_summary(run_dir: Path) -> str:
    summary = summarize(run_dir)
    (run_dir / SUMMARY_JSON).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    text = render(summary)
    (run_dir / SUMMARY_MD).write_text(text)
    return text
