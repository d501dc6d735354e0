"""The ``splitwise`` app: groups of people sharing expenses.

Records (``apps["splitwise"]``):

- ``groups``: ``{group_id, name, members: [names]}`` (the user is ``"Alex Morgan"``).
- ``expenses``: ``{expense_id, group_id, description, amount, paid_by, split_among: [names],
  created_at}`` (split equally among ``split_among``).

Tools (``mcp_appworld_splitwise__<api>``): ``record_expense(group_id, description, amount,
paid_by, split_among?)`` -> ``{expense_id, shares: {member: amount}}`` (``split_among`` defaults
to every member; names must be members, matched case-insensitively, else failed),
``show_groups()``, ``show_group_balances(group_id)`` -> ``{group_id, balances: [{member,
balance}]}`` (positive: the member is owed money), ``show_expenses(group_id)``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    Args,
    EpisodeTool,
    NoArgs,
    ToolContext,
    ToolFailed,
    app_tool,
    id_field,
    money,
)

APP = "splitwise"

SEED: dict[str, Any] = {
    "groups": [
        {"group_id": 1, "name": "Flatmates", "members": ["Alex Morgan", "Chris Okafor", "Sam Lee"]},
        {"group_id": 2, "name": "Lake trip", "members": ["Alex Morgan", "Jordan Morgan"]},
    ],
    "expenses": [
        {
            "expense_id": 1,
            "group_id": 1,
            "description": "Internet bill",
            "amount": 60.0,
            "paid_by": "Chris Okafor",
            "split_among": ["Alex Morgan", "Chris Okafor", "Sam Lee"],
            "created_at": -4320.0,
        }
    ],
}


class ExpenseArgs(Args):
    group_id: int = id_field("The group's id.")
    description: str = Field(min_length=1)
    amount: float = Field(gt=0, le=1_000_000, allow_inf_nan=False)
    paid_by: str = Field(min_length=1, description="The member who paid.")
    split_among: list[str] | None = Field(default=None, description="Members sharing it (default: all).")


class GroupArgs(Args):
    group_id: int = id_field("The group's id.")


def _member(group: dict[str, Any], name: str) -> str:
    for member in group.get("members", []):
        if str(member).casefold() == name.strip().casefold():
            return str(member)
    raise ToolFailed(
        f"{name!r} is not a member of {group.get('name')!r} ({', '.join(group.get('members', []))})"
    )


def shares(amount: float, members: list[str]) -> dict[str, float]:
    """Equal shares in cents; the first members carry the odd cents, so shares sum to the amount."""
    cents = round(amount * 100)
    base, extra = divmod(cents, len(members))
    return {m: (base + (1 if i < extra else 0)) / 100 for i, m in enumerate(members)}


def record_expense(ctx: ToolContext, args: ExpenseArgs) -> JsonObject:
    group = ctx.find(APP, "groups", args.group_id, "group")
    paid_by = _member(group, args.paid_by)
    names = args.split_among if args.split_among is not None else list(group.get("members", []))
    among = list(dict.fromkeys(_member(group, n) for n in names))
    if not among:
        raise ToolFailed("split_among names nobody")
    expense_id = ctx.new_id(APP, "expenses")
    ctx.rows(APP, "expenses").append(
        {
            "expense_id": expense_id,
            "group_id": args.group_id,
            "description": args.description,
            "amount": money(args.amount),
            "paid_by": paid_by,
            "split_among": among,
            "created_at": ctx.now,
        }
    )
    return {"expense_id": expense_id, "shares": shares(money(args.amount), among)}


def show_groups(ctx: ToolContext, args: NoArgs) -> JsonObject:
    return {"groups": list(ctx.rows(APP, "groups"))}


def show_group_balances(ctx: ToolContext, args: GroupArgs) -> JsonObject:
    group = ctx.find(APP, "groups", args.group_id, "group")
    balance = {str(m): 0.0 for m in group.get("members", [])}
    for expense in ctx.rows(APP, "expenses"):
        if expense.get("group_id") != args.group_id:
            continue
        payer = str(expense["paid_by"])
        balance[payer] = balance.get(payer, 0.0) + float(expense["amount"])
        for member, share in shares(float(expense["amount"]), list(expense["split_among"])).items():
            balance[member] = balance.get(member, 0.0) - share
    return {
        "group_id": args.group_id,
        "balances": [{"member": m, "balance": money(b)} for m, b in balance.items()],
    }


def show_expenses(ctx: ToolContext, args: GroupArgs) -> JsonObject:
    ctx.find(APP, "groups", args.group_id, "group")
    return {"expenses": [e for e in ctx.rows(APP, "expenses") if e.get("group_id") == args.group_id]}


TOOLS: tuple[EpisodeTool[Any], ...] = (
    app_tool(
        APP, "record_expense", "Record an expense shared equally in a group.", ExpenseArgs, record_expense
    ),
    app_tool(APP, "show_groups", "List the groups and their members.", NoArgs, show_groups),
    app_tool(APP, "show_group_balances", "Show who owes what in a group.", GroupArgs, show_group_balances),
    app_tool(APP, "show_expenses", "List a group's expenses.", GroupArgs, show_expenses),
)
