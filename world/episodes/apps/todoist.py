"""The ``todoist`` app on AppWorld's tool surface: projects shared by collaborators, their sections,
tasks and sub-tasks, labels, task comments and notifications.

Records (``apps["todoist"]``; times are AppWorld's ``YYYY-MM-DDTHH:MM:SS``):

- ``users``: the seed's people with a todoist account (``seed``).
- ``projects``: ``{project_id, user_id (owner), name, color, description, is_inbox, is_favorite,
  is_archived, collaborator_ids: [user_id], created_at}``. The owner is always a collaborator
  (``collaborator_ids`` absent: the owner alone); ``is_favorite`` and ``is_archived`` belong to
  the project (AppWorld keeps them per collaborator). A user's Inbox (``is_inbox``) is made the
  first time a call names project 0. Names are unique per owner.
- ``sections``: ``{section_id, project_id, name, order_index, created_at}`` (names unique per
  project).
- ``tasks``: ``{task_id, project_id, section_id, user_id (creator), title, description, due_date,
  priority (high|medium|low), is_completed, duration, duration_unit (minutes|hours|days),
  order_index, assignee_id, assigner_id, label_ids: [label_id], created_at}`` (``due_date``:
  ``YYYY-MM-DDT00:00:00`` or null; ``order_index`` counts from 0 among the tasks of the same
  project and section).
- ``sub_tasks``: ``{sub_task_id, task_id, title, description, due_date, priority, is_completed,
  duration, duration_unit, order_index, created_at}``.
- ``labels``: ``{label_id, user_id, name, color}`` (names unique per user).
- ``task_comments``: ``{task_comment_id, task_id, user_id, content, attachment_file_names: [str],
  created_at}``.
- ``notifications``: ``{notification_id, user_id, type, title, message, read, data, created_at}``:
  what a change by one collaborator tells the others (``task_added``, ``task_updated``,
  ``task_deleted``, ``project_updated``, ``project_deleted``, ``task_comment_added``,
  ``task_comment_updated``, ``task_comment_deleted``, ``task_assigned``).

Tools (``mcp_appworld_todoist__<api>``; all but ``login`` and ``search_users`` take the
``access_token`` of ``login``): ``login``, ``logout``, ``search_users``; projects:
``create_project``, ``show_project``, ``show_projects``, ``update_project``, ``delete_project``
(with its sections, tasks and sub-tasks); sections: ``create_section``, ``show_sections``,
``update_section``, ``delete_section`` (with its tasks); tasks: ``create_task`` -> ``{message,
task_id}`` (project 0 is the Inbox), ``show_task``, ``show_tasks`` (``{project_id,
no_section_tasks, sections: [{section_id, tasks}]}``), ``update_task``, ``delete_task``,
``assign_or_unassign_task``; sub-tasks: ``create_sub_task``, ``show_sub_tasks``,
``update_sub_task``, ``delete_sub_task``; labels: ``create_label``, ``search_labels``,
``delete_label``, ``add_label_to_task``, ``remove_label_from_task``; comments:
``post_task_comment``, ``show_task_comment``, ``show_task_comments``, ``update_task_comment``,
``delete_task_comment``; notifications: ``show_notifications``, ``show_notifications_count``,
``mark_notification``, ``delete_notifications``. Every API working on a project refuses a caller
who is not one of its collaborators (422).
"""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    MAX_DATE,
    MAX_INT,
    MIN_DATE,
    TIME_FORMAT,
    AppApis,
    AuthArgs,
    AuthPageArgs,
    EmailAddress,
    Row,
    ToolContext,
    ToolFailed,
    ToolNotFound,
    check_owner,
    check_sort,
    check_unique,
    date_bounds,
    full_name,
    id_field,
    in_dates,
    login_tool,
    logout_tool,
    optional_id_field,
    page,
    page_index_field,
    page_limit_field,
    parse_date,
    retrieve,
    search_text,
    search_users_tool,
    sort_rows,
    stored_time,
    update_fields,
)

APP = "todoist"
apis = AppApis(APP)

Color = Literal["charcoal", "red", "blue", "green", "orange", "yellow"]
Priority = Literal["high", "medium", "low"]
DurationUnit = Literal["minutes", "hours", "days"]

PRIORITY_RANK = {"high": 3, "medium": 2, "low": 1}
TASK_SORT_FIELDS = ("order_index", "due_date", "priority")
NOT_COLLABORATOR = "You are not a collaborator of this project and so are not authorized to access it."


# ---------------------------------------------------------------- arguments


class ProjectArgs(AuthArgs):
    project_id: int = id_field("The project's id; 0 is your Inbox.")


class CreateProjectArgs(AuthArgs):
    name: str = Field(min_length=1, description="The project's name.")
    color: Color = Field(default="charcoal", description="The project's color.")
    description: str = Field(default="", description="What the project is about.")
    is_favorite: bool = Field(default=False, description="Mark the project as a favorite.")


class ShowProjectsArgs(AuthArgs):
    query: str = Field(default="", description="Words to rank projects by (name, description, people).")
    color: Color | None = Field(default=None, description="Only projects of this color.")
    is_favorite: bool | None = Field(default=None, description="Only favorite (or non-favorite) projects.")
    is_archived: bool | None = Field(default=None, description="Only archived (or active) projects.")
    page_index: int = page_index_field()
    page_limit: int = page_limit_field(MAX_INT)
    sort_by: str | None = Field(default=None, description="+created_at or -created_at.")


class UpdateProjectArgs(ProjectArgs):
    name: str | None = Field(default=None, min_length=1, description="The new name.")
    color: Color | None = Field(default=None, description="The new color.")
    description: str | None = Field(default=None, description="The new description.")
    is_favorite: bool | None = Field(default=None, description="Mark or unmark as a favorite.")
    is_archived: bool | None = Field(default=None, description="Archive or unarchive.")


