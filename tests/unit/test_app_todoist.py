"""The todoist app on AppWorld's surface: accounts, projects, sections, tasks, sub-tasks, labels,
comments and notifications, with AppWorld's refusals and side effects."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.apps import AppSession
from world.episodes.apps import ALL_TOOLS

T = "todoist__"
OTHER_APP = sorted(t.app for t in ALL_TOOLS if t.app not in (None, "todoist") and t.api.endswith("__login"))[
    0
]
LAURA, STEVEN, NINA = "la-mcco@gmail.com", "stmcco@gmail.com", "nina@example.com"
NOT_COLLABORATOR = "You are not a collaborator of this project and so are not authorized to access it."

SEED: dict[str, Any] = {
    "start_time": "2025-05-05T09:00:00",
    "people": [
        {
            "first_name": "Laura",
            "last_name": "Mccoy",
            "email": LAURA,
            "accounts": {"todoist": "pw-laura", OTHER_APP: "pw-other"},
        },
        {"first_name": "Steven", "last_name": "Mccoy", "email": STEVEN, "accounts": {"todoist": "Ozz21Q4"}},
        {"first_name": "Nina", "last_name": "Park", "email": NINA, "accounts": {"todoist": "pw-nina"}},
    ],
    "apps": {
        "todoist": {
            "projects": [
                {
                    "project_id": 10,
                    "user_id": 1,
                    "name": "Garden",
                    "color": "green",
                    "description": "Backyard work",
                    "is_inbox": False,
                    "is_favorite": True,
                    "is_archived": False,
                    "collaborator_ids": [1, 2],
                    "created_at": "2025-05-01T09:00:00",
                },
                {
                    "project_id": 11,
                    "user_id": 1,
                    "name": "Inbox",
                    "color": "charcoal",
                    "description": "",
                    "is_inbox": True,
                    "is_favorite": False,
                    "is_archived": False,
                    "collaborator_ids": [1],
                    "created_at": "2025-04-01T09:00:00",
                },
                {
                    "project_id": 12,
                    "user_id": 3,
                    "name": "Nina's plans",
                    "color": "blue",
                    "description": "",
                    "is_inbox": False,
                    "is_favorite": False,
                    "is_archived": False,
                    "collaborator_ids": [3],
                    "created_at": "2025-05-02T09:00:00",
                },
            ],
            "sections": [
                {
                    "section_id": 20,
                    "project_id": 10,
                    "name": "Beds",
                    "order_index": 0,
                    "created_at": "2025-05-01T09:00:00",
                },
                {
                    "section_id": 21,
                    "project_id": 10,
                    "name": "Tools",
                    "order_index": 1,
                    "created_at": "2025-05-01T09:00:00",
                },
                {
                    "section_id": 22,
                    "project_id": 12,
                    "name": "Other",
                    "order_index": 0,
                    "created_at": "2025-05-02T09:00:00",
                },
            ],
            "tasks": [
                {
                    "task_id": 30,
                    "project_id": 10,
                    "section_id": None,
                    "user_id": 1,
                    "title": "Buy seeds",
                    "description": "Tomatoes and beans",
                    "due_date": "2025-05-10T00:00:00",
                    "priority": "low",
                    "is_completed": False,
                    "duration": None,
                    "duration_unit": None,
                    "order_index": 0,
                    "assignee_id": None,
                    "assigner_id": None,
                    "label_ids": [40],
                    "created_at": "2025-05-01T09:00:00",
                },
                {
                    "task_id": 31,
                    "project_id": 10,
                    "section_id": 20,
                    "user_id": 1,
                    "title": "Dig the beds",
                    "description": "",
                    "due_date": "2025-05-03T00:00:00",
                    "priority": "high",
                    "is_completed": False,
                    "duration": 2.0,
                    "duration_unit": "hours",
                    "order_index": 0,
                    "assignee_id": None,
                    "assigner_id": None,
                    "label_ids": [],
                    "created_at": "2025-05-01T09:00:00",
                },
                {
                    "task_id": 32,
                    "project_id": 10,
                    "section_id": None,
                    "user_id": 2,
                    "title": "Water plants",
                    "description": "",
                    "due_date": "2025-05-05T00:00:00",
                    "priority": "medium",
                    "is_completed": True,
                    "duration": None,
                    "duration_unit": None,
                    "order_index": 1,
                    "assignee_id": None,
                    "assigner_id": None,
                    "label_ids": [],
                    "created_at": "2025-05-01T09:00:00",
                },
                {
                    "task_id": 33,
                    "project_id": 12,
                    "section_id": None,
                    "user_id": 3,
                    "title": "Nina's task",
                    "description": "",
                    "due_date": None,
                    "priority": "medium",
                    "is_completed": False,
                    "order_index": 0,
                    "label_ids": [],
                    "created_at": "2025-05-02T09:00:00",
                },
            ],
            "sub_tasks": [
                {
                    "sub_task_id": 50,
                    "task_id": 31,
                    "title": "Rent a tiller",
                    "description": "",
                    "due_date": None,
                    "priority": "medium",
                    "is_completed": False,
                    "duration": None,
                    "duration_unit": None,
                    "order_index": 0,
                    "created_at": "2025-05-01T09:00:00",
                }
            ],
            "labels": [
                {"label_id": 40, "user_id": 1, "name": "urgent", "color": "red"},
                {"label_id": 41, "user_id": 1, "name": "garden", "color": "green"},
                {"label_id": 42, "user_id": 3, "name": "nina-label", "color": "blue"},
            ],
            "task_comments": [
                {
                    "task_comment_id": 60,
                    "task_id": 30,
                    "user_id": 2,
                    "content": "I can pick them up.",
                    "attachment_file_names": [],
                    "created_at": "2025-05-02T09:00:00",
                }
            ],
            "notifications": [
                {
                    "notification_id": 70,
                    "user_id": 1,
                    "type": "task_added",
                    "title": "A new task is added.",
                    "message": "Steven Mccoy added a task.",
                    "read": False,
                    "data": {"project_id": 10, "task_id": 32, "action_by_id": 2},
                    "created_at": "2025-05-04T10:00:00",
                },
                {
                    "notification_id": 71,
                    "user_id": 1,
                    "type": "project_updated",
                    "title": "Project updated.",
                    "message": "Steven Mccoy updated Garden.",
                    "read": True,
                    "data": {"project_id": 10, "action_by_id": 2},
                    "created_at": "2025-05-03T10:00:00",
                },
                {
                    "notification_id": 72,
                    "user_id": 2,
                    "type": "project_updated",
                    "title": "Project updated.",
                    "message": "Laura Mccoy updated Garden.",
                    "read": False,
                    "data": {"project_id": 10, "action_by_id": 1},
                    "created_at": "2025-05-03T10:00:00",
                },
            ],
        }
    },
}

WORK_KEYS = {
    "title",
    "description",
    "due_date",
    "priority",
    "is_completed",
    "duration",
    "duration_unit",
    "order_index",
}
"""What tasks and sub-tasks both show."""
TASK_SHORT_KEYS = WORK_KEYS | {"task_id", "num_sub_tasks", "assignee_id", "labels"}
TASK_KEYS = WORK_KEYS | {
    "project_id",
    "section_id",
    "assignee_id",
    "assigner_id",
    "created_at",
    "task_id",
    "labels",
    "creator",
    "num_sub_tasks",
}
SUB_TASK_KEYS = WORK_KEYS | {"task_id", "created_at", "sub_task_id"}
PROJECT_KEYS = {
    "name",
    "color",
    "is_inbox",
    "description",
    "is_favorite",
    "is_archived",
    "created_at",
    "project_id",
    "creator",
    "num_tasks",
    "sections",
    "collaborators",
    "pending_invites",
    "is_shared",
}


@pytest.fixture
def s() -> AppSession:
    return AppSession(SEED)


def laura(s: AppSession) -> str:
    return s.login("todoist", LAURA, "pw-laura")


def steven(s: AppSession) -> str:
    return s.login("todoist", STEVEN, "Ozz21Q4")


def rows(s: AppSession, collection: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = s.state.apps["todoist"].get(collection, [])
    return data


def record(s: AppSession, collection: str, key: str, record_id: int) -> dict[str, Any] | None:
    return next((r for r in rows(s, collection) if r[key] == record_id), None)


def notifications_of(s: AppSession, user_id: int) -> list[dict[str, Any]]:
    return [n for n in rows(s, "notifications") if n["user_id"] == user_id]


# ---------------------------------------------------------------- accounts


def test_login_logout_and_tokens(s: AppSession) -> None:
    response = s.ok(T + "login", username=LAURA, password="pw-laura")
    assert response["token_type"] == "Bearer" and response["access_token"]
    assert s.refused(T + "login", "unauthorized", username=LAURA, password="wrong") == "Invalid credentials"
    foreign = s.login(OTHER_APP, LAURA, "pw-other")
    message = s.refused(T + "show_projects", "unauthorized", access_token=foreign)
    assert "todoist API endpoint" in message
    token = response["access_token"]
    assert s.ok(T + "logout", access_token=token) == {"message": "Successfully logged out."}
    s.refused(T + "show_projects", "unauthorized", access_token=token)


def test_search_users_ranks_and_pages(s: AppSession) -> None:
    found = s.ok(T + "search_users", query="nina")
    assert found[0] == {
        "first_name": "Nina",
        "last_name": "Park",
        "email": NINA,
        "registered_at": found[0]["registered_at"],
    }
    assert {u["email"] for u in found} == {LAURA, STEVEN, NINA}  # a query ranks, never filters
    assert [u["email"] for u in s.ok(T + "search_users", page_limit=2, page_index=1)] == [NINA]
    s.refused(T + "search_users", "invalid_args", page_limit=21)


# ---------------------------------------------------------------- tasks


def test_create_task_in_inbox_uses_or_makes_the_inbox(s: AppSession) -> None:
    token = laura(s)
    created = s.ok(T + "create_task", access_token=token, project_id=0, title="Call the plumber")
    assert created == {"message": "Task created.", "task_id": created["task_id"]}
    assert record(s, "tasks", "task_id", created["task_id"])["project_id"] == 11  # type: ignore[index]
    before = len(rows(s, "projects"))
    other = steven(s)
    made = s.ok(
        T + "create_task",
        access_token=other,
        project_id=0,
        title="Buy stamps",
        due_date="2026-04-03",
        priority="high",
        duration=0.5,
        duration_unit="hours",
    )
    assert len(rows(s, "projects")) == before + 1
    inbox = rows(s, "projects")[-1]
    assert inbox["is_inbox"] and inbox["user_id"] == 2 and inbox["name"] == "Inbox"
    shown = s.ok(T + "show_task", access_token=other, task_id=made["task_id"])
    assert set(shown) == TASK_KEYS
    assert shown["project_id"] == inbox["project_id"]
    assert shown["due_date"] == "2026-04-03T00:00:00"
    assert (shown["priority"], shown["description"], shown["is_completed"]) == ("high", "", False)
    assert shown["creator"] == {"name": "Steven Mccoy", "email": STEVEN}
    assert s.ok(T + "show_project", access_token=other, project_id=0)["project_id"] == inbox["project_id"]


def test_create_task_refusals(s: AppSession) -> None:
    token = laura(s)
    message = s.refused(
        T + "create_task", "invalid_args", access_token=token, project_id=10, title="x", due_date="05/01/2024"
    )
    assert message == "Invalid due_date format. Use YYYY-MM-DD."
    s.refused(
        T + "create_task", "invalid_args", access_token=token, project_id=10, title="x", priority="urgent"
    )
    s.refused(T + "create_task", "invalid_args", access_token=token, project_id=10, title="")
    s.refused(T + "create_task", "invalid_args", access_token=token, project_id=10)
    missing = s.refused(T + "create_task", "not_found", access_token=token, project_id=99, title="x")
    assert missing == "The project with id 99 does not exist."
    assert (
        s.refused(T + "create_task", "not_found", access_token=token, project_id=10, title="x", section_id=99)
        == "The section with id 99 does not exist."
    )
    wrong = s.refused(
        T + "create_task", "failed", access_token=token, project_id=10, title="x", section_id=22
    )
    assert wrong == "The section does not belong to the project."
    assert (
        s.refused(T + "create_task", "failed", access_token=token, project_id=12, title="x")
        == NOT_COLLABORATOR
    )
    assert len(rows(s, "tasks")) == 4


def test_create_task_inserts_in_order_and_notifies_other_collaborators(s: AppSession) -> None:
    token = laura(s)
    created = s.ok(
        T + "create_task",
        access_token=token,
        project_id=10,
        title="Plan rows",
        description="North side",
        order_index=0,
    )
    order = {
        t["task_id"]: t["order_index"]
        for t in rows(s, "tasks")
        if t["project_id"] == 10 and t["section_id"] is None
    }
    assert order == {created["task_id"]: 0, 30: 1, 32: 2}
    assert record(s, "tasks", "task_id", 31)["order_index"] == 0  # type: ignore[index]  # other section untouched
    news = notifications_of(s, 2)[-1]
    assert news["type"] == "task_added" and not news["read"]
    assert news["data"] == {"project_id": 10, "task_id": created["task_id"], "action_by_id": 1}
    assert len(notifications_of(s, 1)) == 2  # the author is not told
    in_section = s.ok(
        T + "create_task", access_token=token, project_id=10, title="Edge beds", section_id=20, order_index=-2
    )
    assert record(s, "tasks", "task_id", in_section["task_id"])["order_index"] == 0  # type: ignore[index]
    assert record(s, "tasks", "task_id", 31)["order_index"] == 1  # type: ignore[index]


def test_show_tasks_groups_filters_and_sorts(s: AppSession) -> None:
    token = laura(s)
    shown = s.ok(T + "show_tasks", access_token=token, project_id=10)
    assert set(shown) == {"project_id", "no_section_tasks", "sections"}
    assert [t["task_id"] for t in shown["no_section_tasks"]] == [30, 32]
    assert set(shown["no_section_tasks"][0]) == TASK_SHORT_KEYS
    assert shown["no_section_tasks"][0]["labels"] == [{"id": 40, "color": "red", "name": "urgent"}]
    assert shown["sections"] == [{"section_id": 20, "tasks": [shown["sections"][0]["tasks"][0]]}]
    assert shown["sections"][0]["tasks"][0]["num_sub_tasks"] == 1

    def ids(**filters: Any) -> list[int]:
        got = s.ok(T + "show_tasks", access_token=token, project_id=10, **filters)
        return [t["task_id"] for t in got["no_section_tasks"]] + [
            t["task_id"] for sec in got["sections"] for t in sec["tasks"]
        ]

    assert ids(priority="high") == [31]
    assert ids(is_completed=True) == [32]
    assert ids(due_today=True) == [32]
    assert ids(overdue=True) == [31]
    assert ids(min_due_date="2025-05-04", max_due_date="2025-05-05") == [32]
    assert ids(label_id=40) == [30]
    assert ids(section_id=0) == [30, 32]
    assert ids(section_id=20) == [31]
    assert ids(sort_by="-priority", section_id=0) == [32, 30]
    assert ids(sort_by="+due_date", section_id=0) == [32, 30]
    assert (
        s.refused(T + "show_tasks", "failed", access_token=token, project_id=10, sort_by="+title")
        == "If sort_by is passed, it must be one of order_index, due_date, priority"
        " and must be prefixed with + or -."
    )
    assert (
        s.refused(T + "show_tasks", "failed", access_token=token, project_id=10, sort_by="title")
        == "The sort_by parameter must start with + or -."
    )
    assert (
        s.refused(T + "show_tasks", "failed", access_token=token, project_id=10, due_today=True, overdue=True)
        == "You cannot set both today and overdue to true."
    )
    s.refused(T + "show_tasks", "invalid_args", access_token=token, project_id=10, min_due_date="soon")
    s.refused(T + "show_tasks", "not_found", access_token=token, project_id=10, label_id=99)
    assert s.refused(T + "show_tasks", "failed", access_token=token, project_id=12) == NOT_COLLABORATOR


def test_update_task_changes_fields_moves_and_notifies(s: AppSession) -> None:
    token = laura(s)
    updated = s.ok(
        T + "update_task",
        access_token=token,
        task_id=30,
        description="Time: Friday 10:30-11:30",
        is_completed=True,
        due_date="2025-05-12",
        priority="high",
        order_index=-1,
    )
    assert updated == {"message": "Task information updated."}
    task = record(s, "tasks", "task_id", 30)
    assert task is not None
    assert (task["description"], task["is_completed"], task["due_date"], task["priority"], task["title"]) == (
        "Time: Friday 10:30-11:30",
        True,
        "2025-05-12T00:00:00",
        "high",
        "Buy seeds",
    )
    assert (task["order_index"], record(s, "tasks", "task_id", 32)["order_index"]) == (1, 0)  # type: ignore[index]
    assert notifications_of(s, 2)[-1]["type"] == "task_updated"
    assert s.refused(T + "update_task", "invalid_args", access_token=token, task_id=30, due_date="tomorrow")
    assert (
        s.refused(T + "update_task", "not_found", access_token=token, task_id=99)
        == "The task with id 99 does not exist."
    )
    assert (
        s.refused(T + "update_task", "failed", access_token=token, task_id=33, title="x") == NOT_COLLABORATOR
    )


def test_delete_task_takes_its_sub_tasks_and_comments(s: AppSession) -> None:
    token = laura(s)
    assert s.ok(T + "delete_task", access_token=token, task_id=31) == {
        "message": "Task and its associated sub_tasks have been deleted."
    }
    assert record(s, "tasks", "task_id", 31) is None
    assert record(s, "sub_tasks", "sub_task_id", 50) is None
    s.ok(T + "delete_task", access_token=token, task_id=30)
    assert record(s, "task_comments", "task_comment_id", 60) is None
    assert notifications_of(s, 2)[-1]["type"] == "task_deleted"
    s.refused(T + "show_task", "not_found", access_token=token, task_id=31)


def test_assign_or_unassign_task(s: AppSession) -> None:
    token = laura(s)
    assigned = s.ok(T + "assign_or_unassign_task", access_token=token, task_id=30, assignee_email=STEVEN)
    assert assigned == {"message": "Task assigned."}
    task = record(s, "tasks", "task_id", 30)
    assert task is not None and (task["assignee_id"], task["assigner_id"]) == (2, 1)
    news = notifications_of(s, 2)[-1]
    assert news["type"] == "task_assigned" and news["data"]["task_id"] == 30
    mine = s.ok(T + "assign_or_unassign_task", access_token=token, task_id=32, assignee_email=LAURA)
    assert mine == {"message": "Task assigned."}
    assert notifications_of(s, 1)[-1]["type"] == "task_assigned"  # the assignee is told, even oneself
    shown = s.ok(T + "show_tasks", access_token=token, project_id=10, assignee_email=STEVEN)
    assert [t["task_id"] for t in shown["no_section_tasks"]] == [30]
    assert (
        s.refused(
            T + "assign_or_unassign_task", "failed", access_token=token, task_id=30, assignee_email=NINA
        )
        == "The assignee is not a collaborator on this project, so you cannot assign them tasks."
    )
    assert (
        s.refused(
            T + "assign_or_unassign_task",
            "not_found",
            access_token=token,
            task_id=30,
            assignee_email="x@y.com",
        )
        == "The user with email x@y.com does not exist."
    )
    s.refused(
        T + "assign_or_unassign_task", "invalid_args", access_token=token, task_id=30, assignee_email="nobody"
    )
    count = len(rows(s, "notifications"))
    assert s.ok(T + "assign_or_unassign_task", access_token=token, task_id=30) == {
        "message": "Task unassigned."
    }
    task = record(s, "tasks", "task_id", 30)
    assert task is not None and (task["assignee_id"], task["assigner_id"]) == (None, None)
    assert len(rows(s, "notifications")) == count


# ---------------------------------------------------------------- projects


def test_create_and_show_projects(s: AppSession) -> None:
    token = laura(s)
    created = s.ok(
        T + "create_project", access_token=token, name="Temporary Board", color="red", is_favorite=True
    )
    assert created == {"message": "Project created.", "project_id": created["project_id"]}
    assert (
        s.refused(T + "create_project", "failed", access_token=token, name="Temporary Board")
        == "Project with this user_id and name already exists."
    )
    s.refused(T + "create_project", "invalid_args", access_token=token, name="x", color="pink")
    nina = s.login("todoist", NINA, "pw-nina")
    s.ok(T + "create_project", access_token=nina, name="Temporary Board")  # names are unique per owner

    garden = s.ok(T + "show_project", access_token=token, project_id=10)
    assert set(garden) == PROJECT_KEYS
    assert garden["sections"] == [
        {"id": None, "name": None, "num_tasks": 2},
        {"id": 20, "name": "Beds", "num_tasks": 1},
        {"id": 21, "name": "Tools", "num_tasks": 0},
    ]
    assert garden["collaborators"] == [
        {"name": "Laura Mccoy", "email": LAURA},
        {"name": "Steven Mccoy", "email": STEVEN},
    ]
    assert (garden["num_tasks"], garden["is_shared"], garden["pending_invites"]) == (3, True, [])
    assert garden["creator"] == {"name": "Laura Mccoy", "email": LAURA}
    assert s.refused(T + "show_project", "failed", access_token=token, project_id=12) == NOT_COLLABORATOR
    assert s.refused(T + "show_project", "not_found", access_token=token, project_id=99)

    listed = s.ok(T + "show_projects", access_token=token)
    assert [p["project_id"] for p in listed] == [created["project_id"], 10, 11]  # newest first, Nina's hidden
    assert set(listed[0]) == PROJECT_KEYS
    oldest = s.ok(T + "show_projects", access_token=token, sort_by="+created_at", page_limit=1)
    assert [p["project_id"] for p in oldest] == [11]
    assert [p["project_id"] for p in s.ok(T + "show_projects", access_token=token, color="green")] == [10]
    assert [p["project_id"] for p in s.ok(T + "show_projects", access_token=token, is_favorite=False)] == [11]
    ranked = s.ok(T + "show_projects", access_token=token, query="backyard")
    assert ranked[0]["project_id"] == 10 and len(ranked) == 3
    assert s.ok(T + "show_projects", access_token=steven(s))[0]["project_id"] == 10
    s.refused(T + "show_projects", "failed", access_token=token, sort_by="+name")


def test_update_project(s: AppSession) -> None:
    token = laura(s)
    result = s.ok(
        T + "update_project", access_token=token, project_id=10, name="Garden 2025", is_archived=True
    )
    assert result == {"message": "Project information updated."}
    project = record(s, "projects", "project_id", 10)
    assert project is not None and (project["name"], project["is_archived"], project["color"]) == (
        "Garden 2025",
        True,
        "green",
    )
    news = notifications_of(s, 2)[-1]
    assert news["type"] == "project_updated" and news["data"] == {"project_id": 10, "action_by_id": 1}
    assert (
        s.refused(T + "update_project", "failed", access_token=token, project_id=0, name="Mail")
        == "The name of the Inbox project cannot be changed."
    )
    s.ok(T + "update_project", access_token=token, project_id=0, description="Everything else")
    assert record(s, "projects", "project_id", 11)["description"] == "Everything else"  # type: ignore[index]
    assert s.refused(T + "update_project", "failed", access_token=token, project_id=10, name="Inbox")


def test_delete_project_takes_everything_in_it(s: AppSession) -> None:
    token = laura(s)
    assert (
        s.refused(T + "delete_project", "failed", access_token=token, project_id=0)
        == "You cannot delete your Inbox project."
    )
    gone = s.ok(T + "delete_project", access_token=token, project_id=10)
    assert gone == {"message": "Project and its associated, sections, tasks and sub_tasks have been deleted."}
    assert record(s, "projects", "project_id", 10) is None
    assert {t["task_id"] for t in rows(s, "tasks")} == {33}
    assert {r["section_id"] for r in rows(s, "sections")} == {22}
    assert rows(s, "sub_tasks") == [] and rows(s, "task_comments") == []
    news = notifications_of(s, 2)[-1]
    assert news["type"] == "project_deleted" and news["data"]["project_id"] == 10
    assert s.refused(T + "delete_project", "failed", access_token=token, project_id=12) == NOT_COLLABORATOR
    s.refused(T + "delete_project", "not_found", access_token=token, project_id=10)


# ---------------------------------------------------------------- sections


def test_sections(s: AppSession) -> None:
    token = laura(s)
    created = s.ok(T + "create_section", access_token=token, project_id=10, name="Tonight", order_index=0)
    assert created == {"message": "Project section created.", "section_id": created["section_id"]}
    listed = s.ok(T + "show_sections", access_token=token, project_id=10)
    assert [x["section_id"] for x in listed] == [created["section_id"], 20, 21]
    assert set(listed[1]) == {"project_id", "name", "order_index", "created_at", "section_id", "num_tasks"}
    assert (listed[1]["order_index"], listed[1]["num_tasks"]) == (1, 1)
    assert notifications_of(s, 2)[-1]["type"] == "project_updated"
    assert (
        s.refused(T + "create_section", "failed", access_token=token, project_id=10, name="Beds")
        == "Section with this project_id and name already exists."
    )
    s.ok(T + "create_section", access_token=token, project_id=0, name="Beds")  # unique per project only
    s.refused(T + "create_section", "failed", access_token=token, project_id=12, name="x")

    assert s.ok(T + "update_section", access_token=token, section_id=21, name="Shed", order_index=0) == {
        "message": "Project section information updated."
    }
    order = [x["name"] for x in s.ok(T + "show_sections", access_token=token, project_id=10)]
    assert order == ["Shed", "Tonight", "Beds"]
    s.refused(T + "update_section", "not_found", access_token=token, section_id=99)

    assert s.ok(T + "delete_section", access_token=token, section_id=20) == {
        "message": "Project section and its associated tasks and sub_tasks have been deleted."
    }
    assert record(s, "sections", "section_id", 20) is None
    assert record(s, "tasks", "task_id", 31) is None and record(s, "sub_tasks", "sub_task_id", 50) is None
    assert record(s, "tasks", "task_id", 30) is not None
    s.refused(T + "delete_section", "failed", access_token=token, section_id=22)


# ---------------------------------------------------------------- sub-tasks


def test_sub_tasks(s: AppSession) -> None:
    token = laura(s)
    created = s.ok(T + "create_sub_task", access_token=token, task_id=31, title="Sleep block", order_index=0)
    assert created == {"message": "Subtask created.", "sub_task_id": created["sub_task_id"]}
    later = s.ok(
        T + "create_sub_task", access_token=token, task_id=31, title="Reading", due_date="2025-05-06"
    )
    listed = s.ok(T + "show_sub_tasks", access_token=token, task_id=31)
    assert [x["sub_task_id"] for x in listed] == [created["sub_task_id"], 50, later["sub_task_id"]]
    assert set(listed[0]) == SUB_TASK_KEYS
    assert listed[2]["due_date"] == "2025-05-06T00:00:00" and listed[2]["priority"] == "medium"
    assert s.ok(T + "show_task", access_token=token, task_id=31)["num_sub_tasks"] == 3
    s.refused(
        T + "create_sub_task", "invalid_args", access_token=token, task_id=31, title="x", due_date="6 May"
    )
    s.refused(T + "create_sub_task", "failed", access_token=token, task_id=33, title="x")

    updated = s.ok(
        T + "update_sub_task", access_token=token, sub_task_id=50, is_completed=True, order_index=-1
    )
    assert updated == {"message": "Subtask information updated."}
    listed = s.ok(T + "show_sub_tasks", access_token=token, task_id=31)
    assert [x["sub_task_id"] for x in listed][-1] == 50 and listed[-1]["is_completed"] is True
    assert (
        s.refused(T + "update_sub_task", "not_found", access_token=token, sub_task_id=99)
        == "The sub task with id 99 does not exist."
    )
    assert s.ok(T + "delete_sub_task", access_token=token, sub_task_id=50) == {
        "message": "Subtask has been deleted."
    }
    assert record(s, "sub_tasks", "sub_task_id", 50) is None
    s.refused(T + "delete_sub_task", "not_found", access_token=token, sub_task_id=50)


# ---------------------------------------------------------------- labels


def test_labels(s: AppSession) -> None:
    token = laura(s)
    created = s.ok(T + "create_label", access_token=token, name="launch-blocker", color="orange")
    label_id = created["label_id"]
    assert created == {"message": "Label created.", "label_id": label_id}
    assert (
        s.refused(T + "create_label", "failed", access_token=token, name="urgent")
        == "Label with this user_id and name already exists."
    )
    assert s.ok(T + "add_label_to_task", access_token=token, task_id=30, label_id=label_id) == {
        "message": "Label added to the task."
    }
    assert (
        s.refused(T + "add_label_to_task", "failed", access_token=token, task_id=30, label_id=label_id)
        == "Label is already added to the task."
    )
    s.refused(T + "add_label_to_task", "not_found", access_token=token, task_id=30, label_id=99)
    s.refused(T + "add_label_to_task", "failed", access_token=token, task_id=33, label_id=label_id)
    labels = s.ok(T + "show_task", access_token=token, task_id=30)["labels"]
    assert labels == [
        {"id": 40, "color": "red", "name": "urgent"},
        {"id": label_id, "color": "orange", "name": "launch-blocker"},
    ]

    mine = s.ok(T + "search_labels", access_token=token)
    assert [x["label_id"] for x in mine] == [40, 41, label_id]  # not Nina's
    assert mine[0] == {
        "name": "urgent",
        "color": "red",
        "label_id": 40,
        "creator": {"name": "Laura Mccoy", "email": LAURA},
    }
    assert s.ok(T + "search_labels", access_token=token, query="gardn")[0]["label_id"] == 41
    attached = s.ok(T + "search_labels", access_token=token, task_id=30)
    assert [x["label_id"] for x in attached] == [40, label_id]
    free = s.ok(T + "search_labels", access_token=token, task_id=30, task_attached=False)
    assert [x["label_id"] for x in free] == [41]
    assert [x["label_id"] for x in s.ok(T + "search_labels", access_token=token, color="green")] == [41]

    assert s.ok(T + "remove_label_from_task", access_token=token, task_id=30, label_id=40) == {
        "message": "Label removed from the task."
    }
    assert (
        s.refused(T + "remove_label_from_task", "failed", access_token=token, task_id=30, label_id=40)
        == "Label is already not added to the task."
    )
    assert (
        s.refused(T + "delete_label", "failed", access_token=token, label_id=42)
        == "The given label does not belong to you, so you cannot access it."
    )
    assert s.ok(T + "delete_label", access_token=token, label_id=label_id) == {
        "message": "Label has been deleted."
    }
    assert record(s, "labels", "label_id", label_id) is None
    assert record(s, "tasks", "task_id", 30)["label_ids"] == []  # type: ignore[index]
    s.refused(T + "delete_label", "not_found", access_token=token, label_id=label_id)


# ---------------------------------------------------------------- comments


def test_task_comments(s: AppSession) -> None:
    token = laura(s)
    assert (
        s.refused(T + "post_task_comment", "failed", access_token=token, task_id=30, content="")
        == "Comment content cannot be empty."
    )
    posted = s.ok(T + "post_task_comment", access_token=token, task_id=30, content="Escalate at 18:30.")
    comment_id = posted["task_comment_id"]
    assert posted == {"message": "Comment posted on the task.", "task_comment_id": comment_id}
    news = notifications_of(s, 2)[-1]
    assert news["type"] == "task_comment_added" and news["data"]["task_comment_id"] == comment_id
    listed = s.ok(T + "show_task_comments", access_token=token, task_id=30)
    assert [c["task_comment_id"] for c in listed] == [60, comment_id]
    assert listed[1] == {
        "task_id": 30,
        "content": "Escalate at 18:30.",
        "created_at": "2025-05-05T09:00:00",
        "task_comment_id": comment_id,
        "user": {"name": "Laura Mccoy", "email": LAURA},
        "attachment_file_names": [],
    }
    assert [
        c["task_comment_id"]
        for c in s.ok(T + "show_task_comments", access_token=token, task_id=30, page_limit=1, page_index=1)
    ] == [comment_id]
    assert s.ok(T + "show_task_comment", access_token=token, task_comment_id=60)["user"]["email"] == STEVEN
    s.refused(T + "show_task_comment", "not_found", access_token=token, task_comment_id=99)

    assert s.ok(
        T + "update_task_comment",
        access_token=token,
        task_comment_id=comment_id,
        content="Escalate at 18:00.",
    ) == {"message": "Comment updated."}
    assert record(s, "task_comments", "task_comment_id", comment_id)["content"] == "Escalate at 18:00."  # type: ignore[index]
    assert (
        s.refused(T + "update_task_comment", "failed", access_token=token, task_comment_id=60, content="x")
        == "The given task comment does not belong to you, so you cannot access it."
    )
    assert s.ok(T + "delete_task_comment", access_token=token, task_comment_id=comment_id) == {
        "message": "Comment has been deleted."
    }
    assert record(s, "task_comments", "task_comment_id", comment_id) is None
    assert notifications_of(s, 2)[-1]["type"] == "task_comment_deleted"
    s.refused(T + "delete_task_comment", "failed", access_token=token, task_comment_id=60)


def test_comment_attachments_come_from_the_file_system(s: AppSession) -> None:
    s.state = s.state.model_copy(update={"files": {"docs/plan.txt": "the plan"}})
    token = laura(s)
    missing = s.refused(
        T + "post_task_comment",
        "not_found",
        access_token=token,
        task_id=30,
        content="see",
        attachment_file_paths=["~/nope.txt"],
    )
    assert missing == "The file with path ~/nope.txt does not exist."
    posted = s.ok(
        T + "post_task_comment",
        access_token=token,
        task_id=30,
        content="see attached",
        attachment_file_paths=["~/docs/plan.txt"],
    )
    shown = s.ok(T + "show_task_comment", access_token=token, task_comment_id=posted["task_comment_id"])
    assert shown["attachment_file_names"] == ["plan.txt"]


# ---------------------------------------------------------------- notifications


def test_notifications(s: AppSession) -> None:
    token = laura(s)
    listed = s.ok(T + "show_notifications", access_token=token)
    assert [n["notification_id"] for n in listed] == [70, 71]  # newest first, only mine
    assert set(listed[0]) == {"notification_id", "type", "title", "message", "read", "created_at", "data"}
    assert [n["notification_id"] for n in s.ok(T + "show_notifications", access_token=token, read=True)] == [
        71
    ]
    assert s.ok(T + "show_notifications_count", access_token=token) == {"notifications_count": 2}
    assert s.ok(T + "show_notifications_count", access_token=token, read=False) == {"notifications_count": 1}

    assert s.ok(T + "mark_notification", access_token=token, notification_id=70, read=True) == {
        "message": "Marked notification as read."
    }
    assert s.ok(T + "show_notifications_count", access_token=token, read=False) == {"notifications_count": 0}
    assert s.ok(T + "mark_notification", access_token=token, notification_id=70, read=False) == {
        "message": "Marked notification as unread."
    }
    assert (
        s.refused(T + "mark_notification", "failed", access_token=token, notification_id=72, read=True)
        == "The given notification does not belong to you, so you cannot access it."
    )
    assert (
        s.refused(T + "mark_notification", "not_found", access_token=token, notification_id=99, read=True)
        == "The notification with id 99 does not exist."
    )
    s.refused(T + "mark_notification", "invalid_args", access_token=token, notification_id=70)

    assert s.ok(T + "delete_notifications", access_token=token) == {"message": "Deleted all notifications."}
    assert s.ok(T + "show_notifications", access_token=token) == []
    assert [n["notification_id"] for n in rows(s, "notifications")] == [72]  # others keep theirs
