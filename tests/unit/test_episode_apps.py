"""The episode's tool registry: published names, the tools a persona is offered, statuses and
refusals, policy, the workspace (binary assets included), the assistant's tools, seeding, merge,
diff and lookup. Each app's own behaviour is tested in ``test_app_<app>.py``."""

from __future__ import annotations

import base64
import copy
import math
from typing import Any

import pytest

from messages.probes import ProbeOutcome, ProbePolicy
from tests.support.apps import seeded
from world.episodes.apps import (
    ALL_TOOLS,
    APPS,
    EnvState,
    EpisodeTools,
    canonical_tool_name,
    merge_app_state,
    new_state,
    state_diff,
    state_value,
)
from world.episodes.apps.base import AppApis, AuthArgs, ToolContext, id_field, logout_tool
from world.episodes.apps.seed import WorldSeed, seed_apps, unknown_password

TOOLS = EpisodeTools()
ALEX = "alex@example.com"
SEED: dict[str, Any] = {
    "start_time": "2025-05-05T09:00:00",
    "people": [
        {
            "first_name": "Alex",
            "last_name": "Morgan",
            "email": ALEX,
            "accounts": {"amazon": "amz-pw", "simple_note": "note-pw", "gmail": "mail-pw"},
        },
        {"first_name": "Sam", "last_name": "Lee", "email": "sam@example.com", "accounts": ["gmail"]},
    ],
    "apps": {
        "amazon": {
            "products": [
                {
                    "product_id": 1578,
                    "seller_id": 1,
                    "product_type": "coffee dripper",
                    "name": "Ceramic Dripper",
                    "price": 18.75,
                    "inventory_quantity": 30,
                    "delivery_days": 2,
                },
                {
                    "product_id": 1579,
                    "seller_id": 1,
                    "product_type": "mug",
                    "name": "Travel Mug",
                    "price": 12.0,
                    "inventory_quantity": 1,
                    "delivery_days": 3,
                },
            ],
            "payment_cards": [
                {
                    "payment_card_id": 1,
                    "user_id": 1,
                    "card_name": "Visa",
                    "owner_name": "Alex Morgan",
                    "card_number": 4716285903317730,
                    "expiry_year": 2028,
                    "expiry_month": 6,
                    "cvv_number": 381,
                    "balance": 200.0,
                },
            ],
            "addresses": [
                {
                    "address_id": 1,
                    "user_id": 1,
                    "name": "Home",
                    "street_address": "1 Elm St",
                    "city": "Portland",
                    "state": "OR",
                    "country": "USA",
                    "zip_code": 97001,
                },
            ],
        },
        "simple_note": {
            "notes": [
                {
                    "note_id": 1,
                    "user_id": 1,
                    "title": "Groceries",
                    "content": "milk",
                    "tags": [],
                    "pinned": False,
                },
                {
                    "note_id": 2,
                    "user_id": 1,
                    "title": "Trip",
                    "content": "boots",
                    "tags": ["lake"],
                    "pinned": False,
                },
            ]
        },
    },
}
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"


def world() -> EnvState:
    return seeded(SEED)


def call(
    state: EnvState,
    tool: str,
    args: Any = None,
    *,
    policy: ProbePolicy | None = None,
    tools: EpisodeTools = TOOLS,
) -> tuple[ProbeOutcome, EnvState]:
    """One call, checking the contract every call keeps: the input state is never mutated, the
    state changes only on ``ok``, an app's refusal answers AppWorld's ``{"response": {"message"}}``,
    anything else that did not run has no result, and the audit mirrors the outcome."""
    before = copy.deepcopy(state.model_dump())
    outcome, after = tools.call(state, "assistant.ep1", tool, args, policy=policy)
    assert state.model_dump() == before, "the input state was mutated"
    if outcome.status != "ok":
        assert after is state
        assert outcome.error
        ran = outcome.status not in ("unknown_tool", "denied")
        if ran and outcome.tool.startswith("mcp_appworld_"):
            assert outcome.result is not None and set(outcome.result) == {"response"}
            assert set(outcome.result["response"]) == {"message"}
        else:
            assert outcome.result is None
    assert outcome.audit.registry == "episode"
    assert outcome.audit.status == outcome.status
    assert outcome.audit.caller == "assistant.ep1"
    assert outcome.audit.tool == outcome.tool
    assert outcome.audit.requested == tool
    return outcome, after


