"""Grading one session in both readings (pi-Bench's per turn, ours over the whole session), with
fake rubric judges and rule runners, and the rule scorer's child process."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from actors.episodes.rule_scorer import run_rule_scorer
from messages.episodes import (
    CriterionSpec,
    EndReason,
    GradingSpec,
    Judgement,
    SessionEnded,
    StateChange,
    StateCheckSpec,
    StateDiffData,
    ToolRecord,
    ToolSelection,
    TurnRecord,
)
from world.episodes.grading import RuleRun, checked_scores, grade_session
from world.episodes.judging import Verdict, unreadable
from world.episodes.scoring import corrected_history, turn_history

SCORER = (
    Path(__file__).resolve().parents[1] / "fixtures/pibench/data/pibench_demo/scripts/order_coffee_dripper.py"
).read_text()
"""The demo persona's rule scorer (our own fixture, pi-Bench's script style)."""
KEYS = [
    "used amazon__place_order successfully",
    "recovered placed order_id",
    "show_order confirms target product",
    "show_order confirms ordered_quantity == 2",
]
PLACE = "mcp_appworld_amazon__place_order"
SHOW = "mcp_appworld_amazon__show_order"
TOKEN = "3f1c0a"


def placed(turn: int, order_id: int = 4102) -> ToolRecord:
    return ToolRecord(
        tool_name=PLACE,
        call={"access_token": TOKEN, "payment_card_id": 1, "address_id": 1},
        result={"response": {"message": "Successfully placed the order.", "order_id": order_id}},
        turn=turn,
    )


def shown(turn: int, order_id: int, quantity: int) -> ToolRecord:
    items = [{"product_id": 1578, "ordered_quantity": quantity}]
    return ToolRecord(
        tool_name=SHOW,
        call={"access_token": TOKEN, "order_id": order_id},
        result={"response": {"order_id": order_id, "order_items": items}},
        turn=turn,
    )


def session(*replies: str, reason: EndReason = "complete", error: str | None = None) -> SessionEnded:
    """A session of one user message and one assistant reply per turn."""
    turns: list[TurnRecord] = []
    for n, reply in enumerate(replies, start=1):
        turns.append(
            TurnRecord(turn=n, role="user", kind="request" if n == 1 else "provide", text=f"user {n}")
        )
        turns.append(TurnRecord(turn=n, role="assistant", text=reply))
    return SessionEnded(episode_id="ep", task_id="shop", reason=reason, turns=tuple(turns), error=error)


def spec(**update: Any) -> GradingSpec:
    data: dict[str, Any] = {
        "task_id": "shop",
        "hidden_intents": ("Order 2 drippers",),
        "tools": (
            ToolSelection(tool_name=PLACE, call=("payment_card_id",), result=("response.order_id",)),
            ToolSelection(tool_name=SHOW, call=("order_id",), result=("response.order_items",)),
        ),
        "rule_scorer": "def score(h): ...",
        "rule_scorer_path": "scripts/shop.py",
    }
    data.update(update)
    return GradingSpec(**data)


class Runner:
    """A rule runner answering each history with ``answer(index, history)``: index 0 is
    ``score([])``, 1 the corrected history, 2.. the turns in order."""

    def __init__(self, answer: Callable[[int, list[dict[str, Any]]], RuleRun]) -> None:
        self.answer = answer
        self.seen: list[list[list[dict[str, Any]]]] = []

    def __call__(self, source: str, histories: list[list[dict[str, Any]]]) -> list[RuleRun]:
        self.seen.append(histories)
        return [self.answer(i, h) for i, h in enumerate(histories)]


def by_index(*runs: RuleRun) -> Runner:
    return Runner(lambda i, _: runs[i])


class Rubric:
    """A rubric judge: ``decide(criterion, trace)`` is YES, NO or None (unreadable)."""

    kind: Judgement = "llm"

    def __init__(self, decide: Callable[[str, str], bool | None]) -> None:
        self.decide = decide
        self.traces: list[str] = []

    def judge(self, hidden_intents: Sequence[str], history: str, criteria: Sequence[str]) -> list[Verdict]:
        self.traces.append(history)
        out = []
        for criterion in criteria:
            answer = self.decide(criterion, history)
            out.append(unreadable("no <score>") if answer is None else Verdict(yes=answer))
        return out


NO_RUBRIC = Rubric(lambda c, t: False)
KEYS_AB = RuleRun({"a": 0, "b": 0})


# ---------------------------------------------------------------- rule items, both readings


def test_the_runner_gets_score_of_nothing_the_corrected_history_and_each_turn() -> None:
    history = [placed(1), shown(1, 4101, 1), shown(2, 4102, 2)]
    runner = Runner(lambda i, h: RuleRun({"a": 0, "b": 0}))
    grade_session(
        spec(), session("one", "two", "three"), history, None, {}, rubric=NO_RUBRIC, rule_runner=runner
    )
    (histories,) = runner.seen  # one call: one child process serves the whole session
    allowed = {PLACE, SHOW}
    assert histories == [
        [],
        corrected_history(history),
        turn_history(history, 1, allowed),
        turn_history(history, 2, allowed),
        turn_history(history, 3, allowed),  # no call in turn 3: pi-Bench's fallback
    ]
    assert [r["call"]["order_id"] for r in histories[3]] == [4102]
    assert [r["tool_name"] for r in histories[4]] == [PLACE, SHOW]


def test_a_task_without_a_tools_list_passes_every_call_to_the_scorer() -> None:
    history = [placed(1), ToolRecord(tool_name="read_file", call={"path": "a"}, turn=1)]
    runner = Runner(lambda i, h: KEYS_AB)
    grade_session(spec(tools=()), session("x"), history, None, {}, rubric=NO_RUBRIC, rule_runner=runner)
    assert [r["tool_name"] for r in runner.seen[0][2]] == [PLACE, "read_file"]


def test_a_key_passes_pibench_reading_if_any_turn_passed_it() -> None:
    runner = by_index(
        KEYS_AB,  # score([]): the key set
        RuleRun({"a": 1, "b": 1}),  # ours, the whole session
        RuleRun({"a": 0, "b": 0}),
        RuleRun({"a": 1, "b": 0, "stray": 1}),  # a key score([]) does not give is ignored
        RuleRun({"a": 0}),  # a missing key counts 0
    )
    grade = grade_session(spec(), session("1", "2", "3"), [], None, {}, rubric=NO_RUBRIC, rule_runner=runner)
    assert [(c.criterion, c.source, c.weight, c.passed, c.passed_faithful) for c in grade.criteria] == [
        ("a", "rule", 1.0, True, True),
        ("b", "rule", 1.0, True, False),
    ]
    assert grade.criteria[1].evidence == "corrected=1 pi-bench=0"
    assert grade.comp == 1.0 and grade.comp_faithful == 0.5
    assert grade.excluded is None and grade.grader_errors == ()


def test_a_turn_that_raises_scores_zero_on_every_key() -> None:
    crash = RuleRun(None, "crashed: KeyError: 'response'")
    runner = by_index(
        KEYS_AB, RuleRun({"a": 1, "b": 1}), RuleRun({"a": 1, "b": 0}), crash, RuleRun({"a": 0, "b": 0})
    )
    grade = grade_session(spec(), session("1", "2", "3"), [], None, {}, rubric=NO_RUBRIC, rule_runner=runner)
    assert [(c.passed, c.passed_faithful) for c in grade.criteria] == [(True, True), (True, False)]
    assert all(c.error == "turn 2: crashed: KeyError: 'response'" for c in grade.criteria)
    assert grade.comp_faithful == 0.5 and grade.excluded is None  # a crash in a turn excludes nothing
    # Only the turn that passed a key raised: the key fails.
    runner = by_index(KEYS_AB, RuleRun({"a": 1, "b": 1}), crash)
    grade = grade_session(spec(), session("1"), [], None, {}, rubric=NO_RUBRIC, rule_runner=runner)
    assert [c.passed_faithful for c in grade.criteria] == [False, False] and grade.comp_faithful == 0.0


def test_a_failing_score_of_nothing_leaves_pibench_comp_out() -> None:
    runner = by_index(
        RuleRun(None, "crashed: IndexError: list index out of range"),
        RuleRun({"a": 1, "b": 0}),
        RuleRun({"a": 1, "b": 1}),
    )
    rubric = Rubric(lambda c, t: True)
    checklist = (CriterionSpec(criterion="Ordered", weight=2),)
    grade = grade_session(
        spec(checklist=checklist), session("1"), [], None, {}, rubric=rubric, rule_runner=runner
    )
    assert grade.comp_faithful is None
    assert grade.excluded == "score([]) failed: crashed: IndexError: list index out of range"
    assert grade.grader_errors == (
        "scripts/shop.py: score([]) failed: crashed: IndexError: list index out of range",
    )
    # Our reading still stands: its keys come from the corrected run.
    assert [(c.criterion, c.passed, c.passed_faithful) for c in grade.criteria] == [
        ("Ordered", True, True),
        ("a", True, False),
        ("b", False, False),
    ]
    assert grade.comp == pytest.approx((2 + 1) / (2 + 1 + 1))


def test_score_of_nothing_without_keys_is_a_failure_too() -> None:
    runner = by_index(RuleRun({}), RuleRun({"a": 1}), RuleRun({"a": 1}))
    grade = grade_session(spec(), session("1"), [], None, {}, rubric=NO_RUBRIC, rule_runner=runner)
    assert grade.comp_faithful is None and grade.excluded == "score([]) returned no keys"
    assert grade.comp == 1.0


def test_a_scorer_that_fails_everywhere_is_one_failed_item() -> None:
    crash = RuleRun(None, "crashed: ZeroDivisionError: division by zero")
    grade = grade_session(
        spec(), session("1"), [], None, {}, rubric=NO_RUBRIC, rule_runner=Runner(lambda i, h: crash)
    )
    (only,) = grade.criteria
    assert only.criterion == "rule scorer scripts/shop.py" and only.source == "rule"
    assert not only.passed and not only.passed_faithful
    assert only.error == "score([]) failed: crashed: ZeroDivisionError: division by zero"
    assert grade.grader_errors == (
        "scripts/shop.py: score([]) failed: crashed: ZeroDivisionError: division by zero",
        "scripts/shop.py (corrected reading): crashed: ZeroDivisionError: division by zero",
    )
    assert grade.comp == 0.0 and grade.comp_faithful is None


def test_a_runner_giving_the_wrong_number_of_answers_fails_every_run() -> None:
    grade = grade_session(
        spec(), session("1", "2"), [], None, {}, rubric=NO_RUBRIC,
        rule_runner=lambda source, histories: [RuleRun({"a": 1})],
    )  # fmt: skip
    assert grade.comp_faithful is None and grade.comp == 0.0
    assert grade.criteria[0].error == "score([]) failed: the scorer runner gave the wrong number of answers"


def test_garbage_scores_fail_their_reading_only() -> None:
    runner = by_index(
        RuleRun({"ok": 0}), RuleRun(None, "score() gave 'ok' the value 2, not 0 or 1"), RuleRun({"ok": 1})
    )
    grade = grade_session(spec(), session("1"), [], None, {}, rubric=NO_RUBRIC, rule_runner=runner)
    assert [(c.criterion, c.passed, c.passed_faithful) for c in grade.criteria] == [("ok", False, True)]
    assert grade.criteria[0].error == "corrected: score() gave 'ok' the value 2, not 0 or 1"
    assert grade.grader_errors == (
        "scripts/shop.py (corrected reading): score() gave 'ok' the value 2, not 0 or 1",
    )
    assert grade.comp == 0.0 and grade.comp_faithful == 1.0


def test_scores_are_checked_strictly() -> None:
    assert checked_scores({"a": 1, "b": False, "c": 0.0}) == ({"a": 1, "b": 0, "c": 0}, None)
    assert checked_scores([1])[1] == "score() returned list, not a dict"
    assert checked_scores({1: 1})[1] == "score() returned a non-text key 1"
    assert checked_scores({"a": "1"})[0] is None
    assert checked_scores({"a": 0.5})[1] == "score() gave 'a' the value 0.5, not 0 or 1"


# ---------------------------------------------------------------- rubric items, both readings


def test_a_rubric_item_passes_pibench_reading_if_any_turn_said_yes() -> None:
    # The judge says YES to "early" only while the assistant has not yet said OMEGA: turn 1's
    # trace does, the whole session's does not.
    def decide(criterion: str, trace: str) -> bool:
        if criterion == "early":
            return "ALPHA" in trace and "OMEGA" not in trace
        return "OMEGA" in trace

    rubric = Rubric(decide)
    checklist = (CriterionSpec(criterion="early", weight=3), CriterionSpec(criterion="late"))
    grade = grade_session(
        spec(checklist=checklist, rule_scorer=None), session("ALPHA", "OMEGA"), [], None, {},
        rubric=rubric, rule_runner=by_index(),
    )  # fmt: skip
    assert [(c.criterion, c.source, c.weight, c.passed, c.passed_faithful) for c in grade.criteria] == [
        ("early", "rubric", 3.0, False, True),
        ("late", "rubric", 1.0, True, True),
    ]
    assert grade.comp == pytest.approx(1 / 4) and grade.comp_faithful == 1.0
    # One judgement of the whole session, then one per assistant turn.
    whole, first, second = rubric.traces
    assert "ALPHA" in whole and "OMEGA" in whole
    assert "ALPHA" in first and "OMEGA" not in first and "user 2" not in first
    assert "ALPHA" in second and "OMEGA" in second  # a turn's trace holds the conversation so far


def test_each_turns_trace_shows_the_tool_extracts_of_that_turn_only() -> None:
    history = [placed(1), shown(1, 4101, 1), shown(2, 4102, 2)]
    rubric = Rubric(lambda c, t: False)
    grade_session(
        spec(checklist=(CriterionSpec(criterion="c"),), rule_scorer=None), session("one", "two"), history,
        None, {"plan.md": "the plan"}, rubric=rubric, rule_runner=by_index(),
    )  # fmt: skip
    whole, first, second = rubric.traces
    assert "<tool_evidence>" in whole and '"order_id": 4102' in whole and '"order_id": 4101' in whole
    assert "<tool_trace_extracts>" in first and '"call": {"order_id": 4101}' in first
    assert '"call": {"order_id": 4102}' not in first
    assert '"response.order_id": 4102' in first  # place_order's selected result path
    assert "<tool_trace_extracts>" in second and '"call": {"order_id": 4102}' in second
    assert '"order_id": 4101' not in second and "place_order" not in second
    assert all('<file path="plan.md">\nthe plan\n</file>' in t for t in rubric.traces)


def test_an_unreadable_whole_session_verdict_leaves_our_comp_out() -> None:
    rubric = Rubric(lambda c, t: None if "OMEGA" in t else True)  # only the whole trace has OMEGA
    checklist = (CriterionSpec(criterion="Ordered"), CriterionSpec(criterion="Confirmed"))
    grade = grade_session(
        spec(checklist=checklist, rule_scorer=None), session("ALPHA", "OMEGA"), [], None, {},
        rubric=rubric, rule_runner=by_index(),
    )  # fmt: skip
    assert [(c.passed, c.passed_faithful) for c in grade.criteria] == [(False, True), (False, True)]
    assert [c.error for c in grade.criteria] == ["rubric judge: no <score>"] * 2
    assert grade.comp is None and grade.comp_faithful is None  # turn 2's trace holds OMEGA too
    assert grade.judge_failures == 2 + 2
    assert grade.excluded == "the rubric judge answered nothing readable"
    assert grade.grader_errors[0] == "'Ordered': rubric judge (whole session): no <score>"
    assert "'Ordered': rubric judge (turn 2): no <score>" in grade.grader_errors


def test_an_unreadable_turn_verdict_leaves_pibench_comp_out_only() -> None:
    rubric = Rubric(lambda c, t: None if "OMEGA" not in t else True)  # turn 1's trace: unreadable
    grade = grade_session(
        spec(checklist=(CriterionSpec(criterion="Ordered"),), rule_scorer=None), session("ALPHA", "OMEGA"),
        [], None, {}, rubric=rubric, rule_runner=by_index(),
    )  # fmt: skip
    (criterion,) = grade.criteria
    assert criterion.passed and criterion.passed_faithful and criterion.error is None
    assert grade.comp == 1.0 and grade.comp_faithful is None
    assert grade.judge_failures == 1 and grade.excluded == "the rubric judge answered nothing readable"
    assert grade.grader_errors == ("'Ordered': rubric judge (turn 1): no <score>",)


def test_too_few_verdicts_are_failures_never_passes() -> None:
    class Short:
        kind: Judgement = "llm"

        def judge(
            self, hidden_intents: Sequence[str], history: str, criteria: Sequence[str]
        ) -> list[Verdict]:
            return [Verdict(yes=True)]

    checklist = (CriterionSpec(criterion="a"), CriterionSpec(criterion="b"))
    grade = grade_session(
        spec(checklist=checklist, rule_scorer=None), session("x"), [], None, {}, rubric=Short(),
        rule_runner=by_index(),
    )  # fmt: skip
    assert [(c.passed, c.passed_faithful) for c in grade.criteria] == [(True, True), (False, False)]
    assert grade.criteria[1].error == "rubric judge: rubric judge gave no verdict"
    assert grade.comp is None and grade.comp_faithful is None and grade.judge_failures == 2


# ---------------------------------------------------------------- the whole grade


def test_rubric_and_rule_items_make_one_weighted_mean_in_each_reading() -> None:
    checklist = (CriterionSpec(criterion="kept", weight=2), CriterionSpec(criterion="lost", weight=3))
    rubric = Rubric(lambda c, t: c == "kept")
    runner = by_index(KEYS_AB, RuleRun({"a": 1, "b": 1}), RuleRun({"a": 1, "b": 0}))
    grade = grade_session(
        spec(checklist=checklist), session("1"), [], None, {}, rubric=rubric, rule_runner=runner
    )
    # The rule scorer's keys come after the checklist, each of weight 1.
    assert [c.criterion for c in grade.criteria] == ["kept", "lost", "a", "b"]
    assert grade.comp == pytest.approx((2 + 1 + 1) / (2 + 3 + 1 + 1))
    assert grade.comp_faithful == pytest.approx((2 + 1) / (2 + 3 + 1 + 1))


def test_a_session_that_ended_in_error_is_graded_but_left_out_of_both() -> None:
    runner = by_index(KEYS_AB, RuleRun({"a": 1, "b": 1}), RuleRun({"a": 1, "b": 1}))
    ended = session("1", reason="error", error="the completion judge answered nothing readable")
    grade = grade_session(spec(), ended, [], None, {}, rubric=NO_RUBRIC, rule_runner=runner)
    assert [(c.passed, c.passed_faithful) for c in grade.criteria] == [(True, True), (True, True)]
    assert grade.comp is None and grade.comp_faithful is None
    assert grade.excluded == "the session ended in error: the completion judge answered nothing readable"
    unexplained = grade_session(
        spec(), session("1", reason="error"), [], None, {}, rubric=NO_RUBRIC, rule_runner=runner
    )
    assert unexplained.excluded == "the session ended in error: no reason given"
    for reason in ("max_turns", "timeout"):  # other ends count
        counted = grade_session(
            spec(), session("1", reason=reason), [], None, {}, rubric=NO_RUBRIC, rule_runner=runner
        )
        assert counted.comp == counted.comp_faithful == 1.0 and counted.excluded is None


def test_a_task_without_items_has_no_comp() -> None:
    grade = grade_session(
        GradingSpec(task_id="prime"), session("1"), [placed(1)], None, {}, rubric=NO_RUBRIC,
        rule_runner=by_index(),
    )  # fmt: skip
    assert grade.criteria == () and grade.comp is None and grade.comp_faithful is None
    assert grade.excluded is None


DIFF = StateDiffData(
    since="shop",
    changes=(
        StateChange(path="files.outputs/report.md", kind="added", after={"value": "Ordered Green Tea"}),
    ),
    state={
        "apps": {
            "amazon": {
                "orders": [{"order_id": 4102, "order_items": [{"product_id": 1578, "ordered_quantity": 2}]}]
            }
        },
        "outbox": [],
        "scheduled": [],
        "questions": [],
    },
)


def test_state_items_read_the_final_state_alike_in_both_readings() -> None:
    checks = (
        StateCheckSpec(criterion="An order exists", path="apps.amazon.orders.4102", op="exists"),
        StateCheckSpec(
            criterion="The order holds the dripper",
            path="apps.amazon.orders.4102.order_items",
            op="contains",
            value={"value": {"product_id": 1578}},
        ),
        StateCheckSpec(
            criterion="Two drippers",
            path="apps.amazon.orders.4102.order_items.0.ordered_quantity",
            op="equals",
            value={"value": 2},
        ),
        StateCheckSpec(criterion="No message was sent", path="outbox.0", op="absent"),
        StateCheckSpec(
            criterion="The report names the tea", path="files.outputs/report.md", op="contains",
            value={"value": "green TEA"},
        ),
        StateCheckSpec(criterion="The old order is gone", path="apps.amazon.orders.4101", op="exists"),
    )  # fmt: skip
    checklist = (CriterionSpec(criterion="  an ORDER exists ", weight=4), CriterionSpec(criterion="Judged"))
    grade = grade_session(
        GradingSpec(task_id="shop", checklist=checklist, state_checks=checks), session("1"), [], DIFF, {},
        rubric=Rubric(lambda c, t: True), rule_runner=by_index(),
    )  # fmt: skip
    assert [(c.criterion, c.source, c.weight) for c in grade.criteria[:2]] == [
        ("  an ORDER exists ", "state", 4.0),  # a checklist item a state check names, by its text
        ("Judged", "rubric", 1.0),
    ]
    assert [(c.criterion, c.passed) for c in grade.criteria[2:]] == [
        ("The order holds the dripper", True),
        ("Two drippers", True),
        ("No message was sent", True),
        ("The report names the tea", True),
        ("The old order is gone", False),
    ]
    assert all(c.passed == c.passed_faithful for c in grade.criteria)
    assert grade.comp == grade.comp_faithful == pytest.approx((4 + 1 + 4) / (4 + 1 + 5))


def test_state_checks_need_the_diff_except_for_files() -> None:
    checks = (
        StateCheckSpec(criterion="order", path="apps.amazon.orders.901"),
        StateCheckSpec(criterion="report", path="files.out.md", op="contains", value={"value": "TEA"}),
        StateCheckSpec(criterion="bad", path="files.out.md", op="equals"),
    )
    grade = grade_session(
        GradingSpec(task_id="t", state_checks=checks), session("1"), [], None, {"out.md": "green tea"},
        rubric=NO_RUBRIC, rule_runner=by_index(),
    )  # fmt: skip
    assert [(c.criterion, c.passed) for c in grade.criteria] == [
        ("order", False),
        ("report", True),
        ("bad", False),
    ]
    assert grade.grader_errors == (
        "'order': no state diff for this session",
        "'bad': state check 'equals' needs a value {'value': ...}",
    )


# ---------------------------------------------------------------- with the real scorer


def test_the_demo_scorer_graded_per_turn_and_over_the_whole_session() -> None:
    # Turn 1 places order 4102 and looks at it, then at the old order 4101: pi-Bench keeps only the
    # last show_order of the turn. Turn 2 looks at 4102 again, but alone: no order id to match.
    history = [placed(1), shown(1, 4102, 2), shown(1, 4101, 1), shown(2, 4102, 2)]
    grade = grade_session(
        spec(rule_scorer=SCORER, rule_scorer_path="scripts/order_coffee_dripper.py"), session("1", "2"),
        history, None, {}, rubric=NO_RUBRIC, rule_runner=run_rule_scorer,
    )  # fmt: skip
    assert [(c.criterion, c.passed, c.passed_faithful) for c in grade.criteria] == [
        (KEYS[0], True, True),
        (KEYS[1], True, True),
        (KEYS[2], True, True),  # turn 2, where show_order stands alone
        (KEYS[3], True, True),
    ]
    assert grade.grader_errors == () and grade.comp == grade.comp_faithful == 1.0
    # Without turn 2, pi-Bench's reading never sees the new order confirmed.
    grade = grade_session(
        spec(rule_scorer=SCORER), session("1"), history[:3], None, {}, rubric=NO_RUBRIC,
        rule_runner=run_rule_scorer,
    )  # fmt: skip
    assert [c.passed_faithful for c in grade.criteria] == [True, True, False, False]
    assert grade.comp == 1.0 and grade.comp_faithful == 0.5


# ---------------------------------------------------------------- the rule scorer's child process


def test_one_child_scores_every_history_in_order() -> None:
    place = placed(1).model_dump(include={"tool_name", "call", "result"})
    show = shown(1, 4102, 2).model_dump(include={"tool_name", "call", "result"})
    runs = run_rule_scorer(SCORER, [[], [place], [place, show], [show]])
    assert [r.error for r in runs] == [None] * 4
    assert [[r.scores[k] for k in KEYS] for r in runs if r.scores is not None] == [
        [0, 0, 0, 0],
        [1, 1, 0, 0],
        [1, 1, 1, 1],
        [0, 0, 1, 1],
    ]
    assert run_rule_scorer(SCORER, []) == []


def test_a_crash_on_one_history_fails_that_history_only() -> None:
    source = "def score(h):\n    return {'n': 1 // (len(h) - 1)}\n"
    assert run_rule_scorer(source, [[{}, {}], [{}], []]) == [
        RuleRun({"n": 1}, None),
        RuleRun(None, "crashed: ZeroDivisionError: integer division or modulo by zero"),
        RuleRun(None, "score() gave 'n' the value -1, not 0 or 1"),
    ]


def test_a_good_scorer_may_print_without_spoiling_its_answer() -> None:
    source = "def score(h):\n    print('looking at', len(h))\n    return {'seen': len(h) == 2, 'x': 0}\n"
    assert run_rule_scorer(source, [[{"tool_name": "a"}, {"tool_name": "b"}]]) == [
        RuleRun({"seen": 1, "x": 0}, None)
    ]


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
    runs = run_rule_scorer(source, [[], [{"tool_name": "x"}]])
    assert len(runs) == 2
    for run in runs:
        assert run.scores is None and run.error is not None
        assert run.error.startswith(reason), run.error


def test_a_scorer_that_never_returns_is_stopped() -> None:
    runs = run_rule_scorer("def score(h):\n    while True:\n        pass\n", [[], []], timeout=1.0)
    assert runs == [RuleRun(None, "timed out after 1 s")] * 2
