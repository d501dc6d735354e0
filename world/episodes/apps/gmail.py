"""The ``gmail`` app: mail between the world's people, kept per user as email threads.

Records (``apps["gmail"]``; addresses are the users' ``email``; times AppWorld's
``YYYY-MM-DDTHH:MM:SS``):

- ``users``: the accounts (``seed`` makes them from the people).
- ``emails``: ``{email_id, sender: address, recipients: [addresses], subject, body,
  attachments: [{id, file_name}], response_to_email_id, created_at}``: one record per mail, shared
  by everyone it went to (attachments are file names only, with an id).
- ``email_threads``: ``{email_thread_id, user_id, email_ids, draft_ids, incoming, outgoing, read,
  label, starred, archived, spam, created_at, updated_at, subject, participants: [{name, email}]}``:
  one user's view of a conversation. Every participant has their own thread; the threads of one
  conversation share emails. ``incoming`` (the user received a mail of it), ``outgoing`` (sent
  one), ``draft_ids``, ``subject`` (the first mail's) and ``participants`` follow from the emails
  and drafts: they are written on every change and recomputed when shown, so a seed may leave
  them out.
- ``drafts``: ``{draft_id, user_id, recipients: [addresses], subject, body, attachments,
  belongs_to_email_thread_id, response_to_email_id, scheduled_send_at, created_at, updated_at}``.

Tools (``mcp_appworld_gmail__<api>``, AppWorld's parameters): ``login``, ``logout``, ``signup``,
``search_users``, ``send_email`` (the sender's thread is outgoing and read, each recipient gets an
incoming unread thread; an unknown recipient is refused), ``reply_to_email`` (joins the
conversation's threads; to the mail's sender unless ``email_addresses`` is given),
``forward_email_thread`` (a new conversation, or a draft with ``draft_not_send``),
``create_draft``, ``update_draft``, ``show_drafts``, ``show_draft``, ``send_email_from_draft``,
``show_inbox_threads``, ``show_outbox_threads``, ``show_thread``, ``show_email``,
``show_category_sizes``, ``label_thread``, ``unlabel_thread``, ``mark_thread_read``,
``mark_thread_unread``, ``mark_thread_archived``, ``mark_thread_starred``.

Attachments need AppWorld's file_system app, which is not served here: a call with
``attachment_file_paths`` is refused. Other apps send mail with ``deliver_email`` (amazon's order
confirmation). Scheduled drafts are kept, never sent by themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    MAX_DATE,
    MIN_DATE,
    USERS,
    AppApis,
    AppArgs,
    AuthArgs,
    AuthPageArgs,
    Conflict,
    EmailAddress,
    EpisodeTool,
    Row,
    ToolContext,
    ToolFailed,
    app_tool,
    date_bounds,
    id_field,
    in_dates,
    login_tool,
    logout_tool,
    parse_send_time,
    person,
    retrieve,
    search_users_tool,
    update_fields,
)
from world.episodes.apps.state import allocate_id

APP = "gmail"
apis = AppApis(APP)
NO_SUBJECT = "(no subject)"
_THREAD_SORTS = ("created_at", "updated_at")


# ---------------------------------------------------------------- arguments
# Threads and drafts are listed alike: filtered by creation day, sorted by ``_THREAD_SORTS``.


def _created_from() -> str:
    result: str = Field(default=MIN_DATE, description="Created on or after this day (YYYY-MM-DD).")
    return result


def _created_to() -> str:
    result: str = Field(default=MAX_DATE, description="Created on or before this day (YYYY-MM-DD).")
    return result


def _sort_by() -> str | None:
    result: str | None = Field(
        default=None,
        description="+/- created_at or updated_at (default -updated_at when there is no query).",
    )
    return result


class SignupArgs(AppArgs):
    first_name: str = Field(min_length=1, description="Your first name.")
    last_name: str = Field(min_length=1, description="Your last name.")
    email: EmailAddress = Field(description="Your email address.")
    password: str = Field(min_length=5, description="Your password.")


class ThreadArgs(AuthArgs):
    email_thread_id: int = id_field("The email thread's id.")


class LabelArgs(ThreadArgs):
    label: str = Field(description="The label to put on the thread.")


class EmailArgs(AuthArgs):
    email_id: int = id_field("The email's id.")


class DraftArgs(AuthArgs):
    draft_id: int = id_field("The draft's id.")


class ThreadListArgs(AuthPageArgs):
    query: str = Field(default="", description="Words to look for; matching threads come first.")
    label: str | None = Field(default=None, description="Only threads with this label.")
    starred: bool | None = Field(default=None, description="Only starred (true) or unstarred (false).")
    archived: bool = Field(default=False, description="Archived threads (true) or the others.")
    spam: bool = Field(default=False, description="Spam threads (true) or the others.")
    read: bool | None = Field(default=None, description="Only read (true) or unread (false).")
    attachment: bool | None = Field(default=None, description="Only threads with (or without) attachments.")
    from_email: EmailAddress | None = Field(
        default=None, description="Only threads with mail from this address."
    )
    to_email: EmailAddress | None = Field(default=None, description="Only threads with mail to this address.")
    min_created_at: str = _created_from()
    max_created_at: str = _created_to()
    sort_by: str | None = _sort_by()


class SendEmailArgs(AuthArgs):
    email_addresses: list[str] = Field(description="The recipients' addresses.")
    subject: str = Field(description="The subject.")
    body: str = Field(description="The text of the email.")
    attachment_file_paths: list[str] | None = Field(
        default=None, description="Files to attach (needs the file_system app, not available here)."
    )
    file_system_access_token: str | None = Field(default=None, description="The file_system app's token.")


class ReplyArgs(AuthArgs):
    email_thread_id: int = id_field("The thread of the email replied to.")
    email_id: int = id_field("The email replied to.")
    body: str = Field(description="The text of the reply.")
    email_addresses: list[str] | None = Field(
        default=None, description="Reply to these addresses instead of the email's sender."
    )
    attachment_file_paths: list[str] | None = Field(
        default=None, description="Files to attach (needs the file_system app, not available here)."
    )
    file_system_access_token: str | None = Field(default=None, description="The file_system app's token.")


class ForwardThreadArgs(AuthArgs):
    email_thread_id: int = id_field("The thread to forward.")
    email_addresses: list[str] = Field(description="The recipients' addresses.")
    draft_not_send: bool = Field(default=False, description="Save the forward as a draft instead of sending.")


class CreateDraftArgs(AuthArgs):
    recipient_email_addresses: list[str] = Field(description="The recipients' addresses.")
    body: str = Field(description="The text of the draft.")
    subject: str | None = Field(
        default=None, description="The subject; leave it out for a reply (it becomes 'Re: ...')."
    )
    belongs_to_email_thread_id: int | None = Field(
        default=None, description="The thread a reply draft belongs to (with response_to_email_id)."
    )
    response_to_email_id: int | None = Field(default=None, description="The email of that thread it answers.")
    attachment_file_paths: list[str] | None = Field(
        default=None, description="Files to attach (needs the file_system app, not available here)."
    )
    scheduled_send_at: str | None = Field(default=None, description="When to send it, YYYY-MM-DD|HH:MM:SS.")
    file_system_access_token: str | None = Field(default=None, description="The file_system app's token.")


class UpdateDraftArgs(DraftArgs):
    email_addresses: list[str] | None = Field(default=None, description="New recipients.")
    subject: str | None = Field(default=None, description="New subject.")
    body: str | None = Field(default=None, description="New text.")
    belongs_to_email_thread_id: int | None = Field(default=None, description="New thread it belongs to.")
    response_to_email_id: int | None = Field(default=None, description="New email it answers.")
    scheduled_send_at: str | None = Field(
        default=None, description="New send time, YYYY-MM-DD|HH:MM:SS; the text 'None' unschedules."
    )


class SendDraftArgs(DraftArgs):
    file_system_access_token: str | None = Field(default=None, description="The file_system app's token.")


class ShowDraftsArgs(AuthPageArgs):
    query: str = Field(default="", description="Words to look for; matching drafts come first.")
    recipient_email: EmailAddress | None = Field(default=None, description="Only drafts to this address.")
    attachment: bool | None = Field(default=None, description="Only drafts with (or without) attachments.")
    scheduled: bool | None = Field(default=None, description="Only scheduled (or unscheduled) drafts.")
    belongs_to_email_thread_id: int | None = Field(default=None, description="Only drafts of this thread.")
    response_to_email_id: int | None = Field(default=None, description="Only drafts answering this email.")
    min_created_at: str = _created_from()
    max_created_at: str = _created_to()
    sort_by: str | None = _sort_by()


# ---------------------------------------------------------------- people and records


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, str) and isinstance(b, str) and a.strip().lower() == b.strip().lower()


def _who(ctx: ToolContext, address: str) -> JsonObject:
    """``{name, email}`` of an address: its gmail account, else the same person in another app."""
    row = ctx.account(APP, address)
    if row is None:
        for data in ctx.state.apps.values():
            found = next((u for u in data.get(USERS, []) if _same(u.get("email"), address)), None)
            if found is not None:
                return {"name": person(found)["name"], "email": address}
        return {"name": None, "email": address}
    return person(row)


def _emails_by_id(ctx: ToolContext) -> dict[Any, dict[str, Any]]:
    return {e.get("email_id"): e for e in ctx.rows(APP, "emails")}


def _thread_emails(ctx: ToolContext, thread: dict[str, Any]) -> list[dict[str, Any]]:
    by_id = _emails_by_id(ctx)
    return [by_id[i] for i in thread.get("email_ids", []) if i in by_id]


def _attachments(record: dict[str, Any]) -> list[JsonObject]:
    out: list[JsonObject] = []
    for item in record.get("attachments") or []:
        if isinstance(item, dict):
            out.append({"id": item.get("id"), "file_name": item.get("file_name")})
        else:
            out.append({"id": None, "file_name": str(item)})
    return out


def _recipients(record: dict[str, Any]) -> list[str]:
    return [str(r) for r in record.get("recipients") or []]


def _is_party(user: dict[str, Any], email: dict[str, Any]) -> bool:
    address = user.get("email")
    return _same(email.get("sender"), address) or any(_same(r, address) for r in _recipients(email))


def _derived(ctx: ToolContext, thread: dict[str, Any]) -> dict[str, Any]:
    """What a thread's emails and drafts say about it (AppWorld computes these, too)."""
    owner = (ctx.user_by_id(APP, thread.get("user_id")) or {}).get("email")
    emails = _thread_emails(ctx, thread)
    participants: list[JsonObject] = []
    seen: set[str] = set()
    for address in [r for e in emails for r in _recipients(e)] + [str(e.get("sender", "")) for e in emails]:
        if address and address.lower() not in seen:
            seen.add(address.lower())
            participants.append(_who(ctx, address))
    drafts = [
        d["draft_id"]
        for d in ctx.rows(APP, "drafts")
        if d.get("belongs_to_email_thread_id") == thread.get("email_thread_id")
    ]
    return {
        "incoming": any(any(_same(r, owner) for r in _recipients(e)) for e in emails),
        "outgoing": any(_same(e.get("sender"), owner) for e in emails),
        "draft_ids": drafts,
        "subject": emails[0].get("subject") if emails else thread.get("subject"),
        "participants": participants,
    }


