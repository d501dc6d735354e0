"""The built-in splitwise app on AppWorld's surface: groups, expenses, payments and balances."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.apps import AppSession

LAURA, CHRIS, JON, LES, KATE = (
    "la-mcco@gmail.com",
    "chris.mcco@gmail.com",
    "jo.ball@gmail.com",
    "les_ball@gmail.com",
    "ka_ball@gmail.com",
)
NOT_ON_SPLITWISE = "nosplit@gmail.com"


def seed() -> dict[str, Any]:
    return {
        "start_time": "2025-05-05T09:00:00",
        "people": [
            {
                "first_name": "Laura",
                "last_name": "Mccoy",
                "email": LAURA,
                "accounts": {"splitwise": "T8H2[32", "simple_note": "notes-pw"},
            },
            {
                "first_name": "Chris",
                "last_name": "Mccoy",
                "email": CHRIS,
                "accounts": {"splitwise": "chris-pw"},
            },
            {"first_name": "Jonathan", "last_name": "Ball", "email": JON, "accounts": ["splitwise"]},
            {"first_name": "Leslie", "last_name": "Ball", "email": LES, "accounts": ["splitwise"]},
            {"first_name": "Katherine", "last_name": "Smith", "email": KATE, "accounts": ["splitwise"]},
            {"first_name": "Nora", "last_name": "Nosplit", "email": NOT_ON_SPLITWISE, "accounts": ["phone"]},
        ],
        "apps": {
            "splitwise": {
                "groups": [
                    # A group Laura is not in (users 2 and 3: Chris and Jonathan).
                    {
                        "group_id": 50,
                        "name": "Chess club",
                        "description": None,
                        "user_id": 2,
                        "member_ids": [2, 3],
                        "created_at": "2025-01-01T10:00:00",
                        "deleted": False,
                    }
                ]
            }
        },
    }


@pytest.fixture
def app() -> AppSession:
    return AppSession(seed())


def laura(app: AppSession) -> str:
    return app.login("splitwise", LAURA, "T8H2[32")


def expense(token: str, paid: float, debtors: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "access_token": token,
        "description": extra.pop("description", "Cabin deposit"),
        "paid_amount": paid,
        "payer_email": extra.pop("payer_email", LAURA),
        "debtor_emails": debtors,
        **extra,
    }


# ---------------------------------------------------------------- accounts


def test_login_logout_and_tokens(app: AppSession) -> None:
    assert "Invalid credentials" in app.refused(
        "splitwise__login", "unauthorized", username=LAURA, password="nope"
    )
    token = laura(app)
    assert app.ok("splitwise__show_groups", access_token=token) == []
    note_token = app.login("simple_note", LAURA, "notes-pw")
    message = app.refused("splitwise__show_groups", "unauthorized", access_token=note_token)
    assert "not authorized to access this splitwise API" in message
    assert app.ok("splitwise__logout", access_token=token) == {"message": "Successfully logged out."}
    app.refused("splitwise__show_groups", "unauthorized", access_token=token)


def test_account_and_profile(app: AppSession) -> None:
    token = laura(app)
    account = app.ok("splitwise__show_account", access_token=token)
    assert set(account) == {"first_name", "last_name", "email", "registered_at", "last_logged_in", "verified"}
    assert account["email"] == LAURA
    assert "password" not in account
    profile = app.ok("splitwise__show_profile", email=CHRIS)
    assert profile == {
        "first_name": "Chris",
        "last_name": "Mccoy",
        "email": CHRIS,
        "registered_at": account["registered_at"],
    }
    assert (
        app.refused("splitwise__show_profile", "failed") == "Either email or phone_number must be provided."
    )
    message = app.refused("splitwise__show_profile", "failed", email=NOT_ON_SPLITWISE)
    assert message == "Account for this email does not exist."
    app.refused("splitwise__show_profile", "invalid_args", email="not-an-email")


# ---------------------------------------------------------------- groups


def test_create_group_makes_the_creator_a_member(app: AppSession) -> None:
    token = laura(app)
    created = app.ok(
        "splitwise__create_group", access_token=token, name="Team trip", member_emails=[CHRIS, JON]
    )
    assert created["message"] == "Group created."
    group = app.ok("splitwise__show_group", access_token=token, group_id=created["group_id"])
    assert set(group) == {
        "group_id",
        "name",
        "description",
        "created_at",
        "deleted",
        "creator",
        "members",
        "invitation_code",
    }
    assert group["creator"] == {"name": "Laura Mccoy", "email": LAURA}
    assert [m["email"] for m in group["members"]] == [LAURA, CHRIS, JON]
    assert group["created_at"] == "2025-05-05T09:00:00" and group["deleted"] is False
    stored = next(g for g in app.state.apps["splitwise"]["groups"] if g["group_id"] == created["group_id"])
    assert stored["member_ids"] == [1, 2, 3] and stored["user_id"] == 1
    listed = app.ok("splitwise__show_groups", access_token=token)
    assert [g["group_id"] for g in listed] == [created["group_id"]]  # not the chess club


def test_create_group_refusals(app: AppSession) -> None:
    token = laura(app)
    message = app.refused(
        "splitwise__create_group", "not_found", access_token=token, name="X", member_emails=[NOT_ON_SPLITWISE]
    )
    assert message == f"The user with email {NOT_ON_SPLITWISE} does not exist."
    assert [g["group_id"] for g in app.state.apps["splitwise"]["groups"]] == [50]  # nothing created
    app.ok("splitwise__create_group", access_token=token, name="Trip", member_emails=[])
    message = app.refused(
        "splitwise__create_group", "not_found", access_token=token, name="Trip", member_emails=[]
    )
    assert message == "Group with this user_id and name already exists."
    app.refused("splitwise__create_group", "invalid_args", access_token=token, name="", member_emails=[])
    app.refused("splitwise__create_group", "invalid_args", access_token=token, name="No members")


def test_add_and_remove_members(app: AppSession) -> None:
    token = laura(app)
    group_id = app.ok("splitwise__create_group", access_token=token, name="Trip", member_emails=[CHRIS])[
        "group_id"
    ]
    added = app.ok("splitwise__add_member_to_group", access_token=token, group_id=group_id, user_email=JON)
    assert added == {"message": "Member added to the group."}
    message = app.refused(
        "splitwise__add_member_to_group", "failed", access_token=token, group_id=group_id, user_email=CHRIS
    )
    assert message == "User is already a member of the group."
    message = app.refused(
        "splitwise__add_member_to_group",
        "not_found",
        access_token=token,
        group_id=group_id,
        user_email=NOT_ON_SPLITWISE,
    )
    assert message == f"The user with email {NOT_ON_SPLITWISE} does not exist."
    message = app.refused(
        "splitwise__add_member_to_group", "not_found", access_token=token, group_id=999, user_email=JON
    )
    assert message == "The group with id 999 does not exist."
    message = app.refused(
        "splitwise__add_member_to_group", "failed", access_token=token, group_id=50, user_email=LES
    )
    assert message == "You are not a member of this group and so are not authorized to access it."
    members = app.ok("splitwise__show_group", access_token=token, group_id=group_id)["members"]
    assert [m["email"] for m in members] == [LAURA, CHRIS, JON]

    removed = app.ok(
        "splitwise__remove_member_from_group", access_token=token, group_id=group_id, user_email=CHRIS
    )
    assert removed == {"message": "Member removed from the group."}
    message = app.refused(
        "splitwise__remove_member_from_group",
        "failed",
        access_token=token,
        group_id=group_id,
        user_email=CHRIS,
    )
    assert message == "User is not a member of the group."
    members = app.ok("splitwise__show_group", access_token=token, group_id=group_id)["members"]
    assert [m["email"] for m in members] == [LAURA, JON]
    app.refused("splitwise__show_group", "failed", access_token=token, group_id=50)
    app.refused("splitwise__show_group", "not_found", access_token=token, group_id=999)


def test_show_groups_pages_newest_first(app: AppSession) -> None:
    token = laura(app)
    ids = [
        app.ok("splitwise__create_group", access_token=token, name=f"G{i}", member_emails=[])["group_id"]
        for i in range(3)
    ]
    listed = app.ok("splitwise__show_groups", access_token=token, page_limit=2)
    assert [g["group_id"] for g in listed] == [ids[2], ids[1]]
    assert [
        g["group_id"]
        for g in app.ok("splitwise__show_groups", access_token=token, page_index=1, page_limit=2)
    ] == [ids[0]]
    assert app.ok("splitwise__show_groups", access_token=token, delete=True) == []
    assert len(app.ok("splitwise__show_groups", access_token=token, page_limit=100)) == 3


# ---------------------------------------------------------------- expenses


def test_record_expense_equal_split_and_show_expense(app: AppSession) -> None:
    token = laura(app)
    recorded = app.ok("splitwise__record_expense", **expense(token, 90, [LAURA, CHRIS], description="Dinner"))
    assert recorded["message"] == "Expense recorded."
    shown = app.ok("splitwise__show_expense", access_token=token, expense_id=recorded["expense_id"])
    assert set(shown) == {
        "expense_id",
        "group_id",
        "description",
        "deleted",
        "receipt_file_name",
        "created_at",
        "shares",
        "creator",
        "payer",
        "paid_amount",
    }
    assert shown["shares"] == [
        {"debtor": {"name": "Laura Mccoy", "email": LAURA}, "debt_amount": 45.0},
        {"debtor": {"name": "Chris Mccoy", "email": CHRIS}, "debt_amount": 45.0},
    ]
    assert shown["paid_amount"] == 90.0 and shown["group_id"] is None and shown["payer"]["email"] == LAURA

    # The payer owes a share only when listed: 100 over two others is 50 each.
    other = app.ok("splitwise__record_expense", **expense(token, 100, [CHRIS, JON]))
    shares = app.ok("splitwise__show_expense", access_token=token, expense_id=other["expense_id"])["shares"]
    assert [s["debt_amount"] for s in shares] == [50.0, 50.0]
    # Shares are rounded to cents: 100 over three is 33.33 each.
    third = app.ok("splitwise__record_expense", **expense(token, 100, [CHRIS, JON, LES]))
    shares = app.ok("splitwise__show_expense", access_token=token, expense_id=third["expense_id"])["shares"]
    assert [s["debt_amount"] for s in shares] == [33.33, 33.33, 33.33]
    stored = app.state.apps["splitwise"]["expenses"][0]
    assert stored["payer_id"] == 1 and stored["user_id"] == 1 and stored["amount"] == 90.0
    assert stored["shares"] == [{"debtor_id": 1, "debt_amount": 45.0}, {"debtor_id": 2, "debt_amount": 45.0}]


def test_record_expense_with_debt_amounts(app: AppSession) -> None:
    token = laura(app)
    recorded = app.ok("splitwise__record_expense", **expense(token, 30, [CHRIS, JON], debt_amounts=[10, 20]))
    shares = app.ok("splitwise__show_expense", access_token=token, expense_id=recorded["expense_id"])[
        "shares"
    ]
    assert [(s["debtor"]["email"], s["debt_amount"]) for s in shares] == [(CHRIS, 10.0), (JON, 20.0)]
    # Within 0.1 of the total is accepted.
    app.ok("splitwise__record_expense", **expense(token, 30, [CHRIS, JON], debt_amounts=[10, 19.95]))
    message = app.refused(
        "splitwise__record_expense", "failed", **expense(token, 30, [CHRIS], debt_amounts=[10])
    )
    assert message == (
        "The sum of debt amounts (rounded to cents) must be equal to the total amount of the expense"
        " (rounded to cents)."
    )
    message = app.refused(
        "splitwise__record_expense", "failed", **expense(token, 30, [CHRIS], debt_amounts=[10, 20])
    )
    assert message == "Number of debtor IDs and debt amounts must be the same."
    assert len(app.state.apps["splitwise"]["expenses"]) == 2


@pytest.mark.parametrize(
    ("call", "status", "message"),
    [
        (
            {"paid": 20, "debtors": []},
            "failed",
            "At least one debtor who owes a share of the expense must be specified.",
        ),
        (
            {"paid": 20, "debtors": [JON], "payer_email": CHRIS},
            "failed",
            "You are neither payer or debtor of this expense and the expense does not belong to a group."
            " So you cannot create it.",
        ),
        (
            {"paid": 20, "debtors": [LAURA]},
            "failed",
            "A payer cannot be a debtor if there is only one debtor involved in the expense.",
        ),
        (
            {"paid": 20, "debtors": [NOT_ON_SPLITWISE]},
            "not_found",
            f"The user with email {NOT_ON_SPLITWISE} does not exist.",
        ),
        (
            {"paid": 20, "debtors": [CHRIS], "receipt_file_path": "/home/laura/bill.pdf"},
            "failed",
            "You must provide a file_system access token to attach receipt file to this expense.",
        ),
        (
            {"paid": 20, "debtors": [CHRIS], "receipt_file_path": "/r.pdf", "file_system_access_token": "t"},
            "failed",
            "Receipt files cannot be attached here",
        ),
        ({"paid": 0, "debtors": [CHRIS]}, "failed", "must be greater than 0"),
        ({"paid": 10, "debtors": [CHRIS, JON], "debt_amounts": [0, 10]}, "failed", "must be greater than 0"),
        (
            {"paid": 20, "debtors": [CHRIS], "group_id": 999},
            "not_found",
            "The group with id 999 does not exist.",
        ),
        (
            {"paid": 20, "debtors": [CHRIS], "group_id": 50},
            "failed",
            "You are not a member of this group and so are not authorized to access it.",
        ),
        ({"paid": 20, "debtors": [CHRIS], "payer_email": "nobody"}, "invalid_args", "payer_email"),
    ],
)
def test_record_expense_refusals(app: AppSession, call: dict[str, Any], status: str, message: str) -> None:
    token = laura(app)
    got = app.refused(
        "splitwise__record_expense", status, **expense(token, call.pop("paid"), call.pop("debtors"), **call)
    )
    assert message in got
    assert not app.state.apps["splitwise"].get("expenses")


def test_group_expense_needs_members_as_debtors(app: AppSession) -> None:
    token = laura(app)
    group_id = app.ok("splitwise__create_group", access_token=token, name="Trip", member_emails=[CHRIS])[
        "group_id"
    ]
    message = app.refused(
        "splitwise__record_expense", "failed", **expense(token, 20, [CHRIS, JON], group_id=group_id)
    )
    assert message == f"Debtor with email {JON} is not a member of the group."
    # In a group the caller need not take part.
    app.ok("splitwise__add_member_to_group", access_token=token, group_id=group_id, user_email=JON)
    recorded = app.ok(
        "splitwise__record_expense", **expense(token, 20, [JON], payer_email=CHRIS, group_id=group_id)
    )
    assert (
        app.ok("splitwise__show_expense", access_token=token, expense_id=recorded["expense_id"])["group_id"]
        == group_id
    )


def test_delete_expense(app: AppSession) -> None:
    token = laura(app)
    expense_id = app.ok("splitwise__record_expense", **expense(token, 40, [CHRIS]))["expense_id"]
    assert app.ok("splitwise__delete_expense", access_token=token, expense_id=expense_id) == {
        "message": "Expense marked as deleted."
    }
    assert app.ok("splitwise__show_expense", access_token=token, expense_id=expense_id)["deleted"] is True
    message = app.refused("splitwise__delete_expense", "failed", access_token=token, expense_id=expense_id)
    assert message == "This expense has already been marked deleted."
    message = app.refused("splitwise__show_expense", "not_found", access_token=token, expense_id=77)
    assert message == "The expense with id 77 does not exist."
    balance = app.ok("splitwise__show_person_balance", access_token=token, email=CHRIS)
    assert balance == {"direction": "no_balance", "total": 0.0, "breakdown": []}


def test_expense_of_others_is_not_shown(app: AppSession) -> None:
    chris = app.login("splitwise", CHRIS, "chris-pw")
    expense_id = app.ok("splitwise__record_expense", **expense(chris, 40, [JON], payer_email=CHRIS))[
        "expense_id"
    ]
    token = laura(app)
    message = app.refused("splitwise__show_expense", "failed", access_token=token, expense_id=expense_id)
    assert message.startswith("You are not authorized to access this expense")


def test_show_group_and_no_group_expenses(app: AppSession) -> None:
    token = laura(app)
    group_id = app.ok("splitwise__create_group", access_token=token, name="Trip", member_emails=[CHRIS, JON])[
        "group_id"
    ]
    cabin = app.ok("splitwise__record_expense", **expense(token, 90, [CHRIS, JON], group_id=group_id))[
        "expense_id"
    ]
    fuel = app.ok(
        "splitwise__record_expense", **expense(token, 30, [CHRIS], group_id=group_id, description="Fuel")
    )["expense_id"]
    taxi = app.ok("splitwise__record_expense", **expense(token, 12, [JON], description="Taxi"))["expense_id"]

    listed = app.ok("splitwise__show_group_expenses", access_token=token, group_id=group_id)
    assert [e["expense_id"] for e in listed] == [fuel, cabin]  # newest first
    assert set(listed[0]) >= {"expense_id", "shares", "payer", "paid_amount", "deleted"}
    ranked = app.ok("splitwise__show_group_expenses", access_token=token, group_id=group_id, query="cabin")
    assert [e["expense_id"] for e in ranked] == [cabin, fuel]  # a query ranks, it does not filter
    by_jon = app.ok(
        "splitwise__show_group_expenses", access_token=token, group_id=group_id, participant_email=JON
    )
    assert [e["expense_id"] for e in by_jon] == [cabin]
    cheap = app.ok("splitwise__show_group_expenses", access_token=token, group_id=group_id, max_amount=50)
    assert [e["expense_id"] for e in cheap] == [fuel]
    ascending = app.ok(
        "splitwise__show_group_expenses", access_token=token, group_id=group_id, sort_by="+amount"
    )
    assert [e["expense_id"] for e in ascending] == [fuel, cabin]
    assert [e["expense_id"] for e in app.ok("splitwise__show_no_group_expenses", access_token=token)] == [
        taxi
    ]
    late = app.ok("splitwise__show_no_group_expenses", access_token=token, min_created_at="2025-05-06")
    assert late == []
    message = app.refused(
        "splitwise__show_no_group_expenses", "invalid_args", access_token=token, max_created_at="May"
    )
    assert message == "Invalid max_created_at format. Use YYYY-MM-DD."
    message = app.refused("splitwise__show_no_group_expenses", "failed", access_token=token, sort_by="+title")
    assert message.startswith("If sort_by is passed, it must be one of created_at, amount")


# ---------------------------------------------------------------- payments


def test_record_and_show_payment(app: AppSession) -> None:
    token = laura(app)
    recorded = app.ok(
        "splitwise__record_payment", access_token=token, payer_email=CHRIS, receiver_email=LAURA, amount=15
    )
    assert recorded["message"] == "Payment recorded."
    shown = app.ok("splitwise__show_payment", access_token=token, payment_id=recorded["payment_id"])
    assert shown == {
        "payment_id": recorded["payment_id"],
        "group_id": None,
        "description": None,
        "deleted": False,
        "receipt_file_name": None,
        "created_at": "2025-05-05T09:00:00",
        "creator": {"name": "Laura Mccoy", "email": LAURA},
        "payer": {"name": "Chris Mccoy", "email": CHRIS},
        "receiver": {"name": "Laura Mccoy", "email": LAURA},
        "paid_amount": 15.0,
    }
    message = app.refused(
        "splitwise__record_payment",
        "failed",
        access_token=token,
        payer_email=LAURA,
        receiver_email=LAURA,
        amount=5,
    )
    assert message == "Payer and receiver cannot be the same."
    message = app.refused(
        "splitwise__record_payment",
        "failed",
        access_token=token,
        payer_email=CHRIS,
        receiver_email=JON,
        amount=5,
    )
    assert message.startswith("Unable to record payment.")
    group_id = app.ok("splitwise__create_group", access_token=token, name="Trip", member_emails=[CHRIS])[
        "group_id"
    ]
    message = app.refused(
        "splitwise__record_payment",
        "failed",
        access_token=token,
        payer_email=JON,
        receiver_email=LAURA,
        amount=5,
        group_id=group_id,
    )
    assert message == "The payer is not part of this group."
    app.refused("splitwise__show_payment", "not_found", access_token=token, payment_id=99)


# ---------------------------------------------------------------- balances


def test_person_balance_matches_appworld_probe(app: AppSession) -> None:
    token = laura(app)
    app.ok("splitwise__record_expense", **expense(token, 90, [LAURA, CHRIS], description="Dinner"))
    app.ok("splitwise__record_expense", **expense(token, 30, [CHRIS], debt_amounts=[30], description="Taxi"))
    balance = app.ok("splitwise__show_person_balance", access_token=token, email=CHRIS)
    assert balance == {
        "direction": "they_owe_you",
        "total": 75.0,
        "breakdown": [
            {"group_id": None, "group_name": "Non-Group Entries", "direction": "they_owe_you", "amount": 75.0}
        ],
    }
    message = app.refused("splitwise__show_person_balance", "failed", access_token=token, email=LAURA)
    assert message == "You cannot check your balance with yourself."
    chris = app.login("splitwise", CHRIS, "chris-pw")
    mirrored = app.ok("splitwise__show_person_balance", access_token=chris, email=LAURA)
    assert mirrored["direction"] == "you_owe_them" and mirrored["total"] == 75.0


def test_balances_across_groups_and_payments(app: AppSession) -> None:
    token = laura(app)
    group_id = app.ok(
        "splitwise__create_group", access_token=token, name="Trip", member_emails=[CHRIS, JON, LES]
    )["group_id"]
    app.ok("splitwise__record_expense", **expense(token, 100, [CHRIS, JON, LES], group_id=group_id))
    app.ok(
        "splitwise__record_expense",
        **expense(token, 30, [LAURA, JON], payer_email=CHRIS, group_id=group_id, description="Lunch"),
    )
    app.ok("splitwise__record_expense", **expense(token, 40, [CHRIS], description="Dinner"))
    app.ok(
        "splitwise__record_payment", access_token=token, payer_email=CHRIS, receiver_email=LAURA, amount=15
    )
    app.ok(
        "splitwise__record_payment",
        access_token=token,
        payer_email=CHRIS,
        receiver_email=LAURA,
        amount=5,
        group_id=group_id,
    )

    group = app.ok("splitwise__show_group_balance", access_token=token, group_id=group_id)
    assert [g["source"]["email"] for g in group] == [LAURA, CHRIS, JON, LES]
    mine = group[0]
    assert set(mine) == {"source", "source_owes_to_targets", "targets_owe_to_source"}
    assert mine["source_owes_to_targets"] == {"total": 0.0, "breakdown": []}
    owed = {e["email"]: e["amount"] for e in mine["targets_owe_to_source"]["breakdown"]}
    assert owed == {CHRIS: 13.33, JON: 33.33, LES: 33.33}
    assert mine["targets_owe_to_source"]["total"] == 79.99
    assert set(mine["targets_owe_to_source"]["breakdown"][0]) == {"email", "name", "amount"}
    jon = app.ok("splitwise__show_group_balance", access_token=token, group_id=group_id, email=JON)
    assert len(jon) == 1 and jon[0]["source_owes_to_targets"]["total"] == 48.33

    outside = app.ok("splitwise__show_group_balance", access_token=token)
    assert outside[0]["targets_owe_to_source"]["breakdown"] == [
        {"name": "Chris Mccoy", "email": CHRIS, "amount": 25.0}
    ]
    message = app.refused("splitwise__show_group_balance", "failed", access_token=token, email=CHRIS)
    assert message == "If group_id is not passed, email can only be your own email or None."
    message = app.refused(
        "splitwise__show_group_balance", "failed", access_token=token, group_id=group_id, email=KATE
    )
    assert message == "The user you want to show balance for is not a member of the group."

    person = app.ok("splitwise__show_person_balance", access_token=token, email=CHRIS)
    assert person == {
        "direction": "they_owe_you",
        "total": 38.33,
        "breakdown": [
            {
                "group_id": None,
                "group_name": "Non-Group Entries",
                "direction": "they_owe_you",
                "amount": 25.0,
            },
            {"group_id": group_id, "group_name": "Trip", "direction": "they_owe_you", "amount": 13.33},
        ],
    }
    people = app.ok("splitwise__show_people_balance", access_token=token)
    assert people["you_owe_others"] == 0.0 and people["others_owe_you"] == 104.99
    assert {(b["email"], b["direction"], b["amount"]) for b in people["breakdown"]} == {
        (CHRIS, "they_owe_you", 38.33),
        (JON, "they_owe_you", 33.33),
        (LES, "they_owe_you", 33.33),
    }
    assert set(people["breakdown"][0]) == {"email", "name", "direction", "amount"}
    groups = app.ok("splitwise__show_groups_balance", access_token=token)
    assert groups == {
        "you_owe_others": 0.0,
        "others_owe_you": 104.99,
        "breakdown": [
            {
                "group_id": None,
                "group_name": "Non-Group Entries",
                "you_owe_others": 0.0,
                "others_owe_you": 25.0,
            },
            {"group_id": group_id, "group_name": "Trip", "you_owe_others": 0.0, "others_owe_you": 79.99},
        ],
    }


def test_you_owe_them_direction(app: AppSession) -> None:
    token = laura(app)
    app.ok("splitwise__record_expense", **expense(token, 60, [LAURA, KATE], payer_email=KATE))
    people = app.ok("splitwise__show_people_balance", access_token=token)
    assert people["breakdown"] == [
        {"name": "Katherine Smith", "email": KATE, "direction": "you_owe_them", "amount": 30.0}
    ]
    assert people["you_owe_others"] == 30.0 and people["others_owe_you"] == 0.0


def test_search_users_ranks_by_query_and_orders_by_balance(app: AppSession) -> None:
    token = laura(app)
    app.ok("splitwise__record_expense", **expense(token, 50, [JON]))
    app.ok("splitwise__record_expense", **expense(token, 60, [LAURA, KATE], payer_email=KATE))
    users = app.ok("splitwise__search_users", access_token=token, page_limit=10)
    assert [u["email"] for u in users] == [JON, KATE, CHRIS, LES]  # the larger balances first, not Laura
    assert users[0] == {"name": "Jonathan Ball", "email": JON, "direction": "they_owe_you", "amount": 50.0}
    assert users[2]["direction"] == "no_balance" and users[2]["amount"] == 0.0
    by_name = app.ok("splitwise__search_users", access_token=token, query="leslie")
    assert [u["email"] for u in by_name] == [LES, JON, KATE, CHRIS]
    assert len(app.ok("splitwise__search_users", access_token=token, page_limit=2)) == 2
    app.refused("splitwise__search_users", "invalid_args", access_token=token, page_limit=21)


def test_team_trip_of_researcher_task_016(app: AppSession) -> None:
    """The calls researcher_task_016's scorer reads: a group, then an even split in it."""
    token = laura(app)
    created = app.ok(
        "splitwise__create_group", access_token=token, name="Team building", member_emails=[CHRIS, JON]
    )
    app.ok("splitwise__add_member_to_group", access_token=token, group_id=created["group_id"], user_email=LES)
    recorded = app.ok(
        "splitwise__record_expense",
        **expense(
            token, 30.0, [LAURA, CHRIS, JON, LES], group_id=created["group_id"], debt_amounts=[7.5] * 4
        ),
    )
    assert isinstance(recorded["expense_id"], int)
    people = app.ok("splitwise__show_people_balance", access_token=token)
    assert {b["email"]: b["amount"] for b in people["breakdown"]} == {CHRIS: 7.5, JON: 7.5, LES: 7.5}
    # Listing the debtors without the payer but giving the per-head share does not add up.
    app.refused(
        "splitwise__record_expense",
        "failed",
        **expense(token, 30.0, [CHRIS, JON, LES], group_id=created["group_id"], debt_amounts=[7.5] * 3),
    )
