"""The assistant's cross-session memory of one user: notes kept from each finished session.

``consolidate`` is the offline rule: what the user said beyond the bare request (answers to
questions, requirements they provided, follow-ups) and the preference-like statements of the
request itself become notes; the changes the assistant made that later sessions may build on
(files written, orders placed, messages sent) become decisions. A session's notes replace any
earlier notes of the same task, so a resumed session consolidates again without duplicates.

App logins are ``credential`` notes: the logins the user gave for an app, and the logins that
worked, stay in this assistant's memory so that later sessions can log in again; a login the app
refused is forgotten. A password is the user's data and goes nowhere else: a statement that
carries one never becomes a preference or a fact, ``redact`` keeps passwords out of the texts the
assistant writes (files, messages, replies), and ``relevant_notes`` never returns credentials.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from messages.episodes import TurnRecord
from world.episodes.assistant._text import clip, overlap, sentences
from world.episodes.assistant.intent import requested_kinds
from world.text import STOPWORDS, key_terms

NoteKind = Literal["preference", "fact", "decision", "credential"]

_PREFERENCE = re.compile(
    r"\b(prefer|preferred|always|never|from now on|in future|every|each time|by default|whenever|"
    r"remember|i like|as usual|all my|all our|my other|our other)\b",
    re.IGNORECASE,
)
"""A standing requirement says it holds beyond this request ("always", "every shop document");
the rest of what a user adds is about this task (a fact, kept for requests that share its words)."""
_LEAD_IN = re.compile(
    r"^\s*(?:one more thing|to answer your question|also|oh,? and|and|p\.?s\.?)\s*[:,-]\s*", re.IGNORECASE
)
_REQUEST_STATEMENT = re.compile(
    r"\b(i prefer|always|never|from now on|in future|remember|by default|every time)\b", re.IGNORECASE
)
_USER_KINDS = frozenset({"answer", "provide", "followup"})
_DECISION_TOOLS = {
    "write_file": ("path",),
    "mcp_appworld_file_system__create_file": ("path",),
    "mcp_appworld_amazon__place_order": ("payment_card_id", "address_id"),
    "mcp_appworld_gmail__send_email": ("email_addresses", "subject"),
    "mcp_appworld_gmail__reply_to_email": ("email_thread_id", "email_id"),
    "mcp_appworld_gmail__send_email_from_draft": ("draft_id",),
    "mcp_appworld_phone__send_text_message": ("phone_number",),
    "mcp_appworld_splitwise__record_expense": ("description", "paid_amount", "group_id"),
    "mcp_appworld_spotify__create_playlist": ("title",),
    "mcp_appworld_todoist__create_task": ("title", "project_id", "due_date"),
    "mcp_appworld_simple_note__create_note": ("title",),
    "schedule_task": ("text",),
}
MAX_NOTES_PER_TASK = 12


class MemoryNote(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    kind: NoteKind
    text: str
    sim_time: float = 0.0


class AssistantMemory(BaseModel):
    """Treated as a value: ``consolidate`` returns a new one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    notes: list[MemoryNote] = []


# ---------------------------------------------------------------- credentials

APP_PREFIX = "mcp_appworld_"


@dataclass(frozen=True)
class Credential:
    """A login someone wrote down: the app (None: the words tie it to no app), the username
    (an email, a phone number, or None when not given) and the password."""

    app: str | None
    username: str | None
    password: str


