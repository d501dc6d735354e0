"""The AURA IntentFrame step of the offline assistant: what the request leaves unsaid.

The literal need is the request. Implicit needs come from three places: the user's remembered
notes, hints in the workspace (preference-like lines of files such as ``notes/``, ``preferences``
or ``README``, found by probing), and a lexicon of facets that requests commonly leave unstated
(format, length, audience, deadline, naming, budget, quantity, recipient, units, tone), each
relevant to some kinds of deliverable. A facet is known when anything the user said, remembered
or wrote down mentions it. The gap is the share of relevant facets still unknown; it sets the
probe budget through ``world.aura.budget_for_gap``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from messages.aura import IntentFrame

DeliverableKind = str
"""``document``, ``purchase``, ``email``, ``text``, ``note``, ``expense``, ``music``, ``todo``,
``schedule`` (see ``deliverable_kinds``)."""

HINT_PATTERN = "prefer|always|never|must|deadline"
"""What the workspace grep looks for: the words people write their standing requirements with."""
HINT_FILE = re.compile(r"(note|pref|readme|guide|style|instruction|todo|profile|about)", re.IGNORECASE)


@dataclass(frozen=True)
class Facet:
    name: str
    cues: re.Pattern[str]
    """Wording that shows the facet is already specified."""
    question: str
    """One targeted question; ``{obj}`` is the request's object."""
    kinds: frozenset[str]


def _facet(name: str, cues: str, question: str, kinds: Iterable[str]) -> Facet:
    return Facet(name, re.compile(cues, re.IGNORECASE), question, frozenset(kinds))


FACETS: tuple[Facet, ...] = (
    _facet(
        "format",
        r"\b(format|markdown|table|bullet|bullets|csv|json|pdf|heading|headings|sections?|outline|layout)\b",
        "What format should the {obj} use (markdown sections, a table, bullet points)?",
        ("document", "note"),
    ),
    _facet(
        "length",
        r"\b(\d+\s*(words?|pages?|lines?|sentences?|paragraphs?|bullets?|items?)|short|brief|concise|"
        r"detailed|length|one[- ]page|summary length)\b",
        "How long should the {obj} be (a word count, pages or number of items)?",
        ("document", "email", "music"),
    ),
    _facet(
        "audience",
        r"\b(audience|for (my|the|our) (team|boss|manager|client|clients|students|readers|family|kids)|"
        r"readers?|stakeholders?)\b",
        "Who is the audience or reader of the {obj}?",
        ("document",),
    ),
    _facet(
        "deadline",
        r"\b(deadline|due|by (mon|tues|wednes|thurs|fri|satur|sun)day|by tomorrow|by tonight|before|"
        r"tomorrow|today|tonight|next week|\d{4}-\d{2}-\d{2}|\d{1,2}(:\d{2})?\s*(am|pm))\b",
        "What deadline or due date should the {obj} meet?",
        ("document", "todo", "schedule", "email"),
    ),
    _facet(
        "naming",
        r"\b(name the file|file ?name|named|call it|title[d]?|save (it )?(as|to)|"
        r"[\w-]+\.(md|txt|csv|json))\b",
        "What file name or title should the {obj} have?",
        ("document", "note", "music"),
    ),
    _facet(
        "budget",
        r"(\$\s?\d|\b(budget|under \d+|max(imum)? price|price limit|cheap|cheaper|cheapest|cost|spend|"
        r"dollars?|usd)\b)",
        "What budget or maximum price should the {obj} stay within?",
        ("purchase", "expense"),
    ),
    _facet(
        "quantity",
        r"\b(\d+\s*(x|units?|items?|pieces?|packs?|bags?|boxes?|bottles?)|quantity|how many|a couple|"
        r"one|two|three|four|five|six|dozen)\b",
        "What quantity of the {obj} do you need?",
        ("purchase",),
    ),
    _facet(
        "recipient",
        r"(\b[\w.+-]+@[\w-]+\.[\w.]+\b|\b(to|cc|recipient|send it to|with)\s+[A-Z][a-z]+)",
        "Who should receive the {obj} (name or address)?",
        ("email", "text", "expense"),
    ),
    _facet(
        "units",
        r"\b(metric|imperial|celsius|fahrenheit|kg|kilograms?|lbs?|pounds|km|kilomet(er|re)s?|miles?|"
        r"grams?|litres?|liters?|cups?|units)\b",
        "Which units of measurement should the {obj} use (metric or imperial)?",
        ("recipe",),
    ),
    _facet(
        "tone",
        r"\b(tone|formal|informal|casual|friendly|polite|professional|warm|apologetic|firm)\b",
        "What tone should the {obj} take (formal, friendly, brief)?",
        ("email", "text"),
    ),
)

