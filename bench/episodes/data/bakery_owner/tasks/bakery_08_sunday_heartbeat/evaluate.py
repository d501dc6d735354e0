"""Rule scorer of bakery_08_sunday_heartbeat (pi-Bench Appendix C.6 style).

Each staff member must have received a text of their own (matched on the response's phone number,
so a text sent by contact name or by number both count), and Dario's text must carry his Monday
start time.
"""

import re
from typing import Any

STAFF = {
    "15550141": "texted Dario Brandt",
    "15550142": "texted Mina Sato",
    "15550143": "texted Joss Keller",
}
DARIO = "15550141"
DARIO_MONDAY_START = "10:00"


def _default_scores() -> dict[str, int]:
    scores = dict.fromkeys(STAFF.values(), 0)
    scores["Dario's text says he starts at 10:00"] = 0
    return scores


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()

    for item in tools_history:
        if not isinstance(item, dict):
            continue
        tool_name = str(item.get("tool_name") or "").strip()
        call_payload = item.get("call")
        raw_result = item.get("result")
        response = raw_result.get("response") if isinstance(raw_result, dict) else None

        if tool_name != "mcp_appworld_phone__send_text_message":
            continue
        if not isinstance(call_payload, dict) or not isinstance(response, dict):
            continue
        if not isinstance(response.get("text_message_id"), int):
            continue
        digits = re.sub(r"\D", "", str(response.get("phone_number") or ""))
        if digits not in STAFF:
            continue
        result[STAFF[digits]] = 1
        if digits == DARIO and DARIO_MONDAY_START in str(call_payload.get("message") or ""):
            result["Dario's text says he starts at 10:00"] = 1

    return result