_APP_MENTION = re.compile(
    r"\b(?:(amazon)|(g-?mail|e-?mail(?=\s+(?:account|password|login|app)\b))|"
    r"(phone(?!\s*(?:number|no\b|#)))|(simple[ _-]?notes?|notes app)|(splitwise)|(spotify)|(todoist))\b",
    re.IGNORECASE,
)
_MENTION_APPS = ("amazon", "gmail", "phone", "simple_note", "splitwise", "spotify", "todoist")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
PHONE_NUMBER = re.compile(r"(?<![\w+])\+?\d[\d\s().-]{5,}\d(?!\w)")
_VALUE = r"""(?:"(?P<dq>[^"\n]+)"|'(?P<sq>[^'\n]+)'|`(?P<bq>[^`\n]+)`|(?P<raw>[^\s"'`]\S*))"""
_PASSWORD = re.compile(
    r"\b(?:password|passcode|pass word|pwd)\b[\"']?"
    r"(?:\s+(?:for|of|on|to)\s+(?:my\s+|the\s+|your\s+)?(?P<for>[\w-]+)(?:\s+(?:account|app|login))?)?"
    r"\s*(?:(?:is|[:=]|-|would be|will be)\s*)?" + _VALUE,
    re.IGNORECASE,
)
_USER_LABEL = re.compile(
    r"\b(?:user\s?name|login(?:\s+email)?|log-in|user|e-?mail(?:\s+address)?|account)\b[\"']?\s*(?:is|[:=])\s*"
    + _VALUE,
    re.IGNORECASE,
)
_SLASH = re.compile(r"(?P<user>[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\+?\d[\d().-]{5,}\d)\s*/\s*" + _VALUE)
_MY_EMAIL = re.compile(r"\bmy\s+(?:e-?mail|gmail)(?:\s+address)?\s+is\s+(" + EMAIL.pattern + ")", re.I)
_MY_NUMBER = re.compile(
    r"\bmy\s+(?:phone\s+|mobile\s+|cell\s+)?(?:number|phone)\s+is\s+(" + PHONE_NUMBER.pattern + ")", re.I
)
_NOT_PASSWORDS = frozenset(
    {"same", "below", "above", "here", "there", "attached", "unknown", "hidden", "required", "withheld",
     "field", "protected", "reset", "manager", "hint", "please", "username", "email", "login", "password"}
)  # fmt: skip
_NOTE = re.compile(r"^Login for (?P<app>\w+): username (?P<user>\S+), password (?P<pw>.+)$")
_CLAUSE_SPLIT = re.compile(r"(,|;|\s+and\s+)")
_USER_CLAUSE = re.compile(
    r"\b(?:user\s?name|login|log-in|my\s+(?:phone\s+|mobile\s+|cell\s+)?number|my\s+e-?mail)\b", re.I
)


def _value(m: re.Match[str]) -> str:
    quoted = m.group("dq") or m.group("sq") or m.group("bq")
    if quoted:
        return quoted
    raw = m.group("raw")
    raw = raw.rstrip(",;")
    if raw.endswith(")") and "(" not in raw:
        raw = raw[:-1]
    if raw.endswith(".") and len(raw) > 1:
        raw = raw[:-1]  # the end of the sentence (an app's password is tried as written too)
    return raw


def _password_at(m: re.Match[str]) -> str | None:
    value = _value(m)
    if not re.search(r"\w", value) or value.endswith("?"):
        return None
    if value.lower() in STOPWORDS or value.lower() in _NOT_PASSWORDS:
        return None
    return value


def app_named(word: str) -> str | None:
    """The app a word names ("Splitwise", "gmail", "simple note"), else None."""
    m = _APP_MENTION.fullmatch(word.strip())
    return _mentioned(m) if m else None


def _mentioned(m: re.Match[str]) -> str | None:
    return next((app for app, g in zip(_MENTION_APPS, m.groups(), strict=True) if g), None)


def _mentions(text: str) -> list[tuple[int, str]]:
    """Apps a text names, with where; a name inside an address (``x@gmail.com``) is no mention."""
    inside = [(m.start(), m.end()) for m in EMAIL.finditer(text)]
    return [
        (m.start(), app)
        for m in _APP_MENTION.finditer(text)
        if (app := _mentioned(m)) and not any(a <= m.start() < b for a, b in inside)
    ]


def _digits(number: str) -> str:
    return ("+" if number.strip().startswith("+") else "") + re.sub(r"\D", "", number)


def is_phone(value: str | None) -> bool:
    return value is not None and "@" not in value and len(re.sub(r"\D", "", value)) >= 6


def _username(value: str | None) -> str | None:
    """A username as an app takes it: a phone number by its digits."""
    return _digits(value) if value is not None and is_phone(value) else value


def _usernames(line: str, skip: Sequence[tuple[int, int]]) -> list[tuple[int, str]]:
    """Usernames a line gives, with where they stand: emails, phone numbers, labelled values
    (none inside the ``skip`` spans: the passwords)."""
    found = [(m.start(), m.group(0)) for m in EMAIL.finditer(line)]
    found += [(m.start(), _digits(m.group(0))) for m in PHONE_NUMBER.finditer(line)]
    for m in _USER_LABEL.finditer(line):
        value = _value(m)
        ok = value and value.lower() not in STOPWORDS and value.lower().strip(":") not in _NOT_PASSWORDS
        if ok and not EMAIL.search(value) and not is_phone(value):
            found.append((m.end() - len(value), value))
    return sorted((p, u) for p, u in found if not any(a <= p < b for a, b in skip))


