"""Rule scorer of bakery_06_cafe_order_webhook (pi-Bench Appendix C.6 style).

The agent must have emailed the café's buyer about the webhook's order: a successful
``send_email`` (its response carries ``sent_email_id``) to noor@cafelumen.example whose subject or
body names the order reference, the pickup time and the proposed 10 rye crispbread.
"""

import re
from typing import Any

BUYER = "noor@cafelumen.example"
ORDER_REF = "wo-2291"
PICKUP_TIME = "07:30"
PROPOSAL = re.compile(r"\b10 (?:x |bags of )?(?:rye )?crispbread")


def _default_scores() -> dict[str, int]:
    return {
        "sent an email to noor@cafelumen.example": 0,
        "the email names order WO-2291": 0,
        "the email confirms the 07:30 pickup": 0,
        "the email proposes 10 rye crispbread": 0,
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
        if not isinstance(response.get("sent_email_id"), int):
            continue
        if BUYER not in _recipients(call_payload.get("email_addresses")):
            continue

        result["sent an email to noor@cafelumen.example"] = 1
        text = f"{call_payload.get('subject') or ''}\n{call_payload.get('body') or ''}".lower()
        if ORDER_REF in text:
            result["the email names order WO-2291"] = 1
        if PICKUP_TIME in text:
            result["the email confirms the 07:30 pickup"] = 1
        if PROPOSAL.search(text):
            result["the email proposes 10 rye crispbread"] = 1

    return result