class CreateSectionArgs(ProjectArgs):
    name: str = Field(min_length=1, description="The section's name.")
    order_index: int = Field(
        default=-1, description="Where to insert it: 0 first, -1 last, -2 before the last."
    )


class SectionArgs(AuthArgs):
    section_id: int = id_field("The section's id.")


class UpdateSectionArgs(SectionArgs):
    name: str | None = Field(default=None, min_length=1, description="The new name.")
    order_index: int | None = Field(
        default=None, description="The new position among the project's sections."
    )


class CreateTaskArgs(ProjectArgs):
    title: str = Field(min_length=1, description="The task's title.")
    section_id: int | None = optional_id_field("A section of the project to put the task in.")
    description: str = Field(default="", description="Details of the task.")
    due_date: str | None = Field(default=None, description="Due date, YYYY-MM-DD.")
    duration: float | None = Field(default=None, description="How long the task takes.")
    duration_unit: DurationUnit | None = Field(default=None, description="The unit of the duration.")
    order_index: int = Field(
        default=-1, description="Where to insert it: 0 first, -1 last, -2 before the last."
    )
    priority: Priority = Field(default="medium", description="The task's priority.")


class TaskArgs(AuthArgs):
    task_id: int = id_field("The task's id.")


class AssignArgs(TaskArgs):
    assignee_email: EmailAddress | None = Field(
        default=None, description="Email of the collaborator to assign; leave out to unassign."
    )


class ShowTasksArgs(ProjectArgs):
    section_id: int | None = optional_id_field("Only tasks of this section (0: tasks without a section).")
    assignee_email: EmailAddress | None = Field(default=None, description="Only tasks assigned to this user.")
    assigner_email: EmailAddress | None = Field(default=None, description="Only tasks assigned by this user.")
    priority: Priority | None = Field(default=None, description="Only tasks of this priority.")
    is_completed: bool | None = Field(default=None, description="Only completed (or open) tasks.")
    due_today: bool = Field(default=False, description="Only tasks due today.")
    label_id: int | None = optional_id_field("Only tasks carrying a label of this label's name.")
    overdue: bool = Field(default=False, description="Only tasks due before today.")
    min_due_date: str = Field(
        default=MIN_DATE, description="Only tasks due on or after this date (YYYY-MM-DD)."
    )
    max_due_date: str = Field(
        default=MAX_DATE, description="Only tasks due on or before this date (YYYY-MM-DD)."
    )
    sort_by: str = Field(default="+order_index", description="+/- order_index, due_date or priority.")


class UpdateTaskArgs(TaskArgs):
    title: str | None = Field(default=None, min_length=1, description="The new title.")
    description: str | None = Field(default=None, description="The new description.")
    due_date: str | None = Field(default=None, description="The new due date, YYYY-MM-DD.")
    duration: float | None = Field(default=None, description="The new duration.")
    duration_unit: DurationUnit | None = Field(default=None, description="The new unit of the duration.")
    is_completed: bool | None = Field(default=None, description="Mark the task done or open.")
    order_index: int | None = Field(default=None, description="The new position among its section's tasks.")
    priority: Priority | None = Field(default=None, description="The new priority.")


class CreateSubTaskArgs(TaskArgs):
    title: str = Field(min_length=1, description="The sub-task's title.")
    description: str = Field(default="", description="Details of the sub-task.")
    due_date: str | None = Field(default=None, description="Due date, YYYY-MM-DD.")
    priority: Priority = Field(default="medium", description="The sub-task's priority.")
    order_index: int = Field(
        default=-1, description="Where to insert it: 0 first, -1 last, -2 before the last."
    )


class SubTaskArgs(AuthArgs):
    sub_task_id: int = id_field("The sub-task's id.")


class UpdateSubTaskArgs(SubTaskArgs):
    title: str | None = Field(default=None, min_length=1, description="The new title.")
    description: str | None = Field(default=None, description="The new description.")
    due_date: str | None = Field(default=None, description="The new due date, YYYY-MM-DD.")
    priority: Priority | None = Field(default=None, description="The new priority.")
    is_completed: bool | None = Field(default=None, description="Mark the sub-task done or open.")
    order_index: int | None = Field(default=None, description="The new position among the task's sub-tasks.")


class CreateLabelArgs(AuthArgs):
    name: str = Field(min_length=1, description="The label's name.")
    color: Color = Field(default="charcoal", description="The label's color.")


class SearchLabelsArgs(AuthArgs):
    query: str = Field(default="", description="A name to rank labels by.")
    task_id: int | None = optional_id_field("Labels of this task (see task_attached).")
    color: Color | None = Field(default=None, description="Only labels of this color.")
    task_attached: bool = Field(
        default=True, description="With task_id: the task's labels (true) or your labels not on it (false)."
    )
    page_index: int = page_index_field()
    page_limit: int = page_limit_field(MAX_INT)


class LabelArgs(AuthArgs):
    label_id: int = id_field("The label's id.")


class TaskLabelArgs(TaskArgs):
    label_id: int = id_field("The label's id.")


class PostCommentArgs(TaskArgs):
    content: str = Field(description="The comment's text.")
    attachment_file_paths: list[str] | None = Field(default=None, description="Files to attach.")
    file_system_access_token: str | None = Field(
        default=None, description="Access token of the file_system app, for attachments."
    )


class TaskPageArgs(AuthPageArgs):
    task_id: int = id_field("The task's id.")


class CommentArgs(AuthArgs):
    task_comment_id: int = id_field("The comment's id.")


class UpdateCommentArgs(CommentArgs):
    content: str | None = Field(default=None, description="The new text of the comment.")


class ShowNotificationsArgs(AuthPageArgs):
    read: bool | None = Field(default=None, description="Only read (or unread) notifications.")


