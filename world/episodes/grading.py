"""Grading of one finished session (pi-Bench, Appendix C.3-C.6), pure: the grader actor supplies
the rubric judge and a runner for the task's rule scorer. Two readings are graded side by side:
pi-Bench's own (``passed_faithful``, ``comp_faithful``: its code, point by point) and ours
(``passed``, ``comp``).

Items, in both readings: every checklist criterion (a rubric item, or a state item when a
``state_checks`` entry of ours names it), then every key of the rule scorer (weight 1, pi-Bench's
``"[tools] <key>"`` criteria appended after the checklist), then our state checks no criterion
names.

- Rubric items. pi-Bench (``ChecklistEvaluator._evaluate_task``): the judge reads each turn's
  trace on its own (``judging.render_turn_trace``); an item passes if any turn's verdict is YES.
  Ours: one verdict over the whole session (``judging.render_history``).
- Rule items. pi-Bench (``ToolScriptRuntime``): the key set is what ``score([])`` returns; the
  scorer runs once per turn on that turn's records (``scoring.turn_history``, filtered to the
  task's ``tools`` names); a turn whose call raised scores 0 on every key; a key passes if any
  turn passed; a scorer whose ``score([])`` fails leaves the task out of pi-Bench's COMP. Ours:
  one run over the whole corrected history; a run that failed fails its items with the error.
- State items (ours): read the app state after the session (``exists``, ``absent``, ``equals``,
  ``contains``), the same in both readings.

A judge that answers nothing readable (after its retries) leaves the session's COMP out of the
averages in that reading (None), with the failure counted and reported; it is never a YES nor a
NO. A session that ended in ``error`` is graded (its items show what happened) but its COMP is
left out of both readings. A scorer's failure never passes an item.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
from world.episodes.judging import RubricJudge, Verdict, padded, render_history, render_turn_trace
from world.episodes.scoring import comp, corrected_history, turn_history


@dataclass(frozen=True)
class RuleRun:
    """What a rule scorer answered for one history: its scores, or a one-line reason."""

    scores: dict[str, int] | None
    error: str | None = None


RuleRunner = Callable[[str, list[list[dict[str, Any]]]], list[RuleRun]]
"""Runs a scorer's source on several histories (one answer each, in order)."""


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


@dataclass
class _Rules:
    """The rule scorer's answers: ``keys`` (pi-Bench's, from ``score([])``), ours over the whole
    corrected history, and pi-Bench's per turn."""

    keys: list[str] | None = None
    keys_error: str | None = None
    ours: RuleRun | None = None
    turns: list[RuleRun] = field(default_factory=list)

    def names(self) -> list[str]:
        seen: dict[str, None] = dict.fromkeys(self.keys or ())
        for key in (self.ours.scores or {}) if self.ours is not None else {}:
            seen.setdefault(key, None)
        return list(seen)


def assistant_turns(session: SessionEnded) -> list[int]:
    return sorted({t.turn for t in session.turns if t.role == "assistant"})


def _run_rules(
    source: str, spec: GradingSpec, session: SessionEnded, history: Sequence[ToolRecord], runner: RuleRunner
) -> _Rules:
    allowed = {t.tool_name for t in spec.tools} if spec.tools else None
    per_turn = [turn_history(history, turn, allowed) for turn in assistant_turns(session)]
    runs = runner(source, [[], corrected_history(history), *per_turn])
    if len(runs) != 2 + len(per_turn):
        failed = RuleRun(None, "the scorer runner gave the wrong number of answers")
        runs = [failed] * (2 + len(per_turn))
    rules = _Rules(ours=runs[1], turns=list(runs[2:]))
    first = runs[0]
    if first.scores is None:
        rules.keys_error = f"score([]) failed: {first.error or 'no scores'}"
    elif not first.scores:
        rules.keys_error = "score([]) returned no keys"
    else:
        rules.keys = list(first.scores)
    return rules


def _rule_item(key: str, rules: _Rules) -> CriterionResult:
    ours = rules.ours.scores if rules.ours is not None else None
    passed = ours is not None and ours.get(key, 0) == 1
    faithful = rules.keys is not None and key in rules.keys
    faithful = faithful and any(run.scores is not None and run.scores.get(key, 0) == 1 for run in rules.turns)
    errors = []
    if rules.ours is not None and rules.ours.error is not None:
        errors.append(f"corrected: {rules.ours.error}")
    turn_errors = [f"turn {i}: {r.error}" for i, r in enumerate(rules.turns, start=1) if r.error is not None]
    errors += turn_errors[:3]
    return CriterionResult(
        criterion=key,
        weight=1.0,
        source="rule",
        passed=passed,
        passed_faithful=faithful,
        evidence=f"corrected={int(passed)} pi-bench={int(faithful)}",
        error="; ".join(errors) or None,
    )


# ---------------------------------------------------------------- rubric items


