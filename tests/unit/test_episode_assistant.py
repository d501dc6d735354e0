"""The built-in assistant's offline policy, memory and IntentFrame step, against a small in-memory
tool environment of the test's own (workspace files, a shop, contacts, a mailbox, a task list)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from messages.episodes import SessionTrigger, ToolRecord, TurnRecord, UserTurn
from messages.probes import ToolList
from world.aura import budget_for_gap
from world.episodes.assistant import (
    AssistantMemory,
    MemoryNote,
    OfflineAssistant,
    consolidate,
    deliverable_kinds,
    relevant_notes,
)


class NotFound(Exception):
    pass


class FakeTools:
    """A real, tiny episode environment: calls change its state and answer like the registry."""

    def __init__(self, files: Mapping[str, str] | None = None, *, deny: tuple[str, ...] = ()) -> None:
        self.files = dict(files or {})
        self.products = [
            {"product_id": 11, "name": "Ceramic mug", "price": 9.5},
            {"product_id": 12, "name": "Coffee beans dark roast 1kg", "price": 18.0},
            {"product_id": 13, "name": "Coffee beans premium 1kg", "price": 42.0},
        ]
        self.cards = [{"payment_card_id": 7, "card_name": "Visa ending 4242"}]
        self.addresses = [{"address_id": 3, "name": "Home"}]
        self.contacts = [
            {"contact_id": 1, "name": "Dana Reyes", "email": "dana@example.com", "phone_number": "555-0101"}
        ]
        self.texts: list[dict[str, Any]] = []
        self.cart: dict[int, int] = {}
        self.orders: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []
        self.tasks: list[dict[str, Any]] = []
        self.calls: list[str] = []
        handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "read_file": self._read,
            "write_file": self._write,
            "grep": self._grep,
            "glob": self._glob,
            "ask_user": lambda a: {"recorded": True, "question": a["question"]},
            "schedule_task": lambda a: {"id": 1, "text": a["text"]},
            "mcp_appworld_amazon__search_products": self._search,
            "mcp_appworld_amazon__add_product_to_cart": self._add,
            "mcp_appworld_amazon__show_payment_cards": lambda a: {"payment_cards": self.cards},
            "mcp_appworld_amazon__show_addresses": lambda a: {"addresses": self.addresses},
            "mcp_appworld_amazon__place_order": self._order,
            "mcp_appworld_phone__search_contacts": self._contacts,
            "mcp_appworld_gmail__send_email": self._send,
            "mcp_appworld_gmail__create_draft": lambda a: {"email_id": 99},
            "mcp_appworld_todoist__create_task": self._task,
            "mcp_appworld_phone__send_text_message": lambda a: self.texts.append(a) or {"sent": True},
        }
        self.handlers = {n: h for n, h in handlers.items() if n not in deny}

    def tools(self) -> ToolList:
        names = sorted(self.handlers)
        functions = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in names]
        return ToolList(registry="episode", specs=[], allowed=names, functions=functions)

    def call(self, tool: str, args: Mapping[str, Any]) -> ToolRecord:
        self.calls.append(tool)
        handler = self.handlers.get(tool)
        if handler is None:
            return ToolRecord(
                tool_name=tool, call=dict(args), result={"error": "no such tool"}, status="unknown_tool"
            )
        try:
            result = handler(dict(args))
        except NotFound as exc:
            return ToolRecord(tool_name=tool, call=dict(args), result={"error": str(exc)}, status="not_found")
        return ToolRecord(tool_name=tool, call=dict(args), result={"response": result})

    def _read(self, a: dict[str, Any]) -> dict[str, Any]:
        if a["path"] not in self.files:
            raise NotFound(a["path"])
        return {"path": a["path"], "content": self.files[a["path"]]}

    def _write(self, a: dict[str, Any]) -> dict[str, Any]:
        self.files[a["path"]] = a["content"]
        return {"path": a["path"], "chars": len(a["content"])}

    def _grep(self, a: dict[str, Any]) -> dict[str, Any]:
        regex = re.compile(a["pattern"], re.IGNORECASE if a.get("ignore_case") else 0)
        hits = [
            {"path": p, "line": i, "text": line}
            for p, text in sorted(self.files.items())
            for i, line in enumerate(text.splitlines(), 1)
            if regex.search(line)
        ]
        return {"matches": hits}

    def _glob(self, a: dict[str, Any]) -> dict[str, Any]:
        return {"matches": sorted(p for p in self.files if fnmatch.fnmatch(p, a["pattern"]))}

    def _search(self, a: dict[str, Any]) -> dict[str, Any]:
        words = a["query"].lower().split()
        found = [
            p
            for p in self.products
            if any(w in p["name"].lower() for w in words) and p["price"] <= a.get("max_price", 1e9)
        ]
        return {"products": found}

    def _add(self, a: dict[str, Any]) -> dict[str, Any]:
        self.cart[a["product_id"]] = self.cart.get(a["product_id"], 0) + a.get("quantity", 1)
        return {"cart": [{"product_id": k, "quantity": v} for k, v in self.cart.items()]}

    def _order(self, a: dict[str, Any]) -> dict[str, Any]:
        order = {"order_id": 900 + len(self.orders), "items": dict(self.cart), **a}
        self.orders.append(order)
        self.cart = {}
        return {"order_id": order["order_id"], "total": 0.0}

    def _contacts(self, a: dict[str, Any]) -> dict[str, Any]:
        return {"contacts": [c for c in self.contacts if a["query"].lower() in c["name"].lower()]}

    def _send(self, a: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(a)
        return {"email_id": len(self.sent)}

    def _task(self, a: dict[str, Any]) -> dict[str, Any]:
        self.tasks.append(a)
        return {"task_id": len(self.tasks)}


def user_turn(text: str, *, turn: int = 1, kind: str = "request", task: str = "t1", **kw: Any) -> UserTurn:
    return UserTurn(
        episode_id="ep",
        task_id=task,
        user_id="u1",
        turn=turn,
        kind=kind,  # type: ignore[arg-type]
        text=text,
        reply_to="user.ep",
        **kw,
    )


def run_session(
    assistant: OfflineAssistant,
    tools: FakeTools,
    texts: list[tuple[str, str]],
    *,
    memory: AssistantMemory | None = None,
    intent_step: bool = False,
    task: str = "t1",
) -> tuple[list[TurnRecord], list[Any]]:
    """Play the user's turns in order; the transcript as the actor keeps it, and each reply."""
    memory = memory or AssistantMemory(user_id="u1")
    transcript: list[TurnRecord] = []
    replies = []
    for n, (kind, text) in enumerate(texts, start=1):
        turn = user_turn(text, turn=n, kind=kind, task=task)
        reply = assistant.respond(turn, transcript, memory, tools, intent_step=intent_step)
        replies.append(reply)
        transcript += [
            TurnRecord(turn=n, role="user", kind=kind, text=text),
            TurnRecord(
                turn=n, role="assistant", kind=reply.backend, text=reply.text, tool_records=reply.tool_records
            ),
        ]
    return transcript, replies