def _sync(ctx: ToolContext, thread: dict[str, Any]) -> None:
    thread.update(_derived(ctx, thread))


def _sync_thread_id(ctx: ToolContext, thread_id: Any) -> None:
    for thread in ctx.rows(APP, "email_threads"):
        if thread.get("email_thread_id") == thread_id:
            _sync(ctx, thread)


def _has_attachments(ctx: ToolContext, thread: dict[str, Any]) -> bool:
    return any(e.get("attachments") for e in _thread_emails(ctx, thread))


def _thread_summary(ctx: ToolContext, thread: dict[str, Any]) -> JsonObject:
    derived = _derived(ctx, thread)
    return {
        "email_thread_id": thread["email_thread_id"],
        "email_ids": list(thread.get("email_ids", [])),
        "draft_ids": derived["draft_ids"],
        "incoming": derived["incoming"],
        "outgoing": derived["outgoing"],
        "read": bool(thread.get("read", False)),
        "label": thread.get("label"),
        "starred": bool(thread.get("starred", False)),
        "archived": bool(thread.get("archived", False)),
        "spam": bool(thread.get("spam", False)),
        "created_at": thread.get("created_at"),
        "updated_at": thread.get("updated_at"),
        "subject": derived["subject"],
        "participants": derived["participants"],
    }