def ok(state: EnvState, tool: str, args: Any = None, *, tools: EpisodeTools = TOOLS) -> tuple[Any, EnvState]:
    """The response of a call that must succeed (an app's ``response``, a workspace tool's result)."""
    outcome, after = call(state, tool, args, tools=tools)
    assert outcome.status == "ok", outcome.error
    assert outcome.result is not None
    if outcome.tool.startswith("mcp_appworld_"):
        assert set(outcome.result) == {"response"}
        return outcome.result["response"], after
    return outcome.result, after


def status(state: EnvState, tool: str, args: Any = None, *, tools: EpisodeTools = TOOLS) -> str:
    return call(state, tool, args, tools=tools)[0].status


def login(state: EnvState, app: str = "amazon", password: str = "amz-pw") -> tuple[str, EnvState]:
    response, state = ok(state, f"{app}__login", {"username": ALEX, "password": password})
    token: str = response["access_token"]
    return token, state


def amazon(api: str) -> str:
    return f"mcp_appworld_amazon__{api}"


# ---------------------------------------------------------------- names


def test_names_are_published_names_and_canonicalise_prefix_tolerantly() -> None:
    names = TOOLS.names()
    assert {"read_file", "grep", "ask_user", "schedule_task", amazon("place_order")} <= names
    assert APPS == ("amazon", "gmail", "phone", "simple_note", "splitwise", "spotify", "todoist")
    for app in APPS:
        assert any(n.startswith(f"mcp_appworld_{app}__") for n in names), app
    assert not any("file_system" in n for n in names)  # AppWorld's alone now
    assert len(names) == len(ALL_TOOLS)  # no name is published twice
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
    assert canonical_tool_name("file_system__show_file") is None
    assert canonical_tool_name("mcp_read_file") is None
    assert all(canonical_tool_name(n) == n for n in names)
    app_tools = [t for t in ALL_TOOLS if t.app is not None]
    assert all(t.name == f"mcp_appworld_{t.api}" and t.api.startswith(f"{t.app}__") for t in app_tools)


class ThingArgs(AuthArgs):
    thing_id: int = id_field("The thing's id.")


def test_an_app_publishes_its_apis_in_order_under_their_function_names_and_argument_models() -> None:
    apis = AppApis("shop")
    apis.add(logout_tool("shop"))

    @apis.api("Show one thing.")
    def show_thing(ctx: ToolContext, args: ThingArgs) -> dict[str, Any]:
        return {"thing_id": args.thing_id}

    assert [t.name for t in apis.tools] == ["mcp_appworld_shop__logout", "mcp_appworld_shop__show_thing"]
    shown = apis.tools[1]
    assert (shown.api, shown.app, shown.description) == ("shop__show_thing", "shop", "Show one thing.")
    assert shown.args_model is ThingArgs and shown.run is show_thing


def test_a_short_name_calls_the_tool_and_the_outcome_carries_both_names() -> None:
    outcome, _ = call(world(), "amazon__show_product", {"product_id": 1578})
    assert outcome.status == "ok"
    assert outcome.tool == amazon("show_product") and outcome.requested == "amazon__show_product"
    assert outcome.result is not None and outcome.result["response"]["name"] == "Ceramic Dripper"


def test_tool_list_offers_allowed_tools_as_functions_named_by_published_name() -> None:
    listed = TOOLS.tool_list()
    assert listed.registry == "episode"
    assert set(listed.allowed) == TOOLS.names()
    fn_names = {f["function"]["name"] for f in listed.functions}
    assert fn_names == TOOLS.names()
    place = next(f for f in listed.functions if f["function"]["name"] == amazon("place_order"))
    assert place["type"] == "function"
    assert set(place["function"]["parameters"]["required"]) == {
        "access_token",
        "payment_card_id",
        "address_id",
    }

    narrowed = TOOLS.tool_list(ProbePolicy(deny=("mcp_appworld_amazon__*",)))
    assert amazon("place_order") not in narrowed.allowed
    assert all(not f["function"]["name"].startswith("mcp_appworld_amazon") for f in narrowed.functions)
    assert len(narrowed.specs) == len(listed.specs)  # every tool is described, allowed or not
    assert TOOLS.tool_list() is listed  # listed once per policy


# ---------------------------------------------------------------- the tools a persona is offered


