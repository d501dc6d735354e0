"""PROC and COMP (pi-Bench Section 3.5, Appendix C), the two readings of a tool history, the
grading core, and the rule scorer run in a child process."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from actors.episodes.rule_scorer import run_rule_scorer
from messages.episodes import (
    CriterionResult,
    CriterionSpec,
    GradingSpec,
    IntentResult,
    IntentStatus,
    Judgement,
    SessionEnded,
    StateChange,
    StateCheckSpec,
    StateDiffData,
    ToolRecord,
    ToolSelection,
    TurnRecord,
)
from tests.conftest import ROOT
from world.episodes.grading import RuleRun, checked_scores, grade_session
from world.episodes.judging import DeterministicRubricJudge, Verdict
from world.episodes.scoring import (
    comp,
    corrected_history,
    dependency_groups,
    episode_comp,
    episode_proc,
    faithful_history,
    mean_std,
    pooled_proc,
    select_evidence,
    task_proc,
)

# The rule scorer of the paper's Appendix C.6 (the page break's indentation restored).
# The rule-based evaluator of the paper's Appendix C.6, as the pi-Bench layout fixture ships it.
PAPER_SCORER = (
    ROOT / "tests/fixtures/pibench/data/pibench_demo/tasks/order_coffee_dripper/tools_eval.py"
).read_text()
PAPER_KEYS = [
    "used amazon__place_order successfully",
    "recovered placed order_id",
    "show_order confirms target product",
    "show_order confirms ordered_quantity == 2",
]


def show_order(order_id: int, product_id: int, quantity: int) -> ToolRecord:
    items = [{"product_id": product_id, "ordered_quantity": quantity}]
    return ToolRecord(
        tool_name="mcp_appworld_amazon__show_order",
        call={"order_id": order_id},
        result={"response": {"order_id": order_id, "order_items": items}},
    )


# The assistant placed the order under an unprefixed name, confirmed it, then looked at an old
# order: pi-Bench's reading (last call per tool, exact names) misses all of it.
HISTORY = [
    ToolRecord(
        tool_name="mcp_appworld_amazon__search_products",
        call={"query": "green tea"},
        result={"response": {"products": [{"product_id": 1578}]}},
    ),
    ToolRecord(
        tool_name="amazon__place_order",
        call={"payment_card_id": 1, "address_id": 2},
        result={"response": {"order_id": 901, "order_items": [{"product_id": 1578, "ordered_quantity": 2}]}},
    ),
    show_order(901, 1578, 2),
    show_order(17, 5, 1),
]


# ---------------------------------------------------------------- readings


def test_the_faithful_reading_keeps_the_last_call_per_exact_name() -> None:
    records = faithful_history(HISTORY)
    assert [r["tool_name"] for r in records] == [
        "mcp_appworld_amazon__search_products",
        "amazon__place_order",
        "mcp_appworld_amazon__show_order",
    ]
    assert records[-1]["call"] == {"order_id": 17}
    assert records[0] == {
        "tool_name": "mcp_appworld_amazon__search_products",
        "call": {"query": "green tea"},
        "result": {"response": {"products": [{"product_id": 1578}]}},
    }


def test_the_corrected_reading_keeps_everything_under_canonical_names() -> None:
    unknown = ToolRecord(
        tool_name="teleport", call={}, result={"error": "unknown_tool"}, status="unknown_tool"
    )
    records = corrected_history([*HISTORY, unknown])
    assert [r["tool_name"] for r in records] == [
        "mcp_appworld_amazon__search_products",
        "mcp_appworld_amazon__place_order",
        "mcp_appworld_amazon__show_order",
        "mcp_appworld_amazon__show_order",
        "teleport",
    ]
    assert [r["call"].get("order_id") for r in records[2:4]] == [901, 17]


def test_selected_evidence_is_cut_to_the_named_keys_and_paths() -> None:
    selections = [
        ToolSelection(
            tool_name="amazon__place_order",
            call=("payment_card_id", "coupon"),
            result=("response.order_id", "order_items.product_id", "order_items.0.ordered_quantity", "nope"),
        ),
        ToolSelection(tool_name="mcp_appworld_amazon__search_products"),
    ]
    corrected = select_evidence(HISTORY, selections, "corrected")
    assert corrected == [
        HISTORY[0].model_dump(include={"tool_name", "call", "result"}),
        {
            "tool_name": "mcp_appworld_amazon__place_order",
            "call": {"payment_card_id": 1},
            "result": {
                "response.order_id": 901,
                "order_items.product_id": [1578],
                "order_items.0.ordered_quantity": 2,
            },
        },
    ]
    # The faithful reading matches names exactly: the selection's unprefixed name matches the
    # record's, and a canonical selection would not.
    faithful = select_evidence(HISTORY, selections[:1], "faithful")
    assert [e["tool_name"] for e in faithful] == ["amazon__place_order"]
    canonical = ToolSelection(tool_name="mcp_appworld_amazon__place_order", call=("address_id",))
    assert select_evidence(HISTORY, [canonical], "faithful") == []
    assert select_evidence(HISTORY, [canonical], "corrected")[0]["call"] == {"address_id": 2}


# ---------------------------------------------------------------- COMP and PROC


def item(passed: bool, faithful: bool, weight: float = 1.0) -> CriterionResult:
    return CriterionResult(
        criterion="c", weight=weight, source="rule", passed=passed, passed_faithful=faithful
    )


def test_comp_is_the_weighted_mean_of_passed_items() -> None:
    items = [item(True, False, 3), item(False, True, 1), item(True, True, 1)]
    assert comp(items) == pytest.approx(4 / 5)
    assert comp(items, "faithful") == pytest.approx(2 / 5)
    assert comp([]) is None
    assert episode_comp([0.5, None, 1.0]) == pytest.approx(0.75)
    assert episode_comp([None]) is None


def intents(*statuses: IntentStatus) -> list[IntentResult]:
    return [IntentResult(index=i, content=f"intent {i}", status=s) for i, s in enumerate(statuses)]


def test_task_proc_counts_completed_and_inferred_only() -> None:
    assert task_proc(intents("completed", "inferred", "provided", "open")) == 0.5
    assert task_proc([]) is None


def test_pooled_proc_includes_every_transitive_dependency() -> None:
    by_task = {
        "a": intents("completed", "completed"),
        "b": intents("provided"),
        "c": intents("provided"),
        "x": intents("inferred"),
    }
    depends_on = {"b": ["a"], "c": ["b"], "a": ["c"]}  # a cycle must not loop
    assert pooled_proc("c", by_task, depends_on) == pytest.approx(2 / 4)
    assert pooled_proc("x", by_task, depends_on) == 1.0
    assert pooled_proc("missing", by_task, {"missing": ["x"]}) == 1.0  # a task that never ran
    assert pooled_proc("none", {}, {}) is None


def test_dependency_groups_are_components_in_episode_order() -> None:
    tasks: list[tuple[str, Sequence[str]]] = [
        ("a", []),
        ("x", []),
        ("b", ["a"]),
        ("y", ["ghost"]),
        ("c", ["b"]),
        ("z", ["y", "x"]),
    ]
    assert dependency_groups(tasks) == [("a", "b", "c"), ("x", "y", "z")]
    assert dependency_groups([("p", []), ("q", [])]) == [("p",), ("q",)]


def test_episode_proc_weights_each_pooled_group_by_its_size() -> None:
    tasks: list[tuple[str, Sequence[str]]] = [
        ("a", []),
        ("b", ["a"]),
        ("c", ["a"]),
        ("solo", []),
        ("empty", []),
    ]
    by_task = {
        "a": intents("completed"),
        "b": intents("provided", "provided", "inferred"),
        "c": [],
        "solo": intents("completed", "provided"),
    }
    group_abc = 2 / 4  # pooled: completed, provided, provided, inferred
    expected = (3 * group_abc + 1 * 0.5) / (3 + 1)  # "empty" has no intents: left out
    assert episode_proc(tasks, by_task) == pytest.approx(expected)
    assert episode_proc([("t", [])], {}) is None


def test_mean_std_uses_the_sample_deviation() -> None:
    assert mean_std([0.5]) == (0.5, 0.0)
    mean, std = mean_std([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and std == pytest.approx(math.sqrt(5 / 3))
    with pytest.raises(ValueError):
        mean_std([])


# ---------------------------------------------------------------- grading


def ended(text: str = "I placed your green tea order, number 901.") -> SessionEnded:
    return SessionEnded(
        episode_id="ep",
        task_id="shop",
        reason="complete",
        turns=(
            TurnRecord(turn=1, role="user", kind="request", text="Buy me some tea"),
            TurnRecord(turn=1, role="assistant", text=text),
        ),
    )


DIFF = StateDiffData(
    since="shop",
    changes=(
        StateChange(path="files.outputs/report.md", kind="added", after={"value": "Ordered Green Tea"}),
    ),
    state={
        "apps": {
            "amazon": {
                "orders": [{"order_id": 901, "order_items": [{"product_id": 1578, "ordered_quantity": 2}]}]
            }
        },
        "outbox": [],
        "scheduled": [],
        "questions": [],
        "clock": 0.0,
        "task_id": "shop",
    },
)

SPEC = GradingSpec(
    task_id="shop",
    hidden_intents=("Buy two boxes",),
    checklist=(
        CriterionSpec(criterion="The green tea order was placed", weight=2),
        CriterionSpec(criterion="  Used amazon__place_order successfully ", weight=3),
        CriterionSpec(criterion="An order exists"),
    ),
    rule_scorer=PAPER_SCORER,
    rule_scorer_path="tasks/shop/evaluate.py",
    state_checks=(
        StateCheckSpec(criterion="An order exists", path="apps.amazon.orders.901", op="exists"),
        StateCheckSpec(
            criterion="The order holds product 1578",
            path="apps.amazon.orders.901.order_items",
            op="contains",
            value={"value": {"product_id": 1578}},
        ),
        StateCheckSpec(criterion="No message was sent", path="outbox.0", op="absent"),
        StateCheckSpec(
            criterion="The report names the tea",
            path="files.outputs/report.md",
            op="contains",
            value={"value": "green tea"},
        ),
        StateCheckSpec(
            criterion="Two boxes",
            path="apps.amazon.orders.901.order_items.0.ordered_quantity",
            op="equals",
            value={"value": 2},
        ),
    ),
)


def test_a_session_is_graded_from_rubric_rule_and_state_items_under_both_readings() -> None:
    grade = grade_session(
        SPEC, ended(), HISTORY, DIFF, {}, rubric=DeterministicRubricJudge(), rule_runner=run_rule_scorer
    )
    by_name = {c.criterion: c for c in grade.criteria}
    assert [c.criterion for c in grade.criteria][:3] == [
        "The green tea order was placed",
        "  Used amazon__place_order successfully ",
        "An order exists",
    ]
    assert [(c.source, c.weight) for c in grade.criteria[:3]] == [("rubric", 2), ("rule", 3), ("state", 1)]
    assert set(PAPER_KEYS[1:]) <= set(by_name)  # the scorer's other keys: items of their own
    assert all(c.passed for c in grade.criteria), [c for c in grade.criteria if not c.passed]
    # pi-Bench's reading sees neither the unprefixed order nor the confirmed one.
    rule_items = [c for c in grade.criteria if c.source == "rule"]
    assert len(rule_items) == 4 and not any(c.passed_faithful for c in rule_items)
    assert grade.comp == 1.0
    total = 2 + 3 + 1 + 3 + 4  # rubric, matched rule, matched state, other rule keys, other state checks
    assert grade.comp_faithful == pytest.approx((2 + 1 + 4) / total)
    assert grade.grader_errors == () and grade.judge_failures == 0


class FixedRunner:
    def __init__(self, corrected: RuleRun, faithful: RuleRun) -> None:
        self.runs = {"corrected": corrected, "faithful": faithful}
        self.seen: list[list[dict[str, Any]]] = []

    def __call__(self, source: str, history: list[dict[str, Any]]) -> RuleRun:
        self.seen.append(history)
        # The corrected reading is the full history, so it is the longer one here.
        return self.runs["corrected" if len(history) == len(HISTORY) else "faithful"]


def rule_only(**update: Any) -> GradingSpec:
    return GradingSpec(
        task_id="shop", rule_scorer="def score(h): ...", rule_scorer_path="evaluate.py", **update
    )


def test_a_crashed_scorer_is_a_grader_error_and_never_lifts_comp() -> None:
    crash = RuleRun(None, "crashed: ZeroDivisionError: division by zero")
    runner = FixedRunner(crash, crash)
    grade = grade_session(
        rule_only(), ended(), HISTORY, None, {}, rubric=DeterministicRubricJudge(), rule_runner=runner
    )
    assert len(runner.seen) == 2
    assert grade.grader_errors == (
        "evaluate.py (corrected reading): crashed: ZeroDivisionError: division by zero",
        "evaluate.py (faithful reading): crashed: ZeroDivisionError: division by zero",
    )
    (only,) = grade.criteria
    assert only.criterion == "rule scorer evaluate.py" and not only.passed and only.error
    assert grade.comp == 0.0 and grade.comp_faithful == 0.0


def test_garbage_scores_fail_their_reading_only() -> None:
    runner = FixedRunner(RuleRun({"ok": 1, "placed": True}), RuleRun({"ok": 2}))
    grade = grade_session(
        rule_only(), ended(), HISTORY, None, {}, rubric=DeterministicRubricJudge(), rule_runner=runner
    )
    assert [(c.criterion, c.passed, c.passed_faithful) for c in grade.criteria] == [
        ("ok", True, False),
        ("placed", True, False),
    ]
    assert grade.grader_errors == (
        "evaluate.py (faithful reading): score() gave 'ok' the value 2, not 0 or 1",
    )
    assert all(c.error and c.error.startswith("faithful:") for c in grade.criteria)


def test_scores_are_checked_strictly() -> None:
    assert checked_scores({"a": 1, "b": False, "c": 0.0}) == ({"a": 1, "b": 0, "c": 0}, None)
    assert checked_scores([1])[1] == "score() returned list, not a dict"
    assert checked_scores({1: 1})[1] == "score() returned a non-text key 1"
    assert checked_scores({"a": "1"})[0] is None


class UnreadableRubric:
    kind: Judgement = "llm"

    def judge(self, hidden_intents: Sequence[str], history: str, criteria: Sequence[str]) -> list[Verdict]:
        return [Verdict(yes=False, failed=True, reason="no readable <score> for c1")]


def test_an_unreadable_rubric_answer_fails_the_item_and_is_reported() -> None:
    spec = GradingSpec(
        task_id="t",
        checklist=(CriterionSpec(criterion="The green tea order was placed"), CriterionSpec(criterion="Tea")),
    )
    grade = grade_session(
        spec, ended(), [], None, {}, rubric=UnreadableRubric(), rule_runner=FixedRunner(*[RuleRun(None)] * 2)
    )
    assert [c.passed for c in grade.criteria] == [False, False]
    assert grade.judge_failures == 2 and len(grade.grader_errors) == 2
    assert grade.criteria[1].error == "rubric judge: rubric judge gave no verdict"
    assert grade.comp == 0.0


def test_state_checks_need_the_diff_except_for_files() -> None:
    spec = GradingSpec(
        task_id="t",
        state_checks=(
            StateCheckSpec(criterion="order", path="apps.amazon.orders.901"),
            StateCheckSpec(criterion="report", path="files.out.md", op="contains", value={"value": "TEA"}),
            StateCheckSpec(criterion="bad", path="files.out.md", op="equals"),
        ),
    )
    grade = grade_session(
        spec,
        ended(),
        [],
        None,
        {"out.md": "green tea"},
        rubric=DeterministicRubricJudge(),
        rule_runner=FixedRunner(*[RuleRun(None)] * 2),
    )
    assert [(c.criterion, c.passed) for c in grade.criteria] == [
        ("order", False),
        ("report", True),
        ("bad", False),
    ]
    assert grade.grader_errors == (
        "'order': no state diff for this session",
        "'bad': state check 'equals' needs a value {'value': ...}",
    )


def test_a_task_without_checklist_has_no_comp() -> None:
    grade = grade_session(
        GradingSpec(task_id="prime"),
        ended(),
        HISTORY,
        DIFF,
        {},
        rubric=DeterministicRubricJudge(),
        rule_runner=FixedRunner(*[RuleRun(None)] * 2),
    )
    assert grade.criteria == () and grade.comp is None and grade.comp_faithful is None


# ---------------------------------------------------------------- the rule scorer's child process


def test_the_papers_scorer_runs_on_both_readings() -> None:
    corrected = run_rule_scorer(PAPER_SCORER, corrected_history(HISTORY))
    assert corrected == RuleRun(dict.fromkeys(PAPER_KEYS, 1), None)
    faithful = run_rule_scorer(PAPER_SCORER, faithful_history(HISTORY))
    assert faithful == RuleRun(dict.fromkeys(PAPER_KEYS, 0), None)


def test_a_good_scorer_may_print_without_spoiling_its_answer() -> None:
    source = "def score(h):\n    print('looking at', len(h))\n    return {'seen': len(h) == 2, 'x': 0}\n"
    assert run_rule_scorer(source, [{"tool_name": "a"}, {"tool_name": "b"}]) == RuleRun(
        {"seen": 1, "x": 0}, None
    )


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("def score(h):\n    return 1 / 0\n", "crashed: ZeroDivisionError: division by zero"),
        ("x = 1\n", "crashed: the scorer defines no score(tools_history) function"),
        ("def score(h):\n    return [1, 0]\n", "score() returned list, not a dict"),
        ("def score(h):\n    return {'a': 2}\n", "score() gave 'a' the value 2, not 0 or 1"),
        ("def score(h):\n    return {1: 1}\n", "score() returned a non-text key"),
        ("def score(h):\n    return {'a': {1, 2}}\n", "score() returned data that is not JSON"),
        ("def score(h):\n    return {'a': float('nan')}\n", "score() returned data that is not JSON"),
        ("import sys\ndef score(h):\n    sys.exit(0)\n", "the scorer gave no answer"),
        ("def score(h:\n", "crashed: SyntaxError"),
    ],
)
def test_a_broken_scorer_gives_a_reason_not_a_score(source: str, reason: str) -> None:
    run = run_rule_scorer(source, [])
    assert run.scores is None and run.error is not None
    assert run.error.startswith(reason), run.error


def test_a_scorer_that_never_returns_is_stopped() -> None:
    run = run_rule_scorer("def score(h):\n    while True:\n        pass\n", [], timeout=1.0)
    assert run == RuleRun(None, "timed out after 1 s")
