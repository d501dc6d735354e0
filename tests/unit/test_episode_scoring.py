"""The readings of a tool history (pi-Bench's per-turn records, ours corrected), the evidence the
rubric judge is shown, and PROC and COMP (pi-Bench Section 3.5, Appendix C) in both aggregations."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from messages.episodes import CriterionResult, IntentResult, IntentStatus, ToolRecord, ToolSelection
from world.episodes.scoring import (
    HISTORY_RESULT_CHARS,
    comp,
    corrected_history,
    dependency_groups,
    episode_comp,
    episode_proc,
    faithful_history,
    group_size,
    pibench_task_proc,
    pooled_proc,
    reading_of,
    result_field,
    select_evidence,
    select_turn_evidence,
    task_proc,
    turn_history,
    weighted_mean,
)

TOKEN = "3f1c0a"
PLACE = "mcp_appworld_amazon__place_order"
SHOW = "mcp_appworld_amazon__show_order"
TASK_TOOLS = {PLACE, SHOW}
"""A task's ``tools`` names, as pi-Bench's filter compares them: exactly."""


def rec(tool: str, turn: int, call: dict[str, Any], response: Any, status: str = "ok") -> ToolRecord:
    """A record as the registry keeps it: an app's answer (or refusal) is ``{"response": ...}``."""
    return ToolRecord(tool_name=tool, call=call, result={"response": response}, status=status, turn=turn)


def show(turn: int, order_id: int, quantity: int) -> ToolRecord:
    items = [{"product_id": 1578, "ordered_quantity": quantity}]
    return rec(
        SHOW,
        turn,
        {"access_token": TOKEN, "order_id": order_id},
        {"order_id": order_id, "order_items": items},
    )


def unknown(turn: int, name: str = "amazon__teleport") -> ToolRecord:
    # Nothing ran: the registry records the call with no response.
    return ToolRecord(
        tool_name=name,
        call={"to": "moon"},
        result={"error": f"no tool {name!r} here", "status": "unknown_tool"},
        status="unknown_tool",
        turn=turn,
    )


BIG = [{"product_id": i, "name": f"Pour-over dripper model {i}", "price": 18.75} for i in range(60)]
LOGIN = rec("mcp_appworld_amazon__login", 1, {"username": "mina@example.com", "password": "pw"},
            {"access_token": TOKEN, "token_type": "Bearer"})  # fmt: skip
SEARCH = rec("mcp_appworld_amazon__search_products", 1, {"query": "dripper"}, BIG)
OLD_SHOW = show(1, 4101, 1)
CART = rec("mcp_appworld_amazon__add_product_to_cart", 1,
           {"access_token": TOKEN, "product_id": 1578, "quantity": 2},
           {"message": "Product/s added to the cart."})  # fmt: skip
REFUSED = rec(PLACE, 1, {"access_token": TOKEN, "payment_card_id": 9, "address_id": 1},
              {"message": "The payment card with id 9 does not exist."}, status="not_found")  # fmt: skip
PLACED = rec(PLACE, 1, {"access_token": TOKEN, "payment_card_id": 1, "address_id": 1},
             {"message": "Successfully placed the order.", "order_id": 4102})  # fmt: skip
NEW_SHOW = show(1, 4102, 2)
READ = ToolRecord(
    tool_name="read_file", call={"path": "notes.md"}, result={"response": {"content": "x"}}, turn=2
)
AGAIN = show(4, 4102, 2)

HISTORY = [
    LOGIN, SEARCH, OLD_SHOW, CART, REFUSED, PLACED, NEW_SHOW, unknown(1),  # turn 1
    READ,  # turn 2
    # turn 3: no call at all
    AGAIN, unknown(4, SHOW.removeprefix("mcp_appworld_")),  # turn 4
    unknown(5), unknown(5, PLACE),  # turn 5: only calls that never ran
]  # fmt: skip


RAN = [
    "mcp_appworld_amazon__login",
    "mcp_appworld_amazon__search_products",
    SHOW,
    "mcp_appworld_amazon__add_product_to_cart",
    PLACE,
    "read_file",
]
"""The tools of ``HISTORY`` that ran, in the order of their first call (turn 1's, then turn 2's)."""


