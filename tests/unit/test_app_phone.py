"""The phone app on AppWorld's surface: login by phone number, contacts, texts between phone
users (a copy per side), alarms and the clock."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.apps import AppSession
from world.episodes.apps import state_value

LAURA, CHRIS, JO = "2873148336", "5584932120", "2306532706"
TEXT_KEYS = {"text_message_id", "sender", "receiver", "message", "sent_at"}
CONTACT_KEYS = {
    "contact_id",
    "first_name",
    "last_name",
    "email",
    "phone_number",
    "relationships",
    "birthday",
    "home_address",
    "work_address",
    "created_at",
}

SEED: dict[str, Any] = {
    "start_time": "2025-05-05T09:00:00",
    "people": [
        {
            "first_name": "Laura",
            "last_name": "Mccoy",
            "email": "la-mcco@gmail.com",
            "phone_number": LAURA,
            "accounts": {"phone": "laura-ph", "gmail": "laura-pw"},
        },
        {
            "first_name": "Chris",
            "last_name": "Mccoy",
            "email": "chris.mcco@gmail.com",
            "phone_number": int(CHRIS),
            "accounts": {"phone": "chris-ph"},
        },
        {
            "first_name": "Jonathan",
            "last_name": "Ball",
            "email": "jo.ball@gmail.com",
            "phone_number": JO,
            "accounts": {"phone": "jo-ph"},
        },
    ],
    "apps": {
        "phone": {
            "contacts": [
                {
                    "contact_id": 1,
                    "user_id": 1,
                    "first_name": "Chrissy",
                    "last_name": "Mccoy",
                    "email": "chris.mcco@gmail.com",
                    "phone_number": CHRIS,
                    "relationships": ["brother"],
                    "birthday": "1990-02-03",
                    "home_address": "12 Elm St",
                    "work_address": None,
                    "created_at": "2024-01-01T00:00:00",
                },
                {
                    "contact_id": 2,
                    "user_id": 1,
                    "first_name": "Jonathan",
                    "last_name": "Ball",
                    "email": "jo.ball@gmail.com",
                    "phone_number": JO,
                    "relationships": ["coworker", "friend"],
                    "birthday": None,
                    "home_address": None,
                    "work_address": "Lab 4",
                    "created_at": "2024-02-01T00:00:00",
                },
                {
                    "contact_id": 3,
                    "user_id": 2,
                    "first_name": "Sis",
                    "last_name": "Laura",
                    "email": "la-mcco@gmail.com",
                    "phone_number": LAURA,
                    "relationships": ["sister"],
                    "birthday": None,
                    "home_address": None,
                    "work_address": None,
                    "created_at": "2024-01-01T00:00:00",
                },
            ]
        }
    },
}


@pytest.fixture
def s() -> AppSession:
    return AppSession(SEED)


def _at(s: AppSession, minutes: float) -> None:
    s.state = s.state.model_copy(update={"clock": minutes})


# ---------------------------------------------------------------- accounts


def test_login_is_by_phone_number(s: AppSession) -> None:
    assert s.login("phone", LAURA, "laura-ph")
    assert s.refused("phone__login", "unauthorized", username="la-mcco@gmail.com", password="laura-ph") == (
        "Invalid credentials"
    )
    s.refused("phone__login", "unauthorized", username=LAURA, password="wrong")


def test_a_token_of_another_app_or_a_logged_out_token_is_refused(s: AppSession) -> None:
    gmail = s.login("gmail", "la-mcco@gmail.com", "laura-pw")
    assert "phone API" in s.refused("phone__search_contacts", "unauthorized", access_token=gmail)
    token = s.login("phone", LAURA, "laura-ph")
    assert s.ok("phone__logout", access_token=token) == {"message": "Successfully logged out."}
    s.refused("phone__search_contacts", "unauthorized", access_token=token)


# ---------------------------------------------------------------- texts


def test_send_text_message_keeps_a_copy_for_each_side(s: AppSession) -> None:
    token = s.login("phone", LAURA, "laura-ph")
    sent = s.ok("phone__send_text_message", access_token=token, phone_number=CHRIS, message="Cabin deposit?")
    assert sent["message"] == "Text message sent." and set(sent) == {"message", "text_message_id"}
    mine = state_value(s.state, f"apps.phone.text_messages.{sent['text_message_id']}")
    assert mine["user_id"] == 1 and mine["sender"] == LAURA and mine["receiver"] == CHRIS
    copies = [t for t in s.state.apps["phone"]["text_messages"] if t["message"] == "Cabin deposit?"]
    assert sorted(t["user_id"] for t in copies) == [1, 2]
    # a number given as a JSON number is the same number
    s.ok("phone__send_text_message", access_token=token, phone_number=int(JO), message="hello")
    assert state_value(s.state, "apps.phone.text_messages.3.receiver") == JO


def test_send_text_message_refusals(s: AppSession) -> None:
    token = s.login("phone", LAURA, "laura-ph")
    before = s.state
    outcome = s.call("phone__send_text_message", access_token=token, phone_number="5559999999", message="hi")
    assert outcome.status == "not_found"
    assert outcome.result == {
        "response": {"message": ["The user with phone_number 5559999999 does not exist."]}
    }
    s.refused("phone__send_text_message", "invalid_args", access_token=token, phone_number=CHRIS, message="")
    assert s.state == before


def test_texts_show_the_callers_contact_names(s: AppSession) -> None:
    laura = s.login("phone", LAURA, "laura-ph")
    sent = s.ok("phone__send_text_message", access_token=laura, phone_number=CHRIS, message="hi")
    shown = s.ok("phone__show_text_message", access_token=laura, text_message_id=sent["text_message_id"])
    assert set(shown) == TEXT_KEYS and shown["message"] == "hi" and shown["sent_at"] == "2025-05-05T09:00:00"
    assert shown["sender"] == {"contact_id": None, "name": "Laura Mccoy", "phone_number": LAURA}
    assert shown["receiver"] == {"contact_id": 1, "name": "Chrissy Mccoy", "phone_number": CHRIS}
    chris = s.login("phone", CHRIS, "chris-ph")
    theirs = s.ok("phone__search_text_messages", access_token=chris)[0]
    assert theirs["sender"] == {"contact_id": 3, "name": "Sis Laura", "phone_number": LAURA}
    message = s.refused(
        "phone__show_text_message", "failed", access_token=chris, text_message_id=sent["text_message_id"]
    )
    assert message == "The given text message does not belong to you, so you cannot access it."
    assert s.refused("phone__show_text_message", "not_found", access_token=chris, text_message_id=40) == (
        "The text message with id 40 does not exist."
    )


def _conversation(s: AppSession) -> tuple[str, str]:
    laura = s.login("phone", LAURA, "laura-ph")
    chris = s.login("phone", CHRIS, "chris-ph")
    jo = s.login("phone", JO, "jo-ph")
    s.ok("phone__send_text_message", access_token=laura, phone_number=CHRIS, message="parking fees?")
    _at(s, 10)
    s.ok("phone__send_text_message", access_token=chris, phone_number=LAURA, message="paid 30 for parking")
    _at(s, 20)
    s.ok("phone__send_text_message", access_token=jo, phone_number=LAURA, message="cabin receipt attached")
    _at(s, 30)
    s.ok("phone__send_text_message", access_token=laura, phone_number=CHRIS, message="thanks!")
    return laura, chris


def test_search_text_messages_filters_ranks_and_sorts(s: AppSession) -> None:
    laura, _ = _conversation(s)
    newest_first = [t["message"] for t in s.ok("phone__search_text_messages", access_token=laura)]
    assert newest_first == ["thanks!", "cabin receipt attached", "paid 30 for parking", "parking fees?"]
    with_chris = s.ok("phone__search_text_messages", access_token=laura, phone_number=CHRIS)
    assert [t["message"] for t in with_chris] == ["thanks!", "paid 30 for parking", "parking fees?"]
    latest = s.ok("phone__search_text_messages", access_token=laura, only_latest_per_contact=True)
    assert [t["message"] for t in latest] == ["thanks!", "cabin receipt attached"]
    ranked = s.ok("phone__search_text_messages", access_token=laura, query="cabin")
    assert ranked[0]["message"] == "cabin receipt attached" and len(ranked) == 4
    oldest = s.ok("phone__search_text_messages", access_token=laura, sort_by="+created_at", page_limit=2)
    assert [t["message"] for t in oldest] == ["parking fees?", "paid 30 for parking"]
    assert "+ or -" in s.refused(
        "phone__search_text_messages", "failed", access_token=laura, sort_by="created_at"
    )
    s.refused("phone__search_text_messages", "not_found", access_token=laura, phone_number="1112223333")


def test_text_message_window_pages_from_either_end(s: AppSession) -> None:
    laura, _ = _conversation(s)
    newest = s.ok("phone__show_text_message_window", access_token=laura, phone_number=CHRIS, page_limit=2)
    assert [t["message"] for t in newest] == ["paid 30 for parking", "thanks!"]  # each page oldest first
    assert set(newest[0]) == TEXT_KEYS
    oldest = s.ok(
        "phone__show_text_message_window",
        access_token=laura,
        phone_number=CHRIS,
        page_limit=2,
        pagination_order="ascending",
    )
    assert [t["message"] for t in oldest] == ["parking fees?", "paid 30 for parking"]
    window = s.ok(
        "phone__show_text_message_window",
        access_token=laura,
        phone_number=CHRIS,
        min_datetime="2025-05-05|09:05:00",
        max_datetime="2025-05-05|09:15:00",
    )
    assert [t["message"] for t in window] == ["paid 30 for parking"]
    assert "YYYY-MM-DD|HH:MM:SS" in s.refused(
        "phone__show_text_message_window",
        "invalid_args",
        access_token=laura,
        phone_number=CHRIS,
        min_datetime="x",
    )
    s.refused(
        "phone__show_text_message_window",
        "invalid_args",
        access_token=laura,
        phone_number=CHRIS,
        pagination_order="up",
    )


# ---------------------------------------------------------------- contacts


def test_search_contacts_by_query_and_relationship(s: AppSession) -> None:
    token = s.login("phone", LAURA, "laura-ph")
    listed = s.ok("phone__search_contacts", access_token=token)
    assert [c["contact_id"] for c in listed] == [2, 1]  # newest first; only her own contacts
    assert set(listed[0]) == CONTACT_KEYS
    assert [c["contact_id"] for c in s.ok("phone__search_contacts", access_token=token, query="Chrissy")] == [
        1,
        2,
    ]
    friends = s.ok("phone__search_contacts", access_token=token, relationship="Friends")
    assert [c["contact_id"] for c in friends] == [2]
    assert s.ok("phone__search_contacts", access_token=token, relationship="sister") == []


def test_add_and_update_contact(s: AppSession) -> None:
    token = s.login("phone", LAURA, "laura-ph")
    added = s.ok(
        "phone__add_contact",
        access_token=token,
        first_name="Leslie",
        last_name="Ball",
        phone_number="7873383923",
        email="les_ball@gmail.com",
        relationships=["classmate"],
        birthday="1999-04-01",
    )
    assert added["message"] == "Contact added." and set(added) == {"message", "contact_id"}
    record = state_value(s.state, f"apps.phone.contacts.{added['contact_id']}")
    assert (
        record["user_id"] == 1 and record["relationships"] == ["classmate"] and record["work_address"] is None
    )
    assert s.ok(
        "phone__update_contact",
        access_token=token,
        contact_id=added["contact_id"],
        work_address="Lab 2",
        relationships=["friend"],
    ) == {"message": "Contact updated."}
    record = state_value(s.state, f"apps.phone.contacts.{added['contact_id']}")
    assert record["work_address"] == "Lab 2" and record["relationships"] == ["friend"]
    assert record["first_name"] == "Leslie"  # untouched fields stay


def test_contact_refusals(s: AppSession) -> None:
    token = s.login("phone", LAURA, "laura-ph")
    base = {"access_token": token, "first_name": "A", "last_name": "B", "phone_number": "1"}
    assert s.refused("phone__add_contact", "invalid_args", birthday="04/01/1999", **base) == (
        "Invalid birthday format. Use YYYY-MM-DD."
    )
    s.refused("phone__add_contact", "invalid_args", email="not-an-address", **base)
    assert "already exists" in s.refused("phone__add_contact", "failed", email="jo.ball@gmail.com", **base)
    assert s.refused(
        "phone__update_contact", "not_found", access_token=token, contact_id=99, first_name="x"
    ) == ("The contact with id 99 does not exist.")
    assert "does not belong to you" in s.refused(
        "phone__update_contact", "failed", access_token=token, contact_id=3, first_name="x"
    )


# ---------------------------------------------------------------- alarms and time


def test_create_show_and_update_an_alarm(s: AppSession) -> None:
    token = s.login("phone", LAURA, "laura-ph")
    created = s.ok("phone__create_alarm", access_token=token, time="06:45", repeat_days=["monday", "friday"])
    assert created["message"] == "Alarm created successfully." and set(created) == {"message", "alarm_id"}
    alarm = s.ok("phone__show_alarm", access_token=token, alarm_id=created["alarm_id"])
    assert alarm == {
        "alarm_id": created["alarm_id"],
        "time": "06:45",
        "repeat_days": ["monday", "friday"],
        "label": None,
        "enabled": True,
        "snooze_minutes": 15,
        "vibration": True,
        "created_at": "2025-05-05T09:00:00",
        "user": {"name": "Laura Mccoy", "phone_number": LAURA},
    }
    assert s.ok(
        "phone__update_alarm", access_token=token, alarm_id=created["alarm_id"], enabled=False, label="Gym"
    ) == {"message": "Alarm updated successfully."}
    record = state_value(s.state, f"apps.phone.alarms.{created['alarm_id']}")
    assert record["enabled"] is False and record["label"] == "Gym" and record["time"] == "06:45"


def test_alarm_refusals(s: AppSession) -> None:
    token = s.login("phone", LAURA, "laura-ph")
    assert s.refused("phone__create_alarm", "invalid_args", access_token=token, time="6.45pm") == (
        "Invalid time format. Use HH:MM."
    )
    s.refused(
        "phone__create_alarm", "invalid_args", access_token=token, time="06:45", repeat_days=["someday"]
    )
    s.refused("phone__create_alarm", "invalid_args", access_token=token, time="06:45", snooze_minutes=-1)
    s.refused("phone__show_alarm", "not_found", access_token=token, alarm_id=5)
    created = s.ok("phone__create_alarm", access_token=token, time="06:45")
    chris = s.login("phone", CHRIS, "chris-ph")
    assert "does not belong to you" in s.refused(
        "phone__update_alarm", "failed", access_token=chris, alarm_id=created["alarm_id"], enabled=False
    )
    s.refused(
        "phone__update_alarm", "invalid_args", access_token=token, alarm_id=created["alarm_id"], time="25h"
    )


def test_current_date_and_time_follow_the_virtual_clock(s: AppSession) -> None:
    assert s.ok("phone__get_current_date_and_time") == {"date": "Monday, May 05, 2025", "time": "09:00 AM"}
    _at(s, 8 * 60 + 30)
    assert s.ok("phone__get_current_date_and_time") == {"date": "Monday, May 05, 2025", "time": "05:30 PM"}
