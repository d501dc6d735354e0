"""Rule scorer of cycling_09_trip_expenses (pi-Bench Appendix C.6 style).

Reads the successful ``record_expense`` calls and checks each receipt was recorded once in the
'Lakes Trip 2025' group (7101) with the right payer and split.
"""

from typing import Any

GROUP_ID = 7101
RIDERS = frozenset(
    {
        "tomas ferreira", "aisha rahman", "ben whitlock", "carla mendes",
        "dev patel", "elif demir", "femi adeyemi", "greta lindqvist",
    }
)  # fmt: skip
FERRY_GROUP = frozenset({"ben whitlock", "dev patel", "elif demir", "greta lindqvist"})
SHARED = {512.0: "tomas ferreira", 180.0: "tomas ferreira", 144.0: "aisha rahman", 112.0: "greta lindqvist"}
FERRY = (48.0, "ben whitlock")


def _default_scores() -> dict[str, int]:
    return {
        "recorded the 512.00 hostel paid by Tomas in the Lakes Trip 2025 group": 0,
        "recorded the van, dinner and train with their payers": 0,
        "split the shared costs among all eight riders": 0,
        "split the 48.00 ferry paid by Ben among Ben, Dev, Elif and Greta only": 0,
        "recorded nothing in any other group": 0,
    }


def _among(call_payload: dict[str, Any]) -> frozenset[str]:
    names = call_payload.get("split_among")
    if names is None:
        return RIDERS  # the app splits among every member by default
    if not isinstance(names, list):
        return frozenset()
    return frozenset(" ".join(str(n).lower().split()) for n in names)


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()
    recorded: list[tuple[float, str, frozenset[str]]] = []
    other_group = False

    for item in tools_history:
        if not isinstance(item, dict):
            continue
        tool_name = str(item.get("tool_name") or "").strip()
        call_payload = item.get("call")
        raw_result = item.get("result")
        response = raw_result.get("response") if isinstance(raw_result, dict) else None

        if tool_name != "mcp_appworld_splitwise__record_expense":
            continue
        if not isinstance(call_payload, dict) or not isinstance(response, dict):
            continue
        if not isinstance(response.get("expense_id"), int):
            continue
        if call_payload.get("group_id") != GROUP_ID:
            other_group = True
            continue
        amount = call_payload.get("amount")
        if not isinstance(amount, int | float):
            continue
        payer = " ".join(str(call_payload.get("paid_by") or "").lower().split())
        recorded.append((round(float(amount), 2), payer, _among(call_payload)))

    def found(amount: float, payer: str) -> list[frozenset[str]]:
        return [among for a, p, among in recorded if a == amount and p == payer]

    if found(512.0, "tomas ferreira"):
        result["recorded the 512.00 hostel paid by Tomas in the Lakes Trip 2025 group"] = 1
    if all(found(a, p) for a, p in SHARED.items() if a != 512.0):
        result["recorded the van, dinner and train with their payers"] = 1
    shared = [among for a, p in SHARED.items() for among in found(a, p)]
    if len(shared) >= len(SHARED) and all(among == RIDERS for among in shared):
        result["split the shared costs among all eight riders"] = 1
    ferry = found(*FERRY)
    if ferry and all(among == FERRY_GROUP for among in ferry):
        result["split the 48.00 ferry paid by Ben among Ben, Dev, Elif and Greta only"] = 1
    if recorded and not other_group:
        result["recorded nothing in any other group"] = 1

    return result
