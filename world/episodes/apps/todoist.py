"""The ``todoist`` app: projects and tasks.

Records (``apps["todoist"]``):

- ``projects``: ``{project_id, name}`` (project 1, "Inbox", holds tasks given no project).
- ``tasks``: ``{task_id, content, project_id, due_date, priority, completed, created_at}``
  (``due_date``: ``"YYYY-MM-DD"`` or ``"YYYY-MM-DD HH:MM"`` or null; ``priority`` 1 (normal) to 4
  (urgent)).

Tools (``mcp_appworld_todoist__<api>``): ``create_task(content, project_id?, due_date?,
priority=1)`` -> ``{task_id}``, ``update_task(task_id, content?, due_date?, priority?,
completed?)`` (at least one change), ``delete_task(task_id)``, ``search_tasks(query)`` (content;
an empty query lists every task), ``create_project(name)`` (failed if the name is taken),
``update_project(project_id, name)``, ``delete_project(project_id)`` (its tasks go with it),
``show_projects()`` (with open task counts).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from messages.probes import JsonObject
from world.episodes.apps.base import (
    Args,
    EpisodeTool,
    NoArgs,
    ToolContext,
    ToolFailed,
    app_tool,
    id_field,
    optional_id_field,
    search,
)

APP = "todoist"
INBOX_PROJECT_ID = 1


def _due(value: str) -> str:
    text = value.strip()
    for fmt in ("%Y-%m-%d", "%Y-%m-%d %H:%M"):
        try:
            datetime.strptime(text, fmt)
        except ValueError:
            continue
        return text
    raise ValueError(f"{value!r} is not a date: use YYYY-MM-DD or YYYY-MM-DD HH:MM")


DueDate = Annotated[str, AfterValidator(_due)]
Priority = Annotated[int, Field(ge=1, le=4, description="1 (normal) to 4 (urgent).")]

SEED: dict[str, Any] = {
    "projects": [
        {"project_id": INBOX_PROJECT_ID, "name": "Inbox"},
        {"project_id": 2, "name": "Home"},
        {"project_id": 3, "name": "Work"},
    ],
    "tasks": [
        {
            "task_id": 1,
            "content": "Renew car insurance",
            "project_id": 2,
            "due_date": "2025-06-30",
            "priority": 3,
            "completed": False,
            "created_at": -2880.0,
        },
        {
            "task_id": 2,
            "content": "Prepare slides for the Monday standup",
            "project_id": 3,
            "due_date": None,
            "priority": 2,
            "completed": False,
            "created_at": -1440.0,
        },
    ],
}


class CreateTaskArgs(Args):
    content: str = Field(min_length=1)
    project_id: int | None = optional_id_field("The project (default: Inbox).")
    due_date: DueDate | None = None
    priority: Priority = 1


class UpdateTaskArgs(Args):
    task_id: int = id_field("The task's id.")
    content: str | None = Field(default=None, min_length=1)
    due_date: DueDate | None = None
    priority: Priority | None = None
    completed: bool | None = None

    @model_validator(mode="after")
    def _something(self) -> UpdateTaskArgs:
        if (
            self.content is None
            and self.due_date is None
            and self.priority is None
            and self.completed is None
        ):
            raise ValueError("give at least one of content, due_date, priority, completed")
        return self


class TaskArgs(Args):
    task_id: int = id_field("The task's id.")


class QueryArgs(Args):
    query: str = ""


class CreateProjectArgs(Args):
    name: str = Field(min_length=1)


class UpdateProjectArgs(Args):
    project_id: int = id_field("The project's id.")
    name: str = Field(min_length=1)


class ProjectArgs(Args):
    project_id: int = id_field("The project's id.")


def create_task(ctx: ToolContext, args: CreateTaskArgs) -> JsonObject:
    project_id = INBOX_PROJECT_ID if args.project_id is None else args.project_id
    ctx.find(APP, "projects", project_id, "project")
    task_id = ctx.new_id(APP, "tasks")
    ctx.rows(APP, "tasks").append(
        {
            "task_id": task_id,
            "content": args.content,
            "project_id": project_id,
            "due_date": args.due_date,
            "priority": args.priority,
            "completed": False,
            "created_at": ctx.now,
        }
    )
    return {"task_id": task_id, "project_id": project_id}


def update_task(ctx: ToolContext, args: UpdateTaskArgs) -> JsonObject:
    task = ctx.find(APP, "tasks", args.task_id, "task")
    changes = args.model_dump(exclude={"task_id"}, exclude_none=True)
    task.update(changes)
    return {"task_id": args.task_id, "updated": sorted(changes)}


def delete_task(ctx: ToolContext, args: TaskArgs) -> JsonObject:
    task = ctx.find(APP, "tasks", args.task_id, "task")
    ctx.rows(APP, "tasks").remove(task)
    return {"task_id": args.task_id, "deleted": True}


def search_tasks(ctx: ToolContext, args: QueryArgs) -> JsonObject:
    return {"tasks": search(ctx.rows(APP, "tasks"), args.query, "task_id", "content")}


def _name_taken(ctx: ToolContext, name: str, but: int | None = None) -> None:
    for project in ctx.rows(APP, "projects"):
        if (
            str(project.get("name", "")).casefold() == name.strip().casefold()
            and project["project_id"] != but
        ):
            raise ToolFailed(f"a project named {project['name']!r} exists (id {project['project_id']})")


def create_project(ctx: ToolContext, args: CreateProjectArgs) -> JsonObject:
    _name_taken(ctx, args.name)
    project_id = ctx.new_id(APP, "projects")
    ctx.rows(APP, "projects").append({"project_id": project_id, "name": args.name})
    return {"project_id": project_id, "name": args.name}


def update_project(ctx: ToolContext, args: UpdateProjectArgs) -> JsonObject:
    project = ctx.find(APP, "projects", args.project_id, "project")
    _name_taken(ctx, args.name, but=args.project_id)
    project["name"] = args.name
    return {"project_id": args.project_id, "name": args.name}


def delete_project(ctx: ToolContext, args: ProjectArgs) -> JsonObject:
    project = ctx.find(APP, "projects", args.project_id, "project")
    tasks = ctx.rows(APP, "tasks")
    gone = [t["task_id"] for t in tasks if t.get("project_id") == args.project_id]
    tasks[:] = [t for t in tasks if t.get("project_id") != args.project_id]
    ctx.rows(APP, "projects").remove(project)
    return {"project_id": args.project_id, "deleted": True, "deleted_task_ids": gone}


def show_projects(ctx: ToolContext, args: NoArgs) -> JsonObject:
    tasks = ctx.rows(APP, "tasks")
    rows = [
        {
            **p,
            "open_tasks": sum(
                1 for t in tasks if t.get("project_id") == p["project_id"] and not t.get("completed")
            ),
        }
        for p in ctx.rows(APP, "projects")
    ]
    return {"projects": rows}


TOOLS: tuple[EpisodeTool[Any], ...] = (
    app_tool(
        APP,
        "create_task",
        "Create a task, optionally in a project with a due date.",
        CreateTaskArgs,
        create_task,
    ),
    app_tool(APP, "update_task", "Change a task or mark it completed.", UpdateTaskArgs, update_task),
    app_tool(APP, "delete_task", "Delete a task.", TaskArgs, delete_task),
    app_tool(APP, "search_tasks", "Search tasks by content (empty query: all).", QueryArgs, search_tasks),
    app_tool(APP, "create_project", "Create a project.", CreateProjectArgs, create_project),
    app_tool(APP, "update_project", "Rename a project.", UpdateProjectArgs, update_project),
    app_tool(APP, "delete_project", "Delete a project and its tasks.", ProjectArgs, delete_project),
    app_tool(APP, "show_projects", "List projects with their open task counts.", NoArgs, show_projects),
)
