"""The gmail app on AppWorld's surface: accounts, threads per user, sending, replying,
forwarding, drafts, flags, and ``deliver_email`` for other apps."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.apps import AppSession
from world.episodes.apps import ToolContext, state_value
from world.episodes.apps.gmail import deliver_email

LAURA, STEVEN, CHRIS = "la-mcco@gmail.com", "stmcco@gmail.com", "chris.mcco@gmail.com"
THREAD_KEYS = {
    "email_thread_id",
    "email_ids",
    "draft_ids",
    "incoming",
    "outgoing",
    "read",
    "label",
    "starred",
    "archived",
    "spam",
    "created_at",
    "updated_at",
    "subject",
    "participants",
}
DRAFT_KEYS = {
    "draft_id",
    "subject",
    "body",
    "belongs_to_email_thread_id",
    "response_to_email_id",
    "scheduled_send_at",
    "created_at",
    "updated_at",
    "recipients",
    "attachments",
}


def _thread(thread_id: int, user_id: int, email_ids: list[int], **flags: Any) -> dict[str, Any]:
    base = {"read": False, "label": None, "starred": False, "archived": False, "spam": False}
    at = "2025-05-01T10:00:00"
    return {
        "email_thread_id": thread_id,
        "user_id": user_id,
        "email_ids": email_ids,
        "created_at": at,
        "updated_at": at,
        **base,
        **flags,
    }


SEED: dict[str, Any] = {
    "start_time": "2025-05-05T09:00:00",
    "people": [
        {
            "first_name": "Laura",
            "last_name": "Mccoy",
            "email": LAURA,
            "phone_number": "2873148336",
            "accounts": {"gmail": "laura-pw", "phone": "laura-ph"},
        },
        {"first_name": "Steven", "last_name": "Mccoy", "email": STEVEN, "accounts": {"gmail": "steven-pw"}},
        {"first_name": "Chris", "last_name": "Mccoy", "email": CHRIS, "accounts": {"gmail": "chris-pw"}},
        {"first_name": "Dana", "last_name": "Ruiz", "email": "dana@example.com", "accounts": ["phone"]},
    ],
    "apps": {
        "gmail": {
            "emails": [
                {
                    "email_id": 1,
                    "sender": LAURA,
                    "recipients": [STEVEN],
                    "subject": "Related-party loan review: supplement",
                    "body": "Please send the board resolution.",
                    "attachments": [{"id": 1, "file_name": "checklist.pdf"}],
                    "response_to_email_id": None,
                    "created_at": "2025-05-01T10:00:00",
                },
                {
                    "email_id": 2,
                    "sender": CHRIS,
                    "recipients": [STEVEN],
                    "subject": "Lunch",
                    "body": "Thai place on Thursday?",
                    "attachments": [],
                    "response_to_email_id": None,
                    "created_at": "2025-05-03T12:00:00",
                },
            ],
            "email_threads": [
                _thread(1, 1, [1], read=True),
                _thread(2, 2, [1]),
                _thread(
                    3, 3, [2], read=True, created_at="2025-05-03T12:00:00", updated_at="2025-05-03T12:00:00"
                ),
                _thread(4, 2, [2], created_at="2025-05-03T12:00:00", updated_at="2025-05-03T12:00:00"),
            ],
        }
    },
}


@pytest.fixture
def s() -> AppSession:
    return AppSession(SEED)


def _reply_draft(s: AppSession, token: str, body: str) -> dict[str, Any]:
    """Steven's draft answering Laura's email 1 in his thread 2."""
    created: dict[str, Any] = s.ok(
        "gmail__create_draft",
        access_token=token,
        recipient_email_addresses=[LAURA],
        body=body,
        belongs_to_email_thread_id=2,
        response_to_email_id=1,
    )
    return created


def _threads_of(s: AppSession, user_id: int) -> list[dict[str, Any]]:
    return [t for t in s.state.apps["gmail"]["email_threads"] if t["user_id"] == user_id]


# ---------------------------------------------------------------- accounts


def test_login_gives_a_token_and_refuses_a_wrong_password(s: AppSession) -> None:
    token = s.login("gmail", LAURA, "laura-pw")
    assert isinstance(token, str) and token
    assert s.ok("gmail__show_category_sizes", access_token=token)["inbox"] == 0
    assert s.refused("gmail__login", "unauthorized", username=LAURA, password="nope") == "Invalid credentials"


def test_a_token_of_another_app_or_a_logged_out_token_is_refused(s: AppSession) -> None:
    phone_token = s.login("phone", "2873148336", "laura-ph")
    message = s.refused("gmail__show_inbox_threads", "unauthorized", access_token=phone_token)
    assert "gmail API" in message
    token = s.login("gmail", LAURA, "laura-pw")
    assert s.ok("gmail__logout", access_token=token) == {"message": "Successfully logged out."}
    s.refused("gmail__show_inbox_threads", "unauthorized", access_token=token)


def test_signup_creates_an_account_that_can_log_in(s: AppSession) -> None:
    args = {"first_name": "Dana", "last_name": "Ruiz", "email": "dana@example.com", "password": "dana-pw"}
    assert s.ok("gmail__signup", **args) == {"message": "Account created."}
    user = next(u for u in s.state.apps["gmail"]["users"] if u["email"] == "dana@example.com")
    phone_user = next(u for u in s.state.apps["phone"]["users"] if u["email"] == "dana@example.com")
    assert user["user_id"] == phone_user["user_id"]  # the same person keeps their id
    s.login("gmail", "dana@example.com", "dana-pw")
    assert "already exists" in s.refused("gmail__signup", "failed", **args)
    s.refused("gmail__signup", "invalid_args", **{**args, "email": "not-an-address"})
    s.refused("gmail__signup", "invalid_args", **{**args, "email": "x@example.com", "password": "abc"})


def test_search_users_ranks_matches_first_with_public_fields(s: AppSession) -> None:
    found = s.ok("gmail__search_users", query="Chris")
    assert [u["email"] for u in found] == [CHRIS, LAURA, STEVEN]
    assert set(found[0]) == {"first_name", "last_name", "email", "registered_at"}
    in_order = [u["email"] for u in s.ok("gmail__search_users", page_limit=2)]
    assert in_order == [LAURA, STEVEN]  # without a query: account order
    assert [u["email"] for u in s.ok("gmail__search_users", page_index=1, page_limit=2)] == [CHRIS]


# ---------------------------------------------------------------- sending


def test_send_email_gives_the_sender_an_outgoing_thread_and_each_recipient_an_unread_one(
    s: AppSession,
) -> None:
    token = s.login("gmail", LAURA, "laura-pw")
    sent = s.ok(
        "gmail__send_email", access_token=token, email_addresses=[STEVEN, CHRIS], subject=" Hi ", body="Hello"
    )
    assert sent["message"] == "Sent email." and set(sent) == {
        "message",
        "sent_email_thread_id",
        "sent_email_id",
    }
    email = state_value(s.state, f"apps.gmail.emails.{sent['sent_email_id']}")
    assert email["sender"] == LAURA and email["recipients"] == [STEVEN, CHRIS] and email["subject"] == "Hi"
    own = state_value(s.state, f"apps.gmail.email_threads.{sent['sent_email_thread_id']}")
    assert own["user_id"] == 1 and own["outgoing"] and not own["incoming"] and own["read"]
    for user_id in (2, 3):
        theirs = [t for t in _threads_of(s, user_id) if t["email_ids"] == [sent["sent_email_id"]]]
        assert len(theirs) == 1 and theirs[0]["incoming"] and not theirs[0]["read"]
    outbox = s.ok("gmail__show_outbox_threads", access_token=token)
    assert outbox[0]["email_thread_id"] == sent["sent_email_thread_id"] and set(outbox[0]) == THREAD_KEYS
    assert outbox[0]["participants"][0] == {"name": "Steven Mccoy", "email": STEVEN}


def test_send_email_refusals_leave_nothing_behind(s: AppSession) -> None:
    token = s.login("gmail", LAURA, "laura-pw")
    before = s.state
    message = s.refused(
        "gmail__send_email",
        "failed",
        access_token=token,
        email_addresses=[STEVEN, "ghost@x.com"],
        subject="s",
        body="b",
    )
    assert message == "No user found with email ghost@x.com."
    s.refused(
        "gmail__send_email", "invalid_args", access_token=token, email_addresses=STEVEN, subject="s", body="b"
    )
    s.refused("gmail__send_email", "invalid_args", access_token=token, email_addresses=[STEVEN], body="b")
    assert "file_system" in s.refused(
        "gmail__send_email",
        "failed",
        access_token=token,
        email_addresses=[STEVEN],
        subject="s",
        body="b",
        attachment_file_paths=["/home/laura/report.pdf"],
    )
    assert s.state == before


def test_an_empty_subject_becomes_no_subject(s: AppSession) -> None:
    token = s.login("gmail", LAURA, "laura-pw")
    sent = s.ok("gmail__send_email", access_token=token, email_addresses=[STEVEN], subject="  ", body="b")
    assert state_value(s.state, f"apps.gmail.emails.{sent['sent_email_id']}.subject") == "(no subject)"


def test_reply_joins_every_recipients_thread_of_the_conversation(s: AppSession) -> None:
    token = s.login("gmail", STEVEN, "steven-pw")
    reply = s.ok(
        "gmail__reply_to_email",
        access_token=token,
        email_thread_id=2,
        email_id=1,
        body="Attached.",
        email_addresses=[LAURA, CHRIS],
    )
    assert reply["message"] == "Reply email sent." and set(reply) == {"message", "sent_email_id"}
    new = reply["sent_email_id"]
    email = state_value(s.state, f"apps.gmail.emails.{new}")
    assert (
        email["subject"] == "Re: Related-party loan review: supplement" and email["response_to_email_id"] == 1
    )
    assert state_value(s.state, "apps.gmail.email_threads.2.email_ids") == [1, new]
    laura = state_value(s.state, "apps.gmail.email_threads.1")
    assert laura["email_ids"] == [1, new] and laura["incoming"]  # her own thread, not a new one
    chris_new = [t for t in _threads_of(s, 3) if new in t["email_ids"]]
    assert len(chris_new) == 1 and chris_new[0]["email_ids"] == [1, new] and not chris_new[0]["read"]


def test_reply_without_addresses_goes_to_the_sender(s: AppSession) -> None:
    token = s.login("gmail", STEVEN, "steven-pw")
    new = s.ok("gmail__reply_to_email", access_token=token, email_thread_id=4, email_id=2, body="Yes!")[
        "sent_email_id"
    ]
    assert state_value(s.state, f"apps.gmail.emails.{new}.recipients") == [CHRIS]
    assert state_value(s.state, "apps.gmail.email_threads.3.email_ids") == [2, new]


def test_reply_refusals(s: AppSession) -> None:
    token = s.login("gmail", STEVEN, "steven-pw")
    args = {"access_token": token, "body": "x"}
    assert "does not belong to the specified thread" in s.refused(
        "gmail__reply_to_email", "failed", email_thread_id=2, email_id=2, **args
    )
    assert "does not belong to you" in s.refused(
        "gmail__reply_to_email", "failed", email_thread_id=1, email_id=1, **args
    )
    message = s.refused("gmail__reply_to_email", "not_found", email_thread_id=99, email_id=1, **args)
    assert message == "The email thread with id 99 does not exist."
    assert "non-empty" in s.refused(
        "gmail__reply_to_email", "failed", email_thread_id=2, email_id=1, email_addresses=[], **args
    )


def test_forward_email_thread_sends_a_new_conversation_or_saves_a_draft(s: AppSession) -> None:
    token = s.login("gmail", STEVEN, "steven-pw")
    sent = s.ok("gmail__forward_email_thread", access_token=token, email_thread_id=2, email_addresses=[CHRIS])
    assert sent["draft_id"] is None and set(sent) == {
        "message",
        "sent_email_thread_id",
        "sent_email_id",
        "draft_id",
    }
    email = state_value(s.state, f"apps.gmail.emails.{sent['sent_email_id']}")
    assert email["subject"] == "Fwd: Related-party loan review: supplement"
    assert "Please send the board resolution." in email["body"] and email["recipients"] == [CHRIS]
    assert any(t["email_ids"] == [sent["sent_email_id"]] for t in _threads_of(s, 3))
    saved = s.ok(
        "gmail__forward_email_thread",
        access_token=token,
        email_thread_id=2,
        email_addresses=[CHRIS],
        draft_not_send=True,
    )
    assert saved["sent_email_id"] is None and saved["draft_id"] is not None
    assert state_value(s.state, "apps.gmail.email_threads.2.draft_ids") == [saved["draft_id"]]
    assert s.refused(
        "gmail__forward_email_thread", "failed", access_token=token, email_thread_id=2, email_addresses=[]
    ).startswith("At least one recipient")


# ---------------------------------------------------------------- reading


def test_show_thread_lists_its_emails_and_drafts(s: AppSession) -> None:
    token = s.login("gmail", STEVEN, "steven-pw")
    _reply_draft(s, token, "On it.")
    thread = s.ok("gmail__show_thread", access_token=token, email_thread_id=2)
    assert [e["email_id"] for e in thread["emails"]] == [1]
    first = thread["emails"][0]
    assert first["sender"] == {"name": "Laura Mccoy", "email": LAURA}
    assert first["attachments"] == [{"id": 1, "file_name": "checklist.pdf"}]
    assert set(first) == {"email_id", "subject", "sender", "recipients", "body", "attachments", "created_at"}
    assert [d["body"] for d in thread["drafts"]] == ["On it."]
    assert "belongs_to_email_thread_id" not in thread["drafts"][0]
    assert "does not belong to you" in s.refused(
        "gmail__show_thread", "failed", access_token=token, email_thread_id=3
    )


def test_show_email_only_to_its_sender_and_recipients(s: AppSession) -> None:
    laura = s.login("gmail", LAURA, "laura-pw")
    email = s.ok("gmail__show_email", access_token=laura, email_id=1)
    assert set(email) == {
        "email_id",
        "subject",
        "body",
        "response_to_email_id",
        "created_at",
        "sender",
        "recipients",
        "attachments",
    }
    assert email["recipients"] == [{"name": "Steven Mccoy", "email": STEVEN}]
    assert "neither sender or recipient" in s.refused(
        "gmail__show_email", "failed", access_token=laura, email_id=2
    )
    assert s.refused("gmail__show_email", "not_found", access_token=laura, email_id=77) == (
        "The email with id 77 does not exist."
    )


def test_inbox_filters_ranks_sorts_and_pages(s: AppSession) -> None:
    token = s.login("gmail", STEVEN, "steven-pw")
    inbox = s.ok("gmail__show_inbox_threads", access_token=token)
    assert [t["email_thread_id"] for t in inbox] == [4, 2]  # -updated_at by default
    assert inbox[1]["subject"] == "Related-party loan review: supplement"
    ranked = s.ok("gmail__show_inbox_threads", access_token=token, query="board resolution")
    assert [t["email_thread_id"] for t in ranked] == [2, 4]  # a query ranks, it does not filter
    oldest = s.ok("gmail__show_inbox_threads", access_token=token, sort_by="+created_at")
    assert [t["email_thread_id"] for t in oldest] == [2, 4]
    assert [
        t["email_thread_id"] for t in s.ok("gmail__show_inbox_threads", access_token=token, page_limit=1)
    ] == [4]
    with_files = s.ok("gmail__show_inbox_threads", access_token=token, attachment=True)
    assert [t["email_thread_id"] for t in with_files] == [2]
    from_chris = s.ok("gmail__show_inbox_threads", access_token=token, from_email=CHRIS)
    assert [t["email_thread_id"] for t in from_chris] == [4]
    in_may_3 = s.ok(
        "gmail__show_inbox_threads",
        access_token=token,
        min_created_at="2025-05-02",
        max_created_at="2025-05-03",
    )
    assert [t["email_thread_id"] for t in in_may_3] == [4]
    assert s.ok("gmail__show_inbox_threads", access_token=token, read=True) == []
    assert "+ or -" in s.refused(
        "gmail__show_inbox_threads", "failed", access_token=token, sort_by="created_at"
    )
    assert "created_at, updated_at" in s.refused(
        "gmail__show_inbox_threads", "failed", access_token=token, sort_by="-subject"
    )
    assert "YYYY-MM-DD" in s.refused(
        "gmail__show_inbox_threads", "invalid_args", access_token=token, min_created_at="May 2"
    )
    s.refused("gmail__show_inbox_threads", "invalid_args", access_token=token, page_limit=21)


def test_labels_and_flags_change_the_thread_and_refuse_repeats(s: AppSession) -> None:
    token = s.login("gmail", STEVEN, "steven-pw")
    assert s.ok("gmail__label_thread", access_token=token, email_thread_id=2, label="Legal") == {
        "message": "Email thread labeled."
    }
    assert [
        t["email_thread_id"] for t in s.ok("gmail__show_inbox_threads", access_token=token, label="legal")
    ] == [2]
    s.ok("gmail__unlabel_thread", access_token=token, email_thread_id=2)
    assert state_value(s.state, "apps.gmail.email_threads.2.label") is None
    s.ok("gmail__mark_thread_read", access_token=token, email_thread_id=2)
    assert state_value(s.state, "apps.gmail.email_threads.2.read") is True
    assert s.refused("gmail__mark_thread_read", "failed", access_token=token, email_thread_id=2) == (
        "This email thread is already marked as read."
    )
    s.ok("gmail__mark_thread_unread", access_token=token, email_thread_id=2)
    assert state_value(s.state, "apps.gmail.email_threads.2.read") is False
    s.refused("gmail__mark_thread_unread", "failed", access_token=token, email_thread_id=2)
    s.ok("gmail__mark_thread_starred", access_token=token, email_thread_id=2)
    assert state_value(s.state, "apps.gmail.email_threads.2.starred") is True
    s.refused("gmail__mark_thread_starred", "failed", access_token=token, email_thread_id=2)
    assert s.ok("gmail__mark_thread_archived", access_token=token, email_thread_id=2) == {
        "message": "Email thread marked as archived."
    }
    assert [t["email_thread_id"] for t in s.ok("gmail__show_inbox_threads", access_token=token)] == [4]
    archived = s.ok("gmail__show_inbox_threads", access_token=token, archived=True)
    assert [t["email_thread_id"] for t in archived] == [2]
    sizes = s.ok("gmail__show_category_sizes", access_token=token)
    assert sizes == {
        "inbox": 1,
        "outbox": 0,
        "archived": 1,
        "spam": 0,
        "unscheduled_drafts": 0,
        "scheduled_drafts": 0,
    }
    s.refused("gmail__mark_thread_archived", "not_found", access_token=token, email_thread_id=50)
    s.refused("gmail__label_thread", "failed", access_token=token, email_thread_id=1, label="x")


# ---------------------------------------------------------------- drafts


def test_create_draft_update_and_send_it(s: AppSession) -> None:
    token = s.login("gmail", LAURA, "laura-pw")
    created = s.ok(
        "gmail__create_draft", access_token=token, recipient_email_addresses=[STEVEN], body="Draft body"
    )
    assert created["message"] == "Draft created."
    draft = s.ok("gmail__show_draft", access_token=token, draft_id=created["draft_id"])
    assert set(draft) == DRAFT_KEYS and draft["subject"] == "(no subject)"
    assert draft["recipients"] == [{"name": "Steven Mccoy", "email": STEVEN}]
    updated = s.ok(
        "gmail__update_draft",
        access_token=token,
        draft_id=created["draft_id"],
        subject="Supplement request",
        email_addresses=[STEVEN, CHRIS],
        scheduled_send_at="2025-06-01|08:00:00",
    )
    assert updated == {"message": "Draft updated."}
    record = state_value(s.state, f"apps.gmail.drafts.{created['draft_id']}")
    assert record["recipients"] == [STEVEN, CHRIS] and record["scheduled_send_at"] == "2025-06-01T08:00:00"
    assert s.ok("gmail__show_category_sizes", access_token=token)["scheduled_drafts"] == 1
    s.ok("gmail__update_draft", access_token=token, draft_id=created["draft_id"], scheduled_send_at="None")
    assert state_value(s.state, f"apps.gmail.drafts.{created['draft_id']}.scheduled_send_at") is None
    sent = s.ok("gmail__send_email_from_draft", access_token=token, draft_id=created["draft_id"])
    assert sent["message"] == "Sent email from your draft."
    email = state_value(s.state, f"apps.gmail.emails.{sent['sent_email_id']}")
    assert email["subject"] == "Supplement request" and email["recipients"] == [STEVEN, CHRIS]
    assert state_value(s.state, f"apps.gmail.email_threads.{sent['sent_email_thread_id']}.user_id") == 1
    with pytest.raises(KeyError):
        state_value(s.state, f"apps.gmail.drafts.{created['draft_id']}")
    s.refused("gmail__show_draft", "not_found", access_token=token, draft_id=created["draft_id"])


def test_a_reply_draft_is_sent_into_its_thread(s: AppSession) -> None:
    token = s.login("gmail", STEVEN, "steven-pw")
    created = _reply_draft(s, token, "Here you go.")
    assert s.ok("gmail__show_draft", access_token=token, draft_id=created["draft_id"])["subject"] == (
        "Re: Related-party loan review: supplement"
    )
    sent = s.ok("gmail__send_email_from_draft", access_token=token, draft_id=created["draft_id"])
    assert sent["sent_email_thread_id"] == 2
    assert state_value(s.state, "apps.gmail.email_threads.2.email_ids") == [1, sent["sent_email_id"]]
    assert state_value(s.state, "apps.gmail.email_threads.2.draft_ids") == []
    assert state_value(s.state, "apps.gmail.email_threads.1.email_ids") == [1, sent["sent_email_id"]]


def test_draft_rules(s: AppSession) -> None:
    token = s.login("gmail", STEVEN, "steven-pw")
    base = {"access_token": token, "recipient_email_addresses": [LAURA], "body": "b"}
    assert s.refused(
        "gmail__create_draft", "not_found", **{**base, "recipient_email_addresses": ["ghost@x.com"]}
    ) == ("The user with email ghost@x.com does not exist.")
    assert s.outcomes[-1].result == {
        "response": {"message": ["The user with email ghost@x.com does not exist."]}
    }
    assert "Either both" in s.refused("gmail__create_draft", "failed", belongs_to_email_thread_id=2, **base)
    assert "subject must be None" in s.refused(
        "gmail__create_draft",
        "failed",
        belongs_to_email_thread_id=2,
        response_to_email_id=1,
        subject="x",
        **base,
    )
    assert "not in the email thread" in s.refused(
        "gmail__create_draft", "failed", belongs_to_email_thread_id=2, response_to_email_id=2, **base
    )
    assert "YYYY-MM-DD|HH:MM:SS" in s.refused(
        "gmail__create_draft", "invalid_args", scheduled_send_at="tomorrow", **base
    )
    assert "future" in s.refused(
        "gmail__create_draft", "failed", scheduled_send_at="2020-01-01|08:00:00", **base
    )
    assert "file_system" in s.refused(
        "gmail__create_draft", "failed", attachment_file_paths=["/a.txt"], **base
    )
    laura = s.login("gmail", LAURA, "laura-pw")
    mine = s.ok("gmail__create_draft", access_token=laura, recipient_email_addresses=[STEVEN], body="x")
    draft_id = mine["draft_id"]
    assert "does not belong to you" in s.refused(
        "gmail__show_draft", "failed", access_token=token, draft_id=draft_id
    )
    s.refused("gmail__send_email_from_draft", "failed", access_token=token, draft_id=draft_id)
    assert s.refused(
        "gmail__update_draft",
        "failed",
        access_token=laura,
        draft_id=draft_id,
        email_addresses=["ghost@x.com"],
    ) == ("No user found with email ghost@x.com.")


def test_show_drafts_filters_and_ranks(s: AppSession) -> None:
    token = s.login("gmail", STEVEN, "steven-pw")
    first = s.ok(
        "gmail__create_draft", access_token=token, recipient_email_addresses=[LAURA], body="cap table"
    )
    s.state = s.state.model_copy(update={"clock": 10.0})
    second = s.ok(
        "gmail__create_draft", access_token=token, recipient_email_addresses=[CHRIS], body="lunch plans"
    )
    listed = s.ok("gmail__show_drafts", access_token=token)
    assert [d["draft_id"] for d in listed] == [second["draft_id"], first["draft_id"]]
    assert set(listed[0]) == DRAFT_KEYS
    ranked = s.ok("gmail__show_drafts", access_token=token, query="cap table")
    assert [d["draft_id"] for d in ranked] == [first["draft_id"], second["draft_id"]]
    to_chris = s.ok("gmail__show_drafts", access_token=token, recipient_email=CHRIS)
    assert [d["draft_id"] for d in to_chris] == [second["draft_id"]]
    assert s.ok("gmail__show_drafts", access_token=token, scheduled=True) == []
    laura = s.login("gmail", LAURA, "laura-pw")
    assert s.ok("gmail__show_drafts", access_token=laura) == []


# ---------------------------------------------------------------- other apps' mail


def test_deliver_email_records_a_mail_and_threads_for_both_sides(s: AppSession) -> None:
    ctx = ToolContext(state=s.state.model_copy(deep=True), caller="amazon")
    email_id = deliver_email(
        ctx,
        sender=CHRIS,
        recipients=[LAURA],
        subject="Amazon Order Confirmation",
        body="Your order is on its way.",
        attachment_names=["order_7.txt"],
    )
    assert email_id is not None
    s.state = ctx.state
    email = state_value(s.state, f"apps.gmail.emails.{email_id}")
    assert email["sender"] == CHRIS and email["recipients"] == [LAURA]
    assert [a["file_name"] for a in email["attachments"]] == ["order_7.txt"]
    token = s.login("gmail", LAURA, "laura-pw")
    inbox = s.ok("gmail__show_inbox_threads", access_token=token)
    assert inbox[0]["subject"] == "Amazon Order Confirmation" and inbox[0]["read"] is False
    assert any(t["email_ids"] == [email_id] and t["outgoing"] for t in _threads_of(s, 3))


def test_deliver_email_without_accounts_changes_nothing(s: AppSession) -> None:
    ctx = ToolContext(state=s.state.model_copy(deep=True), caller="amazon")
    before = ctx.state.model_copy(deep=True)
    assert deliver_email(ctx, sender=CHRIS, recipients=["dana@example.com"], subject="s", body="b") is None
    assert deliver_email(ctx, sender="nobody@example.com", recipients=[LAURA], subject="s", body="b") is None
    assert ctx.state == before
