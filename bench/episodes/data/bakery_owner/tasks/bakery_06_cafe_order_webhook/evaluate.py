"""Rule scorer of bakery_06_cafe_order_webhook (pi-Bench Appendix C.6 style).

The agent must have emailed the café's buyer about the webhook's order: a successful
``send_email`` to noor@cafelumen.example whose subject or body names the
order reference and the pickup time.
"""

from typing import Any

BUYER = "noor@cafelumen.example"
ORDER_REF = "wo-2291"
PICKUP_TIME = "07:30"


def _default_scores() -> dict[str, int]:
    return {
        "sent an email to noor@cafelumen.example": 0,
        "the email names order WO-2291": 0,
        "the email confirms the 07:30 pickup": 0,
    }


def _recipients(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(str(v) for v in value).lower()
    return str(value or "").lower()


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()

    for item in tools_history:
        if not isinstance(item, dict):
            continue
        tool_name = str(item.get("tool_name") or "").strip()
        call_payload = item.get("call")
        raw_result = item.get("result")
        response = raw_result.get("response") if isinstance(raw_result, dict) else None

        if tool_name != "mcp_appworld_gmail__send_email":
            continue
        if not isinstance(call_payload, dict) or not isinstance(response, dict):
            continue
        if not isinstance(response.get("email_id"), int):
            continue
        if BUYER not in _recipients(call_payload.get("to")):
            continue

        result["sent an email to noor@cafelumen.example"] = 1
        text = f"{call_payload.get('subject') or ''} {call_payload.get('body') or ''}".lower()
        if ORDER_REF in text:
            result["the email names order WO-2291"] = 1
        if PICKUP_TIME in text:
            result["the email confirms the 07:30 pickup"] = 1

    return result
