"""App verbs onto AppWorld's app tools, with arguments read from the user's words as well as a
heuristic can.

Each action is a short fixed sequence of calls through a ``ToolPort``: log in to the app (once per
session: ``Accounts``), look up what it needs (products, cards, contacts, people, groups,
projects), then make the change. Search APIs rank rather than filter, so every lookup keeps only
the records that match what the user named. Actions never read grading data: only the request,
the requirements the user stated, remembered notes, the workspace and what the tools return.

Logins come from what the user said in the session, the workspace files the assistant read, and
its memory of earlier sessions (``memory.credential_notes``); without one, the assistant looks for
a password in the workspace once, then asks the user. It never guesses a login.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from messages.episodes import ToolRecord
from world.episodes.assistant._text import clip, overlap, words
from world.episodes.assistant.intent import request_object
from world.episodes.assistant.memory import (
    EMAIL,
    PHONE_NUMBER,
    Credential,
    MemoryNote,
    credentials_in,
    is_phone,
    known_usernames,
    note_credential,
)
from world.episodes.assistant.ports import ToolPort, response
from world.text import key_terms

APP_PREFIX = "mcp_appworld_"
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
        f"{GMAIL}send_email_from_draft",
        f"{GMAIL}reply_to_email",
        f"{PHONE}send_text_message",
        f"{SPLITWISE}record_expense",
    }
)
"""Calls that cannot be taken back: made once the user's open questions are answered."""

APP_LABELS = {
    "amazon": "Amazon",
    "gmail": "Gmail",
    "phone": "phone",
    "simple_note": "Simple Note",
    "splitwise": "Splitwise",
    "spotify": "Spotify",
    "todoist": "Todoist",
}
PAGE = 20
"""The largest page AppWorld's search APIs give: matches come first, so one page is enough."""
MAX_LOGINS = 3
"""Logins tried per app and turn before asking the user."""
MAX_CREDENTIAL_FILES = 3
CREDENTIAL_PATTERN = "password|passcode"

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
_PROJECT = re.compile(
    r"\b(?:in|to|into|under|on)\s+(?:my|the|our)\s+(?:'([^']+)'|\"([^\"]+)\"|([\w-]+(?:\s[\w-]+)?))\s+"
    r"(?:project|list)\b|\bproject\s+(?:called|named)\s+(?:'([^']+)'|\"([^\"]+)\"|([\w-]+))",
    re.IGNORECASE,
)
_IN_MINUTES = re.compile(r"\bin\s+(\d+)\s*(minutes?|mins?|hours?|hrs?|days?)\b", re.IGNORECASE)
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_PRIORITY = re.compile(r"\b(urgent|high[- ]priority|important)\b", re.IGNORECASE)
_LOW_PRIORITY = re.compile(r"\blow[- ]priority\b", re.IGNORECASE)
_TITLE_NOISE = re.compile(
    r",?\s*(?:with\s+|at\s+)?\b(?:urgent|high|medium|low)[- ]priority\b|"
    r",?\s*\b(?:by|on|due(?:\s+(?:on|by))?)\s+\d{4}-\d{2}-\d{2}\b",
    re.IGNORECASE,
)
_CLEAR_CART = re.compile(
    r"\b(?:remove|clear|empty|drop|delete)\b.*\b(?:them|cart|others?|rest|first)\b|"
    r"\b(?:only|just) (?:the|this|that)\b",
    re.IGNORECASE,
)
_KEEP_CART = re.compile(
    r"\b(?:them|those|they|everything|all|others?)\b.*\b(?:too|as well|also)\b|\binclude\b|"
    r"\beverything in (?:the|my) cart\b",
    re.IGNORECASE,
)
_NOT_NAMES = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december easter christmas today tomorrow tonight please
    thanks i""".split()  # noqa: SIM905 - a word list reads better as text
)
_WITH = re.compile(r"\b(?:with|between|among|and)\s+(.+)$", re.IGNORECASE)
_PAYER = re.compile(
    r"\b([A-Z][a-z]+(?:\s[A-Z][a-z]+)?)\s+paid\b|\bpaid\s+by\s+([A-Z][a-z]+(?:\s[A-Z][a-z]+)?)"
)
_MUSIC_WORDS = frozenset({"playlist", "song", "music", "play", "track", "tune", "list", "spotify"})
_SONG_COUNT = re.compile(r"\b(\d+)\s+(?:songs?|tracks?)\b", re.IGNORECASE)
_TITLED = re.compile(r"\b(?:titled|called|named|title it)\s+['\"]([^'\"]+)['\"]", re.IGNORECASE)
_TAGS = re.compile(r"\btag(?:ged)?(?: it)?(?: with| as)?\s+['\"]?([\w-]+)", re.IGNORECASE)
_DIGITS = re.compile(r"\b\d{3,}\b")
_QUOTED = re.compile(r"'([^']{2,80})'|\"([^\"]{2,80})\"")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)?\b")
_TOTAL = re.compile(r"total amount of \$?([\d.]+)", re.IGNORECASE)


# ---------------------------------------------------------------- calls


@dataclass
class ActionRun:
    """What an action did: its calls, in order, and lines for the reply."""

    records: list[ToolRecord] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def error_of(record: ToolRecord) -> str:
    """What a refused call says: an app's ``{"response": {"message": ...}}``, else the error."""
    result = record.result
    reply = result.get("response") if isinstance(result, Mapping) else None
    message = reply.get("message") if isinstance(reply, Mapping) else None
    if isinstance(message, list):
        return " ".join(map(str, message))
    return str(message if message is not None else result.get("error", ""))