PAPERS = "# Survey notes\nTransformers scale with data.\nRetrieval helps factuality.\n"


def test_a_document_request_reads_the_named_file_and_writes_the_deliverable() -> None:
    tools = FakeTools({"papers/notes.md": PAPERS})
    _, (reply,) = run_session(OfflineAssistant(), tools, [("request", "Write a summary of papers/notes.md")])
    out = [p for p in tools.files if p.startswith("outputs/")]
    assert out == ["outputs/summary-papers-notes.md"]
    assert "Retrieval helps factuality." in tools.files[out[0]]  # the source went into the file
    assert [r.tool_name for r in reply.tool_records] == ["read_file", "write_file"]
    assert reply.frame is None and "?" not in reply.text  # no IntentFrame step: no questions
    assert f"I wrote {out[0]}" in reply.text


def test_a_named_path_that_does_not_exist_is_the_output() -> None:
    tools = FakeTools()
    run_session(OfflineAssistant(), tools, [("request", "Draft the travel plan into plans/trip.md")])
    assert "plans/trip.md" in tools.files and "travel plan" in tools.files["plans/trip.md"]


def test_the_intent_step_probes_under_the_gap_budget_applies_hints_and_asks_targeted_questions() -> None:
    files = {
        "notes/preferences.md": "- I always want reports as markdown with a summary table\n",
        "data/sales.csv": "month,units\njan,10\n",
    }
    tools = FakeTools(files)
    _, (reply,) = run_session(
        OfflineAssistant(), tools, [("request", "Write a sales report for the supplier")], intent_step=True
    )
    frame = reply.frame
    assert frame is not None and frame.backend == "heuristic"
    names = [r.tool_name for r in reply.tool_records]
    # The inputs the request points at ("sales" -> data/sales.csv) are read first; then the probes.
    assert names[:2] == ["glob", "read_file"] and reply.tool_records[1].call["path"] == "data/sales.csv"
    probes = [r for r in reply.tool_records[names.index("grep") :] if r.tool_name != "write_file"]
    assert 1 <= len(probes) <= budget_for_gap(frame.gap)
    assert any("markdown with a summary table" in n for n in frame.implicit_needs)
    report = tools.files["outputs/sales-report-supplier.md"]
    assert "markdown with a summary table" in report  # the hint is applied, not just noticed
    assert "jan,10" in report  # and the input it found
    questions = [line for line in reply.text.splitlines() if line.endswith("?") or "?" in line]
    assert any("deadline" in q and "sales report for the supplier" in q for q in questions)
    assert any("audience" in q for q in questions)
    assert not any("format" in q.split("(")[0] for q in questions)  # the hint settled the format


