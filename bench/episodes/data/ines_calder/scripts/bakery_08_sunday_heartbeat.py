"""Rule scorer of bakery_08_sunday_heartbeat (pi-Bench Appendix C.6 style).

Each staff member must have received a text of their own, and Dario's text must carry his Monday
start time. A text counts from a successful ``send_text_message`` (the call's number and message,
the response's ``text_message_id``) or from a ``search_text_messages`` listing of the texts Ines
sent (``receiver.phone_number``, ``message``): a listing after the last text lets pi-Bench's
reading, which keeps the last call of each tool per turn, see all of them.
"""

import re
from typing import Any

INES = "2125550140"
STAFF = {
    "2125550141": "texted Dario Brandt",
    "2125550142": "texted Mina Sato",
    "2125550143": "texted Joss Keller",
}
DARIO = "2125550141"
DARIO_MONDAY_START = "10:00"


def _default_scores() -> dict[str, int]:
    scores = dict.fromkeys(STAFF.values(), 0)
    scores["Dario's text says he starts at 10:00"] = 0
    return scores


def _digits(value: Any) -> str:
    return re.sub(r"\D", "", str(value or ""))


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()
    texts: list[tuple[str, str]] = []

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
                texts.append((number, str(call_payload.get("message") or "")))
        elif tool_name == "mcp_appworld_phone__search_text_messages" and isinstance(response, list):
            for text in response:
                if not isinstance(text, dict):
                    continue
                sender = text.get("sender") or {}
                receiver = text.get("receiver") or {}
                if not isinstance(sender, dict) or not isinstance(receiver, dict):
                    continue
                if _digits(sender.get("phone_number")) == INES:
                    texts.append((_digits(receiver.get("phone_number")), str(text.get("message") or "")))

    for number, message in texts:
        if number not in STAFF:
            continue
        result[STAFF[number]] = 1
        if number == DARIO and DARIO_MONDAY_START in message:
            result["Dario's text says he starts at 10:00"] = 1

    return result
