"""The built-in assistant's offline policy: deterministic, no model, no access to grading data.

It sees only the user's words, its memory of the user, the workspace and the apps. A turn:

1. Read the workspace files the request names (a named path that does not exist is an output).
2. Retrieve the remembered notes that apply (``memory.relevant_notes``) and apply them: state them
   in the reply and in any file it writes.
3. With the IntentFrame step: build the frame (``intent.build_frame``), probe the workspace for
   hints under ``budget_for_gap(gap)`` (grep for preference words, list the files, read hint
   files), apply the hints that bear on the request, and ask one targeted question per facet
   still unknown. Irreversible app actions (placing an order, sending a message) wait until those
   questions are answered; the rest is done at once.
4. Do the literal deliverable: app verbs onto app tools (``actions``), otherwise a file (the path
   the request names, else ``outputs/<slug>.md``) holding the request, every requirement the
   user stated so far, the notes and hints applied, and excerpts of the files read. Later turns
   rewrite that file with what the user added.

Environment triggers: the payload is read as part of the request (a heartbeat's due items and a
webhook's event fields become the words the policy acts on).

App logins: the user's words (a login given in any turn), the workspace files read and the
remembered logins (``actions.Accounts``) give the logins; the policy reads everything else with the
passwords left out (``memory.redact``), so no password reaches a file, a message or a reply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from messages.aura import IntentFrame
from messages.episodes import AssistantReply, ToolRecord, TurnRecord, UserTurn
from world.aura import budget_for_gap
from world.aura._intent import DEFAULT_MAX_STEPS
from world.episodes.assistant._text import clip, overlap, paths_in, sentences, slug
from world.episodes.assistant.actions import ACTIONS, Accounts, ActionInput, content_of, first_with
from world.episodes.assistant.intent import (
    HINT_FILE,
    HINT_PATTERN,
    IRREVERSIBLE_KINDS,
    build_frame,
    deliverable_kinds,
    known_facets,
    questions_for,
    relevant_facets,
    request_object,
    request_sentences,
)
from world.episodes.assistant.memory import (
    AssistantMemory,
    mentions_login,
    redact,
    relevant_notes,
    strip_lead_in,
)
from world.episodes.assistant.ports import ToolPort, response, tool_names
from world.text import key_terms

WRITE_TOOL = "write_file"
READ_TOOL = "read_file"
MAX_HINTS = 8
MAX_SOURCE_LINES = 15
DONE_TOOLS: dict[str, tuple[str, ...]] = {
    "purchase": ("mcp_appworld_amazon__place_order",),
    "email": (
        "mcp_appworld_gmail__send_email",
        "mcp_appworld_gmail__send_email_from_draft",
        "mcp_appworld_gmail__reply_to_email",
    ),
    "text": ("mcp_appworld_phone__send_text_message",),
    "note": ("mcp_appworld_simple_note__create_note",),
    "expense": ("mcp_appworld_splitwise__record_expense",),
    "music": ("mcp_appworld_spotify__create_playlist", "mcp_appworld_spotify__play_music"),
    "todo": ("mcp_appworld_todoist__create_task",),
    "schedule": ("schedule_task",),
}
"""A kind of deliverable is done in a session once one of these calls went through."""
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#+)\s*")
_FOLDER = re.compile(r"\b(?:in|into|to|from)\s+(?:the|my|our)\s+'?([\w][\w.-]*)'?\s+folder\b", re.IGNORECASE)
_SAVE = re.compile(r"\b(?:save|store|file)\b|\b(?:put|keep) (?:it|this)\b|\bgo(?:es)? there\b", re.IGNORECASE)
_NAMED = re.compile(
    r"\b(?:call it|name it|named|save it as|save it there as|as)\s+'?([a-z0-9]+(?:[-_][a-z0-9]+)+)\b'?",
    re.IGNORECASE,
)
_GENERAL = re.compile(r"\b(every|always|all|other|each)\b", re.IGNORECASE)
MAX_FOLDER_FILES = 6
MAX_NAMED_SOURCES = 3
_FIRST_KINDS = frozenset({"request", "trigger"})


def describe_payload(payload: Mapping[str, Any], prefix: str = "") -> list[str]:
    """A trigger's payload as ``key: value`` lines; a list of items gives one line per item."""
    lines: list[str] = []
    for key, value in payload.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            lines.extend(describe_payload(value, f"{name}."))
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Mapping):
                    text = item.get("text") or item.get("description") or item.get("title")
                    rest = ", ".join(f"{k}={v}" for k, v in item.items() if not isinstance(v, Mapping | list))
                    lines.append(f"{name}: {text}" if text else f"{name}: {rest}")
                else:
                    lines.append(f"{name}: {item}")
        else:
            lines.append(f"{name}: {value}")
    return lines


