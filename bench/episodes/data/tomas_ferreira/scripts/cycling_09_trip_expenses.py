"""Rule scorer of cycling_09_trip_expenses (pi-Bench Appendix C.6 style).

Reads the expenses the agent recorded (``record_expense`` calls whose response has an
``expense_id``: group, amount, payer and debtors of the call) and the expenses of the 'Lakes Trip
2025' group (7101) as ``show_group_expenses`` lists them (``paid_amount``, ``payer``, ``shares``),
and checks that each receipt was recorded there with the right payer and an equal split among the
right riders. A listing after the last receipt lets pi-Bench's reading (the last call of each tool
per turn) see the four shared receipts; the listing shows only the expenses Tomas takes part in,
so there the ferry counts only as the last ``record_expense``.
"""

from typing import Any

LAKES_GROUP = 7101
RIDERS = frozenset(
    {
        "tomas@riversidespokes.example", "aisha@riversidespokes.example", "ben.whitlock@example.com",
        "carla.mendes@example.com", "dev.patel@example.com", "elif.demir@example.com",
        "femi.adeyemi@example.com", "greta.l@example.com",
    }
)  # fmt: skip
FERRY_GROUP = frozenset(
    {"ben.whitlock@example.com", "dev.patel@example.com", "elif.demir@example.com", "greta.l@example.com"}
)
SHARED = {
    512.0: "tomas@riversidespokes.example",
    180.0: "tomas@riversidespokes.example",
    144.0: "aisha@riversidespokes.example",
    112.0: "greta.l@example.com",
}
FERRY = (48.0, "ben.whitlock@example.com")


def _default_scores() -> dict[str, int]:
    return {
        "recorded the 512.00 hostel paid by Tomas in the Lakes Trip 2025 group": 0,
        "recorded the van, dinner and train with their payers": 0,
        "split the shared costs equally among all eight riders": 0,
        "split the 48.00 ferry paid by Ben equally among Ben, Dev, Elif and Greta only": 0,
        "recorded nothing in any other group": 0,
    }


def _email(value: Any) -> str:
    return str(value or "").strip().lower()


def _equal(amounts: list[float], total: float) -> bool:
    if not amounts:
        return False
    share = total / len(amounts)
    return all(abs(a - share) <= 0.011 for a in amounts) and abs(sum(amounts) - total) <= 0.05


Expense = tuple[float, str, frozenset[str], bool]
"""(amount, payer email, debtor emails, split equally)."""


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()
    recorded: dict[Any, Expense] = {}
    other_group = False

    for item in tools_history:
        if not isinstance(item, dict):
            continue
        tool_name = str(item.get("tool_name") or "").strip()
        call_payload = item.get("call")
        raw_result = item.get("result")
        response = raw_result.get("response") if isinstance(raw_result, dict) else None
        if not isinstance(call_payload, dict):
            continue

        if tool_name == "mcp_appworld_splitwise__record_expense":
            if not isinstance(response, dict) or not isinstance(response.get("expense_id"), int):
                continue
            if call_payload.get("group_id") != LAKES_GROUP:
                other_group = True
                continue
            amount = call_payload.get("paid_amount")
            debtors = call_payload.get("debtor_emails")
            if not isinstance(amount, int | float) or not isinstance(debtors, list):
                continue
            shares = call_payload.get("debt_amounts")
            if isinstance(shares, list) and all(isinstance(s, int | float) for s in shares):
                equal = _equal([float(s) for s in shares], float(amount))
            else:
                equal = True  # the app splits equally when no debt amounts are given
            recorded[response["expense_id"]] = (
                round(float(amount), 2),
                _email(call_payload.get("payer_email")),
                frozenset(_email(d) for d in debtors),
                equal,
            )
        elif tool_name == "mcp_appworld_splitwise__show_group_expenses" and isinstance(response, list):
            if call_payload.get("group_id") != LAKES_GROUP:
                continue
            for expense in response:
                if not isinstance(expense, dict) or expense.get("deleted"):
                    continue
                amount = expense.get("paid_amount")
                shares = [s for s in expense.get("shares") or [] if isinstance(s, dict)]
                if not isinstance(amount, int | float) or not shares:
                    continue
                payer = expense.get("payer") or {}
                if not isinstance(payer, dict):
                    continue
                debtors = frozenset(
                    _email(s["debtor"].get("email")) for s in shares if isinstance(s.get("debtor"), dict)
                )
                amounts = [float(s.get("debt_amount") or 0.0) for s in shares]
                recorded[expense.get("expense_id")] = (
                    round(float(amount), 2),
                    _email(payer.get("email")),
                    debtors,
                    _equal(amounts, float(amount)),
                )

    def found(amount: float, payer: str) -> list[Expense]:
        return [e for e in recorded.values() if e[0] == amount and e[1] == payer]

    if found(512.0, SHARED[512.0]):
        result["recorded the 512.00 hostel paid by Tomas in the Lakes Trip 2025 group"] = 1
    if all(found(a, p) for a, p in SHARED.items() if a != 512.0):
        result["recorded the van, dinner and train with their payers"] = 1
    shared = [e for a, p in SHARED.items() for e in found(a, p)]
    if all(found(a, p) for a, p in SHARED.items()) and all(e[2] == RIDERS and e[3] for e in shared):
        result["split the shared costs equally among all eight riders"] = 1
    ferry = found(*FERRY)
    if ferry and all(e[2] == FERRY_GROUP and e[3] for e in ferry):
        result["split the 48.00 ferry paid by Ben equally among Ben, Dev, Elif and Greta only"] = 1
    if recorded and not other_group:
        result["recorded nothing in any other group"] = 1

    return result
