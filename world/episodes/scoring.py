"""PROC and COMP of pi-Bench (Section 3.5, Appendix C), and the two readings of a tool history.

Readings of a session's tool history, as pi-Bench record dicts ``{"tool_name", "call", "result"}``.
A call to a tool that does not exist (status ``unknown_tool``) is in neither: nothing ran, and no
scorer may credit it.

- ``faithful`` (pi-Bench's code, ``evaluation/trace_history.collect_tool_history``): per TURN,
  the calls of that turn whose name is in the task's ``tools`` list (compared exactly; no list:
  every call), only the LAST call of each name, kept at the position of the name's FIRST call;
  results as the assistant saw them (an app's refusal is ``{"response": {"message": ...}}``).
  A turn with no such call falls back to the session's earlier calls as nanobot's message
  history holds them (results over 3,000 characters truncated to text) - pi-Bench's fallback
  scan of ``messages``.
- ``corrected``: the full session history in order, every name canonicalised
  (``world.episodes.apps.canonical_tool_name``, prefix-tolerant); a refused call's result is
  ``{"error", "status"}``, so a scorer that does not check success cannot credit it.

PROC and COMP per persona, pi-Bench's reading (``evaluation/overall_aggregation.py``,
``proactiveness_evaluator._calculate_average_score_with_dependencies``): a task's PROC adds its
direct dependencies' covered and total intents to its own; COMP and PROC are means over the tasks
that have criteria, each weighted by its dependency group's size (the task and everything it
transitively depends on). Ours (corrected): PROC pools each dependency group (connected
component) weighted by its size; COMP is the plain mean over tasks with a checklist. A session
that ended in ``error`` is left out of both, and counted.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

from messages.episodes import CriterionResult, IntentResult, ToolRecord, ToolSelection
from world.episodes.apps import canonical_tool_name

Reading = Literal["faithful", "corrected"]
PROACTIVE = frozenset({"completed", "inferred"})


HISTORY_RESULT_CHARS = 3000
"""nanobot keeps a tool result in its message history cut to this many characters."""


def _record(record: ToolRecord, name: str | None = None) -> dict[str, Any]:
    return {
        "tool_name": name if name is not None else record.tool_name,
        "call": dict(record.call),
        "result": dict(record.result),
    }


def _ran(history: Sequence[ToolRecord]) -> list[ToolRecord]:
    return [r for r in history if r.status != "unknown_tool"]


def _last_per_name(records: Sequence[ToolRecord]) -> list[ToolRecord]:
    # A dict keeps the first insertion's position; a later call replaces the value in place.
    latest: dict[str, ToolRecord] = {}
    for record in records:
        latest[record.tool_name] = record
    return list(latest.values())


def faithful_history(history: Sequence[ToolRecord]) -> list[dict[str, Any]]:
    """The last call of each tool over the whole session (pi-Bench's rule, no turns, no filter)."""
    return [_record(r) for r in _last_per_name(_ran(history))]


def _history_result(result: dict[str, Any]) -> Any:
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if len(text) > HISTORY_RESULT_CHARS:
        return text[:HISTORY_RESULT_CHARS] + "\n... (truncated)"
    return result


def turn_history(
    history: Sequence[ToolRecord], turn: int, allowed: Collection[str] | None
) -> list[dict[str, Any]]:
    """The records pi-Bench's rule scorer gets for ``turn`` (module docstring, ``faithful``)."""
    ran = _ran(history)

    def wanted(r: ToolRecord) -> bool:
        return allowed is None or r.tool_name in allowed

    own = [r for r in ran if r.turn == turn and wanted(r)]
    if own:
        return [_record(r) for r in _last_per_name(own)]
    earlier = [r for r in ran if r.turn < turn and wanted(r)]
    out = []
    for r in _last_per_name(earlier):
        result = _history_result(dict(r.result))
        out.append({"tool_name": r.tool_name, "call": dict(r.call), "result": result})
    return out


def canonical_name(name: str) -> str:
    """The published name of a tool called by any accepted spelling; unknown names unchanged."""
    return canonical_tool_name(name) or name


def corrected_history(history: Sequence[ToolRecord]) -> list[dict[str, Any]]:
    out = []
    for record in _ran(history):
        item = _record(record, canonical_name(record.tool_name))
        if record.status != "ok":
            response = record.result.get("response")
            error = record.result.get("error") or (
                response.get("message") if isinstance(response, dict) else None
            )
            item["result"] = {"error": error or record.status, "status": record.status}
        out.append(item)
    return out


def reading_of(history: Sequence[ToolRecord], reading: Reading) -> list[dict[str, Any]]:
    return faithful_history(history) if reading == "faithful" else corrected_history(history)


# ---------------------------------------------------------------- selected evidence

_MISSING = object()


def _walk(value: Any, segments: Sequence[str]) -> Any:
    """A dotted path into JSON: a number indexes a list, a name maps over a list's items."""
    if not segments:
        return value
    head, rest = segments[0], segments[1:]
    if isinstance(value, Mapping):
        return _walk(value[head], rest) if head in value else _MISSING
    if isinstance(value, list):
        if head.isdigit():
            return _walk(value[int(head)], rest) if int(head) < len(value) else _MISSING
        found = [v for v in (_walk(item, segments) for item in value) if v is not _MISSING]
        return found if found else _MISSING
    return _MISSING


def result_field(result: Mapping[str, Any], path: str) -> Any:
    """A selected result field: ``path`` from the record's result, else from its ``response``
    (task files write both ``response.order_id`` and ``order_id``). Raises KeyError if absent."""
    segments = [s for s in path.split(".") if s]
    value = _walk(result, segments)
    if value is _MISSING and isinstance(result.get("response"), Mapping | list):
        value = _walk(result["response"], segments)
    if value is _MISSING:
        raise KeyError(path)
    return value


def _cut(record: dict[str, Any], selection: ToolSelection) -> dict[str, Any]:
    """A record cut to the call keys and result paths ``selection`` lists (a path the result
    lacks is left out); the whole record when it lists neither."""
    if not selection.call and not selection.result:
        return record
    call = {k: record["call"][k] for k in selection.call if k in record["call"]}
    result: dict[str, Any] = {}
    for path in selection.result:
        try:
            result[path] = result_field(record["result"], path)
        except KeyError:
            continue
    return {"tool_name": record["tool_name"], "call": call, "result": result}


def select_evidence(
    history: Sequence[ToolRecord], selections: Sequence[ToolSelection], reading: Reading
) -> list[dict[str, Any]]:
    """The records a task's ``tools`` entries name, cut to the call keys and result paths they
    list (a selection listing neither keeps the whole record), in history order. Under the
    corrected reading the selection's name is canonicalised too."""
    records = reading_of(history, reading)
    chosen: list[tuple[str, ToolSelection]] = [
        (canonical_name(s.tool_name) if reading == "corrected" else s.tool_name, s) for s in selections
    ]
    return [
        _cut(record, selection)
        for record in records
        for name, selection in chosen
        if record["tool_name"] == name
    ]


def select_turn_evidence(
    history: Sequence[ToolRecord], turn: int, selections: Sequence[ToolSelection]
) -> list[dict[str, Any]]:
    """pi-Bench's ``<tool_trace_extracts>`` of one turn: for each ``tools`` entry, the last call of
    exactly that name in the turn, cut to the entry's call keys and result paths."""
    out: list[dict[str, Any]] = []
    records = [r for r in _ran(history) if r.turn == turn]
    for selection in selections:
        calls = [r for r in records if r.tool_name == selection.tool_name]
        if calls:
            out.append(_cut(_record(calls[-1]), selection))
    return out


# ---------------------------------------------------------------- COMP


def comp(criteria: Sequence[CriterionResult], reading: Reading = "corrected") -> float | None:
    """Weighted mean of the items that passed under ``reading``; None when there are no items."""
    total = sum(c.weight for c in criteria)
    if not criteria or total <= 0:
        return None
    passed = sum(c.weight for c in criteria if (c.passed if reading == "corrected" else c.passed_faithful))
    return passed / total


def episode_comp(comps: Iterable[float | None]) -> float | None:
    """Mean task COMP over the tasks that have a checklist (None entries are left out)."""
    values = [c for c in comps if c is not None]
    return sum(values) / len(values) if values else None


# ---------------------------------------------------------------- PROC


def task_proc(intents: Sequence[IntentResult]) -> float | None:
    """(completed + inferred) / all intents; an intent still open is not proactive."""
    if not intents:
        return None
    return sum(i.status in PROACTIVE for i in intents) / len(intents)


def ancestors(task_id: str, depends_on: Mapping[str, Sequence[str]]) -> list[str]:
    """Every task ``task_id`` depends on, transitively, nearest first; safe on cycles."""
    seen: list[str] = []
    frontier = list(depends_on.get(task_id, ()))
    while frontier:
        current = frontier.pop(0)
        if current == task_id or current in seen:
            continue
        seen.append(current)
        frontier.extend(depends_on.get(current, ()))
    return seen


def pooled_proc(
    task_id: str,
    intents_by_task: Mapping[str, Sequence[IntentResult]],
    depends_on: Mapping[str, Sequence[str]],
) -> float | None:
    """PROC of the task's intents pooled with those of every task it depends on (a task that
    did not run contributes nothing)."""
    pool: list[IntentResult] = list(intents_by_task.get(task_id, ()))
    for other in ancestors(task_id, depends_on):
        pool.extend(intents_by_task.get(other, ()))
    return task_proc(pool)


def dependency_groups(tasks: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, ...]]:
    """Connected components of the dependency graph (edges either way), in episode order: groups
    ordered by their first task, tasks within a group in episode order. Unknown ids are ignored."""
    order = [task_id for task_id, _ in tasks]
    parent = {task_id: task_id for task_id in order}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for task_id, deps in tasks:
        for dep in deps:
            if dep in parent:
                a, b = root(task_id), root(dep)
                if a != b:
                    # The earlier task's root wins, so a group is named by its first member.
                    first, second = sorted((a, b), key=order.index)
                    parent[second] = first
    groups: dict[str, list[str]] = {}
    for task_id in order:
        groups.setdefault(root(task_id), []).append(task_id)
    return [tuple(members) for members in groups.values()]