LEAD = (
    r"(?:^\s*|[.!?;:\n]\s*|\b(?:please|can you|could you|would you|will you|you to|go ahead and|and then|"
    r"and|then|also|now)\s+)"
)
"""Where a request verb stands: at the start of a sentence or clause, or after "please", "can you"...
A verb elsewhere ("what we need to reorder", "a minimum order") names a thing, it asks for nothing."""
_CLAUSE = r"[^.?!;\n]*?"
_REQUEST_CUES: tuple[tuple[str, str], ...] = (
    ("purchase", r"(?:buy|order|purchase|reorder|restock|place an order for|get me)\b(?!\s+(?:only|of)\b)"),
    (
        "email",
        r"(?:e-?mail|reply to|send (?:an? |one |the )?e-?mail|send" + _CLAUSE + r"[\w.+-]+@[\w-]+\.\w)",
    ),
    ("text", r"(?:text|sms|message|whatsapp)\b(?!\s*(?:file|me\b))"),
    (
        "expense",
        r"(?:split|record|log|add|put|get|enter)\b"
        + _CLAUSE
        + r"(?:splitwise|expenses?|costs?|bill|\$\s?\d)",
    ),
    ("music", r"(?:(?:make|create|build|put together)\b" + _CLAUSE + r"\bplaylist|play\b)"),
    ("todo", r"(?:remind me to|(?:add|put|create|make)\b" + _CLAUSE + r"\b(?:tasks?|todo|to-do|todoist)\b)"),
    (
        "schedule",
        r"(?:(?:schedule|set up|set)\b"
        + _CLAUSE
        + r"\b(?:reminder|heartbeat|check-?in)|remind me (?:at|on|in)\b)",
    ),
    (
        "note",
        r"(?:store|save|put|add|create|make|keep|jot)\b"
        + _CLAUSE
        + r"\b(?:notes? app|simple ?note|a note)\b",
    ),
)
_KIND_CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(LEAD + cue, re.IGNORECASE | re.MULTILINE)) for kind, cue in _REQUEST_CUES
)
IRREVERSIBLE_KINDS = frozenset({"purchase", "email", "text", "expense"})
"""Kinds whose action cannot be taken back: only the user's own words in this session ask for them."""
_RECIPE = re.compile(
    r"\b(recipe|cook|bake|ingredients?|distance|temperature|weight|measure|route|run)\b", re.I
)
_DOCUMENT = re.compile(
    r"\b(write|draft|report|summary|summari[sz]e|document|file|outline|sheet|list|plan|letter|minutes|"
    r"save it as|call it)\b",
    re.IGNORECASE,
)
_VERBS = (
    r"write|draft|create|make|prepare|put together|compile|summari[sz]e|plan|build|update|edit|draw up|"
    r"sort out|turn (?:them|it|this|these) into|tidy (?:them|it|this) up into|put|tell me|let \w+ know|"
    r"buy|order|purchase|reorder|send(?: out)?|email|text|message|schedule|add|record|book|find|organi[sz]e|"
    r"produce|generate|list|outline|set up"
)
_OBJECT_LEAD = re.compile(LEAD + r"(?:" + _VERBS + r")\s+(?:me\s+)?(.+?)(?:[.?!;:\n]|$)", re.I | re.M)
_OBJECT = re.compile(r"\b(?:" + _VERBS + r")\s+(?:me\s+)?(.+?)(?:[.?!;:\n]|$)", re.IGNORECASE)
_OBJECT_TAIL = re.compile(
    r"\s+(?:and then|so that|because|please|for me|i can|we can|that i|which i|as|and save|and put|"
    r"in the|into|we're|we are)\b.*$",
    re.IGNORECASE,
)