def _email_view(ctx: ToolContext, email: dict[str, Any]) -> JsonObject:
    return {
        "email_id": email["email_id"],
        "subject": email.get("subject"),
        "body": email.get("body"),
        "response_to_email_id": email.get("response_to_email_id"),
        "created_at": email.get("created_at"),
        "sender": _who(ctx, str(email.get("sender", ""))),
        "recipients": [_who(ctx, r) for r in _recipients(email)],
        "attachments": _attachments(email),
    }


def _draft_view(ctx: ToolContext, draft: dict[str, Any]) -> JsonObject:
    return {
        "draft_id": draft["draft_id"],
        "subject": draft.get("subject"),
        "body": draft.get("body"),
        "belongs_to_email_thread_id": draft.get("belongs_to_email_thread_id"),
        "response_to_email_id": draft.get("response_to_email_id"),
        "scheduled_send_at": draft.get("scheduled_send_at"),
        "created_at": draft.get("created_at"),
        "updated_at": draft.get("updated_at"),
        "recipients": [_who(ctx, r) for r in _recipients(draft)],
        "attachments": _attachments(draft),
    }


def _account(ctx: ToolContext, address: str) -> dict[str, Any]:
    return ctx.account_or_fail(APP, address)


def _no_attachments(paths: list[str] | None) -> None:
    if paths:
        raise ToolFailed(
            "Attachments cannot be sent here: attachment_file_paths need AppWorld's file_system app,"
            " which this environment does not provide. Send without attachment_file_paths."
        )


# ---------------------------------------------------------------- sending