@dataclass
class Accounts:
    """The app logins the assistant may use in a turn, best first: what the user said in this
    session (newest first), the workspace files it read, its memory; and the session's access
    tokens (one login per app and session: a token from an earlier turn is reused)."""

    said: list[Credential] = field(default_factory=list)
    files: list[Credential] = field(default_factory=list)
    remembered: list[Credential] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    """The user's own addresses (newest first): the username of an app whose login gave none."""
    phones: list[str] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)
    usernames: dict[str, str] = field(default_factory=dict)
    """App -> the username its token belongs to."""
    inherited: set[str] = field(default_factory=set)
    """Apps whose token comes from an earlier turn (re-login once if the app refuses it)."""
    refused: set[tuple[str, str, str]] = field(default_factory=set)
    asked: set[str] = field(default_factory=set)
    read: set[str] = field(default_factory=set)
    searched: bool = False

    @classmethod
    def gather(
        cls,
        *,
        said: Sequence[str],
        files: Mapping[str, str],
        notes: Sequence[MemoryNote],
        records: Sequence[ToolRecord],
    ) -> Accounts:
        """The logins in the user's words ``said`` (oldest first), in the text ``files`` read
        (path -> content) and in the ``credential`` notes; the tokens of earlier ``records``."""
        accounts = cls(
            said=[c for text in reversed(said) for c in credentials_in(text)],
            files=[c for text in files.values() for c in credentials_in(text)],
            remembered=[c for n in reversed(notes) if (c := note_credential(n)) is not None],
            read=set(files),
        )
        emails, phones = known_usernames(said)
        accounts.emails = list(dict.fromkeys(reversed(emails)))
        accounts.phones = list(dict.fromkeys(reversed(phones)))
        for record in records:
            name = record.tool_name.removeprefix(APP_PREFIX)
            app, _, api = name.partition("__")
            if api == "login":
                user, password = str(record.call.get("username")), str(record.call.get("password"))
                token = response(record)
                if isinstance(token, Mapping) and isinstance(token.get("access_token"), str):
                    accounts.tokens[app] = token["access_token"]
                    accounts.usernames[app] = user
                    accounts.inherited.add(app)
                else:
                    accounts.refused.add((app, user, password))
            elif api == "logout" and record.status == "ok":
                accounts.tokens.pop(app, None)
        return accounts

    def _all(self) -> list[Credential]:
        return [*self.said, *self.files, *self.remembered]

    def own_emails(self) -> list[str]:
        found = [*self.emails, *(c.username for c in self._all() if c.username and "@" in c.username)]
        return list(dict.fromkeys(found))

    def own_numbers(self) -> set[str]:
        return {*self.phones, *(c.username for c in self._all() if c.username and is_phone(c.username))}

    def _username(self, app: str, given: str | None) -> str | None:
        if app == "phone":
            return given if is_phone(given) else next(iter(self.phones), None)
        if given and not is_phone(given):
            return given
        return next(iter(self.own_emails()), None)

    def candidates(self, app: str) -> list[tuple[str, str]]:
        """The logins to try for ``app``, best first, without those refused in this session."""
        sources = (self.said, self.files, self.remembered)
        creds = [c for s in sources for c in s if c.app == app] + [
            c for s in sources[:2] for c in s if c.app is None
        ]
        out: list[tuple[str, str]] = []
        for c in creds:
            user = self._username(app, c.username)
            if user is not None and (app, user, c.password) not in self.refused:
                out.append((user, c.password))
        return list(dict.fromkeys(out))[:MAX_LOGINS]

    def usable(self, app: str) -> bool:
        """A token or a login to try for ``app`` (no call made)."""
        return app in self.tokens or bool(self.candidates(app))

    def search(self, a: ActionInput) -> bool:
        """Look for logins in the workspace once a turn: grep for passwords, read the files that
        mention one. Whether it found any login not known before."""
        if self.searched or not a.has("grep") or not a.has("read_file"):
            return False
        self.searched = True
        before = len(self.files)
        found = a.call("grep", {"pattern": CREDENTIAL_PATTERN, "ignore_case": True}, quiet=True)
        paths = [str(h["path"]) for h in first_with(found, "path")]
        for path in [p for p in dict.fromkeys(paths) if p not in self.read][:MAX_CREDENTIAL_FILES]:
            self.read.add(path)
            content = a.call("read_file", {"path": path}, quiet=True)
            if isinstance(content, Mapping) and content.get("encoding") is None:
                self.files += credentials_in(str(content.get("content", "")))
        return len(self.files) > before

    def ask(self, a: ActionInput, app: str) -> None:
        if app in self.asked:
            return
        self.asked.add(app)
        label = APP_LABELS.get(app, app)
        user = "phone number" if app == "phone" else "email"
        if any(r[0] == app for r in self.refused):
            a.run.lines.append(
                f"The {label} login I had was refused. What are your {label} {user} and password?"
            )
        else:
            a.run.lines.append(
                f"I need your {label} login for this: what are your {label} {user} and password?"
            )

    def ready(self, a: ActionInput, app: str) -> bool:
        """Whether a login for ``app`` is at hand (searching the workspace if need be); asks the user
        for one otherwise. No login is made: for a first turn whose changes wait for answers."""
        if self.usable(app) or (self.search(a) and self.usable(app)):
            return True
        self.ask(a, app)
        return False

    def login(self, a: ActionInput, app: str) -> str | None:
        """The session's access token of ``app``: logs in with the best login not yet refused
        (searching the workspace when none is known); None, and a question, when none works."""
        if app in self.tokens:
            return self.tokens[app]
        tool = f"{APP_PREFIX}{app}__login"
        if not a.has(tool):
            return None
        while True:
            for user, password in self.candidates(app):
                record = a.record(tool, {"username": user, "password": password})
                token = response(record)
                if isinstance(token, Mapping) and isinstance(token.get("access_token"), str):
                    self.tokens[app] = token["access_token"]
                    self.usernames[app] = user
                    return self.tokens[app]
                self.refused.add((app, user, password))
            if not self.search(a):
                break
        self.ask(a, app)
        return None


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
    accounts: Accounts = field(default_factory=Accounts)
    """The turn's logins and tokens, shared by its actions."""
    earlier: Sequence[ToolRecord] = ()
    """The session's calls before this turn."""
    run: ActionRun = field(default_factory=ActionRun)

    @property
    def asked(self) -> str:
        return self.ask or self.request

    def has(self, tool: str) -> bool:
        return tool in self.names

    def record(self, tool: str, args: Mapping[str, Any]) -> ToolRecord:
        record = self.port.call(tool, dict(args))
        self.run.records.append(record)
        return record

    def call(self, tool: str, args: Mapping[str, Any], *, quiet: bool = False) -> Any:
        """The response of a call; None (and a line for the reply) when it did not go through."""
        record = self.record(tool, args)
        if record.status != "ok" and not quiet:
            self.run.lines.append(f"{tool} did not go through ({record.status}): {error_of(record)}")
        return response(record)

    def private(self, app: str, api: str, args: Mapping[str, Any]) -> Any:
        """A call of a private API of ``app`` with the session's access token (logging in first);
        None when there is no token or the call did not go through."""
        token = self.accounts.login(self, app)
        if token is None:
            return None
        tool = f"{APP_PREFIX}{app}__{api}"
        record = self.record(tool, {**args, "access_token": token})
        if record.status == "unauthorized" and app in self.accounts.inherited:
            # The token of an earlier turn is no longer good: log in again, once.
            self.accounts.inherited.discard(app)
            self.accounts.tokens.pop(app, None)
            token = self.accounts.login(self, app)
            if token is None:
                return None
            record = self.record(tool, {**args, "access_token": token})
        if record.status != "ok":
            self.run.lines.append(f"{tool} did not go through ({record.status}): {error_of(record)}")
        return response(record)

    def own_email(self, app: str) -> str | None:
        """The user's address in ``app``: the username it logged in with, else its account."""
        user = self.accounts.usernames.get(app)
        if user and "@" in user:
            return user
        account = (
            self.private(app, "show_account", {}) if self.has(f"{APP_PREFIX}{app}__show_account") else None
        )
        return str(account["email"]) if isinstance(account, Mapping) and account.get("email") else None