def plain(record: ToolRecord) -> dict[str, Any]:
    return {"tool_name": record.tool_name, "call": dict(record.call), "result": dict(record.result)}


# ---------------------------------------------------------------- pi-Bench's per-turn records


def test_a_turn_gives_the_last_call_of_each_task_tool_at_its_first_position() -> None:
    # show_order came first (order 4101), then place_order twice, then show_order again (4102):
    # the dict pi-Bench fills keeps show_order first, holding its last call.
    assert turn_history(HISTORY, 1, TASK_TOOLS) == [plain(NEW_SHOW), plain(PLACED)]
    assert turn_history(HISTORY, 4, TASK_TOOLS) == [plain(AGAIN)]
    # Without a tools list every call of the turn is a candidate (never one that did not run).
    assert [r["tool_name"] for r in turn_history(HISTORY, 1, None)] == RAN[:-1]
    assert turn_history(HISTORY, 2, None) == [plain(READ)]


def test_names_are_matched_exactly() -> None:
    # A tools list naming amazon__place_order never matches the recorded mcp_appworld_ name.
    assert turn_history(HISTORY, 1, {"amazon__place_order", "amazon__show_order"}) == []
    assert turn_history(HISTORY, 1, {PLACE}) == [plain(PLACED)]


def test_a_turn_without_a_task_tool_falls_back_to_the_earlier_turns() -> None:
    # Turn 2 called only read_file: pi-Bench scans the session's message history instead.
    assert turn_history(HISTORY, 2, TASK_TOOLS) == [plain(NEW_SHOW), plain(PLACED)]
    # Turn 5 called nothing that ran: the last of each task tool over turns 1-4.
    assert turn_history(HISTORY, 5, TASK_TOOLS) == [plain(AGAIN), plain(PLACED)]
    # Turn 1 has no earlier turn to fall back to.
    assert turn_history([READ.model_copy(update={"turn": 1})], 1, TASK_TOOLS) == []


def test_the_fallback_holds_long_results_as_truncated_text() -> None:
    records = turn_history(HISTORY, 3, None)
    assert [r["tool_name"] for r in records] == RAN
    search = records[1]
    text = json.dumps(SEARCH.result, indent=2, ensure_ascii=False)
    assert len(text) > HISTORY_RESULT_CHARS == 3000
    assert search["result"] == text[:3000] + "\n... (truncated)"
    assert search["call"] == {"query": "dripper"}
    # Short results stay JSON.
    assert records[0]["result"] == LOGIN.result and records[4] == plain(PLACED)


def test_the_truncation_boundary_is_3000_characters() -> None:
    def sized(turn: int, extra: int) -> ToolRecord:
        return rec(SHOW, turn, {}, {"text": "x" * extra})

    fits = sized(1, 3000 - len(json.dumps({"response": {"text": ""}}, indent=2)))
    assert len(json.dumps(fits.result, indent=2)) == 3000
    assert turn_history([fits], 2, None)[0]["result"] == fits.result
    over = sized(1, 3001 - len(json.dumps({"response": {"text": ""}}, indent=2)))
    assert isinstance(turn_history([over], 2, None)[0]["result"], str)
    # A turn's own records are never truncated.
    assert turn_history([over], 1, None)[0]["result"] == over.result


def test_a_call_that_never_ran_reaches_no_scorer() -> None:
    listing_it = {*TASK_TOOLS, "amazon__teleport"}
    for turn in range(1, 7):
        for allowed in (None, TASK_TOOLS, listing_it):
            names = [r["tool_name"] for r in turn_history(HISTORY, turn, allowed)]
            assert "amazon__teleport" not in names and "amazon__show_order" not in names
    assert "amazon__teleport" not in [r["tool_name"] for r in faithful_history(HISTORY)]
    assert "amazon__teleport" not in [r["tool_name"] for r in corrected_history(HISTORY)]
    # Turn 5 made two calls that never ran: it falls back as if it had made none.
    assert turn_history(HISTORY, 5, None) == turn_history(HISTORY[:-2], 5, None)


# ---------------------------------------------------------------- the whole-session readings


