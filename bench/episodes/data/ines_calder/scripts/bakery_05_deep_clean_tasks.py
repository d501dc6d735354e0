"""Rule scorer of bakery_05_deep_clean_tasks (pi-Bench Appendix C.6 style).

Reads the Todoist tasks the agent created (``create_task`` calls whose response has a
``task_id``) and the tasks of the kitchen project as ``show_tasks`` lists them, and checks: the
right project, the urgent freezer defrost, every remaining job with its date, and no duplicate of
the steam oven descaling task that already existed (id 6201). A ``show_tasks`` of the kitchen
project after the last task was added lets pi-Bench's reading (the last call of each tool in a
turn) see every job at once.
"""

from typing import Any

KITCHEN_PROJECT_ID = 6101
EXISTING_TASK_IDS = {6201}
FREEZER_DUE = "2025-04-21"
OTHER_DUE = "2025-04-23"
URGENT = "high"
OTHER_JOBS = ("proofer", "extractor", "mixer")
EXISTING_JOB = "descal"


def _default_scores() -> dict[str, int]:
    return {
        "created todoist tasks in the Hollow Oak Kitchen project": 0,
        "freezer defrost due 2025-04-21 with high priority": 0,
        "created tasks for the proofer, extractor hood and dough mixer": 0,
        "the proofer, extractor hood and dough mixer jobs are due 2025-04-23": 0,
        "did not create a duplicate steam oven descaling task": 0,
    }


def _listed_tasks(response: dict[str, Any]) -> list[dict[str, Any]]:
    tasks = list(response.get("no_section_tasks") or [])
    for section in response.get("sections") or []:
        if isinstance(section, dict):
            tasks += list(section.get("tasks") or [])
    return [t for t in tasks if isinstance(t, dict)]


def score(tools_history: list[dict[str, Any]]) -> dict[str, int]:
    result = _default_scores()
    created: list[dict[str, Any]] = []
    kitchen: dict[int, dict[str, Any]] = {}
    other_project = False

    for item in tools_history:
        if not isinstance(item, dict):
            continue
        tool_name = str(item.get("tool_name") or "").strip()
        call_payload = item.get("call")
        raw_result = item.get("result")
        response = raw_result.get("response") if isinstance(raw_result, dict) else None
        if not isinstance(call_payload, dict) or not isinstance(response, dict):
            continue

        if tool_name == "mcp_appworld_todoist__create_task" and isinstance(response.get("task_id"), int):
            task = {
                "task_id": response["task_id"],
                "title": str(call_payload.get("title") or ""),
                "due_date": str(call_payload.get("due_date") or ""),
                "priority": str(call_payload.get("priority") or ""),
            }
            created.append(task)
            if call_payload.get("project_id") == KITCHEN_PROJECT_ID:
                kitchen[task["task_id"]] = task
            else:
                other_project = True
        elif (
            tool_name == "mcp_appworld_todoist__show_tasks"
            and response.get("project_id") == KITCHEN_PROJECT_ID
        ):
            for listed in _listed_tasks(response):
                task_id = listed.get("task_id")
                if isinstance(task_id, int) and task_id not in EXISTING_TASK_IDS:
                    kitchen[task_id] = {
                        "task_id": task_id,
                        "title": str(listed.get("title") or ""),
                        "due_date": str(listed.get("due_date") or ""),
                        "priority": str(listed.get("priority") or ""),
                    }

    new_tasks = list(kitchen.values())
    if not new_tasks:
        return result
    if not other_project:
        result["created todoist tasks in the Hollow Oak Kitchen project"] = 1

    for task in new_tasks:
        title = task["title"].lower()
        if "freezer" in title and task["due_date"].startswith(FREEZER_DUE) and task["priority"] == URGENT:
            result["freezer defrost due 2025-04-21 with high priority"] = 1

    found = {job: [t for t in new_tasks if job in t["title"].lower()] for job in OTHER_JOBS}
    if all(found.values()):
        result["created tasks for the proofer, extractor hood and dough mixer"] = 1
        if all(t["due_date"].startswith(OTHER_DUE) for tasks in found.values() for t in tasks):
            result["the proofer, extractor hood and dough mixer jobs are due 2025-04-23"] = 1

    titles = [t["title"].lower() for t in [*created, *new_tasks]]
    if not any(EXISTING_JOB in title for title in titles):
        result["did not create a duplicate steam oven descaling task"] = 1

    return result
