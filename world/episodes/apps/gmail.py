"""The ``gmail`` app: one mailbox with an inbox, sent mail and drafts.

Records (``apps["gmail"]``):

- ``account``: ``{name, email}`` (the user; the sender of what the assistant sends).
- ``emails``: ``{email_id, folder: "inbox"|"sent"|"drafts", sender, to: [addresses],
  cc: [addresses], subject, body, sent_at, in_reply_to}`` (``sent_at`` in virtual minutes, negative
  for mail that arrived before the episode; ``in_reply_to``: an ``email_id`` or null).

Tools (``mcp_appworld_gmail__<api>``): ``send_email(to, subject, body, cc?)`` -> ``{email_id,
sent: true}`` (``to``/``cc``: one address or a list; each must look like an address),
``reply_to_email(email_id, body)`` (to the original sender, subject ``Re: ...``),
``create_draft(to, subject, body)``, ``search_emails(query)`` (subject, body, sender, recipients;
every folder), ``show_email(email_id)``, ``show_inbox()`` (newest first).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    Args,
    EpisodeTool,
    NoArgs,
    ToolContext,
    app_tool,
    id_field,
    pick,
    rows_of,
    search,
)

APP = "gmail"
_ADDRESS = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _addresses(value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise ValueError("give an email address or a list of them")
    out = [v.strip() for v in items if v.strip()]
    bad = [v for v in out if not _ADDRESS.match(v)]
    if bad:
        raise ValueError(f"not an email address: {', '.join(bad)}")
    return out


Addresses = Annotated[list[str], BeforeValidator(_addresses)]


USER_EMAIL = "alex.morgan@example.com"
_INBOX_FIELDS = ("email_id", "sender", "subject", "body", "sent_at")
_INBOX = (
    (
        1,
        "priya.shah@example.com",
        "Quarterly budget review",
        "Hi Alex, can you send me the updated budget figures by Friday? Thanks, Priya",
        -1440.0,
    ),
    (
        2,
        "noreply@millbrook-library.example.org",
        "Your reserved book is ready",
        "The book you reserved, 'Patterns of Rivers', is ready for pickup until Saturday.",
        -600.0,
    ),
    (
        3,
        "sam.lee@example.com",
        "Team lunch on Thursday",
        "Shall we book the Thai place for six people at 12:30? Let me know. Sam",
        -120.0,
    ),
)

SEED: dict[str, Any] = {
    "account": {"name": "Alex Morgan", "email": USER_EMAIL},
    "emails": [
        {"folder": "inbox", "to": [USER_EMAIL], "cc": [], "in_reply_to": None, **row}
        for row in rows_of(_INBOX_FIELDS, *_INBOX)
    ],
}

_SUMMARY = ("email_id", "folder", "sender", "to", "subject", "sent_at")


class SendEmailArgs(Args):
    to: Addresses = Field(min_length=1, description="One address or a list of addresses.")
    subject: str = Field(min_length=1)
    body: str
    cc: Addresses = Field(default=[], description="Addresses in copy.")


class DraftArgs(Args):
    to: Addresses = Field(min_length=1, description="One address or a list of addresses.")
    subject: str = ""
    body: str = ""


class ReplyArgs(Args):
    email_id: int = id_field("The email to reply to.")
    body: str = Field(min_length=1)


class EmailArgs(Args):
    email_id: int = id_field("The email's id.")


class QueryArgs(Args):
    query: str = ""


def _user(ctx: ToolContext) -> str:
    account = ctx.app(APP).get("account")
    return str(account.get("email", "me@example.com")) if isinstance(account, dict) else "me@example.com"


def _store(
    ctx: ToolContext, folder: str, *, to: list[str], cc: list[str], subject: str, body: str, reply: Any
) -> int:
    email_id = ctx.new_id(APP, "emails")
    ctx.rows(APP, "emails").append(
        {
            "email_id": email_id,
            "folder": folder,
            "sender": _user(ctx),
            "to": to,
            "cc": cc,
            "subject": subject,
            "body": body,
            "sent_at": ctx.now,
            "in_reply_to": reply,
        }
    )
    return email_id


def send_email(ctx: ToolContext, args: SendEmailArgs) -> JsonObject:
    email_id = _store(ctx, "sent", to=args.to, cc=args.cc, subject=args.subject, body=args.body, reply=None)
    return {"email_id": email_id, "sent": True}


def reply_to_email(ctx: ToolContext, args: ReplyArgs) -> JsonObject:
    original = ctx.find(APP, "emails", args.email_id, "email")
    subject = str(original.get("subject", ""))
    subject = subject if subject.lower().startswith("re:") else f"Re: {subject}"
    email_id = _store(
        ctx,
        "sent",
        to=[str(original.get("sender", ""))],
        cc=[],
        subject=subject,
        body=args.body,
        reply=args.email_id,
    )
    return {"email_id": email_id, "sent": True, "to": original.get("sender")}


def create_draft(ctx: ToolContext, args: DraftArgs) -> JsonObject:
    email_id = _store(ctx, "drafts", to=args.to, cc=[], subject=args.subject, body=args.body, reply=None)
    return {"email_id": email_id, "draft": True}


def search_emails(ctx: ToolContext, args: QueryArgs) -> JsonObject:
    found = search(ctx.rows(APP, "emails"), args.query, "email_id", "subject", "body", "sender", "to")
    return {"emails": [pick(e, *_SUMMARY) for e in found]}


def show_email(ctx: ToolContext, args: EmailArgs) -> JsonObject:
    return dict(ctx.find(APP, "emails", args.email_id, "email"))


def show_inbox(ctx: ToolContext, args: NoArgs) -> JsonObject:
    inbox = [e for e in ctx.rows(APP, "emails") if e.get("folder") == "inbox"]
    inbox.sort(key=lambda e: (-float(e.get("sent_at", 0.0)), -int(e["email_id"])))
    return {"emails": [pick(e, *_SUMMARY) for e in inbox]}


TOOLS: tuple[EpisodeTool[Any], ...] = (
    app_tool(APP, "send_email", "Send an email from the user's account.", SendEmailArgs, send_email),
    app_tool(APP, "reply_to_email", "Reply to an email's sender.", ReplyArgs, reply_to_email),
    app_tool(APP, "create_draft", "Save an email as a draft without sending it.", DraftArgs, create_draft),
    app_tool(APP, "search_emails", "Search every folder's emails.", QueryArgs, search_emails),
    app_tool(APP, "show_email", "Show one email in full.", EmailArgs, show_email),
    app_tool(APP, "show_inbox", "List the inbox, newest first.", NoArgs, show_inbox),
)