def test_the_faithful_reading_keeps_the_last_call_per_exact_name() -> None:
    records = faithful_history(HISTORY)
    assert [r["tool_name"] for r in records] == RAN
    assert records[2] == plain(AGAIN) and records[4] == plain(PLACED)
    assert reading_of(HISTORY, "faithful") == records


def test_the_corrected_reading_keeps_every_call_under_canonical_names() -> None:
    history = [PLACED.model_copy(update={"tool_name": "amazon__place_order"}), *HISTORY]
    records = corrected_history(history)
    assert len(records) == len(history) - 4  # the four calls that never ran are left out
    assert records[0]["tool_name"] == PLACE  # canonicalised
    assert [r["call"].get("order_id") for r in records if r["tool_name"] == SHOW] == [4101, 4102, 4102]
    assert reading_of(history, "corrected") == records


def test_the_corrected_reading_turns_refusals_into_errors() -> None:
    denied = ToolRecord(
        tool_name="write_file",
        call={"path": "a.md", "content": "x"},
        result={"error": "write_file is denied by the policy", "status": "denied"},
        status="denied",
    )
    listed = rec(SHOW, 1, {"order_id": 9}, {"message": ["The order with id 9 does not exist."]}, "not_found")
    bare = ToolRecord(tool_name=PLACE, call={}, result={}, status="unauthorized")
    records = corrected_history([REFUSED, denied, listed, bare, PLACED])
    assert [r["result"] for r in records] == [
        {"error": "The payment card with id 9 does not exist.", "status": "not_found"},
        {"error": "write_file is denied by the policy", "status": "denied"},
        {"error": ["The order with id 9 does not exist."], "status": "not_found"},
        {"error": "unauthorized", "status": "unauthorized"},
        PLACED.result,
    ]
    # pi-Bench's reading shows the refusal as the assistant saw it: AppWorld's message.
    assert turn_history([REFUSED], 1, None)[0]["result"] == {
        "response": {"message": "The payment card with id 9 does not exist."}
    }


# ---------------------------------------------------------------- evidence for the rubric judge


def test_selected_evidence_is_cut_to_the_named_keys_and_paths() -> None:
    selections = [
        ToolSelection(
            tool_name="amazon__place_order",
            call=("payment_card_id", "coupon"),
            result=("response.order_id", "order_id", "message", "nope"),
        ),
        ToolSelection(tool_name="read_file"),
    ]
    corrected = select_evidence(HISTORY, selections, "corrected")
    assert corrected == [
        {
            "tool_name": PLACE,
            "call": {"payment_card_id": 9},
            "result": {},  # a refusal: {"error", "status"} holds none of the paths
        },
        {
            "tool_name": PLACE,
            "call": {"payment_card_id": 1},
            "result": {
                "response.order_id": 4102,
                "order_id": 4102,
                "message": "Successfully placed the order.",
            },
        },
        plain(READ),
    ]
    # The faithful reading matches names exactly: the selection's bare name matches nothing.
    assert select_evidence(HISTORY, selections[:1], "faithful") == []
    exact = ToolSelection(tool_name=SHOW, call=("order_id",), result=("order_items.product_id",))
    assert select_evidence(HISTORY, [exact], "faithful") == [
        {"tool_name": SHOW, "call": {"order_id": 4102}, "result": {"order_items.product_id": [1578]}}
    ]


def test_result_fields_walk_lists_and_the_response() -> None:
    result = {"response": {"order_items": [{"product_id": 1, "tags": ["a"]}, {"product_id": 2}]}}
    assert result_field(result, "order_items.product_id") == [1, 2]
    assert result_field(result, "response.order_items.1.product_id") == 2
    assert result_field(result, "order_items.0.tags.0") == "a"
    for missing in ("order_items.5", "order_items.price", "nothing"):
        with pytest.raises(KeyError):
            result_field(result, missing)


