"""Rule scorer of cycling_07_storm_webhook (pi-Bench Appendix C.6 style).

Both the leader (Ben) and the sweep (Dev) of the 13 April ride must have been texted, each text
saying the ride is cancelled; nobody else on the ride leader list should have been texted about
it. A text counts from a successful ``send_text_message`` (the call's number and message, the
response's ``text_message_id``) or from a ``search_text_messages`` listing of the texts Tomas sent
that mention the cancellation (``receiver.phone_number``, ``message``): a listing after the last
text lets pi-Bench's reading, which keeps the last call of each tool per turn, see both.
"""

import re
from typing import Any

TOMAS = "4155550210"
BEN = "4155550212"
DEV = "4155550214"
OTHER_LEADERS = {"4155550211", "4155550213", "4155550217"}
CANCELLED = re.compile(r"cancel")


def _default_scores() -> dict[str, int]:
    return {
        "texted Ben Whitlock, the leader of the 13 April ride": 0,
        "texted Dev Patel, the sweep of the 13 April ride": 0,
        "the texts to Ben and Dev say the ride is cancelled": 0,
        "no other ride leader was texted": 0,
    }


def _digits(value: Any) -> str:
    return re.sub(r"\D", "", str(value or ""))


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
        if not isinstance(call_payload, dict):
            continue

        if tool_name == "mcp_appworld_phone__send_text_message":
            if isinstance(response, dict) and isinstance(response.get("text_message_id"), int):
                number = _digits(call_payload.get("phone_number"))
                messages.setdefault(number, []).append(str(call_payload.get("message") or "").lower())
        elif tool_name == "mcp_appworld_phone__search_text_messages" and isinstance(response, list):
            for text in response:
                if not isinstance(text, dict):
                    continue
                sender = text.get("sender") or {}
                receiver = text.get("receiver") or {}
                if not isinstance(sender, dict) or not isinstance(receiver, dict):
                    continue
                message = str(text.get("message") or "").lower()
                if _digits(sender.get("phone_number")) == TOMAS and CANCELLED.search(message):
                    messages.setdefault(_digits(receiver.get("phone_number")), []).append(message)

    if BEN in messages:
        result["texted Ben Whitlock, the leader of the 13 April ride"] = 1
    if DEV in messages:
        result["texted Dev Patel, the sweep of the 13 April ride"] = 1
    if all(any(CANCELLED.search(m) for m in messages.get(who, [])) for who in (BEN, DEV)):
        result["the texts to Ben and Dev say the ride is cancelled"] = 1
    if messages and not OTHER_LEADERS & set(messages):
        result["no other ride leader was texted"] = 1

    return result
