"""Prompts of the built-in assistant's model path: the IntentFrame step, the ReAct step, memory."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from messages.aura import IntentFrame
from messages.episodes import TurnRecord, UserTurn
from messages.probes import ToolList
from world.episodes.assistant import MemoryNote
from world.episodes.assistant.memory import redact
from world.episodes.assistant.shortlist import Shortlist

Messages = list[dict[str, str]]

REACT_SYSTEM = """You are a proactive personal assistant working in the user's workspace and apps.
Users leave requirements unsaid: use what you remember about them, look for hints in their files,
and ask one targeted question about each important detail you cannot find. Then do the work with
the tools (write the files, place the orders, send the messages); do not only describe it.

Answer every step with one JSON object and nothing else:
{"thought": "why this step", "action": "<a tool name> | reply", "args": {...}, "reply": "..."}
- To call a tool: "action" is its exact name and "args" its arguments. You will see its result.
- To end your turn: "action": "reply" and "reply" is your message to the user (what you did,
  what you applied, and your questions, each ending with "?").
App tools (mcp_appworld_<app>__<api>) work as AppWorld's: log in first with
mcp_appworld_<app>__login (username: the account's email, or the phone number for the phone app;
the password the user gave) and pass the access_token it returns to that app's other tools.
You have at most {max_steps} steps this turn; the last one must be a reply."""

INTENT_SYSTEM = """Before acting on a user's request, estimate what they really need.
Answer with one JSON object and nothing else:
{"literal_need": "...", "implicit_needs": ["..."], "gap": 0.0-1.0,
 "recommended_probes": ["tool names worth calling first"], "confidence": 0.0-1.0, "rationale": "..."}
gap is 0 when the literal request says everything, 1 when the real need is mostly unstated."""

MEMORY_SYSTEM = """A session with the user has ended. Write down what is worth remembering for
later sessions: their stated preferences and standing requirements, facts about them, and the
decisions made (files written, orders placed). Answer with one JSON object and nothing else:
{"notes": [{"kind": "preference" | "fact" | "decision", "text": "one self-contained sentence"}]}"""


def _tools_text(tools: ToolList, shown: Shortlist | None = None) -> str:
    """The tools' JSON schemas; with a shortlist, only its ``full`` tools, and the other apps'
    tools by name (still callable)."""
    out: list[dict[str, Any]] = []
    for entry in tools.functions:
        fn = entry.get("function", entry)
        if isinstance(fn, dict) and (shown is None or fn.get("name") in shown.full):
            out.append({k: fn[k] for k in ("name", "description", "parameters") if k in fn})
    text = json.dumps(out, separators=(",", ":"))
    if shown is not None and shown.by_name:
        apps = "; ".join(f"{app}: {', '.join(apis)}" for app, apis in sorted(shown.by_name.items()))
        text += (
            "\nMore app tools, callable as mcp_appworld_<app>__<api> (ask with the arguments you "
            f"expect; a mistake is explained in the result): {apps}"
        )
    return text


def _notes_text(notes: Sequence[MemoryNote]) -> str:
    return "\n".join(f"- ({n.kind}) {n.text}" for n in notes) or "(nothing yet)"


def _user_text(turn: UserTurn) -> str:
    if turn.trigger is not None and turn.trigger.payload:
        return f"{turn.text}\nTrigger ({turn.trigger.source}) payload: {json.dumps(turn.trigger.payload)}"
    return turn.text


def intent_messages(turn: UserTurn, notes: Sequence[MemoryNote], tools: ToolList) -> Messages:
    names = ", ".join(sorted(tools.allowed))
    return [
        {"role": "system", "content": INTENT_SYSTEM},
        {
            "role": "user",
            "content": f"Request:\n{_user_text(turn)}\n\nWhat you remember about the user:\n"
            f"{_notes_text(notes)}\n\nTools: {names}",
        },
    ]


def react_messages(
    turn: UserTurn,
    transcript: Sequence[TurnRecord],
    notes: Sequence[MemoryNote],
    tools: ToolList,
    *,
    frame: IntentFrame | None,
    budget: int | None,
    max_steps: int,
    shown: Shortlist | None = None,
) -> Messages:
    system = REACT_SYSTEM.replace("{max_steps}", str(max_steps))
    system += f"\n\nTools (JSON schema):\n{_tools_text(tools, shown)}"
    system += f"\n\nWhat you remember about the user:\n{_notes_text(notes)}"
    if frame is not None:
        system += (
            f"\n\nYour estimate of the user's real need: {frame.literal_need}; implicit needs: "
            f"{'; '.join(frame.implicit_needs) or 'none'}; gap {frame.gap:.2f}. Probe first with at most "
            f"{budget} call(s), preferring: {', '.join(frame.recommended_probes) or 'any tool'}."
        )
    messages: Messages = [{"role": "system", "content": system}]
    for record in transcript:
        messages.append({"role": record.role, "content": record.text})
    messages.append({"role": "user", "content": _user_text(turn)})
    return messages


def observation(tool: str, status: str, result: dict[str, Any]) -> dict[str, str]:
    text = json.dumps(result, separators=(",", ":"), default=str)
    if len(text) > 6000:
        text = text[:6000] + "...(truncated)"
    return {"role": "user", "content": f"Observation from {tool} ({status}): {text}"}


def memory_messages(notes: Sequence[MemoryNote], transcript: Sequence[TurnRecord]) -> Messages:
    # Passwords are remembered by rule, never written into the model's notes.
    lines = [f"{r.role} ({r.kind}): {redact(r.text)}" for r in transcript]
    return [
        {"role": "system", "content": MEMORY_SYSTEM},
        {
            "role": "user",
            "content": f"Already remembered:\n{_notes_text(notes)}\n\nThe session:\n" + "\n".join(lines),
        },
    ]