_HEADER_CELL = re.compile(r"^[a-z][a-z _-]{0,19}$")
_USER_COLUMNS = frozenset({"username", "user", "email", "login", "phone", "phone number"})
_APP_COLUMNS = frozenset({"app", "service", "account", "site", "platform"})


def _cells(line: str) -> list[str]:
    sep = "|" if "|" in line else ","
    return [c.strip() for c in line.strip().strip("|").split(sep)]


def _header(line: str) -> list[str] | None:
    """The column names of a table header with a password column (CSV or markdown), else None."""
    cells = [c.lower() for c in _cells(line)]
    if len(cells) >= 2 and "password" in cells and all(_HEADER_CELL.match(c) for c in cells):
        return cells
    return None


def _row(names: list[str], line: str) -> Credential | None:
    cells = _cells(line)
    if len(cells) != len(names) or not cells[names.index("password")]:
        return None
    user = next((i for i, n in enumerate(names) if n in _USER_COLUMNS), None)
    app = next((i for i, n in enumerate(names) if n in _APP_COLUMNS), None)
    username = cells[user] if user is not None and cells[user] else None
    return _credential(
        app_named(cells[app]) if app is not None else None,
        _username(username),
        cells[names.index("password")],
    )


def _slashes(line: str) -> list[tuple[re.Match[str], str]]:
    """``user / password`` pairs and their passwords (not ``Email: x / Password: y``, which
    ``_PASSWORD`` reads)."""
    return [
        (m, pw)
        for m in _SLASH.finditer(line)
        if not re.match(r"(?i)pass|pwd", _value(m)) and (pw := _password_at(m))
    ]


def _passwords(line: str) -> list[tuple[re.Match[str], str]]:
    return [(m, pw) for m in _PASSWORD.finditer(line) if (pw := _password_at(m))]


def _line_credentials(
    line: str, block_app: str | None, pending: str | None
) -> tuple[list[Credential], str | None, str | None]:
    """The logins one line gives, and the app heading and username the next lines inherit."""
    passwords, slashes = _passwords(line), _slashes(line)
    mentions = _mentions(line)
    spans = [(m.start("for") if m.group("for") else m.start(), m.end()) for m, _ in passwords]
    users = _usernames(line, spans)
    if not passwords and not slashes:
        if mentions and not users:
            return [], mentions[-1][1], None  # a heading: "## Amazon", "Spotify account:"
        if users:  # "My Spotify login: email x," with the password on the next line
            return [], mentions[-1][1] if mentions else block_app, users[-1][1]
        return [], block_app, None if not line.strip() else pending
    out = []
    for m, password in passwords:
        named = app_named(m.group("for")) if m.group("for") else None
        app = named or next((a for p, a in reversed(mentions) if p < m.start()), None)
        app = app or next((a for p, a in mentions if p > m.start()), None)
        before = [u for p, u in users if p < m.start()]
        after = [u for p, u in users if p > m.end()]
        username = before[-1] if before else after[0] if after else pending
        out.append(_credential(app or block_app, username, password))
    for m, password in slashes:
        app = next((a for p, a in reversed(mentions) if p < m.start()), None) or block_app
        out.append(_credential(app, _username(m.group("user")), password))
    return out, block_app, pending


def credentials_in(text: str) -> list[Credential]:
    """The logins a text gives, in order: "Email: x / Password: y" (also over lines, under an app's
    heading), "My Splitwise login: x, password y", "my phone number is N, and the phone password
    is P", "x@y.com / pw", and tables (CSV, markdown) with a password column. The app is the one
    named nearest before the password (or "password for <app>"), else the heading above; a phone
    number as the only username makes it a phone login."""
    out: list[Credential] = []
    block_app: str | None = None
    pending: str | None = None
    table: list[str] | None = None
    for line in text.splitlines():
        if table is not None:
            if line.strip() and set(line.strip()) <= set("|-: "):
                continue  # a markdown table's rule
            row = _row(table, line)
            if row is not None:
                out.append(row)
                continue
            table = None
        table = _header(line)
        if table is None:
            found, block_app, pending = _line_credentials(line, block_app, pending)
            out += found
    return out


