"""App verbs onto app tools, with arguments read from the user's words as well as a heuristic can.

Each action is a short fixed sequence of calls through a ``ToolPort``: look up what it needs
(products, cards, contacts, groups), then make the change. Actions never read grading data: only
the request, the requirements the user stated, remembered notes and what the tools return.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from messages.episodes import ToolRecord
from world.episodes.assistant._text import clip, key_terms, overlap, words
from world.episodes.assistant.intent import request_object
from world.episodes.assistant.ports import ToolPort, response

AMAZON = "mcp_appworld_amazon__"
GMAIL = "mcp_appworld_gmail__"
PHONE = "mcp_appworld_phone__"
NOTE = "mcp_appworld_simple_note__"
SPLITWISE = "mcp_appworld_splitwise__"
SPOTIFY = "mcp_appworld_spotify__"
TODOIST = "mcp_appworld_todoist__"

IRREVERSIBLE = frozenset(
    {
        f"{AMAZON}place_order",
        f"{GMAIL}send_email",
        f"{GMAIL}reply_to_email",
        f"{PHONE}send_text_message",
        f"{SPLITWISE}record_expense",
    }
)
"""Calls that cannot be taken back: made once the user's open questions are answered."""

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"\+?\d[\d\s().-]{6,}\d")
_MONEY = re.compile(r"\$\s?(\d+(?:\.\d{1,2})?)|(\d+(?:\.\d{1,2})?)\s?(?:dollars|usd)\b", re.IGNORECASE)
_MAX_PRICE = re.compile(
    r"\b(?:under|below|less than|at most|max(?:imum)?(?: price)?(?: of)?|up to|budget(?: of| is)?)\s*"
    r"\$?\s?(\d+(?:\.\d{1,2})?)",
    re.IGNORECASE,
)
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "ten": 10}
_QUANTITY = re.compile(
    r"\b(\d+|a|an|one|two|three|four|five|six|ten)\s+(?:x\s+)?(?:units?|packs?|bags?|boxes?|bottles?|pieces?|"
    r"items?|of|more|new)?\b",
    re.IGNORECASE,
)
_CONTENT = re.compile(r"(?:saying|that says|to say|telling (?:him|her|them)|:)\s*(.+)$", re.IGNORECASE | re.S)
_NAME_AFTER = re.compile(
    r"\b(?i:to|text|message|email|e-mail|tell|ask|with|for)\s+([A-Z][a-z]+(?:\s[A-Z][a-z]+)?)"
)
_TODO = re.compile(
    r"\b(?:remind me to|remember to|add (?:a )?(?:task|todo|to-do)(?: to)?|todo\b:?|to-do\b:?)\s*(.+)$",
    re.IGNORECASE | re.MULTILINE,
)
_IN_MINUTES = re.compile(r"\bin\s+(\d+)\s*(minutes?|mins?|hours?|hrs?|days?)\b", re.IGNORECASE)
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_PRIORITY = re.compile(r"\b(urgent|high priority|important)\b", re.IGNORECASE)


@dataclass
class ActionRun:
    """What an action did: its calls, in order, and lines for the reply."""

    records: list[ToolRecord] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


@dataclass
class ActionInput:
    request: str
    """The request (and, later in a session, the user's answers) the action reads."""
    body: str
    """The text to send or store: the request's content plus the requirements and notes applied."""
    names: frozenset[str]
    port: ToolPort
    ask: str = ""
    """The user's sentence that asked for this action: its object and recipients come from it."""
    run: ActionRun = field(default_factory=ActionRun)

    @property
    def asked(self) -> str:
        return self.ask or self.request

    def has(self, tool: str) -> bool:
        return tool in self.names

    def call(self, tool: str, args: Mapping[str, Any]) -> Any:
        record = self.port.call(tool, dict(args))
        self.run.records.append(record)
        if record.status != "ok":
            self.run.lines.append(
                f"{tool} did not go through ({record.status}): {record.result.get('error', '')}"
            )
        return response(record)


