"""The ``phone`` app: each user's contact book, text messages between phone users, alarms.

Records (``apps["phone"]``; times AppWorld's ``YYYY-MM-DDTHH:MM:SS``):

- ``users``: the accounts (``seed`` makes them from the people); the login username is the
  ``phone_number``.
- ``contacts``: ``{contact_id, user_id, first_name, last_name, email, phone_number,
  relationships: [str], birthday: "YYYY-MM-DD", home_address, work_address, created_at}``: the
  contact book of user ``user_id``.
- ``text_messages``: ``{text_message_id, user_id, sender, receiver, message, sent_at}``: one
  user's copy of a text (``sender``/``receiver`` are phone numbers). A text between two users is
  two records, one per side; ids in responses are the caller's copy.
- ``alarms``: ``{alarm_id, user_id, time: "HH:MM", repeat_days: [monday..sunday] | null, label,
  enabled, snooze_minutes, vibration, created_at}``.

Tools (``mcp_appworld_phone__<api>``, AppWorld's parameters): ``login``, ``logout``,
``add_contact``, ``update_contact``, ``search_contacts``, ``send_text_message`` (the receiver is
the phone user with that number; unknown -> 409 with a list message), ``search_text_messages``,
``show_text_message``, ``show_text_message_window``, ``create_alarm``, ``show_alarm``,
``update_alarm``, ``get_current_date_and_time`` (the virtual clock). A text's ``sender`` and
``receiver`` are shown as the caller's contact with that number (``contact_id``, name) when there
is one, else the user's own name.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    TIME_FORMAT,
    USERS,
    AppApis,
    AuthArgs,
    AuthPageArgs,
    Conflict,
    EmailAddress,
    NoAppArgs,
    Row,
    ToolContext,
    ToolInvalid,
    full_name,
    id_field,
    login_tool,
    logout_tool,
    page,
    parse_date,
    parse_send_time,
    pick,
    retrieve,
    search_text,
    singular,
    update_fields,
)

APP = "phone"
apis = AppApis(APP)
MIN_DATETIME = "1500-01-01|00:00:00"
MAX_DATETIME = "3000-01-01|00:00:00"
Day = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


# ---------------------------------------------------------------- arguments


class PhoneArgs(AuthArgs):
    # A phone number given as a JSON number is still the number (AppWorld puts it in the URL).
    model_config = ConfigDict(coerce_numbers_to_str=True)


class ContactArgs(PhoneArgs):
    contact_id: int = id_field("The contact's id.")


class AddContactArgs(PhoneArgs):
    first_name: str = Field(description="The contact's first name.")
    last_name: str = Field(description="The contact's last name.")
    phone_number: str = Field(description="The contact's phone number.")
    email: EmailAddress | None = Field(default=None, description="The contact's email address.")
    relationships: list[str] | None = Field(default=None, description="How you are related, e.g. friend.")
    birthday: str | None = Field(default=None, description="Birthday, YYYY-MM-DD.")
    home_address: str | None = Field(default=None, description="Home address.")
    work_address: str | None = Field(default=None, description="Work address.")


class UpdateContactArgs(ContactArgs):
    first_name: str | None = Field(default=None, description="New first name.")
    last_name: str | None = Field(default=None, description="New last name.")
    phone_number: str | None = Field(default=None, description="New phone number.")
    email: EmailAddress | None = Field(default=None, description="New email address.")
    relationships: list[str] | None = Field(default=None, description="New relationships (replace the old).")
    birthday: str | None = Field(default=None, description="New birthday, YYYY-MM-DD.")
    home_address: str | None = Field(default=None, description="New home address.")
    work_address: str | None = Field(default=None, description="New work address.")


class SearchContactsArgs(AuthPageArgs):
    query: str = Field(default="", description="Words to look for; matching contacts come first.")
    relationship: str | None = Field(default=None, description="Only contacts with this relationship.")


class SendTextArgs(PhoneArgs):
    phone_number: str = Field(description="The receiver's phone number.")
    message: str = Field(min_length=1, description="The text to send.")


class SearchTextsArgs(AuthPageArgs):
    model_config = ConfigDict(coerce_numbers_to_str=True)

    query: str = Field(default="", description="Words to look for; matching messages come first.")
    phone_number: str | None = Field(default=None, description="Only messages with this phone number.")
    only_latest_per_contact: bool = Field(
        default=False, description="Only the latest message with each person."
    )
    sort_by: str | None = Field(
        default=None, description="+created_at or -created_at (default -created_at when there is no query)."
    )


class TextArgs(PhoneArgs):
    text_message_id: int = id_field("The text message's id.")


class TextWindowArgs(AuthPageArgs):
    model_config = ConfigDict(coerce_numbers_to_str=True)

    phone_number: str = Field(description="The other person's phone number.")
    min_datetime: str = Field(default=MIN_DATETIME, description="Sent on or after, YYYY-MM-DD|HH:MM:SS.")
    max_datetime: str = Field(default=MAX_DATETIME, description="Sent on or before, YYYY-MM-DD|HH:MM:SS.")
    pagination_order: Literal["ascending", "descending"] = Field(
        default="descending",
        description="descending: page 0 has the newest texts, ascending the oldest; pages run oldest first.",
    )


class AlarmArgs(AuthArgs):
    alarm_id: int = id_field("The alarm's id.")


class CreateAlarmArgs(AuthArgs):
    time: str = Field(description="The time, HH:MM.")
    repeat_days: list[Day] | None = Field(default=None, description="Days it repeats on (monday..sunday).")
    label: str | None = Field(default=None, description="The alarm's label.")
    enabled: bool = Field(default=True, description="Whether it is on.")
    snooze_minutes: int = Field(default=15, ge=0, description="Snooze length in minutes; 0 for none.")
    vibration: bool = Field(default=True, description="Whether it vibrates.")


class UpdateAlarmArgs(AlarmArgs):
    time: str | None = Field(default=None, description="New time, HH:MM.")
    repeat_days: list[Day] | None = Field(default=None, description="New repeat days (monday..sunday).")
    label: str | None = Field(default=None, description="New label.")
    enabled: bool | None = Field(default=None, description="Turn it on or off.")
    snooze_minutes: int | None = Field(default=None, ge=0, description="New snooze length in minutes.")
    vibration: bool | None = Field(default=None, description="Whether it vibrates.")


# ---------------------------------------------------------------- helpers


def _phone_user(ctx: ToolContext, number: str) -> dict[str, Any]:
    """The phone user with this number; AppWorld's 409 with a list message otherwise."""
    return ctx.find_by(APP, USERS, "phone_number", number, "user")


