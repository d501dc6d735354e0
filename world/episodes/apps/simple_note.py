"""The ``simple_note`` app: notes with titles and tags.

Records (``apps["simple_note"]``):

- ``notes``: ``{note_id, title, content, tags: [str], created_at, updated_at}`` (virtual minutes).

Tools (``mcp_appworld_simple_note__<api>``): ``create_note(title, content, tags?)`` ->
``{note_id}``, ``update_note(note_id, title?, content?)`` (at least one of them),
``search_notes(query)`` (title, content, tags), ``show_note(note_id)``, ``delete_note(note_id)``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from messages.probes import JsonObject
from world.episodes.apps.base import Args, EpisodeTool, ToolContext, app_tool, id_field, pick, search

APP = "simple_note"

SEED: dict[str, Any] = {
    "notes": [
        {
            "note_id": 1,
            "title": "Groceries",
            "content": "oat milk, coffee beans, spinach, lemons",
            "tags": ["shopping"],
            "created_at": -2880.0,
            "updated_at": -2880.0,
        },
        {
            "note_id": 2,
            "title": "Gift ideas",
            "content": "Jordan: hiking poles. Chris: a board game.",
            "tags": ["gifts", "family"],
            "created_at": -10080.0,
            "updated_at": -4320.0,
        },
    ]
}


class CreateNoteArgs(Args):
    title: str = Field(min_length=1)
    content: str
    tags: list[str] = []


class UpdateNoteArgs(Args):
    note_id: int = id_field("The note's id.")
    title: str | None = Field(default=None, min_length=1)
    content: str | None = None

    @model_validator(mode="after")
    def _something(self) -> UpdateNoteArgs:
        if self.title is None and self.content is None:
            raise ValueError("give a new title or content")
        return self


class NoteArgs(Args):
    note_id: int = id_field("The note's id.")


class QueryArgs(Args):
    query: str = ""


def create_note(ctx: ToolContext, args: CreateNoteArgs) -> JsonObject:
    note_id = ctx.new_id(APP, "notes")
    ctx.rows(APP, "notes").append(
        {
            "note_id": note_id,
            "title": args.title,
            "content": args.content,
            "tags": list(args.tags),
            "created_at": ctx.now,
            "updated_at": ctx.now,
        }
    )
    return {"note_id": note_id}


def update_note(ctx: ToolContext, args: UpdateNoteArgs) -> JsonObject:
    note = ctx.find(APP, "notes", args.note_id, "note")
    if args.title is not None:
        note["title"] = args.title
    if args.content is not None:
        note["content"] = args.content
    note["updated_at"] = ctx.now
    return {"note_id": args.note_id, "updated": True}


def search_notes(ctx: ToolContext, args: QueryArgs) -> JsonObject:
    found = search(ctx.rows(APP, "notes"), args.query, "note_id", "title", "content", "tags")
    return {"notes": [pick(n, "note_id", "title", "tags", "updated_at") for n in found]}


def show_note(ctx: ToolContext, args: NoteArgs) -> JsonObject:
    return dict(ctx.find(APP, "notes", args.note_id, "note"))


def delete_note(ctx: ToolContext, args: NoteArgs) -> JsonObject:
    note = ctx.find(APP, "notes", args.note_id, "note")
    ctx.rows(APP, "notes").remove(note)
    return {"note_id": args.note_id, "deleted": True}


TOOLS: tuple[EpisodeTool[Any], ...] = (
    app_tool(APP, "create_note", "Create a note.", CreateNoteArgs, create_note),
    app_tool(APP, "update_note", "Change a note's title or content.", UpdateNoteArgs, update_note),
    app_tool(APP, "search_notes", "Search notes by title, content and tags.", QueryArgs, search_notes),
    app_tool(APP, "show_note", "Show one note.", NoteArgs, show_note),
    app_tool(APP, "delete_note", "Delete a note.", NoteArgs, delete_note),
)