def group_proc(group: Sequence[str], intents_by_task: Mapping[str, Sequence[IntentResult]]) -> float | None:
    return task_proc([i for task_id in group for i in intents_by_task.get(task_id, ())])


def episode_proc(
    tasks: Sequence[tuple[str, Sequence[str]]], intents_by_task: Mapping[str, Sequence[IntentResult]]
) -> float | None:
    """Sum over dependency groups of |group| * pooled PROC, over the summed sizes of the groups
    that have intents; None when no task has any."""
    weighted = 0.0
    sizes = 0
    for group in dependency_groups(tasks):
        score = group_proc(group, intents_by_task)
        if score is None:
            continue
        weighted += len(group) * score
        sizes += len(group)
    return weighted / sizes if sizes else None


# ---------------------------------------------------------------- pi-Bench's aggregation


def covered(intents: Sequence[IntentResult]) -> int:
    """Intents the assistant met or asked about (pi-Bench: inferred or matched by a follow-up)."""
    return sum(i.status in PROACTIVE for i in intents)


def pibench_task_proc(
    task_id: str,
    intents_by_task: Mapping[str, Sequence[IntentResult]],
    depends_on: Mapping[str, Sequence[str]],
) -> float | None:
    """(covered + covered of each direct dependency) / (intents + theirs); None without intents."""
    pool = list(dict.fromkeys([task_id, *depends_on.get(task_id, ())]))
    total = sum(len(intents_by_task.get(t, ())) for t in pool)
    if not intents_by_task.get(task_id) or total == 0:
        return None
    return sum(covered(intents_by_task.get(t, ())) for t in pool) / total


def group_size(task_id: str, depends_on: Mapping[str, Sequence[str]]) -> int:
    """pi-Bench's weight of a task: itself and every task it transitively depends on."""
    return 1 + len(ancestors(task_id, depends_on))


def weighted_mean(scores: Iterable[tuple[float | None, int]]) -> float | None:
    """pi-Bench's ``compute_weighted_overall_average``: sum(score * weight) / sum(weight) over the
    scores that exist; None when none does."""
    pairs = [(score, weight) for score, weight in scores if score is not None]
    total = sum(weight for _, weight in pairs)
    return sum(score * weight for score, weight in pairs) / total if total else None