# ---------------------------------------------------------------- reading records and words


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


def quoted(text: str) -> list[str]:
    return [a or b for a, b in _QUOTED.findall(text)]


def _digits_match(digits: set[str], shown: str) -> int:
    """How many of ``digits`` end a number of ``shown`` (a card's last four digits)."""
    groups = re.findall(r"\d+", shown)
    return sum(1 for d in digits if any(g.endswith(d) for g in groups))


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
        scored.append(overlap(terms, shown) + 2 * _digits_match(digits, shown))
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


def _names(text: str) -> list[str]:
    found = [n for n in _NAME.findall(text) if n.split()[0].lower() not in _NOT_NAMES]
    return list(dict.fromkeys(found))


def people(ask: str) -> list[str]:
    """Capitalised names after the request verb ("Text Dario, Mina and Joss"): candidates only, a
    name is a recipient once the contacts (or the app's users) know it."""
    m = re.search(r"\b(?i:text|message|sms|email|e-mail|tell|remind|ask)\b", ask)
    return _names(ask[m.end() :] if m else ask)


def full_name(record: Mapping[str, Any]) -> str:
    """A person's name in a record: ``name``, else ``first_name last_name``."""
    if record.get("name"):
        return str(record["name"])
    return f"{record.get('first_name') or ''} {record.get('last_name') or ''}".strip()


