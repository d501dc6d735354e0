"""The ``simple_note`` app: each user's notes with titles, tags and pins, on AppWorld's surface.

Records (``apps["simple_note"]``):

- ``users``: the seed's people with a simple_note account (``base`` gives the fields).
- ``notes``: ``{note_id, user_id (owner), title, content, tags: [str], pinned, created_at,
  updated_at}`` (a title is unique among one user's notes).

Tools (``mcp_appworld_simple_note__<api>``): ``login``, ``logout``, ``show_account``,
``show_profile``, ``create_note`` -> ``{message, note_id}``, ``show_note`` (with content),
``update_note`` (title, content, tags, pinned: pinning is done here), ``add_content_to_note``
(append or prepend, on a new line), ``delete_note``, ``search_notes`` (no content; a query ranks
the notes, it does not filter them; ``tags`` and ``pinned`` filter; pinned notes come first on
each page unless ``dont_reorder_pinned``). A note of another user is refused (422).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    AppApis,
    AuthArgs,
    AuthPageArgs,
    Row,
    ToolContext,
    ToolFailed,
    ToolNotFound,
    check_unique,
    id_field,
    login_tool,
    logout_tool,
    retrieve,
    search_text,
    show_account_tool,
    show_profile_tool,
    update_fields,
)

APP = "simple_note"
apis = AppApis(APP)
_SORT_FIELDS = ("created_at", "updated_at", "pinned")

# ---------------------------------------------------------------- arguments


class CreateNoteArgs(AuthArgs):
    title: str = Field(min_length=1, description="The note's title (unique among your notes).")
    content: str = Field(description="The note's text.")
    tags: list[str] | None = Field(default=None, description="Tags for the note.")
    pinned: bool = Field(default=False, description="Whether to pin the note.")


class NoteArgs(AuthArgs):
    note_id: int = id_field("The note's id.")


class UpdateNoteArgs(NoteArgs):
    title: str | None = Field(default=None, min_length=1, description="New title.")
    content: str | None = Field(default=None, description="New content (replaces the old).")
    tags: list[str] | None = Field(default=None, description="New tags (replace the old).")
    pinned: bool | None = Field(default=None, description="New pinned status.")


class AddContentArgs(NoteArgs):
    append_or_prepend: Literal["append", "prepend"] = Field(
        description="Add the text after (append) or before (prepend) the content."
    )
    added_content: str = Field(description="Text to add; a new line separates it from the content.")


class SearchNotesArgs(AuthPageArgs):
    query: str = Field(default="", description="Words to look for in titles, contents and tags (ranks).")
    tags: list[str] | None = Field(default=None, description="Only notes with at least one of these tags.")
    pinned: bool | None = Field(default=None, description="Only pinned (true) or unpinned (false) notes.")
    dont_reorder_pinned: bool | None = Field(
        default=None, description="Keep pinned notes in place instead of first."
    )
    sort_by: str | None = Field(
        default=None, description="+field or -field: created_at, updated_at or pinned (default -updated_at)."
    )


# ---------------------------------------------------------------- helpers


def _own_note(ctx: ToolContext, user: Row, note_id: int) -> Row:
    return ctx.owned(APP, "notes", note_id, "note", user)


def _check_title(ctx: ToolContext, user: Row, title: str, note: Row | None = None) -> None:
    """A title is unique among a user's notes (refused with status ``not_found``)."""
    unique = {"user_id": user["user_id"], "title": title}
    check_unique(ctx.rows(APP, "notes"), "Note", unique, but=note, error=ToolNotFound)


def _view(note: dict[str, Any], *, content: bool) -> JsonObject:
    out: JsonObject = {"note_id": note["note_id"], "title": note.get("title")}
    if content:
        out["content"] = note.get("content", "")
    out.update(
        {
            "tags": list(note.get("tags") or []),
            "created_at": note.get("created_at"),
            "updated_at": note.get("updated_at"),
            "pinned": bool(note.get("pinned")),
        }
    )
    return out


def _sort_value(note: Row, name: str) -> Any:
    """What a note sorts by: a missing ``pinned`` is false."""
    return bool(note.get(name)) if name == "pinned" else note.get(name)


# ---------------------------------------------------------------- APIs


apis.add(
    login_tool(APP),
    logout_tool(APP),
    show_account_tool(APP, "Show your own Simple Note account details."),
    show_profile_tool(APP, "Show the public profile of a Simple Note user by email."),
)


@apis.api("Create a note (titles are unique among your notes).")
def create_note(ctx: ToolContext, args: CreateNoteArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    tags = [tag.strip() for tag in args.tags or []]
    if any(not tag for tag in tags):
        raise ToolFailed("Tags must be at least 1 character long.")
    _check_title(ctx, user, args.title)
    now = ctx.timestamp()
    note = ctx.insert(
        APP,
        "notes",
        {
            "user_id": user["user_id"],
            "title": args.title,
            "content": args.content,
            "tags": tags,
            "pinned": args.pinned,
            "created_at": now,
            "updated_at": now,
        },
    )
    return {"message": "Note created.", "note_id": note["note_id"]}


@apis.api("Show one of your notes with its content.")
def show_note(ctx: ToolContext, args: NoteArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    return _view(_own_note(ctx, user, args.note_id), content=True)


@apis.api("Change a note's title, content (replaced whole), tags or pinned status.")
def update_note(ctx: ToolContext, args: UpdateNoteArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    note = _own_note(ctx, user, args.note_id)
    if args.title is not None:
        _check_title(ctx, user, args.title, note)
    update_fields(note, args, "title", "content", "pinned")
    if args.tags is not None:
        note["tags"] = list(args.tags)
    note["updated_at"] = ctx.timestamp()
    return {"message": "Note updated."}


@apis.api("Append or prepend text to a note's content, on its own line.")
def add_content_to_note(ctx: ToolContext, args: AddContentArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    note = _own_note(ctx, user, args.note_id)
    content = str(note.get("content") or "")
    if args.append_or_prepend == "append":
        note["content"] = f"{content}\n{args.added_content}"
        return {"message": "Content appended to note."}
    note["content"] = f"{args.added_content}\n{content}"
    return {"message": "Content prepended to note."}


@apis.api("Delete one of your notes.")
def delete_note(ctx: ToolContext, args: NoteArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    ctx.remove(APP, "notes", _own_note(ctx, user, args.note_id))
    return {"message": "Note deleted."}


@apis.api(
    "List your notes without their content: a query ranks them (it does not filter), tags and"
    " pinned filter, pinned notes come first."
)
def search_notes(ctx: ToolContext, args: SearchNotesArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    notes = sorted(ctx.mine(APP, "notes", user), key=lambda n: n["note_id"])
    if args.tags:
        wanted = {t.lower() for t in args.tags}
        notes = [n for n in notes if wanted & {str(t).lower() for t in n.get("tags") or []}]
    if args.pinned is not None:
        notes = [n for n in notes if bool(n.get("pinned")) == args.pinned]
    items = [(search_text(n.get("title", ""), n.get("content", ""), n.get("tags", "")), n) for n in notes]
    notes = retrieve(
        items, args, _SORT_FIELDS, default_sort="-updated_at", key=_sort_value, then_by="note_id"
    )
    if not args.dont_reorder_pinned:
        notes = [n for n in notes if n.get("pinned")] + [n for n in notes if not n.get("pinned")]
    return [_view(n, content=False) for n in notes]


TOOLS = apis.tools