def _number_user(ctx: ToolContext, number: Any) -> Row | None:
    return next((u for u in ctx.rows(APP, USERS) if u.get("phone_number") == number), None)


def _party(ctx: ToolContext, owner_id: Any, number: Any) -> JsonObject:
    """One side of a text as its owner sees it: their contact with that number, else the user."""
    contact = next(
        (
            c
            for c in ctx.rows(APP, "contacts")
            if c.get("user_id") == owner_id and number is not None and c.get("phone_number") == number
        ),
        None,
    )
    if contact is not None:
        return {"contact_id": contact["contact_id"], "name": full_name(contact), "phone_number": number}
    user = _number_user(ctx, number)
    return {"contact_id": None, "name": full_name(user) if user else None, "phone_number": number}


def _text_view(ctx: ToolContext, text: dict[str, Any]) -> JsonObject:
    owner = text.get("user_id")
    return {
        "text_message_id": text["text_message_id"],
        "sender": _party(ctx, owner, text.get("sender")),
        "receiver": _party(ctx, owner, text.get("receiver")),
        "message": text.get("message"),
        "sent_at": text.get("sent_at"),
    }


def _text_search(ctx: ToolContext, text: dict[str, Any]) -> str:
    names = []
    for number in (text.get("sender"), text.get("receiver")):
        user = _number_user(ctx, number)
        names.append(full_name(user) if user else "")
    return " ".join([str(text.get("message", "")), *names])


def _between(text: dict[str, Any], me: Any, other: Any) -> bool:
    return {text.get("sender"), text.get("receiver")} == {me, other}