def named(records: Iterable[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The people among ``records`` whose name has every word of ``name`` (a search ranks every
    record; only these match)."""
    wanted = set(words(name))
    return [r for r in records if wanted and wanted <= set(words(full_name(r)))]


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


def _which(name: str, found: Sequence[dict[str, Any]], key: str) -> str:
    shown = ", ".join(f"{full_name(r)} ({r.get(key)})" for r in found[:5])
    return f"Which {name} do you mean: {shown}?"


# ---------------------------------------------------------------- actions


def purchase(a: ActionInput, *, commit: bool) -> None:
    search = f"{AMAZON}search_products"
    if not a.has(search):
        return
    query = product_query(a.asked)
    args: dict[str, Any] = {"query": query, "page_limit": PAGE}
    limit = max_price(a.request)
    if limit is not None:
        args["max_price"] = limit
    products = first_with(a.call(search, args), "product_id")
    wanted = key_terms(query)
    # Only a product named like the thing asked for (the search ranks every product).
    products = [p for p in products if overlap(wanted, str(p.get("name") or ""))]
    if not products and len(query.split()) > 1:
        retry = key_terms(query)[-1:]
        found = first_with(a.call(search, {**args, "query": " ".join(retry)}), "product_id")
        products = [p for p in found if overlap(retry, str(p.get("name") or ""))]
    product = best_match(products, a.request)
    if product is None:
        a.run.lines.append(f"I found no product matching '{query}'; which product do you mean?")
        return
    n = quantity(a.request)
    name = product.get("name") or f"product {product['product_id']}"
    price = product.get("price")
    shown = f"{name}" + (f" (${price})" if price is not None else "")
    if not commit:
        # Nothing goes into the cart yet: the answers may change the product or the quantity.
        a.run.lines.append(f"I found {shown}; I will order it once you answer the questions below.")
        a.accounts.ready(a, "amazon")
        return
    cards = first_with(a.private("amazon", "show_payment_cards", {}), "payment_card_id")
    if a.accounts.tokens.get("amazon") is None:
        return  # no login: the reply asks for one
    card = resolve(cards, a.request)
    address = resolve(first_with(a.private("amazon", "show_addresses", {}), "address_id"), a.request)
    if card is None or address is None:
        a.run.lines.append(
            f"I found {shown}. Which payment card and which delivery address should I use for the order?"
        )
        return
    pack = re.search(r"\bpacks? of (\d+)\b", str(name), re.IGNORECASE)
    if pack and n >= int(pack.group(1)) > 1:
        n = -(-n // int(pack.group(1)))  # the user counted items; the shop sells packs of them
    if not _fill_cart(a, product, n, shown):
        return
    placed = a.private(
        "amazon",
        "place_order",
        {"payment_card_id": card["payment_card_id"], "address_id": address["address_id"]},
    )
    if isinstance(placed, dict) and "order_id" in placed:
        total = _TOTAL.search(str(placed.get("message", "")))
        a.run.lines.append(
            f"Placed order {placed['order_id']}" + (f" (total ${total.group(1)})" if total else "") + "."
        )


def _fill_cart(a: ActionInput, product: Mapping[str, Any], n: int, shown: str) -> bool:
    """Put ``n`` of ``product`` in the cart, which then holds what the user means to order: other
    products already there are ordered only if the user said so (else they are asked about)."""
    cart = a.private("amazon", "show_cart", {})
    items = first_with(cart, "product_id")
    others = [i for i in items if i.get("product_id") != product["product_id"]]
    clear = False
    if others:
        if _CLEAR_CART.search(a.request):
            clear = True
        elif not _KEEP_CART.search(a.request):
            listed = ", ".join(str(i.get("product_name") or i["product_id"]) for i in others)
            a.run.lines.append(
                f"I found {shown}, but your cart already holds {listed}: should I order those too, "
                "or remove them first?"
            )
            return False
    pid = product["product_id"]
    if not clear and len(items) > len(others):
        # Already in the cart: set the quantity, rather than add to it.
        done = a.private("amazon", "update_product_quantity_in_cart", {"product_id": pid, "quantity": n})
    else:
        args = {"product_id": pid, "quantity": n, "clear_cart_first": clear}
        done = a.private("amazon", "add_product_to_cart", args)
    if done is None:
        return False  # nothing in the cart: no order
    a.run.lines.append(f"Put {n} x {shown} in the cart.")
    return True


def _contacts(a: ActionInput, name: str) -> list[dict[str, Any]]:
    """The user's contacts called ``name`` (phone search_contacts, with a login)."""
    if not a.has(f"{PHONE}search_contacts"):
        return []
    return named(
        first_with(a.private("phone", "search_contacts", {"query": name, "page_limit": PAGE}), "contact_id"),
        name,
    )


def _users(a: ActionInput, app: str, name: str) -> list[dict[str, Any]]:
    """The users of ``app`` called ``name`` (gmail's search is public, splitwise's is not)."""
    tool = f"{APP_PREFIX}{app}__search_users"
    if not a.has(tool):
        return []
    args = {"query": name, "page_limit": PAGE}
    found = a.call(tool, args) if app == "gmail" else a.private(app, "search_users", args)
    return [u for u in named(first_with(found, "email"), name) if u.get("email")]


def _addresses(a: ActionInput, names: Sequence[str]) -> tuple[list[str], list[str]]:
    """The email addresses of ``names``: from the contacts when a phone login is at hand, else
    (or when the contacts do not know them) from gmail's users; and questions about the names
    that fit several people."""
    found: list[str] = []
    questions: list[str] = []
    for name in names:
        matches = _contacts(a, name) if a.accounts.usable("phone") else []
        matches = [m for m in matches if m.get("email")] or _users(a, "gmail", name)
        emails = list(dict.fromkeys(str(m["email"]) for m in matches))
        if len(emails) == 1:
            found.append(emails[0])
        elif emails:
            questions.append(_which(name, matches, "email"))
    return found, questions


def _subject(a: ActionInput, names: Sequence[str]) -> str:
    obj = request_object(a.asked)
    topic = re.split(r"\s+(?:saying|that says|to say|telling)\b|:", obj)[0]
    for name in names:
        if topic.startswith(name):
            topic = topic[len(name) :].strip()
    topic = re.sub(r"^(?:and\s+\w+\s+)?(?:about|regarding|re)\s+", "", topic, flags=re.IGNORECASE) or obj
    return clip(topic[:1].upper() + topic[1:], 80)


def _reply(a: ActionInput, *, commit: bool) -> bool:
    """Reply to the mail the request points at; whether it found one."""
    who = person(a.asked) or request_object(a.request)
    args = {"query": who, "page_limit": PAGE}
    threads = first_with(a.private("gmail", "show_inbox_threads", args), "email_thread_id")
    terms = key_terms(who)
    relevant = [
        t
        for t in threads
        if overlap(terms, " ".join([str(t.get("subject", "")), *map(full_name, t.get("participants") or [])]))
    ]
    target = best_match(relevant, a.request)
    if target is None:
        return False
    thread = a.private("gmail", "show_thread", {"email_thread_id": target["email_thread_id"]})
    mine = {e.lower() for e in a.accounts.own_emails()} | {a.accounts.usernames.get("gmail", "").lower()}
    emails = first_with(thread, "email_id")
    theirs = [e for e in emails if str((e.get("sender") or {}).get("email", "")).lower() not in mine]
    if not (theirs or emails):
        return False
    email = (theirs or emails)[-1]
    sender = full_name(email.get("sender") or {}) or "the sender"
    subject = target.get("subject", "")
    if not commit:
        a.run.lines.append(f"I will reply to '{subject}' from {sender} once you confirm.")
        return True
    args = {"email_thread_id": target["email_thread_id"], "email_id": email["email_id"], "body": a.body}
    if a.private("gmail", "reply_to_email", args) is not None:
        a.run.lines.append(f"Replied to '{subject}' from {sender}.")
    return True


def email(a: ActionInput, *, commit: bool) -> None:
    if not a.has(f"{GMAIL}send_email"):
        return
    if a.accounts.login(a, "gmail") is None:
        return  # the reply asks for the login
    if (
        re.search(r"\breply\b", a.asked, re.I)
        and a.has(f"{GMAIL}show_inbox_threads")
        and _reply(a, commit=commit)
    ):
        return
    names = people(a.asked)
    mine = {e.lower() for e in a.accounts.own_emails()}
    to = EMAIL.findall(a.asked) or [e for e in EMAIL.findall(a.request) if e.lower() not in mine]
    questions: list[str] = []
    if not to:
        to, questions = _addresses(a, names)
    if not to:
        a.run.lines.extend(questions or ["Whom should I e-mail: which address or contact?"])
        return
    to = list(dict.fromkeys(to))
    subject = _subject(a, names)
    shown = ", ".join(to)
    draft = _draft_id(a)
    if not commit:
        if a.has(f"{GMAIL}create_draft") and draft is None:
            args = {"recipient_email_addresses": to, "subject": subject, "body": a.body}
            if a.private("gmail", "create_draft", args) is not None:
                a.run.lines.append(
                    f"Drafted the e-mail to {shown} ('{subject}'); I will send it once you confirm."
                )
        return
    if draft is not None and a.has(f"{GMAIL}send_email_from_draft"):
        # The draft of an earlier turn, brought up to date, is the mail.
        update = {"draft_id": draft, "email_addresses": to, "subject": subject, "body": a.body}
        if a.private("gmail", "update_draft", update) is not None:
            if a.private("gmail", "send_email_from_draft", {"draft_id": draft}) is not None:
                a.run.lines.append(f"Sent the e-mail to {shown} with subject '{subject}'.")
            return
    sent = a.private("gmail", "send_email", {"email_addresses": to, "subject": subject, "body": a.body})
    if sent is not None:
        a.run.lines.append(f"Sent the e-mail to {shown} with subject '{subject}'.")


def _draft_id(a: ActionInput) -> int | None:
    """The draft this session made in an earlier turn, if any."""
    for record in reversed(a.earlier):
        made = response(record) if record.tool_name == f"{GMAIL}create_draft" else None
        if isinstance(made, Mapping) and isinstance(made.get("draft_id"), int):
            return int(made["draft_id"])
    return None


def _number(raw: str) -> str:
    return ("+" if raw.strip().startswith("+") else "") + re.sub(r"\D", "", raw)


def text_message(a: ActionInput, *, commit: bool) -> None:
    tool = f"{PHONE}send_text_message"
    if not a.has(tool):
        return
    if not commit:
        a.accounts.ready(a, "phone")
        return
    if a.accounts.login(a, "phone") is None:
        return
    own = a.accounts.own_numbers()
    targets = [
        _number(n) for n in PHONE_NUMBER.findall(a.asked) if not _DATE.search(n) and _number(n) not in own
    ]
    questions: list[str] = []
    for name in people(a.asked) if not targets else ():
        found = [c for c in _contacts(a, name) if c.get("phone_number")]
        numbers = list(dict.fromkeys(str(c["phone_number"]) for c in found))
        if len(numbers) == 1:
            targets.append(numbers[0])  # a name the contacts do not know is no recipient ("Easter week")
        elif numbers:
            questions.append(_which(name, found, "phone_number"))
    if not targets:
        a.run.lines.extend(
            questions or ["Whom should I text? I found nobody in your contacts by the names you gave."]
        )
        return
    a.run.lines.extend(questions)
    for number in dict.fromkeys(targets):
        if a.private("phone", "send_text_message", {"phone_number": number, "message": a.body}) is not None:
            a.run.lines.append(f"Texted {number}: {clip(a.body, 160)}")


def note(a: ActionInput, *, commit: bool) -> None:
    if not a.has(f"{NOTE}create_note"):
        return
    m = _TITLED.search(a.request)
    title = clip(m.group(1) if m else request_object(a.request), 80)
    args: dict[str, Any] = {"title": title, "content": a.body}
    tags = _TAGS.findall(a.asked)
    if tags:
        args["tags"] = list(dict.fromkeys(t.lower() for t in tags))
    if a.private("simple_note", "create_note", args) is not None:
        a.run.lines.append(f"Saved a note '{title}'.")


def _group(groups: Sequence[dict[str, Any]], text: str) -> dict[str, Any] | None:
    """The group ``text`` names (in quotes, or by the words of its name)."""
    names = {q.lower() for q in quoted(text)}
    for group in groups:
        if str(group.get("name", "")).lower() in names:
            return group
    terms = key_terms(text)
    scored = [overlap(terms, str(g.get("name", ""))) for g in groups]
    best = max(scored, default=0)
    return groups[scored.index(best)] if best and scored.count(best) == 1 else None


def _expense_description(ask: str) -> str:
    m = re.search(
        r"\b(?:split|record|log|add|put|enter)\s+(?:the|a|an|our|my|this)?\s*(.+?)"
        r"(?:\s+(?:with|between|among|in|on|to|for|into)\b|[.?!,;]|$)",
        ask,
        re.IGNORECASE,
    )
    text = _MONEY.sub(" ", m.group(1) if m else request_object(ask))
    text = re.sub(r"\b(?:expense|bill|cost)s?\s+(?:of|for)\b", " ", text, flags=re.I)
    return clip(" ".join(text.split()) or "expense", 80)


def expense(a: ActionInput, *, commit: bool) -> None:
    if not a.has(f"{SPLITWISE}record_expense"):
        return
    if not commit:
        a.accounts.ready(a, "splitwise")
        return
    value = amount(a.request)
    if value is None:
        a.run.lines.append("What amount should I record, and in which Splitwise group?")
        return
    groups = first_with(a.private("splitwise", "show_groups", {"page_limit": PAGE}), "group_id")
    if a.accounts.tokens.get("splitwise") is None:
        return
    me = a.own_email("splitwise")
    group = _group(groups, a.asked) or _group(groups, a.request)
    members: list[dict[str, Any]] = []
    questions: list[str] = []
    if group is None:
        with_ = _WITH.search(a.asked)
        for name in _names(with_.group(1)) if with_ else ():
            found = _users(a, "splitwise", name)
            if len(found) == 1:
                members.append(found[0])
            elif found:
                questions.append(_which(name, found, "email"))
        if not members and not questions and len(groups) == 1:
            group = groups[0]
    if group is not None:
        if not group.get("members") and a.has(f"{SPLITWISE}show_group"):
            group = a.private("splitwise", "show_group", {"group_id": group["group_id"]}) or group
        members = first_with(group.get("members") or [], "email")
    elif members and me:
        members = [{"name": "me", "email": me}, *members]
    if questions or len(members) < 2 or me is None:
        a.run.lines.extend(questions or ["Which Splitwise group or people should the expense be split with?"])
        return
    payer_name = _PAYER.search(a.asked)
    payer = named(members, payer_name.group(1) or payer_name.group(2)) if payer_name else []
    payer_email = str(payer[0]["email"]) if len(payer) == 1 else me
    debtors = list(dict.fromkeys(str(m["email"]) for m in members))
    description = _expense_description(a.asked)
    args: dict[str, Any] = {
        "description": description,
        "paid_amount": value,
        "payer_email": payer_email,
        "debtor_emails": debtors,  # equal shares, the payer's own included
    }
    if group is not None:
        args["group_id"] = group["group_id"]
    if a.private("splitwise", "record_expense", args) is not None:
        where = f"group {group.get('name', group['group_id'])}" if group is not None else ", ".join(debtors)
        a.run.lines.append(
            f"Recorded '{description}', ${value:.2f} paid by {payer_email}, split equally in {where}."
        )


def _song_text(song: Mapping[str, Any]) -> str:
    artists = " ".join(full_name(x) for x in song.get("artists") or [] if isinstance(x, Mapping))
    return " ".join(str(song.get(k) or "") for k in ("title", "genre", "album_title")) + " " + artists


def music(a: ActionInput, *, commit: bool) -> None:
    search = f"{SPOTIFY}search_songs"
    if not a.has(search):
        return
    obj = request_object(a.asked)
    terms = [t for t in key_terms(obj) if t not in _MUSIC_WORDS][:3]
    query = " ".join(terms) or obj
    found = first_with(a.call(search, {"query": query, "page_limit": PAGE}), "song_id")
    songs = [s for s in found if overlap(terms, _song_text(s))]  # the search ranks every song
    if re.search(r"\bplaylist\b", a.asked, re.I) and a.has(f"{SPOTIFY}create_playlist"):
        m = _TITLED.search(a.request)
        title = clip(m.group(1) if m else obj, 60)
        count = _SONG_COUNT.search(a.request)
        songs = songs[: int(count.group(1)) if count else 5]
        made = a.private("spotify", "create_playlist", {"title": title})
        if not isinstance(made, Mapping) or "playlist_id" not in made:
            return
        added = 0
        for song in songs:
            args = {"playlist_id": made["playlist_id"], "song_id": song["song_id"]}
            added += a.private("spotify", "add_song_to_playlist", args) is not None
        a.run.lines.append(f"Created the playlist '{title}' with {added} song(s).")
        if not songs:
            a.run.lines.append(f"I found no songs matching '{query}'; which songs should go in it?")
        return
    chosen = best_match(songs, a.request)
    if chosen is None:
        a.run.lines.append(f"I found no song matching '{query}'; which song do you mean?")
        return
    if a.has(f"{SPOTIFY}play_music") and a.private("spotify", "play_music", {"song_id": chosen["song_id"]}):
        a.run.lines.append(f"Playing {chosen.get('title', chosen['song_id'])}.")


def _project(a: ActionInput) -> tuple[int | None, str]:
    """The todoist project the request names (0, the Inbox, when it names none; None when it names
    one the user does not have) and the words that named it."""
    m = _PROJECT.search(a.asked)
    if m is None:
        return 0, ""
    name = next(g for g in m.groups() if g)
    if name.lower() == "inbox":
        return 0, m.group(0)
    projects = first_with(
        a.private("todoist", "show_projects", {"query": name, "page_limit": PAGE}), "project_id"
    )
    wanted = set(words(name))
    found = [p for p in projects if wanted <= set(words(str(p.get("name", ""))))]
    if len(found) != 1:
        if a.accounts.tokens.get("todoist") is not None:
            a.run.lines.append(
                f"I found no single Todoist project called '{name}'; which project should I use?"
            )
        return None, m.group(0)
    return int(found[0]["project_id"]), m.group(0)


def todo(a: ActionInput, *, commit: bool) -> None:
    if not a.has(f"{TODOIST}create_task"):
        return
    if a.accounts.login(a, "todoist") is None:
        return
    project, phrase = _project(a)
    if project is None:
        return
    m = _TODO.search(a.asked)
    what = m.group(1) if m else content_of(request_object(a.asked))
    if phrase:
        what = what.replace(phrase, " ")
    what = re.sub(r"^\s*(?:to\s+)?(?:my|the|our)?\s*(?:[\w-]+\s+)?(?:project|list)\s*[:,-]\s*", "", what)
    what = _TITLE_NOISE.sub(" ", what)  # the due date and priority go into their own fields
    title = clip(" ".join(what.split()).strip(" :,-").rstrip("."), 200)
    args: dict[str, Any] = {"project_id": project, "title": title}
    date = _DATE.search(a.request)
    if date:
        args["due_date"] = date.group(0)
    if _PRIORITY.search(a.request):
        args["priority"] = "high"
    elif _LOW_PRIORITY.search(a.request):
        args["priority"] = "low"
    if a.private("todoist", "create_task", args) is not None:
        where = "" if project == 0 else f" in project {project}"
        a.run.lines.append(
            f"Added the task '{title}'{where}" + (f" due {args['due_date']}." if date else ".")
        )


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