_PRONOUN = re.compile(r"(?:it|them|this|that|these|those|everyone)\b", re.IGNORECASE)


def requested_kinds(text: str) -> list[DeliverableKind]:
    """The app actions ``text`` asks for with a request verb, in a fixed order."""
    kinds = [kind for kind, cue in _KIND_CUES if cue.search(text)]
    if "note" in kinds and re.search(r"\b(notes?/|[\w-]+\.md)\b", text):
        kinds.remove("note")  # "notes/plan.md" is a workspace file, not the notes app
    return kinds


def deliverable_kinds(text: str) -> list[DeliverableKind]:
    """The kinds of deliverable a request asks for, in a fixed order; ``document`` when no app verb
    matches (the literal deliverable is then a file) or the request asks for a written thing."""
    kinds = requested_kinds(text)
    if not kinds or _DOCUMENT.search(text):
        kinds.insert(0, "document")
    if _RECIPE.search(text):
        kinds.append("recipe")
    return list(dict.fromkeys(kinds))


def request_object(text: str) -> str:
    """The thing the request is about, for questions: "the supplier reorder plan"."""
    if text.startswith("["):  # a trigger: its event names the object, its raw first line does not
        event = re.search(r"^(?:\w+\.)?event: (.+)$", text, re.MULTILINE)
        tag = re.match(r"\[(\w+)\]", text)
        return re.sub(r"[._]", " ", event.group(1)) if event else (tag.group(1) if tag else "event")
    found = [*_OBJECT_LEAD.finditer(text), *_OBJECT.finditer(text)]
    named = [m.group(1) for m in found if not _PRONOUN.match(m.group(1))]
    phrase = named[0] if named else text
    phrase = re.sub(r"^(a|an|the|my|our|some|this|that)\s+", "", phrase.strip(), flags=re.IGNORECASE)
    phrase = re.split(r",", phrase)[0]
    phrase = _OBJECT_TAIL.sub("", phrase) or phrase
    tokens = phrase.split()[:8]
    return " ".join(tokens).strip(" :'\"") or "request"


def request_sentences(text: str) -> dict[DeliverableKind, str]:
    """Each app action ``text`` asks for and the sentence that asks for it (the last one)."""
    found: dict[DeliverableKind, str] = {}
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        for kind in requested_kinds(sentence):
            found[kind] = sentence.strip()
    return found


def relevant_facets(kinds: Sequence[DeliverableKind]) -> list[Facet]:
    return [f for f in FACETS if f.kinds & set(kinds)]


def known_facets(facets: Sequence[Facet], texts: Iterable[str]) -> set[str]:
    joined = "\n".join(texts)
    return {f.name for f in facets if f.cues.search(joined)}


def question_for(facet: Facet, obj: str) -> str:
    return facet.question.format(obj=obj)


MAX_QUESTIONS = 3
"""A careful assistant asks a few questions, not a form: the facets most requests turn on first."""


def questions_for(facets: Sequence[Facet], known: set[str], obj: str) -> list[str]:
    """Targeted questions (each names its facet and the object) about the facets nobody covered."""
    return [question_for(f, obj) for f in facets if f.name not in known][:MAX_QUESTIONS]


def build_frame(
    request: str,
    *,
    facets: Sequence[Facet],
    known: set[str],
    remembered: Sequence[str],
    probes: Sequence[str],
) -> IntentFrame:
    """The frame before any probe: the gap is the share of relevant facets nobody has specified."""
    obj = request_object(request)
    unknown = [f for f in facets if f.name not in known]
    gap = len(unknown) / len(facets) if facets else 0.0
    needs = [*(f"remembered: {r}" for r in remembered), *(f"the {f.name} of the {obj}" for f in unknown)]
    return IntentFrame(
        literal_need=f"deliver: {request.strip()[:300]}",
        implicit_needs=tuple(needs),
        gap=round(gap, 3),
        recommended_probes=tuple(probes),
        confidence=0.5,
        rationale=(
            f"{len(unknown)} of {len(facets)} facets of the {obj} unstated"
            + (f"; {len(remembered)} remembered note(s) apply" if remembered else "")
        ),
        backend="heuristic",
    )
