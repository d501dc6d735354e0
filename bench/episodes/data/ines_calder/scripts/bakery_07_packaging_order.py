"""Rule scorer of bakery_07_packaging_order (pi-Bench Appendix C.6 style).

Recovers the orders the agent placed from the successful ``place_order`` records (the card and
address of the call, the ``order_id`` of the response) and reads each as a later ``show_order`` of
the same order lists it (``order_items``, ``paid_amount``; the card and address too). Checks, over
all the orders together: the card and the address, the products (compostable pastry boxes only),
the number of boxes and the budget.
"""

from typing import Any

BUSINESS_CARD_ID = 2
BAKERY_ADDRESS_ID = 2
BOXES_PER_PACK = {4101: 50, 4103: 100}
BOXES_NEEDED = 85
BUDGET = 60.0


def _default_scores() -> dict[str, int]:
    return {
        "placed an order with the business card and the bakery address": 0,
        "the order contains only compostable pastry boxes": 0,
        "the order covers at least 85 pastry boxes": 0,
        "the order total is under 60 euros": 0,
    }


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()
    placed: dict[int, tuple[Any, Any]] = {}
    shown: dict[int, dict[str, Any]] = {}

    for item in tools_history:
        if not isinstance(item, dict):
            continue
        tool_name = str(item.get("tool_name") or "").strip()
        call_payload = item.get("call")
        raw_result = item.get("result")
        response = raw_result.get("response") if isinstance(raw_result, dict) else None
        if not isinstance(call_payload, dict) or not isinstance(response, dict):
            continue
        order_id = response.get("order_id")
        if not isinstance(order_id, int):
            continue
        if tool_name == "mcp_appworld_amazon__place_order":
            placed[order_id] = (call_payload.get("payment_card_id"), call_payload.get("address_id"))
        elif tool_name == "mcp_appworld_amazon__show_order":
            shown[order_id] = response

    if not placed:
        return result
    if all(card == BUSINESS_CARD_ID and address == BAKERY_ADDRESS_ID for card, address in placed.values()):
        result["placed an order with the business card and the bakery address"] = 1

    orders = [shown[order_id] for order_id in placed if order_id in shown]
    if not orders:
        return result
    boxes = 0
    total = 0.0
    only_compostable = True
    for order in orders:
        if isinstance(order.get("paid_amount"), int | float):
            total += float(order["paid_amount"])
        order_items = order.get("order_items")
        for order_item in order_items if isinstance(order_items, list) else []:
            if not isinstance(order_item, dict):
                continue
            product_id = order_item.get("product_id")
            quantity = order_item.get("ordered_quantity")
            if product_id not in BOXES_PER_PACK or not isinstance(quantity, int):
                only_compostable = False
                continue
            boxes += BOXES_PER_PACK[product_id] * quantity

    if only_compostable and boxes > 0:
        result["the order contains only compostable pastry boxes"] = 1
    if boxes >= BOXES_NEEDED:
        result["the order covers at least 85 pastry boxes"] = 1
    if len(orders) == len(placed) and 0 < total < BUDGET:
        result["the order total is under 60 euros"] = 1
    return result
