"""Grading of one finished session (pi-Bench, Appendix C.3-C.6), pure: the grader actor supplies
the rubric judge and a runner for the task's rule scorer.

Which source grades a checklist item: a criterion whose text (case and surrounding space aside)
is a key the rule scorer returns is a rule item; one named by a ``state_checks`` entry is a state
item; every other criterion goes to the rubric judge. Scorer keys and state checks the checklist
does not name are items of their own, weight 1 (pi-Bench: "each key a checklist item worth 1").

- Rubric items: judged once over the rendered trace (every turn, the files read, the task's
  selected tool evidence under the corrected reading); the same verdict for both readings.
- Rule items: the scorer runs on both readings of the tool history (``scoring``): faithful ->
  ``passed_faithful``, corrected -> ``passed``. A key missing from one reading's scores is 0
  there. A run that failed (crash, timeout, garbage) fails its items with the error, and is a
  grader error; when no run gave any keys, one failed item stands for the whole scorer, so a
  crash never lifts COMP.
- State items: read the app state after the session (``StateDiffData.state``, with files from the
  diff and the files read): ``exists``, ``absent``, ``equals`` (JSON equality) or ``contains``
  (substring of text, case-insensitive; an element of a list; a sub-object of an object).

A judge's unreadable answer and a scorer's failure count as not passed and are reported in
``grader_errors``; they never pass an item.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from messages.episodes import (
    CriterionResult,
    GradingSpec,
    SessionEnded,
    SessionGrade,
    StateCheckSpec,
    StateDiffData,
    ToolRecord,
)
from world.episodes.apps.state import lookup_path
from world.episodes.judging import RubricJudge, padded, render_history
from world.episodes.scoring import Reading, comp, corrected_history, faithful_history


@dataclass(frozen=True)
class RuleRun:
    """What a rule scorer answered: its scores, or a one-line reason it gave none."""

    scores: dict[str, int] | None
    error: str | None = None


RuleRunner = Callable[[str, list[dict[str, Any]]], RuleRun]


def checked_scores(scores: object) -> tuple[dict[str, int] | None, str | None]:
    """``scores`` as ``{item: 0 | 1}`` or the reason it is not one (bools count as 0/1)."""
    if not isinstance(scores, dict):
        return None, f"score() returned {type(scores).__name__}, not a dict"
    out: dict[str, int] = {}
    for key, value in scores.items():
        if not isinstance(key, str):
            return None, f"score() returned a non-text key {key!r}"
        if isinstance(value, bool) or (isinstance(value, int | float) and value in (0, 1)):
            out[key] = int(value)
        else:
            return None, f"score() gave {key!r} the value {value!r}, not 0 or 1"
    return out, None


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


# ---------------------------------------------------------------- state checks


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(actual, str) and isinstance(expected, str):
        return expected.casefold() in actual.casefold()
    if isinstance(actual, list):
        return any(item == expected or _contains(item, expected) for item in actual)
    if isinstance(actual, dict) and isinstance(expected, dict):
        return all(k in actual and (actual[k] == v or _contains(actual[k], v)) for k, v in expected.items())
    return False


def final_state(diff: StateDiffData | None, files: Mapping[str, str]) -> dict[str, Any]:
    """The state after the session as JSON: the diff's app state, and the files the diff shows
    changed overlaid with the files read at the end."""
    data: dict[str, Any] = dict(diff.state) if diff is not None else {}
    workspace: dict[str, Any] = {}
    for change in diff.changes if diff is not None else ():
        if change.path.startswith("files.") and change.after is not None:
            workspace[change.path.removeprefix("files.")] = change.after.get("value")
    workspace.update(files)
    data["files"] = workspace
    return data


def check_state(check: StateCheckSpec, state: Mapping[str, Any], *, have_diff: bool) -> CriterionResult:
    def result(passed: bool, evidence: str, error: str | None = None) -> CriterionResult:
        return CriterionResult(
            criterion=check.criterion,
            source="state",
            passed=passed,
            passed_faithful=passed,
            evidence=evidence,
            error=error,
        )

    if not have_diff and not check.path.startswith("files."):
        return result(False, "", "no state diff for this session")
    try:
        actual, found = lookup_path(state, check.path), True
    except KeyError:
        actual, found = None, False
    if check.op == "exists":
        return result(found, f"{check.path} {'exists' if found else 'is absent'}")
    if check.op == "absent":
        return result(not found, f"{check.path} {'exists' if found else 'is absent'}")
    if check.value is None or "value" not in check.value:
        return result(False, "", f"state check {check.op!r} needs a value {{'value': ...}}")
    expected = check.value["value"]
    if not found:
        return result(False, f"{check.path} is absent")
    passed = actual == expected if check.op == "equals" else _contains(actual, expected)
    shown = repr(actual)
    return result(passed, f"{check.path} = {shown[:200]}")


# ---------------------------------------------------------------- rule items


@dataclass(frozen=True)
class _Runs:
    scores: dict[Reading, dict[str, int]]
    errors: dict[Reading, str]

    def items_named(self) -> list[str]:
        seen: dict[str, None] = {}
        for reading in ("corrected", "faithful"):
            for key in self.scores.get(reading, {}):
                seen.setdefault(key, None)
        return list(seen)


def _run_scorer(source: str, history: Sequence[ToolRecord], runner: RuleRunner) -> _Runs:
    scores: dict[Reading, dict[str, int]] = {}
    errors: dict[Reading, str] = {}
    readings: dict[Reading, list[dict[str, Any]]] = {
        "corrected": corrected_history(history),
        "faithful": faithful_history(history),
    }
    for reading, records in readings.items():
        run = runner(source, records)
        if run.error is not None or run.scores is None:
            errors[reading] = run.error or "the scorer gave no scores"
            continue
        checked, problem = checked_scores(run.scores)
        if checked is None:
            errors[reading] = problem or "invalid scores"
        else:
            scores[reading] = checked
    return _Runs(scores, errors)


def _rule_item(key: str, weight: float, runs: _Runs) -> CriterionResult:
    corrected = runs.scores.get("corrected", {}).get(key, 0) == 1
    faithful = runs.scores.get("faithful", {}).get(key, 0) == 1
    error = "; ".join(f"{reading}: {e}" for reading, e in runs.errors.items()) or None
    return CriterionResult(
        criterion=key,
        weight=weight,
        source="rule",
        passed=corrected,
        passed_faithful=faithful,
        evidence=f"corrected={int(corrected)} faithful={int(faithful)}",
        error=error,
    )


# ---------------------------------------------------------------- the grade


def grade_session(
    spec: GradingSpec,
    session: SessionEnded,
    history: Sequence[ToolRecord],
    diff: StateDiffData | None,
    files: Mapping[str, str],
    *,
    rubric: RubricJudge,
    rule_runner: RuleRunner,
) -> SessionGrade:
    """Every checklist item of the task graded (module docstring), COMP under both readings."""
    errors: list[str] = []
    judge_failures = 0
    scorer_name = spec.rule_scorer_path or "the rule scorer"

    runs = _Runs({}, {})
    if spec.rule_scorer is not None:
        runs = _run_scorer(spec.rule_scorer, history, rule_runner)
        for reading, error in runs.errors.items():
            errors.append(f"{scorer_name} ({reading} reading): {error}")
    rule_keys = {_norm(k): k for k in runs.items_named()}
    state_checks = {_norm(c.criterion): c for c in spec.state_checks}
    state = final_state(diff, files)

    slots: list[CriterionResult | None] = []
    rubric_texts: list[str] = []
    rubric_slots: list[tuple[int, float]] = []
    used_rules: set[str] = set()
    used_checks: set[str] = set()
    for item in spec.checklist:
        norm = _norm(item.criterion)
        if norm in rule_keys:
            used_rules.add(norm)
            slots.append(
                _rule_item(rule_keys[norm], item.weight, runs).model_copy(
                    update={"criterion": item.criterion}
                )
            )
        elif norm in state_checks:
            used_checks.add(norm)
            checked = check_state(state_checks[norm], state, have_diff=diff is not None)
            slots.append(checked.model_copy(update={"criterion": item.criterion, "weight": item.weight}))
        else:
            rubric_slots.append((len(slots), item.weight))
            rubric_texts.append(item.criterion)
            slots.append(None)

    if rubric_texts:
        trace = render_history(session, files, history, spec.tools)
        verdicts = padded(
            rubric.judge(spec.hidden_intents, trace, rubric_texts), len(rubric_texts), "rubric judge"
        )
        for (slot, weight), text, verdict in zip(rubric_slots, rubric_texts, verdicts, strict=True):
            problem: str | None = None
            if verdict.failed:
                judge_failures += 1
                problem = f"rubric judge: {verdict.reason}"
                errors.append(f"{text!r}: {problem}")
            slots[slot] = CriterionResult(
                criterion=text,
                weight=weight,
                source="rubric",
                passed=verdict.yes,
                passed_faithful=verdict.yes,
                evidence=verdict.reason,
                error=problem,
            )

    criteria = [s for s in slots if s is not None]
    criteria += [_rule_item(key, 1.0, runs) for norm, key in rule_keys.items() if norm not in used_rules]
    if spec.rule_scorer is not None and not rule_keys:
        criteria.append(
            CriterionResult(
                criterion=f"rule scorer {scorer_name}",
                source="rule",
                passed=False,
                passed_faithful=False,
                error="; ".join(f"{r}: {e}" for r, e in runs.errors.items()) or "no scores",
            )
        )
    for norm, check in state_checks.items():
        if norm not in used_checks:
            criteria.append(check_state(check, state, have_diff=diff is not None))
    errors += [f"{c.criterion!r}: {c.error}" for c in criteria if c.source == "state" and c.error]

    return SessionGrade(
        task_id=spec.task_id,
        criteria=tuple(criteria),
        comp=comp(criteria, "corrected"),
        comp_faithful=comp(criteria, "faithful"),
        grader_errors=tuple(errors),
        judge_failures=judge_failures,
    )