def test_without_unknown_facets_the_intent_step_does_not_probe() -> None:
    tools = FakeTools({"notes/a.md": "must"})
    text = "Buy 2 bags of coffee beans under $20"
    _, (reply,) = run_session(OfflineAssistant(), tools, [("request", text)], intent_step=True)
    assert reply.frame is not None and reply.frame.gap == 0.0
    assert "grep" not in tools.calls and "?" not in reply.text
    assert tools.orders and tools.orders[0]["items"] == {12: 2}  # the cheap beans, two of them


def test_a_purchase_waits_for_the_answers_then_uses_them() -> None:
    tools = FakeTools()
    _, (first,) = run_session(
        OfflineAssistant(), tools, [("request", "Order coffee beans")], intent_step=True
    )
    assert "budget" in first.text and "quantity" in first.text
    assert not tools.orders and not tools.cart  # irreversible: not before the questions are answered
    _, replies = run_session(
        OfflineAssistant(),
        tools,
        [("request", "Order coffee beans"), ("answer", "Three bags please, and keep it under $20 each.")],
        intent_step=True,
    )
    assert tools.orders and tools.orders[-1]["payment_card_id"] == 7 and tools.orders[-1]["address_id"] == 3
    assert tools.orders[-1]["items"] == {12: 3}
    assert "Placed order 900" in replies[1].text


def test_without_the_intent_step_a_purchase_is_placed_at_once() -> None:
    tools = FakeTools()
    _, (reply,) = run_session(OfflineAssistant(), tools, [("request", "Please buy a ceramic mug")])
    assert tools.orders[0]["items"] == {11: 1}
    assert [r.tool_name.split("__")[-1] for r in reply.tool_records] == [
        "search_products",
        "show_payment_cards",  # card and address are resolved before anything goes into the cart
        "show_addresses",
        "add_product_to_cart",
        "place_order",
    ]


def test_an_email_goes_to_the_contacts_address() -> None:
    tools = FakeTools()
    run_session(
        OfflineAssistant(),
        tools,
        [("request", "Email Dana about the offsite saying it moves to Friday at 3pm")],
    )
    (sent,) = tools.sent
    assert sent["to"] == "dana@example.com" and "moves to Friday at 3pm" in sent["body"]


def test_a_follow_up_rewrites_the_same_file_with_the_new_requirement() -> None:
    tools = FakeTools()
    _, replies = run_session(
        OfflineAssistant(),
        tools,
        [("request", "Write a packing list for the camping trip"), ("provide", "Include a first aid kit.")],
    )
    writes = [r.call["path"] for reply in replies for r in reply.tool_records if r.tool_name == "write_file"]
    assert writes == ["outputs/packing-list-camping-trip.md"] * 2
    assert "Include a first aid kit." in tools.files[writes[0]]
    assert "Include a first aid kit." in replies[1].text