@dataclass(frozen=True)
class Situation:
    """What the session has said so far, as the policy reads it."""

    request: str
    """The first turn's words (and a trigger's payload)."""
    requirements: tuple[str, ...]
    """What the user added after the request, oldest first (the current turn included)."""
    first: bool
    earlier_records: tuple[ToolRecord, ...]
    said: tuple[str, ...] = ()
    """The user's own words, turn by turn (a trigger's event is not the user speaking): only these
    can ask for an irreversible action."""

    @property
    def combined(self) -> str:
        return "\n".join((self.request, *self.requirements))


def situation(turn: UserTurn, transcript: Sequence[TurnRecord]) -> Situation:
    """The session as the policy reads it: the user's words with any password they gave left out
    (``memory.redact``; a turn that only gave a login adds no requirement)."""
    users = [r for r in transcript if r.role == "user"]
    first = turn.kind in _FIRST_KINDS or not users
    if first:
        request = redact(turn.text)
        if turn.trigger is not None and turn.trigger.payload:
            request = "\n".join([request, *describe_payload(turn.trigger.payload)])
        requirements: tuple[str, ...] = ()
    else:
        request = redact(users[0].text)
        added = (redact(t) for t in (*(r.text for r in users[1:]), turn.text))
        requirements = tuple(strip_lead_in(t) for t in added if t.strip())
    records = tuple(t for r in transcript if r.role == "assistant" for t in r.tool_records)
    spoken = [r for r in ([] if first else users) if r.kind != "trigger"]
    said = tuple(
        redact(t) for t in [*(r.text for r in spoken), *([turn.text] if turn.kind != "trigger" else [])]
    )
    return Situation(request, requirements, first, records, said)


def user_words(turn: UserTurn, transcript: Sequence[TurnRecord]) -> list[str]:
    """What the user said in the session, oldest first, as they said it (logins included)."""
    said = [r.text for r in transcript if r.role == "user" and r.kind != "trigger"]
    return [*said, *([turn.text] if turn.kind != "trigger" else [])]


def text_content(found: Any) -> str | None:
    """The text of a ``read_file`` response (None for a binary file, sent as base64)."""
    if isinstance(found, Mapping) and isinstance(found.get("content"), str) and found.get("encoding") is None:
        return str(found["content"])
    return None


def files_read(records: Sequence[ToolRecord]) -> dict[str, str]:
    """Path -> text of the workspace files that ``records`` read."""
    out: dict[str, str] = {}
    for record in records:
        content = text_content(response(record)) if record.tool_name == READ_TOOL else None
        if content is not None:
            out[str(record.call.get("path", ""))] = content
    return out


def session_asks(seen: Situation) -> dict[str, str]:
    """Each app action asked for so far and the sentence that asked: reversible ones from anything
    the session said (a heartbeat's due items included), irreversible ones only from the user."""
    asks: dict[str, str] = {}
    spoken = {strip_lead_in(t) for t in seen.said}
    for text in (seen.request, *seen.requirements):
        for kind, sentence in request_sentences(text).items():
            # A trigger's due items are to be done now, not scheduled again.
            if kind not in IRREVERSIBLE_KINDS and (kind != "schedule" or strip_lead_in(text) in spoken):
                asks[kind] = sentence
    for text in seen.said:
        for kind, sentence in request_sentences(text).items():
            if kind in IRREVERSIBLE_KINDS:
                asks[kind] = sentence
    return asks


def named_folder(text: str, *, output: bool) -> str | None:
    """The workspace folder a text names: where to save (``output``) or where to read from."""
    for sentence in sentences(text):
        saving = bool(_SAVE.search(sentence))
        m = _FOLDER.search(sentence)
        if m and saving == output:
            return m.group(1)
    return None


def named_file(text: str) -> str | None:
    """The file name a request gives its deliverable ("call it counter-sheet", "as rota-easter-week")."""
    m = _NAMED.search(text)
    return m.group(1) if m else None