class CountNotificationsArgs(AuthArgs):
    read: bool | None = Field(default=None, description="Count only read (or unread) notifications.")


class MarkNotificationArgs(AuthArgs):
    notification_id: int = id_field("The notification's id.")
    read: bool = Field(description="Mark it read (true) or unread (false).")


# ---------------------------------------------------------------- helpers


def _members(project: dict[str, Any]) -> list[int]:
    """The project's collaborators' user ids, its owner first."""
    owner = project.get("user_id")
    ids = [int(i) for i in project.get("collaborator_ids") or []]
    return ids if owner is None or owner in ids else [int(owner), *ids]


def _check_member(user: dict[str, Any], project: dict[str, Any]) -> None:
    if int(user["user_id"]) not in _members(project):
        raise ToolFailed(NOT_COLLABORATOR)


def _project(ctx: ToolContext, user: dict[str, Any], project_id: int) -> dict[str, Any]:
    """Project ``project_id`` (0: the user's Inbox, made when missing), the caller a collaborator."""
    if project_id != 0:
        project = ctx.find(APP, "projects", project_id, "project")
        _check_member(user, project)
        return project
    inbox = ctx.my(APP, "projects", user, is_inbox=True)
    return inbox if inbox is not None else _new_project(ctx, user, "Inbox", is_inbox=True)


def _new_project(
    ctx: ToolContext,
    user: Row,
    name: str,
    color: str = "charcoal",
    description: str = "",
    *,
    is_inbox: bool = False,
    is_favorite: bool = False,
) -> Row:
    """A project of ``user`` (its only collaborator); a name is unique among the user's projects
    (the Inbox is made without that check)."""
    project = {
        "user_id": user["user_id"],
        "name": name,
        "color": color,
        "description": description,
        "is_inbox": is_inbox,
        "is_favorite": is_favorite,
        "is_archived": False,
        "collaborator_ids": [user["user_id"]],
        "created_at": ctx.timestamp(),
    }
    return ctx.insert(APP, "projects", project, unique=None if is_inbox else ("Project", ("user_id", "name")))


def _in_project(ctx: ToolContext, user: Row, collection: str, record_id: Any, what: str) -> tuple[Row, Row]:
    """A task or section and its project, the caller a collaborator of it."""
    record = ctx.find(APP, collection, record_id, what)
    project = ctx.find(APP, "projects", record.get("project_id"), "project")
    _check_member(user, project)
    return record, project


def _task(ctx: ToolContext, user: Row, task_id: Any) -> tuple[Row, Row]:
    """Task ``task_id`` and its project, the caller a collaborator of it."""
    return _in_project(ctx, user, "tasks", task_id, "task")


def _send(
    ctx: ToolContext, user_ids: Iterable[int], *, kind: str, title: str, message: str, data: JsonObject
) -> None:
    """A notification for each of ``user_ids`` that is a user of the app."""
    for user_id in user_ids:
        if ctx.user_by_id(APP, user_id) is None:
            continue
        ctx.insert(
            APP,
            "notifications",
            {
                "user_id": user_id,
                "type": kind,
                "title": title,
                "message": message,
                "read": False,
                "data": dict(data),
                "created_at": ctx.timestamp(),
            },
        )


def _notify(
    ctx: ToolContext,
    project: dict[str, Any],
    actor: dict[str, Any],
    *,
    kind: str,
    title: str,
    message: str,
    data: JsonObject,
) -> None:
    """Tell the collaborators of ``project`` other than ``actor`` what ``actor`` did."""
    others = [i for i in _members(project) if i != actor["user_id"]]
    _send(
        ctx, others, kind=kind, title=title, message=message, data={**data, "action_by_id": actor["user_id"]}
    )


def _project_changed(ctx: ToolContext, project: dict[str, Any], user: dict[str, Any]) -> None:
    _notify(
        ctx,
        project,
        user,
        kind="project_updated",
        title="Project updated.",
        message=f"{full_name(user)} has updated the '{project['name']}' project",
        data={"project_id": project["project_id"]},
    )


def _task_event(
    ctx: ToolContext, project: dict[str, Any], task: dict[str, Any], user: dict[str, Any], event: str
) -> None:
    """Tell the other collaborators that ``user`` added, updated or deleted ``task``."""
    where = "to" if event == "added" else "in"
    what = "a new task" if event == "added" else "a task"
    _notify(
        ctx,
        project,
        user,
        kind=f"task_{event}",
        title=f"A task is {event}." if event != "added" else "A new task is added.",
        message=f"{full_name(user)} has {event} {what} {where} the '{project['name']}' project.",
        data={"project_id": project["project_id"], "task_id": task["task_id"]},
    )


def _comment_event(
    ctx: ToolContext,
    project: dict[str, Any],
    comment: dict[str, Any],
    user: dict[str, Any],
    event: str,
) -> None:
    verb = "posted" if event == "added" else event
    _notify(
        ctx,
        project,
        user,
        kind=f"task_comment_{event}",
        title="A new task comment is posted." if event == "added" else f"A task comment is {event}.",
        message=f"{full_name(user)} has {verb} a comment on a task in the '{project['name']}' project.",
        data={
            "project_id": project["project_id"],
            "task_id": comment["task_id"],
            "task_comment_id": comment["task_comment_id"],
        },
    )


def _place(siblings: Iterable[dict[str, Any]], item: dict[str, Any], order_index: int) -> None:
    """Put ``item`` at ``order_index`` among ``siblings`` (negative counts from the end: -1 last)
    and renumber them all from 0."""
    others = sorted((r for r in siblings if r is not item), key=lambda r: int(r.get("order_index") or 0))
    count = len(others)
    at = max(min(order_index, count), -count - 1)
    if at < 0:
        at += count + 1
    others.insert(at, item)
    for index, row in enumerate(others):
        row["order_index"] = index