def _contact_view(contact: dict[str, Any]) -> JsonObject:
    fields = ("contact_id", "first_name", "last_name", "email", "phone_number")
    rest = ("birthday", "home_address", "work_address", "created_at")
    return {
        **{f: contact.get(f) for f in fields},
        "relationships": list(contact.get("relationships") or []),
        **{f: contact.get(f) for f in rest},
    }


def _check_time(value: str) -> None:
    try:
        datetime.strptime(value, "%H:%M")
    except ValueError:
        raise ToolInvalid("Invalid time format. Use HH:MM.") from None


def _check_unique_email(ctx: ToolContext, user_id: Any, email: str | None, contact_id: Any = None) -> None:
    if email is None:
        return
    for contact in ctx.rows(APP, "contacts"):
        same = contact.get("user_id") == user_id and str(contact.get("email") or "").lower() == email.lower()
        if same and contact.get("contact_id") != contact_id:
            raise Conflict("Contact with this user_id and email already exists.")


def _sent(text: Row, field: str = "created_at") -> str:
    """What a text sorts by: when it was sent (``sort_by``'s ``created_at``)."""
    return str(text.get("sent_at") or "")


# ---------------------------------------------------------------- contacts


apis.add(
    login_tool(APP, login_by="phone_number"),
    logout_tool(APP),
)


