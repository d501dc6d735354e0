"""Rule scorer of cycling_07_storm_webhook (pi-Bench Appendix C.6 style).

Both the leader (Ben) and the sweep (Dev) of the 13 April ride must have been texted (matched on
the response's phone number), each text saying the ride is cancelled; nobody else on the ride
leader list should have been texted about it.
"""

import re
from typing import Any

BEN = "15550212"
DEV = "15550214"
OTHER_LEADERS = {"15550211", "15550213", "15550217"}
CANCELLED = re.compile(r"cancel")


def _default_scores() -> dict[str, int]:
    return {
        "texted Ben Whitlock, the leader of the 13 April ride": 0,
        "texted Dev Patel, the sweep of the 13 April ride": 0,
        "the texts to Ben and Dev say the ride is cancelled": 0,
        "no other ride leader was texted": 0,
    }


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()
    messages: dict[str, list[str]] = {}

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
        messages.setdefault(digits, []).append(str(call_payload.get("message") or "").lower())

    if BEN in messages:
        result["texted Ben Whitlock, the leader of the 13 April ride"] = 1
    if DEV in messages:
        result["texted Dev Patel, the sweep of the 13 April ride"] = 1
    if all(any(CANCELLED.search(m) for m in messages.get(who, [])) for who in (BEN, DEV)):
        result["the texts to Ben and Dev say the ride is cancelled"] = 1
    if messages and not OTHER_LEADERS & set(messages):
        result["no other ride leader was texted"] = 1

    return result