def _due(value: str | None) -> str | None:
    return None if value is None else parse_date(value, "due_date").strftime(TIME_FORMAT)


def _drop_tasks(ctx: ToolContext, task_ids: set[Any]) -> None:
    """Delete these tasks with their sub-tasks and comments."""
    app = ctx.app(APP)
    for collection in ("tasks", "sub_tasks", "task_comments"):
        app[collection] = [r for r in ctx.rows(APP, collection) if r.get("task_id") not in task_ids]


def _sort_key(row: dict[str, Any], name: str) -> Any:
    """The value a record sorts by: due dates as dates, priorities by rank (high first when
    descending)."""
    value = row.get(name)
    if name == "due_date":
        return stored_time(value)
    if name == "priority":
        return PRIORITY_RANK.get(str(value)) if value is not None else None
    return value


# ---------------------------------------------------------------- views


def _label_short(label: dict[str, Any]) -> JsonObject:
    return {"id": label["label_id"], "color": label.get("color", "charcoal"), "name": label.get("name")}


def _task_labels(ctx: ToolContext, task: dict[str, Any]) -> list[JsonObject]:
    wanted = list(task.get("label_ids") or [])
    by_id = {label["label_id"]: label for label in ctx.rows(APP, "labels")}
    return [_label_short(by_id[i]) for i in wanted if i in by_id]


def _num_sub_tasks(ctx: ToolContext, task_id: Any) -> int:
    return sum(1 for s in ctx.rows(APP, "sub_tasks") if s.get("task_id") == task_id)


def _task_short(ctx: ToolContext, task: dict[str, Any]) -> JsonObject:
    return {
        "order_index": task.get("order_index", 0),
        "task_id": task["task_id"],
        "title": task.get("title"),
        "description": task.get("description", ""),
        "num_sub_tasks": _num_sub_tasks(ctx, task["task_id"]),
        "is_completed": bool(task.get("is_completed", False)),
        "due_date": task.get("due_date"),
        "priority": task.get("priority", "medium"),
        "duration": task.get("duration"),
        "duration_unit": task.get("duration_unit"),
        "assignee_id": task.get("assignee_id"),
        "labels": _task_labels(ctx, task),
    }


def _task_view(ctx: ToolContext, task: dict[str, Any]) -> JsonObject:
    return {
        "project_id": task.get("project_id"),
        "section_id": task.get("section_id"),
        "title": task.get("title"),
        "description": task.get("description", ""),
        "due_date": task.get("due_date"),
        "priority": task.get("priority", "medium"),
        "is_completed": bool(task.get("is_completed", False)),
        "duration": task.get("duration"),
        "duration_unit": task.get("duration_unit"),
        "order_index": task.get("order_index", 0),
        "assignee_id": task.get("assignee_id"),
        "assigner_id": task.get("assigner_id"),
        "created_at": task.get("created_at"),
        "task_id": task["task_id"],
        "labels": _task_labels(ctx, task),
        "creator": ctx.person_of(APP, task.get("user_id")),
        "num_sub_tasks": _num_sub_tasks(ctx, task["task_id"]),
    }


def _sub_task_view(sub_task: dict[str, Any]) -> JsonObject:
    return {
        "task_id": sub_task.get("task_id"),
        "title": sub_task.get("title"),
        "description": sub_task.get("description", ""),
        "due_date": sub_task.get("due_date"),
        "priority": sub_task.get("priority", "medium"),
        "is_completed": bool(sub_task.get("is_completed", False)),
        "duration": sub_task.get("duration"),
        "duration_unit": sub_task.get("duration_unit"),
        "order_index": sub_task.get("order_index", 0),
        "created_at": sub_task.get("created_at"),
        "sub_task_id": sub_task["sub_task_id"],
    }


def _sections_of(ctx: ToolContext, project_id: Any) -> list[dict[str, Any]]:
    rows = [s for s in ctx.rows(APP, "sections") if s.get("project_id") == project_id]
    return sorted(rows, key=lambda s: int(s.get("order_index") or 0))


def _tasks_of(ctx: ToolContext, project_id: Any) -> list[dict[str, Any]]:
    return [t for t in ctx.rows(APP, "tasks") if t.get("project_id") == project_id]


def _section_view(ctx: ToolContext, section: dict[str, Any]) -> JsonObject:
    return {
        "project_id": section.get("project_id"),
        "name": section.get("name"),
        "order_index": section.get("order_index", 0),
        "created_at": section.get("created_at"),
        "section_id": section["section_id"],
        "num_tasks": sum(1 for t in ctx.rows(APP, "tasks") if t.get("section_id") == section["section_id"]),
    }


def _project_view(ctx: ToolContext, project: dict[str, Any]) -> JsonObject:
    tasks = _tasks_of(ctx, project["project_id"])
    sections: list[JsonObject] = [
        {"id": None, "name": None, "num_tasks": sum(1 for t in tasks if t.get("section_id") is None)}
    ]
    for section in _sections_of(ctx, project["project_id"]):
        sections.append(
            {
                "id": section["section_id"],
                "name": section.get("name"),
                "num_tasks": sum(1 for t in tasks if t.get("section_id") == section["section_id"]),
            }
        )
    members = _members(project)
    return {
        "name": project.get("name"),
        "color": project.get("color", "charcoal"),
        "is_inbox": bool(project.get("is_inbox", False)),
        "description": project.get("description", ""),
        "is_favorite": bool(project.get("is_favorite", False)),
        "is_archived": bool(project.get("is_archived", False)),
        "created_at": project.get("created_at"),
        "project_id": project["project_id"],
        "creator": ctx.person_of(APP, project.get("user_id")),
        "num_tasks": len(tasks),
        "sections": sections,
        "collaborators": [ctx.person_of(APP, i) for i in members],
        "pending_invites": [],
        "is_shared": len(members) > 1,
    }