def remembered_folder(notes: Sequence[str]) -> str | None:
    """A standing rule of where documents go ("save it in the X folder, like every ... document")."""
    for note in notes:
        if _GENERAL.search(note):
            folder = named_folder(note, output=True)
            if folder:
                return folder
    return None


def hint_lines(records: Sequence[ToolRecord], request: str) -> list[str]:
    """Standing requirements found in the workspace by earlier probes: grep hits and the lines of
    hint files (notes, preferences, README) that bear on the request (or come from a hint file)."""
    out: dict[str, None] = {}
    terms = key_terms(request)
    for record in records:
        found = response(record)
        if found is None:
            continue
        if record.tool_name == "grep":
            for hit in first_with(found, "path"):
                text = next(
                    (
                        hit[k]
                        for k in ("text", "line_text", "content", "match")
                        if isinstance(hit.get(k), str)
                    ),
                    "",
                )
                if mentions_login(text):
                    continue  # a login is no requirement (and stays out of what is written)
                if text.strip() and (HINT_FILE.search(str(hit["path"])) or overlap(terms, text)):
                    out.setdefault(clip(_BULLET.sub("", text).strip(), 200), None)
        elif record.tool_name == READ_TOOL and HINT_FILE.search(str(record.call.get("path", ""))):
            for raw in redact(text_content(found) or "").splitlines():
                line = _BULLET.sub("", raw).strip()
                if mentions_login(line):
                    continue
                if len(key_terms(line)) >= 2 and re.search(
                    HINT_PATTERN + "|prefer|use|name|format", line, re.I
                ):
                    out.setdefault(clip(line, 200), None)
    return list(out)[:MAX_HINTS]


@dataclass
class _Turn:
    """One turn's work in progress."""

    records: list[ToolRecord] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def call(self, port: ToolPort, tool: str, args: Mapping[str, Any]) -> ToolRecord:
        record = port.call(tool, args)
        self.records.append(record)
        return record