@dataclass
class _Rubric:
    ours: list[Verdict]
    faithful: list[bool]
    failures_ours: int = 0
    failures_faithful: int = 0
    problems: list[str] = field(default_factory=list)


def _judge_rubric(  # noqa: PLR0917
    spec: GradingSpec,
    session: SessionEnded,
    history: Sequence[ToolRecord],
    files: Mapping[str, str],
    texts: list[str],
    rubric: RubricJudge,
) -> _Rubric:
    trace = render_history(session, files, history, spec.tools)
    ours = padded(rubric.judge(spec.hidden_intents, trace, texts), len(texts), "rubric judge")
    result = _Rubric(ours=ours, faithful=[False] * len(texts))
    for text, verdict in zip(texts, ours, strict=True):
        if verdict.failed:
            result.failures_ours += 1
            result.problems.append(f"{text!r}: rubric judge (whole session): {verdict.reason}")
    for turn in assistant_turns(session):
        turn_trace = render_turn_trace(session, turn, files, history, spec.tools)
        verdicts = padded(rubric.judge(spec.hidden_intents, turn_trace, texts), len(texts), "rubric judge")
        for i, verdict in enumerate(verdicts):
            if verdict.failed:
                result.failures_faithful += 1
                result.problems.append(f"{texts[i]!r}: rubric judge (turn {turn}): {verdict.reason}")
            elif verdict.yes:
                result.faithful[i] = True
    return result


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
    """Every item of the task graded in both readings (module docstring)."""
    errors: list[str] = []
    scorer_name = spec.rule_scorer_path or "the rule scorer"
    rules = _Rules()
    if spec.rule_scorer is not None:
        rules = _run_rules(spec.rule_scorer, spec, session, history, rule_runner)
        if rules.keys_error is not None:
            errors.append(f"{scorer_name}: {rules.keys_error}")
        if rules.ours is not None and rules.ours.error is not None:
            errors.append(f"{scorer_name} (corrected reading): {rules.ours.error}")
    state_checks = {_norm(c.criterion): c for c in spec.state_checks}
    state = final_state(diff, files)

    slots: list[CriterionResult | None] = []
    rubric_texts: list[str] = []
    rubric_slots: list[tuple[int, float]] = []
    used_checks: set[str] = set()
    for item in spec.checklist:
        norm = _norm(item.criterion)
        if norm in state_checks:
            used_checks.add(norm)
            checked = check_state(state_checks[norm], state, have_diff=diff is not None)
            slots.append(checked.model_copy(update={"criterion": item.criterion, "weight": item.weight}))
        else:
            rubric_slots.append((len(slots), item.weight))
            rubric_texts.append(item.criterion)
            slots.append(None)

    judged = _Rubric(ours=[], faithful=[])
    if rubric_texts:
        judged = _judge_rubric(spec, session, history, files, rubric_texts, rubric)
        errors += judged.problems
        for (slot, weight), text, verdict, faithful in zip(
            rubric_slots, rubric_texts, judged.ours, judged.faithful, strict=True
        ):
            slots[slot] = CriterionResult(
                criterion=text,
                weight=weight,
                source="rubric",
                passed=verdict.yes and not verdict.failed,
                passed_faithful=faithful,
                evidence=verdict.reason,
                error=f"rubric judge: {verdict.reason}" if verdict.failed else None,
            )

    criteria = [s for s in slots if s is not None]
    if spec.rule_scorer is not None:
        names = rules.names()
        criteria += [_rule_item(key, rules) for key in names]
        if not names:
            criteria.append(
                CriterionResult(
                    criterion=f"rule scorer {scorer_name}",
                    source="rule",
                    passed=False,
                    passed_faithful=False,
                    error=rules.keys_error or "no scores",
                )
            )
    for norm, check in state_checks.items():
        if norm not in used_checks:
            criteria.append(check_state(check, state, have_diff=diff is not None))
    errors += [f"{c.criterion!r}: {c.error}" for c in criteria if c.source == "state" and c.error]

    excluded: str | None = None
    comp_ours = comp(criteria, "corrected")
    comp_faithful = comp(criteria, "faithful")
    if session.reason == "error":
        excluded = f"the session ended in error: {session.error or 'no reason given'}"
        comp_ours = comp_faithful = None
    if judged.failures_ours:
        comp_ours = None
        excluded = excluded or "the rubric judge answered nothing readable"
    if judged.failures_faithful or (spec.rule_scorer is not None and rules.keys is None):
        comp_faithful = None
        excluded = excluded or (rules.keys_error or "the rubric judge answered nothing readable")
    return SessionGrade(
        task_id=spec.task_id,
        criteria=tuple(criteria),
        comp=comp_ours,
        comp_faithful=comp_faithful,
        grader_errors=tuple(errors),
        judge_failures=judged.failures_ours + judged.failures_faithful,
        excluded=excluded,
    )
