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

_KIND_CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("purchase", r"\b(buy|order|purchase|reorder|restock|get me|shop for|add .+ to (my )?cart)\b"),
        ("email", r"\b(e-?mail|gmail|inbox|reply to)\b"),
        ("text", r"\b(text|sms|message|whatsapp)\b(?!\s*file)"),
        ("expense", r"\b(expense|split|splitwise|owe|owes|reimburse|settle up)\b"),
        ("music", r"\b(playlist|song|songs|music|play|spotify|track)\b"),
        ("todo", r"\b(todo|to-do|task list|todoist|remind me|reminder|add (a )?task)\b"),
        (
            "schedule",
            r"\b(schedule (a|an|it|this)|(set up|add|create) (a )?heartbeat|"
            r"every (day|morning|week|evening))\b",
        ),
        ("note", r"\b(note|notes app|simple ?note|jot)\b"),
    )
)
_RECIPE = re.compile(
    r"\b(recipe|cook|bake|ingredients?|distance|temperature|weight|measure|route|run)\b", re.I
)
_OBJECT = re.compile(
    r"\b(?:write|draft|create|make|prepare|put together|compile|summari[sz]e|plan|build|update|edit|"
    r"buy|order|purchase|reorder|send|email|text|message|schedule|add|record|book|find|organi[sz]e|"
    r"produce|generate|list|outline|set up)\s+(?:me\s+)?(.+?)(?:[.?!;\n]|$)",
    re.IGNORECASE,
)


def deliverable_kinds(text: str) -> list[DeliverableKind]:
    """The kinds of deliverable a request asks for, in a fixed order; ``document`` when no app verb
    matches (the literal deliverable is then a file)."""
    kinds = [kind for kind, cue in _KIND_CUES if cue.search(text)]
    if "note" in kinds and re.search(r"\b(notes?/|[\w-]+\.md)\b", text):
        kinds.remove("note")  # "notes/plan.md" is a workspace file, not the notes app
    if not kinds or re.search(
        r"\b(write|draft|report|summary|summari[sz]e|document|file|outline)\b", text, re.I
    ):
        kinds.insert(0, "document")
    if _RECIPE.search(text):
        kinds.append("recipe")
    return list(dict.fromkeys(kinds))


def request_object(text: str) -> str:
    """The thing the request is about, for questions: "the supplier reorder plan"."""
    m = _OBJECT.search(text)
    phrase = m.group(1) if m else text
    phrase = re.sub(r"^(a|an|the|my|our|some|this|that)\s+", "", phrase.strip(), flags=re.IGNORECASE)
    phrase = re.split(r"\s+(?:and then|so that|because|please)\b|,", phrase)[0]
    tokens = phrase.split()[:10]
    return " ".join(tokens).strip(" :") or "request"


def relevant_facets(kinds: Sequence[DeliverableKind]) -> list[Facet]:
    return [f for f in FACETS if f.kinds & set(kinds)]


def known_facets(facets: Sequence[Facet], texts: Iterable[str]) -> set[str]:
    joined = "\n".join(texts)
    return {f.name for f in facets if f.cues.search(joined)}


def question_for(facet: Facet, obj: str) -> str:
    return facet.question.format(obj=obj)


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
