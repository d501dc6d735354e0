"""The assistant's cross-session memory of one user: notes kept from each finished session.

``consolidate`` is the offline rule: what the user said beyond the bare request (answers to
questions, requirements they provided, follow-ups) and the preference-like statements of the
request itself become notes; the changes the assistant made that later sessions may build on
(files written, orders placed, messages sent) become decisions. A session's notes replace any
earlier notes of the same task, so a resumed session consolidates again without duplicates.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from messages.episodes import TurnRecord
from world.episodes.assistant._text import clip, key_terms, overlap, sentences

NoteKind = Literal["preference", "fact", "decision"]

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
    "mcp_appworld_gmail__send_email": ("to", "subject"),
    "mcp_appworld_phone__send_text_message": ("contact_name", "phone_number"),
    "mcp_appworld_todoist__create_task": ("content",),
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


def strip_lead_in(text: str) -> str:
    """``text`` without a conversational lead-in ("One more thing: ...")."""
    return _LEAD_IN.sub("", text)


def note_kind(statement: str) -> NoteKind:
    return "preference" if _PREFERENCE.search(statement) else "fact"


def _statements(text: str) -> list[str]:
    """The informative sentences of a user's turn (>= 2 key terms: "Thanks!" carries nothing)."""
    return [_LEAD_IN.sub("", s) for s in sentences(text) if len(key_terms(s)) >= 2]


def _decisions(record: TurnRecord) -> list[str]:
    out: list[str] = []
    for call in record.tool_records:
        keys = _DECISION_TOOLS.get(call.tool_name)
        if keys is None or call.status != "ok":
            continue
        shown = ", ".join(f"{k}={call.call[k]}" for k in keys if k in call.call)
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
    kept = [n for n in memory.notes if n.task_id != task_id]
    return AssistantMemory(user_id=memory.user_id, notes=[*kept, *fresh])


def relevant_notes(memory: AssistantMemory, request: str, *, limit: int = 8) -> list[MemoryNote]:
    """Notes to apply to ``request``: every preference (a user's standing requirement applies until
    they change it) and the facts and decisions sharing a key term with it; newest first."""
    terms = key_terms(request)
    scored: list[tuple[int, int, MemoryNote]] = []
    for i, note in enumerate(memory.notes):
        shared = overlap(terms, note.text)
        if note.kind == "preference" or shared:
            scored.append((shared + (1 if note.kind == "preference" else 0), i, note))
    scored.sort(key=lambda t: (-t[0], -t[1]))
    return [n for _, _, n in scored[:limit]]
