"""Rule scorer of cycling_01_committee_minutes (pi-Bench Appendix C.6 style).

Follows the notes the agent created (``create_note`` calls whose response has a ``note_id``) and
any later ``update_note`` of them, and checks the title, the action owners, the tag and the key
decision.
"""

from typing import Any

TITLE = "2025-03-04 committee minutes"
OWNERS = ("aisha", "ben", "carla", "tomas")
TAG = "committee"
NEW_START = "08:30"


def _default_scores() -> dict[str, int]:
    return {
        "created a note titled '2025-03-04 Committee minutes'": 0,
        "the note names the action owners Aisha, Ben, Carla and Tomas": 0,
        "the note is tagged committee": 0,
        "the note records the 08:30 Sunday start": 0,
    }


def _tags(value: Any) -> list[str]:
    return [str(t).strip().lower() for t in value] if isinstance(value, list) else []


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()
    notes: dict[int, dict[str, Any]] = {}

    for item in tools_history:
        if not isinstance(item, dict):
            continue
        tool_name = str(item.get("tool_name") or "").strip()
        call_payload = item.get("call")
        raw_result = item.get("result")
        response = raw_result.get("response") if isinstance(raw_result, dict) else None
        if not isinstance(call_payload, dict) or not isinstance(response, dict):
            continue

        if tool_name == "mcp_appworld_simple_note__create_note" and isinstance(response.get("note_id"), int):
            notes[response["note_id"]] = {
                "title": str(call_payload.get("title") or ""),
                "content": str(call_payload.get("content") or ""),
                "tags": _tags(call_payload.get("tags")),
            }
        elif (
            tool_name == "mcp_appworld_simple_note__update_note"
            and "updated" in str(response.get("message") or "").lower()
        ):
            note_id = call_payload.get("note_id")
            note = notes.get(note_id) if isinstance(note_id, int) else None
            if note is None:
                continue
            for field in ("title", "content"):
                if isinstance(call_payload.get(field), str):
                    note[field] = call_payload[field]
            if isinstance(call_payload.get("tags"), list):
                note["tags"] = _tags(call_payload["tags"])

    for note in notes.values():
        if " ".join(note["title"].lower().split()) != TITLE:
            continue
        result["created a note titled '2025-03-04 Committee minutes'"] = 1
        content = note["content"].lower()
        if all(owner in content for owner in OWNERS):
            result["the note names the action owners Aisha, Ben, Carla and Tomas"] = 1
        if TAG in note["tags"]:
            result["the note is tagged committee"] = 1
        if NEW_START in content:
            result["the note records the 08:30 Sunday start"] = 1

    return result