class OfflineAssistant:
    """See the module docstring. ``probe_limit`` caps the IntentFrame step's probe budget."""

    name = "offline"

    def __init__(self, *, probe_limit: int = DEFAULT_MAX_STEPS) -> None:
        self.probe_limit = probe_limit

    # ---------------------------------------------------------------- the IntentFrame step

    def frame(
        self, seen: Situation, memory: AssistantMemory, names: frozenset[str], hints: Sequence[str] = ()
    ) -> tuple[IntentFrame, list[str]]:
        """The heuristic frame and the targeted questions still worth asking (first turn only)."""
        notes = relevant_notes(memory, seen.combined)
        kinds = [k for k in deliverable_kinds(seen.request) if k == "document" or k in session_asks(seen)]
        facets = relevant_facets(kinds)
        known = known_facets(facets, [seen.combined, *(n.text for n in notes), *hints])
        if named_file(seen.request) or paths_in(seen.request) or remembered_folder([n.text for n in notes]):
            known.add("naming")
        probes = tuple(t for t in ("grep", "glob", READ_TOOL) if t in names)
        frame = build_frame(
            seen.request, facets=facets, known=known, remembered=[n.text for n in notes], probes=probes
        )
        obj = request_object(seen.request)
        questions = questions_for(facets, known, obj) if seen.first else []
        return frame, questions

    def probe(
        self, port: ToolPort, names: frozenset[str], budget: int, skip: Sequence[str]
    ) -> list[ToolRecord]:
        """Look for standing requirements in the workspace, at most ``budget`` calls."""
        work = _Turn()
        if budget >= 1 and "grep" in names:
            work.call(port, "grep", {"pattern": HINT_PATTERN, "path": ".", "ignore_case": True})
        candidates: list[str] = []
        for hit in first_with(response(work.records[0]) if work.records else None, "path"):
            candidates.append(str(hit["path"]))
        if budget >= 2 and "glob" in names:
            listed = response(work.call(port, "glob", {"pattern": "**/*"}))
            candidates.extend(_paths_listed(listed))
        hint_files = [p for p in dict.fromkeys(candidates) if HINT_FILE.search(p) and p not in skip]
        for path in hint_files[: max(0, budget - len(work.records))]:
            if READ_TOOL in names:
                work.call(port, READ_TOOL, {"path": path})
        return work.records

    # ---------------------------------------------------------------- a turn

    def respond(
        self,
        turn: UserTurn,
        transcript: Sequence[TurnRecord],
        memory: AssistantMemory,
        tools: ToolPort,
        *,
        intent_step: bool,
    ) -> AssistantReply:
        """Answer ``turn``; ``transcript`` holds the session's earlier turns (not ``turn``)."""
        seen = situation(turn, transcript)
        names = tool_names(tools.tools())
        work = _Turn()
        notes = relevant_notes(memory, seen.combined)

        # 1. the files the request names: inputs if they exist, else outputs to write
        sources: dict[str, str] = {}
        outputs: list[str] = []
        for path in paths_in(seen.request if seen.first else turn.text):
            if READ_TOOL not in names:
                break
            found = response(work.call(tools, READ_TOOL, {"path": path}))
            content = text_content(found)
            if content is not None:
                sources[path] = content
            elif found is None:
                outputs.append(path)  # a binary file that exists is neither a source nor an output
        if seen.first and not sources and not outputs and "document" in deliverable_kinds(seen.request):
            sources.update(self._read_named(tools, names, seen.request, work, skip=sources))

        # 2.-3. the IntentFrame step
        frame: IntentFrame | None = None
        questions: list[str] = []
        hints: list[str] = []
        if intent_step:
            frame, questions = self.frame(seen, memory, names)
            if seen.first:
                budget = budget_for_gap(frame.gap, self.probe_limit)
                work.records.extend(self.probe(tools, names, budget, skip=list(sources)))
            hints = hint_lines([*seen.earlier_records, *work.records], seen.combined)
            frame, questions = self.frame(seen, memory, names, hints)
            frame = frame.model_copy(
                update={
                    "implicit_needs": (*frame.implicit_needs, *(f"workspace: {h}" for h in hints)),
                    "recommended_probes": frame.recommended_probes,
                }
            )

        # 4. the deliverable
        asks = session_asks(seen)
        kinds = [k for k in deliverable_kinds(seen.request) if k == "document"]
        kinds += [k for k in asks if k not in kinds]
        done = {t.tool_name for t in seen.earlier_records if t.status == "ok"}
        applied = [n.text for n in notes]
        body = _body(seen, applied, hints)
        commit = not questions
        accounts: Accounts | None = None
        for kind in kinds:
            action = ACTIONS.get(kind)
            if action is None or any(t in done for t in DONE_TOOLS.get(kind, ())):
                continue
            if accounts is None:
                accounts = Accounts.gather(
                    said=user_words(turn, transcript),
                    files=files_read([*seen.earlier_records, *work.records]),
                    notes=memory.notes,
                    records=seen.earlier_records,
                )
            act = ActionInput(
                request=seen.combined,
                body=body,
                names=names,
                port=tools,
                ask=asks[kind],
                accounts=accounts,
                earlier=seen.earlier_records,
            )
            action(act, commit=commit)
            work.records.extend(act.run.records)
            work.lines.extend(act.run.lines)
        written = None
        wrote_before = any(t.tool_name == WRITE_TOOL and t.status == "ok" for t in seen.earlier_records)
        if "document" in kinds or outputs or wrote_before:
            written = self._write(tools, names, seen, work, outputs, sources, applied, hints, turn)

        text = _reply(seen, sources, written, applied, hints, work.lines, questions)
        return AssistantReply(
            task_id=turn.task_id,
            turn=turn.turn,
            text=text,
            tool_records=tuple(work.records),
            frame=frame,
            backend=self.name,
        )

    def _read_named(
        self, port: ToolPort, names: frozenset[str], request: str, work: _Turn, skip: Mapping[str, str]
    ) -> dict[str, str]:
        """The inputs the request points at without a path: the files of a folder it names ("the
        recipes in the recipes folder") and files whose names share words with it ("the staff sheet")."""
        if "glob" not in names or READ_TOOL not in names:
            return {}
        listed = _paths_listed(response(work.call(port, "glob", {"pattern": "**/*"})))
        folder = named_folder(request, output=False)
        terms = key_terms(request)
        wanted = [p for p in listed if folder and p.startswith(folder.strip("/") + "/")][:MAX_FOLDER_FILES]
        wanted += [
            p
            for p in listed
            if p not in wanted and not HINT_FILE.search(p) and overlap(terms, re.sub(r"[/_.-]", " ", p))
        ][:MAX_NAMED_SOURCES]
        found: dict[str, str] = {}
        for path in wanted:
            if path in skip:
                continue
            content = response(work.call(port, READ_TOOL, {"path": path}))
            text = text_content(content)
            if text is not None:
                found[path] = text
        return found

    def _write(  # noqa: PLR0917 - one call site, every piece of the turn
        self,
        tools: ToolPort,
        names: frozenset[str],
        seen: Situation,
        work: _Turn,
        outputs: Sequence[str],
        sources: Mapping[str, str],
        applied: Sequence[str],
        hints: Sequence[str],
        turn: UserTurn,
    ) -> str | None:
        earlier = [
            str(t.call["path"])
            for t in seen.earlier_records
            if t.tool_name == WRITE_TOOL and t.status == "ok"
        ]
        # The latest place the user named wins; else where this session already wrote.
        path = outputs[-1] if outputs else earlier[-1] if earlier else _default_path(seen, applied)
        content = _document(seen, sources, applied, hints)
        if WRITE_TOOL not in names:
            work.lines.append("I cannot write files here, so the draft follows:\n" + content)
            return None
        record = work.call(tools, WRITE_TOOL, {"path": path, "content": content})
        if record.status != "ok":
            work.lines.append(f"Writing {path} failed ({record.status}): {record.result.get('error', '')}")
            return None
        return path