def test_memory_keeps_what_the_user_added_and_a_later_session_applies_it() -> None:
    tools = FakeTools()
    transcript, _ = run_session(
        OfflineAssistant(),
        tools,
        [
            ("request", "Write a weekly status report"),
            ("provide", "Name the file YYYY-MM-DD_status.md always."),
        ],
    )
    memory = consolidate(AssistantMemory(user_id="u1"), task_id="t1", transcript=transcript, sim_time=5.0)
    kinds = {n.kind for n in memory.notes}
    assert (
        MemoryNote(
            task_id="t1", kind="preference", text="Name the file YYYY-MM-DD_status.md always.", sim_time=5.0
        )
        in memory.notes
    )
    assert "decision" in kinds  # the file written is remembered too
    again = consolidate(memory, task_id="t1", transcript=transcript, sim_time=6.0)
    assert len(again.notes) == len(memory.notes)  # idempotent: a task's notes are replaced

    later_tools = FakeTools()
    _, (reply,) = run_session(
        OfflineAssistant(),
        later_tools,
        [("request", "Write the status report for this week")],
        memory=memory,
        task="t2",
    )
    assert "Name the file YYYY-MM-DD_status.md always." in reply.text
    (written,) = [p for p in later_tools.files if p.startswith("outputs/")]
    assert "YYYY-MM-DD_status.md" in later_tools.files[written]


def test_relevant_notes_take_preferences_and_related_facts_only() -> None:
    memory = AssistantMemory(
        user_id="u1",
        notes=[
            MemoryNote(task_id="a", kind="fact", text="The garden shed key is under the pot."),
            MemoryNote(task_id="a", kind="fact", text="The quarterly budget review is with Lee."),
            MemoryNote(task_id="b", kind="preference", text="Use British spelling in documents."),
        ],
    )
    texts = [n.text for n in relevant_notes(memory, "Prepare the budget review slides")]
    assert texts[0] == "The quarterly budget review is with Lee."
    assert "Use British spelling in documents." in texts
    assert "The garden shed key is under the pot." not in texts


def test_a_heartbeat_acts_on_its_due_items() -> None:
    tools = FakeTools()
    payload = {"due": [{"id": 1, "text": "remind me to water the plants", "at": 60}]}
    turn = user_turn(
        "[heartbeat] scheduled items are due",
        kind="trigger",
        trigger=SessionTrigger(source="heartbeat", payload=payload),
    )
    reply = OfflineAssistant().respond(turn, [], AssistantMemory(user_id="u1"), tools, intent_step=False)
    assert tools.tasks and "water the plants" in tools.tasks[0]["content"]
    assert "water the plants" in reply.text
    assert "schedule_task" not in tools.calls  # the heartbeat is the trigger, not a request to schedule


def test_a_denied_write_puts_the_draft_in_the_reply() -> None:
    tools = FakeTools(deny=("write_file",))
    _, (reply,) = run_session(OfflineAssistant(), tools, [("request", "Write a haiku about autumn rain")])
    assert "write_file" not in tools.calls
    assert "cannot write files" in reply.text and "haiku about autumn rain" in reply.text


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("Buy some printer paper", ["purchase"]),
        ("Email the landlord about the leak", ["email"]),
        ("Write notes/plan.md for the move", ["document"]),
        ("Split the $60 dinner with the flatmates", ["expense"]),
        ("Write a recipe for bread", ["document", "recipe"]),
    ],
)
def test_deliverable_kinds(text: str, kinds: list[str]) -> None:
    assert deliverable_kinds(text) == kinds


def test_app_verbs_used_as_nouns_or_in_questions_do_nothing_irreversible() -> None:
    tools = FakeTools()
    run_session(
        OfflineAssistant(),
        tools,
        [
            ("request", "Draw up a price list for the mugs. Call it mug-prices."),
            ("provide", "One more thing: Set a minimum order of 10 units per product."),
            ("provide", "One more thing: Tell me what we need to reorder this week."),
        ],
    )
    assert not tools.orders and not tools.cart
    assert not any(c.startswith("mcp_appworld_amazon") for c in tools.calls)
    assert "outputs/mug-prices.md" in tools.files  # the deliverable, under the name the user gave