def _new_email(
    ctx: ToolContext,
    sender: dict[str, Any],
    recipients: Sequence[dict[str, Any]],
    subject: str,
    body: str,
    *,
    response_to: int | None = None,
    attachments: Sequence[JsonObject] = (),
) -> dict[str, Any]:
    """A new email from ``sender`` to ``recipients`` (each person once)."""
    email = {
        "sender": sender["email"],
        "recipients": [r["email"] for r in _unique_users(recipients)],
        "subject": subject,
        "body": body,
        "attachments": [dict(a) for a in attachments],
        "response_to_email_id": response_to,
        "created_at": ctx.timestamp(),
    }
    return ctx.insert(APP, "emails", email)


def _new_thread(ctx: ToolContext, user_id: Any, email_ids: list[int], *, read: bool) -> dict[str, Any]:
    now = ctx.timestamp()
    thread: dict[str, Any] = {
        "user_id": user_id,
        "email_ids": list(email_ids),
        "read": read,
        "label": None,
        "starred": False,
        "archived": False,
        "spam": False,
        "created_at": now,
        "updated_at": now,
    }
    thread = ctx.insert(APP, "email_threads", thread)
    _sync(ctx, thread)
    return thread


def _unique_users(users: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for user in users:
        if all(u.get("user_id") != user.get("user_id") for u in out):
            out.append(user)
    return out


def _start_conversation(ctx: ToolContext, sender: dict[str, Any], email: dict[str, Any]) -> int:
    """The threads of an email that starts a conversation: the sender's (read) and an unread one
    for each other recipient. The sender's thread id."""
    own = _new_thread(ctx, sender["user_id"], [email["email_id"]], read=True)
    for address in email["recipients"]:
        recipient = ctx.account(APP, address)
        if recipient is not None and recipient.get("user_id") != sender.get("user_id"):
            _new_thread(ctx, recipient["user_id"], [email["email_id"]], read=False)
    return int(own["email_thread_id"])


def deliver_email(
    ctx: ToolContext,
    *,
    sender: str,
    recipients: list[str],
    subject: str,
    body: str,
    attachment_names: list[str] | None = None,
) -> int | None:
    """Mail from ``sender`` to ``recipients`` as another app sends it (threads on both sides;
    attachments as file names). The new email's id, or None (and nothing changed) when the
    sender or a recipient has no gmail account, or there is no recipient."""
    sender_user = ctx.account(APP, sender)
    users = [ctx.account(APP, r) for r in recipients]
    if sender_user is None or not users:
        return None
    found = [u for u in users if u is not None]
    if len(found) != len(users):
        return None
    attachments: list[JsonObject] = [
        {"id": allocate_id(ctx.app(APP), "attachments"), "file_name": name} for name in attachment_names or []
    ]
    email = _new_email(ctx, sender_user, found, subject.strip() or NO_SUBJECT, body, attachments=attachments)
    _start_conversation(ctx, sender_user, email)
    return int(email["email_id"])


def _reply(
    ctx: ToolContext,
    user: dict[str, Any],
    thread: dict[str, Any],
    email: dict[str, Any],
    *,
    addresses: list[str] | None,
    subject: str,
    body: str,
    attachments: Sequence[JsonObject] = (),
) -> int:
    """A mail in an existing conversation: added to the caller's thread and to each recipient's
    thread of the conversation (a new unread one when they have none). The new email's id."""
    if addresses is not None and not addresses:
        raise ToolFailed("If email_addresses is passed, it must be a non-empty list.")
    if addresses:
        recipients = _unique_users(_account(ctx, a) for a in dict.fromkeys(addresses))
    else:
        recipients = [_account(ctx, str(email.get("sender", "")))]
    conversation = set(thread.get("email_ids", []))
    reply = _new_email(
        ctx, user, recipients, subject, body, response_to=int(email["email_id"]), attachments=attachments
    )
    now = ctx.timestamp()
    thread.setdefault("email_ids", []).append(reply["email_id"])
    thread["updated_at"] = now
    _sync(ctx, thread)
    for recipient in recipients:
        if recipient.get("user_id") == user.get("user_id"):
            continue
        theirs = next(
            (
                t
                for t in ctx.rows(APP, "email_threads")
                if t.get("user_id") == recipient.get("user_id") and conversation & set(t.get("email_ids", []))
            ),
            None,
        )
        if theirs is None:
            _new_thread(ctx, recipient["user_id"], list(thread["email_ids"]), read=False)
        else:
            theirs.setdefault("email_ids", []).append(reply["email_id"])
            theirs["updated_at"] = now
            _sync(ctx, theirs)
    return int(reply["email_id"])


def _check_draft_links(
    ctx: ToolContext,
    user: dict[str, Any],
    *,
    recipients: list[str],
    thread_id: int | None,
    email_id: int | None,
    scheduled: str | None,
) -> None:
    """The rules a draft's thread, answered email and send time must keep."""
    if scheduled is not None and not recipients:
        raise ToolFailed("A scheduled draft needs at least one recipient.")
    if (thread_id is None) != (email_id is None):
        raise ToolFailed(
            "Either both belongs_to_email_thread_id and response_to_email_id must be given"
            " or neither must be given."
        )
    if scheduled is not None and scheduled < ctx.timestamp():
        raise ToolFailed("The scheduled_send_at time must be in the future.")
    if thread_id is None:
        return
    thread = ctx.get(APP, "email_threads", thread_id)
    if thread is None:
        raise ToolFailed(f"No email thread found with ID {thread_id}.")
    if thread.get("user_id") != user.get("user_id"):
        raise ToolFailed(f"The email thread with ID {thread_id} is not yours, so a draft cannot go in it.")
    if email_id not in thread.get("email_ids", []):
        raise ToolFailed(f"The email with ID {email_id} is not in the email thread with ID {thread_id}.")
    email = _emails_by_id(ctx).get(email_id)
    if email is None:
        raise ToolFailed(f"No email found with ID {email_id}.")
    if not _is_party(user, email):
        raise ToolFailed(
            f"You neither sent nor received the email with ID {email_id}, so a draft cannot answer it."
        )


_REPLY_SUBJECT = (
    "If response_to_email_id is given, subject must be None: a reply draft takes the subject of the email it"
    " answers, prefixed with 'Re: ' or 'Fwd: '."
)


# ---------------------------------------------------------------- accounts


apis.add(
    login_tool(APP),
    logout_tool(APP),
)


@apis.api("Create a gmail account.")
def signup(ctx: ToolContext, args: SignupArgs) -> JsonObject:
    if ctx.account(APP, args.email) is not None:
        raise Conflict("User with this email already exists.")
    # The same person keeps their user id in every app; a new person gets a fresh one.
    people = [u for data in ctx.state.apps.values() for u in data.get(USERS, [])]
    mine = {u.get("user_id") for u in ctx.rows(APP, USERS)}
    same: dict[str, Any] = next((u for u in people if _same(u.get("email"), args.email)), {})
    known = same.get("user_id")
    if isinstance(known, int) and known not in mine:
        user_id = known
    else:
        user_id = max((i for u in people if isinstance(i := u.get("user_id"), int)), default=0) + 1
    ctx.rows(APP, USERS).append(
        {
            "user_id": user_id,
            "first_name": args.first_name,
            "last_name": args.last_name,
            "email": args.email,
            "phone_number": same.get("phone_number"),
            "password": args.password,
            "verified": True,
            "registered_at": ctx.timestamp(),
        }
    )
    return {"message": "Account created."}


# ---------------------------------------------------------------- threads


def _threads(ctx: ToolContext, args: ThreadListArgs, direction: str) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    bounds = date_bounds(args.min_created_at, args.max_created_at, "min_created_at", "max_created_at")
    items: list[tuple[str, Row]] = []
    for thread in ctx.mine(APP, "email_threads", user):
        view = _thread_summary(ctx, thread)
        emails = _thread_emails(ctx, thread)
        checks = (
            view[direction] is True,
            args.label is None or _same(view["label"], args.label),
            args.starred is None or view["starred"] == args.starred,
            view["archived"] == args.archived,
            view["spam"] == args.spam,
            args.read is None or view["read"] == args.read,
            args.attachment is None or _has_attachments(ctx, thread) == args.attachment,
            args.from_email is None or any(_same(e.get("sender"), args.from_email) for e in emails),
            args.to_email is None or any(_same(r, args.to_email) for e in emails for r in _recipients(e)),
            in_dates(view["created_at"], bounds),
        )
        if all(checks):
            items.append((_thread_text(ctx, emails), view))
    return retrieve(items, args, _THREAD_SORTS, default_sort="-updated_at")


def _thread_text(ctx: ToolContext, emails: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for email in emails:
        for who in [_who(ctx, str(email.get("sender", ""))), *(_who(ctx, r) for r in _recipients(email))]:
            parts += [str(who.get("name") or ""), str(who.get("email") or "")]
        parts += [str(email.get("subject", "")), str(email.get("body", ""))]
    return " ".join(parts)


apis.add(
    search_users_tool(APP, "Find gmail users by name or address."),
)


@apis.api("List or search the threads you received mail in (without the emails' text).")
def show_inbox_threads(ctx: ToolContext, args: ThreadListArgs) -> list[JsonObject]:
    return _threads(ctx, args, "incoming")


@apis.api("List or search the threads you sent mail in (without the emails' text).")
def show_outbox_threads(ctx: ToolContext, args: ThreadListArgs) -> list[JsonObject]:
    return _threads(ctx, args, "outgoing")


@apis.api("Show a thread with its emails and drafts.")
def show_thread(ctx: ToolContext, args: ThreadArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    thread = ctx.owned(APP, "email_threads", args.email_thread_id, "email thread", user)
    summary = _thread_summary(ctx, thread)
    emails = []
    for email in _thread_emails(ctx, thread):
        view = _email_view(ctx, email)
        emails.append(
            {
                k: view[k]
                for k in ("email_id", "subject", "sender", "recipients", "body", "attachments", "created_at")
            }
        )
    drafts = []
    for draft in ctx.rows(APP, "drafts"):
        if draft.get("belongs_to_email_thread_id") == thread["email_thread_id"]:
            view = _draft_view(ctx, draft)
            view.pop("belongs_to_email_thread_id")
            drafts.append(view)
    head = ("email_thread_id", "incoming", "outgoing", "read", "label", "starred", "archived", "spam")
    return {
        **{k: summary[k] for k in head},
        "created_at": summary["created_at"],
        "updated_at": summary["updated_at"],
        "emails": emails,
        "drafts": drafts,
    }


@apis.api("Count your inbox, outbox, archived and spam threads and your drafts.")
def show_category_sizes(ctx: ToolContext, args: AuthArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    mine = [_thread_summary(ctx, t) for t in ctx.mine(APP, "email_threads", user)]
    drafts = ctx.mine(APP, "drafts", user)
    current = [t for t in mine if not t["archived"] and not t["spam"]]
    return {
        "inbox": sum(1 for t in current if t["incoming"]),
        "outbox": sum(1 for t in current if t["outgoing"]),
        "archived": sum(1 for t in mine if t["archived"]),
        "spam": sum(1 for t in mine if t["spam"]),
        "unscheduled_drafts": sum(1 for d in drafts if d.get("scheduled_send_at") is None),
        "scheduled_drafts": sum(1 for d in drafts if d.get("scheduled_send_at") is not None),
    }


def _flag_tool(api: str, flag: str, value: bool, state: str, description: str) -> EpisodeTool[ThreadArgs]:
    """``mark_thread_<state>``: set one flag of the caller's thread; refused when already set."""

    def run(ctx: ToolContext, args: ThreadArgs) -> JsonObject:
        user = ctx.user(APP, args.access_token)
        thread = ctx.owned(APP, "email_threads", args.email_thread_id, "email thread", user)
        if bool(thread.get(flag, False)) == value:
            raise ToolFailed(f"This email thread is already marked as {state}.")
        thread[flag] = value
        return {"message": f"Email thread marked as {state}."}

    return app_tool(APP, api, description, ThreadArgs, run)


# ---------------------------------------------------------------- emails


@apis.api("Show one email in full.")
def show_email(ctx: ToolContext, args: EmailArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    email = ctx.find(APP, "emails", args.email_id, "email")
    if not _is_party(user, email):
        raise ToolFailed(
            "You are neither sender or recipient of this email, so you are not authorized to view it."
        )
    return _email_view(ctx, email)


@apis.api("Send a new email to one or more gmail users.")
def send_email(ctx: ToolContext, args: SendEmailArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    if not args.email_addresses:
        raise ToolFailed("At least one recipient email address is required.")
    recipients = [_account(ctx, a) for a in args.email_addresses]
    _no_attachments(args.attachment_file_paths)
    email = _new_email(ctx, user, recipients, args.subject.strip() or NO_SUBJECT, args.body)
    thread_id = _start_conversation(ctx, user, email)
    return {"message": "Sent email.", "sent_email_thread_id": thread_id, "sent_email_id": email["email_id"]}


@apis.api("Reply to an email of a thread.")
def reply_to_email(ctx: ToolContext, args: ReplyArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    thread = ctx.owned(APP, "email_threads", args.email_thread_id, "email thread", user)
    email = ctx.find(APP, "emails", args.email_id, "email")
    if not _is_party(user, email):
        raise ToolFailed(
            "You are neither sender or recipient of this email, so you are not authorized to reply to it."
        )
    if email["email_id"] not in thread.get("email_ids", []):
        raise ToolFailed("The specified email does not belong to the specified thread.")
    if args.email_addresses is not None and not args.email_addresses:
        raise ToolFailed("If email_addresses is passed, it must be a non-empty list.")
    for address in args.email_addresses or []:
        _account(ctx, address)
    _no_attachments(args.attachment_file_paths)
    subject = f"Re: {str(email.get('subject', '')).strip() or NO_SUBJECT}"
    email_id = _reply(
        ctx, user, thread, email, addresses=args.email_addresses, subject=subject, body=args.body
    )
    return {"message": "Reply email sent.", "sent_email_id": email_id}


def _forward_text(ctx: ToolContext, emails: list[dict[str, Any]]) -> str:
    parts = []
    for email in emails:
        names = ", ".join(str(a.get("file_name")) for a in _attachments(email))
        parts.append(
            f"From: {email.get('sender', '')}\n"
            f"To: {', '.join(_recipients(email))}\n"
            f"Subject: {email.get('subject', '')}\n"
            f"Date: {email.get('created_at', '')}\n"
            f"Attachments: {names}\n\n"
            f"{email.get('body', '')}\n"
        )
    return "\n---------- Forwarded message ----------\n".join(parts)


@apis.api("Forward a whole thread to one or more gmail users (or save the forward as a draft).")
def forward_email_thread(ctx: ToolContext, args: ForwardThreadArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    if not args.email_addresses:
        raise ToolFailed("At least one recipient email address is required.")
    thread = ctx.owned(APP, "email_threads", args.email_thread_id, "email thread", user)
    recipients = [_account(ctx, a) for a in args.email_addresses]
    emails = _thread_emails(ctx, thread)
    if not emails:
        raise ToolFailed("The email thread has no emails to forward.")
    first = emails[0]
    subject = f"Fwd: {str(first.get('subject', '')).strip() or NO_SUBJECT}"
    body = _forward_text(ctx, emails)
    if args.draft_not_send:
        draft_id = _new_draft(
            ctx,
            user,
            [r["email"] for r in _unique_users(recipients)],
            subject,
            body,
            thread_id=args.email_thread_id,
            email_id=int(first["email_id"]),
            scheduled=None,
        )
        return {
            "message": "Created a draft to forward the entire email thread.",
            "sent_email_thread_id": None,
            "sent_email_id": None,
            "draft_id": draft_id,
        }
    email = _new_email(ctx, user, recipients, subject, body, response_to=int(first["email_id"]))
    return {
        "message": "Forwarded the entire email thread to recipient/s.",
        "sent_email_thread_id": _start_conversation(ctx, user, email),
        "sent_email_id": email["email_id"],
        "draft_id": None,
    }


# ---------------------------------------------------------------- drafts


def _new_draft(
    ctx: ToolContext,
    user: dict[str, Any],
    recipients: list[str],
    subject: str,
    body: str,
    *,
    thread_id: int | None,
    email_id: int | None,
    scheduled: str | None,
) -> int:
    now = ctx.timestamp()
    draft = ctx.insert(
        APP,
        "drafts",
        {
            "user_id": user["user_id"],
            "recipients": recipients,
            "subject": subject,
            "body": body,
            "attachments": [],
            "belongs_to_email_thread_id": thread_id,
            "response_to_email_id": email_id,
            "scheduled_send_at": scheduled,
            "created_at": now,
            "updated_at": now,
        },
    )
    _sync_thread_id(ctx, thread_id)
    return int(draft["draft_id"])


@apis.api("Save a new draft.")
def create_draft(ctx: ToolContext, args: CreateDraftArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    recipients = [str(ctx.user_by_email(APP, a)["email"]) for a in args.recipient_email_addresses]
    scheduled = (
        parse_send_time(args.scheduled_send_at, "scheduled_send_at") if args.scheduled_send_at else None
    )
    _no_attachments(args.attachment_file_paths)
    thread_id, email_id = args.belongs_to_email_thread_id, args.response_to_email_id
    _check_draft_links(
        ctx, user, recipients=recipients, thread_id=thread_id, email_id=email_id, scheduled=scheduled
    )
    if email_id is not None and args.subject is not None:
        raise ToolFailed(_REPLY_SUBJECT)
    subject = args.subject if args.subject is not None else NO_SUBJECT
    if email_id is not None:
        subject = f"Re: {ctx.find(APP, 'emails', email_id, 'email').get('subject', '')}"
    draft_id = _new_draft(
        ctx, user, recipients, subject, args.body, thread_id=thread_id, email_id=email_id, scheduled=scheduled
    )
    return {"message": "Draft created.", "draft_id": draft_id}


@apis.api("Change a draft.")
def update_draft(ctx: ToolContext, args: UpdateDraftArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    draft = ctx.owned(APP, "drafts", args.draft_id, "draft", user)
    old_thread = draft.get("belongs_to_email_thread_id")
    if args.email_addresses is not None:
        draft["recipients"] = [str(_account(ctx, a)["email"]) for a in args.email_addresses]
    update_fields(draft, args, "subject", "body", "belongs_to_email_thread_id", "response_to_email_id")
    if args.scheduled_send_at is not None:
        none = args.scheduled_send_at.strip().lower() == "none"
        draft["scheduled_send_at"] = (
            None if none else parse_send_time(args.scheduled_send_at, "scheduled_send_at")
        )
    _check_draft_links(
        ctx,
        user,
        recipients=_recipients(draft),
        thread_id=draft.get("belongs_to_email_thread_id"),
        email_id=draft.get("response_to_email_id"),
        scheduled=draft.get("scheduled_send_at"),
    )
    if args.response_to_email_id is not None and args.subject is not None:
        raise ToolFailed(_REPLY_SUBJECT)
    draft["updated_at"] = ctx.timestamp()
    _sync_thread_id(ctx, old_thread)
    _sync_thread_id(ctx, draft.get("belongs_to_email_thread_id"))
    return {"message": "Draft updated."}


@apis.api("List or search your drafts.")
def show_drafts(ctx: ToolContext, args: ShowDraftsArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    bounds = date_bounds(args.min_created_at, args.max_created_at, "min_created_at", "max_created_at")
    items: list[tuple[str, Row]] = []
    for draft in ctx.mine(APP, "drafts", user):
        checks = (
            args.belongs_to_email_thread_id is None
            or draft.get("belongs_to_email_thread_id") == args.belongs_to_email_thread_id,
            args.response_to_email_id is None
            or draft.get("response_to_email_id") == args.response_to_email_id,
            args.recipient_email is None or any(_same(r, args.recipient_email) for r in _recipients(draft)),
            args.attachment is None or bool(draft.get("attachments")) == args.attachment,
            args.scheduled is None or (draft.get("scheduled_send_at") is not None) == args.scheduled,
            in_dates(draft.get("created_at"), bounds),
        )
        if all(checks):
            items.append((f"{draft.get('subject', '')} {draft.get('body', '')}", _draft_view(ctx, draft)))
    return retrieve(items, args, _THREAD_SORTS, default_sort="-updated_at")


@apis.api("Show one draft.")
def show_draft(ctx: ToolContext, args: DraftArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    return _draft_view(ctx, ctx.owned(APP, "drafts", args.draft_id, "draft", user))


@apis.api("Send a draft now.")
def send_email_from_draft(ctx: ToolContext, args: SendDraftArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    draft = ctx.owned(APP, "drafts", args.draft_id, "draft", user)
    recipients = [_account(ctx, a) for a in _recipients(draft)]
    if not recipients:
        raise ToolFailed("Draft has no recipient. At least one is required.")
    thread_id, email_id = draft.get("belongs_to_email_thread_id"), draft.get("response_to_email_id")
    _check_draft_links(
        ctx, user, recipients=_recipients(draft), thread_id=thread_id, email_id=email_id, scheduled=None
    )
    attachments = _attachments(draft)
    body = str(draft.get("body", ""))
    if thread_id is not None and email_id is not None:
        thread = ctx.find(APP, "email_threads", thread_id, "email thread")
        answered = ctx.find(APP, "emails", email_id, "email")
        kind = "Fwd" if str(draft.get("subject", "")).lower().startswith("fwd:") else "Re"
        subject = f"{kind}: {str(answered.get('subject', '')).strip() or NO_SUBJECT}"
        addresses = [str(r["email"]) for r in recipients]
        sent_id = _reply(
            ctx,
            user,
            thread,
            answered,
            addresses=addresses,
            subject=subject,
            body=body,
            attachments=attachments,
        )
        sent_thread_id = int(thread_id)
    else:
        subject = str(draft.get("subject", "")).strip() or NO_SUBJECT
        email = _new_email(ctx, user, recipients, subject, body, attachments=attachments)
        sent_id, sent_thread_id = int(email["email_id"]), _start_conversation(ctx, user, email)
    ctx.rows(APP, "drafts").remove(draft)
    _sync_thread_id(ctx, thread_id)
    return {
        "message": "Sent email from your draft.",
        "sent_email_thread_id": sent_thread_id,
        "sent_email_id": sent_id,
    }


@apis.api("Put a label on a thread.")
def label_thread(ctx: ToolContext, args: LabelArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    thread = ctx.owned(APP, "email_threads", args.email_thread_id, "email thread", user)
    thread["label"] = args.label
    return {"message": "Email thread labeled."}


@apis.api("Remove a thread's label.")
def unlabel_thread(ctx: ToolContext, args: ThreadArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    thread = ctx.owned(APP, "email_threads", args.email_thread_id, "email thread", user)
    thread["label"] = None
    return {"message": "Email thread unlabelled."}


# ---------------------------------------------------------------- tools

apis.add(
    _flag_tool("mark_thread_read", "read", True, "read", "Mark a thread as read."),
    _flag_tool("mark_thread_unread", "read", False, "unread", "Mark a thread as unread."),
    _flag_tool("mark_thread_archived", "archived", True, "archived", "Archive a thread."),
    _flag_tool("mark_thread_starred", "starred", True, "starred", "Star a thread."),
)
TOOLS = apis.tools

__all__ = ["APP", "TOOLS", "deliver_email"]