def _default_path(seen: Situation, applied: Sequence[str]) -> str:
    """Where a new deliverable goes: the folder the request (or a standing rule) names, under the
    name the request gives it, else ``outputs/`` and a slug of the request's object."""
    folder = named_folder(seen.request, output=True) or remembered_folder(applied) or "outputs"
    name = named_file(seen.request) or slug(request_object(seen.request))
    return f"{folder.strip('/')}/{name}.md"


def _paths_listed(listed: Any) -> list[str]:
    if isinstance(listed, dict):
        for key in ("paths", "matches", "files", "entries"):
            items = listed.get(key)
            if isinstance(items, list):
                return [
                    str(i.get("path", i.get("name", ""))) if isinstance(i, dict) else str(i) for i in items
                ]
    return []


def _body(seen: Situation, applied: Sequence[str], hints: Sequence[str]) -> str:
    """What a message or a note says: the request's content, then what the user asked for since."""
    first_line = seen.request.splitlines()[0] if seen.request else ""
    parts = [] if first_line.startswith("[") else [content_of(first_line)]  # not a trigger's raw event
    parts.extend(seen.requirements)
    parts.extend(applied)
    parts.extend(hints)
    return "\n".join(p for p in parts if p.strip())


def _document(
    seen: Situation, sources: Mapping[str, str], applied: Sequence[str], hints: Sequence[str]
) -> str:
    obj = request_object(seen.request)
    lines = [f"# {obj[:1].upper() + obj[1:]}", "", seen.request.strip(), ""]
    requirements = [*seen.requirements, *applied, *hints]
    if requirements:
        lines += ["## Requirements", *(f"- {clip(r, 400)}" for r in requirements), ""]
    for path, text in sources.items():
        kept = [ln.rstrip() for ln in redact(text).splitlines() if ln.strip()][:MAX_SOURCE_LINES]
        lines += [f"## From {path}", *kept, ""]
    return "\n".join(lines).rstrip() + "\n"


def _reply(  # noqa: PLR0917 - one call site, every piece of the turn
    seen: Situation,
    sources: Mapping[str, str],
    written: str | None,
    applied: Sequence[str],
    hints: Sequence[str],
    done: Sequence[str],
    questions: Sequence[str],
) -> str:
    lines = [f"Working on: {clip(seen.request, 300)}" if seen.first else "Thanks, I have updated the work."]
    if sources:
        lines.append("I read " + ", ".join(sources) + ".")
    if seen.requirements:
        lines.append("Your requirements so far:")
        lines += [f"- {clip(r, 300)}" for r in seen.requirements]
    if applied:
        lines.append("From what you told me before, I applied:")
        lines += [f"- {clip(n, 300)}" for n in applied]
    if hints:
        lines.append("From your workspace I applied:")
        lines += [f"- {h}" for h in hints]
    if written is not None:
        lines.append(f"I wrote {written} with the request and all of the above.")
    lines += list(done)
    if questions:
        lines.append("Before I finalise, a few questions:")
        lines += [f"- {q}" for q in questions]
    return "\n".join(lines)
