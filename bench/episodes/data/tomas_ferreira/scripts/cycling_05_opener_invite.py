"""Rule scorer of cycling_05_opener_invite (pi-Bench Appendix C.6 style).

The invitation must be a successful ``send_email`` (its response carries ``sent_email_id``) to
the club list whose subject or body gives the date and time, the place and the reply-by date.
"""

import re
from typing import Any

CLUB_LIST = "riders@riversidespokes.example"
PARTY_DATE = re.compile(r"\b(5 april|april 5|5th april|april 5th|2025-04-05|5/4|05/04)\b")
PARTY_TIME = re.compile(r"\b(16:00|4 ?pm|4:00 ?pm)\b")
REPLY_BY = re.compile(r"\b(1 april|april 1|1st april|april 1st|2025-04-01|1/4|01/04)\b")


def _default_scores() -> dict[str, int]:
    return {
        "sent the invitation to riders@riversidespokes.example": 0,
        "the invitation gives Saturday 5 April at 16:00": 0,
        "the invitation names the boathouse": 0,
        "the invitation asks for replies by 1 April": 0,
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
        if CLUB_LIST not in _recipients(call_payload.get("email_addresses")):
            continue

        result["sent the invitation to riders@riversidespokes.example"] = 1
        text = f"{call_payload.get('subject') or ''}\n{call_payload.get('body') or ''}".lower()
        if PARTY_DATE.search(text) and PARTY_TIME.search(text):
            result["the invitation gives Saturday 5 April at 16:00"] = 1
        if "boathouse" in text:
            result["the invitation names the boathouse"] = 1
        if REPLY_BY.search(text):
            result["the invitation asks for replies by 1 April"] = 1

    return result