@apis.api("Add a person to your contact book.")
def add_contact(ctx: ToolContext, args: AddContactArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    if args.birthday is not None:
        parse_date(args.birthday, "birthday")
    _check_unique_email(ctx, user["user_id"], args.email)
    given = args.model_dump()
    contact = ctx.insert(
        APP,
        "contacts",
        {
            "user_id": user["user_id"],
            **pick(given, "first_name", "last_name", "email", "phone_number"),
            "relationships": list(args.relationships or []),
            **pick(given, "birthday", "home_address", "work_address"),
            "created_at": ctx.timestamp(),
        },
    )
    return {"message": "Contact added.", "contact_id": contact["contact_id"]}


@apis.api("Change a contact's details.")
def update_contact(ctx: ToolContext, args: UpdateContactArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    contact = ctx.owned(APP, "contacts", args.contact_id, "contact", user)
    if args.birthday is not None:
        parse_date(args.birthday, "birthday")
    _check_unique_email(ctx, user["user_id"], args.email, contact["contact_id"])
    fields = ("first_name", "last_name", "phone_number", "email", "birthday", "home_address", "work_address")
    update_fields(contact, args, *fields)
    if args.relationships is not None:
        contact["relationships"] = list(args.relationships)
    return {"message": "Contact updated."}


@apis.api("List or search your contacts (optionally one relationship).")
def search_contacts(ctx: ToolContext, args: SearchContactsArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    wanted = singular(args.relationship.lower()) if args.relationship is not None else None
    mine = [
        c
        for c in ctx.mine(APP, "contacts", user)
        if wanted is None or any(singular(str(r).lower()) == wanted for r in c.get("relationships") or [])
    ]
    fields = ("first_name", "last_name", "email", "phone_number", "home_address", "work_address")
    items = [(search_text(*(c.get(f) or "" for f in fields), c.get("relationships") or []), c) for c in mine]
    return [_contact_view(c) for c in retrieve(items, args, default_sort="-created_at")]


# ---------------------------------------------------------------- text messages


def _new_text(ctx: ToolContext, owner: Any, *, sender: Any, receiver: Any, message: str, at: str) -> int:
    text = ctx.insert(
        APP,
        "text_messages",
        {
            "user_id": owner,
            "sender": sender,
            "receiver": receiver,
            "message": message,
            "sent_at": at,
        },
    )
    return int(text["text_message_id"])


@apis.api("Send a text message to a phone number.")
def send_text_message(ctx: ToolContext, args: SendTextArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    receiver = _phone_user(ctx, args.phone_number)
    at = ctx.timestamp()
    me, them = user.get("phone_number"), receiver.get("phone_number")
    text_id = _new_text(ctx, user["user_id"], sender=me, receiver=them, message=args.message, at=at)
    if receiver.get("user_id") != user.get("user_id"):
        _new_text(ctx, receiver["user_id"], sender=me, receiver=them, message=args.message, at=at)
    return {"message": "Text message sent.", "text_message_id": text_id}


@apis.api("List or search your text messages.")
def search_text_messages(ctx: ToolContext, args: SearchTextsArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    me = user.get("phone_number")
    texts = ctx.mine(APP, "text_messages", user)
    if args.phone_number is not None:
        other = _phone_user(ctx, args.phone_number).get("phone_number")
        texts = [t for t in texts if _between(t, me, other)]
    if args.only_latest_per_contact:
        latest: dict[Any, dict[str, Any]] = {}
        for text in texts:
            other = text.get("receiver") if text.get("sender") == me else text.get("sender")
            if other not in latest or str(text.get("sent_at", "")) > str(latest[other].get("sent_at", "")):
                latest[other] = text
        texts = list(latest.values())
    items = [(_text_search(ctx, t), t) for t in texts]
    found = retrieve(items, args, ("created_at",), default_sort="-created_at", key=_sent)
    return [_text_view(ctx, t) for t in found]


@apis.api("Show one text message.")
def show_text_message(ctx: ToolContext, args: TextArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    return _text_view(ctx, ctx.owned(APP, "text_messages", args.text_message_id, "text message", user))


@apis.api("Show your text messages with one phone number within a time window.")
def show_text_message_window(ctx: ToolContext, args: TextWindowArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    low = parse_send_time(args.min_datetime, "min_datetime")
    high = parse_send_time(args.max_datetime, "max_datetime")
    other = _phone_user(ctx, args.phone_number).get("phone_number")
    me = user.get("phone_number")
    texts = [
        t
        for t in ctx.mine(APP, "text_messages", user)
        if _between(t, me, other) and low <= str(t.get("sent_at", ""))[:19] <= high
    ]
    ordered = sorted(texts, key=_sent, reverse=args.pagination_order == "descending")
    window = sorted(page(ordered, args.page_index, args.page_limit), key=_sent)
    return [_text_view(ctx, t) for t in window]


# ---------------------------------------------------------------- alarms


def _alarm_view(ctx: ToolContext, alarm: dict[str, Any]) -> JsonObject:
    owner = ctx.user_by_id(APP, alarm.get("user_id")) or {}
    fields = (
        "alarm_id",
        "time",
        "repeat_days",
        "label",
        "enabled",
        "snooze_minutes",
        "vibration",
        "created_at",
    )
    return {
        **{f: alarm.get(f) for f in fields},
        "user": {"name": full_name(owner), "phone_number": owner.get("phone_number")},
    }


@apis.api("Set a new alarm.")
def create_alarm(ctx: ToolContext, args: CreateAlarmArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    _check_time(args.time)
    alarm = ctx.insert(
        APP,
        "alarms",
        {
            "user_id": user["user_id"],
            **pick(
                args.model_dump(), "time", "repeat_days", "label", "enabled", "snooze_minutes", "vibration"
            ),
            "created_at": ctx.timestamp(),
        },
    )
    return {"message": "Alarm created successfully.", "alarm_id": alarm["alarm_id"]}


@apis.api("Show one alarm.")
def show_alarm(ctx: ToolContext, args: AlarmArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    return _alarm_view(ctx, ctx.owned(APP, "alarms", args.alarm_id, "alarm", user))


@apis.api("Change an alarm.")
def update_alarm(ctx: ToolContext, args: UpdateAlarmArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    alarm = ctx.owned(APP, "alarms", args.alarm_id, "alarm", user)
    if args.time is not None:
        _check_time(args.time)
    update_fields(alarm, args, "time", "label", "enabled", "snooze_minutes", "vibration")
    if args.repeat_days is not None:
        alarm["repeat_days"] = list(args.repeat_days)
    return {"message": "Alarm updated successfully."}


@apis.api("Show today's date and the time.")
def get_current_date_and_time(ctx: ToolContext, args: NoAppArgs) -> JsonObject:
    now = datetime.strptime(ctx.timestamp(), TIME_FORMAT)
    return {"date": now.strftime("%A, %B %d, %Y"), "time": now.strftime("%I:%M %p")}


TOOLS = apis.tools

__all__ = ["APP", "TOOLS"]