OFFERED = [
    "amazon__login",
    "mcp_appworld_amazon__show_product",
    " Amazon__Place_Order ",
    "file_system__show_file",
]
"""A tools.yaml's names in any accepted spelling, one of them served by AppWorld alone."""


def test_offered_tools_are_the_personas_app_tools_and_every_workspace_tool() -> None:
    offered = EpisodeTools(offered=OFFERED)
    base = {"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "ask_user", "send_message"}
    assert offered.names() == {
        *base,
        "schedule_task",
        amazon("login"),
        amazon("show_product"),
        amazon("place_order"),
    }
    assert offered.unserved == ("mcp_appworld_file_system__show_file",)
    assert {f["function"]["name"] for f in offered.tool_list().functions} == offered.names()
    assert offered.resolve("amazon__show_cart") is None and offered.resolve("amazon__login") is not None
    assert EpisodeTools().unserved == () and EpisodeTools(offered=[]).names() == {*base, "schedule_task"}


def test_a_tool_the_persona_is_not_offered_is_unknown_and_never_runs() -> None:
    offered = EpisodeTools(offered=OFFERED)
    state = world()
    token, state = login(state)
    outcome, after = call(state, "amazon__show_cart", {"access_token": token}, tools=offered)
    assert outcome.status == "unknown_tool" and after is state and outcome.result is None
    assert outcome.error == "no tool 'amazon__show_cart' here: this episode does not offer it"
    assert outcome.tool == "amazon__show_cart"  # the requested name: no tool was resolved
    assert outcome.audit.status == "unknown_tool"
    # The same call runs where every tool is offered.
    assert status(state, "amazon__show_cart", {"access_token": token}) == "ok"
    # Offered ones run, in any spelling.
    assert ok(state, "mcp_amazon__show_product", {"product_id": 1579}, tools=offered)[0]["price"] == 12.0


def test_a_tool_only_appworld_serves_is_unknown_too() -> None:
    offered = EpisodeTools(offered=OFFERED)
    for spelling in ("file_system__show_file", "mcp_appworld_file_system__show_file"):
        outcome, _ = call(world(), spelling, {"file_path": "a.txt"}, tools=offered)
        assert outcome.status == "unknown_tool" and outcome.result is None
        assert outcome.error == f"no tool {spelling!r} here: AppWorld serves it, the built-in apps do not"
    # Not offered at all: just an unknown name.
    outcome, _ = call(world(), "file_system__show_file", {"file_path": "a.txt"})
    assert outcome.status == "unknown_tool" and "AppWorld serves it" not in (outcome.error or "")


def test_an_unknown_tool_suggests_close_offered_names_only() -> None:
    outcome, _ = call(world(), "amazon__place_ordr", {})
    assert outcome.status == "unknown_tool" and outcome.result is None
    assert (
        outcome.error is not None
        and "did you mean" in outcome.error
        and amazon("place_order") in outcome.error
    )
    narrow = EpisodeTools(offered=["amazon__login"])
    hidden = call(world(), "amazon__place_ordr", {}, tools=narrow)[0]
    assert hidden.error is not None and amazon("place_order") not in hidden.error
    far = call(world(), "teleport", {"to": "moon"})[0]
    assert far.error == f"no tool 'teleport' here; apps: {', '.join(APPS)}"


# ---------------------------------------------------------------- policy and arguments


def test_policy_denial_runs_nothing_and_is_audited() -> None:
    token, state = login(world())
    state = ok(state, amazon("add_product_to_cart"), {"access_token": token, "product_id": 1578})[1]
    tools = EpisodeTools(ProbePolicy(deny=("*place_order",)))
    args = {"access_token": token, "payment_card_id": 1, "address_id": 1}
    outcome, after = call(state, "amazon__place_order", args, tools=tools)
    assert outcome.status == "denied" and outcome.result is None
    assert after is state and "orders" not in after.apps["amazon"]
    assert [i["product_id"] for i in after.apps["amazon"]["cart_items"]] == [1578]
    assert outcome.audit.status == "denied" and "place_order" in (outcome.audit.error or "")
    # A denied call is never validated: bad arguments are still reported as denied.
    assert call(state, amazon("place_order"), {"bogus": 1}, tools=tools)[0].status == "denied"
    # A per-call policy narrows the registry's own.
    narrowed = call(
        state, "write_file", {"path": "a.md", "content": "x"}, policy=ProbePolicy(allow=("read_*",))
    )
    assert narrowed[0].status == "denied"
    assert status(state, "read_file", {"path": "a.md"}, tools=tools) == "not_found"  # allowed, ran


def test_invalid_arguments_are_reported_not_raised() -> None:
    state = world()
    assert status(state, amazon("show_product"), {"product_id": "abc"}) == "invalid_args"
    assert status(state, amazon("show_product"), {}) == "invalid_args"
    assert status(state, amazon("show_product"), ["not", "an", "object"]) == "invalid_args"
    assert status(state, amazon("search_products"), {"query": "mug", "max_price": math.nan}) == "invalid_args"
    assert status(state, amazon("show_product"), {"product_id": 2**70}) == "invalid_args"
    refused, _ = call(state, amazon("show_product"), {"product_id": "abc"})
    assert refused.result is not None
    assert refused.result["response"]["message"].startswith("Validation error. Reason: invalid arguments")
    # AppWorld ignores arguments an API does not take; our workspace tools refuse them.
    assert status(state, amazon("show_product"), {"product_id": 1578, "colour": "red"}) == "ok"
    assert status(state, "read_file", {"path": "a.md", "colour": "red"}) == "invalid_args"
    assert status(state, "read_file", {"path": object()}) == "invalid_args"  # not JSON at all


def test_an_apps_refusals_carry_appworlds_message_and_status() -> None:
    token, state = login(world())
    cases = [
        (amazon("show_order"), {"access_token": token, "order_id": 99}, "not_found",
         "The order with id 99 does not exist."),
        (amazon("show_cart"), {"access_token": "bogus"}, "unauthorized",
         "You are either not authorized to access this amazon API endpoint or your access token is missing,"
         " invalid or expired."),
        (amazon("place_order"), {"access_token": token, "payment_card_id": 1, "address_id": 1}, "failed",
         "The cart is empty, so can't place the order."),
        ("simple_note__show_note", {"access_token": token, "note_id": 1}, "unauthorized", None),
    ]  # fmt: skip
    for tool, args, expected, message in cases:
        outcome, _ = call(state, tool, args)
        assert outcome.status == expected, (tool, outcome)
        assert outcome.result is not None
        if message is not None:
            assert outcome.result == {"response": {"message": message}} and outcome.error == message
    # A token works only in its own app, and until logout.
    _, state = ok(state, amazon("logout"), {"access_token": token})
    assert status(state, amazon("show_cart"), {"access_token": token}) == "unauthorized"
    assert status(world(), amazon("login"), {"username": ALEX, "password": "wrong"}) == "unauthorized"


# ---------------------------------------------------------------- workspace


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


def with_binaries() -> EnvState:
    return new_state().model_copy(
        update={
            "files": {"skills/tips/SKILL.md": "# tips\nuse the icon\n"},
            "binaries": {
                "skills/tips/icon.png": base64.b64encode(PNG).decode(),
                "data/blob.bin": base64.b64encode(b"\x00icon\xff").decode(),
            },
        }
    )


def test_workspace_tools_see_binary_assets() -> None:
    state = with_binaries()
    read, _ = ok(state, "read_file", {"path": "skills/tips/icon.png"})
    assert read == {
        "path": "skills/tips/icon.png",
        "encoding": "base64",
        "content": base64.b64encode(PNG).decode(),
        "bytes": len(PNG),
    }
    assert base64.b64decode(read["content"]) == PNG
    assert ok(state, "list_dir", {"path": "skills/tips"})[0]["entries"] == [
        {"name": "SKILL.md", "type": "file"},
        {"name": "icon.png", "type": "file"},
    ]
    assert ok(state, "list_dir", {})[0]["entries"] == [
        {"name": "data", "type": "dir"},
        {"name": "skills", "type": "dir"},
    ]
    assert ok(state, "glob", {"pattern": "**/*.png"})[0]["matches"] == ["skills/tips/icon.png"]
    assert ok(state, "glob", {"pattern": "**"})[0]["matches"] == [
        "data/blob.bin",
        "skills/tips/SKILL.md",
        "skills/tips/icon.png",
    ]
    # grep searches text only: "icon" is in the blob's bytes, but a binary file is not searched.
    found = ok(state, "grep", {"pattern": "icon"})[0]["matches"]
    assert [(m["path"], m["line"]) for m in found] == [("skills/tips/SKILL.md", 2)]
    assert ok(state, "grep", {"pattern": "icon", "path": "data"})[0]["matches"] == []
    assert (
        status(state, "edit_file", {"path": "data/blob.bin", "old_text": "icon", "new_text": "x"}) == "failed"
    )
    assert status(state, "write_file", {"path": "data/blob.bin/x", "content": "x"}) == "failed"
    assert status(state, "write_file", {"path": "data", "content": "x"}) == "failed"


def test_writing_text_over_a_binary_file_replaces_it() -> None:
    state = with_binaries()
    written, after = ok(state, "write_file", {"path": "data/blob.bin", "content": "now text"})
    assert written == {"path": "data/blob.bin", "chars": 8, "created": False}
    assert "data/blob.bin" not in after.binaries and after.files["data/blob.bin"] == "now text"
    assert ok(after, "read_file", {"path": "data/blob.bin"})[0] == {
        "path": "data/blob.bin",
        "content": "now text",
    }
    changes = state_diff(state, after)
    assert [(c.path, c.kind) for c in changes] == [
        ("binaries.data/blob.bin", "removed"),
        ("files.data/blob.bin", "added"),
    ]


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


def test_a_world_is_seeded_from_its_people_and_their_records() -> None:
    state = world()
    assert new_state().apps == {}  # no app data unless a seed gives it
    assert state.start_time == "2025-05-05T09:00:00"
    assert [u["email"] for u in state.apps["gmail"]["users"]] == [ALEX, "sam@example.com"]
    assert [u["user_id"] for u in state.apps["gmail"]["users"]] == [1, 2]  # one id per person, every app
    assert [u["email"] for u in state.apps["amazon"]["users"]] == [ALEX]  # only who has an account
    assert state_value(state, "apps.gmail.users.2.password") == unknown_password("gmail", "sam@example.com")
    assert state_value(state, "apps.amazon.products.1579.name") == "Travel Mug"
    assert login(state, "simple_note", "note-pw")[0]
    apps = seed_apps(WorldSeed.model_validate(SEED))
    assert seed_apps(WorldSeed.model_validate(SEED)) == apps  # deterministic


def test_new_state_merges_seed_apps_by_record_id() -> None:
    base = seed_apps(WorldSeed.model_validate(SEED))
    more = {
        "amazon": {
            "products": [
                {"product_id": 1578, "name": "Travel Mug XL", "price": 14.0},
                {"product_id": 2001, "name": "Kettle", "price": 40.0},
            ]
        },
        "weather": {"forecasts": [{"forecast_id": 1, "summary": "rain"}]},
    }
    state = merge_app_state(new_state(base), more)
    ids = [p["product_id"] for p in state.apps["amazon"]["products"]]
    assert ids == [1578, 1579, 2001]  # replaced in place, new ones appended
    assert state_value(state, "apps.amazon.products.1578") == {
        "product_id": 1578,
        "name": "Travel Mug XL",
        "price": 14.0,
    }
    assert state_value(state, "apps.weather.forecasts.1.summary") == "rain"
    assert len(state.apps["amazon"]["payment_cards"]) == 1  # untouched collections stay


def test_merged_records_do_not_collide_with_allocated_ids() -> None:
    state = merge_app_state(
        world(), {"simple_note": {"notes": [{"note_id": 40, "user_id": 1, "title": "t", "content": "c"}]}}
    )
    token, state = login(state, "simple_note", "note-pw")
    created, _ = ok(state, "simple_note__create_note", {"access_token": token, "title": "n", "content": "c"})
    assert created["note_id"] == 41
    orders = merge_app_state(
        world(), {"amazon": {"orders": [{"order_id": 950, "user_id": 2, "order_items": []}]}}
    )
    token, orders = login(orders)
    _, orders = ok(orders, amazon("add_product_to_cart"), {"access_token": token, "product_id": 1579})
    placed, _ = ok(
        orders, amazon("place_order"), {"access_token": token, "payment_card_id": 1, "address_id": 1}
    )
    assert placed["order_id"] == 951


def test_merge_is_pure_and_refuses_non_json() -> None:
    base = world()
    before = base.model_dump()
    merged = merge_app_state(base, {"amazon": {"cart_items": [{"cart_item_id": 1, "product_id": 1579}]}})
    assert base.model_dump() == before
    assert merged.apps["amazon"]["cart_items"] == [{"cart_item_id": 1, "product_id": 1579}]
    with pytest.raises(ValueError, match="amazon"):
        merge_app_state(base, {"amazon": {"products": [{"product_id": 1, "price": math.inf}]}})
    with pytest.raises(ValueError):
        merge_app_state(base, {"amazon": ["not", "collections"]})


def test_state_diff_paths_are_sorted_and_wrapped() -> None:
    before = world()
    token, after = login(before)
    notes, after = login(after, "simple_note", "note-pw")
    _, after = ok(after, "write_file", {"path": "report.v2.md", "content": "done"})
    _, after = ok(
        after, amazon("add_product_to_cart"), {"access_token": token, "product_id": 1578, "quantity": 2}
    )
    _, after = ok(
        after, amazon("place_order"), {"access_token": token, "payment_card_id": 1, "address_id": 1}
    )
    _, after = ok(after, "simple_note__delete_note", {"access_token": notes, "note_id": 2})
    _, after = ok(after, "send_message", {"to": "Sam", "text": "Ordered"})
    _, after = ok(after, "schedule_task", {"text": "Track parcel", "in_minutes": 60})
    _, after = ok(after, "ask_user", {"question": "Gift wrap?"})
    changes = state_diff(before, after)
    paths = [c.path for c in changes]
    # Tokens, login times and id counters are bookkeeping; a cart filled and emptied is no change.
    assert paths == [
        "apps.amazon.orders.1",
        "apps.amazon.payment_cards.1",
        "apps.amazon.products.1578",
        "apps.simple_note.notes.2",
        "files.report.v2.md",
        "outbox.0",
        "questions.0",
        "scheduled.1",
    ]
    by_path = {c.path: c for c in changes}
    assert by_path["files.report.v2.md"].kind == "added"
    assert by_path["files.report.v2.md"].after == {"value": "done"}
    assert by_path["apps.simple_note.notes.2"].kind == "removed"
    assert by_path["apps.simple_note.notes.2"].after is None
    stock = by_path["apps.amazon.products.1578"]
    assert stock.kind == "changed" and stock.before is not None and stock.after is not None
    assert stock.before["value"]["inventory_quantity"] - stock.after["value"]["inventory_quantity"] == 2
    card = by_path["apps.amazon.payment_cards.1"]
    assert card.before is not None and card.after is not None
    assert card.before["value"]["balance"] - card.after["value"]["balance"] == pytest.approx(46.25)
    assert state_diff(after, after) == []
    # The clock and the session are not state changes; a login alone is none either.
    assert state_diff(before, before.model_copy(update={"clock": 5.0, "task_id": "t9"})) == []
    assert state_diff(before, login(before)[1]) == []


def test_state_diff_of_a_whole_app_and_of_binary_files() -> None:
    before = world()
    after = merge_app_state(before, {"calendar": {"events": [{"event_id": 1}], "owner": "Alex"}})
    assert [(c.path, c.kind) for c in state_diff(before, after)] == [
        ("apps.calendar.events.1", "added"),
        ("apps.calendar.owner", "added"),
    ]
    blob = base64.b64encode(PNG).decode()
    with_png = before.model_copy(update={"binaries": {"icon.png": blob}})
    (added,) = state_diff(before, with_png)
    assert added.path == "binaries.icon.png" and added.kind == "added"
    assert added.after is not None and len(added.after["value"]) == 16 and added.after["value"] != blob
    changed = with_png.model_copy(update={"binaries": {"icon.png": base64.b64encode(PNG + b"!").decode()}})
    assert [(c.path, c.kind) for c in state_diff(with_png, changed)] == [("binaries.icon.png", "changed")]


def test_state_value_walks_records_by_id_and_raises_key_error() -> None:
    state = world()
    _, state = ok(state, "write_file", {"path": "out/a.b.md", "content": "x"})
    assert state_value(state, "files.out/a.b.md") == "x"
    assert state_value(state, "apps.amazon.payment_cards.1.card_number") == 4716285903317730
    assert state_value(state, "apps.simple_note.notes.2.tags.0") == "lake"
    assert state_value(state, "clock") == 0.0
    for missing in (
        "files.nope.md",
        "apps.amazon.products.1",
        "apps.nope",
        "apps.amazon.products.0",  # a keyed collection is addressed by id, never by position
        "outbox.0",
    ):
        with pytest.raises(KeyError):
            state_value(state, missing)