def _label_view(ctx: ToolContext, label: dict[str, Any]) -> JsonObject:
    return {
        "name": label.get("name"),
        "color": label.get("color", "charcoal"),
        "label_id": label["label_id"],
        "creator": ctx.person_of(APP, label.get("user_id")),
    }


def _comment_view(ctx: ToolContext, comment: dict[str, Any]) -> JsonObject:
    return {
        "task_id": comment.get("task_id"),
        "content": comment.get("content"),
        "created_at": comment.get("created_at"),
        "task_comment_id": comment["task_comment_id"],
        "user": ctx.person_of(APP, comment.get("user_id")),
        "attachment_file_names": list(comment.get("attachment_file_names") or []),
    }


def _notification_view(notification: dict[str, Any]) -> JsonObject:
    return {
        "notification_id": notification["notification_id"],
        "type": notification.get("type"),
        "title": notification.get("title"),
        "message": notification.get("message"),
        "read": bool(notification.get("read", False)),
        "created_at": notification.get("created_at"),
        "data": dict(notification.get("data") or {}),
    }


# ---------------------------------------------------------------- users


# ---------------------------------------------------------------- projects


apis.add(
    login_tool(APP),
    logout_tool(APP),
    search_users_tool(APP, "Find todoist users by name or email."),
)


