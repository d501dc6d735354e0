"""Rule scorer of bakery_05_deep_clean_tasks (pi-Bench Appendix C.6 style).

Reads the tool history (``tool_name``, ``call``, ``result.response``) and checks the Todoist
tasks the agent created: right project, the urgent freezer defrost, every remaining job, and no
duplicate of the descaling task that already existed (id 6201).
"""

from typing import Any

KITCHEN_PROJECT_ID = 6101
FREEZER_DUE = "2025-04-21"
URGENT = 4
OTHER_JOBS = ("proofer", "extractor", "mixer")
EXISTING_JOB = "descale"


def _default_scores() -> dict[str, int]:
    return {
        "created todoist tasks in the Hollow Oak Kitchen project": 0,
        "freezer defrost due 2025-04-21 with priority 4": 0,
        "created tasks for the proofer, extractor hood and dough mixer": 0,
        "did not create a duplicate steam oven descaling task": 0,
    }


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()
    created: list[dict[str, Any]] = []

    for item in tools_history:
        if not isinstance(item, dict):
            continue
        tool_name = str(item.get("tool_name") or "").strip()
        call_payload = item.get("call")
        raw_result = item.get("result")
        response = raw_result.get("response") if isinstance(raw_result, dict) else None
        if tool_name != "mcp_appworld_todoist__create_task":
            continue
        if not isinstance(call_payload, dict) or not isinstance(response, dict):
            continue
        if not isinstance(response.get("task_id"), int):
            continue
        created.append(call_payload)

    in_kitchen = [c for c in created if c.get("project_id") == KITCHEN_PROJECT_ID]
    if in_kitchen and len(in_kitchen) == len(created):
        result["created todoist tasks in the Hollow Oak Kitchen project"] = 1

    for call in in_kitchen:
        content = str(call.get("content") or "").lower()
        due_date = str(call.get("due_date") or "")
        if "freezer" in content and due_date.startswith(FREEZER_DUE) and call.get("priority") == URGENT:
            result["freezer defrost due 2025-04-21 with priority 4"] = 1

    contents = " ".join(str(c.get("content") or "").lower() for c in in_kitchen)
    if all(job in contents for job in OTHER_JOBS):
        result["created tasks for the proofer, extractor hood and dough mixer"] = 1

    if created and EXISTING_JOB not in " ".join(str(c.get("content") or "").lower() for c in created):
        result["did not create a duplicate steam oven descaling task"] = 1

    return result
