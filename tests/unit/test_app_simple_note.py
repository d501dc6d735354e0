"""The built-in simple_note app on AppWorld's surface: notes, tags, pins and search."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.apps import AppSession

ME, OTHER = "stmcco@gmail.com", "pat@gmail.com"
SHORT_KEYS = {"note_id", "title", "tags", "created_at", "updated_at", "pinned"}


def seed() -> dict[str, Any]:
    return {
        "start_time": "2025-05-05T09:00:00",
        "people": [
            {
                "first_name": "Stella",
                "last_name": "Mccoy",
                "email": ME,
                "accounts": {"simple_note": "i#vhWEQ", "splitwise": "sw-pw"},
            },
            {"first_name": "Pat", "last_name": "Lee", "email": OTHER, "accounts": {"simple_note": "pat-pw"}},
        ],
        "apps": {
            "simple_note": {
                "notes": [
                    {
                        "note_id": 10,
                        "user_id": 1,
                        "title": "Groceries",
                        "content": "milk, eggs",
                        "tags": ["shopping"],
                        "pinned": False,
                        "created_at": "2025-05-01T08:00:00",
                        "updated_at": "2025-05-01T08:00:00",
                    },
                    {
                        "note_id": 11,
                        "user_id": 1,
                        "title": "Pinned idea",
                        "content": "something",
                        "tags": [],
                        "pinned": True,
                        "created_at": "2025-04-01T08:00:00",
                        "updated_at": "2025-04-01T08:00:00",
                    },
                    {
                        "note_id": 12,
                        "user_id": 1,
                        "title": "Hearing prep",
                        "content": "bank-flow chart needs exhibit references",
                        "tags": ["Work", "law"],
                        "pinned": False,
                        "created_at": "2025-05-02T08:00:00",
                        "updated_at": "2025-05-03T08:00:00",
                    },
                    {
                        "note_id": 20,
                        "user_id": 2,
                        "title": "Pat's secret",
                        "content": "eggs",
                        "tags": ["shopping"],
                        "pinned": True,
                        "created_at": "2025-05-04T08:00:00",
                        "updated_at": "2025-05-04T08:00:00",
                    },
                ]
            }
        },
    }


@pytest.fixture
def app() -> AppSession:
    return AppSession(seed())


def me(app: AppSession) -> str:
    return app.login("simple_note", ME, "i#vhWEQ")


def ids(notes: list[dict[str, Any]]) -> list[int]:
    return [n["note_id"] for n in notes]


def later(app: AppSession, minutes: float) -> None:
    app.state = app.state.model_copy(update={"clock": app.state.clock + minutes})


# ---------------------------------------------------------------- accounts


def test_login_logout_and_foreign_token(app: AppSession) -> None:
    app.refused("simple_note__login", "unauthorized", username=ME, password="wrong")
    token = me(app)
    splitwise_token = app.login("splitwise", ME, "sw-pw")
    message = app.refused("simple_note__show_note", "unauthorized", access_token=splitwise_token, note_id=10)
    assert "simple_note API" in message
    assert app.ok("simple_note__logout", access_token=token) == {"message": "Successfully logged out."}
    app.refused("simple_note__show_note", "unauthorized", access_token=token, note_id=10)


def test_account_and_profile(app: AppSession) -> None:
    token = me(app)
    account = app.ok("simple_note__show_account", access_token=token)
    assert set(account) == {"first_name", "last_name", "email", "registered_at", "last_logged_in", "verified"}
    assert account["email"] == ME
    profile = app.ok("simple_note__show_profile", email=OTHER)
    assert (
        set(profile) == {"first_name", "last_name", "email", "registered_at"}
        and profile["first_name"] == "Pat"
    )
    assert (
        app.refused("simple_note__show_profile", "failed", email="x@y.com")
        == "Account for this email does not exist."
    )
    app.refused("simple_note__show_profile", "failed")


# ---------------------------------------------------------------- notes


def test_create_and_show_note(app: AppSession) -> None:
    token = me(app)
    later(app, 30)
    created = app.ok(
        "simple_note__create_note",
        access_token=token,
        title="Partner Handover",
        content="Hearing on 18 April 2026.",
        tags=[" law ", "handover"],
    )
    assert created["message"] == "Note created." and created["note_id"] == 21
    note = app.ok("simple_note__show_note", access_token=token, note_id=created["note_id"])
    assert note == {
        "note_id": 21,
        "title": "Partner Handover",
        "content": "Hearing on 18 April 2026.",
        "tags": ["law", "handover"],
        "created_at": "2025-05-05T09:30:00",
        "updated_at": "2025-05-05T09:30:00",
        "pinned": False,
    }
    stored = next(n for n in app.state.apps["simple_note"]["notes"] if n["note_id"] == 21)
    assert stored["user_id"] == 1
    plain = app.ok("simple_note__create_note", access_token=token, title="No tags", content="")
    assert app.ok("simple_note__show_note", access_token=token, note_id=plain["note_id"])["tags"] == []


def test_create_note_refusals(app: AppSession) -> None:
    token = me(app)
    message = app.refused(
        "simple_note__create_note", "not_found", access_token=token, title="Groceries", content="x"
    )
    assert message == "Note with this user_id and title already exists."
    message = app.refused(
        "simple_note__create_note", "failed", access_token=token, title="T", content="x", tags=[" "]
    )
    assert message == "Tags must be at least 1 character long."
    app.refused("simple_note__create_note", "invalid_args", access_token=token, title="", content="x")
    app.refused("simple_note__create_note", "invalid_args", access_token=token, title="No content")
    # Titles are unique per user only.
    pat = app.login("simple_note", OTHER, "pat-pw")
    app.ok("simple_note__create_note", access_token=pat, title="Groceries", content="bread")


def test_notes_of_another_user_are_refused(app: AppSession) -> None:
    token = me(app)
    message = app.refused("simple_note__show_note", "failed", access_token=token, note_id=20)
    assert message == "The given note does not belong to you, so you cannot access it."
    app.refused("simple_note__update_note", "failed", access_token=token, note_id=20, content="mine now")
    app.refused("simple_note__delete_note", "failed", access_token=token, note_id=20)
    message = app.refused("simple_note__show_note", "not_found", access_token=token, note_id=99)
    assert message == "The note with id 99 does not exist."


def test_update_note(app: AppSession) -> None:
    token = me(app)
    later(app, 60)
    updated = app.ok(
        "simple_note__update_note", access_token=token, note_id=10, content="oat milk", pinned=True
    )
    assert updated == {"message": "Note updated."}
    note = app.ok("simple_note__show_note", access_token=token, note_id=10)
    assert note["content"] == "oat milk" and note["pinned"] is True and note["title"] == "Groceries"
    assert note["updated_at"] == "2025-05-05T10:00:00" and note["created_at"] == "2025-05-01T08:00:00"
    app.ok("simple_note__update_note", access_token=token, note_id=10, title="Shopping", tags=["home"])
    note = app.ok("simple_note__show_note", access_token=token, note_id=10)
    assert (note["title"], note["tags"], note["content"]) == ("Shopping", ["home"], "oat milk")
    message = app.refused(
        "simple_note__update_note", "not_found", access_token=token, note_id=10, title="Hearing prep"
    )
    assert message == "Note with this user_id and title already exists."
    app.ok("simple_note__update_note", access_token=token, note_id=10, title="Shopping")  # its own title
    app.refused("simple_note__update_note", "not_found", access_token=token, note_id=404, content="x")


def test_add_content_to_note(app: AppSession) -> None:
    token = me(app)

    def add(where: str, text: str) -> Any:
        return app.ok(
            "simple_note__add_content_to_note",
            access_token=token,
            note_id=10,
            append_or_prepend=where,
            added_content=text,
        )

    assert add("append", "bread") == {"message": "Content appended to note."}
    assert add("prepend", "LIST") == {"message": "Content prepended to note."}
    assert (
        app.ok("simple_note__show_note", access_token=token, note_id=10)["content"]
        == "LIST\nmilk, eggs\nbread"
    )
    app.refused(
        "simple_note__add_content_to_note",
        "invalid_args",
        access_token=token,
        note_id=10,
        append_or_prepend="middle",
        added_content="x",
    )


def test_delete_note(app: AppSession) -> None:
    token = me(app)
    assert app.ok("simple_note__delete_note", access_token=token, note_id=12) == {"message": "Note deleted."}
    assert 12 not in ids(app.state.apps["simple_note"]["notes"])
    app.refused("simple_note__show_note", "not_found", access_token=token, note_id=12)
    app.refused("simple_note__delete_note", "not_found", access_token=token, note_id=12)


# ---------------------------------------------------------------- search


def test_search_lists_own_notes_without_content_pinned_first(app: AppSession) -> None:
    token = me(app)
    notes = app.ok("simple_note__search_notes", access_token=token)
    assert ids(notes) == [11, 12, 10]  # pinned first, then by -updated_at; never Pat's note
    assert all(set(n) == SHORT_KEYS for n in notes)
    kept = app.ok("simple_note__search_notes", access_token=token, dont_reorder_pinned=True)
    assert ids(kept) == [12, 10, 11]


def test_search_query_ranks_and_does_not_filter(app: AppSession) -> None:
    token = me(app)
    found = app.ok("simple_note__search_notes", access_token=token, query="exhibit", dont_reorder_pinned=True)
    assert ids(found)[0] == 12 and sorted(ids(found)) == [10, 11, 12]
    assert (
        ids(app.ok("simple_note__search_notes", access_token=token, query="exhibit"))[0] == 11
    )  # pinned on top
    nothing = app.ok("simple_note__search_notes", access_token=token, query="zzzqqq")
    assert sorted(ids(nothing)) == [10, 11, 12]
    by_tag = app.ok(
        "simple_note__search_notes", access_token=token, query="shopping", dont_reorder_pinned=True
    )
    assert ids(by_tag)[0] == 10


def test_search_filters_and_sorting(app: AppSession) -> None:
    token = me(app)
    assert ids(app.ok("simple_note__search_notes", access_token=token, tags=["work"])) == [12]
    assert ids(app.ok("simple_note__search_notes", access_token=token, tags=["SHOPPING", "law"])) == [12, 10]
    assert ids(app.ok("simple_note__search_notes", access_token=token, pinned=False)) == [12, 10]
    assert ids(app.ok("simple_note__search_notes", access_token=token, pinned=True)) == [11]
    oldest = app.ok(
        "simple_note__search_notes", access_token=token, sort_by="+created_at", dont_reorder_pinned=True
    )
    assert ids(oldest) == [11, 10, 12]
    first_page = app.ok(
        "simple_note__search_notes", access_token=token, page_limit=2, dont_reorder_pinned=True
    )
    second_page = app.ok(
        "simple_note__search_notes", access_token=token, page_limit=2, page_index=1, dont_reorder_pinned=True
    )
    assert ids(first_page) == [12, 10] and ids(second_page) == [11]
    message = app.refused("simple_note__search_notes", "failed", access_token=token, sort_by="title")
    assert message == "The sort_by parameter must start with + or -."
    message = app.refused("simple_note__search_notes", "failed", access_token=token, sort_by="+title")
    assert message == (
        "If sort_by is passed, it must be one of created_at, updated_at, pinned"
        " and must be prefixed with + or -."
    )
    app.refused("simple_note__search_notes", "invalid_args", access_token=token, page_limit=21)


def test_new_and_updated_notes_come_first(app: AppSession) -> None:
    token = me(app)
    later(app, 5)
    new = app.ok("simple_note__create_note", access_token=token, title="Fresh", content="x")["note_id"]
    assert ids(app.ok("simple_note__search_notes", access_token=token, dont_reorder_pinned=True))[0] == new
    later(app, 5)
    app.ok("simple_note__update_note", access_token=token, note_id=10, content="updated")
    assert ids(app.ok("simple_note__search_notes", access_token=token, dont_reorder_pinned=True))[:2] == [
        10,
        new,
    ]