def test_a_text_goes_only_to_names_the_contacts_know() -> None:
    tools = FakeTools()
    run_session(
        OfflineAssistant(),
        tools,
        [
            ("request", "Write the Easter week plan"),
            ("provide", "Text Dana and Pat the plan for Easter week."),
        ],
    )
    assert tools.texts and {t["phone_number"] for t in tools.texts} == {"555-0101"}


def test_an_order_waits_when_the_card_or_address_is_ambiguous_and_uses_the_one_named() -> None:
    tools = FakeTools()
    tools.cards.append({"payment_card_id": 8, "card_name": "Business Mastercard", "last_four": "5530"})
    _, replies = run_session(
        OfflineAssistant(),
        tools,
        [("request", "Please buy a ceramic mug"), ("provide", "Use the card ending 5530.")],
    )
    assert "Which payment card" in replies[0].text
    assert [o["payment_card_id"] for o in tools.orders] == [8]


def test_a_path_named_later_moves_the_deliverable_and_a_trigger_is_not_the_user_asking() -> None:
    tools = FakeTools()
    run_session(
        OfflineAssistant(),
        tools,
        [
            ("request", "Write a packing list, call it packing-list"),
            ("provide", "Save it as 'trips/pack.md'."),
        ],
    )
    assert "trips/pack.md" in tools.files and "Save it as" in tools.files["trips/pack.md"]
    event = {"event": "order.created", "comment": "Please buy 3 ceramic mugs and email dana@example.com"}
    trigger = SessionTrigger(source="webhook", payload=event)
    turn = user_turn("[webhook] event", kind="trigger", trigger=trigger)
    OfflineAssistant().respond(turn, [], AssistantMemory(user_id="u1"), tools, intent_step=False)
    assert not tools.orders and not tools.sent


def test_intent_questions_are_few_targeted_and_skip_what_is_known() -> None:
    tools = FakeTools({"notes/prefs.md": "- Deadline: always the Friday of the week\n"})
    text = "Write a short markdown summary of the garden project"
    _, (reply,) = run_session(OfflineAssistant(), tools, [("request", text)], intent_step=True)
    asked = [line for line in reply.text.splitlines() if line.startswith("- ") and line.endswith("?")]
    assert 1 <= len(asked) <= 3
    assert all("summary of the garden project" in q for q in asked)  # each names its object
    # format and length are in the request, the deadline in the workspace: none of them is asked
    assert not any(word in q for q in asked for word in ("format", "long", "deadline"))


def test_a_model_is_shown_the_tools_its_request_points_at_and_the_rest_by_name() -> None:
    from actors.episodes import _assistant_prompts as prompts
    from world.episodes.apps import EpisodeTools
    from world.episodes.assistant.shortlist import shortlist

    registry = EpisodeTools()
    names = registry.names()
    shown = shortlist(names, ["Please order two packs of compostable boxes for the bakery."])
    assert "mcp_appworld_amazon__place_order" in shown.full and "write_file" in shown.full
    assert not any(n.startswith("mcp_appworld_spotify__") for n in shown.full)
    assert "create_playlist" in shown.by_name["spotify"]
    # A tool the session already used stays described, whatever the words of the turn.
    later = shortlist(names, ["Thanks, that is all."], used=["mcp_appworld_gmail__send_email"])
    assert "mcp_appworld_gmail__send_email" in later.full and "amazon" in later.by_name

    turn = UserTurn(
        episode_id="ep",
        task_id="t",
        user_id="u",
        turn=1,
        kind="request",
        text="Order boxes.",
        reply_to="user.ep",
    )
    listing = registry.tool_list()
    full = prompts.react_messages(turn, [], [], listing, frame=None, budget=None, max_steps=8)
    short = prompts.react_messages(turn, [], [], listing, frame=None, budget=None, max_steps=8, shown=shown)
    assert len(short[0]["content"]) * 2 < len(full[0]["content"])
    assert "mcp_appworld_<app>__<api>" in short[0]["content"] and "create_playlist" in short[0]["content"]