def _credential(app: str | None, username: str | None, password: str) -> Credential:
    if app is None and is_phone(username):
        app = "phone"
    return Credential(app=app, username=username, password=password)


def known_usernames(texts: Iterable[str]) -> tuple[list[str], list[str]]:
    """The user's own emails and phone numbers, as they stated them ("my email is ..."), newest
    last."""
    emails: list[str] = []
    phones: list[str] = []
    for text in texts:
        emails += _MY_EMAIL.findall(text)
        phones += [_digits(n) for n in _MY_NUMBER.findall(text)]
    return emails, phones


def has_credential(text: str) -> bool:
    """Whether a text gives a password."""
    return bool(_passwords(text) or _slashes(text)) or any(_header(line) for line in text.splitlines())


_LOGIN_WORDS = re.compile(r"\b(?:pass(?:word|code)s?|user\s?names?|log-?ins?|credentials?)\b", re.IGNORECASE)


def mentions_login(text: str) -> bool:
    """Whether a text is about a login (gives a password, or names a username or password field):
    no requirement to apply, no line to copy anywhere."""
    return bool(_LOGIN_WORDS.search(text)) or has_credential(text)


def _without_credential_clauses(sentence: str) -> str:
    parts = _CLAUSE_SPLIT.split(sentence)
    kept: list[str] = []
    for i in range(0, len(parts), 2):
        clause = parts[i]
        if has_credential(clause) or _USER_CLAUSE.search(clause):
            continue
        if kept:
            kept.append(parts[i - 1])
        kept.append(clause)
    return "".join(kept).strip(" ,;")


def redact(text: str) -> str:
    """``text`` without the passwords it gives: a sentence that only gives a login goes (and a
    table of logins); in a sentence that also asks for something, the clauses that give it go."""
    lines = []
    table: list[str] | None = None
    for line in text.split("\n"):
        in_table = table is not None and (_row(table, line) is not None or set(line.strip()) <= set("|-: "))
        if in_table and line.strip():
            continue
        table = _header(line)
        if table is not None:
            continue
        if not has_credential(line):
            lines.append(line)
            continue
        kept = []
        for sentence in sentences(line) or [line]:
            if not has_credential(sentence):
                kept.append(sentence)
            elif requested_kinds(sentence):
                kept.append(_without_credential_clauses(sentence))
        if any(k.strip() for k in kept):
            lines.append(" ".join(k for k in kept if k.strip()))
    return "\n".join(lines)


def credential_text(app: str, username: str, password: str) -> str:
    """The text of a credential note (``note_credential`` reads it back)."""
    return f"Login for {app}: username {username}, password {password}"


def note_credential(note: MemoryNote) -> Credential | None:
    """The login a ``credential`` note keeps, else None."""
    m = _NOTE.match(note.text) if note.kind == "credential" else None
    return Credential(m.group("app"), m.group("user"), m.group("pw")) if m else None


def _logins(record: TurnRecord) -> list[tuple[Credential, bool]]:
    """The logins an assistant turn tried, and whether each worked."""
    out = []
    for call in record.tool_records:
        name = call.tool_name.removeprefix(APP_PREFIX)
        app, _, api = name.partition("__")
        username, password = call.call.get("username"), call.call.get("password")
        if api == "login" and isinstance(username, str) and isinstance(password, str):
            out.append((Credential(app, username, password), call.status == "ok"))
    return out


def _same_login(a: Credential, b: Credential) -> bool:
    return a.app == b.app and (a.username or "").lower() == (b.username or "").lower()


def credential_notes(transcript: Sequence[TurnRecord]) -> tuple[list[Credential], list[Credential]]:
    """What a session teaches about logins: the logins to remember (those that worked, and those
    the user gave for a named app that no login refused), and the logins that were refused."""
    keep: list[Credential] = []
    refused: list[Credential] = []
    for record in transcript:
        if record.role == "user":
            keep += [c for c in credentials_in(record.text) if c.app is not None and c.username]
            continue
        for login, worked in _logins(record):
            if worked:
                refused = [r for r in refused if r != login]
                keep.append(login)
            else:
                refused.append(login)
    keep = [c for c in keep if c not in refused]
    latest: dict[tuple[str | None, str], Credential] = {}
    for c in keep:  # a newer password of the same login wins
        latest.pop((c.app, (c.username or "").lower()), None)
        latest[(c.app, (c.username or "").lower())] = c
    return list(latest.values()), refused