def test_turn_evidence_is_the_last_call_of_each_named_tool_in_that_turn() -> None:
    selections = [
        ToolSelection(tool_name=SHOW, call=("order_id",), result=("response.order_items",)),
        ToolSelection(tool_name=PLACE, result=("response.order_id",)),
        ToolSelection(tool_name="amazon__teleport"),
        ToolSelection(tool_name="mcp_appworld_amazon__login"),
    ]
    items = [{"product_id": 1578, "ordered_quantity": 2}]
    assert select_turn_evidence(HISTORY, 1, selections) == [
        {"tool_name": SHOW, "call": {"order_id": 4102}, "result": {"response.order_items": items}},
        {"tool_name": PLACE, "call": {}, "result": {"response.order_id": 4102}},
        plain(LOGIN),  # an entry naming no keys or paths keeps the whole record
    ]
    assert select_turn_evidence(HISTORY, 4, selections) == [
        {"tool_name": SHOW, "call": {"order_id": 4102}, "result": {"response.order_items": items}}
    ]
    assert select_turn_evidence(HISTORY, 2, selections) == []  # no fallback to earlier turns
    assert select_turn_evidence(HISTORY, 5, selections) == []  # calls that never ran show nothing


# ---------------------------------------------------------------- COMP


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


# ---------------------------------------------------------------- PROC, ours


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


# ---------------------------------------------------------------- PROC and COMP, pi-Bench's aggregation


BY_TASK = {
    "a": intents("inferred", "provided"),  # 1 of 2 covered
    "b": intents("completed", "open", "provided"),  # 1 of 3
    "c": intents("inferred"),  # 1 of 1
    "d": intents("provided", "provided"),  # 0 of 2
    "prep": [],  # a dependency without intents
}
DEPENDS = {"b": ["a"], "c": ["b"], "d": ["prep", "ghost"]}


def test_pibench_task_proc_pools_direct_dependencies_only() -> None:
    assert pibench_task_proc("a", BY_TASK, DEPENDS) == pytest.approx(1 / 2)
    assert pibench_task_proc("b", BY_TASK, DEPENDS) == pytest.approx((1 + 1) / (3 + 2))
    # c depends on b, which depends on a: only b is pooled with c (a is not a direct dependency).
    assert pibench_task_proc("c", BY_TASK, DEPENDS) == pytest.approx((1 + 1) / (1 + 3))
    # A dependency with no intents, or one that never ran, adds 0 of 0.
    assert pibench_task_proc("d", BY_TASK, DEPENDS) == 0.0
    # A task with no intents of its own has no PROC, whatever its dependencies hold.
    assert pibench_task_proc("prep", BY_TASK, {"prep": ["a"]}) is None
    assert pibench_task_proc("never_ran", BY_TASK, {"never_ran": ["a"]}) is None
    assert pibench_task_proc("a", BY_TASK, {"a": ["a"]}) == pytest.approx(1 / 2)  # itself once


def test_group_size_counts_the_task_and_everything_it_depends_on() -> None:
    assert [group_size(t, DEPENDS) for t in ("a", "b", "c", "d", "prep")] == [1, 2, 3, 3, 1]
    assert group_size("x", {"x": ["y"], "y": ["x"]}) == 2  # a cycle counts each task once


def test_weighted_mean_over_the_scores_that_exist() -> None:
    assert weighted_mean([(0.4, 2), (None, 5), (0.5, 3), (1.0, 1)]) == pytest.approx(
        (0.4 * 2 + 0.5 * 3 + 1.0 * 1) / (2 + 3 + 1)
    )
    assert weighted_mean([(0.0, 4)]) == 0.0
    assert weighted_mean([(None, 3)]) is None
    assert weighted_mean([]) is None


def test_a_personas_pibench_proc_weights_each_task_by_its_group() -> None:
    tasks = ["a", "b", "c", "d", "prep"]
    scores = [(pibench_task_proc(t, BY_TASK, DEPENDS), group_size(t, DEPENDS)) for t in tasks]
    assert scores == [
        (pytest.approx(0.5), 1),
        (pytest.approx(0.4), 2),
        (pytest.approx(0.5), 3),
        (0.0, 3),
        (None, 1),
    ]
    assert weighted_mean(scores) == pytest.approx((0.5 * 1 + 0.4 * 2 + 0.5 * 3 + 0.0 * 3) / (1 + 2 + 3 + 3))
