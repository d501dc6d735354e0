"""The ``phone`` app: contacts and text messages.

Records (``apps["phone"]``):

- ``contacts``: ``{contact_id, name, phone_number, email, relationship}``.
- ``text_messages``: ``{text_message_id, direction: "sent"|"received", phone_number,
  contact_name, message, sent_at}`` (``contact_name`` null for an unknown number; ``sent_at`` in
  virtual minutes).

Tools (``mcp_appworld_phone__<api>``): ``send_text_message(phone_number | contact_name,
message)`` -> ``{text_message_id, phone_number, contact_name}`` (a contact name is matched
case-insensitively on the full name, else on a unique first name; unknown -> not found, several
-> failed), ``search_contacts(query)``, ``show_text_messages(contact?)`` (``contact``: a name or a
number; oldest first).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, model_validator

from messages.probes import JsonObject
from world.episodes.apps.base import (
    Args,
    EpisodeTool,
    ToolContext,
    ToolFailed,
    ToolNotFound,
    app_tool,
    search,
)

APP = "phone"
_NUMBER = r"^\+?[0-9][0-9 ()\-.]{5,24}$"


def _contact(contact_id: int, name: str, phone: str, email: str, relationship: str) -> dict[str, Any]:
    return {
        "contact_id": contact_id,
        "name": name,
        "phone_number": phone,
        "email": email,
        "relationship": relationship,
    }


SEED: dict[str, Any] = {
    "contacts": [
        _contact(1, "Priya Shah", "+1-555-0101", "priya.shah@example.com", "manager"),
        _contact(2, "Sam Lee", "+1-555-0102", "sam.lee@example.com", "coworker"),
        _contact(3, "Jordan Morgan", "+1-555-0103", "jordan.morgan@example.com", "sibling"),
        _contact(4, "Dr. Elena Ruiz", "+1-555-0104", "clinic@ruizdental.example.com", "dentist"),
        _contact(5, "Chris Okafor", "+1-555-0105", "chris.okafor@example.com", "friend"),
    ],
    "text_messages": [
        {
            "text_message_id": 1,
            "direction": "received",
            "phone_number": "+1-555-0103",
            "contact_name": "Jordan Morgan",
            "message": "Are we still on for Sunday dinner at mom's?",
            "sent_at": -300.0,
        }
    ],
}


class SendTextArgs(Args):
    phone_number: str | None = Field(default=None, pattern=_NUMBER, description="A phone number.")
    contact_name: str | None = Field(default=None, min_length=1, description="A contact's name instead.")
    message: str = Field(min_length=1)

    @model_validator(mode="after")
    def _one_recipient(self) -> SendTextArgs:
        if (self.phone_number is None) == (self.contact_name is None):
            raise ValueError("give exactly one of phone_number and contact_name")
        return self


class QueryArgs(Args):
    query: str = ""


class ShowTextsArgs(Args):
    contact: str | None = Field(default=None, description="A contact's name or a phone number.")


def _digits(number: str) -> str:
    return re.sub(r"\D", "", number)


def find_contact(ctx: ToolContext, name: str) -> dict[str, Any]:
    """The contact called ``name``: full name first, then a unique first name."""
    wanted = name.strip().casefold()
    contacts = ctx.rows(APP, "contacts")
    exact = [c for c in contacts if str(c.get("name", "")).casefold() == wanted]
    if exact:
        return exact[0]
    first = [c for c in contacts if str(c.get("name", "")).casefold().split(" ")[:1] == [wanted]]
    if len(first) > 1:
        names = ", ".join(str(c.get("name")) for c in first)
        raise ToolFailed(f"{name!r} matches several contacts ({names}): give the full name")
    if not first:
        raise ToolNotFound(f"no contact named {name!r}")
    return first[0]


def _by_number(ctx: ToolContext, number: str) -> dict[str, Any] | None:
    digits = _digits(number)
    return next(
        (c for c in ctx.rows(APP, "contacts") if _digits(str(c.get("phone_number", ""))) == digits), None
    )


def send_text_message(ctx: ToolContext, args: SendTextArgs) -> JsonObject:
    contact: dict[str, Any] | None
    if args.contact_name is not None:
        contact = find_contact(ctx, args.contact_name)
        number = str(contact["phone_number"])
    else:
        number = str(args.phone_number)
        contact = _by_number(ctx, number)
    name = contact.get("name") if contact else None
    message_id = ctx.new_id(APP, "text_messages")
    ctx.rows(APP, "text_messages").append(
        {
            "text_message_id": message_id,
            "direction": "sent",
            "phone_number": number,
            "contact_name": name,
            "message": args.message,
            "sent_at": ctx.now,
        }
    )
    return {"text_message_id": message_id, "phone_number": number, "contact_name": name}


def search_contacts(ctx: ToolContext, args: QueryArgs) -> JsonObject:
    found = search(
        ctx.rows(APP, "contacts"), args.query, "contact_id", "name", "email", "relationship", "phone_number"
    )
    return {"contacts": found}


def show_text_messages(ctx: ToolContext, args: ShowTextsArgs) -> JsonObject:
    rows = ctx.rows(APP, "text_messages")
    if args.contact:
        digits = _digits(args.contact)
        if len(digits) >= 6:
            rows = [m for m in rows if _digits(str(m.get("phone_number", ""))) == digits]
        else:
            contact = find_contact(ctx, args.contact)
            rows = [
                m for m in rows if _digits(str(m.get("phone_number", ""))) == _digits(contact["phone_number"])
            ]
    return {"text_messages": sorted(rows, key=lambda m: (float(m.get("sent_at", 0.0)), m["text_message_id"]))}


TOOLS: tuple[EpisodeTool[Any], ...] = (
    app_tool(
        APP,
        "send_text_message",
        "Send a text message to a phone number or a contact (give exactly one).",
        SendTextArgs,
        send_text_message,
    ),
    app_tool(
        APP, "search_contacts", "Search contacts by name, email or relationship.", QueryArgs, search_contacts
    ),
    app_tool(
        APP,
        "show_text_messages",
        "Show text messages, optionally with one contact.",
        ShowTextsArgs,
        show_text_messages,
    ),
)
