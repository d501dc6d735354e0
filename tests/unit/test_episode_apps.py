"""The simulated apps of a pi-Bench episode: tools, statuses, policy, merge, diff, purity."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from messages.probes import ProbeOutcome, ProbePolicy
from world.episodes.apps import (
    EnvState,
    EpisodeTools,
    canonical_tool_name,
    merge_app_state,
    new_state,
    state_diff,
    state_value,
)

TOOLS = EpisodeTools()


def call(
    state: EnvState,
    tool: str,
    args: Any = None,
    *,
    policy: ProbePolicy | None = None,
    tools: EpisodeTools = TOOLS,
) -> tuple[ProbeOutcome, EnvState]:
    """One call, checking the contract every call keeps: the input state is never mutated, the
    state changes only on ``ok``, and the audit mirrors the outcome."""
    before = copy.deepcopy(state.model_dump())
    outcome, after = tools.call(state, "assistant.ep1", tool, args, policy=policy)
    assert state.model_dump() == before, "the input state was mutated"
    if outcome.status != "ok":
        assert after is state
        assert outcome.result is None and outcome.error
    assert outcome.audit.registry == "episode"
    assert outcome.audit.status == outcome.status
    assert outcome.audit.caller == "assistant.ep1"
    assert outcome.audit.tool == outcome.tool
    assert outcome.audit.requested == tool
    return outcome, after


def ok(state: EnvState, tool: str, args: Any = None) -> tuple[dict[str, Any], EnvState]:
    outcome, after = call(state, tool, args)
    assert outcome.status == "ok", outcome.error
    assert outcome.result is not None
    return outcome.result, after


def status(state: EnvState, tool: str, args: Any = None) -> str:
    return call(state, tool, args)[0].status


def amazon(api: str) -> str:
    return f"mcp_appworld_amazon__{api}"


# ---------------------------------------------------------------- names


def test_names_are_published_names_and_canonicalise_prefix_tolerantly() -> None:
    names = TOOLS.names()
    assert {"read_file", "grep", "ask_user", "schedule_task", amazon("place_order")} <= names
    for app in ("amazon", "gmail", "phone", "simple_note", "splitwise", "spotify", "todoist", "file_system"):
        assert any(n.startswith(f"mcp_appworld_{app}__") for n in names), app
    for spelling in (
        "amazon__place_order",
        "appworld_amazon__place_order",
        "mcp_appworld_amazon__place_order",
        "mcp_amazon__place_order",
        " MCP_AppWorld_Amazon__Place_Order ",
    ):
        assert canonical_tool_name(spelling) == amazon("place_order")
    assert canonical_tool_name("read_file") == "read_file"
    assert canonical_tool_name("amazon__teleport") is None
    assert canonical_tool_name("mcp_read_file") is None
    assert all(canonical_tool_name(n) == n for n in names)


def test_a_short_name_calls_the_tool_and_the_outcome_carries_both_names() -> None:
    outcome, _ = call(new_state(), "amazon__show_product", {"product_id": 1578})
    assert outcome.status == "ok"
    assert outcome.tool == amazon("show_product")
    assert outcome.requested == "amazon__show_product"


def test_tool_list_offers_allowed_tools_as_functions_named_by_published_name() -> None:
    listed = TOOLS.tool_list()
    assert listed.registry == "episode"
    assert set(listed.allowed) == TOOLS.names()
    fn_names = {f["function"]["name"] for f in listed.functions}
    assert fn_names == TOOLS.names()
    place = next(f for f in listed.functions if f["function"]["name"] == amazon("place_order"))
    assert place["type"] == "function"
    assert set(place["function"]["parameters"]["required"]) == {"payment_card_id", "address_id"}

    narrowed = TOOLS.tool_list(ProbePolicy(deny=("mcp_appworld_amazon__*",)))
    assert amazon("place_order") not in narrowed.allowed
    assert all(not f["function"]["name"].startswith("mcp_appworld_amazon") for f in narrowed.functions)
    assert len(narrowed.specs) == len(listed.specs)  # every tool is described, allowed or not


# ---------------------------------------------------------------- registry statuses


def test_unknown_tool_suggests_a_close_name() -> None:
    outcome, _ = call(new_state(), "amazon__place_ordr", {})
    assert outcome.status == "unknown_tool"
    assert outcome.error is not None and amazon("place_order") in outcome.error


def test_policy_denial_runs_nothing_and_is_audited() -> None:
    state = new_state()
    state = ok(state, amazon("add_product_to_cart"), {"product_id": 1578})[1]
    tools = EpisodeTools(ProbePolicy(deny=("*place_order",)))
    outcome, after = call(state, "amazon__place_order", {"payment_card_id": 1, "address_id": 1}, tools=tools)
    assert outcome.status == "denied"
    assert after is state and state_value(after, "apps.amazon.cart.1578.quantity") == 1
    assert outcome.audit.status == "denied" and "place_order" in (outcome.audit.error or "")
    # A denied call is never validated: bad arguments are still reported as denied.
    assert call(state, amazon("place_order"), {"bogus": 1}, tools=tools)[0].status == "denied"
    # A per-call policy narrows the registry's own.
    narrowed = call(
        state, "write_file", {"path": "a.md", "content": "x"}, policy=ProbePolicy(allow=("read_*",))
    )
    assert narrowed[0].status == "denied"


def test_invalid_arguments_are_reported_not_raised() -> None:
    state = new_state()
    assert status(state, amazon("show_product"), {"product_id": "abc"}) == "invalid_args"
    assert status(state, amazon("show_product"), {}) == "invalid_args"
    assert status(state, amazon("show_product"), {"product_id": 1578, "colour": "red"}) == "invalid_args"
    assert status(state, amazon("show_product"), ["not", "an", "object"]) == "invalid_args"
    assert status(state, amazon("search_products"), {"query": "mug", "max_price": math.nan}) == "invalid_args"
    assert status(state, amazon("show_product"), {"product_id": 2**70}) == "invalid_args"
    outcome, _ = call(state, amazon("add_product_to_cart"), {"product_id": 1578, "quantity": 0})
    assert outcome.status == "invalid_args" and "quantity" in (outcome.error or "")


# ---------------------------------------------------------------- amazon


def test_amazon_shopping_path_matches_the_paper_record_shape() -> None:
    state = new_state()
    found, _ = ok(state, amazon("search_products"), {"query": "coffee dripper"})
    assert found["products"][0]["product_id"] == 1578
    cheap, _ = ok(state, amazon("search_products"), {"query": "coffee", "max_price": 10})
    assert [p["product_id"] for p in cheap["products"]] == [1579]

    added, state = ok(state, amazon("add_product_to_cart"), {"product_id": 1578, "quantity": 2})
    assert added["quantity"] == 2
    cart, _ = ok(state, amazon("show_cart"))
    assert cart["total"] == 37.5
    cards, _ = ok(state, amazon("show_payment_cards"))
    addresses, _ = ok(state, amazon("show_addresses"))
    card_id = cards["payment_cards"][0]["payment_card_id"]
    address_id = addresses["addresses"][0]["address_id"]

    placed, state = ok(state, amazon("place_order"), {"payment_card_id": card_id, "address_id": address_id})
    assert placed == {
        "order_id": 901,
        "order_items": [{"product_id": 1578, "ordered_quantity": 2}],
        "total": 37.5,
    }
    shown, _ = ok(state, amazon("show_order"), {"order_id": 901})
    assert shown["order_id"] == 901
    assert shown["order_items"][0]["product_id"] == 1578 and shown["order_items"][0]["ordered_quantity"] == 2
    assert ok(state, amazon("show_cart"))[0]["cart_items"] == []
    assert state_value(state, "apps.amazon.products.1578.stock") == 28
    _, state = ok(state, amazon("add_product_to_cart"), {"product_id": 1579})
    again, state = ok(state, amazon("place_order"), {"payment_card_id": 2, "address_id": 2})
    assert again["order_id"] == 902
    assert [o["order_id"] for o in ok(state, amazon("show_orders"))[0]["orders"]] == [901, 902]


def test_amazon_failures() -> None:
    state = new_state()
    assert status(state, amazon("show_product"), {"product_id": 4}) == "not_found"
    assert status(state, amazon("show_order"), {"order_id": 901}) == "not_found"
    assert status(state, amazon("place_order"), {"payment_card_id": 1, "address_id": 1}) == "failed"
    assert status(state, amazon("remove_product_from_cart"), {"product_id": 1578}) == "failed"
    assert status(state, amazon("add_product_to_cart"), {"product_id": 1580, "quantity": 11}) == "failed"
    _, state = ok(state, amazon("add_product_to_cart"), {"product_id": 1578})
    assert status(state, amazon("place_order"), {"payment_card_id": 99, "address_id": 1}) == "not_found"
    assert status(state, amazon("place_order"), {"payment_card_id": 1, "address_id": 99}) == "not_found"
    _, state = ok(state, amazon("remove_product_from_cart"), {"product_id": 1578})
    assert state_value(state, "apps.amazon.cart") == []


# ---------------------------------------------------------------- gmail, phone, notes


def test_gmail_send_reply_draft_search() -> None:
    state = new_state()
    inbox, _ = ok(state, "mcp_appworld_gmail__show_inbox")
    assert [e["email_id"] for e in inbox["emails"]] == [3, 2, 1]  # newest first
    sent, state = ok(
        state,
        "gmail__send_email",
        {
            "to": "priya.shah@example.com",
            "subject": "Budget figures",
            "body": "Attached.",
            "cc": ["sam.lee@example.com"],
        },
    )
    email = state_value(state, f"apps.gmail.emails.{sent['email_id']}")
    assert email["folder"] == "sent" and email["to"] == ["priya.shah@example.com"]
    assert email["cc"] == ["sam.lee@example.com"] and email["sender"] == "alex.morgan@example.com"
    replied, state = ok(state, "gmail__reply_to_email", {"email_id": 3, "body": "Yes, book it."})
    reply = state_value(state, f"apps.gmail.emails.{replied['email_id']}")
    assert reply["to"] == ["sam.lee@example.com"] and reply["subject"] == "Re: Team lunch on Thursday"
    assert reply["in_reply_to"] == 3
    draft, state = ok(
        state, "gmail__create_draft", {"to": ["jordan.morgan@example.com"], "subject": "Sunday"}
    )
    assert state_value(state, f"apps.gmail.emails.{draft['email_id']}.folder") == "drafts"
    found, _ = ok(state, "gmail__search_emails", {"query": "budget"})
    assert {e["email_id"] for e in found["emails"]} == {1, sent["email_id"]}
    assert ok(state, "gmail__show_email", {"email_id": 2})[0]["subject"] == "Your reserved book is ready"

    assert status(state, "gmail__send_email", {"to": "priya", "subject": "x", "body": "y"}) == "invalid_args"
    assert status(state, "gmail__send_email", {"to": [], "subject": "x", "body": "y"}) == "invalid_args"
    assert status(state, "gmail__reply_to_email", {"email_id": 77, "body": "y"}) == "not_found"
    assert status(state, "gmail__show_email", {"email_id": 77}) == "not_found"


def test_phone_texts_by_number_or_contact_name() -> None:
    state = new_state()
    contacts, _ = ok(state, "phone__search_contacts", {"query": "sam"})
    assert [c["name"] for c in contacts["contacts"]] == ["Sam Lee"]
    by_name, state = ok(
        state, "phone__send_text_message", {"contact_name": "jordan", "message": "Yes, 6 pm."}
    )
    assert by_name["phone_number"] == "+1-555-0103" and by_name["contact_name"] == "Jordan Morgan"
    by_number, state = ok(state, "phone__send_text_message", {"phone_number": "+1 555 0102", "message": "Hi"})
    assert by_number["contact_name"] == "Sam Lee"
    thread, _ = ok(state, "phone__show_text_messages", {"contact": "Jordan Morgan"})
    assert [m["direction"] for m in thread["text_messages"]] == ["received", "sent"]

    assert status(state, "phone__send_text_message", {"contact_name": "Zed", "message": "x"}) == "not_found"
    assert status(state, "phone__send_text_message", {"message": "x"}) == "invalid_args"
    both = {"contact_name": "Sam Lee", "phone_number": "+15550102", "message": "x"}
    assert status(state, "phone__send_text_message", both) == "invalid_args"
    assert (
        status(state, "phone__send_text_message", {"phone_number": "call me", "message": "x"})
        == "invalid_args"
    )
    twins = merge_app_state(
        state,
        {"phone": {"contacts": [{"contact_id": 9, "name": "Sam Ortiz", "phone_number": "+1-555-0199"}]}},
    )
    assert status(twins, "phone__send_text_message", {"contact_name": "sam", "message": "x"}) == "failed"


def test_simple_note_lifecycle() -> None:
    state = new_state()
    created, state = ok(
        state, "simple_note__create_note", {"title": "Trip", "content": "Pack boots", "tags": ["lake"]}
    )
    note_id = created["note_id"]
    assert note_id == 3
    _, state = ok(state, "simple_note__update_note", {"note_id": note_id, "content": "Pack boots and a tent"})
    assert ok(state, "simple_note__show_note", {"note_id": note_id})[0]["content"] == "Pack boots and a tent"
    assert [n["note_id"] for n in ok(state, "simple_note__search_notes", {"query": "lake"})[0]["notes"]] == [
        note_id
    ]
    _, state = ok(state, "simple_note__delete_note", {"note_id": note_id})
    assert status(state, "simple_note__show_note", {"note_id": note_id}) == "not_found"
    assert status(state, "simple_note__update_note", {"note_id": 1}) == "invalid_args"
    assert status(state, "simple_note__delete_note", {"note_id": 42}) == "not_found"


# ---------------------------------------------------------------- splitwise, spotify, todoist


def test_splitwise_expenses_and_balances() -> None:
    state = new_state()
    recorded, state = ok(
        state,
        "splitwise__record_expense",
        {"group_id": 1, "description": "Groceries", "amount": 100, "paid_by": "alex morgan"},
    )
    assert recorded["shares"] == {"Alex Morgan": 33.34, "Chris Okafor": 33.33, "Sam Lee": 33.33}
    balances, _ = ok(state, "splitwise__show_group_balances", {"group_id": 1})
    by_member = {b["member"]: b["balance"] for b in balances["balances"]}
    # Internet 60 paid by Chris (20 each) and groceries 100 paid by Alex.
    assert by_member == {"Alex Morgan": 46.66, "Chris Okafor": 6.67, "Sam Lee": -53.33}
    assert math.isclose(sum(by_member.values()), 0.0, abs_tol=0.011)
    assert len(ok(state, "splitwise__show_expenses", {"group_id": 1})[0]["expenses"]) == 2
    assert len(ok(state, "splitwise__show_groups")[0]["groups"]) == 2

    bad_payer = {"group_id": 2, "description": "Fuel", "amount": 40, "paid_by": "Sam Lee"}
    assert status(state, "splitwise__record_expense", bad_payer) == "failed"
    no_group = {"group_id": 9, "description": "Fuel", "amount": 40, "paid_by": "Sam Lee"}
    assert status(state, "splitwise__record_expense", no_group) == "not_found"
    negative = {"group_id": 1, "description": "Fuel", "amount": -5, "paid_by": "Sam Lee"}
    assert status(state, "splitwise__record_expense", negative) == "invalid_args"


def test_spotify_playlists_and_player() -> None:
    state = new_state()
    found, _ = ok(state, "spotify__search_songs", {"query": "low harbors"})
    assert [s["song_id"] for s in found["songs"]] == [1, 3]
    created, state = ok(state, "spotify__create_playlist", {"title": "Focus"})
    playlist_id = created["playlist_id"]
    _, state = ok(state, "spotify__add_song_to_playlist", {"playlist_id": playlist_id, "song_id": 7})
    shown, _ = ok(state, "spotify__show_playlist", {"playlist_id": playlist_id})
    assert [s["title"] for s in shown["songs"]] == ["Focus Garden"]
    assert (
        status(state, "spotify__add_song_to_playlist", {"playlist_id": playlist_id, "song_id": 7}) == "failed"
    )
    assert (
        status(state, "spotify__add_song_to_playlist", {"playlist_id": playlist_id, "song_id": 70})
        == "not_found"
    )
    _, state = ok(state, "spotify__play_music", {"song_id": 4})
    assert state_value(state, "apps.spotify.player.song_id") == 4
    assert len(ok(state, "spotify__show_playlists")[0]["playlists"]) == 2


def test_todoist_tasks_and_projects() -> None:
    state = new_state()
    project, state = ok(state, "todoist__create_project", {"name": "Garden"})
    created, state = ok(
        state,
        "todoist__create_task",
        {
            "content": "Order seed potatoes",
            "project_id": project["project_id"],
            "due_date": "2025-03-01",
            "priority": 3,
        },
    )
    task_id = created["task_id"]
    _, state = ok(state, "todoist__update_task", {"task_id": task_id, "completed": True})
    assert state_value(state, f"apps.todoist.tasks.{task_id}.completed") is True
    assert [t["task_id"] for t in ok(state, "todoist__search_tasks", {"query": "potatoes"})[0]["tasks"]] == [
        task_id
    ]
    inbox, state = ok(state, "todoist__create_task", {"content": "Call the plumber"})
    assert inbox["project_id"] == 1
    _, state = ok(
        state, "todoist__update_project", {"project_id": project["project_id"], "name": "Allotment"}
    )
    counts = {p["name"]: p["open_tasks"] for p in ok(state, "todoist__show_projects")[0]["projects"]}
    assert counts == {"Inbox": 1, "Home": 1, "Work": 1, "Allotment": 0}
    deleted, state = ok(state, "todoist__delete_project", {"project_id": project["project_id"]})
    assert deleted["deleted_task_ids"] == [task_id]
    _, state = ok(state, "todoist__delete_task", {"task_id": inbox["task_id"]})

    assert status(state, "todoist__create_project", {"name": "home"}) == "failed"
    assert status(state, "todoist__create_task", {"content": "x", "due_date": "next week"}) == "invalid_args"
    assert status(state, "todoist__create_task", {"content": "x", "priority": 5}) == "invalid_args"
    assert status(state, "todoist__create_task", {"content": "x", "project_id": 99}) == "not_found"
    assert status(state, "todoist__update_task", {"task_id": 1}) == "invalid_args"
    assert status(state, "todoist__delete_task", {"task_id": task_id}) == "not_found"


# ---------------------------------------------------------------- workspace and file_system


def test_workspace_files() -> None:
    state = new_state()
    written, state = ok(
        state, "write_file", {"path": "./notes//plan.md", "content": "alpha\nbeta\nalpha beta\n"}
    )
    assert written == {"path": "notes/plan.md", "chars": 22, "created": True}
    assert ok(state, "read_file", {"path": "notes/plan.md"})[0]["content"].startswith("alpha")
    _, state = ok(
        state, "edit_file", {"path": "notes/plan.md", "old_text": "\nbeta\n", "new_text": "\ngamma\n"}
    )
    assert state.files["notes/plan.md"] == "alpha\ngamma\nalpha beta\n"
    assert (
        status(state, "edit_file", {"path": "notes/plan.md", "old_text": "alpha", "new_text": "x"})
        == "failed"
    )
    assert (
        status(state, "edit_file", {"path": "notes/plan.md", "old_text": "delta", "new_text": "x"})
        == "failed"
    )
    _, state = ok(state, "write_file", {"path": "data/2025/sales.csv", "content": "a,b\n"})
    assert ok(state, "list_dir", {})[0]["entries"] == [
        {"name": "data", "type": "dir"},
        {"name": "notes", "type": "dir"},
    ]
    assert ok(state, "list_dir", {"path": "data"})[0]["entries"] == [{"name": "2025", "type": "dir"}]
    assert ok(state, "glob", {"pattern": "**/*.csv"})[0]["matches"] == ["data/2025/sales.csv"]
    assert ok(state, "glob", {"pattern": "*/*.md"})[0]["matches"] == ["notes/plan.md"]
    assert ok(state, "glob", {"pattern": "*.md"})[0]["matches"] == []
    grep, _ = ok(state, "grep", {"pattern": r"^alpha\b", "path": "notes"})
    assert [(m["path"], m["line"]) for m in grep["matches"]] == [("notes/plan.md", 1), ("notes/plan.md", 3)]
    assert ok(state, "grep", {"pattern": "ALPHA", "ignore_case": True})[0]["matches"][0]["line"] == 1

    assert status(state, "read_file", {"path": "missing.md"}) == "not_found"
    assert status(state, "read_file", {"path": "notes"}) == "failed"
    assert status(state, "list_dir", {"path": "nowhere"}) == "not_found"
    assert status(state, "grep", {"pattern": "[unclosed"}) == "invalid_args"
    assert status(state, "grep", {"pattern": "x", "path": "nowhere"}) == "not_found"
    for bad in ("../secret", "/etc/passwd", "a/../../b", "C:\\x", "~/x", "."):
        assert status(state, "read_file", {"path": bad}) == "invalid_args", bad
    assert status(state, "glob", {"pattern": "../*"}) == "invalid_args"
    assert status(state, "write_file", {"path": "notes", "content": "x"}) == "failed"
    assert status(state, "write_file", {"path": "notes/plan.md/x", "content": "x"}) == "failed"


def test_file_system_app_uses_the_workspace() -> None:
    state = new_state()
    _, state = ok(state, "file_system__create_file", {"path": "todo.txt", "content": "milk"})
    assert status(state, "file_system__create_file", {"path": "todo.txt", "content": "x"}) == "failed"
    _, state = ok(state, "file_system__update_file", {"path": "todo.txt", "content": "eggs"})
    assert ok(state, "read_file", {"path": "todo.txt"})[0]["content"] == "eggs"
    assert ok(state, "file_system__show_directory", {"path": "."})[0]["entries"] == [
        {"name": "todo.txt", "type": "file"}
    ]
    _, state = ok(state, "file_system__delete_file", {"path": "todo.txt"})
    assert status(state, "file_system__show_file", {"path": "todo.txt"}) == "not_found"
    assert status(state, "file_system__update_file", {"path": "new.txt", "content": "x"}) == "not_found"


# ---------------------------------------------------------------- assistant tools


def test_ask_send_and_schedule_are_recorded_on_the_virtual_clock() -> None:
    state = new_state().model_copy(update={"clock": 90.0, "task_id": "t1"})
    _, state = ok(state, "ask_user", {"question": "Which deadline should the report meet?"})
    assert state.questions == [
        {
            "question": "Which deadline should the report meet?",
            "task_id": "t1",
            "at": 90.0,
            "asker": "assistant.ep1",
        }
    ]
    _, state = ok(state, "send_message", {"to": "Priya", "text": "Figures attached"})
    assert state.outbox[0]["to"] == "Priya" and state.outbox[0]["sender"] == "assistant.ep1"
    first, state = ok(state, "schedule_task", {"text": "Check the order arrived", "in_minutes": 30})
    second, state = ok(state, "schedule_task", {"text": "Weekly review", "at_minutes": 1440})
    assert (first["id"], first["at"]) == (1, 120.0) and (second["id"], second["at"]) == (2, 1440.0)
    assert state_value(state, "scheduled.2.status") == "pending"
    assert status(state, "schedule_task", {"text": "late", "at_minutes": 10}) == "failed"
    assert (
        status(state, "schedule_task", {"text": "both", "at_minutes": 100, "in_minutes": 5}) == "invalid_args"
    )
    assert status(state, "schedule_task", {"text": "neither"}) == "invalid_args"


# ---------------------------------------------------------------- seed, merge, diff, lookup


def test_new_state_merges_seed_apps_by_record_id() -> None:
    seeded = new_state(
        {
            "amazon": {
                "products": [
                    {"product_id": 1578, "name": "Travel Mug", "price": 12.0, "stock": 5},
                    {"product_id": 2001, "name": "Kettle", "price": 40.0, "stock": 2},
                ]
            },
            "weather": {"forecast": [{"forecast_id": 1, "summary": "rain"}]},
        }
    )
    products = seeded.apps["amazon"]["products"]
    ids = [p["product_id"] for p in products]
    assert ids.index(1578) == 7 and ids[-1] == 2001  # replaced in place, new ones appended
    assert state_value(seeded, "apps.amazon.products.1578.name") == "Travel Mug"
    assert state_value(seeded, "apps.weather.forecast.1.summary") == "rain"
    assert len(seeded.apps["amazon"]["payment_cards"]) == 2  # untouched collections stay
    assert new_state().apps["amazon"]["products"][7]["name"] == "Ceramic Pour-Over Coffee Dripper"


def test_merged_records_do_not_collide_with_allocated_ids() -> None:
    state = merge_app_state(
        new_state(), {"simple_note": {"notes": [{"note_id": 40, "title": "t", "content": "c"}]}}
    )
    created, _ = ok(state, "simple_note__create_note", {"title": "n", "content": "c"})
    assert created["note_id"] == 41
    orders = merge_app_state(new_state(), {"amazon": {"orders": [{"order_id": 950, "order_items": []}]}})
    _, orders = ok(orders, amazon("add_product_to_cart"), {"product_id": 1571})
    assert ok(orders, amazon("place_order"), {"payment_card_id": 1, "address_id": 1})[0]["order_id"] == 951


def test_merge_is_pure_and_refuses_non_json() -> None:
    base = new_state()
    before = base.model_dump()
    merged = merge_app_state(base, {"amazon": {"cart": [{"product_id": 1571, "quantity": 1}]}})
    assert base.model_dump() == before and merged.apps["amazon"]["cart"] == [
        {"product_id": 1571, "quantity": 1}
    ]
    with pytest.raises(ValueError, match="amazon"):
        merge_app_state(base, {"amazon": {"products": [{"product_id": 1, "price": math.inf}]}})
    with pytest.raises(ValueError):
        merge_app_state(base, {"amazon": ["not", "collections"]})


def test_state_diff_paths_are_sorted_and_wrapped() -> None:
    before = new_state()
    after = before
    _, after = ok(after, "write_file", {"path": "report.v2.md", "content": "done"})
    _, after = ok(after, amazon("add_product_to_cart"), {"product_id": 1578, "quantity": 2})
    _, after = ok(after, amazon("place_order"), {"payment_card_id": 1, "address_id": 1})
    _, after = ok(after, "simple_note__delete_note", {"note_id": 2})
    _, after = ok(after, "send_message", {"to": "Sam", "text": "Ordered"})
    _, after = ok(after, "schedule_task", {"text": "Track parcel", "in_minutes": 60})
    _, after = ok(after, "ask_user", {"question": "Gift wrap?"})
    changes = state_diff(before, after)
    paths = [c.path for c in changes]
    assert paths == sorted(paths)
    assert paths == [
        "apps.amazon.orders.901",
        "apps.amazon.products.1578",
        "apps.simple_note.notes.2",
        "files.report.v2.md",
        "outbox.0",
        "questions.0",
        "scheduled.1",
    ]
    by_path = {c.path: c for c in changes}
    assert by_path["files.report.v2.md"].kind == "added" and by_path["files.report.v2.md"].after == {
        "value": "done"
    }
    assert (
        by_path["apps.simple_note.notes.2"].kind == "removed"
        and by_path["apps.simple_note.notes.2"].after is None
    )
    stock = by_path["apps.amazon.products.1578"]
    assert stock.kind == "changed" and stock.before is not None and stock.after is not None
    assert stock.before["value"]["stock"] - stock.after["value"]["stock"] == 2
    assert state_diff(after, after) == []
    # The clock and the session are not state changes.
    assert state_diff(before, before.model_copy(update={"clock": 5.0, "task_id": "t9"})) == []


def test_state_diff_of_a_whole_app_lists_its_records_and_other_values() -> None:
    before = new_state()
    after = merge_app_state(before, {"calendar": {"events": [{"event_id": 1}], "owner": "Alex"}})
    assert [(c.path, c.kind) for c in state_diff(before, after)] == [
        ("apps.calendar.events.1", "added"),
        ("apps.calendar.owner", "added"),
    ]
    _, played = ok(before, "spotify__play_music", {"song_id": 2})
    [change] = state_diff(before, played)
    assert change.path == "apps.spotify.player" and change.before == {"value": None}


def test_state_value_walks_records_by_id_and_raises_key_error() -> None:
    state = new_state()
    _, state = ok(state, "write_file", {"path": "out/a.b.md", "content": "x"})
    assert state_value(state, "files.out/a.b.md") == "x"
    assert state_value(state, "apps.amazon.payment_cards.2.last_four") == "7730"
    assert state_value(state, "apps.gmail.account.email") == "alex.morgan@example.com"
    assert state_value(state, "clock") == 0.0
    for missing in (
        "files.nope.md",
        "apps.amazon.products.1",
        "apps.nope",
        "apps.amazon.products.0",
        "outbox.0",
    ):
        with pytest.raises(KeyError):
            state_value(state, missing)
