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

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    AppArgs,
    AuthArgs,
    AuthPageArgs,
    EpisodeTool,
    ToolContext,
    ToolFailed,
    ToolNotFound,
    app_tool,
    id_field,
    login_tool,
    logout_tool,
    page,
    ranked,
)

APP = "simple_note"
_EMAIL = r"^[^@\s]+@[^@\s]+$"
_SORT_FIELDS = ("created_at", "updated_at", "pinned")

# ---------------------------------------------------------------- arguments


class ProfileArgs(AppArgs):
    email: str | None = Field(
        default=None, pattern=_EMAIL, description="Email of the user whose public profile to show."
    )


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


def _own_note(ctx: ToolContext, user: dict[str, Any], note_id: int) -> dict[str, Any]:
    note = ctx.find(APP, "notes", note_id, "note")
    if note.get("user_id") != user["user_id"]:
        raise ToolFailed("The given note does not belong to you, so you cannot access it.")
    return note


def _check_title(ctx: ToolContext, user: dict[str, Any], title: str, note_id: int | None = None) -> None:
    for note in ctx.rows(APP, "notes"):
        if (
            note.get("user_id") == user["user_id"]
            and note.get("title") == title
            and note["note_id"] != note_id
        ):
            raise ToolNotFound("Note with this user_id and title already exists.")


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


def _sorted(rows: Iterable[dict[str, Any]], sort_by: str) -> list[dict[str, Any]]:
    """By ``+field``/``-field``, equal values by id in the same direction."""
    name, reverse = sort_by[1:], sort_by[0] == "-"

    def key(note: dict[str, Any]) -> tuple[str, int]:
        value = note.get(name)
        return (str(int(bool(value))) if name == "pinned" else str(value or ""), int(note["note_id"]))

    return sorted(rows, key=key, reverse=reverse)


# ---------------------------------------------------------------- APIs


def show_account(ctx: ToolContext, args: AuthArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    return {
        "first_name": user.get("first_name"),
        "last_name": user.get("last_name"),
        "email": user.get("email"),
        "registered_at": user.get("registered_at"),
        "last_logged_in": user.get("last_logged_in", user.get("registered_at")),
        "verified": bool(user.get("verified", True)),
    }


def show_profile(ctx: ToolContext, args: ProfileArgs) -> JsonObject:
    if args.email is None:
        raise ToolFailed("Either email or phone_number must be provided.")
    user = ctx.account(APP, args.email)
    if user is None:
        raise ToolFailed("Account for this email does not exist.")
    return {
        "first_name": user.get("first_name"),
        "last_name": user.get("last_name"),
        "email": user.get("email"),
        "registered_at": user.get("registered_at"),
    }


def create_note(ctx: ToolContext, args: CreateNoteArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    tags = [tag.strip() for tag in args.tags or []]
    if any(not tag for tag in tags):
        raise ToolFailed("Tags must be at least 1 character long.")
    _check_title(ctx, user, args.title)
    note_id = ctx.new_id(APP, "notes")
    now = ctx.timestamp()
    ctx.rows(APP, "notes").append(
        {
            "note_id": note_id,
            "user_id": user["user_id"],
            "title": args.title,
            "content": args.content,
            "tags": tags,
            "pinned": args.pinned,
            "created_at": now,
            "updated_at": now,
        }
    )
    return {"message": "Note created.", "note_id": note_id}


def show_note(ctx: ToolContext, args: NoteArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    return _view(_own_note(ctx, user, args.note_id), content=True)


def update_note(ctx: ToolContext, args: UpdateNoteArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    note = _own_note(ctx, user, args.note_id)
    if args.title is not None:
        _check_title(ctx, user, args.title, note["note_id"])
        note["title"] = args.title
    if args.content is not None:
        note["content"] = args.content
    if args.tags is not None:
        note["tags"] = list(args.tags)
    if args.pinned is not None:
        note["pinned"] = args.pinned
    note["updated_at"] = ctx.timestamp()
    return {"message": "Note updated."}


def add_content_to_note(ctx: ToolContext, args: AddContentArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    note = _own_note(ctx, user, args.note_id)
    content = str(note.get("content") or "")
    if args.append_or_prepend == "append":
        note["content"] = f"{content}\n{args.added_content}"
        return {"message": "Content appended to note."}
    note["content"] = f"{args.added_content}\n{content}"
    return {"message": "Content prepended to note."}


def delete_note(ctx: ToolContext, args: NoteArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    note = _own_note(ctx, user, args.note_id)
    ctx.rows(APP, "notes").remove(note)
    return {"message": "Note deleted."}


def search_notes(ctx: ToolContext, args: SearchNotesArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    sort_by = (args.sort_by or "").strip()
    if sort_by and sort_by[0] not in "+-":
        raise ToolFailed("The sort_by parameter must start with + or -.")
    if sort_by and sort_by[1:] not in _SORT_FIELDS:
        raise ToolFailed(
            f"If sort_by is passed, it must be one of {', '.join(_SORT_FIELDS)}"
            " and must be prefixed with + or -."
        )
    notes = sorted(
        (n for n in ctx.rows(APP, "notes") if n.get("user_id") == user["user_id"]), key=lambda n: n["note_id"]
    )
    if args.tags:
        wanted = {t.lower() for t in args.tags}
        notes = [n for n in notes if wanted & {str(t).lower() for t in n.get("tags") or []}]
    if args.pinned is not None:
        notes = [n for n in notes if bool(n.get("pinned")) == args.pinned]
    if args.query.strip():
        # AppWorld ranks first, pages, then sorts each page.
        notes = page(ranked(notes, args.query, "title", "content", "tags"), args.page_index, args.page_limit)
        if sort_by:
            notes = _sorted(notes, sort_by)
    else:
        notes = page(_sorted(notes, sort_by or "-updated_at"), args.page_index, args.page_limit)
    if not args.dont_reorder_pinned:
        notes = [n for n in notes if n.get("pinned")] + [n for n in notes if not n.get("pinned")]
    return [_view(n, content=False) for n in notes]


TOOLS: tuple[EpisodeTool[Any], ...] = (
    login_tool(APP),
    logout_tool(APP),
    app_tool(APP, "show_account", "Show your own Simple Note account details.", AuthArgs, show_account),
    app_tool(
        APP,
        "show_profile",
        "Show the public profile of a Simple Note user by email.",
        ProfileArgs,
        show_profile,
    ),
    app_tool(
        APP, "create_note", "Create a note (titles are unique among your notes).", CreateNoteArgs, create_note
    ),
    app_tool(APP, "show_note", "Show one of your notes with its content.", NoteArgs, show_note),
    app_tool(
        APP,
        "update_note",
        "Change a note's title, content (replaced whole), tags or pinned status.",
        UpdateNoteArgs,
        update_note,
    ),
    app_tool(
        APP,
        "add_content_to_note",
        "Append or prepend text to a note's content, on its own line.",
        AddContentArgs,
        add_content_to_note,
    ),
    app_tool(APP, "delete_note", "Delete one of your notes.", NoteArgs, delete_note),
    app_tool(
        APP,
        "search_notes",
        "List your notes without their content: a query ranks them (it does not filter), tags and"
        " pinned filter, pinned notes come first.",
        SearchNotesArgs,
        search_notes,
    ),
)
