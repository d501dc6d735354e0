"""The built-in assistant under test, as pure code: its offline policy, its memory of the user and
the AURA IntentFrame step. Tool calls go through a ``ToolPort`` passed in (no I/O here)."""

from world.episodes.assistant.actions import IRREVERSIBLE
from world.episodes.assistant.intent import FACETS, Facet, build_frame, deliverable_kinds, request_object
from world.episodes.assistant.memory import AssistantMemory, MemoryNote, NoteKind, consolidate, relevant_notes
from world.episodes.assistant.policy import (
    OfflineAssistant,
    Situation,
    describe_payload,
    hint_lines,
    situation,
)
from world.episodes.assistant.ports import ToolPort, failed_record, record_of, response, tool_names

__all__ = [
    "FACETS",
    "IRREVERSIBLE",
    "AssistantMemory",
    "Facet",
    "MemoryNote",
    "NoteKind",
    "OfflineAssistant",
    "Situation",
    "ToolPort",
    "build_frame",
    "consolidate",
    "deliverable_kinds",
    "describe_payload",
    "failed_record",
    "hint_lines",
    "record_of",
    "relevant_notes",
    "request_object",
    "response",
    "situation",
    "tool_names",
]
