"""The ``splitwise`` app: groups of people sharing expenses, on AppWorld's Splitwise surface.

Records (``apps["splitwise"]``; people refer to ``users`` by ``user_id``):

- ``users``: the seed's people with a splitwise account (``base`` gives the fields).
- ``groups``: ``{group_id, name, description, user_id (creator), member_ids: [user_id],
  created_at, deleted, invitation_code}`` (the creator is a member; a group's name is unique
  per creator).
- ``expenses``: ``{expense_id, group_id (null: not in a group), user_id (who recorded it),
  payer_id, description, amount, shares: [{debtor_id, debt_amount}], deleted,
  receipt_file_name, created_at}``.
- ``payments``: ``{payment_id, group_id, user_id (who recorded it), payer_id, receiver_id,
  amount, description, deleted, receipt_file_name, created_at}``.

Balances are computed from the expenses and payments that are not deleted: in a group (or among
the expenses outside any group) each pair of people owes the net of what one paid for the other.

Tools (``mcp_appworld_splitwise__<api>``): ``login``, ``logout``, ``show_account``,
``show_profile``, ``search_users``, ``create_group``, ``show_group``, ``show_groups``,
``add_member_to_group``, ``remove_member_from_group``, ``record_expense``, ``show_expense``,
``delete_expense``, ``show_group_expenses``, ``show_no_group_expenses``, ``record_payment``,
``show_payment``, ``show_group_balance``, ``show_groups_balance``, ``show_people_balance``,
``show_person_balance``. Receipts need AppWorld's file_system app, which is not served here:
a call that attaches one is refused.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    MAX_DATE,
    MAX_INT,
    MIN_DATE,
    AppApis,
    AuthArgs,
    AuthPageArgs,
    EmailAddress,
    Row,
    ToolContext,
    ToolFailed,
    ToolNotFound,
    date_bounds,
    id_field,
    in_dates,
    login_tool,
    logout_tool,
    money,
    optional_id_field,
    page,
    page_index_field,
    page_limit_field,
    person,
    ranked,
    retrieve,
    search_text,
    show_account_tool,
    show_profile_tool,
    sort_rows,
)

APP = "splitwise"
apis = AppApis(APP)
NO_GROUP_NAME = "Non-Group Entries"

# ---------------------------------------------------------------- arguments
# An expense and a payment take a receipt alike (``_refuse_receipt``).


def _receipt_file_path() -> str | None:
    result: str | None = Field(default=None, description="A receipt file in the file_system app.")
    return result


def _file_system_access_token() -> str | None:
    result: str | None = Field(
        default=None, description="Access token of the file_system app (only for a receipt)."
    )
    return result


class SearchUsersArgs(AuthPageArgs):
    query: str = Field(default="", description="Words to look for in names and emails.")


class ShowGroupsArgs(AuthArgs):
    delete: bool = Field(default=False, description="Show deleted groups instead of live ones.")
    page_index: int = page_index_field()
    page_limit: int = page_limit_field(MAX_INT, "The most groups to return.")


class CreateGroupArgs(AuthArgs):
    name: str = Field(min_length=1, description="Name of the new group.")
    member_emails: list[str] = Field(description="Emails of the members besides yourself.")
    description: str | None = Field(default=None, description="What the group is for.")


class GroupArgs(AuthArgs):
    group_id: int = id_field("The group's id.")


class MemberArgs(GroupArgs):
    user_email: EmailAddress = Field(description="Email of the user to add or remove.")


class RecordExpenseArgs(AuthArgs):
    description: str = Field(description="A short note on what was paid for.")
    paid_amount: float = Field(allow_inf_nan=False, description="The total amount paid.")
    payer_email: EmailAddress = Field(description="Email of the user who paid.")
    debtor_emails: list[str] = Field(description="Emails of the users who owe a share.")
    debt_amounts: list[float] | None = Field(
        default=None,
        description="Each debtor's share, in the order of debtor_emails (default: equal shares).",
    )
    group_id: int | None = optional_id_field("The group the expense belongs to (none: no group).")
    receipt_file_path: str | None = _receipt_file_path()
    file_system_access_token: str | None = _file_system_access_token()


class ExpenseArgs(AuthArgs):
    expense_id: int = id_field("The expense's id.")


class ExpenseSearchArgs(AuthPageArgs):
    query: str = Field(default="", description="Words to look for in descriptions and participants.")
    participant_email: EmailAddress | None = Field(
        default=None, description="Only expenses this user paid or owes a share of."
    )
    min_amount: float = Field(default=0, ge=0, description="Smallest expense amount to show.")
    max_amount: float = Field(default=float(MAX_INT), ge=0, description="Largest expense amount to show.")
    min_created_at: str = Field(default=MIN_DATE, description="Earliest creation date (YYYY-MM-DD).")
    max_created_at: str = Field(default=MAX_DATE, description="Latest creation date (YYYY-MM-DD).")
    deleted: bool = Field(default=False, description="Show deleted expenses instead of live ones.")
    sort_by: str | None = Field(default=None, description="+field or -field: created_at or amount.")


class GroupExpenseSearchArgs(ExpenseSearchArgs):
    group_id: int = id_field("The group whose expenses to show.")


class RecordPaymentArgs(AuthArgs):
    payer_email: EmailAddress = Field(description="Email of the user who paid.")
    receiver_email: EmailAddress = Field(description="Email of the user who received the money.")
    amount: float = Field(allow_inf_nan=False, description="The amount paid.")
    group_id: int | None = optional_id_field("The group the payment belongs to (none: no group).")
    description: str | None = Field(default=None, description="A short note on the payment.")
    receipt_file_path: str | None = _receipt_file_path()
    file_system_access_token: str | None = _file_system_access_token()


class PaymentArgs(AuthArgs):
    payment_id: int = id_field("The payment's id.")


class GroupBalanceArgs(AuthArgs):
    group_id: int | None = optional_id_field("The group (none: expenses and payments outside groups).")
    email: EmailAddress | None = Field(
        default=None, description="Only this member's balance (without a group: only your own)."
    )


class PersonBalanceArgs(AuthArgs):
    email: EmailAddress = Field(description="Email of the person to show your balance with.")


# ---------------------------------------------------------------- people and records


def _members(group: dict[str, Any]) -> list[int]:
    return list(dict.fromkeys(group.get("member_ids") or []))


def _own_group(ctx: ToolContext, user: dict[str, Any], group_id: int) -> dict[str, Any]:
    group = ctx.find(APP, "groups", group_id, "group")
    if user["user_id"] not in _members(group):
        raise ToolFailed("You are not a member of this group and so are not authorized to access it.")
    return group


def _invitation_code(group_id: Any) -> str:
    return hashlib.sha256(f"splitwise-group:{group_id}".encode()).hexdigest()[:5]


def _group_view(ctx: ToolContext, group: dict[str, Any]) -> JsonObject:
    members = [ctx.user_by_id(APP, m) for m in _members(group)]
    return {
        "group_id": group["group_id"],
        "name": group.get("name"),
        "description": group.get("description"),
        "created_at": group.get("created_at"),
        "deleted": bool(group.get("deleted", False)),
        "creator": ctx.person_of(APP, group.get("user_id")),
        "members": [person(m) for m in members if m is not None],
        "invitation_code": group.get("invitation_code") or _invitation_code(group["group_id"]),
    }


def _shares(expense: dict[str, Any]) -> list[dict[str, Any]]:
    shares: list[dict[str, Any]] = expense.get("shares") or []
    return shares


def _expense_view(ctx: ToolContext, expense: dict[str, Any]) -> JsonObject:
    return {
        "expense_id": expense["expense_id"],
        "group_id": expense.get("group_id"),
        "description": expense.get("description"),
        "deleted": bool(expense.get("deleted", False)),
        "receipt_file_name": expense.get("receipt_file_name"),
        "created_at": expense.get("created_at"),
        "shares": [
            {
                "debtor": ctx.person_of(APP, s.get("debtor_id")),
                "debt_amount": money(s.get("debt_amount", 0.0)),
            }
            for s in _shares(expense)
        ],
        "creator": ctx.person_of(APP, expense.get("user_id")),
        "payer": ctx.person_of(APP, expense.get("payer_id")),
        "paid_amount": money(expense.get("amount", 0.0)),
    }


def _payment_view(ctx: ToolContext, payment: dict[str, Any]) -> JsonObject:
    return {
        "payment_id": payment["payment_id"],
        "group_id": payment.get("group_id"),
        "description": payment.get("description"),
        "deleted": bool(payment.get("deleted", False)),
        "receipt_file_name": payment.get("receipt_file_name"),
        "created_at": payment.get("created_at"),
        "creator": ctx.person_of(APP, payment.get("user_id")),
        "payer": ctx.person_of(APP, payment.get("payer_id")),
        "receiver": ctx.person_of(APP, payment.get("receiver_id")),
        "paid_amount": money(payment.get("amount", 0.0)),
    }


def _participants(expense: dict[str, Any]) -> set[Any]:
    return {expense.get("payer_id"), *(s.get("debtor_id") for s in _shares(expense))}


def _group_members_of(ctx: ToolContext, group_id: Any) -> list[int]:
    if group_id is None:
        return []
    for group in ctx.rows(APP, "groups"):
        if group.get("group_id") == group_id:
            return _members(group)
    return []


def _check_expense_access(ctx: ToolContext, user: dict[str, Any], expense: dict[str, Any]) -> None:
    allowed = {
        expense.get("user_id"),
        *_participants(expense),
        *_group_members_of(ctx, expense.get("group_id")),
    }
    if user["user_id"] not in allowed:
        raise ToolFailed(
            "You are not authorized to access this expense as you are neither the owner, payer, or"
            " debtor, nor part of the group this expense belongs to."
        )


def _check_payment_access(ctx: ToolContext, user: dict[str, Any], payment: dict[str, Any]) -> None:
    if payment.get("group_id") is None:
        allowed = {payment.get("user_id"), payment.get("payer_id"), payment.get("receiver_id")}
    else:
        allowed = set(_group_members_of(ctx, payment.get("group_id")))
    if user["user_id"] not in allowed:
        raise ToolFailed(
            "You are not authorized to access this payment as you are neither the payer or receiver,"
            " nor this payment belongs to a group you are a part of."
        )


def _refuse_receipt(receipt_file_path: str | None, file_system_access_token: str | None) -> None:
    if not receipt_file_path:
        return
    if file_system_access_token is None:
        raise ToolFailed(
            "You must provide a file_system access token to attach receipt file to this expense."
        )
    raise ToolFailed(
        "Receipt files cannot be attached here: the file_system app is not available in this environment."
        " Record it without receipt_file_path."
    )


# ---------------------------------------------------------------- balances


def _debts(ctx: ToolContext, user: dict[str, Any], group_id: int | None) -> dict[tuple[int, int], float]:
    """(a, b) -> what a owes b, net and positive, from the live records of a group (or of no
    group: there, the payments the user took part in)."""
    uid = user["user_id"]
    owed: dict[tuple[int, int], float] = {}

    def add(debtor: int, creditor: int, amount: float) -> None:
        owed[(creditor, debtor)] = owed.get((creditor, debtor), 0.0) - amount
        owed[(debtor, creditor)] = owed.get((debtor, creditor), 0.0) + amount

    for expense in ctx.rows(APP, "expenses"):
        if expense.get("group_id") != group_id or expense.get("deleted"):
            continue
        for share in _shares(expense):
            add(share["debtor_id"], expense["payer_id"], float(share.get("debt_amount", 0.0)))
    for payment in ctx.rows(APP, "payments"):
        if payment.get("group_id") != group_id or payment.get("deleted"):
            continue
        if group_id is None and uid not in (payment.get("payer_id"), payment.get("receiver_id")):
            continue
        add(payment["receiver_id"], payment["payer_id"], float(payment.get("amount", 0.0)))
    return {pair: money(amount) for pair, amount in owed.items() if money(amount) > 0}


def _you_owe(ctx: ToolContext, user: dict[str, Any], group_id: int | None) -> dict[int, float]:
    """Other user id -> what the user owes them there (negative: they owe the user)."""
    uid = user["user_id"]
    out: dict[int, float] = {}
    for (a, b), amount in _debts(ctx, user, group_id).items():
        if a == uid:
            out[b] = out.get(b, 0.0) + amount
        elif b == uid:
            out[a] = out.get(a, 0.0) - amount
    return out


def _direction(you_owe_them: float) -> str:
    if you_owe_them > 0:
        return "you_owe_them"
    if you_owe_them < 0:
        return "they_owe_you"
    return "no_balance"


def _live_groups(ctx: ToolContext, user: dict[str, Any]) -> list[dict[str, Any]]:
    groups = [
        g for g in ctx.rows(APP, "groups") if user["user_id"] in _members(g) and not g.get("deleted", False)
    ]
    return sorted(groups, key=lambda g: g["group_id"])


def _sides(
    ctx: ToolContext, debts: dict[tuple[int, int], float], source_id: int
) -> tuple[list[JsonObject], list[JsonObject]]:
    """What ``source_id`` owes each other person, and what each owes them: ``{name, email, amount}``."""
    owes: list[JsonObject] = [
        {**ctx.person_of(APP, b), "amount": v} for (a, b), v in debts.items() if a == source_id
    ]
    owed: list[JsonObject] = [
        {**ctx.person_of(APP, a), "amount": v} for (a, b), v in debts.items() if b == source_id
    ]
    return owes, owed


def _total(entries: list[JsonObject]) -> float:
    return money(sum(float(e["amount"]) for e in entries))  # type: ignore[arg-type]


def _summary(ctx: ToolContext, debts: dict[tuple[int, int], float], source: dict[str, Any]) -> JsonObject:
    owes, owed = _sides(ctx, debts, source["user_id"])
    return {
        "source": person(source),
        "source_owes_to_targets": {"total": _total(owes), "breakdown": owes},
        "targets_owe_to_source": {"total": _total(owed), "breakdown": owed},
    }


def _people_totals(ctx: ToolContext, user: dict[str, Any]) -> dict[int, float]:
    totals: dict[int, float] = {}
    for group_id, _ in _group_entries(ctx, user):
        for other, amount in _you_owe(ctx, user, group_id).items():
            totals[other] = totals.get(other, 0.0) + amount
    return {other: money(amount) for other, amount in totals.items() if money(amount) != 0}


# ---------------------------------------------------------------- account APIs


apis.add(
    login_tool(APP),
    logout_tool(APP),
    show_account_tool(APP, "Show your own Splitwise account details."),
    show_profile_tool(APP, "Show the public profile of a Splitwise user by email."),
)


@apis.api("Find Splitwise users by name or email, with what you and each of them owe.")
def search_users(ctx: ToolContext, args: SearchUsersArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    balances = _people_totals(ctx, user)
    others = [u for u in ctx.rows(APP, "users") if u.get("user_id") != user["user_id"]]
    others.sort(key=lambda u: abs(balances.get(u["user_id"], 0.0)), reverse=True)
    others = ranked(others, args.query, "first_name", "last_name", "email")
    out: list[JsonObject] = []
    for other in page(others, args.page_index, args.page_limit):
        amount = balances.get(other["user_id"], 0.0)
        out.append({**person(other), "direction": _direction(amount), "amount": abs(amount)})
    return out


# ---------------------------------------------------------------- groups


@apis.api("Create a group (you are a member) with the given members.")
def create_group(ctx: ToolContext, args: CreateGroupArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    member_ids = [user["user_id"]]
    for email in args.member_emails:
        member_ids.append(ctx.user_by_email(APP, email)["user_id"])
    group = ctx.insert(
        APP,
        "groups",
        {
            "name": args.name,
            "description": args.description,
            "user_id": user["user_id"],
            "member_ids": list(dict.fromkeys(member_ids)),
            "created_at": ctx.timestamp(),
            "deleted": False,
        },
        unique=("Group", ("user_id", "name")),
        error=ToolNotFound,  # this app's refusal of a second group of the name: status not_found
    )
    group["invitation_code"] = _invitation_code(group["group_id"])
    return {"message": "Group created.", "group_id": group["group_id"]}


@apis.api("Show a group you belong to, with its members.")
def show_group(ctx: ToolContext, args: GroupArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    return _group_view(ctx, _own_group(ctx, user, args.group_id))


@apis.api("List the groups you belong to, newest first.")
def show_groups(ctx: ToolContext, args: ShowGroupsArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    groups = [
        g
        for g in ctx.rows(APP, "groups")
        if user["user_id"] in _members(g) and bool(g.get("deleted", False)) == args.delete
    ]
    groups = sort_rows(groups, "-created_at", then_by="group_id")
    return [_group_view(ctx, g) for g in page(groups, args.page_index, args.page_limit)]


@apis.api("Add a Splitwise user to one of your groups.")
def add_member_to_group(ctx: ToolContext, args: MemberArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    group = _own_group(ctx, user, args.group_id)
    new_member = ctx.user_by_email(APP, args.user_email)
    if new_member["user_id"] in _members(group):
        raise ToolFailed("User is already a member of the group.")
    group["member_ids"] = [*_members(group), new_member["user_id"]]
    return {"message": "Member added to the group."}


@apis.api("Remove a member from one of your groups.")
def remove_member_from_group(ctx: ToolContext, args: MemberArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    group = _own_group(ctx, user, args.group_id)
    member = ctx.user_by_email(APP, args.user_email)
    if member["user_id"] not in _members(group):
        raise ToolFailed("User is not a member of the group.")
    group["member_ids"] = [m for m in _members(group) if m != member["user_id"]]
    return {"message": "Member removed from the group."}


# ---------------------------------------------------------------- expenses


@apis.api(
    "Record an expense paid by one user and owed by the debtors (equal shares unless debt_amounts"
    " are given; they must add up to paid_amount)."
)
def record_expense(ctx: ToolContext, args: RecordExpenseArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    if not args.debtor_emails:
        raise ToolFailed("At least one debtor who owes a share of the expense must be specified.")
    paid_amount = money(args.paid_amount)
    amounts = (
        list(args.debt_amounts)
        if args.debt_amounts is not None
        else [paid_amount / len(args.debtor_emails)] * len(args.debtor_emails)
    )
    if len(amounts) != len(args.debtor_emails):
        raise ToolFailed("Number of debtor IDs and debt amounts must be the same.")
    if abs(sum(amounts) - paid_amount) > 0.1:
        raise ToolFailed(
            "The sum of debt amounts (rounded to cents) must be equal to the total amount of the expense"
            " (rounded to cents)."
        )
    member_ids: list[int] | None = None
    if args.group_id is not None:
        member_ids = _members(_own_group(ctx, user, args.group_id))
    own = str(user.get("email", "")).lower()
    if args.group_id is None and own not in {
        e.strip().lower() for e in [args.payer_email, *args.debtor_emails]
    }:
        raise ToolFailed(
            "You are neither payer or debtor of this expense and the expense does not belong to a group."
            " So you cannot create it."
        )
    payer = ctx.user_by_email(APP, args.payer_email)
    debtors = []
    for email in args.debtor_emails:
        debtor = ctx.user_by_email(APP, email)
        if member_ids is not None and debtor["user_id"] not in member_ids:
            raise ToolFailed(f"Debtor with email {debtor['email']} is not a member of the group.")
        debtors.append(debtor)
    if len(debtors) == 1 and debtors[0]["user_id"] == payer["user_id"]:
        raise ToolFailed("A payer cannot be a debtor if there is only one debtor involved in the expense.")
    _refuse_receipt(args.receipt_file_path, args.file_system_access_token)
    if paid_amount <= 0 or any(money(a) <= 0 for a in amounts):
        raise ToolFailed("The paid amount and every debt amount must be greater than 0.")
    shares = [
        {"debtor_id": d["user_id"], "debt_amount": money(a)} for d, a in zip(debtors, amounts, strict=True)
    ]
    fields = {
        "payer_id": payer["user_id"],
        "description": args.description,
        "amount": paid_amount,
        "shares": shares,
    }
    expense = _record(ctx, "expenses", user, args.group_id, fields)
    return {"message": "Expense recorded.", "expense_id": expense["expense_id"]}


def _record(ctx: ToolContext, collection: str, user: Row, group_id: int | None, fields: Row) -> Row:
    """A new expense or payment that ``user`` records: live, without a receipt, made now."""
    record = {"group_id": group_id, "user_id": user["user_id"], **fields}
    now = {"deleted": False, "receipt_file_name": None, "created_at": ctx.timestamp()}
    return ctx.insert(APP, collection, record | now)


def _expense(ctx: ToolContext, args: ExpenseArgs) -> Row:
    """The expense of ``args`` if the caller may see it."""
    user = ctx.user(APP, args.access_token)
    expense = ctx.find(APP, "expenses", args.expense_id, "expense")
    _check_expense_access(ctx, user, expense)
    return expense


@apis.api("Show an expense with its shares.")
def show_expense(ctx: ToolContext, args: ExpenseArgs) -> JsonObject:
    return _expense_view(ctx, _expense(ctx, args))


@apis.api("Mark an expense you are involved in as deleted.")
def delete_expense(ctx: ToolContext, args: ExpenseArgs) -> JsonObject:
    expense = _expense(ctx, args)
    if expense.get("deleted"):
        raise ToolFailed("This expense has already been marked deleted.")
    expense["deleted"] = True
    return {"message": "Expense marked as deleted."}


def _expense_text(ctx: ToolContext, expense: dict[str, Any]) -> list[str]:
    people = [
        ctx.person_of(APP, expense.get("payer_id")),
        *(ctx.person_of(APP, s.get("debtor_id")) for s in _shares(expense)),
    ]
    return [str(expense.get("description") or ""), *(f"{p['name']} {p['email']}" for p in people)]


def _expenses(ctx: ToolContext, args: ExpenseSearchArgs, group_id: int | None) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    uid = user["user_id"]
    participant = None if args.participant_email is None else ctx.user_by_email(APP, args.participant_email)
    bounds = date_bounds(args.min_created_at, args.max_created_at, "min_created_at", "max_created_at")
    # AppWorld lists the live expenses the caller paid or owes a share of, then filters them.
    rows = [
        e
        for e in ctx.rows(APP, "expenses")
        if uid in _participants(e) and not e.get("deleted") and e.get("group_id") == group_id
    ]
    rows = [
        e
        for e in rows
        if bool(e.get("deleted", False)) == args.deleted
        and (participant is None or participant["user_id"] in _participants(e))
        and args.min_amount <= float(e.get("amount", 0.0)) <= args.max_amount
        and in_dates(e.get("created_at"), bounds)
    ]
    items = [(search_text(*_expense_text(ctx, e)), e) for e in rows]
    found = retrieve(items, args, ("created_at", "amount"), default_sort="-created_at", then_by="expense_id")
    return [_expense_view(ctx, e) for e in found]


@apis.api("List or search your expenses in a group (a query ranks, it does not filter).")
def show_group_expenses(ctx: ToolContext, args: GroupExpenseSearchArgs) -> list[JsonObject]:
    return _expenses(ctx, args, args.group_id)


@apis.api("List or search your expenses outside any group (a query ranks, it does not filter).")
def show_no_group_expenses(ctx: ToolContext, args: ExpenseSearchArgs) -> list[JsonObject]:
    return _expenses(ctx, args, None)


# ---------------------------------------------------------------- payments


@apis.api("Record that one user paid another (no real money moves).")
def record_payment(ctx: ToolContext, args: RecordPaymentArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    if args.payer_email.strip().lower() == args.receiver_email.strip().lower():
        raise ToolFailed("Payer and receiver cannot be the same.")
    payer = ctx.user_by_email(APP, args.payer_email)
    receiver = ctx.user_by_email(APP, args.receiver_email)
    if args.group_id is not None:
        members = _members(_own_group(ctx, user, args.group_id))
        if payer["user_id"] not in members:
            raise ToolFailed("The payer is not part of this group.")
        if receiver["user_id"] not in members:
            raise ToolFailed("The receiver is not part of this group.")
    elif user["user_id"] not in (payer["user_id"], receiver["user_id"]):
        raise ToolFailed(
            "Unable to record payment. Since the payment does not belong to an expense group, you must be"
            " either the payer or receiver of the payment."
        )
    _refuse_receipt(args.receipt_file_path, args.file_system_access_token)
    if money(args.amount) <= 0:
        raise ToolFailed("The payment amount must be greater than 0.")
    fields = {
        "payer_id": payer["user_id"],
        "receiver_id": receiver["user_id"],
        "amount": money(args.amount),
        "description": args.description,
    }
    payment = _record(ctx, "payments", user, args.group_id, fields)
    return {"message": "Payment recorded.", "payment_id": payment["payment_id"]}


@apis.api("Show a payment.")
def show_payment(ctx: ToolContext, args: PaymentArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    payment = ctx.find(APP, "payments", args.payment_id, "payment")
    _check_payment_access(ctx, user, payment)
    return _payment_view(ctx, payment)


# ---------------------------------------------------------------- balance APIs


@apis.api("Who owes whom in a group (without group_id: your balances outside groups).")
def show_group_balance(ctx: ToolContext, args: GroupBalanceArgs) -> list[JsonObject]:
    user = ctx.user(APP, args.access_token)
    shown: list[dict[str, Any]]
    if args.group_id is not None:
        group = _own_group(ctx, user, args.group_id)
        if group.get("deleted"):
            raise ToolFailed("Group is deleted. Undelete it first if you want to see balance.")
        shown = [u for u in (ctx.user_by_id(APP, m) for m in _members(group)) if u is not None]
    else:
        if args.email is not None and args.email.strip().lower() != str(user.get("email", "")).lower():
            raise ToolFailed("If group_id is not passed, email can only be your own email or None.")
        shown = [user]
    if args.email is not None:
        wanted = args.email.strip().lower()
        shown = [u for u in shown if str(u.get("email", "")).lower() == wanted]
        if not shown:
            raise ToolFailed("The user you want to show balance for is not a member of the group.")
    debts = _debts(ctx, user, args.group_id)
    return [_summary(ctx, debts, source) for source in shown]


def _group_entries(ctx: ToolContext, user: dict[str, Any]) -> list[tuple[int | None, Any]]:
    """(group id, name) of the balances a user has: outside groups first, then each live group."""
    return [(None, NO_GROUP_NAME), *((g["group_id"], g.get("name")) for g in _live_groups(ctx, user))]


@apis.api("What you owe and are owed in each of your groups.")
def show_groups_balance(ctx: ToolContext, args: AuthArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    breakdown: list[JsonObject] = []
    you_owe = they_owe = 0.0
    for group_id, name in _group_entries(ctx, user):
        owes, owed = _sides(ctx, _debts(ctx, user, group_id), user["user_id"])
        you_owe += _total(owes)
        they_owe += _total(owed)
        breakdown.append(
            {
                "group_id": group_id,
                "group_name": name,
                "you_owe_others": _total(owes),
                "others_owe_you": _total(owed),
            }
        )
    return {"you_owe_others": money(you_owe), "others_owe_you": money(they_owe), "breakdown": breakdown}


@apis.api("What you owe each person and each person owes you overall.")
def show_people_balance(ctx: ToolContext, args: AuthArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    totals = _people_totals(ctx, user)
    breakdown: list[JsonObject] = [
        {**ctx.person_of(APP, other), "direction": _direction(amount), "amount": abs(amount)}
        for other, amount in totals.items()
    ]
    return {
        "you_owe_others": money(sum(a for a in totals.values() if a > 0)),
        "others_owe_you": money(sum(-a for a in totals.values() if a < 0)),
        "breakdown": breakdown,
    }


@apis.api("What you and one person owe each other, by group.")
def show_person_balance(ctx: ToolContext, args: PersonBalanceArgs) -> JsonObject:
    user = ctx.user(APP, args.access_token)
    wanted = args.email.strip().lower()
    if wanted == str(user.get("email", "")).lower():
        raise ToolFailed("You cannot check your balance with yourself.")
    other = ctx.account(APP, args.email)
    total = 0.0
    breakdown: list[JsonObject] = []
    for group_id, name in _group_entries(ctx, user):
        amount = 0.0 if other is None else _you_owe(ctx, user, group_id).get(other["user_id"], 0.0)
        if money(amount) != 0:
            total += amount
            breakdown.append(
                {
                    "group_id": group_id,
                    "group_name": name,
                    "direction": _direction(amount),
                    "amount": abs(money(amount)),
                }
            )
    total = money(total)
    return {"direction": _direction(total), "total": abs(total), "breakdown": breakdown}


TOOLS = apis.tools