def first_with(value: Any, key: str) -> list[dict[str, Any]]:
    """Every JSON object inside ``value`` (depth first) that has ``key``: the records of a result."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        if key in value:
            found.append(value)
        else:
            for v in value.values():
                found.extend(first_with(v, key))
    elif isinstance(value, list):
        for v in value:
            found.extend(first_with(v, key))
    return found


_DIGITS = re.compile(r"\b\d{3,}\b")
_QUOTED = re.compile(r"'([^']{2,80})'|\"([^\"]{2,80})\"")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)?\b")


def quoted(text: str) -> list[str]:
    return [a or b for a, b in _QUOTED.findall(text)]


def resolve(records: Sequence[dict[str, Any]], text: str) -> dict[str, Any] | None:
    """The one record ``text`` points at: the only one there is, one named in quotes, else the single
    best by shared words and numbers (a card's last four digits). None when nothing tells them apart."""
    if len(records) == 1:
        return records[0]
    names = {q.lower() for q in quoted(text)}
    for record in records:
        if any(str(v).lower() in names for v in record.values() if isinstance(v, str)):
            return record
    terms, digits = key_terms(text), set(_DIGITS.findall(text))
    scored = []
    for record in records:
        shown = " ".join(str(v) for v in record.values())
        scored.append(overlap(terms, shown) + 2 * len(digits & set(_DIGITS.findall(shown))))
    best = max(scored, default=0)
    if best == 0 or scored.count(best) > 1:
        return None
    return records[scored.index(best)]


def best_match(records: Sequence[dict[str, Any]], text: str) -> dict[str, Any] | None:
    """The record whose text shares most key terms with ``text`` (the first on a tie)."""
    if not records:
        return None
    terms = key_terms(text)
    scored = [(overlap(terms, " ".join(str(v) for v in r.values())), -i) for i, r in enumerate(records)]
    return records[-max(scored)[1]]


def max_price(text: str) -> float | None:
    m = _MAX_PRICE.search(text)
    return float(m.group(1)) if m else None


def quantity(text: str) -> int:
    for m in _QUANTITY.finditer(text):
        raw = m.group(1).lower()
        n = int(raw) if raw.isdigit() else _NUMBER_WORDS.get(raw, 1)
        if 1 <= n <= 100 and not re.match(r"\s*(dollars|usd|%)", text[m.end(1) :], re.I):
            return n
    return 1


def amount(text: str) -> float | None:
    m = _MONEY.search(text)
    if not m:
        return None
    return round(float(m.group(1) or m.group(2)), 2)


def content_of(text: str) -> str:
    m = _CONTENT.search(text)
    return (m.group(1) if m else text).strip()


def person(text: str) -> str | None:
    m = _NAME_AFTER.search(text)
    return m.group(1) if m else None


def people(ask: str) -> list[str]:
    """Capitalised names after the request verb ("Text Dario, Mina and Joss"): candidates only, a
    name is a recipient once the contacts know it."""
    m = re.search(r"\b(?i:text|message|sms|email|e-mail|tell|remind|ask)\b", ask)
    rest = ask[m.end() :] if m else ask
    return list(dict.fromkeys(_NAME.findall(rest)))


def product_query(text: str) -> str:
    obj = request_object(text)
    obj = _MAX_PRICE.sub("", obj)
    obj = re.sub(
        r"\b(\d+|a|an|one|two|three|four|five|some|more|new|x|units?|packs?|of|for me)\b",
        " ",
        obj,
        flags=re.I,
    )
    return " ".join(obj.split()[:5]) or obj


# ---------------------------------------------------------------- actions


def purchase(a: ActionInput, *, commit: bool) -> None:
    search = f"{AMAZON}search_products"
    if not a.has(search):
        return
    query = product_query(a.asked)
    args: dict[str, Any] = {"query": query}
    limit = max_price(a.request)
    if limit is not None:
        args["max_price"] = limit
    products = first_with(a.call(search, args), "product_id")
    if not products and len(query.split()) > 1:
        products = first_with(a.call(search, {**args, "query": key_terms(query)[-1]}), "product_id")
    # Only a product named like the thing asked for: an order for anything else is a mistake.
    wanted = key_terms(query)
    products = [p for p in products if overlap(wanted, str(p.get("name") or p.get("title") or ""))]
    product = best_match(products, a.request)
    if product is None:
        a.run.lines.append(f"I found no product matching '{query}'; which product do you mean?")
        return
    n = quantity(a.request)
    name = product.get("name") or product.get("title") or f"product {product['product_id']}"
    price = product.get("price")
    shown = f"{name}" + (f" (${price})" if price is not None else "")
    if not commit:
        # Nothing goes into the cart yet: the answers may change the product or the quantity.
        a.run.lines.append(f"I found {shown}; I will order it once you answer the questions below.")
        return
    card = resolve(first_with(a.call(f"{AMAZON}show_payment_cards", {}), "payment_card_id"), a.request)
    address = resolve(first_with(a.call(f"{AMAZON}show_addresses", {}), "address_id"), a.request)
    if card is None or address is None:
        a.run.lines.append(
            f"I found {shown}. Which payment card and which delivery address should I use for the order?"
        )
        return
    pack = re.search(r"\bpacks? of (\d+)\b", str(name), re.IGNORECASE)
    if pack and n >= int(pack.group(1)) > 1:
        n = -(-n // int(pack.group(1)))  # the user counted items; the shop sells packs of them
    if a.call(f"{AMAZON}add_product_to_cart", {"product_id": product["product_id"], "quantity": n}) is None:
        return  # nothing in the cart: no order
    a.run.lines.append(f"Added {n} x {shown} to the cart.")
    placed = a.call(
        f"{AMAZON}place_order",
        {"payment_card_id": card["payment_card_id"], "address_id": address["address_id"]},
    )
    if isinstance(placed, dict) and "order_id" in placed:
        total = placed.get("total")
        a.run.lines.append(
            f"Placed order {placed['order_id']}" + (f" (total ${total})" if total is not None else "") + "."
        )


def contact(a: ActionInput, name: str) -> dict[str, Any] | None:
    """The contact ``name`` is, if the contacts know it (every word of the name in theirs)."""
    search = f"{PHONE}search_contacts"
    if not a.has(search):
        return None
    wanted = set(words(name))
    found = [
        c
        for c in first_with(a.call(search, {"query": name}), "contact_id")
        if wanted <= set(words(str(c.get("name", ""))))
    ]
    return found[0] if len(found) == 1 else None


def _contact(a: ActionInput, name: str, key: str) -> str | None:
    found = contact(a, name)
    value = found.get(key) if found else None
    return str(value) if value else None


def email(a: ActionInput, *, commit: bool) -> None:
    obj = request_object(a.request)
    if re.search(r"\breply\b", a.asked, re.I) and a.has(f"{GMAIL}search_emails"):
        who = person(a.asked) or obj
        found = first_with(a.call(f"{GMAIL}search_emails", {"query": who}), "email_id")
        target = best_match(found, a.request)
        if target is not None and commit:
            a.call(f"{GMAIL}reply_to_email", {"email_id": target["email_id"], "body": a.body})
            a.run.lines.append(f"Replied to email {target['email_id']}.")
            return
    addresses = _EMAIL.findall(a.asked) or _EMAIL.findall(a.request)
    to = addresses[0] if addresses else None
    name = person(a.asked)
    if to is None and name is not None:
        to = _contact(a, name, "email")
    if to is None:
        a.run.lines.append("Whom should I e-mail: which address or contact?")
        return
    obj = request_object(a.asked)
    topic = re.split(r"\s+(?:saying|that says|to say|telling)\b|:", obj)[0]
    if name and topic.startswith(name):
        topic = topic[len(name) :].strip()
    topic = re.sub(r"^(?:about|regarding|re)\s+", "", topic, flags=re.IGNORECASE) or obj
    subject = clip(topic[:1].upper() + topic[1:], 80)
    if not commit:
        if a.has(f"{GMAIL}create_draft"):
            a.call(f"{GMAIL}create_draft", {"to": to, "subject": subject, "body": a.body})
            a.run.lines.append(f"Drafted the e-mail to {to} ('{subject}'); I will send it once you confirm.")
        return
    if a.has(f"{GMAIL}send_email"):
        a.call(f"{GMAIL}send_email", {"to": to, "subject": subject, "body": a.body})
        a.run.lines.append(f"Sent the e-mail to {to} with subject '{subject}'.")


def text_message(a: ActionInput, *, commit: bool) -> None:
    tool = f"{PHONE}send_text_message"
    if not a.has(tool) or not commit:
        return
    targets: list[dict[str, Any]] = [
        {"phone_number": n.strip()} for n in _PHONE.findall(a.asked) if not _DATE.search(n)
    ]
    for name in people(a.asked) if not targets else ():
        found = contact(a, name)
        if found is None:
            continue  # a name the contacts do not know is not a recipient ("Easter week")
        number = found.get("phone_number") or found.get("phone")
        targets.append({"phone_number": str(number)} if number else {"contact_name": str(found["name"])})
    if not targets:
        a.run.lines.append("Whom should I text? I found nobody in your contacts by the names you gave.")
        return
    for target in targets:
        a.call(tool, {**target, "message": a.body})
        a.run.lines.append(f"Texted {next(iter(target.values()))}: {clip(a.body, 160)}")


def note(a: ActionInput, *, commit: bool) -> None:
    tool = f"{NOTE}create_note"
    if not a.has(tool):
        return
    named = re.search(r"\b(?:titled|called|named|title it)\s+['\"]([^'\"]+)['\"]", a.request, re.I)
    title = clip(named.group(1) if named else request_object(a.request), 80)
    a.call(tool, {"title": title, "content": a.body})
    a.run.lines.append(f"Saved a note '{title}'.")


def expense(a: ActionInput, *, commit: bool) -> None:
    tool = f"{SPLITWISE}record_expense"
    if not a.has(tool) or not commit:
        return
    value = amount(a.request)
    if value is None:
        a.run.lines.append("What amount should I record, and in which Splitwise group?")
        return
    group = resolve(first_with(a.call(f"{SPLITWISE}show_groups", {}), "group_id"), a.request)
    if group is None:
        a.run.lines.append("Which Splitwise group should the expense go in?")
        return
    members = [str(m) for m in group.get("members", []) if isinstance(m, str | int)]
    payer = next((m for m in members if re.search(rf"\b{re.escape(m)}\b", a.request, re.I)), None)
    args: dict[str, Any] = {
        "group_id": group["group_id"],
        "description": clip(request_object(a.request), 80),
        "amount": value,
        "paid_by": payer or (members[0] if members else "me"),
    }
    a.call(tool, args)
    a.run.lines.append(
        f"Recorded an expense of ${value:.2f} in group {group.get('name', group['group_id'])}."
    )


def music(a: ActionInput, *, commit: bool) -> None:
    search = f"{SPOTIFY}search_songs"
    if not a.has(search):
        return
    query = " ".join(key_terms(request_object(a.request))[:3]) or request_object(a.request)
    songs = first_with(a.call(search, {"query": query}), "song_id")
    if re.search(r"\bplaylist\b", a.request, re.I) and a.has(f"{SPOTIFY}create_playlist"):
        title = clip(request_object(a.request), 60)
        made = a.call(f"{SPOTIFY}create_playlist", {"title": title})
        playlist = first_with(made, "playlist_id")
        for song in songs[:5] if playlist else ():
            a.call(
                f"{SPOTIFY}add_song_to_playlist",
                {"playlist_id": playlist[0]["playlist_id"], "song_id": song["song_id"]},
            )
        a.run.lines.append(f"Created the playlist '{title}' with {min(len(songs), 5)} song(s).")
        return
    chosen = best_match(songs, a.request)
    if chosen is not None and a.has(f"{SPOTIFY}play_music"):
        a.call(f"{SPOTIFY}play_music", {"song_id": chosen["song_id"]})
        a.run.lines.append(f"Playing {chosen.get('title', chosen['song_id'])}.")


def todo(a: ActionInput, *, commit: bool) -> None:
    tool = f"{TODOIST}create_task"
    if not a.has(tool):
        return
    m = _TODO.search(a.asked)
    what = m.group(1) if m else content_of(request_object(a.asked))
    args: dict[str, Any] = {"content": clip(what.strip().rstrip("."), 200)}
    date = _DATE.search(a.request)
    if date:
        args["due_date"] = date.group(0)
    if _PRIORITY.search(a.request):
        args["priority"] = 4
    a.call(tool, args)
    a.run.lines.append(f"Added the task '{args['content']}'" + (f" due {args['due_date']}." if date else "."))


def schedule(a: ActionInput, *, commit: bool) -> None:
    tool = "schedule_task"
    if not a.has(tool):
        return
    m = _IN_MINUTES.search(a.asked)
    minutes = 60.0
    if m:
        unit = m.group(2).lower()
        minutes = float(m.group(1)) * (60 if unit.startswith("h") else 1440 if unit.startswith("d") else 1)
    # What is due, not the asking: "Reminder for Monday to ...", so the item, when due, asks nothing again.
    asking = r"^.*?\b(?:schedule|set(?: up)?)\s+(?:an?\s+)?(?:reminder|check-?in)?\s*"
    rest = re.sub(asking, "", a.ask, flags=re.IGNORECASE)
    text = clip(f"Reminder {rest}" if a.ask else request_object(a.request), 200)
    a.call(tool, {"text": text, "in_minutes": minutes})
    a.run.lines.append(f"Scheduled '{text}' in {minutes:g} minutes.")


ACTIONS: dict[str, Callable[..., None]] = {
    "purchase": purchase,
    "email": email,
    "text": text_message,
    "note": note,
    "expense": expense,
    "music": music,
    "todo": todo,
    "schedule": schedule,
}
"""Deliverable kind -> action (``document`` is the policy's own: it writes a file)."""