# ---------------------------------------------------------------- consolidation


def strip_lead_in(text: str) -> str:
    """``text`` without a conversational lead-in ("One more thing: ...")."""
    return _LEAD_IN.sub("", text)


def note_kind(statement: str) -> NoteKind:
    return "preference" if _PREFERENCE.search(statement) else "fact"


def _statements(text: str) -> list[str]:
    """The informative sentences of a user's turn (>= 2 key terms: "Thanks!" carries nothing);
    what gives a login is no statement to remember as such."""
    return [_LEAD_IN.sub("", s) for s in sentences(redact(text)) if len(key_terms(s)) >= 2]


def _shown(value: object) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _decisions(record: TurnRecord) -> list[str]:
    out: list[str] = []
    for call in record.tool_records:
        keys = _DECISION_TOOLS.get(call.tool_name)
        if keys is None or call.status != "ok":
            continue
        shown = ", ".join(f"{k}={_shown(call.call[k])}" for k in keys if call.call.get(k) is not None)
        response = call.result.get("response") if isinstance(call.result, dict) else None
        made = ""
        if isinstance(response, dict):
            made = ", ".join(
                f"{k}={v}" for k, v in response.items() if k.endswith("_id") and not isinstance(v, dict)
            )
        out.append(clip(f"Done in an earlier session: {call.tool_name}({shown}) {made}".strip(), 240))
    return out


def consolidate(
    memory: AssistantMemory, *, task_id: str, transcript: Sequence[TurnRecord], sim_time: float
) -> AssistantMemory:
    """``memory`` with the notes of ``task_id`` rebuilt from its transcript (see the module doc)."""
    fresh: list[MemoryNote] = []
    seen: set[str] = {" ".join(n.text.lower().split()) for n in memory.notes if n.task_id != task_id}

    def add(kind: NoteKind, text: str) -> None:
        key = " ".join(text.lower().split())
        if key in seen or len(fresh) >= MAX_NOTES_PER_TASK:
            return
        seen.add(key)
        fresh.append(MemoryNote(task_id=task_id, kind=kind, text=clip(text, 400), sim_time=sim_time))

    for record in transcript:
        if record.role == "user" and record.kind in _USER_KINDS:
            for statement in _statements(record.text):
                add(note_kind(statement), statement)
        elif record.role == "user":
            for statement in _statements(record.text):
                if _REQUEST_STATEMENT.search(statement):
                    add("preference", statement)
        else:
            for decision in _decisions(record):
                add("decision", decision)
    logins, refused = credential_notes(transcript)

    def stale(note: MemoryNote) -> bool:
        old = note_credential(note)
        return old is not None and (old in refused or any(_same_login(old, c) for c in logins))

    kept = [n for n in memory.notes if n.task_id != task_id and not stale(n)]
    remembered = [
        MemoryNote(
            task_id=task_id,
            kind="credential",
            text=credential_text(c.app, c.username, c.password),
            sim_time=sim_time,
        )
        for c in logins
        if c.app is not None and c.username is not None
    ]
    return AssistantMemory(user_id=memory.user_id, notes=[*kept, *fresh, *remembered])


def relevant_notes(memory: AssistantMemory, request: str, *, limit: int = 8) -> list[MemoryNote]:
    """Notes to apply to ``request``: every preference (a user's standing requirement applies until
    they change it) and the facts and decisions sharing a key term with it; newest first. Logins
    are not applied to anything (``note_credential`` reads them)."""
    terms = key_terms(request)
    scored: list[tuple[int, int, MemoryNote]] = []
    for i, note in enumerate(memory.notes):
        if note.kind == "credential":
            continue
        shared = overlap(terms, note.text)
        if note.kind == "preference" or shared:
            scored.append((shared + (1 if note.kind == "preference" else 0), i, note))
    scored.sort(key=lambda t: (-t[0], -t[1]))
    return [n for _, _, n in scored[:limit]]