@apis.api("Create a project of yours.")
def create_project(ctx: ToolContext, args: CreateProjectArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    project = _new_project(ctx, user, args.name, args.color, args.description, is_favorite=args.is_favorite)
    return {"message": "Project created.", "project_id": project["project_id"]}


@apis.api("Show a project with its sections and collaborators (0: your Inbox).")
def show_project(ctx: ToolContext, args: ProjectArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    return _project_view(ctx, _project(ctx, user, args.project_id))


@apis.api("List or search the projects you collaborate on.")
def show_projects(ctx: ToolContext, args: ShowProjectsArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    rows = [
        p
        for p in ctx.rows(APP, "projects")
        if int(user["user_id"]) in _members(p)
        and (args.is_favorite is None or bool(p.get("is_favorite", False)) == args.is_favorite)
        and (args.is_archived is None or bool(p.get("is_archived", False)) == args.is_archived)
        and (args.color is None or p.get("color", "charcoal") == args.color)
    ]
    views = [_project_view(ctx, p) for p in rows]
    items = [
        (search_text(v["name"], v["description"], *(x for c in v["collaborators"] for x in c.values())), v)
        for v in views
    ]
    return retrieve(items, args, ("created_at",), default_sort="-created_at", then_by="project_id")


@apis.api("Change a project's name, color, description or flags.")
def update_project(ctx: ToolContext, args: UpdateProjectArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    project = _project(ctx, user, args.project_id)
    if args.name is not None:
        if project.get("is_inbox") and args.name != "Inbox":
            raise ToolFailed("The name of the Inbox project cannot be changed.")
        check_unique(
            ctx.rows(APP, "projects"),
            "Project",
            {"user_id": project["user_id"], "name": args.name},
            but=project,
        )
        project["name"] = args.name
    update_fields(project, args, "color", "description", "is_favorite", "is_archived")
    _project_changed(ctx, project, user)
    return {"message": "Project information updated."}


@apis.api("Delete a project with its sections and tasks.")
def delete_project(ctx: ToolContext, args: ProjectArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    project = _project(ctx, user, args.project_id)
    if project.get("is_inbox"):
        raise ToolFailed("You cannot delete your Inbox project.")
    project_id = project["project_id"]
    _notify(
        ctx,
        project,
        user,
        kind="project_deleted",
        title="Project deleted.",
        message=f"{full_name(user)} has deleted the '{project['name']}' project.",
        data={"project_id": project_id},
    )
    _drop_tasks(ctx, {t["task_id"] for t in _tasks_of(ctx, project_id)})
    app = ctx.app(APP)
    app["sections"] = [s for s in ctx.rows(APP, "sections") if s.get("project_id") != project_id]
    app["projects"] = [p for p in ctx.rows(APP, "projects") if p is not project]
    return {"message": "Project and its associated, sections, tasks and sub_tasks have been deleted."}


# ---------------------------------------------------------------- sections


@apis.api("Add a section to a project.")
def create_section(ctx: ToolContext, args: CreateSectionArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    project = _project(ctx, user, args.project_id)
    siblings = _sections_of(ctx, project["project_id"])
    section = {
        "project_id": project["project_id"],
        "name": args.name,
        "order_index": 0,
        "created_at": ctx.timestamp(),
    }
    section = ctx.insert(APP, "sections", section, unique=("Section", ("project_id", "name")))
    _place(siblings, section, args.order_index)
    _project_changed(ctx, project, user)
    return {"message": "Project section created.", "section_id": section["section_id"]}


@apis.api("List the sections of a project in order.")
def show_sections(ctx: ToolContext, args: ProjectArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    project = _project(ctx, user, args.project_id)
    return [_section_view(ctx, s) for s in _sections_of(ctx, project["project_id"])]


@apis.api("Rename or move a section.")
def update_section(ctx: ToolContext, args: UpdateSectionArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    section, project = _in_project(ctx, user, "sections", args.section_id, "section")
    if args.name is not None:
        siblings = _sections_of(ctx, project["project_id"])
        check_unique(
            siblings, "Section", {"project_id": project["project_id"], "name": args.name}, but=section
        )
        section["name"] = args.name
    if args.order_index is not None:
        _place(_sections_of(ctx, project["project_id"]), section, args.order_index)
    _project_changed(ctx, project, user)
    return {"message": "Project section information updated."}


@apis.api("Delete a section with its tasks.")
def delete_section(ctx: ToolContext, args: SectionArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    section, project = _in_project(ctx, user, "sections", args.section_id, "section")
    _drop_tasks(
        ctx, {t["task_id"] for t in ctx.rows(APP, "tasks") if t.get("section_id") == section["section_id"]}
    )
    ctx.app(APP)["sections"] = [s for s in ctx.rows(APP, "sections") if s is not section]
    _project_changed(ctx, project, user)
    return {"message": "Project section and its associated tasks and sub_tasks have been deleted."}


# ---------------------------------------------------------------- tasks


def _task_siblings(ctx: ToolContext, project_id: Any, section_id: Any) -> list[dict[str, Any]]:
    return [t for t in _tasks_of(ctx, project_id) if t.get("section_id") == section_id]


@apis.api("Add a task to a project (0: your Inbox).")
def create_task(ctx: ToolContext, args: CreateTaskArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    due_date = _due(args.due_date)
    project = _project(ctx, user, args.project_id)
    if args.section_id is not None:
        section = ctx.find(APP, "sections", args.section_id, "section")
        if section.get("project_id") != project["project_id"]:
            raise ToolFailed("The section does not belong to the project.")
    siblings = _task_siblings(ctx, project["project_id"], args.section_id)
    task = ctx.insert(
        APP,
        "tasks",
        {
            "project_id": project["project_id"],
            "section_id": args.section_id,
            "user_id": user["user_id"],
            "title": args.title,
            "description": args.description,
            "due_date": due_date,
            "priority": args.priority,
            "is_completed": False,
            "duration": None if args.duration is None else round(args.duration, 2),
            "duration_unit": args.duration_unit,
            "order_index": 0,
            "assignee_id": None,
            "assigner_id": None,
            "label_ids": [],
            "created_at": ctx.timestamp(),
        },
    )
    _place(siblings, task, args.order_index)
    _task_event(ctx, project, task, user, "added")
    return {"message": "Task created.", "task_id": task["task_id"]}


@apis.api("Assign a task to a collaborator, or unassign it without an email.")
def assign_or_unassign_task(ctx: ToolContext, args: AssignArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    task, project = _task(ctx, user, args.task_id)
    if args.assignee_email is None:
        task["assignee_id"] = task["assigner_id"] = None
        return {"message": "Task unassigned."}
    assignee = ctx.find_by(APP, "users", "email", args.assignee_email, "user")
    if assignee["user_id"] not in _members(project):
        raise ToolFailed(
            "The assignee is not a collaborator on this project, so you cannot assign them tasks."
        )
    task["assignee_id"] = assignee["user_id"]
    task["assigner_id"] = user["user_id"]
    _send(
        ctx,
        [assignee["user_id"]],
        kind="task_assigned",
        title="You are assigned a task.",
        message=f"{full_name(user)} has assigned you a task in the '{project['name']}' project.",
        data={
            "project_id": project["project_id"],
            "task_id": task["task_id"],
            "action_by_id": user["user_id"],
        },
    )
    return {"message": "Task assigned."}


@apis.api("List a project's tasks, grouped by section, with filters.")
def show_tasks(ctx: ToolContext, args: ShowTasksArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    check_sort(args.sort_by, TASK_SORT_FIELDS)
    project = _project(ctx, user, args.project_id)
    ranged = args.min_due_date != MIN_DATE or args.max_due_date != MAX_DATE
    if args.due_today and args.overdue:
        raise ToolFailed("You cannot set both today and overdue to true.")
    if args.due_today and ranged:
        raise ToolFailed("You cannot set both today and min/max due date.")
    if args.overdue and ranged:
        raise ToolFailed("You cannot set both overdue and min/max due date.")
    tasks = _tasks_of(ctx, project["project_id"])
    if args.section_id is not None:
        wanted = None if args.section_id == 0 else args.section_id
        tasks = [t for t in tasks if t.get("section_id") == wanted]
    for email, field in ((args.assignee_email, "assignee_id"), (args.assigner_email, "assigner_id")):
        if email is not None:
            who = ctx.find_by(APP, "users", "email", email, "user")
            tasks = [t for t in tasks if t.get(field) == who["user_id"]]
    if args.priority is not None:
        tasks = [t for t in tasks if t.get("priority", "medium") == args.priority]
    if args.is_completed is not None:
        tasks = [t for t in tasks if bool(t.get("is_completed", False)) == args.is_completed]
    today = ctx.timestamp()[:10]
    due = {id(t): stored_time(t.get("due_date")) for t in tasks}
    if args.due_today:
        tasks = [t for t in tasks if (d := due[id(t)]) is not None and d.strftime("%Y-%m-%d") == today]
    if args.overdue:
        tasks = [t for t in tasks if (d := due[id(t)]) is not None and d.strftime("%Y-%m-%d") < today]
    if ranged:
        bounds = date_bounds(args.min_due_date, args.max_due_date, "min_due_date", "max_due_date")
        tasks = [t for t in tasks if in_dates(t.get("due_date"), bounds)]
    if args.label_id is not None:
        label = ctx.find(APP, "labels", args.label_id, "label")
        tasks = [t for t in tasks if label.get("name") in [lab["name"] for lab in _task_labels(ctx, t)]]
    ordered = sort_rows(tasks, args.sort_by, key=_sort_key)
    sections: list[JsonObject] = []
    for section in _sections_of(ctx, project["project_id"]):
        inside = [_task_short(ctx, t) for t in ordered if t.get("section_id") == section["section_id"]]
        if inside:
            sections.append({"section_id": section["section_id"], "tasks": inside})
    return {
        "project_id": project["project_id"],
        "no_section_tasks": [_task_short(ctx, t) for t in ordered if t.get("section_id") is None],
        "sections": sections,
    }


@apis.api("Show one task in full.")
def show_task(ctx: ToolContext, args: TaskArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    task, _ = _task(ctx, user, args.task_id)
    return _task_view(ctx, task)


@apis.api("Change a task, mark it done, or move it.")
def update_task(ctx: ToolContext, args: UpdateTaskArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    task, project = _task(ctx, user, args.task_id)
    due_date = _due(args.due_date)
    update_fields(task, args, "title", "description", "duration_unit", "priority", "is_completed")
    if due_date is not None:
        task["due_date"] = due_date
    if args.duration is not None:
        task["duration"] = round(args.duration, 2)
    if args.order_index is not None:
        _place(_task_siblings(ctx, task["project_id"], task.get("section_id")), task, args.order_index)
    _task_event(ctx, project, task, user, "updated")
    return {"message": "Task information updated."}


@apis.api("Delete a task with its sub-tasks.")
def delete_task(ctx: ToolContext, args: TaskArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    task, project = _task(ctx, user, args.task_id)
    _drop_tasks(ctx, {task["task_id"]})
    _task_event(ctx, project, task, user, "deleted")
    return {"message": "Task and its associated sub_tasks have been deleted."}


# ---------------------------------------------------------------- sub-tasks


def _sub_tasks_of(ctx: ToolContext, task_id: Any) -> list[dict[str, Any]]:
    rows = [s for s in ctx.rows(APP, "sub_tasks") if s.get("task_id") == task_id]
    return sorted(rows, key=lambda s: int(s.get("order_index") or 0))


@apis.api("Add a sub-task to a task.")
def create_sub_task(ctx: ToolContext, args: CreateSubTaskArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    task, _ = _task(ctx, user, args.task_id)
    siblings = _sub_tasks_of(ctx, task["task_id"])
    sub_task = ctx.insert(
        APP,
        "sub_tasks",
        {
            "task_id": task["task_id"],
            "title": args.title,
            "description": args.description,
            "due_date": _due(args.due_date),
            "priority": args.priority,
            "is_completed": False,
            "duration": None,
            "duration_unit": None,
            "order_index": 0,
            "created_at": ctx.timestamp(),
        },
    )
    _place(siblings, sub_task, args.order_index)
    return {"message": "Subtask created.", "sub_task_id": sub_task["sub_task_id"]}


@apis.api("List a task's sub-tasks in order.")
def show_sub_tasks(ctx: ToolContext, args: TaskArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    task, _ = _task(ctx, user, args.task_id)
    return [_sub_task_view(s) for s in _sub_tasks_of(ctx, task["task_id"])]


def _sub_task(ctx: ToolContext, user: dict[str, Any], sub_task_id: int) -> dict[str, Any]:
    sub_task = ctx.find(APP, "sub_tasks", sub_task_id, "sub task")
    _task(ctx, user, sub_task.get("task_id"))
    return sub_task


@apis.api("Change a sub-task, mark it done, or move it.")
def update_sub_task(ctx: ToolContext, args: UpdateSubTaskArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    sub_task = _sub_task(ctx, user, args.sub_task_id)
    due_date = _due(args.due_date)
    update_fields(sub_task, args, "title", "description", "priority", "is_completed")
    if due_date is not None:
        sub_task["due_date"] = due_date
    if args.order_index is not None:
        _place(_sub_tasks_of(ctx, sub_task["task_id"]), sub_task, args.order_index)
    return {"message": "Subtask information updated."}


@apis.api("Delete a sub-task.")
def delete_sub_task(ctx: ToolContext, args: SubTaskArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    sub_task = _sub_task(ctx, user, args.sub_task_id)
    ctx.app(APP)["sub_tasks"] = [s for s in ctx.rows(APP, "sub_tasks") if s is not sub_task]
    return {"message": "Subtask has been deleted."}


# ---------------------------------------------------------------- labels


@apis.api("Create a label of yours.")
def create_label(ctx: ToolContext, args: CreateLabelArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    label = {"user_id": user["user_id"], "name": args.name, "color": args.color}
    label = ctx.insert(APP, "labels", label, unique=("Label", ("user_id", "name")))
    return {"message": "Label created.", "label_id": label["label_id"]}


def _similarity(query: str, name: Any) -> float:
    return difflib.SequenceMatcher(None, query, str(name)).ratio()


@apis.api("List your labels, or a task's, ranked by name.")
def search_labels(ctx: ToolContext, args: SearchLabelsArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    mine = ctx.mine(APP, "labels", user)
    if args.task_id is None:
        labels = mine
    else:
        task, _ = _task(ctx, user, args.task_id)
        attached = set(task.get("label_ids") or [])
        if args.task_attached:
            labels = [label for label in ctx.rows(APP, "labels") if label["label_id"] in attached]
        else:
            labels = [label for label in mine if label["label_id"] not in attached]
    if args.color is not None:
        labels = [label for label in labels if label.get("color", "charcoal") == args.color]
    query = " ".join(args.query.lower().split())
    if query:
        labels = sorted(labels, key=lambda label: _similarity(query, label.get("name", "")), reverse=True)
    return [_label_view(ctx, label) for label in page(labels, args.page_index, args.page_limit)]


@apis.api("Delete a label of yours (it leaves every task).")
def delete_label(ctx: ToolContext, args: LabelArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    label = ctx.find(APP, "labels", args.label_id, "label")
    check_owner(user, label, "label")
    for task in ctx.rows(APP, "tasks"):
        if label["label_id"] in (task.get("label_ids") or []):
            task["label_ids"] = [i for i in task["label_ids"] if i != label["label_id"]]
    ctx.app(APP)["labels"] = [r for r in ctx.rows(APP, "labels") if r is not label]
    return {"message": "Label has been deleted."}


@apis.api("Put a label on a task.")
def add_label_to_task(ctx: ToolContext, args: TaskLabelArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    task, _ = _task(ctx, user, args.task_id)
    label = ctx.find(APP, "labels", args.label_id, "label")
    current = list(task.get("label_ids") or [])
    if label["label_id"] in current:
        raise ToolFailed("Label is already added to the task.")
    task["label_ids"] = [*current, label["label_id"]]
    return {"message": "Label added to the task."}


@apis.api("Take a label off a task.")
def remove_label_from_task(ctx: ToolContext, args: TaskLabelArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    task, _ = _task(ctx, user, args.task_id)
    label = ctx.find(APP, "labels", args.label_id, "label")
    current = list(task.get("label_ids") or [])
    if label["label_id"] not in current:
        raise ToolFailed("Label is already not added to the task.")
    task["label_ids"] = [i for i in current if i != label["label_id"]]
    return {"message": "Label removed from the task."}


# ---------------------------------------------------------------- comments


def _attachment_names(ctx: ToolContext, paths: list[str]) -> list[str]:
    """The base names of files to attach; each must be a file of the workspace (``~/`` and a
    leading ``/`` are read as the workspace root, which the file_system app serves)."""
    names = []
    for path in paths:
        relative = path.strip().removeprefix("~").lstrip("/")
        key = posixpath.normpath(relative) if relative else ""
        if not key or key not in ctx.state.files:
            raise ToolNotFound([f"The file with path {path} does not exist."])
        names.append(posixpath.basename(key))
    if len(names) != len(set(names)):
        raise ToolFailed(
            "There are multiple attachment_file_paths with the same (base) file name. "
            "File names must be unique."
        )
    return names


@apis.api("Comment on a task, optionally attaching files.")
def post_task_comment(ctx: ToolContext, args: PostCommentArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    task, project = _task(ctx, user, args.task_id)
    if not args.content:
        raise ToolFailed("Comment content cannot be empty.")
    names = _attachment_names(ctx, list(args.attachment_file_paths or []))
    comment = ctx.insert(
        APP,
        "task_comments",
        {
            "task_id": task["task_id"],
            "user_id": user["user_id"],
            "content": args.content,
            "attachment_file_names": names,
            "created_at": ctx.timestamp(),
        },
    )
    _comment_event(ctx, project, comment, user, "added")
    return {"message": "Comment posted on the task.", "task_comment_id": comment["task_comment_id"]}


@apis.api("List a task's comments.")
def show_task_comments(ctx: ToolContext, args: TaskPageArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    task, _ = _task(ctx, user, args.task_id)
    comments = [c for c in ctx.rows(APP, "task_comments") if c.get("task_id") == task["task_id"]]
    comments.sort(key=lambda c: int(c["task_comment_id"]))
    return [_comment_view(ctx, c) for c in page(comments, args.page_index, args.page_limit)]


@apis.api("Show one task comment.")
def show_task_comment(ctx: ToolContext, args: CommentArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    comment = ctx.find(APP, "task_comments", args.task_comment_id, "task comment")
    _task(ctx, user, comment.get("task_id"))
    return _comment_view(ctx, comment)


def _own_comment(
    ctx: ToolContext, user: dict[str, Any], comment_id: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    comment = ctx.find(APP, "task_comments", comment_id, "task comment")
    check_owner(user, comment, "task comment")
    _, project = _task(ctx, user, comment.get("task_id"))
    return comment, project


@apis.api("Change the text of your comment.")
def update_task_comment(ctx: ToolContext, args: UpdateCommentArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    comment, project = _own_comment(ctx, user, args.task_comment_id)
    if args.content is not None:
        comment["content"] = args.content
    _comment_event(ctx, project, comment, user, "updated")
    return {"message": "Comment updated."}


@apis.api("Delete a comment of yours.")
def delete_task_comment(ctx: ToolContext, args: CommentArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    comment, project = _own_comment(ctx, user, args.task_comment_id)
    ctx.app(APP)["task_comments"] = [c for c in ctx.rows(APP, "task_comments") if c is not comment]
    _comment_event(ctx, project, comment, user, "deleted")
    return {"message": "Comment has been deleted."}


# ---------------------------------------------------------------- notifications


def _notifications_of(ctx: ToolContext, user: dict[str, Any], read: bool | None) -> list[dict[str, Any]]:
    return [
        n for n in ctx.mine(APP, "notifications", user) if read is None or bool(n.get("read", False)) == read
    ]


@apis.api("List your notifications, newest first.")
def show_notifications(ctx: ToolContext, args: ShowNotificationsArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    rows = sorted(
        _notifications_of(ctx, user, args.read),
        key=lambda n: (str(n.get("created_at") or ""), int(n["notification_id"])),
        reverse=True,
    )
    return [_notification_view(n) for n in page(rows, args.page_index, args.page_limit)]


@apis.api("Count your notifications.")
def show_notifications_count(ctx: ToolContext, args: CountNotificationsArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    return {"notifications_count": len(_notifications_of(ctx, user, args.read))}


@apis.api("Mark a notification read or unread.")
def mark_notification(ctx: ToolContext, args: MarkNotificationArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    notification = ctx.find(APP, "notifications", args.notification_id, "notification")
    check_owner(user, notification, "notification")
    notification["read"] = args.read
    return {"message": f"Marked notification as {'read' if args.read else 'unread'}."}


@apis.api("Delete all your notifications.")
def delete_notifications(ctx: ToolContext, args: AuthArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    ctx.app(APP)["notifications"] = [
        n for n in ctx.rows(APP, "notifications") if n.get("user_id") != user["user_id"]
    ]
    return {"message": "Deleted all notifications."}


# ---------------------------------------------------------------- tools


TOOLS = apis.tools
